"""Ingest: one bulk write decides the fate of every event of a request or a batch.

What the ingest function does between parsing its trigger and answering it, kept out of
the handler so that any writer of events (a Lambda function, a service, the sandbox)
does it the same way:

- :func:`write_events` writes the events of an API request with one ``put_events``
  call, logging the write load around it;
- :func:`write_batch` does the same for the records of an SQS or Kinesis batch: it
  parses every record first, writes the valid events at once, and returns each
  record's fate (None when its event is durable, else the reason), from which the
  handler builds its partial batch response;
- :func:`log_write_load` / :func:`log_write_refused` write the ``write load`` and
  ``write refused`` lines (:mod:`dynashard.core.load`) that the stack's Contributor Insights
  rule ranks logical keys by, and that the scaler plans from.

Logging goes through the caller's logger (any object with the standard ``info`` and
``exception`` methods, a Powertools ``Logger`` in the functions), so the lines are the
function's own. Metrics are the caller's too: the results carry the counts.

Nothing here imports boto3 or botocore; the writer's item sizing is loaded on first use.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pydantic import ValidationError

from dynashard.core.load import (
    WRITE_LOAD_MESSAGE,
    WRITE_REFUSED_MESSAGE,
    refused_write_load,
    summarize_write_load,
)
from dynashard.core.schema import DEFAULT_SCHEMA
from dynashard.errors import DynashardError
from dynashard.lambda_kit.key_settings import KeySettingsPort
from dynashard.model import MAX_NESTING_LEVELS, Event, loads

if TYPE_CHECKING:
    from dynashard.core.buckets import TimeBucket
    from dynashard.core.schema import TableSchema
    from dynashard.dynamodb.ordered_index import OrderedIndex


class LogSink(Protocol):
    """The logger methods used here (``logging.Logger`` and Powertools' ``Logger`` fit)."""

    def info(self, msg: object, *args: object, extra: Mapping[str, object] | None = None) -> None:
        """Log an INFO line with structured ``extra`` fields."""
        ...

    def exception(
        self, msg: object, *args: object, extra: Mapping[str, object] | None = None
    ) -> None:
        """Log an ERROR line with the exception being handled."""
        ...


class OutcomeLike(Protocol):
    """The fields of :class:`~dynashard.WriteOutcome` read here."""

    @property
    def event_id(self) -> str:
        """The event's id."""
        ...

    @property
    def key(self) -> str:
        """The event's logical key."""
        ...

    @property
    def ok(self) -> bool:
        """True when the item is durable."""
        ...

    @property
    def error(self) -> str | None:
        """Why it failed, when not ``ok``."""
        ...

    @property
    def write_units(self) -> int:
        """WCU of the item on the base table, 0 when none was built."""
        ...

    @property
    def permanent(self) -> bool:
        """True when the event can never be written as it is (sending it again cannot help)."""
        ...

    @property
    def field(self) -> str | None:
        """The offending field of a permanent refusal, when known (``data``, ``data.carrier``)."""
        ...


class EventWriter(Protocol):
    """The part of :class:`~dynashard.Dynashard` that writes events (a port for tests)."""

    def put_events(self, events: Sequence[Event]) -> Sequence[OutcomeLike]:
        """Write events; one outcome per event, same order."""
        ...


class IngestPort(EventWriter, KeySettingsPort, Protocol):
    """What the ingest function uses of :class:`~dynashard.Dynashard` (a port for tests).

    Writes, and the shard administration of its ``PUT /shards/{key}/...`` routes and of
    the stack's key settings (:class:`~dynashard.lambda_kit.key_settings.KeySettingsPort`).
    """

    def increment_counter(self, name: str, by: int, idempotency_key: str | None = None) -> bool:
        """Add ``by`` to a sharded counter; False when ``idempotency_key`` was already applied."""
        ...

    def ordered_index(self, key: str) -> OrderedIndex:
        """Return the ordered index (range shards) of a logical key."""
        ...

    def write_key(self, event: Event) -> str:
        """Return the logical key an event is written under (a bucketed family's bucket key)."""
        ...


#: A batch record: its item identifier and a function returning its payload (JSON).
BatchItem = tuple[str, Callable[[], str | bytes]]


def parse_event(text: str | bytes) -> Event:
    """Parse one queue or stream record body: a JSON event.

    Parameters
    ----------
    text : str or bytes
        JSON text of ``{"key", "id", "ts", "data"}``.

    Returns
    -------
    Event
        The validated event. JSON numbers with a fraction or an exponent are parsed as
        ``Decimal`` (:func:`~dynashard.model.loads`), not float: every digit is kept.

    Raises
    ------
    ValueError
        If the text is not JSON or not a valid event (pydantic's error names the field,
        e.g. ``data.price`` for a number DynamoDB cannot keep exactly).
    """
    try:
        parsed = loads(text)
    except RecursionError:
        raise ValueError(
            f"data: nests maps and lists too deep to parse, over DynamoDB's limit of "
            f"{MAX_NESTING_LEVELS} levels"
        ) from None
    return Event.model_validate(parsed)


def describe_error(exc: Exception) -> str:
    """Say why a record could not be parsed, naming the fields when pydantic can.

    Parameters
    ----------
    exc : Exception
        The parse error.

    Returns
    -------
    str
        ``"ts: must be ISO-8601 ..."`` (fields joined by ``.``; several errors joined by
        ``; ``) for a validation error, else ``"{type}: {message}"``.
    """
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )
    return f"{type(exc).__name__}: {exc}"


def log_write_load(
    logger: LogSink,
    events: Sequence[Event],
    bucket: TimeBucket,
    redelivered: Sequence[bool] = (),
    key_of: Callable[[Event], str] | None = None,
    schema: TableSchema = DEFAULT_SCHEMA,
    parts: int = 1,
) -> None:
    """Log what this invocation was offered, one ``write load`` line per logical key.

    Logged before the write, so that each line is stamped when its load arrived. These
    lines are what the stack's Contributor Insights rule ranks logical keys by, and
    what the scaler plans from.

    Parameters
    ----------
    logger : LogSink
        Where the lines go (INFO, fields of :meth:`~dynashard.core.load.KeyWriteLoad.log_fields`).
    events : sequence of Event
        The valid events about to be written.
    bucket : TimeBucket
        The writer's GSI time bucket (it is part of the item, so of its size).
    redelivered : sequence of bool
        Per event, whether its source delivered the record before; missing entries
        count as first deliveries.
    key_of : callable, optional
        The logical key an event is written under (a time-bucketed family's bucket key:
        :func:`dynashard.core.families.write_key`), so the lines name the keys the scaler
        grows; ``event.key`` when omitted.
    schema : TableSchema
        The data table's key schema (:mod:`dynashard.core.schema`), the one the writer
        builds items with: an item's attribute names, its sort key and a ``flat``
        payload are part of its size, so of its write units
        (:func:`~dynashard.dynamodb.writer.event_write_units`). dynashard's own by
        default.
    parts : int
        Parts of the key space the stack's write-load rule is split into
        (``DYNASHARD_WRITE_LOAD_PARTS``): each line carries its key's part
        (:func:`dynashard.core.load.write_load_part`), which one part's rule counts.
    """
    from dynashard.dynamodb.writer import event_write_units

    flags = list(redelivered) + [False] * (len(events) - len(redelivered))
    if schema is not DEFAULT_SCHEMA and schema.is_default:
        schema = DEFAULT_SCHEMA  # the writer's own fast sizing of the default layout

    def units(event: Event) -> int:
        try:
            return event_write_units(event, bucket, schema)
        except DynashardError:
            return 0  # over a DynamoDB limit: the write refuses it and reports why

    key = key_of or _own_key
    writes = ((key(e), units(e), again) for e, again in zip(events, flags, strict=False))
    for load in summarize_write_load(writes, parts):
        logger.info(WRITE_LOAD_MESSAGE, extra=load.log_fields())


def _own_key(event: Event) -> str:
    return event.key


def log_write_refused(logger: LogSink, outcomes: Sequence[OutcomeLike]) -> None:
    """Log what the write refused, one ``write refused`` line per logical key that had any.

    Events refused for good (``permanent``) are left out: they are not load that more
    shards would have written.

    Parameters
    ----------
    logger : LogSink
        Where the lines go (INFO).
    outcomes : sequence of OutcomeLike
        The bulk write's outcomes.
    """
    # A permanent refusal is not load the table refused: more shards would not write it.
    refused = refused_write_load((o.key, o.write_units, o.ok or o.permanent) for o in outcomes)
    for fields in refused.values():
        logger.info(WRITE_REFUSED_MESSAGE, extra=fields)


def write_events(
    events: Sequence[Event],
    writer: EventWriter,
    *,
    logger: LogSink,
    bucket: TimeBucket,
    key_of: Callable[[Event], str] | None = None,
    schema: TableSchema = DEFAULT_SCHEMA,
    parts: int = 1,
) -> list[OutcomeLike]:
    """Write the events of a request with one bulk write, logging its write load.

    Parameters
    ----------
    events : sequence of Event
        The validated events, 1 to 100.
    writer : EventWriter
        Where to write (a :class:`~dynashard.Dynashard`).
    logger : LogSink
        Gets the ``write load`` lines before the write, ``write refused`` after it.
    bucket : TimeBucket
        The writer's GSI time bucket.
    key_of : callable, optional
        The logical key an event is written under (see :func:`log_write_load`).
    schema : TableSchema
        The data table's key schema, which sizes the write load (see
        :func:`log_write_load`).
    parts : int
        Parts of the write-load rule's key space (see :func:`log_write_load`).

    Returns
    -------
    list of OutcomeLike
        One outcome per event, same order.

    Raises
    ------
    DynashardError
        If the write as a whole failed (nothing is known to be durable).
    """
    log_write_load(logger, events, bucket, key_of=key_of, schema=schema, parts=parts)
    outcomes = list(writer.put_events(events))
    log_write_refused(logger, outcomes)
    return outcomes


#: Reason prefix of a record that can never be written as it is (a permanent failure).
INVALID_EVENT = "invalid event"
#: Reason prefix of a record whose write failed for now (throttling, an outage).
WRITE_FAILED = "write failed"


@dataclass(frozen=True)
class BatchResult:
    """The fate of every record of a batch.

    Attributes
    ----------
    fates : dict of str to (str or None)
        Item identifier -> None if its event is durable, else why it is not
        (``invalid event: ...`` for a permanent failure, ``write failed: ...`` for a
        transient one).
    permanent : frozenset of str
        Item identifiers of the records that failed for good: not JSON, not a valid
        event, or an event DynamoDB can never store (over the 400 KB item limit,
        without its ``calculated`` attribute). They are reported as batch item failures
        all the same (see :func:`write_batch`).
    """

    fates: dict[str, str | None] = field(default_factory=dict)
    permanent: frozenset[str] = frozenset()

    @property
    def failed(self) -> int:
        """int: Records whose event is not durable."""
        return sum(1 for reason in self.fates.values() if reason is not None)

    @property
    def written(self) -> int:
        """int: Records whose event is durable."""
        return len(self.fates) - self.failed


def write_batch(
    items: Sequence[BatchItem],
    writer: EventWriter,
    *,
    logger: LogSink,
    bucket: Callable[[], TimeBucket],
    redelivered: Collection[str] = (),
    key_of: Callable[[Event], str] | None = None,
    schema: Callable[[], TableSchema] | None = None,
    parts: int = 1,
) -> BatchResult:
    """Parse every record, write the valid events at once, return each record's fate.

    A record that can never be written (a permanent failure: not a valid event, over a
    DynamoDB limit, without its ``calculated`` attribute) is still reported back as a
    batch item failure, because a Lambda partial batch response can only say "failed":
    the source redelivers it until its redrive policy's ``maxReceiveCount`` (SQS) or the
    event source mapping's retry limit (Kinesis) moves it to the dead-letter queue or
    the on-failure destination. Acknowledging it instead would drop it with no trace.
    Its reason starts ``invalid event:`` and its identifier is in
    :attr:`BatchResult.permanent`, so the handler logs it as permanent with the message
    id (:func:`dynashard.lambda_kit.batch.partial_batch_response`): the DLQ holds the record,
    the log says why.

    Parameters
    ----------
    items : sequence of (str, callable)
        Per record: its batch item identifier and a function returning its payload
        (JSON text; a payload that fails to decode, e.g. bad base64, is an invalid event).
    writer : EventWriter
        Where to write.
    logger : LogSink
        Gets the write-load lines (:func:`log_write_load`, :func:`log_write_refused`)
        and ``bulk write failed`` when the write as a whole fails.
    bucket : callable
        Returns the writer's GSI time bucket; called only when a record holds a valid
        event (a batch of invalid records reads no settings).
    redelivered : collection of str
        Item identifiers of records the source delivered before (their write units are
        logged as redelivered, not offered).
    key_of : callable, optional
        The logical key an event is written under (see :func:`log_write_load`).
    schema : callable, optional
        Returns the data table's key schema, which sizes the write load (see
        :func:`log_write_load`); called, as ``bucket``, only when a record holds a valid
        event. None: dynashard's own.
    parts : int
        Parts of the write-load rule's key space (see :func:`log_write_load`).

    Returns
    -------
    BatchResult
        Every record's fate. A write that fails as a whole fails every valid record
        (``write failed: {message}``); it does not raise.

    Raises
    ------
    RuntimeError
        If the writer returns a different number of outcomes than it was given events:
        a broken contract must not acknowledge anything.
    """
    fates: dict[str, str | None] = {}
    permanent: set[str] = set()
    valid: list[tuple[str, Event]] = []
    for item_id, payload in items:
        try:
            valid.append((item_id, parse_event(payload())))
        except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
            fates[item_id] = f"{INVALID_EVENT}: {describe_error(exc)}"
            permanent.add(item_id)
    if not valid:
        return BatchResult(fates, frozenset(permanent))
    events = [event for _, event in valid]
    flags = [i in redelivered for i, _ in valid]
    table_schema = DEFAULT_SCHEMA if schema is None else schema()
    log_write_load(logger, events, bucket(), flags, key_of=key_of, schema=table_schema, parts=parts)
    try:
        outcomes = writer.put_events(events)
    except DynashardError as exc:
        # The write as a whole failed: every record goes back to the source.
        logger.exception("bulk write failed")
        for item_id, _ in valid:
            fates[item_id] = f"{WRITE_FAILED}: {exc.message}"
        return BatchResult(fates, frozenset(permanent))
    if len(outcomes) != len(valid):
        raise RuntimeError(f"put_events returned {len(outcomes)} outcomes for {len(valid)} events")
    for (item_id, _), outcome in zip(valid, outcomes, strict=True):
        if outcome.ok:
            fates[item_id] = None
        elif outcome.permanent:
            fates[item_id] = f"{INVALID_EVENT}: {outcome.error or 'refused'}"
            permanent.add(item_id)
        else:
            fates[item_id] = f"{WRITE_FAILED}: {outcome.error or 'unknown'}"
    log_write_refused(logger, outcomes)
    return BatchResult(fates, frozenset(permanent))


__all__ = [
    "INVALID_EVENT",
    "WRITE_FAILED",
    "BatchItem",
    "BatchResult",
    "EventWriter",
    "IngestPort",
    "LogSink",
    "OutcomeLike",
    "describe_error",
    "log_write_load",
    "log_write_refused",
    "parse_event",
    "write_batch",
    "write_events",
]
