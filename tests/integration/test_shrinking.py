"""Shrinking on DynamoDB Local: a key shrunk from 8 shards to 2 keeps every event and count."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event, counter_key
from dynashard.planning.shrinking import LoadHistory, shrink_cool_keys
from sandbox.tables import create_tables, data_and_metadata, delete_tables

pytestmark = pytest.mark.integration

T0 = datetime(2013, 6, 1, tzinfo=UTC)


@pytest.fixture
def shards(dynamodb_local: Any) -> Iterator[tuple[Dynashard, list[float]]]:
    client = dynamodb_local.client()
    created = create_tables(client, suffix=f"-{uuid.uuid4().hex[:8]}")
    data, meta = data_and_metadata(created)
    config = DynashardConfig(data, meta, endpoint_url=dynamodb_local.endpoint_url, cooldown_s=60.0)
    ds = Dynashard(config, client=dynamodb_local.client(max_pool_connections=16))
    now = [T0.timestamp() + 86_400.0]
    ds.metadata.clock = lambda: now[0]
    yield ds, now
    ds.close()
    delete_tables(client, created.values())


def _events(prefix: str, n: int, start: datetime) -> list[Event]:
    return [
        Event(key="STREAM", id=f"{prefix}{i:05d}", ts=start + timedelta(milliseconds=41 * i))
        for i in range(n)
    ]


class _Cool:
    """Every key offered 10 WCU/s at peak over the cool period."""

    def peak_offered_wcu(self, start: datetime, end: datetime, period_s: int) -> LoadHistory:
        return LoadHistory(start, end, period_s, {"STREAM": 10.0})


class _Settings:
    default_shards, max_shards, partition_wcu, target_utilization = 2, 1000, 1000.0, 0.8
    partition_rcu = 3000.0
    shrink_utilization, shrink_cool_period_s, cooldown_s = None, 1800.0, 60.0


def test_a_key_shrunk_from_8_to_2_reads_back_every_event_once_in_order(
    shards: tuple[Dynashard, list[float]],
) -> None:
    ds, now = shards
    # Given events written while the key had 8 shards (interleaved in time with later ones)
    ds.set_shard_count("STREAM", 8)
    before = _events("a", 1200, T0)
    written = ds.put_events(before)
    assert all(o.ok for o in written)
    assert len({o.physical_key for o in written}) == 8
    # When the sweep finds it cool, after the cooldown, and shrinks it to the default of 2
    now[0] += 120
    when = datetime.fromtimestamp(now[0], UTC)
    outcome = shrink_cool_keys(when, ds, _Cool(), _Settings())
    assert [(s.key, s.previous, s.current) for s in outcome.shrunk] == [("STREAM", 8, 2)]
    ds.metadata.invalidate("STREAM")
    # and more events are written under N = 2, overlapping the first ones in time
    after = _events("b", 800, T0 + timedelta(milliseconds=20))
    assert all(
        o.ok and int(str(o.physical_key).rsplit("#", 1)[1]) < 2 for o in ds.put_events(after)
    )
    # Then a full read returns every event, in order, exactly once
    items = _read(ds)
    expected = sorted(before + after, key=lambda e: e.sort_key)
    assert [i["id"] for i in items] == [e.id for e in expected]
    assert sorted(ds.shard_info("STREAM").counts) == [2, 8]


def test_a_counter_shrunk_from_8_to_2_still_sums_all_8_shards(
    shards: tuple[Dynashard, list[float]],
) -> None:
    ds, now = shards
    key = counter_key("flights")
    ds.set_shard_count(key, 8)
    for i in range(64):
        ds.increment_counter("flights", 1, idempotency_key=f"k{i}")  # spread over 8 shards
    now[0] += 120
    assert ds.metadata.shrink(key, 2).current == 2
    for _ in range(10):
        ds.increment_counter("flights", 1)
    value = ds.get_counter("flights")
    assert (value.value, value.shards) == (74, 8)


def _read(ds: Dynashard) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = ds.query_events("STREAM", cursor=cursor, limit=300)
        out.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            return out
