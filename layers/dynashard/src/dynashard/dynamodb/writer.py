"""The sharded writer: events -> items -> parallel BatchWriteItem, one outcome per event.

Each event's shard comes from its logical key's shard count and strategy (writer cache,
see :mod:`dynashard.dynamodb.metadata_store`): ``random`` keyed by the event id, so a retried or
redelivered event lands on the same item (invariant 2), or ``calculated`` keyed by the
key's shard attribute in the event's ``data`` (an event without it is refused, naming
the field). Items are grouped
into BatchWriteItem calls of at most 25 (BatchWriteItem API reference) sent in
parallel; ``UnprocessedItems`` are retried with exponential back-off and full jitter.
Every event gets an outcome, written or failed with the reason, so a caller can report
failures for redelivery instead of losing them (invariant 1). A failure is either
transient (throttling, an unavailable service: send it again) or ``permanent`` (the event
breaks a DynamoDB or dynashard rule: sending it again cannot help, the caller refuses it).

A sort key without the event id (``epoch_ms_number``, :attr:`SortKeyCodec.id_in_sort_key
<dynashard.core.schema.SortKeyCodec.id_in_sort_key>` False) lets two different events of
one shard share a primary key: one item per shard and millisecond. BatchWriteItem takes
no condition, so there each item is a conditional PutItem instead (:meth:`ShardedWriter.write`),
which never overwrites another event's item: an acknowledged event is never lost to a
later one (invariant 1).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from boto3.dynamodb.types import TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from dynashard import names
from dynashard.core.buckets import TimeBucket, time_bucket
from dynashard.core.capacity import attribute_value_size, item_size, number_size, write_units
from dynashard.core.keys import (
    TS_WIDTH,
    bucket_partition_key,
    check_item_size,
    format_ts,
    gsi1_partition_key,
    physical_key,
    utf8_len,
)
from dynashard.core.retry import RETRYABLE_ERROR_CODES, Backoff
from dynashard.core.schema import DEFAULT_SCHEMA, Payload, TableSchema
from dynashard.core.strategies import Strategy, choose_shard
from dynashard.core.throttling import (
    THROTTLING_ERROR_CODES,
    ThrottleKind,
    classify,
    throttling_reasons,
)
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.errors import DynashardError, InvalidInputError
from dynashard.model import MAX_EXACT_INT, Event

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from dynashard.dynamodb.gsi_buckets import Gsi1BucketRecorder

#: Largest number of put requests in one BatchWriteItem call (DynamoDB quota).
BATCH_WRITE_MAX_ITEMS = 25

#: DynamoDB's error code for a request it can never serve as it is (API reference,
#: "Common errors"): an item it refuses with it is refused for good, not retried.
VALIDATION_ERROR = "ValidationException"
#: DynamoDB's error code for a conditional write whose condition is false (PutItem API
#: reference, "Errors").
CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailedException"
#: Most keys of one BatchGetItem call (DynamoDB quota).
BATCH_GET_MAX_KEYS: Final = 100
#: The condition of a put whose sort key lacks the event id: the primary key is free, or
#: its item is this very event (a retry or a redelivery stays idempotent, invariant 2).
PUT_UNLESS_ANOTHER_EVENT: Final = "attribute_not_exists(#pk) OR #id = :id"

_serializer = TypeSerializer()
_log = logging.getLogger(__name__)
#: What identifies one item to write in a batch: its primary key values (partition key,
#: sort key text), and the event id too when the sort key lacks it.
_Slot = tuple[str, ...]


@dataclass(frozen=True)
class WriteOutcome:
    """What happened to one event.

    Attributes
    ----------
    event_id : str
        The event's id.
    key : str
        The event's logical key.
    ok : bool
        True when the item is durable in the table.
    error : str or None
        Why it failed (error code and message), when ``ok`` is False.
    physical_key : str or None
        The physical key it went to, when a shard was chosen.
    write_units : int
        Write capacity units of the item on the base table (one per started KB;
        :func:`dynashard.core.capacity.write_units`), 0 when no item was built.
    permanent : bool
        True when the event can never be written as it is (over a DynamoDB limit,
        without its ``calculated`` attribute, refused by DynamoDB's
        ``ValidationException``): sending it again cannot help, unlike a throttled write.
    field : str or None
        The offending field of a permanent refusal when known, e.g. ``data`` or
        ``data.carrier``.
    """

    event_id: str
    key: str
    ok: bool
    error: str | None = None
    physical_key: str | None = None
    write_units: int = 0
    permanent: bool = False
    field: str | None = None

    @classmethod
    def refused(cls, event: Event, exc: DynashardError) -> WriteOutcome:
        """Return the outcome of an event refused before any write with ``exc``.

        Parameters
        ----------
        event : Event
            The event.
        exc : DynashardError
            Why: an ``InvalidInputError`` is permanent (the event is wrong, field named);
            any other library error (e.g. ``MetadataError``) is not (send it again).

        Returns
        -------
        WriteOutcome
            ``ok`` False, ``error`` ``"{type}: {message}"``.
        """
        invalid = isinstance(exc, InvalidInputError)
        return cls(
            event.id,
            event.key,
            False,
            f"{type(exc).__name__}: {exc}",
            permanent=invalid,
            field=exc.field if isinstance(exc, InvalidInputError) else None,
        )


#: UTF-8 bytes of the attribute names of an event's item (an item's size counts them).
_ITEM_NAME_BYTES: Final = sum(
    len(name.encode("utf-8"))
    for name in (
        names.ATTR_PK,
        names.ATTR_SK,
        names.ATTR_GSI1PK,
        names.ATTR_GSI1SK,
        names.ATTR_KEY,
        names.ATTR_ID,
        names.ATTR_TS,
        names.ATTR_SHARD,
        names.ATTR_DATA,
    )
)


def serialize_value(value: Any) -> dict[str, Any]:
    """Serialize a Python value into a DynamoDB attribute value, as boto3's ``TypeSerializer``.

    The writer serializes every payload of every event; boto3's serializer dispatches
    each value through a chain of ``isinstance`` checks against abstract base classes.
    This takes JSON's types (what an event's ``data`` holds after validation: str, int,
    ``Decimal``, bool, None, dict, list) by their exact type and hands anything else
    (sets, bytes, ``Binary``, subclasses, ints of more than 38 digits) to boto3, so the
    result, and every error, is boto3's own.

    Parameters
    ----------
    value : Any
        A value ``TypeSerializer.serialize`` accepts.

    Returns
    -------
    dict
        The attribute value in DynamoDB JSON (``{"S": ...}``, ``{"N": ...}``, ``{"M": ...}``).

    Raises
    ------
    TypeError
        For a value boto3 cannot serialize (a float, NaN).

    Examples
    --------
    >>> serialize_value({"origin": "JFK", "delay": 2})
    {'M': {'origin': {'S': 'JFK'}, 'delay': {'N': '2'}}}
    >>> serialize_value([True, None, "x"])
    {'L': [{'BOOL': True}, {'NULL': True}, {'S': 'x'}]}
    """
    kind = type(value)
    if kind is str:
        return {"S": value}
    if kind is dict:
        return {"M": {k: serialize_value(v) for k, v in value.items()}}
    if kind is int and -MAX_EXACT_INT < value < MAX_EXACT_INT:
        return {"N": str(value)}
    if kind is list:
        return {"L": [serialize_value(v) for v in value]}
    if kind is bool:
        return {"BOOL": value}
    if value is None:
        return {"NULL": True}
    serialized: dict[str, Any] = _serializer.serialize(value)
    return serialized


def _item_size(event: Event, sk: str, pk: str, gsi1_pk: str, shard: int) -> int:
    """Size of an event's item, bytes: :func:`~dynashard.core.capacity.item_size` of it."""
    return (
        _ITEM_NAME_BYTES
        + utf8_len(pk)
        + 2 * utf8_len(sk)  # SK and GSI1SK
        + utf8_len(gsi1_pk)
        + utf8_len(event.key)
        + utf8_len(event.id)
        + len(sk)
        - len(event.id)
        - 1  # ts: ASCII, the sort key's prefix
        + number_size(str(shard))
        + attribute_value_size(event.data)
    )


def build_item(
    event: Event,
    shard: int,
    bucket: TimeBucket,
    *,
    label: str | None = None,
    schema: TableSchema = DEFAULT_SCHEMA,
) -> tuple[dict[str, Any], int]:
    """Build the data-table item of an event and measure it.

    Parameters
    ----------
    event : Event
        The event.
    shard : int
        Its shard, ``0 <= shard < N``.
    bucket : TimeBucket
        Time bucket of the GSI1 partition key.
    label : str, optional
        ``time_bucket(event.ts, bucket)`` when the caller has it already.
    schema : TableSchema
        The table's key schema and attribute names (:mod:`dynashard.core.schema`);
        dynashard's own by default.

    Returns
    -------
    tuple of (dict, int)
        The item in DynamoDB's wire format, and its size in bytes as DynamoDB counts it
        (:func:`dynashard.core.capacity.item_size` of the item's Python values).

    Raises
    ------
    KeyLimitExceededError
        If the sort key or the item is over a DynamoDB limit.
    InvalidInputError
        With a ``flat`` payload, for a ``data`` field named like one of the schema's own
        attributes (field ``data.{name}``).
    """
    if schema is not DEFAULT_SCHEMA and not schema.is_default:
        return _build_schema_item(event, shard, bucket, label, schema)
    sk = event.sort_key
    ts = sk[:TS_WIDTH]  # format_ts(event.ts): the sort key's fixed-width prefix
    pk = physical_key(event.key, shard)
    gsi1_pk = bucket_partition_key(event.key, label or time_bucket(event.ts, bucket), shard)
    size = check_item_size(_item_size(event, sk, pk, gsi1_pk, shard))
    item = {
        names.ATTR_PK: {"S": pk},
        names.ATTR_SK: {"S": sk},
        names.ATTR_GSI1PK: {"S": gsi1_pk},
        names.ATTR_GSI1SK: {"S": sk},
        names.ATTR_KEY: {"S": event.key},
        names.ATTR_ID: {"S": event.id},
        names.ATTR_TS: {"S": ts},
        names.ATTR_SHARD: {"N": str(shard)},
        names.ATTR_DATA: serialize_value(event.data),
    }
    return item, size


def _build_schema_item(
    event: Event, shard: int, bucket: TimeBucket, label: str | None, schema: TableSchema
) -> tuple[dict[str, Any], int]:
    """:func:`build_item` for a table of another schema than dynashard's own."""
    sk = schema.sort_key_codec.encode(event.ts, event.id)
    sk_size = utf8_len(sk) if schema.sort_key_type == "S" else number_size(sk)
    pk = physical_key(event.key, shard)
    sk_value = schema.sort_value(sk)
    # Sizes from Python values, as DynamoDB counts them (names plus values).
    strings: dict[str, str] = {
        schema.partition_key: pk,
        schema.key_attr: event.key,
        schema.id_attr: event.id,
        schema.ts_attr: format_ts(event.ts),
    }
    item: dict[str, Any] = {name: {"S": value} for name, value in strings.items()}
    item[schema.sort_key] = sk_value
    item[schema.shard_attr] = {"N": str(shard)}
    size = (
        item_size(strings)
        + utf8_len(schema.sort_key)
        + sk_size
        + utf8_len(schema.shard_attr)
        + number_size(str(shard))
    )
    if schema.gsi_name is not None:
        gsi_pk = bucket_partition_key(event.key, label or time_bucket(event.ts, bucket), shard)
        item[schema.gsi_partition_key] = {"S": gsi_pk}
        item[schema.gsi_sort_key] = sk_value
        size += item_size({schema.gsi_partition_key: gsi_pk})
        size += utf8_len(schema.gsi_sort_key) + sk_size
    if schema.payload is Payload.NESTED:
        item[schema.data_attr] = serialize_value(event.data)
        size += utf8_len(schema.data_attr) + attribute_value_size(event.data)
    else:
        for name, value in event.data.items():
            if name in schema.reserved:
                raise InvalidInputError(
                    f"data.{name}",
                    "is an attribute of the table's own schema; a flat payload cannot use "
                    "its name (rename the field, or store the payload nested)",
                )
            item[name] = serialize_value(value)
        size += item_size(event.data)
    return item, check_item_size(size)


def event_write_units(
    event: Event, bucket: TimeBucket = TimeBucket.DAY, schema: TableSchema = DEFAULT_SCHEMA
) -> int:
    """Return the write units an event's item will take, before its shard is chosen.

    Parameters
    ----------
    event : Event
        The event.
    bucket : TimeBucket
        Time bucket of GSI1 keys (the writer's).
    schema : TableSchema
        The table's key schema (:mod:`dynashard.core.schema`).

    Returns
    -------
    int
        WCU of the item built on shard 0 (:func:`dynashard.core.capacity.write_units`); another
        shard's digits add at most a few bytes, which can move the figure only for an
        item within those bytes of a KB boundary.

    Raises
    ------
    KeyLimitExceededError
        If the sort key or the item is over a DynamoDB limit.
    """
    if schema is not DEFAULT_SCHEMA and not schema.is_default:
        return write_units(build_item(event, 0, bucket, schema=schema)[1])
    sk = event.sort_key
    gsi1_pk = gsi1_partition_key(event.key, event.ts, bucket, 0)
    return write_units(
        check_item_size(_item_size(event, sk, physical_key(event.key, 0), gsi1_pk, 0))
    )


class ShardedWriter:
    """Writes events to their shards with parallel BatchWriteItem calls.

    When the schema's sort key does not hold the event id (``epoch_ms_number``: one item
    per shard and millisecond), every item is a conditional PutItem instead, sent in
    parallel: put unless the primary key holds *another* event
    (:data:`PUT_UNLESS_ANOTHER_EVENT`). If it does, the event is put on the key's next
    shard, then the next, over the shard count in force (a ``random`` key only: readers
    query every shard of it; a ``calculated`` key's event must stay on its attribute's
    shard, where targeted reads look). The shards are tried in the same order every time,
    so a redelivered event finds its own item again. When every shard tried holds another
    event at that sort key, the writer looks for the event on every other shard the key
    may have used (its metadata read fresh: every count in ``shard_history``), since a
    redelivery after a shrink, or at a writer whose cached count is older, tries other
    shards than the first delivery did: found, the event is acknowledged where it is
    stored; not found, it fails, permanently (field ``ts``), naming the events that
    hold the sort key.

    Capacity: each attempt is a write, and a conditional write whose condition fails
    still consumes write capacity, by the larger of the existing and the new item's
    size (Developer Guide, "Condition expressions" and "DynamoDB read and write
    operations", conditional writes). An event whose millisecond is taken on ``k``
    shards costs ``k`` extra writes, whether or not it finds a free shard; DynamoDB counts
    them in ``ConditionalCheckFailedRequests``. An event that finds no free shard also
    costs one strongly consistent ``GetItem`` per other shard of its key's history
    (``BatchGetItem``, 100 keys a call; a strongly consistent read of 1 RCU per 4 KB of
    each item found, a projection does not lower it), plus a metadata read. PutItem
    also costs a round trip per item where BatchWriteItem sends 25. The default schema
    keeps BatchWriteItem: its sort key holds the id, so no two events share an item.

    Parameters
    ----------
    client : DynamoDBClient
        A boto3 DynamoDB client (thread-safe; shared by the worker threads).
    table_name : str
        The data table.
    metadata : ShardMetadata
        Shard counts (the writer cache).
    executor : Executor
        Runs the BatchWriteItem calls in parallel.
    bucket : TimeBucket or callable
        Time bucket of GSI1 keys, or logical key -> its bucket (per key family).
    backoff : Backoff
        Retry policy for ``UnprocessedItems`` and throttling errors.
    sleep : callable
        Sleeps between retries; injectable for tests.
    grow_on_key_range_throttle : bool
        Ask for more shards in-band (:meth:`ShardMetadata.request_growth`) when a
        write meets key-range throttling. Other throttles only back off (invariant 6).
    gsi1_recorder : Gsi1BucketRecorder, optional
        Records each ``(key, bucket)``'s shard count before its items are written, so
        GSI1 readers query only the shards a bucket can hold
        (:mod:`dynashard.dynamodb.gsi_buckets`), and first the key's time-bucket unit
        (``gsi1_units``, so readers use the unit the items were written with); an event
        whose record fails fails. None records nothing (GSI1 readers then query every
        shard the key ever had, with the configured unit).
    schema : TableSchema
        The table's key schema and attribute names (:mod:`dynashard.core.schema`);
        dynashard's own by default. A schema without a GSI records no GSI1 buckets.

    Attributes
    ----------
    throttles : collections.Counter
        Throttled BatchWriteItem calls by reason (``ThrottlingReasons``), or by error
        code when DynamoDB gave no reason; for metrics.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        metadata: ShardMetadata,
        executor: Executor,
        bucket: TimeBucket | Callable[[str], TimeBucket] = TimeBucket.DAY,
        backoff: Backoff | None = None,
        sleep: Callable[[float], None] = time.sleep,
        grow_on_key_range_throttle: bool = True,
        gsi1_recorder: Gsi1BucketRecorder | None = None,
        schema: TableSchema = DEFAULT_SCHEMA,
    ) -> None:
        self.client = client
        self.table_name = table_name
        self.metadata = metadata
        self.executor = executor
        self.bucket_of: Callable[[str], TimeBucket] = (
            bucket if callable(bucket) else _constant_bucket(bucket)
        )
        self.backoff = backoff or Backoff()
        self.sleep = sleep
        self.grow_on_key_range_throttle = grow_on_key_range_throttle
        self.gsi1_recorder = gsi1_recorder if schema.gsi_name is not None else None
        self.schema = schema
        self._pk, self._sk = schema.partition_key, schema.sort_key
        self._sk_type = schema.sort_key_type
        self.throttles: Counter[str] = Counter()
        self._throttle_lock = threading.Lock()

    def write(self, events: Sequence[Event]) -> list[WriteOutcome]:
        """Write events; return one outcome per event, in input order.

        Events with the same logical key and sort key (the same event offered twice)
        become one item and share its outcome. With a sort key that lacks the event id,
        two events of one shard and sort key are two items, each written by its own
        conditional PutItem (see the class docstring): one of them may move to another
        shard, or fail permanently (field ``ts``) when every shard has another event at
        that sort key; neither overwrites the other, in this batch or any other.

        Parameters
        ----------
        events : sequence of Event
            Validated events, any number.

        Returns
        -------
        list of WriteOutcome
            ``len(events)`` outcomes. Nothing is raised for a per-event failure; a
            failed outcome names the reason, e.g. ``InvalidInputError: data.carrier:
            required by the calculated strategy, missing`` for an event of a
            ``calculated`` key without its shard attribute.
        """
        outcomes: list[WriteOutcome | None] = [None] * len(events)
        conditional = not self.schema.sort_key_codec.id_in_sort_key
        slots: dict[_Slot, list[int]] = {}
        items: dict[_Slot, dict[str, Any]] = {}
        units: dict[_Slot, int] = {}
        probes: dict[_Slot, _Probe] = {}
        buckets: dict[tuple[str, str], tuple[int, list[_Slot]]] = {}
        recorded: dict[str, dict[str, int]] = {}
        pruned: dict[str, str | None] = {}
        stored_units: dict[str, frozenset[str]] = {}
        for index, event in enumerate(events):
            try:
                unit = self.bucket_of(event.key)
                label = time_bucket(event.ts, unit)
                # A key created here is created with its GSI1 unit and this bucket's
                # record: its first batch records neither by an UpdateItem of its own.
                info = self.metadata.for_writer(
                    event.key, gsi1=None if self.gsi1_recorder is None else (unit.value, label)
                )
                if event.key not in recorded:
                    recorded[event.key] = dict(info.gsi1_shards)
                    pruned[event.key] = info.gsi1_pruned
                    stored_units[event.key] = info.gsi1_units
                shard = choose_shard(
                    info.strategy, info.number_of_shards, event.id, event.data, info.shard_attribute
                )
                item, size = build_item(event, shard, unit, label=label, schema=self.schema)
            except DynashardError as exc:
                outcomes[index] = WriteOutcome.refused(event, exc)
                continue
            item_key: _Slot = self._item_key(item)
            if conditional:
                # A sort key without the id: two different events may share a primary
                # key, so each event is its own slot, put by _put_unique.
                item_key = (*item_key, event.id)
                probes[item_key] = _Probe(
                    event, _shards_to_try(info.strategy, info.number_of_shards, shard), unit, label
                )
            slots.setdefault(item_key, []).append(index)
            items[item_key] = item
            units[item_key] = write_units(size)
            bucket = (event.key, label)
            count, bucket_items = buckets.setdefault(bucket, (0, []))
            bucket_items.append(item_key)  # one list per bucket, not a copy per event
            buckets[bucket] = (max(count, info.number_of_shards), bucket_items)
        failed = self._record_gsi1_buckets(buckets, recorded, pruned, stored_units)
        for item_key, why in failed.items():
            del items[item_key]
            for index in slots[item_key]:
                outcomes[index] = WriteOutcome(events[index].id, events[index].key, False, why)
        keys = list(items)
        if conditional:
            puts = [
                self.executor.submit(self._put_unique, items[k], units[k], probes[k]) for k in keys
            ]
            for item_key, put in zip(keys, puts, strict=True):
                outcome = put.result()
                for index in slots[item_key]:
                    outcomes[index] = outcome  # one event id and key per slot
            return [o for o in outcomes if o is not None]
        chunks = [
            keys[i : i + BATCH_WRITE_MAX_ITEMS] for i in range(0, len(keys), BATCH_WRITE_MAX_ITEMS)
        ]
        futures = [
            self.executor.submit(self._write_chunk, [items[k] for k in chunk]) for chunk in chunks
        ]
        for chunk, future in zip(chunks, futures, strict=True):
            failures = future.result()
            for item_key in chunk:
                error = failures.get(item_key)
                # DynamoDB refuses an item it can never store with a ValidationException
                # (e.g. "Item size has exceeded the maximum allowed size"): permanent.
                permanent = error is not None and error.startswith(f"{VALIDATION_ERROR}:")
                for index in slots[item_key]:
                    event = events[index]
                    outcomes[index] = WriteOutcome(
                        event.id,
                        event.key,
                        error is None,
                        error,
                        item_key[0],
                        units[item_key],
                        permanent=permanent,
                    )
        return [o for o in outcomes if o is not None]

    def _record_gsi1_buckets(
        self,
        buckets: dict[tuple[str, str], tuple[int, list[_Slot]]],
        recorded: dict[str, dict[str, int]],
        pruned: dict[str, str | None],
        stored_units: dict[str, frozenset[str]],
    ) -> dict[_Slot, str]:
        """Record each bucket's shard count (pruning the oldest records past the bound).

        The unit of a key's buckets is added to its ``gsi1_units`` first when the key's
        metadata does not hold it yet (:meth:`Gsi1BucketRecorder.ensure_unit`). A bucket
        at or before its key's ``gsi1_pruned`` watermark is not recorded: its record was
        pruned once, so readers query every shard the key ever had for it whatever it
        holds, and the record's own condition would refuse it anyway.

        A batch that spans several buckets of a key (hour buckets, a backfill, a day
        boundary) records them together (:meth:`Gsi1BucketRecorder.ensure_buckets`: one
        conditional ``UpdateItem`` per 25 buckets where no other writer got there
        first), and every record is in place before its items are written. Keys are
        recorded in parallel on the executor, each a round trip.

        Returns the items whose record failed, with the reason: when a key's record
        fails, every item of that key in the batch fails.
        """
        failed: dict[_Slot, str] = {}
        recorder = self.gsi1_recorder
        if recorder is None:
            return failed
        per_key: dict[str, dict[str, int]] = {}
        key_items: dict[str, list[_Slot]] = {}
        for (key, bucket), (count, item_keys) in buckets.items():
            per_key.setdefault(key, {})[bucket] = count
            key_items.setdefault(key, []).extend(item_keys)

        def ensure(key: str) -> None:
            # B101: narrows the type for mypy only; the early return above already
            # handled None, so the code is correct with assertions stripped (python -O).
            assert recorder is not None  # nosec B101
            unit = self.bucket_of(key).value
            if unit not in stored_units.get(key, ()):
                recorder.ensure_unit(key, unit)
            recorder.ensure_buckets(key, per_key[key], recorded.get(key, {}), pruned.get(key))

        if len(per_key) == 1:
            futures = [_done(ensure, next(iter(per_key)))]
        else:
            futures = [self.executor.submit(ensure, key) for key in per_key]
        for key, future in zip(per_key, futures, strict=True):
            try:
                future.result()
            except DynashardError as exc:
                failed.update(dict.fromkeys(key_items[key], f"{type(exc).__name__}: {exc}"))
        return failed

    def _write_chunk(self, chunk: list[dict[str, Any]]) -> dict[_Slot, str]:
        """Write up to 25 items; return the keys that failed, with the reason."""
        pending = [{"PutRequest": {"Item": item}} for item in chunk]
        item_key = self._item_key
        last_error = "UnprocessedItems: still throttled after all retries"
        for attempt in range(self.backoff.max_attempts):
            if attempt:
                self.sleep(self.backoff.delay(attempt - 1))
            try:
                response = self.client.batch_write_item(RequestItems={self.table_name: pending})  # type: ignore[dict-item]
            except ClientError as exc:
                code = exc.response["Error"]["Code"]
                last_error = f"{code}: {exc.response['Error'].get('Message', '')}"
                if code in THROTTLING_ERROR_CODES:
                    self._on_throttle(dict(exc.response), pending)
                if code in RETRYABLE_ERROR_CODES:
                    continue
                if len(pending) > 1:
                    # One bad item fails the whole batch: write the items one by one so
                    # that only the bad one fails.
                    return self._write_singly([r["PutRequest"]["Item"] for r in pending])
                return {item_key(pending[0]["PutRequest"]["Item"]): last_error}
            except BotoCoreError as exc:
                last_error = f"{type(exc).__name__}: {exc}"
                continue
            pending = list(response.get("UnprocessedItems", {}).get(self.table_name, []))  # type: ignore[arg-type]
            if not pending:
                return {}
            self._refresh_counts(pending)
            last_error = "UnprocessedItems: still throttled after all retries"
        return {item_key(r["PutRequest"]["Item"]): last_error for r in pending}

    def _put_unique(self, item: dict[str, Any], units: int, probe: _Probe) -> WriteOutcome:
        """Put an event's item unless another event holds its primary key; else try the next shard.

        Parameters
        ----------
        item : dict
            The event's item on ``probe.shards[0]``, in DynamoDB's wire format.
        units : int
            Its write units.
        probe : _Probe
            The event and the shards to try, in order.

        Returns
        -------
        WriteOutcome
            Written (on the shard it went to, or, when every shard tried holds another
            event, on the shard of the key's history that already holds this event:
            :meth:`_find_stored`); or failed: as a BatchWriteItem item fails (throttled
            after every retry, ``ValidationException``: permanent), not permanent when
            the search for a stored copy failed, or permanent with field ``ts`` when
            every shard tried holds another event at the item's sort key and no shard
            holds this one.
        """
        event = probe.event
        holders: list[str] = []
        for step, shard in enumerate(probe.shards):
            if step:
                try:
                    item, size = build_item(
                        event, shard, probe.unit, label=probe.label, schema=self.schema
                    )
                except InvalidInputError as exc:  # another shard's digits can pass 400 KB
                    message = f"{type(exc).__name__}: {exc}"
                    return WriteOutcome(
                        event.id, event.key, False, message, permanent=True, field=exc.field
                    )
                units = write_units(size)
            pk, sk = self._item_key(item)
            error, holder = self._put_if_free(item)
            if holder is None:
                permanent = error is not None and error.startswith(f"{VALIDATION_ERROR}:")
                return WriteOutcome(
                    event.id, event.key, error is None, error, pk, units, permanent=permanent
                )
            holders.append(f"{pk}: {holder}")
        # Every shard tried holds another event: the event may be stored already on a
        # shard this count does not try (a redelivery after a shrink, or at a writer
        # whose cached count is older): acknowledged there, as any redelivery is.
        found, error = self._find_stored(event, sk, frozenset(probe.shards))
        if found is not None:
            return WriteOutcome(event.id, event.key, True, None, found, units)
        if error is not None:  # not known whether it is stored: not permanent
            return WriteOutcome(event.id, event.key, False, error, None, units)
        message = (
            f"InvalidInputError: ts: every shard tried holds another event at sort key {sk} "
            f"({'; '.join(holders)}): the table's sort key ({self._sk}, codec "
            f"{self.schema.sort_key_codec.name}) holds no event id, so a shard holds one "
            "event per sort key; the event was not written"
        )
        return WriteOutcome(
            event.id, event.key, False, message, None, units, permanent=True, field="ts"
        )

    def _find_stored(
        self, event: Event, sk: str, tried: frozenset[int]
    ) -> tuple[str | None, str | None]:
        """Look for ``event`` stored at sort key ``sk`` on a shard not ``tried``.

        Every shard the key may have used is looked at: ``0 .. max_count - 1`` of its
        metadata read fresh (every count in ``shard_history``; a writer's cache may be
        older), strongly consistent ``BatchGetItem`` calls of up to 100 keys projecting
        the event id. Only the refusal path pays for it: an event whose millisecond
        every shard tried holds for another event.

        Returns
        -------
        tuple of (str or None, str or None)
            ``(physical key, None)`` when a shard holds this event id at ``sk``;
            ``(None, None)`` when none does; ``(None, error)`` when the lookup failed
            (metadata or ``BatchGetItem``, after retries): whether the event is stored
            is then unknown, and the caller fails it for now, not for good.
        """
        try:
            count = self.metadata.for_reader(event.key).max_count
        except DynashardError as exc:
            return None, f"{type(exc).__name__}: {exc}"
        shards = [s for s in range(max(count, max(tried) + 1)) if s not in tried]
        id_attr = self.schema.id_attr
        sk_value = {self._sk_type: sk}
        for start in range(0, len(shards), BATCH_GET_MAX_KEYS):
            pending: dict[str, Any] = {
                self.table_name: {
                    "Keys": [
                        {self._pk: {"S": physical_key(event.key, s)}, self._sk: sk_value}
                        for s in shards[start : start + BATCH_GET_MAX_KEYS]
                    ],
                    "ConsistentRead": True,
                    "ProjectionExpression": "#pk, #id",
                    "ExpressionAttributeNames": {"#pk": self._pk, "#id": id_attr},
                }
            }
            error = "UnprocessedKeys: still throttled after all retries"
            for attempt in range(self.backoff.max_attempts):
                if attempt:
                    self.sleep(self.backoff.delay(attempt - 1))
                try:
                    response = self.client.batch_get_item(RequestItems=pending)
                except ClientError as exc:
                    code = exc.response["Error"]["Code"]
                    error = f"{code}: {exc.response['Error'].get('Message', '')}"
                    if code in RETRYABLE_ERROR_CODES:
                        continue
                    return None, error
                except BotoCoreError as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    continue
                for item in response.get("Responses", {}).get(self.table_name, []):
                    if item.get(id_attr) == {"S": event.id}:
                        return item[self._pk]["S"], None
                pending = dict(response.get("UnprocessedKeys") or {})
                if not pending:
                    break
            else:
                return None, f"{error} (looking for the event on the key's other shards)"
        return None, None

    def _put_if_free(self, item: dict[str, Any]) -> tuple[str | None, str | None]:
        """Put one item unless its primary key holds another event; retry throttling.

        Returns
        -------
        tuple of (str or None, str or None)
            ``(None, None)`` when the item is written (or already was: the same event);
            ``(None, holder)`` when another event holds the key, ``holder`` naming its
            id (``ReturnValuesOnConditionCheckFailure``); ``(error, None)`` when the put
            failed, with the error code and message.
        """
        id_attr = self.schema.id_attr
        pending = [{"PutRequest": {"Item": item}}]
        last_error = "still throttled after all retries"
        for attempt in range(self.backoff.max_attempts):
            if attempt:
                self.sleep(self.backoff.delay(attempt - 1))
            try:
                self.client.put_item(
                    TableName=self.table_name,
                    Item=item,
                    ConditionExpression=PUT_UNLESS_ANOTHER_EVENT,
                    ExpressionAttributeNames={"#pk": self._pk, "#id": id_attr},
                    ExpressionAttributeValues={":id": item[id_attr]},
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
                return None, None
            except ClientError as exc:
                code = exc.response["Error"]["Code"]
                if code == CONDITIONAL_CHECK_FAILED:
                    held = exc.response.get("Item", {}).get(id_attr, {})
                    return None, repr(held["S"]) if "S" in held else "an item without an event id"
                last_error = f"{code}: {exc.response['Error'].get('Message', '')}"
                if code in THROTTLING_ERROR_CODES:
                    self._on_throttle(dict(exc.response), pending)
                if code in RETRYABLE_ERROR_CODES:
                    continue
                return last_error, None
            except BotoCoreError as exc:
                last_error = f"{type(exc).__name__}: {exc}"
        return last_error, None

    def _on_throttle(self, response: dict[str, Any], pending: list[dict[str, Any]]) -> None:
        """Count a throttle by reason; on key-range write throttling ask for growth."""
        reasons = throttling_reasons(response)
        with self._throttle_lock:
            if not reasons:
                self.throttles[response["Error"]["Code"]] += 1
            for reason in reasons:
                self.throttles[reason.reason] += 1
        self._refresh_counts(pending)
        if not self.grow_on_key_range_throttle or classify(reasons) is not ThrottleKind.KEY_RANGE:
            return
        if not any(r.is_key_range and r.is_write for r in reasons):
            return
        key_attr = self.schema.key_attr
        for logical in {r["PutRequest"]["Item"][key_attr]["S"] for r in pending}:
            try:
                self.metadata.request_growth(logical)
            except DynashardError as exc:
                # Growth is a side effect of the write; the write goes on retrying
                # and its outcome stands. The failure is logged, not lost.
                _log.warning("in-band shard growth of %r failed: %s", logical, exc)

    def _refresh_counts(self, pending: list[dict[str, Any]]) -> None:
        """Let the next writes of the throttled items' keys read their counts again.

        :meth:`ShardMetadata.refresh_after_throttle` per logical key: a count raised
        while these items were refused reaches this container's next events within
        seconds, not within the cache lifetime. The items themselves keep their shard
        (their retries are the same requests).
        """
        key_attr = self.schema.key_attr
        for logical in {r["PutRequest"]["Item"][key_attr]["S"] for r in pending}:
            self.metadata.refresh_after_throttle(logical)

    def _item_key(self, item: dict[str, Any]) -> tuple[str, str]:
        """Return an item's primary key values: (partition key, sort key text)."""
        return item[self._pk]["S"], item[self._sk][self._sk_type]

    def _write_singly(self, chunk: list[dict[str, Any]]) -> dict[_Slot, str]:
        failures: dict[_Slot, str] = {}
        for item in chunk:
            failures.update(self._write_chunk([item]))
        return failures


@dataclass(frozen=True)
class _Probe:
    """What :meth:`ShardedWriter._put_unique` needs to put an event on another shard."""

    event: Event
    #: Shards to try, in order: the one the strategy chose first.
    shards: tuple[int, ...]
    unit: TimeBucket
    label: str


def _shards_to_try(strategy: Strategy, count: int, shard: int) -> tuple[int, ...]:
    """Return the shards an event whose primary key is taken may go to, in order.

    A ``random`` key's events may go to any shard of the count in force (readers query
    every one), tried from the chosen shard on, always in the same order so a redelivery
    finds its own item first; any other strategy's event stays on its chosen shard
    (a ``calculated`` key's targeted reads query that one).

    Examples
    --------
    >>> _shards_to_try(Strategy.RANDOM, 4, 2), _shards_to_try(Strategy.CALCULATED, 4, 2)
    ((2, 3, 0, 1), (2,))
    """
    if strategy is not Strategy.RANDOM:
        return (shard,)
    return tuple((shard + step) % count for step in range(count))


def _done(call: Callable[..., None], *args: Any) -> Future[None]:
    """Run ``call`` here and now; return its outcome as a completed future."""
    future: Future[None] = Future()
    try:
        call(*args)
        future.set_result(None)
    except Exception as exc:  # re-raised by result(), as the executor's futures do
        future.set_exception(exc)
    return future


def _constant_bucket(unit: TimeBucket) -> Callable[[str], TimeBucket]:
    def bucket_of(_key: str) -> TimeBucket:
        return unit

    return bucket_of
