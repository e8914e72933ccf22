"""One scaler run (planning.sweep): ports are built only when there is work for them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from dynashard import names
from dynashard.lambda_kit.settings import FunctionSettings
from dynashard.planning import sweep
from dynashard.planning.scaling import Alarm

NOW = datetime(2024, 2, 17, 12, 0, tzinfo=UTC)
SETTINGS = FunctionSettings(**{names.ENV_DATA_TABLE: "data", names.ENV_METADATA_TABLE: "meta"})


def never() -> Any:
    pytest.fail("a port was built with nothing to do")


def test_a_sweep_with_nothing_due_and_no_history_builds_no_port() -> None:
    run = sweep.sweep(
        NOW,
        [],
        port=never,
        hot_keys=never,
        offered_load=never,
        history=None,
        shrinker=never,
        settings=SETTINGS,
    )
    assert run.alarms == () and run.errors == [] and run.grown == []
    assert run.to_dict(False, NOW)["alarms"] == []
    assert run.to_dict(False, NOW)["sweep"] == NOW.isoformat()


def test_an_alarm_not_in_alarm_state_is_reported_as_ignored() -> None:
    built: list[str] = []

    def port(name: str) -> Any:
        built.append(name)
        return object()

    alarm = Alarm(name="throttles", state="OK", timestamp=NOW, window_s=60)
    run = sweep.sweep(
        NOW,
        [alarm],
        port=lambda: port("metadata"),
        hot_keys=lambda: port("hot keys"),
        offered_load=lambda: None,
        history=None,
        shrinker=never,
        settings=SETTINGS,
    )
    assert built == ["metadata", "hot keys"]
    report = run.to_dict(True, NOW)
    assert report["alarm"] == "throttles" and "not ALARM" in report["ignored"]
