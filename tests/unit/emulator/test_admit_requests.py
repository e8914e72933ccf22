"""Limiter.admit_requests: many equal requests at once, exactly as one admit() each."""

from __future__ import annotations

import random

import pytest

from sandbox.emulator.limits import (
    Charge,
    Limiter,
    LimitType,
    Operation,
    Resource,
    ResourceLimit,
)

TABLE = Resource("t")


def one_by_one(limiter: Limiter, key: str, units: float, count: int, now: float) -> int:
    charge = [Charge(TABLE, key, units)]
    return sum(1 for _ in range(count) if not limiter.admit(Operation.WRITE, charge, now))


@pytest.mark.parametrize("seed", range(20))
def test_same_admissions_and_tokens_as_one_admit_per_request(seed: int) -> None:
    # Given two limiters with the same limits (one with a table limit on some seeds)
    rng = random.Random(seed)
    scale = rng.choice([1.0, 0.05, 0.5])
    batch, single = Limiter(scale=scale), Limiter(scale=scale)
    if seed % 3 == 0:
        cap = ResourceLimit(LimitType.PROVISIONED, rng.choice([300.0, 700.0]), 1.0)
        for limiter in (batch, single):
            limiter.set_resource_limit(TABLE, Operation.WRITE, cap)
    # When both see the same steps of equal requests, by batch and one by one
    now = 0.0
    for _ in range(30):
        now += rng.choice([0.1, 0.5, 1.0, 2.0])
        key, units, count = rng.choice("ab"), rng.choice([1.0, 2.0, 3.0]), rng.randint(0, 1500)
        # Then the same number is admitted, and the buckets hold the same tokens after
        assert batch.admit_requests(Operation.WRITE, TABLE, key, units, count, now) == (
            one_by_one(single, key, units, count, now)
        )
        assert batch.check(Operation.WRITE, [Charge(TABLE, key, 1.0)], now) == single.check(
            Operation.WRITE, [Charge(TABLE, key, 1.0)], now
        )


def test_a_full_key_range_admits_one_second_of_its_ceiling() -> None:
    limiter = Limiter()
    assert limiter.admit_requests(Operation.WRITE, TABLE, "hot", 1.0, 5000, 0.0) == 1000
    assert limiter.admit_requests(Operation.WRITE, TABLE, "hot", 1.0, 5000, 0.0) == 0
    assert limiter.admit_requests(Operation.WRITE, TABLE, "hot", 1.0, 5000, 1.0) == 1000
    assert limiter.admit_requests(Operation.WRITE, TABLE, "hot", 1.0, 0, 2.0) == 0
