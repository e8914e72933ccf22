"""Query function: ``GET /events``, ``/counters/{name}``, ``/shards/{key}``, ``/index/{key}``.

Read-only: events (scatter-gather over every shard a key has had, merged in exact
sort-key order; or, with ``consistent=false``, from GSI1 when the read planner finds it
cheaper), counters (summed over their shards), shard metadata and ordered indexes. The
deployed handler string is ``app.handler``.

Status codes:

- 200: the answer.
- 400: invalid input, whichever layer notices it (``{"message", "field"}``, and
  ``errors`` when a parameter failed validation): ``limit`` outside 1..1000, a missing
  ``key``, a ``cursor`` the server did not issue, ``from`` after ``to``, ``attr`` on a
  key whose strategy is not ``calculated``, ``path=gsi1`` where GSI1 cannot serve the
  read.
- 404: ``GET /shards/{key}`` of a key without metadata (``field`` is ``key``).
- 503: a shard query failed and partial results were not asked for; ``shards`` names
  the physical keys that failed (never a silent empty page).
- 500: any other dynashard error.

Path values are percent-decoded: ``DEPARTURES#JFK`` travels as ``DEPARTURES%23JFK``.
"""

from __future__ import annotations

import time
from datetime import datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import Field, SecretStr

from dynashard import lambda_kit, names
from dynashard.core.keys import parse_ts
from dynashard.lambda_kit import bodies as api
from dynashard.lambda_kit.bodies import CounterBody, EventsPage, OrderedPageBody, ShardsBody
from dynashard.lambda_kit.cursors import MIN_KEY_LENGTH, CursorSigner
from dynashard.lambda_kit.kit import Dependency
from dynashard.lambda_kit.rest import ERROR_CONTENT, error_response
from dynashard.lambda_kit.settings import FunctionSettings
from dynashard.model import dumps, loads

if TYPE_CHECKING:
    from typing import Unpack

    from dynashard import CounterValue, Page, ShardInfo
    from dynashard.dynamodb.ordered_index import OrderedIndex
    from dynashard.dynamodb.planned_reader import ReadOptions


class Settings(FunctionSettings):
    """The function's settings: the library's model plus the key its cursors are signed with.

    Attributes
    ----------
    cursor_key : SecretStr
        ``DYNASHARD_CURSOR_KEY``: the stack's generated secret
        (``infra/constructs/cursor_key.py``), at least 32 characters.
    """

    cursor_key: SecretStr = Field(
        min_length=MIN_KEY_LENGTH, validation_alias=names.ENV_CURSOR_KEY, repr=False
    )


kit = lambda_kit.function_kit(__name__, Settings)
logger, tracer, metrics = kit.logger, kit.tracer, kit.metrics
get_settings, get_facade = kit.get_settings, kit.get_facade
app = APIGatewayRestResolver(enable_validation=True, serializer=dumps, json_body_deserializer=loads)

#: Largest page ``GET /events`` serves (the library's limit).
MAX_LIMIT = 1000


class QueryPort(Protocol):
    """The read-only part of :class:`~dynashard.Dynashard` this function uses."""

    def query_events(self, key: str, **options: Unpack[ReadOptions]) -> Page:
        """Read one page of a key's events, merged over its shards."""
        ...

    def get_counter(self, name: str) -> CounterValue:
        """Read a sharded counter."""
        ...

    def shard_info(self, key: str) -> ShardInfo:
        """Read a key's shard metadata."""
        ...

    def ordered_index(self, key: str) -> OrderedIndex:
        """Return a key's ordered index (range shards)."""
        ...


#: The facade of the current invocation: the injected one, else the container's.
facade_of: Dependency[QueryPort] = Dependency("facade", get_facade)


@lambda_kit.container_cache
def get_cursor_signer() -> CursorSigner:
    """Return the signer of this container's cursors, keyed by the settings (built once)."""
    return CursorSigner(get_settings().cursor_key.get_secret_value())


def _opened(cursor: str | None) -> str | None:
    """Return the library's cursor inside a cursor this API signed (else a 400 naming it)."""
    return None if cursor is None else get_cursor_signer().open(cursor)


def _signed(cursor: str | None) -> str | None:
    """Return the library's cursor of a page, signed for the client."""
    return None if cursor is None else get_cursor_signer().sign(cursor)


# --- routes ------------------------------------------------------------------------------
def _time(value: str | None, field: str) -> datetime | None:
    return None if value is None else parse_ts(value, field=field)


@app.get(
    "/events",
    summary="Read a key's events in order, one page at a time",
    operation_id="read_events",
    tags=["events"],
    responses={
        200: {
            "description": "One page; `missing_shards` only when partial=true",
            "content": {"application/json": {"model": EventsPage}},
        },
        400: {
            "description": "Bad `from`/`to` or `cursor`, or `attr` on a key that is not calculated",
            "content": ERROR_CONTENT,
        },
        409: {"description": "The key is an ordered index (GET /index)", "content": ERROR_CONTENT},
        503: {
            "description": "A shard query failed; `shards` names the physical keys",
            "content": ERROR_CONTENT,
        },
    },
)
def get_events(
    key: Annotated[str, Query(min_length=1, description=api.KEY_DOC)],
    start: Annotated[
        str | None,
        Query(alias="from", min_length=1, description="Inclusive start: ISO-8601 or epoch ms"),
    ] = None,
    end: Annotated[
        str | None,
        Query(alias="to", min_length=1, description="Exclusive end: ISO-8601 or epoch ms"),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 100,
    order: Annotated[Literal["asc", "desc"], Query()] = "asc",
    cursor: Annotated[str | None, Query(min_length=1)] = None,
    partial: Annotated[
        bool, Query(description="Serve healthy shards and name the missing ones")
    ] = False,
    attr: Annotated[str | None, Query(min_length=1, description=api.ATTR_DOC)] = None,
    consistent: Annotated[bool, Query(description=api.CONSISTENT_DOC)] = True,
    path: Annotated[Literal["auto", "base", "gsi1"], Query(description=api.PATH_DOC)] = "auto",
) -> Response[Any]:
    """Read one page of a logical key's events (scatter-gather over its shards).

    Parameters
    ----------
    key, start, end, limit, order, cursor : str, str, str, int, str, str
        Logical key; ``from`` (inclusive) and ``to`` (exclusive), ISO-8601 or epoch ms;
        page size 1..1000; ``asc`` or ``desc``; the previous page's cursor.
    partial : bool
        Allow a page without the shards that failed.
    attr : str, optional
        The shard attribute's value of a ``calculated`` key (a targeted read); a 400
        naming ``attr`` for any other key.
    consistent : bool
        Strongly consistent (base table only) when True, the default.
    path : {"auto", "base", "gsi1"}
        The read path: planned, or forced (400 naming ``path`` or ``consistent`` when
        GSI1 cannot serve the read).

    Returns
    -------
    Response
        ``{"items", "cursor", "shards_queried", "plan"}`` (see :class:`EventsPage`),
        plus ``missing_shards`` when ``partial`` is true; numbers exact
        (:func:`~dynashard.lambda_kit.rest.exact_json_response`).
    """
    started = time.perf_counter()
    page = facade_of().query_events(
        key,
        start=_time(start, "from"),
        end=_time(end, "to"),
        limit=limit,
        descending=order == "desc",
        cursor=_opened(cursor),
        allow_partial=partial,
        attribute_value=attr,
        consistent=consistent,
        path=path,
    )
    if page.plan is not None:
        logger.info("read plan", extra={"key": key, "plan": page.plan.to_json()})
    metrics.add_metric(
        name="ReadLatency",
        unit=MetricUnit.Milliseconds,
        value=(time.perf_counter() - started) * 1000,
    )
    metrics.add_metric(name="ShardsQueried", unit=MetricUnit.Count, value=page.shards_queried)
    if partial and page.missing_shards:
        logger.warning("partial page", extra={"missing_shards": page.missing_shards})
    body = api.events_body(page, partial=partial)
    body["cursor"] = _signed(page.cursor)
    return lambda_kit.exact_json_response(body)


@app.get(
    "/counters/<name>",
    summary="Read a sharded counter",
    operation_id="read_counter",
    tags=["counters"],
)
def get_counter(name: Annotated[str, Path(min_length=1)]) -> CounterBody:
    """Read the counter ``name`` (the sum over its shards).

    Parameters
    ----------
    name : str
        Counter name, percent-encoded in the path.

    Returns
    -------
    CounterBody
        ``{"name", "value", "shards"}``.
    """
    value = facade_of().get_counter(lambda_kit.path_value(name))
    return CounterBody(name=value.name, value=value.value, shards=value.shards)


@app.get(
    "/shards/<key>",
    summary="Read a key's shard count, history and strategy",
    operation_id="read_shard_info",
    tags=["shards"],
    responses={
        200: {
            "description": "The key's metadata",
            "content": {"application/json": {"model": ShardsBody}},
        },
        404: {
            "description": "The key has no metadata (never written nor configured): "
            "`field` is key, as the CLI's `status` exits 4",
            "content": ERROR_CONTENT,
        },
    },
)
def get_shards(key: Annotated[str, Path(min_length=1)]) -> Response[Any]:
    """Read a logical key's shard metadata, fresh.

    Parameters
    ----------
    key : str
        Logical key, percent-encoded in the path.

    Returns
    -------
    Response
        200 ``ShardsBody`` (``{"key", "number_of_shards", "last_updated",
        "shard_history", "strategy", ...}``); 404 naming ``key`` when the key has no
        metadata (a read would see one shard, the default, but nothing is stored).
    """
    logical = lambda_kit.path_value(key)
    info = facade_of().shard_info(logical)
    if not info.stored:
        return error_response(
            HTTPStatus.NOT_FOUND,
            f"key: {logical!r} has no shard metadata (never written nor configured)",
            "key",
        )
    return lambda_kit.json_response(HTTPStatus.OK, ShardsBody.model_validate(info.to_json()))


@app.get(
    "/index/<key>",
    summary="Read a key's ordered index in value order: all, a prefix, or [from, to)",
    operation_id="read_index",
    tags=["ordered index"],
    responses={
        **lambda_kit.openapi_responses("One page, in order", 400, 404, 503),
        200: {
            "description": "One page, in order",
            "content": {"application/json": {"model": OrderedPageBody}},
        },
    },
)
def get_index(
    key: Annotated[str, Path(min_length=1)],
    prefix: Annotated[
        str | None, Query(min_length=1, description="Values starting with it")
    ] = None,
    start: Annotated[
        str | None, Query(alias="from", min_length=1, description="Lower, inclusive")
    ] = None,
    end: Annotated[
        str | None, Query(alias="to", min_length=1, description="Upper, exclusive")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 100,
    cursor: Annotated[str | None, Query(min_length=1)] = None,
) -> Response[Any]:
    """Read one page of ``key``'s ordered index (values compared normalised).

    ``prefix`` excludes ``from``/``to`` (400, field ``prefix``); a bound that normalises
    to nothing (a lone combining mark, a control character) is a 400 naming it; only
    the range shards intersecting the query are read, as ``shards_in_range`` shows.

    Returns
    -------
    Response
        :class:`OrderedPageBody`: ``{"key", "items", "cursor", "shards_in_range",
        "shards_queried", "queries"}``; numbers exact.
    """
    index = facade_of().ordered_index(lambda_kit.path_value(key))
    page = index.query(prefix=prefix, start=start, end=end, limit=limit, cursor=_opened(cursor))
    metrics.add_metric(name="ShardsQueried", unit=MetricUnit.Count, value=len(page.shards_queried))
    body = OrderedPageBody.of(index.key, page)
    body.cursor = _signed(page.cursor)
    return lambda_kit.exact_json_response(body)


# --- errors, in one place; the entry point ------------------------------------------------
handler = kit.rest_api_handler(app, facade_of, fallback_field="request")
"""Entry point of the read routes (REST API proxy events); tests pass ``facade=``."""

# Built at init (SnapStart, provisioned concurrency): the settings and the facade's client;
# a misconfiguration is logged here and answered by the first request's error path.
kit.warm(get_settings, get_facade)
