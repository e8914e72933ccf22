"""Ingest function: API Gateway ``POST /events``, ``POST /counters/{name}``, SQS and Kinesis.

Entry points (the deployed handler strings are ``app.api_handler``, ``app.sqs_handler``
and ``app.kinesis_handler``; tests import ``functions.ingest.app``):

- :func:`api_handler` -- REST API proxy events, routed by Powertools'
  ``APIGatewayRestResolver`` with request validation.
- :func:`sqs_handler` / :func:`kinesis_handler` -- batches with partial batch responses
  (``batchItemFailures``). Every record is parsed first; the valid events are written
  with **one** ``put_events`` call; each record is then acknowledged or reported from
  its own :class:`~dynashard.WriteOutcome`, so an invalid or unwritten record goes back
  to the queue (and on to its DLQ) without failing the records around it.

Status codes of ``POST /events``:

- 200: every event is durable. Body ``{"written", "failed": [], "results"}``.
- 503 with ``Retry-After``: at least one event was not written (throttling that
  outlasted the retries, an unavailable table, ...). Same body; ``failed`` lists
  ``{"id", "key", "error"}`` of each event the client must send again. A 5xx, not a
  207, because clients and SDKs treat any 2xx as success and would drop the failed
  events. Retrying the whole request is also safe: an event id always maps to the same
  item, so the events already written are overwritten, not duplicated.
- 422: the request body failed validation (nothing was written); ``errors`` names
  each offending field, e.g. ``["body", "events", 3, "ts"]``.
- 400: a dynashard rule was broken (``{"message", "field"}``).
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from pydantic import BaseModel, ConfigDict, Discriminator, Field, StrictInt, Tag, field_validator
from pydantic import ValidationError as PydanticValidationError

from dynashard import names
from dynashard.errors import DynashardError
from dynashard.http import register_error_handlers
from dynashard.load import (
    WRITE_LOAD_MESSAGE,
    WRITE_REFUSED_MESSAGE,
    refused_write_load,
    summarize_write_load,
)
from dynashard.model import MAX_EVENTS_PER_REQUEST, Event, dumps
from dynashard.settings import DynashardSettings
from dynashard.strategies import TimeBucket
from dynashard.writer import event_write_units

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from dynashard import Dynashard, WriteOutcome

logger = Logger()
tracer = Tracer()
metrics = Metrics(namespace=names.METRICS_NAMESPACE)
app = APIGatewayRestResolver(enable_validation=True, serializer=dumps)

#: Seconds a client should wait before sending the failed events of a 503 again.
RETRY_AFTER_S = 1


# --- configuration ------------------------------------------------------------------
Settings = DynashardSettings
"""The function's settings: the library's model (``dynashard.settings``)."""


@functools.cache
def get_settings() -> Settings:
    """Read and validate the settings once per container (first invocation, not import).

    Returns
    -------
    Settings
        The cached settings.

    Raises
    ------
    pydantic.ValidationError
        If a variable is missing or invalid: the function cannot work, so it fails loudly.
    """
    return Settings()  # type: ignore[call-arg]  # values come from the environment


@functools.cache
def get_service() -> Dynashard:
    """Build the :class:`~dynashard.Dynashard` facade once per container.

    Returns
    -------
    Dynashard
        The facade over the configured tables (its boto3 client is created lazily).
    """
    from dynashard import Dynashard

    return Dynashard(get_settings().to_config())


class IngestService(Protocol):
    """The part of :class:`~dynashard.Dynashard` this function uses (a port for tests)."""

    def put_events(self, events: Sequence[Event]) -> list[WriteOutcome]:
        """Write events; one outcome per event, same order."""
        ...

    def increment_counter(self, name: str, by: int, idempotency_key: str | None = None) -> bool:
        """Add ``by`` to a sharded counter; False when ``idempotency_key`` was already applied."""
        ...


# --- API: request and response models ------------------------------------------------
class EventBatch(BaseModel):
    """Body of ``POST /events`` carrying several events.

    Attributes
    ----------
    events : list of Event
        1 to ``MAX_EVENTS_PER_REQUEST`` (100) events.
    """

    model_config = ConfigDict(extra="forbid")

    events: list[Event] = Field(min_length=1, max_length=MAX_EVENTS_PER_REQUEST)


def _body_kind(value: Any) -> str:
    # A body with "events" is a batch; anything else is validated as one event, so a
    # validation error names the fields of the shape the client meant.
    return "batch" if isinstance(value, Mapping) and "events" in value else "event"


EventsBody = Annotated[
    Annotated[Event, Tag("event")] | Annotated[EventBatch, Tag("batch")],
    Discriminator(_body_kind),
]


class CounterIncrement(BaseModel):
    """Body of ``POST /counters/{name}``.

    Attributes
    ----------
    by : int
        Amount to add; negative subtracts; never 0 (JSON integers only).
    """

    model_config = ConfigDict(extra="forbid")

    by: StrictInt

    @field_validator("by")
    @classmethod
    def _not_zero(cls, value: int) -> int:
        if value == 0:
            raise ValueError("must not be 0")
        return value


class EventResult(BaseModel):
    """Outcome of one event of ``POST /events``."""

    id: str
    key: str
    ok: bool
    error: str | None = None


class FailedEvent(BaseModel):
    """An event that was not written and must be sent again."""

    id: str
    key: str
    error: str


class PostEventsResponse(BaseModel):
    """Body of a ``POST /events`` answer (200 and 503 alike)."""

    written: int
    failed: list[FailedEvent]
    results: list[EventResult]


class CounterResponse(BaseModel):
    """Body of a ``POST /counters/{name}`` answer.

    Attributes
    ----------
    name : str
        The counter, decoded.
    by : int
        The increment asked for.
    applied : bool
        True when this request added ``by``; False when its ``Idempotency-Key`` had
        already been applied (a retry), so nothing was added this time.
    """

    name: str
    by: int
    applied: bool = Field(description="False when the Idempotency-Key was already applied")


class ErrorResponse(BaseModel):
    """Body of a 4xx/5xx answer: what was wrong, and where."""

    message: str
    field: str | None = None
    errors: list[dict[str, Any]] | None = None
    shards: list[str] | None = Field(None, description="503 only: physical keys that failed")


#: OpenAPI content of every 4xx/5xx answer.
_ERROR_CONTENT: dict[str, Any] = {"application/json": {"model": ErrorResponse}}


# --- API: routes -------------------------------------------------------------------------
def _service() -> IngestService:
    service: IngestService = app.context.get("service") or get_service()
    return service


@app.post(
    "/events",
    summary="Write one event or up to 100",
    responses={
        200: {"description": "Every event is durable"},
        400: {"description": "A dynashard rule was broken", "content": _ERROR_CONTENT},
        503: {
            "description": "Some events were not written: send the `failed` ones again",
            "content": {"application/json": {"model": PostEventsResponse}},
        },
    },
)
def post_events(body: Annotated[EventsBody, Body()]) -> Response[PostEventsResponse]:
    """Write the events of the request with one bulk write.

    Parameters
    ----------
    body : Event or EventBatch
        One event, or ``{"events": [...]}`` with 1 to 100 events.

    Returns
    -------
    Response
        200 if every event is durable, else 503 with the failed events listed.
    """
    events = body.events if isinstance(body, EventBatch) else [body]
    log_write_load(events)
    outcomes = _service().put_events(events)
    results = [
        EventResult(id=o.event_id, key=o.key, ok=o.ok, error=None if o.ok else o.error)
        for o in outcomes
    ]
    failed = [
        FailedEvent(id=r.id, key=r.key, error=r.error or "not written") for r in results if not r.ok
    ]
    written = len(results) - len(failed)
    metrics.add_metric(name="EventsWritten", unit=MetricUnit.Count, value=written)
    metrics.add_metric(name="EventsFailed", unit=MetricUnit.Count, value=len(failed))
    log_write_refused(outcomes)
    payload = PostEventsResponse(written=written, failed=failed, results=results)
    if failed:
        logger.warning("events not written", extra={"failed": [f.model_dump() for f in failed]})
        return Response(
            status_code=HTTPStatus.SERVICE_UNAVAILABLE,
            content_type=content_types.APPLICATION_JSON,
            body=payload,
            headers={"Retry-After": str(RETRY_AFTER_S)},
        )
    return Response(
        status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=payload
    )


@app.post(
    "/counters/<name>",
    summary="Add to a sharded counter",
    responses={
        200: {"description": "Counted"},
        400: {"description": "A dynashard rule was broken", "content": _ERROR_CONTENT},
        500: {"description": "The increment failed", "content": _ERROR_CONTENT},
    },
)
def post_counter(
    name: Annotated[str, Path(min_length=1)],
    body: Annotated[CounterIncrement, Body()],
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=256,
            description="Makes a retried increment count once",
        ),
    ] = None,
) -> CounterResponse:
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
    counter = _path_value(name)
    applied = _service().increment_counter(counter, by=body.by, idempotency_key=idempotency_key)
    return CounterResponse(name=counter, by=body.by, applied=applied)


def _path_value(raw: str) -> str:
    # REST APIs pass the path still percent-encoded (a key like CARRIER#UA arrives as
    # CARRIER%23UA); Powertools matches on that path, so decode the value here.
    from urllib.parse import unquote

    return unquote(raw)


# --- API: errors, in one place ---------------------------------------------------------
register_error_handlers(app, logger, fallback_field="body")


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
@tracer.capture_lambda_handler
@metrics.log_metrics
def api_handler(
    event: dict[str, Any], context: LambdaContext, service: IngestService | None = None
) -> dict[str, Any]:
    """Handle a REST API proxy event (``POST /events``, ``POST /counters/{name}``).

    Parameters
    ----------
    event : dict
        API Gateway REST API (v1) proxy event.
    context : LambdaContext
        Lambda context.
    service : IngestService, optional
        A ``Dynashard``-like object; default: the container's, built from the settings.

    Returns
    -------
    dict
        The API Gateway proxy response.
    """
    if service is not None:
        app.context["service"] = service  # cleared by resolve() when it returns
    return app.resolve(event, context)


# --- SQS and Kinesis -----------------------------------------------------------------------
class RecordRejectedError(Exception):
    """A batch record that is reported back as a batch item failure.

    Parameters
    ----------
    item_id : str
        SQS message id or Kinesis sequence number.
    reason : str
        Why: the validation error, or the write error of its event.
    """

    def __init__(self, item_id: str, reason: str) -> None:
        self.item_id = item_id
        self.reason = reason
        super().__init__(f"{item_id}: {reason}")


def parse_event(text: str | bytes) -> Event:
    """Parse one queue or stream record body: a JSON event.

    Parameters
    ----------
    text : str or bytes
        JSON text of ``{"key", "id", "ts", "data"}``.

    Returns
    -------
    Event
        The validated event.

    Raises
    ------
    ValueError
        If the text is not JSON or not a valid event (pydantic's error names the field).
    """
    return Event.model_validate_json(text)


def _describe(exc: Exception) -> str:
    if isinstance(exc, PydanticValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )
    return f"{type(exc).__name__}: {exc}"


def log_write_load(events: Sequence[Event], redelivered: Sequence[bool] = ()) -> None:
    """Log what this invocation was offered, one ``write load`` line per logical key.

    Logged before the write, so that each line is stamped when its load arrived. These
    lines are what the stack's Contributor Insights rule ranks logical keys by, and
    what the scaler plans from.

    Parameters
    ----------
    events : sequence of Event
        The valid events about to be written.
    redelivered : sequence of bool
        Per event, whether its source delivered the record before; missing entries
        count as first deliveries.
    """
    flags = list(redelivered) + [False] * (len(events) - len(redelivered))
    bucket = TimeBucket(get_settings().time_bucket)

    def units(event: Event) -> int:
        try:
            return event_write_units(event, bucket)
        except DynashardError:
            return 0  # over a DynamoDB limit: the write refuses it and reports why

    writes = ((e.key, units(e), again) for e, again in zip(events, flags, strict=False))
    for load in summarize_write_load(writes):
        logger.info(WRITE_LOAD_MESSAGE, extra=load.log_fields())


def log_write_refused(outcomes: Sequence[WriteOutcome]) -> None:
    """Log what the write refused, one ``write refused`` line per logical key that had any.

    Parameters
    ----------
    outcomes : sequence of WriteOutcome
        The bulk write's outcomes.
    """
    refused = refused_write_load((o.key, o.write_units, o.ok) for o in outcomes)
    for fields in refused.values():
        logger.info(WRITE_REFUSED_MESSAGE, extra=fields)


def write_batch(
    items: Sequence[tuple[str, Callable[[], str | bytes]]],
    service: IngestService,
    redelivered: Collection[str] = (),
) -> dict[str, str | None]:
    """Parse every record, write the valid events at once, return each record's fate.

    Parameters
    ----------
    items : sequence of (str, callable)
        Per record: its batch item identifier and a function returning its payload.
    service : IngestService
        Where to write.
    redelivered : collection of str
        Item identifiers of records the source delivered before (their write units are
        logged as redelivered, not offered: :func:`log_write_load`).

    Returns
    -------
    dict of str to (str or None)
        Item identifier -> None if its event is durable, else the reason it is not.
    """
    fate: dict[str, str | None] = {}
    valid: list[tuple[str, Event]] = []
    for item_id, payload in items:
        try:
            valid.append((item_id, parse_event(payload())))
        except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
            fate[item_id] = f"invalid event: {_describe(exc)}"
    if valid:
        log_write_load([event for _, event in valid], [i in redelivered for i, _ in valid])
        try:
            outcomes = service.put_events([event for _, event in valid])
        except DynashardError as exc:
            # The write as a whole failed: every record goes back to the source.
            logger.exception("bulk write failed")
            outcomes = None
            for item_id, _ in valid:
                fate[item_id] = f"write failed: {exc.message}"
        if outcomes is not None:
            if len(outcomes) != len(valid):  # a broken contract must not acknowledge anything
                raise RuntimeError(
                    f"put_events returned {len(outcomes)} outcomes for {len(valid)} events"
                )
            for (item_id, _), outcome in zip(valid, outcomes, strict=True):
                fate[item_id] = (
                    None if outcome.ok else f"write failed: {outcome.error or 'unknown'}"
                )
            log_write_refused(outcomes)
    failed = sum(1 for reason in fate.values() if reason is not None)
    metrics.add_metric(name="EventsWritten", unit=MetricUnit.Count, value=len(fate) - failed)
    metrics.add_metric(name="EventsFailed", unit=MetricUnit.Count, value=failed)
    return fate


def _process(
    event: dict[str, Any],
    context: LambdaContext,
    event_type: EventType,
    items: Sequence[tuple[str, Callable[[], str | bytes]]],
    item_id_of: Callable[[Any], str],
    service: IngestService | None,
    redelivered: Collection[str] = (),
) -> PartialItemFailureResponse:
    fate = write_batch(items, service or get_service(), redelivered)

    def record_handler(record: Any) -> None:
        item_id = item_id_of(record)
        reason = fate.get(item_id, "record not seen by the bulk write")
        if reason is not None:
            logger.warning("record rejected", extra={"item_id": item_id, "reason": reason})
            raise RecordRejectedError(item_id, reason)

    # An all-failed batch is still a partial response listing every record, so each
    # one is retried or reaches the DLQ on its own (no BatchProcessingError).
    processor = BatchProcessor(event_type=event_type, raise_on_entire_batch_failure=False)
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def sqs_handler(
    event: dict[str, Any], context: LambdaContext, service: IngestService | None = None
) -> PartialItemFailureResponse:
    """Handle an SQS batch: each message body is one event as JSON.

    Parameters
    ----------
    event : dict
        SQS event (``Records`` of messages).
    context : LambdaContext
        Lambda context.
    service : IngestService, optional
        A ``Dynashard``-like object; default: the container's.

    Returns
    -------
    dict
        ``{"batchItemFailures": [{"itemIdentifier": messageId}, ...]}``.
    """
    records = event.get("Records") or []
    items = [(r["messageId"], functools.partial(str, r.get("body", ""))) for r in records]
    # SQS counts receives; a record received before was offered before.
    redelivered = {
        r["messageId"]
        for r in records
        if int((r.get("attributes") or {}).get("ApproximateReceiveCount") or 1) > 1
    }
    return _process(
        event, context, EventType.SQS, items, lambda r: str(r.message_id), service, redelivered
    )


def _kinesis_payload(data: str) -> bytes:
    return base64.b64decode(data, validate=True)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def kinesis_handler(
    event: dict[str, Any], context: LambdaContext, service: IngestService | None = None
) -> PartialItemFailureResponse:
    """Handle a Kinesis batch: each record's data is one event as base64 JSON.

    Parameters
    ----------
    event : dict
        Kinesis Data Streams event (``Records``).
    context : LambdaContext
        Lambda context.
    service : IngestService, optional
        A ``Dynashard``-like object; default: the container's.

    Returns
    -------
    dict
        ``{"batchItemFailures": [{"itemIdentifier": sequenceNumber}, ...]}``; Lambda
        restarts the shard from the lowest one reported.
    """
    records = event.get("Records") or []
    items = [
        (
            r["kinesis"]["sequenceNumber"],
            functools.partial(_kinesis_payload, r["kinesis"].get("data", "")),
        )
        for r in records
    ]
    return _process(
        event,
        context,
        EventType.KinesisDataStreams,
        items,
        lambda r: str(r.kinesis.sequence_number),
        service,
    )


__all__ = [
    "CounterIncrement",
    "EventBatch",
    "IngestService",
    "Settings",
    "api_handler",
    "app",
    "get_service",
    "get_settings",
    "kinesis_handler",
    "log_write_load",
    "log_write_refused",
    "parse_event",
    "sqs_handler",
    "write_batch",
]
