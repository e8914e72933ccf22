"""The read benchmark's GSI1 parts: the gsi1 and auto readers are metered and exact, the
cool-hour class is one GSI1 Query against N base Queries, the wait for GSI1 to catch up
waits on the counts, and a window GSI1 cannot serve is dropped with the library's reason."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from bench.reads import (
    Cell,
    MeteredClient,
    PageRead,
    Window,
    await_gsi1,
    facade_reader,
    gsi1_comparison,
    item_count,
    run_sequence,
    warm_up,
)
from dynashard import Dynashard, DynashardConfig, Event, names
from dynashard.errors import InvalidInputError
from infra.table_specs import ALL_TABLES, DATA_TABLE, METADATA_TABLE, create_table_request

DAY0 = datetime(2013, 1, 1, tzinfo=UTC)
GROWN = 8


@pytest.fixture
def moto_client() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for spec in ALL_TABLES:
            client.create_table(**create_table_request(spec))
        yield client


def grown_facade(moto_client: Any) -> tuple[Dynashard, MeteredClient, str]:
    """A key written at N = 1 on day 0, then grown to GROWN and written on day 1."""
    metered = MeteredClient(moto_client)
    config = DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name, max_workers=8)
    ds = Dynashard(config, client=metered)  # type: ignore[arg-type]
    key = f"READS#T#{uuid.uuid4().hex[:4]}"

    def day(d: int) -> list[Event]:
        return [
            Event(key=key, id=f"d{d}e{i:03d}", ts=DAY0 + timedelta(days=d, minutes=7 * i))
            for i in range(150)
        ]

    assert all(o.ok for o in ds.put_events(day(0)))
    ds.set_shard_count(key, GROWN)
    ds.metadata.invalidate(key)
    assert all(o.ok for o in ds.put_events(day(1)))
    return ds, metered, key


def cell_of(reader: str, window: Window, read: Any) -> Cell:
    return Cell(reader, GROWN, window, read, 1, [], [])


def test_cool_hour_is_one_gsi1_query_against_every_base_shard(moto_client: Any) -> None:
    # Given a key grown from 1 to 8 shards after its first day
    ds, metered, key = grown_facade(moto_client)
    window = Window("cool-hour", DAY0 + timedelta(hours=10), DAY0 + timedelta(hours=11))
    cells = {
        reader: cell_of(reader, window, facade_reader(ds, key, window, **options))
        for reader, options in {
            "base": {},
            "gsi1": {"consistent": False, "path": "gsi1"},
            "auto": {"consistent": False, "path": "auto"},
        }.items()
    }
    # When each reads the hour (timed sequence, metered)
    pages = {r: run_sequence(c, metered, 3, record=True) for r, c in cells.items()}
    # Then the pages are the same events, the hour's 9 of them in order
    assert pages["gsi1"] == pages["auto"] == pages["base"]
    flat = [sk for page in pages["base"] for sk in page]
    assert len(flat) == 9 and flat == sorted(flat)
    # and the meter saw one GSI1 Query against one base Query per shard the key had
    assert [t.queries for t in cells["gsi1"].tallies] == [1]
    assert [t.queries for t in cells["base"].tallies] == [GROWN]
    # and the planner took GSI1, recorded per timed page
    assert cells["auto"].paths == ["gsi1"] and cells["gsi1"].paths == ["gsi1"]
    assert cells["base"].paths == ["base"]
    ds.close()


def test_two_hot_buckets_stay_on_the_base_table_under_auto(moto_client: Any) -> None:
    # Given the same grown key, read over two buckets at G = 8 (its hot day and the next,
    # which has no record, so any shard the key had): 8 + 1 GSI1 Queries against 8
    ds, metered, key = grown_facade(moto_client)
    window = Window("hot", DAY0 + timedelta(days=1), DAY0 + timedelta(days=3))
    auto = cell_of("auto", window, facade_reader(ds, key, window, consistent=False))
    gsi1 = cell_of("gsi1", window, facade_reader(ds, key, window, consistent=False, path="gsi1"))
    # When both page through it
    kept, dropped = warm_up([auto, gsi1], metered, 3)
    # Then the planner kept the base table (fewer requests), and GSI1 forced there
    # returns the same pages
    assert dropped == [] and len(kept) == 2
    assert auto.plan is not None and auto.plan["path"] == "base"
    assert gsi1.pages == auto.pages and sum(len(p) for p in auto.pages or []) == 150
    ds.close()


def test_warm_up_drops_a_refused_gsi1_cell_and_raises_for_other_readers() -> None:
    window = Window("month", DAY0, DAY0 + timedelta(days=31))

    def refuse(_cursor: Any) -> PageRead:
        raise InvalidInputError("path", "gsi1 cannot serve this read: too many")

    def fine(_cursor: Any) -> PageRead:
        return PageRead(["a"], None)

    metered = MeteredClient(object())
    kept, dropped = warm_up(
        [Cell("gsi1", 64, window, refuse, 1, [], []), Cell("base", 64, window, fine, 1, [], [])],
        metered,
        3,
    )
    assert [c.reader for c in kept] == ["base"] and kept[0].pages == [["a"]]
    assert dropped == [
        {"shards": 64, "window": "month", "reason": "path: gsi1 cannot serve this read: too many"}
    ]
    with pytest.raises(InvalidInputError):
        warm_up([Cell("auto", 64, window, refuse, 1, [], [])], metered, 3)


class LaggingIndex:
    """Answers Scan/Select=COUNT: the table holds 250 items, the index catches up by 100."""

    def __init__(self, behind_polls: int) -> None:
        self.behind = behind_polls
        self.index_scans = 0

    def scan(self, **request: Any) -> dict[str, Any]:
        assert request["Select"] == "COUNT"
        if "IndexName" in request:
            assert request["IndexName"] == names.GSI1_NAME
            self.index_scans += 1
            total = 250 if self.index_scans > self.behind else 100
        else:
            total = 250
        # Two pages, as a 1 MB Scan page would cut them
        if "ExclusiveStartKey" in request:
            return {"Count": total - 100}
        return {"Count": 100, "LastEvaluatedKey": {"PK": {"S": "x"}}}


def test_await_gsi1_waits_until_the_index_holds_every_item() -> None:
    client = LaggingIndex(behind_polls=2)  # each poll scans the index twice (two pages)
    assert item_count(client, "t") == 250
    client.index_scans = 0
    waited = await_gsi1(client, "t", timeout_s=30.0)
    assert waited["items"] == 250 and waited["polls"] == 2


def test_await_gsi1_fails_when_the_index_never_catches_up() -> None:
    with pytest.raises(RuntimeError, match="GSI1 holds 100 of 250"):
        await_gsi1(LaggingIndex(behind_polls=10**9), "t", timeout_s=0.0)


def test_await_gsi1_on_moto_after_loading(moto_client: Any) -> None:
    ds, _metered, _key = grown_facade(moto_client)
    assert await_gsi1(moto_client, DATA_TABLE.default_name)["items"] == 300
    ds.close()


def run_row(reader: str, shards: int, window: str, **fields: Any) -> dict[str, Any]:
    return {"reader": reader, "shards": shards, "window": window, **fields}


def test_gsi1_comparison_says_where_gsi1_wins() -> None:
    runs = [
        run_row("base", 32, "cool-hour", requests=32.0, p50_ms=50.0, rcu=1.0),
        run_row("gsi1", 32, "cool-hour", requests=1.0, p50_ms=10.0, rcu=0.5),
        run_row("auto", 32, "cool-hour", requests=1.0, p50_ms=11.0, rcu=0.5, paths={"gsi1": 3}),
        run_row("base", 32, "day", requests=32.0, p50_ms=50.0, rcu=30.0),
        run_row("gsi1", 32, "day", requests=64.0, p50_ms=90.0, rcu=9.0),
        run_row("base", 64, "month", requests=64.0, p50_ms=90.0, rcu=64.0),
        run_row("auto", 64, "month", requests=64.0, p50_ms=95.0, rcu=64.0, paths={"base": 3}),
    ]
    got = gsi1_comparison(runs, ["day", "month", "cool-hour"])
    assert got["cool-hour@32"]["gsi1_wins"] is True
    assert got["cool-hour@32"]["base_p50_over_gsi1"] == 5.0
    assert got["cool-hour@32"]["auto_paths"] == {"gsi1": 3}
    assert got["day@32"]["gsi1_wins"] is False and got["day@32"]["gsi1_rcu_over_base"] == 0.3
    assert "gsi1_wins" not in got["month@64"] and got["month@64"]["auto_paths"] == {"base": 3}
    assert set(got) == {"cool-hour@32", "day@32", "month@64"}
