"""A short chaos run end to end: a few thousand events, one kill and restart of DynamoDB
Local, a throttling storm, a grow and a shrink, poison in both sources."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
EVENTS = 3000


def test_short_chaos_run_loses_nothing_and_reads_nothing_stale(tmp_path: Path) -> None:
    report_path = tmp_path / "chaos-report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sandbox",
            "chaos",
            "--events",
            str(EVENTS),
            "--report",
            str(report_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert report_path.exists(), proc.stdout[-2000:] + proc.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert proc.returncode == 0, json.dumps(report["checks"]) + proc.stderr[-3000:]
    assert report["ok"] is True and all(report["checks"].values())
    assert report["events_offered"] == EVENTS
    assert report["events_lost"] == 0 and report["events_duplicated"] == 0
    assert report["poison_offered"] > 0
    assert report["poison_in_dlq"] == report["poison_offered"]
    assert {p["where"] for p in report["poison"].values()} == {"sqs-dlq", "kinesis-on-failure"}
    assert all(p["reason"] for p in report["poison"].values())
    assert report["reads_checked"] > 0 and report["stale_reads"] == 0
    assert report["counter_mismatches"] == 0
    faults = report["faults_injected"]
    assert faults["kill"] >= 1 and faults["storm"] >= 1
    assert faults["grow"] >= 1 and faults["shrink"] >= 1
    assert report["throttled_requests"] > 0
    assert report["recovery_s"] > 0
