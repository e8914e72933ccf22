"""``python -m sandbox up``'s options and lines (issue 39): ports, reuse, AWS CLI v1 and v2."""

from __future__ import annotations

import argparse
import shlex
import subprocess
from pathlib import Path

import pytest

from sandbox.engines.dynamodb_local import SandboxError
from sandbox.serve import DYNAMODB_LOCAL_PORT, aws_cli_examples, dynamodb_endpoint, parse_args

#: Options of the AWS CLI v2 that v1 does not have (v1 stops with "Unknown options").
V2_ONLY = ("--cli-binary-format", "--cli-auto-prompt", "--no-cli-pager", "--cli-input-yaml")


def test_dynamodb_local_listens_on_its_own_default_port() -> None:
    assert parse_args([]).ddb_port == DYNAMODB_LOCAL_PORT == 8000
    assert parse_args(["--ddb-port", "0"]).ddb_port == 0
    assert parse_args(["--dynamodb-endpoint", "http://127.0.0.1:8000"]).dynamodb_endpoint == (
        "http://127.0.0.1:8000"
    )


@pytest.mark.parametrize(
    "argv", [["--db-path", "data"], ["--ddb-port", "8002"]], ids=["db-path", "ddb-port"]
)
def test_dynamodb_endpoint_with_local_settings_is_refused(argv: list[str]) -> None:
    args: argparse.Namespace = parse_args(["--dynamodb-endpoint", "http://127.0.0.1:8000", *argv])
    with pytest.raises(SandboxError, match="--ddb-port and --db-path"), dynamodb_endpoint(args):
        pass


@pytest.mark.parametrize("fifo", [False, True])
def test_the_aws_cli_lines_use_only_options_of_v1_and_v2(fifo: bool) -> None:
    lines = aws_cli_examples("http://127.0.0.1:5000", "http://q/ingest", "s", fifo=fifo)
    aws = [shlex.split(line) for line in lines.splitlines() if line.startswith("aws ")]
    assert [argv[3:5] for argv in aws] == [["sqs", "send-message"], ["kinesis", "put-record"]]
    for argv in aws:
        assert argv[1:3] == ["--endpoint-url", "http://127.0.0.1:5000"]
        assert not set(argv) & set(V2_ONLY), argv
    # the record's data is a file read as raw bytes by both (fileb://), never inline
    put = aws[1]
    assert put[put.index("--data") + 1] == "fileb://event.json"


def test_the_printed_file_holds_the_event_exactly(tmp_path: Path) -> None:
    lines = aws_cli_examples("http://127.0.0.1:5000", "http://q/ingest", "s").splitlines()
    (write,) = [line for line in lines if line.startswith("printf ")]
    subprocess.run(["sh", "-c", write], cwd=tmp_path, check=True)
    event = (tmp_path / "event.json").read_text(encoding="utf-8")
    assert event.startswith('{"key":"DEPARTURES#JFK"') and event.endswith("}")
    import json

    assert json.loads(event)["id"] == "2013-01-01-AA-1141"
