"""The writer's item building: the fast serializer and sizing equal boto3's and capacity's.

``serialize_value`` takes JSON's types by their exact type and hands everything else to
boto3's ``TypeSerializer``; ``build_item`` sums an item's size from its parts instead of
walking a second copy. Both are pinned here against the reference they replace, on
generated values (hypothesis) and on the edges (ints past 38 digits, sets, bytes,
subclasses, non-ASCII keys).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import Binary, TypeSerializer
from botocore.exceptions import ClientError, ParamValidationError
from hypothesis import given, settings
from hypothesis import strategies as st

from dynashard import Dynashard, DynashardConfig, names
from dynashard.core.buckets import TimeBucket, time_bucket
from dynashard.core.capacity import item_size, wire_item_size, write_units
from dynashard.core.keys import format_ts, gsi1_partition_key, physical_key
from dynashard.core.schema import (
    DEFAULT_SCHEMA,
    EPOCH_MS_NUMBER,
    ISO_MS_THEN_ID,
    PLAIN_STRING,
    Payload,
    TableSchema,
)
from dynashard.dynamodb import writer as writer_module
from dynashard.dynamodb.gsi_buckets import Gsi1BucketRecorder
from dynashard.dynamodb.writer import (
    ShardedWriter,
    build_item,
    event_write_units,
    serialize_value,
)
from dynashard.errors import InvalidInputError, KeyLimitExceededError, MetadataError
from dynashard.model import Event, dynamodb_number, to_dynamodb_numbers
from infra.table_specs import DATA_TABLE, METADATA_TABLE

_boto3 = TypeSerializer()


def scalars(max_abs_int: int) -> st.SearchStrategy[Any]:
    """Strings, integers up to ``max_abs_int`` in magnitude, finite decimals, bools, None."""
    return st.one_of(
        st.text(max_size=20),
        st.integers(min_value=-max_abs_int, max_value=max_abs_int),
        st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-1e6, max_value=1e6),
        st.booleans(),
        st.none(),
    )


_scalars = scalars(10**40)
_json = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def _reference(value: Any) -> Any:
    """boto3's result, or the type of its error."""
    try:
        return _boto3.serialize(value)
    except Exception as exc:  # the error type is the expectation
        return type(exc)


def _ours(value: Any) -> Any:
    try:
        return serialize_value(value)
    except Exception as exc:
        return type(exc)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_serialize_value_equals_boto3_on_json_values(value: Any) -> None:
    # Given any JSON-like value (ints past 38 digits included)
    # When it is serialized by the writer's fast path
    # Then the attribute value, or the error, is boto3's
    assert _ours(value) == _reference(value)


@pytest.mark.parametrize(
    "value",
    [
        10**38 - 1,
        -(10**38) + 1,
        10**38,
        10**40,
        Decimal("1.50"),
        Decimal("NaN"),
        1.5,
        {"a", "b"},
        {1, 2},
        b"\x00\x01",
        Binary(b"xy"),
        OrderedDict(a=1),
        (1, 2),
        True,
        {"nested": [{"deep": [None, False, "x"]}]},
    ],
)
def test_serialize_value_equals_boto3_on_edges(value: Any) -> None:
    # Given a value off the fast path (or right at its bounds)
    # Then the result or the error is boto3's own
    assert _ours(value) == _reference(value)


def _plain_item(event: Event, shard: int, bucket: TimeBucket) -> dict[str, Any]:
    """The item as the writer built it before (Python values), for the reference size."""
    return {
        names.ATTR_PK: physical_key(event.key, shard),
        names.ATTR_SK: event.sort_key,
        names.ATTR_GSI1PK: gsi1_partition_key(event.key, event.ts, bucket, shard),
        names.ATTR_GSI1SK: event.sort_key,
        names.ATTR_KEY: event.key,
        names.ATTR_ID: event.id,
        names.ATTR_TS: format_ts(event.ts),
        names.ATTR_SHARD: shard,
        names.ATTR_DATA: event.data,
    }


_stored_scalars = scalars(10**37)  # within DynamoDB's 38 digits of precision
_events = st.builds(
    Event,
    key=st.text(min_size=1, max_size=12).filter(lambda k: k.strip() == k and k[-1] != "#"),
    id=st.text(min_size=1, max_size=12),
    ts=st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ),
    data=st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.recursive(
            _stored_scalars,
            lambda children: (
                st.lists(children, max_size=4)
                | st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=4)
            ),
            max_leaves=20,
        ),
        max_size=5,
    ),
)


@settings(max_examples=200, deadline=None)
@given(_events, st.integers(min_value=0, max_value=999), st.sampled_from(list(TimeBucket)))
def test_build_item_equals_boto3_and_item_size(
    event: Event, shard: int, bucket: TimeBucket
) -> None:
    # Given any event (non-ASCII keys and ids, nested data), shard and bucket
    plain = _plain_item(event, shard, bucket)
    reference = {name: _boto3.serialize(v) for name, v in plain.items()}
    # When the writer builds the item
    item, size = build_item(event, shard, bucket)
    # Then the item is boto3's serialization of the same attributes, its size theirs,
    assert item == reference
    assert size == item_size(plain)
    # and the units logged before the write are those of the item on shard 0
    assert event_write_units(event, bucket) == write_units(item_size(_plain_item(event, 0, bucket)))


def test_build_item_refuses_an_item_over_400_kb_naming_data() -> None:
    # Given an event whose payload alone is 400 KB
    event = Event(
        key="K", id="e1", ts=datetime(2013, 1, 1, tzinfo=UTC), data={"blob": "x" * 409_600}
    )
    # Then the item is refused before any request, naming the field
    with pytest.raises(KeyLimitExceededError, match="over DynamoDB's limit of 409600") as err:
        build_item(event, 0, TimeBucket.DAY)
    assert err.value.field == "data"
    with pytest.raises(KeyLimitExceededError):
        event_write_units(event)


def test_build_item_takes_the_callers_bucket_label() -> None:
    # Given an event and its day label computed by the caller
    event = Event(
        key="DEPARTURES#JFK", id="f1", ts=datetime(2013, 1, 1, 10, 15, tzinfo=UTC), data={}
    )
    # Then the GSI1 key is built from it, as from the bucket
    item, _ = build_item(event, 3, TimeBucket.DAY, label="2013-01-01")
    assert item[names.ATTR_GSI1PK] == {"S": "DEPARTURES#JFK#2013-01-01#3"}
    assert item == build_item(event, 3, TimeBucket.DAY)[0]


#: Tables of other schemas than dynashard's own: ``S`` and ``N`` sort keys, with and
#: without a GSI, the payload nested or flat.
_OTHER_SCHEMAS = {
    "iso_ms-gsi-nested": TableSchema(sort_key_codec=ISO_MS_THEN_ID),
    "iso_ms-flat": TableSchema(
        partition_key="device", sort_key="at", sort_key_codec=ISO_MS_THEN_ID, gsi_name=None,
        payload=Payload.FLAT,
    ),
    "epoch-nested": TableSchema(
        partition_key="device", sort_key="at", sort_key_codec=EPOCH_MS_NUMBER, gsi_name=None
    ),
    "epoch-flat": TableSchema(
        partition_key="device", sort_key="at", sort_key_codec=EPOCH_MS_NUMBER, gsi_name=None,
        payload=Payload.FLAT,
    ),
    "plain-gsi-flat": TableSchema(sort_key_codec=PLAIN_STRING, payload=Payload.FLAT),
}  # fmt: skip
_READING = Event(
    key="DEVICE#7",
    id="r-001",
    ts=datetime(2013, 1, 1, 10, 15, 0, 123456, tzinfo=UTC),
    data={"temp": Decimal("21.5"), "unit": "C", "tags": ["a", "b"], "ok": True},
)


@pytest.mark.parametrize("schema", _OTHER_SCHEMAS.values(), ids=_OTHER_SCHEMAS)
def test_build_item_of_another_schema_measures_the_item_it_builds(schema: TableSchema) -> None:
    # Given a table of another schema than dynashard's own
    # When an event's item is built for it
    item, size = build_item(_READING, 3, TimeBucket.DAY, schema=schema)
    # Then its size is the built item's, as DynamoDB counts it (every attribute, the
    # sort key as a string or a number by its type), and its units follow
    assert size == wire_item_size(item)
    assert event_write_units(_READING, TimeBucket.DAY, schema) == write_units(
        wire_item_size(build_item(_READING, 0, TimeBucket.DAY, schema=schema)[0])
    )


@pytest.mark.parametrize("bucket", [TimeBucket.HOUR, TimeBucket.DAY], ids=str)
def test_build_item_of_another_schema_keys_its_gsi_by_the_bucket_given(
    bucket: TimeBucket,
) -> None:
    # Given a table of another schema with a GSI
    schema = _OTHER_SCHEMAS["iso_ms-gsi-nested"]
    # When an event's item is built with a bucket and no label
    item, _ = build_item(_READING, 3, bucket, schema=schema)
    # Then the GSI partition key is that bucket's
    expected = gsi1_partition_key(_READING.key, _READING.ts, bucket, 3)
    assert item[schema.gsi_partition_key] == {"S": expected}
    labels = {TimeBucket.HOUR: "2013-01-01T10", TimeBucket.DAY: "2013-01-01"}
    assert expected == f"DEVICE#7#{labels[bucket]}#3"


@pytest.mark.parametrize(
    "schema", [DEFAULT_SCHEMA, _OTHER_SCHEMAS["iso_ms-gsi-nested"]], ids=["default", "other"]
)
def test_build_item_takes_the_callers_label_without_computing_it_again(
    schema: TableSchema, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the caller's label of the event's bucket, and no other way to compute one
    label = time_bucket(_READING.ts, TimeBucket.DAY)

    def no_second_time(*_args: Any) -> str:
        raise AssertionError("time_bucket was called again though the label was given")

    monkeypatch.setattr(writer_module, "time_bucket", no_second_time)
    # When the item is built with it
    item, _ = build_item(_READING, 3, TimeBucket.DAY, label=label, schema=schema)
    # Then the GSI key is built from it
    assert item[schema.gsi_partition_key] == {"S": f"DEVICE#7#{label}#3"}


def test_a_flat_payload_field_named_like_a_schema_attribute_is_refused_saying_why() -> None:
    # Given a flat-payload table, and an event whose data has a field named like its
    # partition key
    schema = _OTHER_SCHEMAS["epoch-flat"]
    event = Event(key="DEVICE#7", id="r-001", ts=_READING.ts, data={"device": "x"})
    # When its item is built
    with pytest.raises(InvalidInputError) as info:
        build_item(event, 0, TimeBucket.DAY, schema=schema)
    # Then the error names the field, says why it cannot be stored, and what to do
    assert info.value.field == "data.device"
    assert str(info.value) == (
        "data.device: is an attribute of the table's own schema; a flat payload cannot use "
        "its name (rename the field, or store the payload nested)"
    )


def test_an_event_the_writer_refuses_does_not_stop_the_rest_of_its_batch(
    facade: Dynashard,
) -> None:
    # Given a batch whose first event is over 400 KB, then two valid ones
    t0 = datetime(2013, 1, 1, tzinfo=UTC)
    events = [
        Event(key="K", id="big", ts=t0, data={"blob": "x" * 409_600}),
        Event(key="K", id="e1", ts=t0, data={"i": 1}),
        Event(key="L", id="e2", ts=t0, data={"i": 2}),
    ]
    # When it is written
    outcomes = _writer(facade, None).write(events)
    # Then the big one fails permanently, naming its field, and the others are written
    assert [(o.event_id, o.ok) for o in outcomes] == [("big", False), ("e1", True), ("e2", True)]
    assert outcomes[0].permanent and outcomes[0].field == "data"
    stored = facade.client.scan(TableName=DATA_TABLE.default_name)["Items"]
    assert sorted(i["id"]["S"] for i in stored) == ["e1", "e2"]


class _Recorder:
    """A GSI1 bucket recorder that holds every key's record until ``expected`` run at once."""

    def __init__(self, expected: int, fail_key: str | None = None) -> None:
        self.barrier = threading.Barrier(expected, timeout=10)
        self.fail_key = fail_key
        self.calls: list[tuple[str, dict[str, int]]] = []
        self.lock = threading.Lock()

    def ensure_unit(self, key: str, unit: str) -> None:
        pass

    def ensure_buckets(
        self, key: str, counts: dict[str, int], recorded: Sequence[str], watermark: str | None
    ) -> None:
        with self.lock:
            self.calls.append((key, dict(counts)))
        self.barrier.wait()  # raises BrokenBarrierError unless all run concurrently
        if key == self.fail_key:
            raise MetadataError(f"recording {key} failed")


class _CountingUpdates:
    """Delegates to a real client; counts UpdateItem calls by the attributes they set."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.updates: list[list[str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def update_item(self, **request: Any) -> Any:
        self.updates.append(sorted(request["ExpressionAttributeNames"].values()))
        return self.inner.update_item(**request)


def _writer(facade: Dynashard, recorder: Any) -> ShardedWriter:
    return ShardedWriter(
        facade.client,
        DATA_TABLE.default_name,
        facade.metadata,
        facade.executor,
        gsi1_recorder=recorder,
    )


def _days(n: int, keys: Sequence[str] = ("K",)) -> list[Event]:
    t0 = datetime(2013, 1, 1, 12, tzinfo=UTC)
    return [
        Event(key=key, id=f"{key}{d}-{i}", ts=t0 + timedelta(days=d), data={"i": i})
        for key in keys
        for d in range(n)
        for i in range(3)
    ]


def test_a_batch_over_several_buckets_of_a_key_records_them_in_one_update(
    facade: Dynashard,
) -> None:
    # Given a recorder on a client that counts its UpdateItems
    client = _CountingUpdates(facade.client)
    recorder = Gsi1BucketRecorder(client, METADATA_TABLE.default_name)  # type: ignore[arg-type]
    # When a batch spanning 4 day buckets of one key is written
    outcomes = _writer(facade, recorder).write(_days(4))
    # Then the key was created with its unit and day 1's record (the batch's first
    # event), the 3 other records took one update, and every event is durable
    assert all(o.ok for o in outcomes), outcomes
    days = [f"gsi1_shards#2013-01-0{d + 1}" for d in range(4)]
    assert len(client.updates) == 1
    assert set(days[1:]) <= set(client.updates[0])
    assert days[0] not in client.updates[0]
    assert dict(facade.shard_info("K").gsi1_shards) == {d[-10:]: 1 for d in days}
    # And a second batch of the same buckets writes no record again (cached)
    assert all(o.ok for o in _writer(facade, recorder).write(_days(4)))
    assert len(client.updates) == 1


def test_a_refused_combined_record_retries_what_the_refusal_shows_is_missing(
    facade: Dynashard,
) -> None:
    # Given day 2 already recorded at 4 by another container, and a key now at 4 shards
    facade.set_shard_count("K", 4)
    other = Gsi1BucketRecorder(facade.client, METADATA_TABLE.default_name)
    other.ensure("K", "2013-01-02", 4)
    client = _CountingUpdates(facade.client)
    recorder = Gsi1BucketRecorder(client, METADATA_TABLE.default_name)  # type: ignore[arg-type]
    # When this container, which has not seen that record, records days 1..3 at 4
    recorder.ensure_buckets("K", {f"2013-01-0{d}": 4 for d in (1, 2, 3)}, {}, None)
    # Then the combined update was refused, and the item it returned showed day 2
    # recorded: days 1 and 3 took one more update, together
    assert len(client.updates) == 2
    assert "gsi1_shards#2013-01-02" not in client.updates[1]
    assert dict(facade.shard_info("K").gsi1_shards) == {
        "2013-01-01": 4,
        "2013-01-02": 4,
        "2013-01-03": 4,
    }
    # And what the refusal showed is cached: day 2 is not written again here
    recorder.ensure("K", "2013-01-02", 4)
    assert len(client.updates) == 2


def test_a_bucket_the_metadata_already_records_costs_no_update(facade: Dynashard) -> None:
    # Given the key's metadata read with day 1 at 8 and day 2 at 2
    client = _CountingUpdates(facade.client)
    recorder = Gsi1BucketRecorder(client, METADATA_TABLE.default_name)  # type: ignore[arg-type]
    recorded = {"2013-01-01": 8, "2013-01-02": 2}
    # When days 1 and 2 are recorded at 4, and day 0 is at or before the watermark
    recorder.ensure_buckets(
        "K", {"2012-12-31": 4, "2013-01-01": 4, "2013-01-02": 4}, recorded, "2012-12-31"
    )
    # Then only day 2 (recorded lower) was written, on its own
    assert len(client.updates) == 1
    assert "gsi1_shards#2013-01-02" in client.updates[0]
    assert "gsi1_shards#2013-01-01" not in client.updates[0]


class _AlwaysRefused(_CountingUpdates):
    """Refuses every UpdateItem's condition, returning an item that records nothing."""

    def update_item(self, **request: Any) -> Any:
        self.updates.append(sorted(request["ExpressionAttributeNames"].values()))
        assert request["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
        error = {
            "Error": {"Code": "ConditionalCheckFailedException", "Message": "refused"},
            "Item": {"key": {"S": "K"}},
        }
        raise ClientError(error, "UpdateItem")  # type: ignore[arg-type]


def test_a_combined_record_refused_twice_falls_back_to_one_update_per_bucket(
    facade: Dynashard,
) -> None:
    client = _AlwaysRefused(facade.client)
    recorder = Gsi1BucketRecorder(client, METADATA_TABLE.default_name)  # type: ignore[arg-type]
    recorder.ensure_buckets("K", {f"2013-01-0{d}": 4 for d in (1, 2, 3)}, {}, None)
    # Two combined attempts, then one per bucket
    assert [len([n for n in u if n.startswith("gsi1_shards#")]) for u in client.updates] == [
        3,
        3,
        1,
        1,
        1,
    ]


def test_keys_of_a_batch_are_recorded_in_parallel(facade: Dynashard) -> None:
    # Given a batch over 3 keys, 2 buckets each, and a recorder that only lets a record
    # through once all 3 keys are in flight (a sequential writer would break its barrier)
    recorder = _Recorder(expected=3)
    events = _days(2, keys=("A", "B", "C"))
    # When the batch is written
    outcomes = _writer(facade, recorder).write(events)
    # Then each key was recorded once with both its buckets, and every event is durable
    both = {"2013-01-01": 1, "2013-01-02": 1}
    assert sorted(recorder.calls) == [("A", both), ("B", both), ("C", both)]
    assert all(o.ok for o in outcomes), outcomes


def test_a_failed_record_fails_only_that_keys_events(facade: Dynashard) -> None:
    # Given a batch over 3 keys whose second key's record fails
    recorder = _Recorder(expected=3, fail_key="B")
    events = _days(2, keys=("A", "B", "C"))
    # When it is written
    outcomes = _writer(facade, recorder).write(events)
    # Then exactly that key's events fail, naming the record's error, and are not written
    failed = {o.event_id for o in outcomes if not o.ok}
    assert failed == {e.id for e in events if e.key == "B"}
    assert all("MetadataError: recording B failed" in (o.error or "") for o in outcomes if not o.ok)
    stored = facade.client.scan(TableName=DATA_TABLE.default_name)["Items"]
    assert {i["id"]["S"] for i in stored} == {e.id for e in events} - failed


def test_a_single_key_is_recorded_without_the_pool(facade: Dynashard) -> None:
    # Given a batch of one key over two buckets and a recorder that notes its thread
    threads: list[str] = []

    class Noting:
        def ensure_unit(self, key: str, unit: str) -> None:
            threads.append(threading.current_thread().name)

        def ensure_buckets(self, key: str, *args: Any) -> None:
            threads.append(threading.current_thread().name)

    # When it is written
    outcomes = _writer(facade, Noting()).write(_days(2))
    # Then the records ran on the calling thread, once (the key was created with its
    # unit: no ensure_unit), and the events are durable
    assert threads == [threading.current_thread().name]
    assert all(o.ok for o in outcomes)


def _reference_numbers(value: Any, path: str = "value") -> Any:
    """The path-building walk ``to_dynamodb_numbers`` was, kept as the reference."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | Decimal):
        return dynamodb_number(value, path)
    if isinstance(value, dict):
        if "" in value:
            raise ValueError(f"{path}: has an empty attribute name (DynamoDB needs 1+ characters)")
        return {k: _reference_numbers(v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_reference_numbers(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def _outcome(convert: Any, value: Any) -> Any:
    try:
        return ("ok", convert(value, "data"))
    except ValueError as exc:
        return ("error", str(exc))


_payload_scalars = st.one_of(
    st.text(max_size=6),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(),
    st.decimals(allow_nan=False),  # sNaN fails comparisons alike in both walks; JSON has none
    st.booleans(),
    st.none(),
)
_payloads = st.recursive(
    _payload_scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(_payloads)
def test_to_dynamodb_numbers_equals_the_path_building_walk(value: Any) -> None:
    # Given any payload (NaN, huge ints, empty names, tuples included)
    # When it is converted
    # Then the result, or the error message with its JSON path, is the reference's
    assert _outcome(to_dynamodb_numbers, value) == _outcome(_reference_numbers, value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"a": [1, {"b": float("nan")}]}, "data.a[1].b: NaN and infinity"),
        ({"a": {"": 1}}, "data.a: has an empty attribute name"),
        ({"x": [10**40 + 1]}, "data.x[0]: a number outside DynamoDB's number range"),
    ],
)
def test_a_bad_payload_value_is_named_by_its_path(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        to_dynamodb_numbers(value, "data")


def test_the_writers_unvalidated_client_writes_every_event(ddb_client: Any) -> None:
    # Given a facade with its own clients (the writer's skips botocore's validation)
    ds = Dynashard(DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name))
    events = [
        Event(
            key="K",
            id=f"e{i}",
            ts=datetime(2013, 1, 1, tzinfo=UTC) + timedelta(seconds=i),
            data={"i": i, "x": [None, True, {"y": "z"}]},
        )
        for i in range(30)
    ]
    # When a batch of more than one BatchWriteItem call is written
    outcomes = ds.put_events(events)
    # Then every event is durable, as the items the writer built
    assert all(o.ok for o in outcomes)
    stored = ddb_client.scan(TableName=DATA_TABLE.default_name)["Items"]
    assert {i["id"]["S"] for i in stored} == {e.id for e in events}
    assert all(i["data"]["M"]["x"]["L"][2] == {"M": {"y": {"S": "z"}}} for i in stored)
    ds.close()


class _Sent(Exception):
    """Raised by a before-send hook: the request got past botocore's client-side checks."""


def _refuse_to_send(**_: Any) -> None:
    raise _Sent


def test_only_the_writers_own_client_skips_botocores_parameter_validation() -> None:
    # Given a facade with its own clients, each stopped right before sending
    ds = Dynashard(DynashardConfig("T", "M", endpoint_url="http://127.0.0.1:9"))
    for client in (ds.client, ds.write_client):
        client.meta.events.register("before-send.dynamodb.BatchWriteItem", _refuse_to_send)
    request = {"T": [{"PutRequest": {"Item": {"PK": {"S": 1}}}}]}  # S must be a string
    # Then the reads' client refuses a malformed request before sending it
    with pytest.raises(ParamValidationError):
        ds.client.batch_write_item(RequestItems=request)  # type: ignore[arg-type]
    # and the writer's client sends it (DynamoDB would refuse it: ValidationException)
    with pytest.raises(_Sent):
        ds.write_client.batch_write_item(RequestItems=request)  # type: ignore[arg-type]
    ds.close()
