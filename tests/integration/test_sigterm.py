"""A batch command stopped by SIGTERM stops its engines (exit_on_sigterm)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox.lifecycle import SIGTERM_EXIT_STATUS

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

# What the demo, the chaos run and the benchmarks do: engines in ``with`` blocks inside
# exit_on_sigterm. It prints DynamoDB Local's java pid, then waits to be stopped.
SCRIPT = """
import time
from sandbox.engines.dynamodb_local import DynamoDBLocal
from sandbox.lifecycle import exit_on_sigterm

with exit_on_sigterm(), DynamoDBLocal() as ddb:
    print(ddb.pid, flush=True)
    time.sleep(120)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is not running.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def test_sigterm_stops_dynamodb_local_with_the_command() -> None:
    # Given a command running DynamoDB Local inside exit_on_sigterm
    command = subprocess.Popen(
        [sys.executable, "-c", SCRIPT], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert command.stdout is not None
    java = int(command.stdout.readline())
    assert alive(java)
    # When it is sent SIGTERM (timeout, kill, a CI cancel)
    command.send_signal(signal.SIGTERM)
    # Then it exits 143 and its java process is gone with it
    assert command.wait(timeout=30) == SIGTERM_EXIT_STATUS
    deadline = time.monotonic() + 10
    while alive(java) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(java)
