"""DynamoDB's CloudWatch and ThrottlingReasons words: spelled once, in dynashard.core.throttling."""

from __future__ import annotations

import pytest

from dynashard.core import throttling as t
from dynashard.core.throttling import ThrottlingReason


def test_the_key_range_reasons_are_the_four_table_and_index_codes() -> None:
    reasons = set(t.KEY_RANGE_REASONS)
    assert reasons == {
        "TableWriteKeyRangeThroughputExceeded",
        "IndexWriteKeyRangeThroughputExceeded",
        "TableReadKeyRangeThroughputExceeded",
        "IndexReadKeyRangeThroughputExceeded",
    }
    assert all(t.is_key_range_reason(r) for r in t.KEY_RANGE_REASONS)
    assert all(ThrottlingReason(r, "arn").is_key_range for r in t.KEY_RANGE_REASONS)


@pytest.mark.parametrize(
    "reason",
    [
        "TableWriteProvisionedThroughputExceeded",
        "IndexReadAccountLimitExceeded",
        "TableWriteMaxOnDemandThroughputExceeded",
        "",
    ],
)
def test_other_limits_are_not_key_range(reason: str) -> None:
    assert not t.is_key_range_reason(reason)
    assert not ThrottlingReason(reason, "arn").is_key_range


def test_write_reasons_are_told_by_their_prefix() -> None:
    assert ThrottlingReason(t.TABLE_WRITE_KEY_RANGE, "arn").is_write
    assert ThrottlingReason(t.INDEX_WRITE_KEY_RANGE, "arn").is_write
    assert not ThrottlingReason(t.TABLE_READ_KEY_RANGE, "arn").is_write
    assert not ThrottlingReason(t.INDEX_READ_KEY_RANGE, "arn").is_write


def test_the_key_range_metrics_map_to_their_operation_and_are_read_only() -> None:
    assert dict(t.KEY_RANGE_METRICS) == {
        "WriteKeyRangeThroughputThrottleEvents": "write",
        "ReadKeyRangeThroughputThrottleEvents": "read",
    }
    with pytest.raises(TypeError):
        t.KEY_RANGE_METRICS["WriteThrottleEvents"] = "write"  # type: ignore[index]


def test_the_stack_alarms_use_the_librarys_words() -> None:
    from infra import alarm_specs

    # Re-exported, not respelled
    assert alarm_specs.DYNAMODB_NAMESPACE is t.DYNAMODB_NAMESPACE
    assert alarm_specs.WRITE_KEY_RANGE_METRIC is t.WRITE_KEY_RANGE_METRIC
    assert alarm_specs.READ_KEY_RANGE_METRIC is t.READ_KEY_RANGE_METRIC
    assert alarm_specs.DIM_TABLE_NAME is t.DIM_TABLE_NAME
    assert alarm_specs.DIM_INDEX_NAME is t.DIM_INDEX_NAME
    # and every alarm that invokes the scaler is one the scaler's policy acts on
    for spec in alarm_specs.SCALER_ALARMS:
        assert spec.metric_name in t.KEY_RANGE_METRICS
        assert spec.namespace == t.DYNAMODB_NAMESPACE
        assert set(spec.dimensions("t")) <= {t.DIM_TABLE_NAME, t.DIM_INDEX_NAME}


def test_the_emulator_speaks_the_same_words() -> None:
    # The emulator keeps its own per-cause tables; they must agree with the library's.
    from sandbox.emulator.limits import LimitType, Operation
    from sandbox.emulator.metrics import THROTTLE_EVENT_METRICS

    assert LimitType.KEY_RANGE.value == t.KEY_RANGE_MARKER
    assert THROTTLE_EVENT_METRICS[(Operation.WRITE, LimitType.KEY_RANGE)] == (
        t.WRITE_KEY_RANGE_METRIC
    )
    assert THROTTLE_EVENT_METRICS[(Operation.READ, LimitType.KEY_RANGE)] == (
        t.READ_KEY_RANGE_METRIC
    )
    key_range_metrics = {
        m for (_, limit), m in THROTTLE_EVENT_METRICS.items() if limit is LimitType.KEY_RANGE
    }
    assert key_range_metrics == set(t.KEY_RANGE_METRICS)
