"""The HTTP plumbing of the dynashard REST API, in one place for every function.

Bad input is a 4xx with a JSON body ``{"message", "field", ...}``
(:class:`ErrorResponse`) that says what was wrong; a failed shard query is a 503 naming
the shards; any other library error is a 500 with its message
(:func:`register_error_handlers`, the one mapping of library errors to HTTP statuses).
Nothing is swallowed: every handler logs what it maps. Also here: JSON responses and
their OpenAPI description (:func:`json_response`, :func:`openapi_responses`), the
content-type check (:func:`not_json`) and path decoding (:func:`path_value`,
:func:`routable`). The request and response bodies are
:mod:`dynashard.lambda_kit.bodies`'.

Powertools (the ``lambda`` extra; the layer ships it) is imported by the functions that
need it, not with this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, unquote

from pydantic import BaseModel, Field

from dynashard.errors import (
    ConfigurationError,
    DynashardError,
    IdempotentParameterMismatchError,
    InvalidInputError,
    NotAnIndexError,
    ShardQueryError,
    StateConflictError,
    StrategyConflictError,
)
from dynashard.lambda_kit.bodies import field_name
from dynashard.model import MAX_NESTING_LEVELS, dumps

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
    from aws_lambda_powertools.event_handler.openapi.exceptions import (
        RequestUnsupportedContentType,
        RequestValidationError,
    )
    from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

M = TypeVar("M", bound=BaseModel)


# --- HTTP ----------------------------------------------------------------------------------
class ErrorResponse(BaseModel):
    """Body of a 4xx/5xx answer: what was wrong, and where."""

    # The docstring is the schema's description in the OpenAPI document: ``message``
    # says what was wrong; ``field`` names the offending field (``events[3].ts``);
    # ``errors`` (a parameter or body that failed validation) has one entry per
    # offending field; ``shards`` (503 of a read)
    # the physical keys whose query failed.

    message: str
    field: str | None = None
    errors: list[dict[str, Any]] | None = None
    shards: list[str] | None = Field(None, description="503 only: physical keys that failed")


#: OpenAPI content of every 4xx/5xx answer (``responses={400: {..., "content": ...}}``).
ERROR_CONTENT: dict[str, Any] = {"application/json": {"model": ErrorResponse}}


#: The one status of invalid input, whichever layer notices it (Powertools' validation of
#: a parameter or body, a body model, a rule of the library): 400 Bad Request, as AWS's
#: own APIs answer a ``ValidationException`` (DynamoDB, API Gateway's request
#: validators), as every route already answered the library's rules and a cursor the
#: server did not issue. Powertools' default for its own validation, 422, is overridden
#: in :func:`register_error_handlers`; 422 is kept for a well-formed request that
#: contradicts an earlier one (an ``Idempotency-Key`` reused with another body, as the
#: IETF Idempotency-Key draft says).
INVALID_INPUT_STATUS: HTTPStatus = HTTPStatus.BAD_REQUEST

#: Every 503 says when to try again (RFC 9110, section 10.2.3), in seconds.
RETRY_AFTER_HEADER = "Retry-After"
#: Seconds a client should wait before reading again after a 503 (a shard query failed;
#: the ingest function's 503, events not written, says the same, its ``RETRY_AFTER_S``):
#: one second, the window DynamoDB counts a partition's throughput over (1,000 WCU and
#: 3,000 RCU per second).
RETRY_AFTER_S = 1

#: The header that makes a retried request apply once (IETF Idempotency-Key draft).
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"

#: What each error status of :func:`dynashard.lambda_kit.rest.register_error_handlers` means.
ERROR_DESCRIPTIONS: dict[int, str] = {
    400: "Invalid input (a parameter, the body, a cursor the server did not issue): "
    "`field` names it",
    404: "No such resource (e.g. a key without an ordered layout): `field` names it",
    409: "Conflicts with what is stored: `field` names it",
    500: "A dynashard error, e.g. a write that failed after its retries",
    503: "A shard query failed; `shards` names the physical keys",
}


def json_response(status: int, body: M, headers: Mapping[str, str] | None = None) -> Response[M]:
    """Return a Powertools REST response with a JSON body.

    Parameters
    ----------
    status : int
        HTTP status code.
    body : pydantic model
        The body (serialized by the resolver's serializer).
    headers : mapping of str to str, optional
        Extra headers, e.g. ``Retry-After``.

    Returns
    -------
    Response
        ``Content-Type: application/json``.
    """
    from aws_lambda_powertools.event_handler import Response, content_types

    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body,
        headers=dict(headers or {}),
    )


def exact_json_response(body: Any, status: int = 200) -> Response[Any]:
    """Return a JSON response whose numbers are exact: the body serialized here.

    Powertools' response validation turns the body into JSON-ready data before its
    serializer runs (pydantic's ``mode="json"`` writes a ``Decimal`` as a string, its
    ``jsonable_encoder`` as a float), so a read route whose body holds numbers as
    DynamoDB keeps them (``Decimal``, up to 38 digits) serializes it itself, with
    :func:`dynashard.model.dumps`: every ``Decimal`` is an exact JSON number
    (``12345678901234567.89``, not ``"12345678901234567.89"`` nor
    ``1.2345678901234568e+16``). The route is annotated ``Response[Any]`` and documents
    its body model in ``responses``.

    Parameters
    ----------
    body : Any
        JSON-like data or a pydantic model (dumped in Python mode: ``Decimal`` kept).
    status : int
        HTTP status code.

    Returns
    -------
    Response
        ``Content-Type: application/json``, the body already JSON text.
    """
    from aws_lambda_powertools.event_handler import Response, content_types

    data = body.model_dump() if isinstance(body, BaseModel) else body
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=dumps(data)
    )


def openapi_responses(ok: str, *errors: int) -> dict[int, OpenAPIResponse]:
    """Return a route's OpenAPI ``responses``: 200 and the error statuses it answers.

    Parameters
    ----------
    ok : str
        Description of the 200 answer (its body is the route's return model).
    *errors : int
        Error statuses, keys of :data:`ERROR_DESCRIPTIONS`; their body is
        :class:`ErrorResponse`.

    Returns
    -------
    dict
        Status -> OpenAPI response, for the resolver's ``responses=``.

    Raises
    ------
    KeyError
        If a status has no description.
    """
    answers: dict[int, OpenAPIResponse] = {200: {"description": ok}}
    for status in errors:
        answers[status] = {"description": ERROR_DESCRIPTIONS[status], "content": ERROR_CONTENT}
    return answers


#: The only request body type the APIs take.
JSON_CONTENT_TYPE = "application/json"


def not_json(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Answer 415 to a request whose body is declared as something else than JSON.

    Powertools parses form and multipart bodies itself, and a multipart type without
    its boundary raised ``ValueError`` out of the handler (a 502): the APIs take JSON
    only, so any other declared type is refused before routing.

    Parameters
    ----------
    event : mapping
        A REST API proxy event.

    Returns
    -------
    dict or None
        The proxy response ``{"statusCode": 415, ...}`` with a JSON error naming
        ``Content-Type``; None when the request has no body or declares JSON (or
        nothing).

    Examples
    --------
    >>> not_json({"body": "{}", "headers": {"Content-Type": "application/json"}}) is None
    True
    >>> not_json({"body": "a=1", "headers": {"content-type": "multipart/form-data"}})["statusCode"]
    415
    """
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    declared = headers.get("content-type", "").strip()
    if not event.get("body") or not declared or declared.lower().startswith(JSON_CONTENT_TYPE):
        return None
    body = {
        "message": f"Content-Type: {declared!r} is not supported; send {JSON_CONTENT_TYPE}",
        "field": "Content-Type",
    }
    return {
        "statusCode": 415,
        "headers": {"Content-Type": JSON_CONTENT_TYPE},
        "multiValueHeaders": {"Content-Type": [JSON_CONTENT_TYPE]},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def routable(event: dict[str, Any]) -> dict[str, Any]:
    """Percent-encode every character of the path that Powertools' router would not match.

    API Gateway matches ``{name}`` to any one path segment, but Powertools' resolver
    matches a dynamic segment only on word characters and a fixed set of others, so a
    name with ``"``, a backtick or a backslash, sent unencoded, answered Powertools'
    404 although API Gateway had routed it. Each segment is decoded and encoded again
    (nothing left as it is but unreserved characters), which :func:`path_value`
    decodes back to the same name.

    Parameters
    ----------
    event : dict
        A REST API proxy event.

    Returns
    -------
    dict
        The event with ``path`` re-encoded (a copy; the same event when it has no path).

    Examples
    --------
    >>> routable({"path": '/counters/a"b%23c'})["path"]
    '/counters/a%22b%23c'
    """
    path = event.get("path")
    if not isinstance(path, str):
        return event
    encoded = "/".join(quote(unquote(segment), safe="") for segment in path.split("/"))
    return event if encoded == path else {**event, "path": encoded}


def path_value(raw: str) -> str:
    """Decode a path parameter of a REST API event.

    REST APIs pass the path still percent-encoded (a key like ``CARRIER#UA`` arrives as
    ``CARRIER%23UA``), and Powertools matches routes on that path.

    Parameters
    ----------
    raw : str
        The parameter as routed.

    Returns
    -------
    str
        The decoded value.
    """
    return unquote(raw)


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
    from aws_lambda_powertools.event_handler import Response, content_types

    body: dict[str, Any] = {"message": message, "field": field, **extra}
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def refuse_unknown_query_parameters(
    app: APIGatewayRestResolver, next_middleware: Callable[[APIGatewayRestResolver], Response[Any]]
) -> Response[Any]:
    """Refuse a query parameter the route does not take (a Powertools global middleware).

    A misspelled parameter (``form`` for ``from``, ``limt``) was ignored, and the answer
    was a silently wrong one (the whole key, a default page); now it is invalid input
    naming it. Runs after Powertools' validation of the declared parameters.

    Parameters
    ----------
    app : APIGatewayRestResolver
        The resolver, its route matched (``app.context["_route"]``, set by Powertools).
    next_middleware : callable
        The rest of the chain.

    Returns
    -------
    Response
        The route's answer.

    Raises
    ------
    InvalidInputError
        Naming the first unknown parameter (sorted), listing those the route takes.
    """
    route = app.context.get("_route")
    if route is not None:
        declared = {str(p.alias) for p in route.dependant.query_params}
        sent = set(app.current_event.query_string_parameters or {})
        unknown = sorted(sent - declared)
        if unknown:
            takes = ", ".join(sorted(declared)) or "none"
            path = str(route.path).replace("<", "{").replace(">", "}")
            raise InvalidInputError(
                unknown[0], f"is not a query parameter of {route.method} {path} (it takes: {takes})"
            )
    return next_middleware(app)


def register_error_handlers(
    app: APIGatewayRestResolver, logger: Logger, fallback_field: str = "body"
) -> None:
    """Map request-validation and dynashard errors to JSON responses on ``app``.

    Invalid input is one status, 400, whichever layer notices it:
    ``RequestValidationError`` (Powertools' validation of parameters and bodies, 422 by
    default) -> 400 with every error, as ``InvalidInputError`` (and ``CursorError``) ->
    400 (:data:`INVALID_INPUT_STATUS`), except ``StateConflictError`` (another layout is stored, a
    counter shard would overflow) -> 409 and ``NotAnIndexError`` -> 404;
    ``StrategyConflictError`` (the key has another strategy and ``force`` was not
    given) -> 409 naming ``strategy``; ``IdempotentParameterMismatchError`` (an
    ``Idempotency-Key`` reused with another body) -> 422 naming the header;
    ``ShardQueryError`` -> 503 naming the failed shards, with ``Retry-After``;
    ``ConfigurationError`` (the function's own environment is invalid) -> 500 without a
    field; any other ``DynashardError`` -> 500. Registered
    most specific first, as Powertools looks handlers up along the exception's MRO.
    A body of another content type than JSON is a 415 naming ``Content-Type``, one that
    is not UTF-8 a 400 naming ``body``, a path no route of ``app`` has a 404 naming
    ``path`` (Powertools answered its own bodies, or a 502), a query parameter the route
    does not take a 400 naming it (:func:`refuse_unknown_query_parameters`). A
    ``RecursionError`` raised while the body is decoded (Python's ``json`` gives up
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
    from aws_lambda_powertools.event_handler.openapi.exceptions import (
        RequestUnsupportedContentType,
        RequestValidationError,
    )

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
            INVALID_INPUT_STATUS,
            f"{first['field']}: {first['msg']}",
            str(first["field"]),
            errors=errors,
        )

    def dynashard_invalid(exc: InvalidInputError) -> Response[Any]:
        return error_response(INVALID_INPUT_STATUS, exc.message, exc.field)

    def state_conflict(exc: StateConflictError) -> Response[Any]:
        return error_response(HTTPStatus.CONFLICT, exc.message, exc.field)

    def idempotency_mismatch(exc: IdempotentParameterMismatchError) -> Response[Any]:
        # The library names its argument; the API's is the header.
        logger.info("idempotency key reused with another body", extra={"field": exc.field})
        return error_response(
            HTTPStatus.UNPROCESSABLE_ENTITY,
            exc.message.replace(exc.field, IDEMPOTENCY_KEY_HEADER, 1),
            IDEMPOTENCY_KEY_HEADER,
        )

    def strategy_conflict(exc: StrategyConflictError) -> Response[Any]:
        logger.info("strategy refused", extra={"key": exc.key, "current": exc.current})
        return error_response(HTTPStatus.CONFLICT, exc.message, "strategy")

    def not_an_index(exc: NotAnIndexError) -> Response[Any]:
        return error_response(HTTPStatus.NOT_FOUND, exc.message, exc.field)

    def shard_failed(exc: ShardQueryError) -> Response[Any]:
        logger.error("shard query failed", extra={"failures": exc.failures})
        answer = error_response(
            HTTPStatus.SERVICE_UNAVAILABLE, exc.message, shards=list(exc.shards)
        )
        answer.headers[RETRY_AFTER_HEADER] = str(RETRY_AFTER_S)
        return answer

    def too_deep(exc: RecursionError) -> Response[Any]:
        depth = json_nesting_depth(app.current_event.body)
        if depth < MAX_NESTING_LEVELS:
            raise exc  # not the body's doing: a bug, not bad input
        logger.info("request rejected", extra={"field": "body", "nesting": depth})
        return error_response(
            INVALID_INPUT_STATUS,
            f"body: nests objects and arrays {depth} deep, over DynamoDB's limit of "
            f"{MAX_NESTING_LEVELS} levels for an attribute",
            "body",
        )

    def misconfigured(exc: ConfigurationError) -> Response[Any]:
        # The function's own environment is invalid: no request could be right, so a 500
        # (the operator's alarm), not a 400. The kit logged and counted it where it
        # arose (dynashard.lambda_kit.kit.misconfiguration_reported); the client is told
        # no more than that, the settings' values stay in the log.
        logger.error("answered 500: function misconfigured", extra={"settings": exc.settings})
        return error_response(
            HTTPStatus.INTERNAL_SERVER_ERROR,
            "the function's configuration is invalid; its log names the setting",
        )

    def dynashard_failed(exc: DynashardError) -> Response[Any]:
        logger.exception("dynashard error")
        return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, exc.message)

    app.exception_handler(RequestValidationError)(request_invalid)
    app.exception_handler(IdempotentParameterMismatchError)(idempotency_mismatch)
    app.exception_handler(StateConflictError)(state_conflict)
    app.exception_handler(StrategyConflictError)(strategy_conflict)
    app.exception_handler(NotAnIndexError)(not_an_index)
    app.exception_handler(InvalidInputError)(dynashard_invalid)
    app.exception_handler(ShardQueryError)(shard_failed)
    app.exception_handler(ConfigurationError)(misconfigured)
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
        return error_response(INVALID_INPUT_STATUS, f"body: not UTF-8 text ({exc.reason})", "body")

    app.exception_handler(UnicodeDecodeError)(not_utf8)
    app.use([refuse_unknown_query_parameters])

    def no_route(_exc: Exception) -> Response[Any]:
        event = app.current_event
        return error_response(
            HTTPStatus.NOT_FOUND, f"No route for {event.http_method} {event.path}", "path"
        )

    app.not_found(no_route)
