"""The table schema and its sort-key codecs (pure): the merge's order is the table's order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynashard.core.merge import merge_page
from dynashard.core.schema import (
    DEFAULT_SCHEMA,
    EPOCH_MS_NUMBER,
    ISO_MS_THEN_ID,
    ISO_S_THEN_ID,
    ISO_TIME_THEN_ID,
    PLAIN_STRING,
    Payload,
    SortKeyCodec,
    TableSchema,
    codec_named,
    epoch_ms,
    schema_mismatches,
)
from dynashard.errors import InvalidInputError, KeyLimitExceededError

times = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)
# Ids across the whole of Unicode but surrogates (DynamoDB strings are UTF-8), with the
# separator, so that an id's own "#" cannot confuse the order.
ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), min_codepoint=32),
    min_size=1,
    max_size=6,
)
events = st.lists(st.tuples(times, ids), max_size=40)


def table_order(codec: SortKeyCodec, sk: str) -> bytes | Decimal:
    """DynamoDB's order of a sort key in an item collection: UTF-8 bytes, or numeric."""
    return Decimal(sk) if codec.key_type == "N" else sk.encode("utf-8")


def shards_as_stored(
    codec: SortKeyCodec, stored: list[tuple[datetime, str]], shard_of: list[int], n: int
) -> list[dict[str, str]]:
    """Each shard's item collection: one item per sort key (a later put replaces it)."""
    shards: list[dict[str, str]] = [{} for _ in range(n)]
    for (ts, event_id), shard in zip(stored, shard_of, strict=True):
        shards[shard][codec.encode(ts, event_id)] = event_id
    return shards


def merged(codec: SortKeyCodec, shards: list[dict[str, str]], descending: bool) -> list[str]:
    streams = []
    for shard in shards:
        # What a Query returns: the collection in the table's own sort-key order.
        rows = sorted(shard.items(), key=lambda kv: table_order(codec, kv[0]), reverse=descending)
        streams.append(iter([(codec.order_key(sk, i), (sk, i)) for sk, i in rows]))
    page = merge_page(streams, limit=10_000, descending=descending)
    return [f"{sk}|{i}" for sk, i in page.items]


def expected_order(
    codec: SortKeyCodec, shards: list[dict[str, str]], descending: bool
) -> list[str]:
    """Every distinct item of every shard by the table's order, ties by id (UTF-8)."""
    distinct = {(sk, i) for shard in shards for sk, i in shard.items()}
    rows = sorted(
        distinct, key=lambda r: (table_order(codec, r[0]), r[1].encode("utf-8")), reverse=descending
    )
    return [f"{sk}|{i}" for sk, i in rows]


ALL_CODECS = [ISO_TIME_THEN_ID, ISO_MS_THEN_ID, ISO_S_THEN_ID, EPOCH_MS_NUMBER, PLAIN_STRING]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=str)
@settings(max_examples=200, deadline=None)
@given(data=st.data(), descending=st.booleans())
def test_merge_order_is_the_tables_sort_key_order(
    codec: SortKeyCodec, data: st.DataObject, descending: bool
) -> None:
    # Given events spread over shards, some stored twice (a resize: invariant 2)
    stored = data.draw(events)
    n = data.draw(st.integers(1, 5))
    size = len(stored)
    shard_of = data.draw(st.lists(st.integers(0, n - 1), min_size=size, max_size=size))
    again = data.draw(st.lists(st.integers(0, n - 1), max_size=len(stored)))
    stored_twice = stored + stored[: len(again)]
    shards = shards_as_stored(codec, stored_twice, shard_of + again, n)
    # When the shards' Query results are merged
    result = merged(codec, shards, descending)
    # Then the merge gives every distinct item once, in the table's own order (ties
    # across shards, epoch_ms_number's same millisecond, by event id)
    assert result == expected_order(codec, shards, descending)


@given(a=times, b=times, ia=ids, ib=ids)
def test_time_ordered_codecs_order_by_time_first(
    a: datetime, b: datetime, ia: str, ib: str
) -> None:
    def key(codec: SortKeyCodec, ts: datetime, event_id: str) -> str:
        return codec.order_key(codec.encode(ts, event_id), event_id)

    if a < b:  # microseconds
        assert key(ISO_TIME_THEN_ID, a, ia) < key(ISO_TIME_THEN_ID, b, ib)
    if epoch_ms(a) < epoch_ms(b):  # the epoch codec's resolution
        assert key(EPOCH_MS_NUMBER, a, ia) < key(EPOCH_MS_NUMBER, b, ib)
        assert key(ISO_MS_THEN_ID, a, ia) < key(ISO_MS_THEN_ID, b, ib)
    if a.replace(microsecond=0) < b.replace(microsecond=0):
        assert key(ISO_S_THEN_ID, a, ia) < key(ISO_S_THEN_ID, b, ib)


@given(ts=times, start=times, span=st.integers(1, 10**12), event_id=ids)
def test_window_selects_exactly_the_events_in_it(
    ts: datetime, start: datetime, span: int, event_id: str
) -> None:
    # Whole milliseconds: epoch_ms_number resolves windows to the millisecond.
    ts, start = (t.replace(microsecond=t.microsecond // 1000 * 1000) for t in (ts, start))
    end = min(start + timedelta(milliseconds=span), datetime(9999, 12, 31, tzinfo=UTC))
    inside = start <= ts < end
    for codec in (ISO_TIME_THEN_ID, ISO_MS_THEN_ID, EPOCH_MS_NUMBER):
        lo, hi = codec.window(start, end)
        sk = codec.encode(ts, event_id)
        between = table_order(codec, lo) <= table_order(codec, sk) <= table_order(codec, hi)
        assert between == inside, codec


@given(ts=times, start=times, end=times, event_id=ids)
def test_coarser_iso_codecs_resolve_a_window_to_their_precision(
    ts: datetime, start: datetime, end: datetime, event_id: str
) -> None:
    # An item's time is its key's (floored); a bound selects by the step it falls in,
    # start floored and end rounded up, as epoch_ms_number does with milliseconds.
    for codec, step in ((ISO_MS_THEN_ID, 1000), (ISO_S_THEN_ID, 1_000_000)):

        def floor(t: datetime, step: int = step) -> datetime:
            return t - timedelta(microseconds=t.microsecond % step)

        def ceil(t: datetime, step: int = step) -> datetime:
            return (
                floor(t) if t.microsecond % step == 0 else floor(t) + timedelta(microseconds=step)
            )

        if end > datetime(9999, 12, 30, tzinfo=UTC):
            continue
        lo, hi = codec.window(start, end)
        sk = codec.encode(ts, event_id)
        assert (lo <= sk <= hi) == (floor(start) <= floor(ts) < ceil(end)), codec


@pytest.mark.parametrize("codec", [ISO_TIME_THEN_ID, ISO_MS_THEN_ID, ISO_S_THEN_ID], ids=str)
@given(ts=times, event_id=ids)
def test_iso_codecs_decode_what_they_encode(
    codec: SortKeyCodec, ts: datetime, event_id: str
) -> None:
    decoded_ts, decoded_id = codec.decode(codec.encode(ts, event_id))
    assert decoded_id == event_id
    step = 10 ** (6 - codec.digits)  # type: ignore[attr-defined]
    assert decoded_ts == ts - timedelta(microseconds=ts.microsecond % step)


@pytest.mark.parametrize(
    ("codec", "sk"),
    [
        (ISO_MS_THEN_ID, "2026-06-22T01:00:00Z#agent"),  # seconds, not milliseconds
        (ISO_MS_THEN_ID, "2026-06-22T01:00:00.123Z"),  # no id
        (ISO_MS_THEN_ID, "2026-06-22T01:00:00.123+00:00#a"),  # not UTC's Z form
        (ISO_S_THEN_ID, "ALERT#2026-06-22T01:00:00Z#geo"),  # a prefix
        (ISO_TIME_THEN_ID, "2026-06-22T01:00:00.123Z#agent"),
        (ISO_S_THEN_ID, "2026-13-22T01:00:00Z#agent"),  # month 13
        (ISO_TIME_THEN_ID, "2026-06-22T01:00:00.123456Z#"),  # the separator, no id
        (ISO_MS_THEN_ID, "2026-06-22T01:00:00.123Z_agent"),  # an id after another separator
    ],
)
def test_iso_codecs_refuse_sort_keys_of_another_form(codec: SortKeyCodec, sk: str) -> None:
    with pytest.raises(InvalidInputError, match=f"not in the form of codec {codec.name}") as caught:
        codec.decode(sk)
    assert caught.value.field == "sort_key"


def test_the_forms_other_programs_write() -> None:
    at = datetime(2026, 6, 22, 1, 0, 0, 123456, tzinfo=UTC)
    # JavaScript's new Date(...).toISOString() and the seconds form of the article
    assert (
        ISO_MS_THEN_ID.encode(at, "threat_detector") == "2026-06-22T01:00:00.123Z#threat_detector"
    )
    assert ISO_S_THEN_ID.encode(at, "threat_detector") == "2026-06-22T01:00:00Z#threat_detector"
    assert EPOCH_MS_NUMBER.decode("1782090000123") == (at.replace(microsecond=123000), None)
    assert PLAIN_STRING.decode("N101UA") == (None, "N101UA")
    assert ISO_MS_THEN_ID != ISO_TIME_THEN_ID and ISO_MS_THEN_ID != ISO_S_THEN_ID


def test_open_windows_take_every_time() -> None:
    first, last = datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    lo, hi = EPOCH_MS_NUMBER.window(None, None)
    assert int(lo) == epoch_ms(first) and int(hi) >= epoch_ms(last)
    assert ISO_TIME_THEN_ID.window(None, None) == ("0", ":")


def test_only_the_epoch_codecs_sort_key_lacks_the_event_id() -> None:
    # The writer puts items conditionally for a codec whose sort key lacks the id
    # (two events of one shard and millisecond would share an item)
    assert [c.id_in_sort_key for c in (ISO_TIME_THEN_ID, EPOCH_MS_NUMBER, PLAIN_STRING)] == [
        True,
        False,
        True,
    ]
    ts = datetime(2013, 1, 1, tzinfo=UTC)
    for codec in (ISO_TIME_THEN_ID, PLAIN_STRING):
        assert codec.encode(ts, "a") != codec.encode(ts, "b")
    assert EPOCH_MS_NUMBER.encode(ts, "a") == EPOCH_MS_NUMBER.encode(ts, "b")


def test_epoch_order_key_round_trips_and_reads_other_number_spellings() -> None:
    key = EPOCH_MS_NUMBER.order_key("1E+3", "e")
    assert key == EPOCH_MS_NUMBER.order_key("1000", "e")
    assert EPOCH_MS_NUMBER.sort_key_of(key) == "1000"
    assert EPOCH_MS_NUMBER.time_of(key) == datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
    with pytest.raises(InvalidInputError, match="not whole epoch milliseconds"):
        EPOCH_MS_NUMBER.order_key("1.5", "e")


def test_plain_string_takes_no_time_window_and_keeps_the_sort_key_limit() -> None:
    assert PLAIN_STRING.window(None, None) is None
    with pytest.raises(InvalidInputError, match="no time window can be read from it") as caught:
        PLAIN_STRING.window(datetime(2013, 1, 1, tzinfo=UTC), None)
    assert caught.value.field == "from"
    with pytest.raises(KeyLimitExceededError, match="1025 bytes"):
        PLAIN_STRING.encode(datetime(2013, 1, 1, tzinfo=UTC), "x" * 1025)


def test_codec_named_knows_each_and_names_them_on_a_typo() -> None:
    assert codec_named("plain_string") is PLAIN_STRING
    assert codec_named(" iso_ms_then_id") is ISO_MS_THEN_ID
    known = "iso_time_then_id, iso_ms_then_id, iso_s_then_id, epoch_ms_number, plain_string"
    with pytest.raises(InvalidInputError, match=known):
        codec_named("epoch")


def test_the_default_schema_is_dynashards_own_table() -> None:
    assert TableSchema() == DEFAULT_SCHEMA
    assert DEFAULT_SCHEMA.is_default and DEFAULT_SCHEMA.gsi_unavailable() == ""
    assert DEFAULT_SCHEMA.reserved == {
        "PK", "SK", "GSI1PK", "GSI1SK", "key", "id", "ts", "shard", "data"
    }  # fmt: skip
    assert not TableSchema(payload=Payload.FLAT).is_default


def test_a_schema_refuses_one_attribute_in_two_roles_and_empty_names() -> None:
    with pytest.raises(InvalidInputError, match="sort_key and ts_attr are both 'ts'"):
        TableSchema(sort_key="ts")
    with pytest.raises(InvalidInputError, match="id_attr must name an attribute"):
        TableSchema(id_attr="")
    # A flat payload frees the data attribute's name; no GSI frees the GSI's.
    assert "data" not in TableSchema(payload=Payload.FLAT).reserved
    assert TableSchema(gsi_name="", sort_key="GSI1SK").gsi_name is None


def test_gsi_reads_are_refused_where_they_are_not_covered() -> None:
    assert "no GSI" in TableSchema(gsi_name=None).gsi_unavailable()
    assert "epoch_ms_number" in TableSchema(sort_key_codec=EPOCH_MS_NUMBER).gsi_unavailable()


def describe(
    pk: tuple[str, str] = ("PK", "S"),
    sk: tuple[str, str] | None = ("SK", "S"),
    gsi: tuple[str, str, str, str] | None = ("GSI1PK", "S", "GSI1SK", "S"),
) -> dict[str, object]:
    types = {pk[0]: pk[1]}
    key_schema = [{"AttributeName": pk[0], "KeyType": "HASH"}]
    if sk is not None:
        types[sk[0]] = sk[1]
        key_schema.append({"AttributeName": sk[0], "KeyType": "RANGE"})
    table: dict[str, object] = {"TableName": "t", "KeySchema": key_schema}
    if gsi is not None:
        types[gsi[0]], types[gsi[2]] = gsi[1], gsi[3]
        table["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "GSI1",
                "KeySchema": [
                    {"AttributeName": gsi[0], "KeyType": "HASH"},
                    {"AttributeName": gsi[2], "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    table["AttributeDefinitions"] = [
        {"AttributeName": n, "AttributeType": t} for n, t in types.items()
    ]
    return table


def test_schema_mismatches_names_each_difference() -> None:
    assert schema_mismatches(describe(), DEFAULT_SCHEMA) == []
    assert schema_mismatches(describe(sk=("SK", "N")), DEFAULT_SCHEMA) == [
        "table 't': sort key is 'SK' (N), the schema says 'SK' (S)"
    ]
    epoch = TableSchema(sort_key_codec=EPOCH_MS_NUMBER, gsi_name=None)
    assert schema_mismatches(describe(sk=("SK", "N"), gsi=None), epoch) == []
    assert schema_mismatches(describe(gsi=("G", "S", "GSI1SK", "S")), DEFAULT_SCHEMA) == [
        "table 't' GSI 'GSI1': partition key is 'G' (S), the schema says 'GSI1PK' (S)"
    ]
    assert schema_mismatches(describe(gsi=None), DEFAULT_SCHEMA) == ["table 't': has no GSI 'GSI1'"]


def test_schema_mismatches_names_each_key_a_partial_description_lacks() -> None:
    # Given a description with a sort key only (no HASH key): the partition key is named
    table = describe()
    table["KeySchema"] = [{"AttributeName": "SK", "KeyType": "RANGE"}]
    assert schema_mismatches(table, DEFAULT_SCHEMA) == [
        "table 't': has no partition key, the schema says 'PK' (S)"
    ]
    # And a description without key schema or attribute definitions, whose GSI has no
    # key schema either: every key is named missing, not a TypeError or StopIteration
    bare = {"TableName": "t", "GlobalSecondaryIndexes": [{"IndexName": "GSI1"}]}
    assert schema_mismatches(bare, DEFAULT_SCHEMA) == [
        "table 't': has no partition key, the schema says 'PK' (S)",
        "table 't': has no sort key, the schema says 'SK' (S)",
        "table 't' GSI 'GSI1': has no partition key, the schema says 'GSI1PK' (S)",
        "table 't' GSI 'GSI1': has no sort key, the schema says 'GSI1SK' (S)",
    ]


@pytest.mark.parametrize("codec", [ISO_MS_THEN_ID, ISO_S_THEN_ID], ids=str)
@pytest.mark.parametrize("before_last", [0, 1, 998], ids=lambda us: f"last-{us}us")
def test_coarser_iso_codecs_take_windows_to_the_last_microsecond_of_year_9999(
    codec: SortKeyCodec, before_last: int
) -> None:
    # Windows may reach the last microsecond of year 9999 (docs/architecture.md). An end
    # in the year's last millisecond (or second) rounds up past what a datetime holds:
    # the window still takes every time up to it, the last step's items included, not a
    # bare OverflowError.
    last = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    end = last - timedelta(microseconds=before_last)
    start = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    lo, hi = codec.window(start, end)
    for ts in (start, end - timedelta(microseconds=1), last):
        assert lo <= codec.encode(ts, "z\U0010ffff") <= hi
    assert codec.window(None, end)[1] == hi


def test_an_epoch_window_ending_at_the_first_millisecond_is_empty_and_valid() -> None:
    # A window that ends at 0001-01-01T00:00:00Z, without a start, holds nothing; its
    # range must still be one DynamoDB takes (BETWEEN refuses a lower bound above the
    # upper: "The BETWEEN operator requires upper bound to be greater than or equal to
    # lower bound", a ValidationException that failed the read as a ShardQueryError).
    first = datetime(1, 1, 1, tzinfo=UTC)
    lo, hi = EPOCH_MS_NUMBER.window(None, first)
    assert int(lo) <= int(hi)
    assert not int(lo) <= int(EPOCH_MS_NUMBER.encode(first, "e")) <= int(hi)
    # and one that ends a millisecond later holds exactly that millisecond
    lo, hi = EPOCH_MS_NUMBER.window(None, first + timedelta(microseconds=1))
    assert lo == hi == EPOCH_MS_NUMBER.encode(first, "e")


def test_the_coarser_iso_codecs_refuse_an_id_over_the_sort_key_limit_saying_why() -> None:
    # Given an id that makes a millisecond sort key of 1,025 bytes (24 of time, "#")
    ts = datetime(2026, 6, 22, 1, tzinfo=UTC)
    # Then it is refused before any request, naming the id, the size and the limit
    with pytest.raises(KeyLimitExceededError) as caught:
        ISO_MS_THEN_ID.encode(ts, "x" * 1000)
    assert caught.value.field == "id"
    assert caught.value.message == (
        "id: makes a sort key of 1025 bytes, over DynamoDB's limit of 1024 bytes "
        "(25 bytes go to the timestamp and separator)"
    )
    # and one byte less is a sort key
    assert len(ISO_MS_THEN_ID.encode(ts, "x" * 999)) == 1024


@pytest.mark.parametrize("codec", [ISO_MS_THEN_ID, ISO_S_THEN_ID, EPOCH_MS_NUMBER], ids=str)
def test_codecs_refuse_an_empty_id_naming_it(codec: SortKeyCodec) -> None:
    # An empty id is refused as DynamoDB refuses an empty key value, even by the epoch
    # codec, whose sort key does not hold the id (field id, not a bare TypeError)
    with pytest.raises(KeyLimitExceededError) as caught:
        codec.encode(datetime(2013, 1, 1, tzinfo=UTC), "")
    assert caught.value.field == "id"
    assert caught.value.message == "id: must not be empty"


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (
            {"gsi_partition_key": "PK"},
            "schema: partition_key and gsi_partition_key are both 'PK': each role needs its "
            "own attribute",
        ),
        ({"gsi_partition_key": ""}, "schema: gsi_partition_key must name an attribute, got ''"),
        ({"gsi_sort_key": ""}, "schema: gsi_sort_key must name an attribute, got ''"),
    ],
)
def test_a_schema_names_the_gsi_key_role_it_refuses(names: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        TableSchema(**names)  # type: ignore[arg-type]
    assert caught.value.message == message
    # Without a GSI its key names are no roles
    TableSchema(gsi_name=None, **names)  # type: ignore[arg-type]


def test_schema_mismatches_names_a_gsi_projection_other_than_all() -> None:
    # Given the GSI projecting its keys only (reads return whole events from it)
    table = describe()
    (index,) = table["GlobalSecondaryIndexes"]  # type: ignore[misc]
    index["Projection"] = {"ProjectionType": "KEYS_ONLY"}
    # Then the mismatch names the projection
    assert schema_mismatches(table, DEFAULT_SCHEMA) == [
        "table 't' GSI 'GSI1': projects KEYS_ONLY, reads need ALL (they return whole events)"
    ]
    # and a description without a projection passes
    del index["Projection"]
    assert schema_mismatches(table, DEFAULT_SCHEMA) == []


def test_schema_mismatches_marks_a_key_without_an_attribute_definition() -> None:
    # Given a description whose key attribute has no AttributeDefinitions entry
    table = describe(gsi=None)
    table["AttributeDefinitions"] = [{"AttributeName": "SK", "AttributeType": "S"}]
    # Then its type reads "?", not None
    assert schema_mismatches(table, TableSchema(gsi_name=None)) == [
        "table 't': partition key is 'PK' (?), the schema says 'PK' (S)"
    ]
