"""``python -m sandbox up --dynamodb-endpoint URL`` reuses a running DynamoDB Local (issue 39).

The sandbox creates its tables there if missing, serves the gateway and the functions
against it, prints ``AWS_ENDPOINT_URL_DYNAMODB`` (the variable every AWS SDK reads) and
leaves it running when it stops. Without the option, a taken ``--ddb-port`` is refused,
naming the option that would reuse what listens there.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from sandbox.engines.dynamodb_local import DynamoDBLocal, local_client

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sandbox(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYNASHARD_", "AWS_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "sandbox", "up", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_up_reuses_a_running_dynamodb_local_and_leaves_it_running(
    dynamodb_local: DynamoDBLocal,
) -> None:
    # Given a DynamoDB Local already running, without the sandbox's tables
    url = dynamodb_local.endpoint_url
    client = local_client(url)
    for table in ("dynashard-data", "dynashard-shards"):
        if table in client.list_tables()["TableNames"]:
            client.delete_table(TableName=table)
    # When the sandbox is started on it
    port = _free_port()
    proc = _sandbox("--port", str(port), "--dynamodb-endpoint", url)
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:
            lines.append(line)
            if "/shards/" in line:
                break
        text = "".join(lines)
        # Then it says so, exports the SDKs' variable for it, and created the tables there
        assert f"DynamoDB Local: {url}" in text and "reused, left running" in text, text
        exports = dict(re.findall(r"^export (\w+)=(\S+)$", text, flags=re.MULTILINE))
        assert exports["AWS_ENDPOINT_URL_DYNAMODB"] == url
        assert {"dynashard-data", "dynashard-shards"} <= set(client.list_tables()["TableNames"])
        # And the gateway's functions write to it
        event = {"key": "REUSE#K", "id": "e1", "ts": "2013-01-01T00:00:00Z", "data": {}}
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/events",
            data=json.dumps(event).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request) as answer:
            assert answer.status == 200
        scanned = client.scan(TableName="dynashard-data")["Items"]
        assert any(item["key"]["S"] == "REUSE#K" for item in scanned)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for table in ("dynashard-data", "dynashard-shards"):
            if table in client.list_tables()["TableNames"]:
                client.delete_table(TableName=table)
    # And the DynamoDB Local it reused still answers
    assert "TableNames" in client.list_tables()


def test_a_taken_ddb_port_is_refused_naming_dynamodb_endpoint(
    dynamodb_local: DynamoDBLocal,
) -> None:
    taken = str(dynamodb_local.port)
    proc = _sandbox("--port", str(_free_port()), "--ddb-port", taken)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out
    assert f"port {taken} is taken" in out
    assert f"--dynamodb-endpoint http://127.0.0.1:{taken}" in out


def test_an_endpoint_that_does_not_answer_is_refused() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    proc = _sandbox("--port", str(_free_port()), "--dynamodb-endpoint", url)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out
    assert f"--dynamodb-endpoint {url} did not answer ListTables" in out
