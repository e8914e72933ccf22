from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, cast

import pytest

from dynashard.core.shard_info import ShardInfo, parse_history
from dynashard.core.strategies import Strategy
from dynashard.dynamodb.metadata_store import DynamoDBMetadataStore
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.errors import InvalidInputError, MetadataError
from infra.table_specs import METADATA_TABLE


class FakeClock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class MemoryStore:
    """In-memory MetadataStore with DynamoDB's conditional semantics, thread-safe."""

    def __init__(self) -> None:
        self.items: dict[str, ShardInfo] = {}
        self.lock = threading.Lock()
        self.updates = 0
        self.gets = 0

    def get(self, key: str) -> ShardInfo | None:
        with self.lock:
            self.gets += 1
            return self.items.get(key)

    def create(
        self, key: str, count: int, now: int, *, gsi1: tuple[str, str] | None = None
    ) -> ShardInfo | None:
        with self.lock:
            if key in self.items:
                return None
            self.items[key] = ShardInfo(key, count, now, ((now, count),))
            return self.items[key]

    def update(
        self, key: str, count: int, expected_last_updated: int, now: int
    ) -> ShardInfo | None:
        with self.lock:
            info = self.items.get(key)
            if info is None or info.last_updated != expected_last_updated:
                return None
            self.updates += 1
            self.items[key] = replace(
                info,
                number_of_shards=count,
                last_updated=now,
                history=(*info.history, (now, count)),
            )
            return self.items[key]

    def adopt(self, key: str, count: int, now: int) -> ShardInfo | None:
        with self.lock:
            info = self.items.get(key) or ShardInfo(key, count, now, ((now, count),))
            self.items[key] = replace(info, adopted=True)
            return self.items[key]


def test_writer_gets_or_creates_with_default() -> None:
    store, clock = MemoryStore(), FakeClock()
    meta = ShardMetadata(store, default_shards=2, clock=clock)
    info = meta.for_writer("K")
    assert info.number_of_shards == 2
    assert store.items["K"].history == ((1_000_000, 2),)


def test_reader_does_not_create() -> None:
    store = MemoryStore()
    info = ShardMetadata(store).for_reader("K")
    assert (info.number_of_shards, info.stored) == (1, False)
    assert store.items == {}


def test_writer_cache_lives_at_most_its_ttl() -> None:
    store, clock = MemoryStore(), FakeClock()
    meta = ShardMetadata(store, cache_ttl_s=30, clock=clock)
    meta.for_writer("K")
    store.items["K"] = replace(store.items["K"], number_of_shards=5)
    clock.now += 29
    assert meta.for_writer("K").number_of_shards == 1
    clock.now += 2
    assert meta.for_writer("K").number_of_shards == 5


def test_a_throttled_writer_rereads_an_entry_older_than_the_refresh_interval() -> None:
    store, clock = MemoryStore(), FakeClock()
    meta = ShardMetadata(store, cache_ttl_s=30, throttle_refresh_s=5, clock=clock)
    meta.for_writer("K")
    store.items["K"] = replace(store.items["K"], number_of_shards=8)
    clock.now += 4
    assert meta.refresh_after_throttle("K") is False  # read 4 s ago: kept
    assert meta.for_writer("K").number_of_shards == 1
    clock.now += 1
    gets = store.gets
    assert meta.refresh_after_throttle("K") is True
    assert meta.for_writer("K").number_of_shards == 8  # 5 s, not 30 s
    assert store.gets == gets + 1
    # the entry just read is kept: at most one read per key per interval
    assert meta.refresh_after_throttle("K") is False
    assert meta.refresh_after_throttle("never-cached") is False


def test_reader_sees_a_growth_at_once_while_writers_may_lag() -> None:
    store, clock = MemoryStore(), FakeClock()
    writer_side = ShardMetadata(store, cache_ttl_s=30, clock=clock)
    grower = ShardMetadata(store, cooldown_s=0, clock=clock)
    writer_side.for_writer("K")
    clock.now += 1
    grower.grow("K", 4)
    assert writer_side.for_writer("K").number_of_shards == 1  # still cached
    # ... and the reader queries shards of every count ever in force.
    assert ShardMetadata(store).for_reader("K").max_count == 4


def test_shrink_keeps_the_larger_count_readable() -> None:
    store, clock = MemoryStore(), FakeClock()
    meta = ShardMetadata(store, clock=clock)
    meta.set_count("K", 8)
    clock.now += 1
    result = meta.set_count("K", 2)
    assert (result.previous, result.current, result.reason) == (8, 2, "set")
    info = meta.for_reader("K")
    assert info.number_of_shards == 2 and info.max_count == 8


def test_grow_honours_the_cooldown() -> None:
    store, clock = MemoryStore(), FakeClock()
    meta = ShardMetadata(store, cooldown_s=60, clock=clock)
    meta.for_writer("K")
    clock.now += 10
    # Creation is not a change of N: a key hot from its first write grows at once.
    result = meta.grow("K", 2)
    assert (result.changed, result.previous, result.current) == (True, 1, 2)
    clock.now += 10
    assert meta.grow("K", 4).reason == "cooldown"
    clock.now += 60
    result = meta.grow("K", 4)
    assert (result.changed, result.previous, result.current) == (True, 2, 4)
    assert meta.grow("K", 3).reason == "already_sufficient"


def test_zero_cooldown_allows_two_growths_within_one_second() -> None:
    store, clock = MemoryStore(), FakeClock()
    meta = ShardMetadata(store, cooldown_s=0, clock=clock)
    meta.set_count("K", 2)
    assert meta.grow("K", 5).changed  # stored last_updated is now one second ahead
    assert meta.grow("K", 11).changed
    assert [c for _, c in store.items["K"].history] == [2, 5, 11]


def test_grow_is_capped() -> None:
    store, clock = MemoryStore(), FakeClock()
    meta = ShardMetadata(store, max_shards=10, cooldown_s=0, clock=clock)
    assert meta.grow("K", 50).current == 10
    clock.now += 1
    assert meta.grow("K", 50).reason == "capped"


def test_fifty_concurrent_growers_make_one_change_per_cooldown() -> None:
    store, clock = MemoryStore(), FakeClock()
    ShardMetadata(store, clock=clock).for_writer("K")
    clock.now += 1  # just created: the first change needs no cooldown, the rest wait
    growers = [
        ShardMetadata(store, cooldown_s=60, clock=clock, sleep=lambda s: None) for _ in range(50)
    ]
    barrier = threading.Barrier(50)

    def grow(meta: ShardMetadata) -> bool:
        barrier.wait()
        return meta.grow("K", 8).changed

    with ThreadPoolExecutor(50) as pool:
        changed = list(pool.map(grow, growers))
    assert sum(changed) == 1
    assert store.updates == 1
    assert store.items["K"].number_of_shards == 8


def test_persistent_race_losses_raise() -> None:
    class AlwaysLoses(MemoryStore):
        def update(self, key: str, count: int, expected: int, now: int) -> ShardInfo | None:
            return None

    store, clock = AlwaysLoses(), FakeClock()
    meta = ShardMetadata(store, cooldown_s=0, clock=clock, sleep=lambda s: None)
    meta.for_writer("K")
    with pytest.raises(MetadataError, match="kept changing"):
        meta.grow("K", 4)


def test_invalid_settings_and_targets() -> None:
    with pytest.raises(InvalidInputError):
        ShardMetadata(MemoryStore(), default_shards=0)
    with pytest.raises(InvalidInputError, match="target"):
        ShardMetadata(MemoryStore()).grow("K", 0)
    with pytest.raises(InvalidInputError, match="count"):
        ShardMetadata(MemoryStore(), max_shards=10).set_count("K", 11)


def test_history_parsing() -> None:
    assert parse_history({"20:4", "10:1"}) == ((10, 1), (20, 4))
    with pytest.raises(MetadataError, match="not"):
        parse_history({"x:1"})


def test_dynamodb_store_is_conditional(ddb_client: object) -> None:
    store = DynamoDBMetadataStore(METADATA_TABLE.default_name, ddb_client)  # type: ignore[arg-type]
    assert store.get("K") is None
    created = store.create("K", 1, 100)
    assert created is not None and store.create("K", 3, 101) is None
    assert store.update("K", 4, expected_last_updated=99, now=102) is None  # lost the race
    updated = store.update("K", 4, expected_last_updated=100, now=102)
    assert updated is not None
    assert updated.history == ((100, 1), (102, 4))
    assert store.get("K") == updated


# --- conditional writes of the DynamoDB adapter: lost race -> None, failure -> MetadataError


class FailingClient:
    """Every write raises ``error``; records the calls."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls: list[str] = []

    def put_item(self, **request: object) -> dict[str, object]:
        self.calls.append("put_item")
        raise self.error

    def update_item(self, **request: object) -> dict[str, object]:
        self.calls.append("update_item")
        raise self.error


def _conditional_writes() -> dict[str, tuple[str, Callable[[DynamoDBMetadataStore], object]]]:
    from dynashard.core.ordered import OrderedLayout
    from dynashard.core.strategies import Strategy

    info = ShardInfo("K", 2, 10, ((10, 2),))
    layout = OrderedLayout.uniform(("m",))
    return {
        "create": ("creating shard metadata of 'K'", lambda s: s.create("K", 2, 10)),
        "update": ("updating shard metadata of 'K'", lambda s: s.update("K", 4, 10, 20)),
        "put_strategy new": (
            "setting the strategy of 'K'",
            lambda s: s.put_strategy(
                "K", Strategy.CALCULATED, "carrier", expected=None, count=2, now=10
            ),
        ),
        "put_strategy cas": (
            "setting the strategy of 'K'",
            lambda s: s.put_strategy(
                "K", Strategy.CALCULATED, "carrier", expected=info, count=2, now=10
            ),
        ),
        "adopt": ("adopting 'K'", lambda s: s.adopt("K", 2, 10)),
        "put_layout": ("storing the layout of 'K'", lambda s: s.put_layout("K", layout, 10, 20)),
    }


def _store(client: FailingClient) -> DynamoDBMetadataStore:
    return DynamoDBMetadataStore("meta", cast(Any, client))


@pytest.mark.parametrize("name", list(_conditional_writes()))
def test_conditional_write_lost_race_is_none_and_other_errors_are_metadata_errors(
    name: str,
) -> None:
    from botocore.exceptions import ClientError, EndpointConnectionError

    what, write = _conditional_writes()[name]
    lost = ClientError({"Error": {"Code": "ConditionalCheckFailedException"}}, "Write")
    client = FailingClient(lost)
    assert write(_store(client)) in (None, False)
    # adopt tries the update on an existing item, then the create of a missing one
    expected = {"adopt": ["update_item", "put_item"], "create": ["put_item"]}
    expected["put_strategy new"] = ["put_item"]
    assert client.calls == expected.get(name, ["update_item"])
    throttled = ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "W")
    down = EndpointConnectionError(endpoint_url="http://localhost:1")
    for error in (throttled, down):
        with pytest.raises(MetadataError, match=f"^{what} failed: ") as caught:
            write(_store(FailingClient(error)))
        assert caught.value.__cause__ is error


def test_shard_info_json_names_strategy_attribute_and_adoption() -> None:
    # Given a calculated key adopted with items under its bare partition key
    info = ShardInfo(
        "DEPARTURES#JFK",
        4,
        20,
        ((10, 1), (20, 4)),
        strategy=Strategy.CALCULATED,
        shard_attribute="carrier",
        adopted=True,
    )
    # When it is shown (GET /shards/{key})
    body = info.to_json()
    # Then a caller sees how writers shard it and that reads include the bare key
    assert body["strategy"] == "calculated"
    assert body["shard_attribute"] == "carrier"
    assert body["adopted"] is True
    assert body["shard_history"] == [{"since": 10, "count": 1}, {"since": 20, "count": 4}]


def test_set_count_honours_the_cooldown_only_when_asked() -> None:
    # Given a key whose N changed 10 s ago, with a 60 s cooldown
    store, clock = MemoryStore(), FakeClock()
    meta = ShardMetadata(store, cooldown_s=60, clock=clock)
    meta.set_count("K", 2)  # creation: not a change of N
    clock.now += 1
    assert meta.set_count("K", 4, honour_cooldown=True).reason == "set"
    clock.now += 10
    # When the operator sets it again honouring the cooldown, it is refused
    refused = meta.set_count("K", 8, honour_cooldown=True)
    assert (refused.changed, refused.current, refused.reason) == (False, 4, "cooldown")
    assert store.items["K"].number_of_shards == 4
    # Without it (the operator's --force), the same conditional update goes through
    forced = meta.set_count("K", 8)
    assert (forced.changed, forced.current, forced.reason) == (True, 8, "set")
    # And after the cooldown a cooldown-honouring set goes through too
    clock.now += 61
    assert meta.set_count("K", 3, honour_cooldown=True).current == 3
