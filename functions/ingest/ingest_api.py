"""The ingest function's REST API: its routes, built for one copy of the function's module.

Loaded by :mod:`app` (``functions.ingest.app``) on first use of ``app.api_handler`` or
``app.app``, so that the queue and stream entry points of the same module never import
Powertools' event handler, its OpenAPI machinery, or the API models
(:mod:`dynashard.lambda_kit.bodies`): the API function is the only one that routes HTTP.
Stateless: :func:`build` makes a resolver whose routes reach the calling module's
per-container state (its facade, settings and metrics) through the arguments, so each
execution environment (the sandbox runs several copies of the module) has its own.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path

from dynashard import lambda_kit
from dynashard.lambda_kit import bodies as api
from dynashard.lambda_kit.ingest import IngestPort, write_events
from dynashard.lambda_kit.rest import ERROR_CONTENT
from dynashard.model import dumps, loads

if TYPE_CHECKING:
    from pydantic import BaseModel

    from dynashard.core.buckets import TimeBucket
    from dynashard.core.schema import TableSchema
    from dynashard.core.shard_info import ShardInfo
    from dynashard.dynamodb.ordered_index import OrderedIndex
    from dynashard.lambda_kit.kit import Dependency, FunctionKit, Handler
    from dynashard.lambda_kit.settings import FunctionSettings

M = TypeVar("M", bound="BaseModel")


def build(
    kit: FunctionKit[FunctionSettings],
    facade_of: Dependency[IngestPort],
    *,
    writable: Callable[[IngestPort], IngestPort],
    time_bucket: Callable[[], TimeBucket],
    schema: Callable[[], TableSchema],
    count: Callable[[int, int], None],
    retry_after_s: int,
) -> tuple[APIGatewayRestResolver, Handler[IngestPort, dict[str, Any]]]:
    """Build the ingest routes on a new resolver, and the entry point that serves them.

    Parameters
    ----------
    kit : FunctionKit
        The function's kit (logger, metrics, settings).
    facade_of : Dependency
        The facade of an invocation (injected, else the container's).
    writable : callable
        Applies the stack's pending key settings, returns the facade.
    time_bucket, schema : callable
        The GSI time bucket and the data table's key schema the settings name.
    count : callable
        Emits ``EventsWritten`` and ``EventsFailed`` (written, failed).
    retry_after_s : int
        ``Retry-After`` of a 503, seconds.

    Returns
    -------
    tuple of (APIGatewayRestResolver, Handler)
        The resolver with its routes, and ``api_handler(event, context, facade=None)``.
    """
    logger, settings = kit.logger, kit.get_settings
    app = APIGatewayRestResolver(
        enable_validation=True, serializer=dumps, json_body_deserializer=loads
    )

    def ordered_index(key: str) -> OrderedIndex:
        """Return the ordered index of the key named in the path (URL-encoded)."""
        return facade_of().ordered_index(lambda_kit.path_value(key))

    def request_body(model: type[M]) -> M:
        """Parse the request's body as ``model``; bad input is an ``InvalidInputError``."""
        return api.parse_body(model, app.current_event.decoded_body)

    def key_setting_stored(info: ShardInfo, setting: str, value: object) -> api.ShardsBody:
        """Log ``"{setting} set"`` with the key and its new value; return its metadata."""
        logger.info(f"{setting} set", extra={"key": info.key, setting: value})
        return api.ShardsBody.model_validate(info.to_json())

    @app.post(
        "/events",
        summary="Write one event or up to 100",
        operation_id="write_events",
        tags=["events"],
        responses={
            200: {"description": "Every event is durable"},
            400: {
                "description": "An event can never be written as it is (`rejected`, `field`): "
                "do not send it again; the others are written",
                "content": {"application/json": {"model": api.PostEventsResponse}},
            },
            503: {
                "description": "Some events were not written: send the `failed` ones again",
                "content": {"application/json": {"model": api.PostEventsResponse}},
            },
        },
    )
    def post_events(body: Annotated[api.EventsBody, Body()]) -> Response[api.PostEventsResponse]:
        """Write the events of the request with one bulk write.

        Parameters
        ----------
        body : Event or EventBatch
            One event, or ``{"events": [...]}`` with 1 to 100 events.

        Returns
        -------
        Response
            200 if every event is durable; 503 with ``Retry-After`` if some failed for now
            (``failed``); else 400 if some can never be written (``rejected``, ``field``).
        """
        batch = isinstance(body, api.EventBatch)
        events = body.events if isinstance(body, api.EventBatch) else [body]
        facade = writable(facade_of())
        outcomes = write_events(
            events,
            facade,
            logger=logger,
            bucket=time_bucket(),
            key_of=facade.write_key,
            schema=schema(),
            parts=settings().write_load_parts,
        )
        payload = api.PostEventsResponse.from_outcomes(outcomes, batch=batch)
        count(payload.written, len(payload.failed) + len(payload.rejected))
        if payload.rejected:
            rejected = [{"id": r.id, "key": r.key, "error": r.error} for r in payload.rejected]
            logger.info("events rejected", extra={"rejected": rejected})
        if payload.failed:
            logger.warning(
                "events not written", extra={"failed": [f.model_dump() for f in payload.failed]}
            )
            retry = {"Retry-After": str(retry_after_s)}
            return lambda_kit.json_response(HTTPStatus.SERVICE_UNAVAILABLE, payload, retry)
        status = HTTPStatus.BAD_REQUEST if payload.rejected else HTTPStatus.OK
        return lambda_kit.json_response(status, payload)

    @app.post(
        "/counters/<name>",
        summary="Add to a sharded counter",
        operation_id="increment_counter",
        tags=["counters"],
        responses={
            200: {"description": "Counted"},
            400: {"description": "A dynashard rule was broken", "content": ERROR_CONTENT},
            409: {"description": "by would take a shard past 38 digits", "content": ERROR_CONTENT},
            422: {
                "description": "The Idempotency-Key was applied with another `by` (nothing "
                "is applied; IETF Idempotency-Key draft): `field` is Idempotency-Key",
                "content": ERROR_CONTENT,
            },
            500: {"description": "The increment failed", "content": ERROR_CONTENT},
        },
    )
    def post_counter(
        name: Annotated[str, Path(min_length=1)],
        body: Annotated[api.CounterIncrement, Body()],
        idempotency_key: Annotated[
            str | None,
            Header(
                alias="Idempotency-Key",
                min_length=1,
                max_length=256,
                description="Makes a retried increment count once",
            ),
        ] = None,
    ) -> api.CounterResponse:
        """Increment the counter ``name`` by ``body.by``.

        Parameters
        ----------
        name : str
            Counter name (a logical key), URL-encoded in the path (``#`` as ``%23``).
        body : CounterIncrement
            ``{"by": int}``, not 0.
        idempotency_key : str or None
            ``Idempotency-Key`` header: the same key counts once across retries.

        Returns
        -------
        CounterResponse
            ``{"name", "by", "applied"}``; ``applied`` is false for a retry of an
            increment already applied with the same key and ``by``. The same key with
            another ``by`` is a 422 naming ``Idempotency-Key``.
        """
        counter = lambda_kit.path_value(name)
        applied = facade_of().increment_counter(
            counter, by=body.by, idempotency_key=idempotency_key
        )
        return api.CounterResponse(name=counter, by=body.by, applied=applied)

    @app.put(
        "/index/<key>/layout",
        summary="Configure a key's ordered index (range shards), once",
        operation_id="configure_index",
        tags=["ordered index"],
        openapi_extensions=api.request_body_doc(api.OrderedLayoutBody),
        responses=lambda_kit.openapi_responses("The layout in force", 400, 409, 500),
    )
    def put_layout(key: Annotated[str, Path(min_length=1)]) -> api.OrderedLayoutResponse:
        """Store ``key``'s layout (body: ``OrderedLayoutBody``); the same one again is a no-op.

        Returns
        -------
        OrderedLayoutResponse
            ``{"key", "shards", "boundaries", "sub_shards"}``.
        """
        index = ordered_index(key)
        layout = request_body(api.OrderedLayoutBody).to_layout()
        return api.OrderedLayoutResponse.of(index.key, index.configure(layout))

    @app.post(
        "/index/<key>",
        summary="Write 1 to 100 entries to a key's ordered index",
        operation_id="write_index_entries",
        tags=["ordered index"],
        openapi_extensions=api.request_body_doc(api.OrderedPutBody),
        responses=lambda_kit.openapi_responses("Every entry is durable", 400, 404, 500),
    )
    def post_index(key: Annotated[str, Path(min_length=1)]) -> api.OrderedPutResponse:
        """Write entries (body: ``OrderedPutBody``) to a configured key's range shards.

        Returns
        -------
        OrderedPutResponse
            ``{"key", "written", "items": [{"id", "value", "shard"}]}``.
        """
        body = request_body(api.OrderedPutBody)
        return api.write_ordered(ordered_index(key), body)

    @app.put(
        "/shards/<key>/strategy",
        summary="Set how writers pick a key's shard: random, or calculated by a data attribute",
        operation_id="set_strategy",
        tags=["shards"],
        responses=lambda_kit.openapi_responses(
            "The key's metadata, strategy in force", 400, 409, 500
        ),
    )
    def put_strategy(
        key: Annotated[str, Path(min_length=1)], body: Annotated[api.StrategyBody, Body()]
    ) -> api.ShardsBody:
        """Set ``key``'s strategy; the same one again is a no-op.

        Set it before the key's first write: a key that has another strategy (a stored key
        without one is ``random``) is a 409 naming ``strategy`` unless ``force`` is true.

        Returns
        -------
        ShardsBody
            ``{"key", "number_of_shards", "strategy", "shard_attribute", "max_shards", ...}``.
        """
        info = facade_of().set_strategy(
            lambda_kit.path_value(key),
            body.strategy,
            attribute=body.attribute,
            force=body.force,
            initial_shards=body.initial_shards,
        )
        return key_setting_stored(info, "strategy", info.strategy_label)

    @app.put(
        "/shards/<key>/max-shards",
        summary="Set or remove a key's own cap on its shard count",
        operation_id="set_max_shards",
        tags=["shards"],
        responses=lambda_kit.openapi_responses("The key's metadata, max_shards in force", 400, 500),
    )
    def put_max_shards(
        key: Annotated[str, Path(min_length=1)], body: Annotated[api.MaxShardsBody, Body()]
    ) -> api.ShardsBody:
        """Set ``key``'s cap on N (``null`` removes it); every growth path stops at it.

        A cap below the key's N in force, or one that would let the key grow onto an
        adopted key's bare partition key, is a 400 naming ``max_shards``.

        Returns
        -------
        ShardsBody
            The key's metadata with ``max_shards`` in force.
        """
        info = facade_of().set_max_shards(lambda_kit.path_value(key), body.max_shards)
        return key_setting_stored(info, "max_shards", info.max_shards)

    handler = kit.rest_api_handler(app, facade_of, name="api_handler", fallback_field="body")
    return app, handler
