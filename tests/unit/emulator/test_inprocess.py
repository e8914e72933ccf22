"""The in-process emulator's wiring, offline: a fake DynamoDB Local behind botocore's hook.

The integration tests (tests/integration/emulator) hold both paths to the same answers
against DynamoDB Local; these pin the hook itself: what reaches the upstream, what a
throttled request gets back, and the coroutine driver.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse

from sandbox.emulator import EmulatorConfig, InProcessEmulator
from sandbox.emulator import inprocess as module
from sandbox.emulator.inprocess import run_to_completion
from sandbox.engines.dynamodb_local import local_client

UPSTREAM = "http://127.0.0.1:8000"
TABLE = "events"


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_kwargs: Any) -> list[bytes]:
        return [self.data]


class FakeUpstream:
    """Answers DescribeTable (an on-demand table keyed PK/SK) and PutItem ({}); records."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.lengths: list[int] = []

    def send(self, request: AWSPreparedRequest) -> AWSResponse:
        operation = request.headers["X-Amz-Target"].split(".")[-1]
        self.sent.append((operation, json.loads(request.body), dict(request.headers)))
        self.lengths.append(len(request.body))
        if operation == "DescribeTable":
            body: dict[str, Any] = {
                "Table": {
                    "TableName": TABLE,
                    "KeySchema": [
                        {"AttributeName": "PK", "KeyType": "HASH"},
                        {"AttributeName": "SK", "KeyType": "RANGE"},
                    ],
                    "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
                }
            }
        else:
            body = {}
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "r"}
        return AWSResponse(request.url, 200, headers, _Raw(data))


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> FakeUpstream:
    fake = FakeUpstream()
    monkeypatch.setattr(module, "_http_session", lambda *_a, **_k: fake)
    return fake


def test_throttled_put_is_answered_in_process_and_never_sent(upstream: FakeUpstream) -> None:
    # Given a client of DynamoDB Local with the emulator attached (10 WCU/s per key)
    emulator = InProcessEmulator(UPSTREAM, EmulatorConfig(scale=0.01, clock=lambda: 1e9))
    client = emulator.client(total_max_attempts=1)
    item = {"PK": {"S": "hot"}, "SK": {"S": "1"}}
    for _ in range(10):
        client.put_item(TableName=TABLE, Item=item)
    # When the 11th write of the same second arrives
    with pytest.raises(client.exceptions.ProvisionedThroughputExceededException) as info:
        client.put_item(TableName=TABLE, Item=item)
    # Then it is refused with DynamoDB's throttling reason, and only the 10 were sent
    assert info.value.response["ThrottlingReasons"][0]["reason"] == (
        "TableWriteKeyRangeThroughputExceeded"
    )
    sent = [op for op, _, _ in upstream.sent]
    assert sent == ["DescribeTable"] + ["PutItem"] * 10
    # And what was sent is the client's own signed request, with its length
    _, body, headers = upstream.sent[-1]
    assert body == {"TableName": TABLE, "Item": item}
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256")
    assert headers["Content-Length"] == str(upstream.lengths[-1])


def test_requests_to_another_endpoint_are_left_to_botocore(upstream: FakeUpstream) -> None:
    import boto3

    emulator = InProcessEmulator(UPSTREAM, EmulatorConfig(scale=0.01))
    session = boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    emulator.install(session._session)  # type: ignore[attr-defined]
    other = session.client("dynamodb", endpoint_url="http://127.0.0.1:9")
    hooks = other.meta.events
    request = AWSPreparedRequest("POST", "http://127.0.0.1:9/", {}, b"{}", False)
    answers = hooks.emit("before-send.dynamodb.PutItem", request=request)
    assert [answer for _, answer in answers if answer is not None] == []
    assert upstream.sent == []


def test_config_goes_with_a_new_emulator_not_a_shared_one() -> None:
    emulator = InProcessEmulator(UPSTREAM)
    with pytest.raises(ValueError, match="update_limits"):
        InProcessEmulator(config=EmulatorConfig(), emulator=emulator.emulator)
    with pytest.raises(ValueError, match="upstream_url"):
        InProcessEmulator()
    with pytest.raises(ValueError, match="bound to"):
        emulator.attach(local_client("http://127.0.0.1:8001"))


def test_run_to_completion_returns_the_result_and_refuses_a_suspension() -> None:
    async def done() -> int:
        return 7

    assert run_to_completion(done()) == 7

    async def suspends() -> None:
        import asyncio

        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="suspended"):
        run_to_completion(suspends())
