"""The load a key was offered, from what Contributor Insights reports (planning.shards)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest

from dynashard.planning.shards import attempts_per_request, loads_by_logical_key, partition_group


@dataclass(frozen=True)
class Reported:
    """A reported partition key (the ``ReportedKey`` shape a hot-key source returns)."""

    key: str
    consumed_units_per_s: float
    throttled_events: int


# --- load per logical key, as the scaler sees it ---------------------------------------------
def test_physical_keys_are_summed_per_logical_key() -> None:
    loads, unmapped = loads_by_logical_key(
        [
            Reported("DEPARTURES#JFK#0", 900.0, 120),
            Reported("DEPARTURES#JFK#1", 950.0, 80),
            Reported("DEPARTURES#EWR#0", 100.0, 0),
            Reported("DEPARTURES#JFK#2024-02-17", 5.0, 3),
        ]
    )
    assert set(loads) == {"DEPARTURES#JFK", "DEPARTURES#EWR"}
    [jfk] = loads["DEPARTURES#JFK"]  # one group on the base table
    assert jfk.group == "DEPARTURES#JFK"
    assert jfk.consumed_units_per_s == pytest.approx(1850.0)
    assert jfk.throttled_events == 200
    assert jfk.throttled_shards == {0, 1}
    assert unmapped == ["DEPARTURES#JFK#2024-02-17"]


def test_gsi1_keys_are_mapped_to_their_logical_key() -> None:
    # Given the hot keys of an index alarm: GSI1 keys {logical}#{bucket}#{shard}
    hot = [
        Reported("DEPARTURES#JFK#2013-01-01#0", 0.0, 30),
        Reported("DEPARTURES#JFK#2013-01-01#1", 0.0, 10),
        Reported("DEPARTURES#EWR#2013-01-01T10#0", 0.0, 5),
        Reported("DEPARTURES#JFK#0", 0.0, 7),  # a base-table key: not GSI1's
    ]
    # When they are grouped for GSI1
    loads, unmapped = loads_by_logical_key(hot, "GSI1")
    # Then the bucket is stripped with the shard, not taken for part of the key
    assert set(loads) == {"DEPARTURES#JFK", "DEPARTURES#EWR"}
    [jfk] = loads["DEPARTURES#JFK"]
    assert (jfk.group, jfk.throttled_events, jfk.throttled_shards) == (
        "DEPARTURES#JFK#2013-01-01",
        40,
        {0, 1},
    )
    assert unmapped == ["DEPARTURES#JFK#0"]


def test_a_time_bucket_gsi_of_another_name_is_mapped_by_the_schemas_name() -> None:
    # Given a table whose time-bucket GSI is "ByTime" (TableSchema.gsi_name), and the
    # hot keys of an alarm on it
    hot = [
        Reported("DEPARTURES#JFK#2013-01-01#0", 0.0, 30),
        Reported("DEPARTURES#JFK#2013-01-01#1", 0.0, 10),
    ]
    # When they are grouped with the schema's GSI name
    loads, unmapped = loads_by_logical_key(hot, "ByTime", gsi_name="ByTime")
    # Then they map to the logical key, per bucket, as GSI1's keys do
    [jfk] = loads["DEPARTURES#JFK"]
    assert (jfk.group, jfk.throttled_events, jfk.throttled_shards) == (
        "DEPARTURES#JFK#2013-01-01",
        40,
        {0, 1},
    )
    assert unmapped == []
    # And an index that is not the time-bucket GSI maps nothing, whatever its keys
    # look like (dynashard writes no other index)
    for index, gsi in (("ByTime", "GSI1"), ("GSI1", "ByTime"), ("OwnerIndex", "ByTime")):
        loads, unmapped = loads_by_logical_key(hot, index, gsi_name=gsi)
        assert loads == {} and unmapped == [h.key for h in hot]


@pytest.mark.parametrize("gsi_name", ["GSI1", "ByTime", None])
def test_base_table_keys_map_whatever_the_gsi_is_named(gsi_name: str | None) -> None:
    assert partition_group("DEPARTURES#JFK#3", None, gsi_name) == (
        "DEPARTURES#JFK",
        "DEPARTURES#JFK",
        3,
    )
    # An index key maps only when the index is the time-bucket GSI (none: never)
    gsi_key = partition_group("DEPARTURES#JFK#2013-01-01#0", "GSI1", gsi_name)
    assert gsi_key == (
        ("DEPARTURES#JFK", "DEPARTURES#JFK#2013-01-01", 0) if gsi_name == "GSI1" else None
    )


@pytest.mark.parametrize(
    ("key", "kind", "expected"),
    [
        ("DEPARTURES#JFK", "write", 8),
        ("COUNTER#CARRIER#UA", "write", 4),
        ("DEPARTURES#JFK", "read", 4),
    ],
)
def test_retry_budget_is_the_one_of_the_client_that_made_the_requests(
    key: str, kind: Literal["write", "read"], expected: int
) -> None:
    # Event writes: the writer's own budget; reads and counter increments: botocore's
    assert attempts_per_request(key, kind, write_max_attempts=8) == expected


def test_demand_counts_a_throttled_shard_at_the_partition_limit() -> None:
    # THROTTLED_KEYS mode: no consumption is reported, only throttles
    loads, _ = loads_by_logical_key([Reported("K#0", 0.0, 600)])
    assert loads["K"][0].demand_units_per_s(1000.0, 60.0) == pytest.approx(1010.0)


@pytest.mark.parametrize("attempts", [1, 4, 8])
def test_demand_does_not_count_retries_as_load(attempts: int) -> None:
    # Given one shard offered 4 x its 1,000 WCU/s limit for a minute by writers that
    # try each write `attempts` times: 1,000 WCU/s get through, and each of the 3,000
    # writes/s turned away is throttled on every attempt
    throttled = 3000 * 60 * attempts
    loads, _ = loads_by_logical_key([Reported("K#0", 1000.0, throttled)])
    # When the demand is estimated with the writers' retry budget
    demand = loads["K"][0].demand_units_per_s(1000.0, 60.0, attempts)
    # Then it is the offered load, whatever the budget
    assert demand == pytest.approx(4000.0)
    # (counting each throttled request as new load overshoots by the budget)
    assert loads["K"][0].demand_units_per_s(1000.0, 60.0) == pytest.approx(1000.0 + 3000 * attempts)


def test_demand_of_a_load_that_filled_part_of_the_window_is_not_diluted() -> None:
    # Given the same 4 x the limit, but only for the last 20 s of the alarm's minute
    # (a load that started mid-minute): the window averages are a third of the rates
    attempts = 4
    hot = Reported("K#0", 1000.0 * 20 / 60, 3000 * 20 * attempts)
    loads, _ = loads_by_logical_key([hot])
    # When the demand is estimated over the 60 s window
    demand = loads["K"][0].demand_units_per_s(1000.0, 60.0, attempts)
    # Then it is still the offered 4,000 units/s, not a third of it
    assert demand == pytest.approx(4000.0)
