"""Token-bucket limits with an injected clock."""

from __future__ import annotations

import pytest

from sandbox.emulator.limits import (
    Charge,
    Limiter,
    LimitType,
    Operation,
    Resource,
    ResourceLimit,
    TokenBucket,
    throttling_reason,
)

TABLE = Resource("t")
GSI = Resource("t", "GSI1")
W = Operation.WRITE


def test_bucket_refills_at_rate_and_caps_at_capacity() -> None:
    bucket = TokenBucket(rate=10, capacity=10, now=0.0)
    bucket.take(10, 0.0)
    assert bucket.level(0.0) == 0
    assert bucket.level(0.5) == pytest.approx(5)
    assert bucket.level(100.0) == 10


def test_bucket_admits_large_cost_when_full_then_goes_into_debt() -> None:
    bucket = TokenBucket(rate=10, capacity=10, now=0.0)
    assert bucket.can_take(40, 0.0)  # min(cost, capacity) = 10 is held
    bucket.take(40, 0.0)
    assert not bucket.can_take(1, 2.0)  # -30 + 20 = -10
    assert bucket.can_take(1, 3.1)


def test_key_never_exceeds_scaled_ceiling_per_second() -> None:
    # Given a 1,000 WCU/s ceiling scaled to 50 WCU/s
    limiter = Limiter(partition_wcu=1000, scale=0.05)
    admitted = 0
    # When 200 one-WCU writes hit one key within the same instant
    for _ in range(200):
        if not limiter.admit(W, [Charge(TABLE, "hot", 1.0)], now=0.0):
            admitted += 1
    # Then exactly one second of the ceiling gets through
    assert admitted == 50
    # And one second later another 50 do, never more
    later = sum(not limiter.admit(W, [Charge(TABLE, "hot", 1.0)], now=1.0) for _ in range(200))
    assert later == 50


def test_an_unscaled_table_keeps_the_real_key_range_ceiling() -> None:
    # Given a 1,000 WCU/s ceiling scaled to 50 WCU/s, except on the table "meta"
    limiter = Limiter(partition_wcu=1000, scale=0.05, unscaled_tables=frozenset({"meta"}))
    meta = Resource("meta")
    # When 2,000 one-WCU writes hit one key of each table within the same instant
    on_data = sum(not limiter.admit(W, [Charge(TABLE, "hot", 1.0)], 0.0) for _ in range(2000))
    on_meta = sum(not limiter.admit(W, [Charge(meta, "hot", 1.0)], 0.0) for _ in range(2000))
    # Then the data table admits its scaled second, the metadata table the real one
    assert (on_data, on_meta) == (50, 1000)
    assert limiter.key_range_rate(W, meta) == 1000 and limiter.key_range_rate(W, TABLE) == 50


def test_other_keys_and_reads_are_independent() -> None:
    limiter = Limiter(scale=0.01)  # 10 WCU/s, 30 RCU/s
    for _ in range(10):
        assert not limiter.admit(W, [Charge(TABLE, "hot", 1.0)], 0.0)
    violations = limiter.admit(W, [Charge(TABLE, "hot", 1.0)], 0.0)
    assert [v.reason for v in violations] == ["TableWriteKeyRangeThroughputExceeded"]
    assert violations[0].key == "hot"
    assert not limiter.admit(W, [Charge(TABLE, "cold", 1.0)], 0.0)
    assert not limiter.admit(Operation.READ, [Charge(TABLE, "hot", 1.0)], 0.0)


def test_throttled_request_takes_nothing() -> None:
    # Given a GSI key that is exhausted
    limiter = Limiter(scale=0.01)
    for _ in range(10):
        limiter.admit(W, [Charge(GSI, "g", 1.0)], 0.0)
    # When a write charges a fresh table key and the exhausted GSI key
    violations = limiter.admit(W, [Charge(TABLE, "k", 5.0), Charge(GSI, "g", 1.0)], 0.0)
    # Then it is throttled for the index (back-pressure) and the table key keeps its tokens
    assert [v.reason for v in violations] == ["IndexWriteKeyRangeThroughputExceeded"]
    assert all(not limiter.admit(W, [Charge(TABLE, "k", 1.0)], 0.0) for _ in range(10))


def test_provisioned_table_limit_with_burst_capped_at_300_seconds() -> None:
    limiter = Limiter(scale=1.0)
    limiter.set_resource_limit(TABLE, W, ResourceLimit(LimitType.PROVISIONED, 5, 300))
    # starts with one second's worth
    assert sum(not limiter.admit(W, [Charge(TABLE, f"k{i}", 1.0)], 0.0) for i in range(20)) == 5
    # after 1,000 idle seconds only 300 s of capacity (1,500 units) were kept
    admitted = sum(not limiter.admit(W, [Charge(TABLE, f"k{i}", 1.0)], 1000.0) for i in range(2000))
    assert admitted == 1500
    violation = limiter.admit(W, [Charge(TABLE, "x", 1.0)], 1000.0)[0]
    assert violation.reason == "TableWriteProvisionedThroughputExceeded"
    assert violation.key is None


def test_burst_never_lifts_a_key_above_its_ceiling() -> None:
    limiter = Limiter(scale=0.01)  # key ceiling 10 WCU/s
    limiter.set_resource_limit(TABLE, W, ResourceLimit(LimitType.PROVISIONED, 100, 300))
    admitted = sum(not limiter.admit(W, [Charge(TABLE, "hot", 1.0)], 1000.0) for _ in range(100))
    assert admitted == 10


@pytest.mark.parametrize(
    ("resource", "op", "limit", "reason"),
    [
        (TABLE, Operation.WRITE, LimitType.KEY_RANGE, "TableWriteKeyRangeThroughputExceeded"),
        (GSI, Operation.WRITE, LimitType.KEY_RANGE, "IndexWriteKeyRangeThroughputExceeded"),
        (TABLE, Operation.READ, LimitType.KEY_RANGE, "TableReadKeyRangeThroughputExceeded"),
        (GSI, Operation.READ, LimitType.PROVISIONED, "IndexReadProvisionedThroughputExceeded"),
        (TABLE, Operation.WRITE, LimitType.ACCOUNT, "TableWriteAccountLimitExceeded"),
        (GSI, Operation.WRITE, LimitType.MAX_ON_DEMAND, "IndexWriteMaxOnDemandThroughputExceeded"),
    ],
)
def test_reason_is_resource_operation_limit(
    resource: Resource, op: Operation, limit: LimitType, reason: str
) -> None:
    assert throttling_reason(resource, op, limit) == reason


def test_configure_rejects_non_positive_scale() -> None:
    with pytest.raises(ValueError, match="must be > 0"):
        Limiter(scale=0)
