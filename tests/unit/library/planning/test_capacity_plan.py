"""The capacity plan: shard counts, fan-out cost and monthly cost, with its arithmetic."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dynashard.core.capacity import query_read_units, shards_needed, write_units
from dynashard.errors import InvalidInputError
from dynashard.planning.capacity import plan_capacity
from dynashard.planning.shards import plan_shard_count


def test_n_is_the_larger_of_the_write_and_read_counts() -> None:
    # Given a read-heavy key of small items: 100 writes/s, 600,000 items/s read
    plan = plan_capacity(writes_per_s=100, reads_per_s=600_000, item_sizes=[400])
    # Then writes need 1 shard and reads ceil(6,000 x 10 RCU / 2,400) = 25
    assert plan.shards_for_writes == 1
    assert plan.rcu_per_page_unsharded == 10.0  # 100 x 400 B = 40,000 B -> 10 x 4 KB
    assert plan.peak_rcu == 60_000.0
    assert (plan.shards_for_reads, plan.shards) == (25, 25)


def test_each_sample_item_is_rounded_up_separately_for_writes() -> None:
    # 1,000 B and 1,100 B: 1 WCU and 2 WCU (not 2 x 1,050 B = 2 WCU each)
    plan = plan_capacity(writes_per_s=800, reads_per_s=0, item_sizes=[1000, 1100])
    assert plan.wcu_per_item == 1.5
    assert plan.peak_wcu == 1200.0
    assert plan.shards == 2


def test_eventually_consistent_pages_cost_half() -> None:
    strong = plan_capacity(writes_per_s=1, reads_per_s=100, item_sizes=[4096])
    eventual = plan_capacity(writes_per_s=1, reads_per_s=100, item_sizes=[4096], consistent=False)
    assert eventual.rcu_per_page_unsharded == strong.rcu_per_page_unsharded / 2


def test_the_fan_out_reads_every_shard_and_the_metadata() -> None:
    plan = plan_capacity(writes_per_s=4000, reads_per_s=100, item_sizes=[200])
    assert plan.shards == 5
    assert plan.requests_per_page == 6
    # each shard's Query rounds its own bytes up to 4 KB
    per_shard = query_read_units(plan.per_shard_page_limit * 200, consistent=True)
    assert plan.rcu_per_page == 5 * per_shard + 1
    assert plan.monthly_read_usd > plan.monthly_read_usd_unsharded
    assert plan.monthly_difference_usd == pytest.approx(
        plan.monthly_read_usd - plan.monthly_read_usd_unsharded
    )


def test_a_capped_count_and_a_fan_out_floor_are_warned_about() -> None:
    capped = plan_capacity(writes_per_s=100_000, reads_per_s=0, item_sizes=[1024], max_shards=64)
    assert capped.shards == 64 and "caps it at 64" in capped.warnings[0]
    # 40,000 pages/s of one small item: every shard serves every page, at least 1 RCU
    floor = plan_capacity(writes_per_s=4000, reads_per_s=40_000, item_sizes=[100], page_limit=1)
    assert any("more shards cannot lower it" in w for w in floor.warnings)


def test_the_arithmetic_and_the_limits_are_shown() -> None:
    plan = plan_capacity(writes_per_s=2400, reads_per_s=500, item_sizes=[1536])
    assert "N(writes) = ceil(4800 / (1000 x 0.8)) = 6" in plan.steps
    names = {limit.name for limit in plan.limits}
    assert {"per-partition write ceiling", "per-partition read ceiling", "item size"} <= names
    assert plan.to_json()["limits"][0]["source"].startswith("DynamoDB Developer Guide")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"writes_per_s": -1.0}, "writes_per_s"),
        ({"reads_per_s": math.inf}, "reads_per_s"),
        ({"item_sizes": []}, "item_sizes"),
        ({"item_sizes": [0]}, "item_sizes"),
        ({"target_utilization": 0.0}, "target_utilization"),
        ({"page_limit": 1001}, "page_limit"),
        ({"wru_price_per_million": -1.0}, "prices"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"writes_per_s": 1.0, "reads_per_s": 1.0, "item_sizes": [100]}
    args.update(kwargs)
    with pytest.raises(InvalidInputError) as info:
        plan_capacity(**args)  # type: ignore[arg-type]
    assert info.value.field == field


@given(
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
    st.integers(min_value=1, max_value=400 * 1024),
    st.floats(min_value=0.05, max_value=1.0),
)
def test_the_plan_agrees_with_the_scaler_planner(writes: float, size: int, u: float) -> None:
    # The command's N for writes is the scaler's for the same load from one shard
    plan = plan_capacity(
        writes_per_s=writes, reads_per_s=0, item_sizes=[size], target_utilization=u, max_shards=1000
    )
    load = writes * write_units(size)
    assert plan.shards_for_writes == shards_needed(load, 1000.0, u)
    assert plan.shards == plan_shard_count(1, load, 1000.0, u, 1000)
    # and each shard then runs at or under the target
    assert load / plan.shards_for_writes <= 1000.0 * u * (1 + 1e-9)
