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

At init (the module's import) the function builds its settings, its facade with both
of its clients and the write path (:meth:`~dynashard.lambda_kit.kit.FunctionKit.warm`):
a SnapStart snapshot or a provisioned environment holds them, and a misconfiguration
is logged and left to the first invocation's error path.

Before a container's first write, the stack's key settings (``DYNASHARD_KEY_SETTINGS``)
create the keys they list that have no metadata yet
(:class:`~dynashard.lambda_kit.key_settings.KeySettingsApplier`).

The status codes and bodies are in ``functions/README.md``.

The routes live in the sibling module :mod:`ingest_api`, built on first use of
``api_handler`` (or ``app``, the resolver): the queue and stream functions, deployed
from the same module, never load Powertools' event handler, OpenAPI or the API models.
"""

from __future__ import annotations

# First, before anything imports pydantic: Powertools' batch utility builds its pydantic
# parser models (SQS, Kinesis, DynamoDB Streams, Kafka records) at import only when
# pydantic is already loaded; the handlers never pass it a model, and those models cost
# about 40 ms of every cold start (bench/cold_start.py).
from aws_lambda_powertools.utilities.batch import EventType  # isort: split

import importlib
import threading
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from dynashard import lambda_kit
from dynashard.core.buckets import TimeBucket
from dynashard.lambda_kit.ingest import IngestPort, parse_event, write_batch
from dynashard.lambda_kit.key_settings import KeySettingsApplier
from dynashard.lambda_kit.kit import Dependency
from dynashard.lambda_kit.settings import FunctionSettings

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from dynashard.core.schema import TableSchema
    from dynashard.lambda_kit.kit import Handler

    app: APIGatewayRestResolver
    """The REST API's resolver, its routes declared (:mod:`ingest_api`); built on first use."""
    api_handler: Handler[IngestPort, dict[str, Any]]
    """Entry point of the ingest routes (REST API proxy events); built on first use."""

Settings = FunctionSettings
"""The function's settings: the library's model (``dynashard.lambda_kit.settings``)."""

kit = lambda_kit.function_kit(__name__, Settings)
logger, tracer, metrics = kit.logger, kit.tracer, kit.metrics
get_settings, get_facade = kit.get_settings, kit.get_facade

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


# --- API (built on first use) ----------------------------------------------------------------
_API_LOCK = threading.Lock()


def _build_api() -> None:
    """Build the REST API half (:mod:`ingest_api`) and bind ``app`` and ``api_handler`` here."""
    # A sibling module: ``functions.ingest.ingest_api`` in the repository (the sandbox's
    # copies of this module share the package), ``ingest_api`` in Lambda, whose task root
    # is this folder. It holds no state: each copy of this module builds its own routes.
    routes = importlib.import_module(f"{__package__}.ingest_api" if __package__ else "ingest_api")
    with _API_LOCK:
        if "api_handler" not in globals():
            resolver, handler = routes.build(
                kit,
                facade_of,
                writable=_writable,
                time_bucket=_time_bucket,
                schema=get_table_schema,
                count=_count,
                retry_after_s=RETRY_AFTER_S,
            )
            globals().update(app=resolver, api_handler=handler)


def __getattr__(name: str) -> Any:
    """Build the REST API on first use of ``app`` or ``api_handler`` (PEP 562).

    The Lambda runtime finds a handler with ``getattr(module, "api_handler")``, so the
    API function builds its routes at its cold start, as before; the queue and stream
    functions, which never ask, load none of it.
    """
    if name in ("app", "api_handler"):
        _build_api()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


# --- init: built before the first invocation (SnapStart, provisioned concurrency) -------------
def _write_path() -> object:
    """Build the first write's own parts: the writer's client and the writer's module."""
    importlib.import_module("dynashard.dynamodb.writer")
    return get_facade().write_client


kit.warm(get_settings, get_table_schema, get_key_settings, get_facade, _write_path)

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
