from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dynashard.core.buckets import time_bucket
from dynashard.core.strategies import (
    calculated_shards,
    hash64,
    jump_hash,
    random_shard,
    shard_for,
)
from dynashard.errors import InvalidInputError


def test_hash64_is_stable_across_processes() -> None:
    # A fixed value: a change here would move every stored event to another shard.
    assert hash64("DEPARTURES#JFK") == int.from_bytes(
        __import__("hashlib").blake2b(b"DEPARTURES#JFK", digest_size=8).digest(), "big"
    )


@given(st.integers(min_value=0, max_value=2**64 - 1), st.integers(min_value=1, max_value=500))
def test_jump_hash_in_range(key: int, buckets: int) -> None:
    assert 0 <= jump_hash(key, buckets) < buckets


@given(st.text(min_size=1), st.integers(min_value=1, max_value=200))
def test_growing_only_moves_keys_to_new_shards(value: str, n: int) -> None:
    # Jump consistent hash: a key either stays or moves to one of the added buckets.
    before, after = shard_for(value, n), shard_for(value, n + 7)
    assert after == before or after >= n


def test_growth_moves_about_the_minimum_share() -> None:
    ids = [f"event-{i}" for i in range(20_000)]
    moved = sum(shard_for(i, 8) != shard_for(i, 10) for i in ids) / len(ids)
    assert 0.15 < moved < 0.25  # ideal 1 - 8/10 = 0.2; modulo hashing would move ~0.8


def test_random_strategy_is_uniform_and_deterministic_per_event() -> None:
    counts = Counter(random_shard(8, f"e{i}") for i in range(16_000))
    assert set(counts) == set(range(8))
    assert max(counts.values()) < 2_000 * 1.1 and min(counts.values()) > 2_000 * 0.9
    assert random_shard(8, "e42") == random_shard(8, "e42")


def test_random_strategy_without_event_id_stays_in_range() -> None:
    assert {random_shard(3) for _ in range(300)} == {0, 1, 2}


def test_calculated_reads_query_one_shard_per_count() -> None:
    shards = calculated_shards("tail-N14228", {1, 4, 16})
    assert 1 <= len(shards) <= 3
    assert shard_for("tail-N14228", 16) in shards


def test_bad_shard_count_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="shard count"):
        jump_hash(1, 0)


def test_time_buckets() -> None:
    ts = datetime(2013, 3, 9, 23, 59, tzinfo=UTC)
    assert time_bucket(ts, "hour") == "2013-03-09T23"
    assert time_bucket(ts, "day") == "2013-03-09"
    assert time_bucket(ts, "month") == "2013-03"
    with pytest.raises(InvalidInputError, match="hour, day or month"):
        time_bucket(ts, "week")
