"""Ingest function: the API's write routes (events, counters, ordered index), SQS, Kinesis.

Entry points (deployed as ``app.api_handler``, ``app.sqs_handler``, ``app.kinesis_handler``):

- :func:`api_handler` -- REST API proxy events (Powertools' ``APIGatewayRestResolver``).
  ``POST /events`` answers 200 when every event is durable, else 503 with
  ``Retry-After`` and the events to send again (not a 207: clients treat any 2xx as
  success); 422 for an invalid body, 400 for a broken dynashard rule.
  ``PUT /index/{key}/layout``, ``POST /index/{key}``: an ordered index's layout (409
  if another is stored) and entries; bodies parsed by :mod:`dynashard.lambda_kit.bodies` (400).
  ``PUT /shards/{key}/strategy``, ``PUT /shards/{key}/max-shards``: a key's strategy
  (409 if it has another one and ``force`` is not given) and its own cap on N (400 below
  its N in force).
- :func:`sqs_handler` / :func:`kinesis_handler` -- partial batch responses: one bulk write
  (:func:`dynashard.lambda_kit.ingest.write_batch`); each invalid or unwritten record is
  reported back. A FIFO queue's batch stops each message group at its first failure.

Before a container's first write, the stack's key settings (``DYNASHARD_KEY_SETTINGS``)
create the keys they list that have no metadata yet
(:class:`~dynashard.lambda_kit.key_settings.KeySettingsApplier`).

The status codes and bodies are in ``functions/README.md``.
"""

from __future__ import annotations

# First, before anything imports pydantic: Powertools' batch utility builds its pydantic
# parser models (SQS, Kinesis, DynamoDB Streams, Kafka records) at import only when
# pydantic is already loaded; the handlers never pass it a model, and those models cost
# about 40 ms of every cold start (bench/cold_start.py).
from aws_lambda_powertools.utilities.batch import EventType  # isort: split

from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path
from aws_lambda_powertools.metrics import MetricUnit

from dynashard import lambda_kit
from dynashard.core.buckets import TimeBucket
from dynashard.lambda_kit import bodies as api
from dynashard.lambda_kit.ingest import IngestPort, parse_event, write_batch, write_events
from dynashard.lambda_kit.key_settings import KeySettingsApplier
from dynashard.lambda_kit.kit import Dependency
from dynashard.lambda_kit.rest import ERROR_CONTENT
from dynashard.lambda_kit.settings import FunctionSettings
from dynashard.model import dumps

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from dynashard.core.schema import TableSchema

Settings = FunctionSettings
"""The function's settings: the library's model (``dynashard.lambda_kit.settings``)."""

kit = lambda_kit.function_kit(__name__, Settings)
logger, tracer, metrics = kit.logger, kit.tracer, kit.metrics
get_settings, get_facade = kit.get_settings, kit.get_facade
app = APIGatewayRestResolver(enable_validation=True, serializer=dumps)

#: Seconds a client should wait before sending the failed events of a 503 again.
RETRY_AFTER_S = 1


#: The facade of this invocation: the injected one, else the container's.
facade_of: Dependency[IngestPort] = Dependency("facade", get_facade)


@lambda_kit.container_cache
def get_key_settings() -> KeySettingsApplier:
    """Return this container's applier of the stack's key settings (built once)."""
    return KeySettingsApplier(get_settings().key_setting_list)


def _writable(facade: IngestPort) -> IngestPort:
    """Apply the key settings still pending (none after the first write), then return ``facade``."""
    applier = get_key_settings()
    if applier.pending:
        outcomes = applier.ensure(facade, logger)
        differs = sum(o.action == "differs" for o in outcomes)
        metrics.add_metric(name="KeySettingsDiffer", unit=MetricUnit.Count, value=differs)
    return facade


def _time_bucket() -> TimeBucket:
    return TimeBucket(get_settings().time_bucket)


@lambda_kit.container_cache
def get_table_schema() -> TableSchema:
    """Return the data table's key schema the settings name (built once per container)."""
    return get_settings().table_schema


def _count(written: int, failed: int) -> None:
    metrics.add_metric(name="EventsWritten", unit=MetricUnit.Count, value=written)
    metrics.add_metric(name="EventsFailed", unit=MetricUnit.Count, value=failed)


# --- API -----------------------------------------------------------------------------------
@app.post(
    "/events",
    summary="Write one event or up to 100",
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
    facade = _writable(facade_of())
    outcomes = write_events(
        events,
        facade,
        logger=logger,
        bucket=_time_bucket(),
        key_of=facade.write_key,
        schema=get_table_schema(),
        parts=get_settings().write_load_parts,
    )
    payload = api.PostEventsResponse.from_outcomes(outcomes, batch=batch)
    _count(payload.written, len(payload.failed) + len(payload.rejected))
    if payload.rejected:
        rejected = [{"id": r.id, "key": r.key, "error": r.error} for r in payload.rejected]
        logger.info("events rejected", extra={"rejected": rejected})
    if payload.failed:
        logger.warning(
            "events not written", extra={"failed": [f.model_dump() for f in payload.failed]}
        )
        retry = {"Retry-After": str(RETRY_AFTER_S)}
        return lambda_kit.json_response(HTTPStatus.SERVICE_UNAVAILABLE, payload, retry)
    status = HTTPStatus.BAD_REQUEST if payload.rejected else HTTPStatus.OK
    return lambda_kit.json_response(status, payload)


@app.post(
    "/counters/<name>",
    summary="Add to a sharded counter",
    responses={
        200: {"description": "Counted"},
        400: {"description": "A dynashard rule was broken", "content": ERROR_CONTENT},
        409: {"description": "by would take a shard past 38 digits", "content": ERROR_CONTENT},
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
        ``{"name", "by", "applied"}``.
    """
    counter = lambda_kit.path_value(name)
    applied = facade_of().increment_counter(counter, by=body.by, idempotency_key=idempotency_key)
    return api.CounterResponse(name=counter, by=body.by, applied=applied)


@app.put(
    "/index/<key>/layout",
    summary="Configure a key's ordered index (range shards), once",
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
    index = facade_of().ordered_index(lambda_kit.path_value(key))
    layout = api.parse_body(api.OrderedLayoutBody, app.current_event.decoded_body).to_layout()
    return api.OrderedLayoutResponse.of(index.key, index.configure(layout))


@app.post(
    "/index/<key>",
    summary="Write 1 to 100 entries to a key's ordered index",
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
    body = api.parse_body(api.OrderedPutBody, app.current_event.decoded_body)
    return api.write_ordered(facade_of().ordered_index(lambda_kit.path_value(key)), body)


@app.put(
    "/shards/<key>/strategy",
    summary="Set how writers pick a key's shard: random, or calculated by a data attribute",
    responses=lambda_kit.openapi_responses("The key's metadata, strategy in force", 400, 409, 500),
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
    logger.info("strategy set", extra={"key": info.key, "strategy": info.strategy_label})
    return api.ShardsBody.model_validate(info.to_json())


@app.put(
    "/shards/<key>/max-shards",
    summary="Set or remove a key's own cap on its shard count",
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
    logger.info("max_shards set", extra={"key": info.key, "max_shards": info.max_shards})
    return api.ShardsBody.model_validate(info.to_json())


api_handler = kit.rest_api_handler(app, facade_of, name="api_handler", fallback_field="body")
"""Entry point of the ingest routes (REST API proxy events)."""


# --- SQS and Kinesis -------------------------------------------------------------------------
def _process(
    event: dict[str, Any], context: LambdaContext, event_type: EventType
) -> PartialItemFailureResponse:
    items, redelivered = lambda_kit.batch_payloads(event, event_type)
    facade = _writable(facade_of())
    result = write_batch(
        items,
        facade,
        logger=logger,
        bucket=_time_bucket,
        redelivered=redelivered,
        key_of=facade.write_key,
        schema=get_table_schema,
        parts=get_settings().write_load_parts,
    )
    _count(result.written, result.failed)
    return lambda_kit.partial_batch_response(
        event, context, event_type, result.fates, logger, result.permanent
    )


@kit.handler(facade_of)
def sqs_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    """Handle an SQS batch: each message body is one event as JSON.

    Parameters
    ----------
    event, context : dict, LambdaContext
        The SQS event (``Records`` of messages) and the Lambda context; tests also pass
        ``facade=`` (an ``IngestPort``), else the container's serves.

    Returns
    -------
    dict
        ``{"batchItemFailures": [{"itemIdentifier": messageId}, ...]}``.
    """
    return _process(event, context, EventType.SQS)


@kit.handler(facade_of)
def kinesis_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    """Handle a Kinesis batch: each record's data is one event as base64 JSON.

    Lambda restarts the shard from the lowest sequence number reported. ``event`` is a
    Kinesis Data Streams event (``Records``); ``context`` and ``facade=`` are as for
    :func:`sqs_handler`.

    Returns
    -------
    dict
        ``{"batchItemFailures": [{"itemIdentifier": sequenceNumber}, ...]}``.
    """
    return _process(event, context, EventType.KinesisDataStreams)


__all__ = [
    "IngestPort",
    "Settings",
    "api_handler",
    "app",
    "get_facade",
    "get_key_settings",
    "get_settings",
    "kinesis_handler",
    "parse_event",
    "sqs_handler",
]
