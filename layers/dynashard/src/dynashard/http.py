"""The HTTP error mapping of the dynashard APIs, in one place for every function.

Bad input is a 4xx with a JSON body ``{"message", "field", ...}`` that says what was
wrong; a failed shard query is a 503 naming the shards; any other library error is a
500 with its message. Nothing is swallowed: every handler logs what it maps.

This module needs Powertools for AWS Lambda (the ``lambda`` extra; the layer ships it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from dynashard.errors import (
    DynashardError,
    InvalidInputError,
    NotAnIndexError,
    ShardQueryError,
    StateConflictError,
)
from dynashard.model import MAX_NESTING_LEVELS

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver

_SOURCES = ("body", "query", "path", "header", "cookie")
#: A JSON string literal (escapes included), removed before brackets are counted.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def json_nesting_depth(text: str | bytes | None) -> int:
    """Return how deep the objects and arrays of a JSON text nest, without parsing it.

    Python's ``json`` module recurses once per level and raises ``RecursionError`` past
    about a thousand; this counts brackets outside string literals instead, so a body
    nested a hundred thousand levels deep is measured, not a crash.

    Parameters
    ----------
    text : str, bytes or None
        JSON text (need not be valid).

    Returns
    -------
    int
        The deepest level of ``{``/``[`` reached; 0 for a scalar or nothing.

    Examples
    --------
    >>> json_nesting_depth('{"a": [1, {"b": "]]]"}]}'), json_nesting_depth(None)
    (3, 0)
    """
    if not text:
        return 0
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    depth = deepest = 0
    for bracket in _JSON_BRACKET.findall(_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def error_response(
    status: HTTPStatus, message: str, field: str | None = None, **extra: Any
) -> Response[Any]:
    """Build the JSON error response ``{"message", "field", **extra}``.

    Parameters
    ----------
    status : HTTPStatus
        HTTP status.
    message : str
        What was wrong.
    field : str, optional
        The offending field, e.g. ``events[3].ts`` or ``limit``.
    **extra : Any
        More JSON members (e.g. ``errors``, ``shards``).

    Returns
    -------
    Response
        A Powertools response with content type ``application/json``.
    """
    body: dict[str, Any] = {"message": message, "field": field, **extra}
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def field_name(loc: Sequence[Any], kind: str | None = None, fallback: str = "body") -> str:
    """Turn a pydantic error location into the field name a client sent.

    Parameters
    ----------
    loc : sequence
        E.g. ``("body", "batch", "events", 3, "ts")`` or ``("query", "limit")``.
    kind : str, optional
        The pydantic error type; ``json_invalid`` names the whole body.
    fallback : str
        Name when the location names nothing more specific.

    Returns
    -------
    str
        E.g. ``events[3].ts`` or ``limit``.
    """
    parts = list(loc)
    if parts and parts[0] in _SOURCES:
        source = parts.pop(0)
        if source == "body" and (kind == "json_invalid" or not parts):
            return "body"
    if parts and parts[0] in ("event", "batch"):  # tags of a discriminated body union
        parts.pop(0)
    name = ""
    for part in parts:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or fallback


def register_error_handlers(
    app: APIGatewayRestResolver, logger: Logger, fallback_field: str = "body"
) -> None:
    """Map request-validation and dynashard errors to JSON responses on ``app``.

    ``RequestValidationError`` -> 422 with every error; ``InvalidInputError`` (and
    ``CursorError``) -> 400, except ``StateConflictError`` (another layout is stored, a
    counter shard would overflow) -> 409 and ``NotAnIndexError`` -> 404; ``ShardQueryError``
    -> 503 naming the failed shards; any other ``DynashardError`` -> 500. Registered
    most specific first, as Powertools looks handlers up along the exception's MRO.
    A body of another content type than JSON is a 415 naming ``Content-Type``, one that
    is not UTF-8 a 400 naming ``body``, a path no route of ``app`` has a 404 naming
    ``path`` (Powertools answered its own bodies, or a 502). A ``RecursionError`` raised
    while the body is decoded (Python's ``json`` gives up
    past about a thousand levels) is a 400 naming ``body`` and DynamoDB's 32-level
    nesting limit when the body is nested that deep; any other one propagates.

    Parameters
    ----------
    app : APIGatewayRestResolver
        The function's resolver.
    logger : Logger
        The function's Powertools logger.
    fallback_field : str
        Field named when a validation error has no location.
    """

    def request_invalid(exc: RequestValidationError) -> Response[Any]:
        errors = [
            {
                "field": field_name(e.get("loc", ()), e.get("type"), fallback_field),
                "type": e.get("type"),
                "msg": str(e.get("msg", "invalid")).removeprefix("Value error, "),
            }
            for e in exc.errors()
        ]
        first = errors[0] if errors else {"field": fallback_field, "msg": "invalid request"}
        logger.info("request rejected", extra={"errors": errors})
        return error_response(
            HTTPStatus.UNPROCESSABLE_ENTITY,
            f"{first['field']}: {first['msg']}",
            str(first["field"]),
            errors=errors,
        )

    def dynashard_invalid(exc: InvalidInputError) -> Response[Any]:
        return error_response(HTTPStatus.BAD_REQUEST, exc.message, exc.field)

    def state_conflict(exc: StateConflictError) -> Response[Any]:
        return error_response(HTTPStatus.CONFLICT, exc.message, exc.field)

    def not_an_index(exc: NotAnIndexError) -> Response[Any]:
        return error_response(HTTPStatus.NOT_FOUND, exc.message, exc.field)

    def shard_failed(exc: ShardQueryError) -> Response[Any]:
        logger.error("shard query failed", extra={"failures": exc.failures})
        return error_response(HTTPStatus.SERVICE_UNAVAILABLE, exc.message, shards=list(exc.shards))

    def too_deep(exc: RecursionError) -> Response[Any]:
        depth = json_nesting_depth(app.current_event.body)
        if depth < MAX_NESTING_LEVELS:
            raise exc  # not the body's doing: a bug, not bad input
        logger.info("request rejected", extra={"field": "body", "nesting": depth})
        return error_response(
            HTTPStatus.BAD_REQUEST,
            f"body: nests objects and arrays {depth} deep, over DynamoDB's limit of "
            f"{MAX_NESTING_LEVELS} levels for an attribute",
            "body",
        )

    def dynashard_failed(exc: DynashardError) -> Response[Any]:
        logger.exception("dynashard error")
        return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, exc.message)

    app.exception_handler(RequestValidationError)(request_invalid)
    app.exception_handler(StateConflictError)(state_conflict)
    app.exception_handler(NotAnIndexError)(not_an_index)
    app.exception_handler(InvalidInputError)(dynashard_invalid)
    app.exception_handler(ShardQueryError)(shard_failed)
    app.exception_handler(DynashardError)(dynashard_failed)
    app.exception_handler(RecursionError)(too_deep)

    def unsupported_type(_exc: RequestUnsupportedContentType) -> Response[Any]:
        sent = app.current_event.headers.get("content-type", "")
        return error_response(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            f"Content-Type: {sent!r} is not supported; send application/json",
            "Content-Type",
        )

    app.exception_handler(RequestUnsupportedContentType)(unsupported_type)

    def not_utf8(exc: UnicodeDecodeError) -> Response[Any]:
        return error_response(
            HTTPStatus.BAD_REQUEST, f"body: not UTF-8 text ({exc.reason})", "body"
        )

    app.exception_handler(UnicodeDecodeError)(not_utf8)

    def no_route(_exc: Exception) -> Response[Any]:
        event = app.current_event
        return error_response(
            HTTPStatus.NOT_FOUND, f"No route for {event.http_method} {event.path}", "path"
        )

    app.not_found(no_route)
