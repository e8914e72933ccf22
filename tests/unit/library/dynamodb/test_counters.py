from __future__ import annotations

from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, counter_key
from dynashard.errors import IdempotentParameterMismatchError, InvalidInputError
from infra.table_specs import DATA_TABLE, METADATA_TABLE

from ..fakes import FlakyClient


def test_increments_spread_over_shards_and_sum(facade: Dynashard) -> None:
    facade.set_shard_count(counter_key("UA"), 4)
    for by in range(1, 41):
        facade.increment_counter("UA", by)
    facade.increment_counter("UA", -20)
    value = facade.get_counter("UA")
    assert (value.value, value.shards) == (sum(range(1, 41)) - 20, 4)


def test_counter_never_incremented_is_zero(facade: Dynashard) -> None:
    assert facade.get_counter("NONE").value == 0


def test_idempotent_increment_applies_once(facade: Dynashard) -> None:
    assert facade.increment_counter("UA", 5, idempotency_key="msg-1") is True
    assert facade.increment_counter("UA", 5, idempotency_key="msg-1") is False
    assert facade.increment_counter("UA", 2, idempotency_key="msg-2") is True
    assert facade.get_counter("UA").value == 7


@pytest.mark.parametrize("counts", [(1, 1), (2, 8)])
def test_an_idempotency_key_reused_with_another_by_is_refused_and_changes_nothing(
    facade: Dynashard, counts: tuple[int, int]
) -> None:
    # Given an increment applied under a key (and the counter resized since, or not)
    facade.set_shard_count(counter_key("UA"), counts[0])
    assert facade.increment_counter("UA", 5, idempotency_key="msg-1") is True
    facade.set_shard_count(counter_key("UA"), counts[1])
    # When the key comes again with another by
    with pytest.raises(IdempotentParameterMismatchError, match=r"^idempotency_key: ") as raised:
        facade.increment_counter("UA", 3, idempotency_key="msg-1")
    # Then it is refused naming the key and both values, and nothing is applied
    assert raised.value.field == "idempotency_key"
    assert "by=5, not 3" in raised.value.message
    assert facade.get_counter("UA").value == 5
    # and the same by again is still "already applied"
    assert facade.increment_counter("UA", 5, idempotency_key="msg-1") is False


def test_counter_read_after_shrink_still_sums_every_shard(facade: Dynashard) -> None:
    facade.set_shard_count(counter_key("DL"), 8)
    for _ in range(64):
        facade.increment_counter("DL", 1)
    facade.set_shard_count(counter_key("DL"), 2)
    assert facade.get_counter("DL").value == 64


def test_unprocessed_keys_are_retried(ddb_client: Any) -> None:
    flaky = FlakyClient(ddb_client)
    ds = Dynashard(
        DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name), client=flaky
    )  # type: ignore[arg-type]
    ds.set_shard_count(counter_key("AA"), 3)
    for _ in range(30):
        ds.increment_counter("AA", 1)
    flaky.unprocessed_keys_rounds = 2
    assert ds.get_counter("AA").value == 30


@pytest.mark.parametrize("by", [0, True, 1.5, "3"])
def test_bad_increment_is_refused(facade: Dynashard, by: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"^by: "):
        facade.increment_counter("UA", by)


def test_counters_do_not_show_up_in_event_reads(facade: Dynashard) -> None:
    facade.increment_counter("X", 1)
    assert facade.query_events(counter_key("X")).items == []


@pytest.mark.parametrize("counts", [(1, 4), (4, 16), (16, 3), (7, 1)])
def test_idempotent_increment_redelivered_after_a_resize_counts_once(
    facade: Dynashard, counts: tuple[int, int]
) -> None:
    # Given a counter incremented once per message, then resized
    before, after = counts
    facade.set_shard_count(counter_key("UA"), before)
    keys = [f"msg-{i}" for i in range(40)]
    for key in keys:
        assert facade.increment_counter("UA", 1, idempotency_key=key) is True
    facade.set_shard_count(counter_key("UA"), after)
    # When every message is redelivered under the new count
    applied = [facade.increment_counter("UA", 1, idempotency_key=key) for key in keys]
    # Then none counts twice
    assert not any(applied)
    assert facade.get_counter("UA").value == len(keys)


def test_idempotency_markers_expire_through_the_table_ttl(
    facade: Dynashard, ddb_client: Any
) -> None:
    # Given an idempotent increment
    import time

    facade.increment_counter("UA", 1, idempotency_key="msg-1")
    # Then its marker carries the table's TTL attribute, a day or so ahead
    items = ddb_client.scan(TableName=DATA_TABLE.default_name)["Items"]
    markers = [i for i in items if "idempotency_key" in i]
    assert len(markers) == 1
    expires = int(markers[0][DATA_TABLE.ttl_attribute]["N"])
    assert time.time() + 86400 < expires <= time.time() + 15 * 86400


def test_reading_events_of_an_ordered_index_key_is_a_conflict_not_a_key_error(
    facade: Dynashard,
) -> None:
    from dynashard.core.ordered import OrderedLayout
    from dynashard.dynamodb.ordered_index import OrderedItem
    from dynashard.errors import StateConflictError

    # Given a key used as an ordered index, with an entry whose sort key sorts among
    # event timestamps (found by the API fuzzer: GET /events answered 502 KeyError 'ts')
    index = facade.ordered_index("0")
    index.configure(OrderedLayout.uniform(["m"]))
    index.put([OrderedItem("0", "0", {})])
    # When its events are read, it is refused naming the key
    with pytest.raises(StateConflictError, match=r"^key: .*ordered index"):
        facade.query_events("0")


def test_idempotent_increment_redelivered_at_the_38_digit_bound_is_already_applied(
    facade: Dynashard,
) -> None:
    # Given a one-shard counter whose shard an idempotent increment took to the 38-digit bound
    from dynashard.dynamodb.counters import MAX_COUNTER_VALUE

    assert facade.increment_counter("UA", MAX_COUNTER_VALUE, idempotency_key="msg-1") is True
    # When the same message is redelivered (the shard cannot take it again)
    applied = facade.increment_counter("UA", MAX_COUNTER_VALUE, idempotency_key="msg-1")
    # Then it is reported as already applied, not as an overflow, and nothing changed
    assert applied is False
    assert facade.get_counter("UA").value == MAX_COUNTER_VALUE


@pytest.mark.parametrize("idempotency_key", [None, "msg-2"])
def test_fresh_increment_past_the_38_digit_bound_names_the_dynamodb_limit(
    facade: Dynashard, idempotency_key: str | None
) -> None:
    # Given a one-shard counter at the 38-digit bound
    from dynashard.dynamodb.counters import MAX_COUNTER_VALUE
    from dynashard.errors import CounterOverflowError

    facade.increment_counter("UA", MAX_COUNTER_VALUE, idempotency_key="msg-1")
    # When a fresh increment would take it past the bound
    # Then it is refused with the DynamoDB limit named, and the shard is unchanged
    with pytest.raises(CounterOverflowError, match=r"^by: .*38 digits.*DynamoDB number"):
        facade.increment_counter("UA", 1, idempotency_key=idempotency_key)
    assert facade.get_counter("UA").value == MAX_COUNTER_VALUE
    if idempotency_key is not None:  # the refused increment left no marker: a retry is fresh
        with pytest.raises(CounterOverflowError):
            facade.increment_counter("UA", 1, idempotency_key=idempotency_key)
