"""``python -m bench fleet-paper``: the figures docs/fleet-scale.md quotes, from the library."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.fleet import paper
from dynashard.core.capacity import query_read_units, shards_needed
from dynashard.planning.reads import shard_page_limit


def test_the_zipf_loads_add_up_and_fall_with_rank() -> None:
    loads = paper.zipf_loads(1_000, 50_000.0, 1.1)
    assert math.isclose(float(loads.sum()), 50_000.0)
    assert np.all(np.diff(loads) < 0)
    assert math.isclose(float(loads[0] / loads[9]), 10**1.1)


def test_shard_counts_are_the_librarys_formula() -> None:
    loads = np.array([0.0, 799.0, 800.0, 801.0, 134_731.0])
    assert paper.shard_counts(loads, 1000.0, 0.8).tolist() == [
        shards_needed(float(x), 1000.0, 0.8) for x in loads
    ]
    assert paper.shard_counts(loads, 1000.0, 0.8).tolist() == [1, 1, 1, 2, 169]


def test_a_page_costs_each_shards_first_query() -> None:
    # 100 items of 1 KB over 4 shards: each asked for its share plus one, rounded up to
    # fill its read units, billed on their total size
    per_shard = shard_page_limit(100, 4, 1024, True)
    assert paper.page_read_units(4, 1024, True) == 4 * query_read_units(
        per_shard * 1024, consistent=True
    )
    # every shard costs at least one read unit (strongly consistent)
    assert paper.page_read_units(128, 410, True) == 128


def test_distinct_keys_in_a_batch() -> None:
    p = np.full(4, 0.25)
    assert math.isclose(paper.distinct(p, 1), 1.0)
    assert math.isclose(paper.distinct(p, 2), 4 * (1 - 0.75**2))


def test_a_write_load_line_is_a_powertools_json_line_with_the_lambda_context() -> None:
    size = paper.write_load_line_bytes()
    assert 400 < size < 800


def test_the_command_prints_every_section(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a small fleet (the page's own run is 100,000 keys)
    code = paper.main(["--keys", "2000", "--total", "20000", "--plan-keys", "300"])
    out = capsys.readouterr().out
    assert code == 0
    for section in ("workload:", "shards (", "reads:", "writers:", "metadata reads:", "overhead:"):
        assert section in out
    # routed by key: containers x keys a container / cache lifetime
    assert "routed by key (100 keys a container): 3,333 GetItem/s" in out
    assert "planner on 300 synthetic keys" in out and "300 keys changed" in out
