"""The local sandbox: DynamoDB Local launcher, tables, event builders, HTTP gateway, serve."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestServer

from infra.table_specs import ALL_TABLES, DATA_TABLE
from sandbox.engines.dynamodb_local import (
    DynamoDBLocal,
    DynamoDBLocalNotInstalledError,
    DynamoDBLocalStartError,
    JavaNotFoundError,
    SandboxError,
    free_port,
)
from sandbox.env_vars import local_twin
from sandbox.local_aws.aws_events import (
    api_gateway_event,
    batch_item_failures,
    kinesis_event,
    kinesis_record,
    sqs_event,
    sqs_record,
)
from sandbox.local_aws.gateway import (
    INGEST_API_HANDLER,
    QUERY_HANDLER,
    Gateway,
    make_app,
    match_route,
    twin_routes,
)
from sandbox.local_aws.lambda_runtime import API_RESOLVER_LOCK, LocalFunction
from sandbox.tables import create_tables, delete_tables

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


# --- launcher ------------------------------------------------------------------------------
def test_session_instance_answers_list_tables(dynamodb_local: DynamoDBLocal) -> None:
    assert dynamodb_local.running
    assert dynamodb_local.endpoint_url.startswith("http://127.0.0.1:")
    assert "TableNames" in dynamodb_local.client().list_tables()


def test_launcher_stops_the_process_on_exit_even_after_an_error() -> None:
    ddb = DynamoDBLocal()
    with pytest.raises(RuntimeError, match="boom"), ddb:
        proc = ddb._proc
        assert proc is not None and proc.poll() is None
        raise RuntimeError("boom")
    assert proc.poll() is not None, "the java process outlived the with block"
    assert not ddb.running
    with pytest.raises(SandboxError):
        _ = ddb.endpoint_url


def test_persistent_db_path_keeps_tables_across_restarts(tmp_path: Path) -> None:
    with DynamoDBLocal(in_memory=False, db_path=tmp_path) as ddb:
        create_tables(ddb.client(), specs=[DATA_TABLE])
    assert any(tmp_path.iterdir()), "no database file written under -dbPath"
    with DynamoDBLocal(in_memory=False, db_path=tmp_path) as ddb:
        assert DATA_TABLE.default_name in ddb.client().list_tables()["TableNames"]


def test_in_memory_instances_start_empty() -> None:
    with DynamoDBLocal() as ddb:
        assert ddb.client().list_tables()["TableNames"] == []


def test_port_already_taken_is_a_clear_start_error() -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen(1)
        port = blocker.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(DynamoDBLocalStartError, match="exited"):
            DynamoDBLocal(port=port, startup_timeout_s=30).start()
        assert time.monotonic() - started < 25, "an early exit must not wait for the timeout"


def test_missing_npm_package_is_reported(tmp_path: Path) -> None:
    with (
        pytest.raises(DynamoDBLocalNotInstalledError, match="npm ci"),
        DynamoDBLocal(root=tmp_path),
    ):
        pass


def test_missing_java_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JavaNotFoundError, match="Java 17"), DynamoDBLocal():
        pass


def test_db_path_with_in_memory_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="db_path"):
        DynamoDBLocal(in_memory=True, db_path=tmp_path)


# --- tables --------------------------------------------------------------------------------
def test_create_tables_matches_the_infra_specs(dynamodb_local: DynamoDBLocal) -> None:
    client = dynamodb_local.client()
    names = create_tables(client, suffix="-spec-check", exist_ok=False)
    try:
        assert set(names) == {spec.logical_id for spec in ALL_TABLES}
        for spec in ALL_TABLES:
            table = client.describe_table(TableName=names[spec.logical_id])["Table"]
            assert table["TableStatus"] == "ACTIVE"
            keys = {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]}
            expected = {spec.partition_key: "HASH"}
            if spec.sort_key:
                expected[spec.sort_key] = "RANGE"
            assert keys == expected
            assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
            gsis = {g["IndexName"]: g for g in table.get("GlobalSecondaryIndexes", [])}
            assert set(gsis) == {index.name for index in spec.indexes}
            for index in spec.indexes:
                assert gsis[index.name]["IndexStatus"] == "ACTIVE"
                assert gsis[index.name]["Projection"]["ProjectionType"] == "ALL"
        # exist_ok: a second call leaves them be; without it, it fails.
        assert create_tables(client, suffix="-spec-check") == names
        with pytest.raises(client.exceptions.ResourceInUseException):
            create_tables(client, suffix="-spec-check", exist_ok=False)
    finally:
        delete_tables(client, names.values())
    assert not set(names.values()) & set(client.list_tables()["TableNames"])


# --- event builders --------------------------------------------------------------------------
def test_api_gateway_event_has_the_rest_proxy_shape() -> None:
    event = api_gateway_event(
        "get",
        "/counters/CARRIER%23UA",
        resource="/counters/{name}",
        path_parameters={"name": "CARRIER#UA"},
        query={"a": ["1", "2"], "b": "x"},
        headers={"Accept": "application/json"},
    )
    assert event["httpMethod"] == "GET"
    assert event["resource"] == "/counters/{name}"
    assert event["queryStringParameters"] == {"a": "2", "b": "x"}
    assert event["multiValueQueryStringParameters"] == {"a": ["1", "2"], "b": ["x"]}
    assert event["multiValueHeaders"]["Accept"] == ["application/json"]
    assert event["pathParameters"] == {"name": "CARRIER#UA"}
    assert event["body"] is None and event["isBase64Encoded"] is False
    ctx = event["requestContext"]
    assert ctx["stage"] == "local" and ctx["path"] == "/local/counters/CARRIER%23UA"
    assert ctx["requestId"] and ctx["identity"]["sourceIp"] == "127.0.0.1"

    posted = api_gateway_event("POST", "/events", body={"k": 1})
    assert json.loads(posted["body"]) == {"k": 1}
    assert posted["headers"]["Content-Type"] == "application/json"
    binary = api_gateway_event("POST", "/events", body=b"\xff\x00")
    assert binary["isBase64Encoded"] is True
    assert base64.b64decode(binary["body"]) == b"\xff\x00"


def test_sqs_and_kinesis_events_have_the_lambda_shape() -> None:
    record = sqs_record({"id": "e1"}, message_id="m-1", receive_count=3)
    event = sqs_event([record])
    rec = event["Records"][0]
    assert rec["messageId"] == "m-1" and json.loads(rec["body"]) == {"id": "e1"}
    assert rec["attributes"]["ApproximateReceiveCount"] == "3"
    assert rec["eventSource"] == "aws:sqs" and rec["eventSourceARN"].startswith("arn:aws:sqs:")
    assert rec["receiptHandle"] and len(rec["md5OfBody"]) == 32

    k1, k2 = (
        kinesis_record({"id": "e1"}, partition_key="p"),
        kinesis_record(b"x", partition_key="p"),
    )
    kin = kinesis_event([k1, k2])["Records"]
    assert json.loads(base64.b64decode(kin[0]["kinesis"]["data"])) == {"id": "e1"}
    assert int(kin[1]["kinesis"]["sequenceNumber"]) > int(kin[0]["kinesis"]["sequenceNumber"])
    assert kin[0]["eventID"].endswith(kin[0]["kinesis"]["sequenceNumber"])
    assert kin[0]["eventSource"] == "aws:kinesis"

    assert batch_item_failures(None) == set()
    assert batch_item_failures({"batchItemFailures": [{"itemIdentifier": "m-1"}]}) == {"m-1"}


def test_route_matching_decodes_parameters_and_tells_405_from_404() -> None:
    routes = twin_routes(local_twin())  # the template's API
    route, params, _ = match_route("GET", "/counters/CARRIER%23UA", routes)
    assert route is not None and route.handler == QUERY_HANDLER
    assert params == {"name": "CARRIER#UA"}
    route, _, _ = match_route("POST", "/counters/X", routes)
    assert route is not None and route.handler == INGEST_API_HANDLER
    route, params, _ = match_route("PUT", "/index/TAIL%23NUM/layout", routes)
    assert route is not None and route.handler == INGEST_API_HANDLER
    assert (route.resource, params) == ("/index/{key}/layout", {"key": "TAIL#NUM"})
    route, _, _ = match_route("POST", "/index/TAILNUM", routes)
    assert route is not None and route.handler == INGEST_API_HANDLER
    route, _, _ = match_route("GET", "/index/TAILNUM", routes)
    assert route is not None and route.handler == QUERY_HANDLER
    assert match_route("DELETE", "/index/TAILNUM", routes)[0::2] == (None, True)
    assert match_route("DELETE", "/events", routes)[0::2] == (None, True)
    assert match_route("GET", "/nowhere", routes)[0::2] == (None, False)


# --- gateway with the real handlers ------------------------------------------------------
async def _roundtrip(requests: list[tuple[str, str, Any, dict[str, str]]]) -> list[tuple[int, Any]]:
    server = TestServer(make_app(max_workers=4))
    await server.start_server()
    out: list[tuple[int, Any]] = []
    try:
        async with ClientSession() as session:
            for method, path, body, headers in requests:
                url = str(server.make_url("")) + path  # keep %23 exactly as a client sends it
                async with session.request(method, url, json=body, headers=headers) as resp:
                    text = await resp.text()
                    out.append((resp.status, json.loads(text) if text else None))
    finally:
        await server.close()
    return out


def test_gateway_round_trip_through_the_real_handlers(function_env: dict[str, str]) -> None:
    event = {"key": "GW#1", "id": "e-1", "ts": "2013-01-01T10:15:00Z", "data": {"n": 1}}
    batch = {
        "events": [
            {"key": "GW#1", "id": f"e-{i}", "ts": f"2013-01-01T1{i}:00:00Z", "data": {"n": i}}
            for i in range(2, 6)
        ]
    }
    results = asyncio.run(
        _roundtrip(
            [
                ("POST", "/events", event, {}),
                ("POST", "/events", batch, {}),
                ("GET", "/events?key=GW%231&limit=2&order=desc", None, {}),
                ("POST", "/counters/CARRIER%23UA", {"by": 5}, {}),
                ("POST", "/counters/CARRIER%23UA", {"by": 7}, {}),
                ("GET", "/counters/CARRIER%23UA", None, {}),
                ("GET", "/shards/GW%231", None, {}),
                ("POST", "/events", {"key": "GW#1", "id": "x", "ts": "not a time"}, {}),
                ("DELETE", "/events", None, {}),
                ("GET", "/nowhere", None, {}),
            ]
        )
    )
    (
        (s1, b1),
        (s2, b2),
        (s3, b3),
        (s4, _),
        (s5, _),
        (s6, b6),
        (s7, b7),
        (s8, b8),
        (s9, _),
        (
            s10,
            _,
        ),
    ) = results
    assert (s1, b1["written"]) == (200, 1)
    assert (s2, b2["written"]) == (200, 4)
    assert s3 == 200
    assert [i["id"] for i in b3["items"]] == ["e-5", "e-4"]
    assert b3["cursor"], "a page of 2 out of 5 must carry a cursor"
    assert b3["items"][0]["ts"] == "2013-01-01T15:00:00.000000Z"
    assert (s4, s5) == (200, 200)
    assert s6 == 200 and b6["name"] == "CARRIER#UA" and b6["value"] == 12
    assert s7 == 200 and b7["number_of_shards"] >= 1
    assert s8 == 400 and "ts" in json.dumps(b8)
    assert (s9, s10) == (405, 404)


def test_gateway_follows_cursors_to_the_end(function_env: dict[str, str]) -> None:
    events = [
        {"key": "GW#PAGES", "id": f"p-{i:02d}", "ts": f"2013-02-01T00:{i:02d}:00Z"}
        for i in range(23)
    ]

    async def run() -> list[str]:
        server = TestServer(make_app())
        await server.start_server()
        ids: list[str] = []
        try:
            async with ClientSession() as session:
                base = str(server.make_url(""))
                async with session.post(f"{base}/events", json={"events": events}) as resp:
                    assert resp.status == 200
                cursor = None
                while True:
                    url = f"{base}/events?key=GW%23PAGES&limit=5"
                    params = {"cursor": cursor} if cursor else None
                    async with session.get(url, params=params) as resp:
                        assert resp.status == 200
                        body = await resp.json()
                    ids += [i["id"] for i in body["items"]]
                    cursor = body["cursor"]
                    if not cursor:
                        return ids
        finally:
            await server.close()

    assert asyncio.run(run()) == [e["id"] for e in events]


def test_gateway_maps_a_handler_crash_to_502() -> None:
    def crash(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("handler bug")

    def not_a_proxy_response(event: dict[str, Any], context: Any) -> Any:
        return "oops"

    async def run() -> list[int]:
        server = TestServer(
            make_app({QUERY_HANDLER: crash, INGEST_API_HANDLER: not_a_proxy_response})
        )
        await server.start_server()
        try:
            async with ClientSession() as session:
                base = str(server.make_url(""))
                async with session.get(f"{base}/events?key=A") as r1:
                    first = r1.status
                async with session.post(f"{base}/events", json={}) as r2:
                    second = r2.status
            return [first, second]
        finally:
            await server.close()

    assert asyncio.run(run()) == [502, 502]


# --- python -m sandbox up -------------------------------------------------------------------
@pytest.fixture
def serve_process() -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DYNASHARD_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "up", "--port", str(port), "--ddb-port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_serve_prints_curl_examples_answers_and_stops_on_ctrl_c(
    serve_process: tuple[subprocess.Popen[str], int],
) -> None:
    proc, port = serve_process
    assert proc.stdout is not None
    lines: list[str] = []
    # Read until the last curl example.
    for line in proc.stdout:
        lines.append(line)
        if "/shards/" in line:
            break
    assert any(f"http://127.0.0.1:{port}/events" in line for line in lines), lines
    ddb_line = next(line for line in lines if line.startswith("DynamoDB Local"))
    match = re.search(r"http://127\.0\.0\.1:(\d+)", ddb_line)
    assert match, ddb_line
    ddb_port = int(match.group(1))

    # The examples are printed once the gateway listens: no waiting needed. Nothing is
    # written yet, so the key has no metadata: a 404 naming it (issue 39), not N=1.
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/shards/DEPARTURES%23JFK")
    assert missing.value.code == 404
    assert json.loads(missing.value.read())["field"] == "key"

    # An event sent to the printed queue and one put on the stream reach the table
    # through the pollers and the ingest function.
    sources_line = next(line for line in lines if line.startswith("SQS, Kinesis"))
    found = re.search(r"(http://\S+)\s+queue: (\S+)\s+stream: (\S+)", sources_line)
    assert found, sources_line
    endpoint, queue_url, stream = found.groups()
    from sandbox.engines.moto_server import aws_client

    sent = [
        {"key": "SERVE#Q", "id": f"e{i}", "ts": f"2013-01-01T00:0{i}:00Z", "data": {}}
        for i in range(2)
    ]
    aws_client("sqs", endpoint).send_message(QueueUrl=queue_url, MessageBody=json.dumps(sent[0]))
    aws_client("kinesis", endpoint).put_record(
        StreamName=stream, PartitionKey="q", Data=json.dumps(sent[1]).encode()
    )
    deadline = time.monotonic() + 60
    ids: list[str] = []
    while time.monotonic() < deadline and len(ids) < 2:
        url = f"http://127.0.0.1:{port}/events?key=SERVE%23Q&limit=10&order=asc"
        with urllib.request.urlopen(url) as resp:
            ids = [item["id"] for item in json.loads(resp.read())["items"]]
        time.sleep(0.2)
    assert ids == ["e0", "e1"]

    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "stopped" in out
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", ddb_port), timeout=1):
        pass  # DynamoDB Local is gone too


async def _concurrent_counters(n: int) -> tuple[list[tuple[int, Any]], dict[str, int]]:
    server = TestServer(make_app(max_workers=8))
    await server.start_server()
    base = str(server.make_url(""))
    try:
        async with ClientSession() as session:

            async def post(i: int) -> tuple[int, Any]:
                url = f"{base}/counters/CONC%23{i}"
                headers = {"Idempotency-Key": f"conc-{i}"}
                async with session.post(url, json={"by": i + 1}, headers=headers) as resp:
                    return resp.status, await resp.json()

            posted = await asyncio.gather(*(post(i) for i in range(n)))
            values: dict[str, int] = {}
            for i in range(n):
                async with session.get(f"{base}/counters/CONC%23{i}") as resp:
                    values[f"CONC#{i}"] = (await resp.json())["value"]
    finally:
        await server.close()
    return list(posted), values


def test_concurrent_requests_each_run_with_their_own_event(function_env: dict[str, str]) -> None:
    # Given 24 increments of 24 different counters, sent at once to 8 invocation threads
    posted, values = asyncio.run(_concurrent_counters(24))
    # Then each answer names its own counter and amount, and each counter holds its own
    # amount: no invocation saw another's path, body or Idempotency-Key
    assert [(s, b["name"], b["by"], b["applied"]) for s, b in posted] == [
        (200, f"CONC#{i}", i + 1, True) for i in range(24)
    ]
    assert values == {f"CONC#{i}": i + 1 for i in range(24)}


@pytest.mark.parametrize("ref", [INGEST_API_HANDLER, QUERY_HANDLER])
def test_the_gateway_serializes_every_resolver_handler(ref: str) -> None:
    # The race above has a narrow window, so the wiring that closes it is pinned too:
    # each route's function runs in environments of its own, one invocation at a time,
    # because Powertools keeps the resolver's current event on a class attribute.
    handler = Gateway().handler_for(ref)
    assert isinstance(handler, LocalFunction) and handler.ref == ref
    assert handler._serialize_with is API_RESOLVER_LOCK
