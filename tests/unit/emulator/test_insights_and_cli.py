"""The scaler's HotKeySource over the emulator's figures, and the command line."""

from __future__ import annotations

from datetime import UTC, datetime

from dynashard.planning.scaling import HotKey
from sandbox.emulator.__main__ import config_from_args, parse_args
from sandbox.emulator.config import OnDemand, Provisioned
from sandbox.emulator.core import PartitionEmulator
from sandbox.emulator.insights import EmulatorHotKeySource
from sandbox.emulator.limits import Operation, Resource

START = datetime(2027, 1, 1, 12, 0, tzinfo=UTC)
END = datetime(2027, 1, 1, 12, 5, tzinfo=UTC)


def _emulator_with_figures() -> PartitionEmulator:
    emulator = PartitionEmulator("http://upstream.invalid")
    ts = START.timestamp() + 30
    table = Resource("data")
    for _ in range(600):
        emulator.metrics.record_key(Operation.WRITE, table, "A#1", ts, units=1.0)
    emulator.metrics.record_key(Operation.WRITE, table, "A#1", ts, throttled=True)
    emulator.metrics.record_key(Operation.WRITE, table, "B#0", ts, units=3.0)
    for _ in range(5):
        emulator.metrics.record_key(Operation.WRITE, table, "C#0", ts, throttled=True)
    emulator.metrics.record_key(Operation.WRITE, Resource("data", "GSI1"), "g", ts, units=9.0)
    return emulator


def test_hot_keys_most_throttled_first_with_rate_over_window() -> None:
    source = EmulatorHotKeySource(_emulator_with_figures())
    hot = source.hot_keys("data", None, START, END)
    assert hot == [
        HotKey("C#0", 0.0, 5),
        HotKey("A#1", 600 / 300, 1),
        HotKey("B#0", 3 / 300, 0),
    ]


def test_throttled_keys_mode_reports_no_consumption_and_index_is_separate() -> None:
    emulator = _emulator_with_figures()
    source = EmulatorHotKeySource(emulator, mode="THROTTLED_KEYS")
    assert [(h.key, h.consumed_units_per_s) for h in source.hot_keys("data", None, START, END)] == [
        ("C#0", 0.0),
        ("A#1", 0.0),
    ]
    index = EmulatorHotKeySource(emulator).hot_keys("data", "GSI1", START, END)
    assert [h.key for h in index] == ["g"]


def test_cli_builds_config() -> None:
    args = parse_args(["--upstream", "http://x", "--scale", "0.05", "--provisioned", "10", "5"])
    config = config_from_args(args)
    assert config.scale == 0.05 and config.table_mode == Provisioned(10, 5)
    args = parse_args(["--upstream", "http://x", "--on-demand-max", "100", "50"])
    assert config_from_args(args).table_mode == OnDemand(100, 50)
    args = parse_args(["--upstream", "http://x", "--latency-median-ms", "4"])
    latency = config_from_args(args).latency
    assert latency is not None and latency.median_ms == 4
