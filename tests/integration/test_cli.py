"""The ``dynashard`` command against DynamoDB Local, the partition emulator and the sandbox
(``python -m sandbox up``)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dynashard import Dynashard, DynashardConfig, Event
from dynashard.cli.app import app
from dynashard.cli.context import ExitCode
from dynashard.core.retry import Backoff
from sandbox.emulator import EmulatorConfig, EmulatorServer
from sandbox.engines.dynamodb_local import DynamoDBLocal, local_client

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.fixture(scope="module")
def emulator(dynamodb_local: DynamoDBLocal) -> Iterator[EmulatorServer]:
    """The partition emulator in front of DynamoDB Local, limits scaled to 1 % (10 WCU/s)."""
    with EmulatorServer(dynamodb_local.endpoint_url, EmulatorConfig(scale=0.01)) as server:
        yield server


def cli(endpoint: str, tables: tuple[str, str], *args: str) -> Any:
    data_table, metadata_table = tables
    return runner.invoke(
        app,
        [
            "--endpoint-url",
            endpoint,
            "--data-table",
            data_table,
            "--metadata-table",
            metadata_table,
            *args,
        ],
        env={"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"},
    )


def test_resize_and_status_against_dynamodb_local(
    dynamodb_local: DynamoDBLocal, sandbox_tables: tuple[str, str]
) -> None:
    url = dynamodb_local.endpoint_url
    key = f"CLI#{uuid.uuid4().hex[:6]}"
    assert cli(url, sandbox_tables, "status", key).exit_code == ExitCode.NOT_FOUND
    assert cli(url, sandbox_tables, "resize", key, "3").exit_code == 0
    assert cli(url, sandbox_tables, "resize", key, "6").exit_code == 0
    refused = cli(url, sandbox_tables, "resize", key, "12")
    assert refused.exit_code == ExitCode.REFUSED, refused.output
    shrunk = cli(url, sandbox_tables, "resize", key, "2", "--force", "--json")
    assert shrunk.exit_code == 0, shrunk.output
    assert json.loads(shrunk.output)["readers_query_shards"] == 6  # history keeps 6
    status = cli(url, sandbox_tables, "status", key, "--json")
    doc = json.loads(status.output)
    assert doc["number_of_shards"] == 2
    assert [h["count"] for h in doc["shard_history"]] == [3, 6, 2]


def test_hot_against_the_emulator_names_the_throttled_key_and_plans_more_shards(
    emulator: EmulatorServer, sandbox_tables: tuple[str, str]
) -> None:
    # Given one key written at several times its 10 WCU/s limit through the emulator
    data_table, metadata_table = sandbox_tables
    key = f"HOT#{uuid.uuid4().hex[:6]}"
    ds = Dynashard(
        DynashardConfig(
            data_table,
            metadata_table,
            endpoint_url=emulator.endpoint_url,
            in_band_growth=False,
            write_backoff=Backoff(base_s=0.01, cap_s=0.05, max_attempts=2),
        ),
        client=local_client(emulator.endpoint_url),
    )
    t0 = datetime(2013, 1, 1, tzinfo=UTC)
    outcomes = ds.put_events(
        [Event(key=key, id=f"e{i}", ts=t0 + timedelta(seconds=i)) for i in range(300)]
    )
    ds.close()
    assert not all(o.ok for o in outcomes)  # the emulator throttled some
    # When hot is asked of the emulator
    result = cli(emulator.endpoint_url, sandbox_tables, "hot", "--json")
    # Then the key is there, throttled, on 1 shard, and the planner wants more
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    row = next(r for r in doc["logical_keys"] if r["key"] == key)
    assert row["throttled_events"] > 0
    assert row["shards"] == 1 and row["planned_shards"] > 1
    assert row["physical_keys"] == [f"{key}#0"]


def test_count_and_compact_against_dynamodb_local(
    dynamodb_local: DynamoDBLocal, sandbox_tables: tuple[str, str]
) -> None:
    """AWS's own engine evaluates the compaction's transaction: the ConditionCheck and the
    conditional Delete compare the ``data`` map for equality."""
    from dynashard.core.strategies import shard_for

    url = dynamodb_local.endpoint_url
    data_table, metadata_table = sandbox_tables
    key = f"DUP#{uuid.uuid4().hex[:6]}"
    moved = next(f"m{i}" for i in range(1000) if shard_for(f"m{i}", 4) != shard_for(f"m{i}", 8))
    events = [
        Event(key=key, id=moved, ts="2013-01-01T10:00:00Z", data={"dest": "ORD", "n": [1, 2]}),
        Event(key=key, id="other", ts="2013-01-01T11:00:00Z", data={"dest": "SFO"}),
    ]
    # Given both events written at N = 4, the key resized to 8, and both redelivered
    ds = Dynashard(DynashardConfig(data_table, metadata_table), client=local_client(url))
    ds.set_shard_count(key, 4)
    assert all(o.ok for o in ds.put_events(events))
    ds.set_shard_count(key, 8)
    ds.metadata.invalidate(key)
    assert all(o.ok for o in ds.put_events(events))
    stored = 2 if shard_for("other", 4) == shard_for("other", 8) else 3
    # When counted: every copy is seen, each event once
    counted = cli(url, sandbox_tables, "count", key, "--json")
    assert counted.exit_code == 0, counted.output
    doc = json.loads(counted.output)
    assert (doc["distinct"], doc["stored"], doc["shards_read"]) == (2, stored + 1, 8)
    # When compacted (a dry run first): the extra copies go, the ones N = 8 chooses stay
    dry = json.loads(cli(url, sandbox_tables, "compact", key, "--dry-run", "--json").output)
    assert len(dry["would_delete"]) == stored - 1 and dry["deleted"] == []
    done = cli(url, sandbox_tables, "compact", key, "--json")
    assert done.exit_code == 0, done.output
    result = json.loads(done.output)
    assert result["skipped"] == [] and len(result["deleted"]) == stored - 1
    assert {d["kept"] for d in result["deleted"]} <= {
        f"{key}#{shard_for(moved, 8)}",
        f"{key}#{shard_for('other', 8)}",
    }
    after = json.loads(cli(url, sandbox_tables, "count", key, "--json").output)
    assert (after["distinct"], after["stored"], after["duplicates"]) == (2, 2, 0)
    assert [e["id"] for e in ds.query_events(key).items] == [moved, "other"]
    ds.close()


def test_hot_against_dynamodb_local_says_it_is_not_the_emulator(
    dynamodb_local: DynamoDBLocal, sandbox_tables: tuple[str, str]
) -> None:
    result = cli(dynamodb_local.endpoint_url, sandbox_tables, "hot")
    assert result.exit_code == ExitCode.ERROR
    assert "did not answer as the partition emulator" in result.output


# --- python -m sandbox up, then dynashard against it --------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_sandbox_up_prints_endpoints_and_env_and_the_commands_work_against_it() -> None:
    port, emulator_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DYNASHARD_")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sandbox",
            "up",
            "--emulator",
            "--port",
            str(port),
            "--ddb-port",
            "0",
            "--emulator-port",
            str(emulator_port),
            "--scale",
            "0.05",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:
            lines.append(line)
            if "/shards/" in line:
                break
        exports = dict(re.findall(r"^export (\w+)=(\S+)$", "".join(lines), flags=re.MULTILINE))
        # the variable every AWS SDK reads, so the user's own boto3 code reaches it too
        assert exports["AWS_ENDPOINT_URL_DYNAMODB"] == f"http://127.0.0.1:{emulator_port}"
        assert not any(name == "DYNASHARD_DYNAMODB_ENDPOINT" for name in exports)
        assert any(line.startswith("Emulator:") for line in lines), lines
        # The printed environment is all the command needs
        resized = runner.invoke(app, ["resize", "DEPARTURES#JFK", "4"], env=exports)
        assert resized.exit_code == 0, resized.output
        status = runner.invoke(app, ["status", "DEPARTURES#JFK", "--json"], env=exports)
        assert json.loads(status.output)["number_of_shards"] == 4
        hot = runner.invoke(app, ["hot", "--json"], env=exports)
        assert hot.exit_code == 0, hot.output
        assert json.loads(hot.output)["source"].startswith("partition emulator")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
