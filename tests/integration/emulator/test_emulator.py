"""The partition emulator in front of DynamoDB Local, driven by boto3.

The emulator's clock is a manual one: buckets refill only when a test advances it, so
every count below is exact and no test sleeps. Each test that drives the emulator with
a boto3 client runs twice: over HTTP, and in process (``EmulatorServer.in_process()``:
a botocore ``before-send`` handler on a client of DynamoDB Local itself).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sandbox.emulator import EmulatorConfig, EmulatorServer, Provisioned
from sandbox.emulator.limits import Operation, Resource
from sandbox.emulator.metrics import (
    CONSUMED_RCU,
    CONSUMED_WCU,
    READ_THROTTLE_EVENTS,
    THROTTLED_REQUESTS,
)
from sandbox.engines.dynamodb_local import DynamoDBLocal, RetryMode, local_client
from tests.integration.emulator.conftest import REGION, SCALE, T0, ManualClock

pytestmark = pytest.mark.integration


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def server(dynamodb_local: DynamoDBLocal, clock: ManualClock) -> Iterator[EmulatorServer]:
    with EmulatorServer(dynamodb_local.endpoint_url, EmulatorConfig(scale=SCALE, clock=clock)) as s:
        yield s


class EmulatorPath:
    """One way to the emulator: over HTTP, or in process (sharing the server's model).

    Either way the test reads figures from ``emulator`` (the server's) and the admin
    routes from ``server``, so both paths are held to the same assertions.
    """

    def __init__(self, name: str, server: EmulatorServer) -> None:
        self.name = name
        self.server = server
        self.emulator = server.emulator
        self.in_process = server.in_process() if name == "in_process" else None

    def client(self, *, mode: RetryMode = "standard", total_max_attempts: int = 1) -> Any:
        if self.in_process is None:
            return make_client(
                self.server.endpoint_url, mode=mode, total_max_attempts=total_max_attempts
            )
        return self.in_process.client(
            region_name=REGION, retry_mode=mode, total_max_attempts=total_max_attempts
        )


@pytest.fixture(params=["http", "in_process"])
def path(request: pytest.FixtureRequest, server: EmulatorServer) -> EmulatorPath:
    return EmulatorPath(request.param, server)


def make_client(url: str, *, mode: RetryMode = "standard", total_max_attempts: int = 1) -> Any:
    """A client signed for :data:`REGION`; botocore retries off unless asked for."""
    return local_client(
        url, region_name=REGION, retry_mode=mode, total_max_attempts=total_max_attempts
    )


def put(client: Any, table: str, pk: str, sk: str, **extra: Any) -> None:
    item = {"PK": {"S": pk}, "SK": {"S": sk}, **extra}
    client.put_item(TableName=table, Item=item)


def arn(table: str, index: str | None = None) -> str:
    base = f"arn:aws:dynamodb:{REGION}:000000000000:table/{table}"
    return base if index is None else f"{base}/index/{index}"


def test_hot_key_is_throttled_with_key_range_reason_and_others_are_not(
    path: EmulatorPath, data_table: str, clock: ManualClock
) -> None:
    client = path.client()
    # Given a hot key that has used its 10 WCU for this second
    for i in range(10):
        put(client, data_table, "hot", f"{i}")
    # When one more write arrives
    with pytest.raises(client.exceptions.ProvisionedThroughputExceededException) as info:
        put(client, data_table, "hot", "x")
    # Then it carries DynamoDB's throttling reason and the table ARN
    response = info.value.response
    assert response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert response["ThrottlingReasons"] == [
        {"reason": "TableWriteKeyRangeThroughputExceeded", "resource": arn(data_table)}
    ]
    # And the emulator counts the throttle event under that reason
    assert path.emulator.metrics.throttle_reasons() == {"TableWriteKeyRangeThroughputExceeded": 1}
    # And another key is unaffected
    put(client, data_table, "cold", "1")
    # And one second later the hot key has 10 WCU again
    clock.now += 1.0
    put(client, data_table, "hot", "y")
    # And the throttled write never reached DynamoDB Local
    direct = make_client(path.emulator.upstream_url)
    key = {"PK": {"S": "hot"}, "SK": {"S": "x"}}
    assert "Item" not in direct.get_item(TableName=data_table, Key=key)


@pytest.mark.parametrize(
    "retries",
    [{"mode": "standard", "total_max_attempts": 3}, {"mode": "legacy", "total_max_attempts": 3}],
)
def test_botocore_retries_the_answer_as_throttling(
    path: EmulatorPath, data_table: str, retries: dict[str, Any]
) -> None:
    client = path.client(**retries)
    for i in range(10):
        put(client, data_table, "retry", f"{i}")
    with pytest.raises(ClientError) as info:
        put(client, data_table, "retry", "x")
    assert info.value.response["ResponseMetadata"]["RetryAttempts"] == 2


def test_batch_write_returns_throttled_part_as_unprocessed_items(
    path: EmulatorPath, data_table: str
) -> None:
    client = path.client()
    requests = [
        {"PutRequest": {"Item": {"PK": {"S": "batch"}, "SK": {"S": f"{i:02d}"}}}} for i in range(25)
    ]
    # When 25 writes to one key arrive in one batch (10 WCU available)
    answer = client.batch_write_item(RequestItems={data_table: requests})
    # Then 15 come back, in the request's own shape, and 10 were written
    unprocessed = answer["UnprocessedItems"][data_table]
    assert unprocessed == requests[10:]
    got = client.query(
        TableName=data_table,
        KeyConditionExpression="PK = :p",
        ExpressionAttributeValues={":p": {"S": "batch"}},
    )
    assert sorted(i["SK"]["S"] for i in got["Items"]) == [f"{i:02d}" for i in range(10)]
    # And when none of a batch can be written, the whole call is throttled
    with pytest.raises(client.exceptions.ProvisionedThroughputExceededException):
        client.batch_write_item(RequestItems={data_table: requests[10:12]})


def test_hot_gsi_partition_throttles_base_table_write(path: EmulatorPath, data_table: str) -> None:
    client = path.client()
    gsi = {"GSI1PK": {"S": "low-cardinality"}, "GSI1SK": {"S": "s"}}
    # Given distinct table keys that all share one GSI partition key
    for i in range(10):
        put(client, data_table, f"spread#{i}", "s", **gsi)
    # When one more write lands on the same GSI partition
    with pytest.raises(client.exceptions.ProvisionedThroughputExceededException) as info:
        put(client, data_table, "spread#10", "s", **gsi)
    # Then the base write is throttled for the index (back-pressure), with its ARN
    assert info.value.response["ThrottlingReasons"] == [
        {"reason": "IndexWriteKeyRangeThroughputExceeded", "resource": arn(data_table, "GSI1")}
    ]
    direct = make_client(path.emulator.upstream_url)
    key = {"PK": {"S": "spread#10"}, "SK": {"S": "s"}}
    assert "Item" not in direct.get_item(TableName=data_table, Key=key)


def test_sharded_gsi_key_spreads_the_same_writes_without_back_pressure(
    path: EmulatorPath, data_table: str
) -> None:
    """The counterpart of the test above, with the writer's GSI1 key shape: the same
    burst of writes to one logical key and time bucket, its GSI1 key sharded 4 ways
    (``{logical}#{bucket}#{shard}``), is served whole; unsharded, it is throttled."""
    from datetime import UTC, datetime

    from dynashard.core.buckets import TimeBucket
    from dynashard.core.keys import gsi1_partition_key, physical_key

    client = path.client()
    ts = datetime(2013, 1, 1, 10, tzinfo=UTC)

    def burst(logical: str, shards: int) -> list[str]:
        reasons = []
        for i in range(16):  # 16 WCU in one second: over one key's 10, under 4 keys' 40
            shard = i % shards
            gsi = {
                "GSI1PK": {"S": gsi1_partition_key(logical, ts, TimeBucket.DAY, shard)},
                "GSI1SK": {"S": f"{i:02d}"},
            }
            try:
                put(client, data_table, physical_key(logical, i % 4), f"{i:02d}", **gsi)
            except client.exceptions.ProvisionedThroughputExceededException as exc:
                reasons.extend(r["reason"] for r in exc.response["ThrottlingReasons"])
        return reasons

    # Given the base keys spread over 4 shards in both cases
    # When the GSI1 key is unsharded, the index throttles the base writes
    unsharded = burst("GSI#HOT", shards=1)
    assert unsharded and set(unsharded) == {"IndexWriteKeyRangeThroughputExceeded"}
    # And when it is sharded like the base key, nothing is throttled
    assert burst("GSI#SPREAD", shards=4) == []


def test_metrics_and_top_keys_match_what_was_sent(
    path: EmulatorPath, data_table: str, clock: ManualClock
) -> None:
    client = path.client()
    throttled = 0
    for i in range(14):
        try:
            put(client, data_table, "m-hot", f"{i}")
        except client.exceptions.ProvisionedThroughputExceededException:
            throttled += 1
    for i in range(3):
        put(client, data_table, "m-warm", f"{i}", data={"S": "x" * 1500})  # 2 WCU each
    emulator, table = path.emulator, Resource(data_table)
    start, end = T0 - 60, T0 + 60
    assert throttled == 4
    assert emulator.metrics.total(CONSUMED_WCU, table, start, end) == 10 + 3 * 2
    assert emulator.metrics.total("WriteKeyRangeThroughputThrottleEvents", table, start, end) == 4
    assert emulator.metrics.total(THROTTLED_REQUESTS, table, start, end) == 4
    views = emulator.metrics.contributors(
        "ACCESSED_AND_THROTTLED_KEYS", Operation.WRITE, table, start, end
    )
    assert [(r.key, r.throttled_events) for r in views["most_throttled"]] == [("m-hot", 4)]
    assert [(r.key, r.consumed_units) for r in views["most_accessed"]] == [
        ("m-hot", 10.0),
        ("m-warm", 6.0),
    ]
    # And the admin route (off the DynamoDB path) says the same
    url = (
        f"{path.server.endpoint_url}/_emulator/contributors?table={data_table}&mode=THROTTLED_KEYS"
    )
    with urllib.request.urlopen(url, timeout=5) as resp:  # loopback only
        body = json.load(resp)
    assert body["most_throttled"][0]["key"] == "m-hot"
    assert body["most_throttled"][0]["throttled_events"] == 4
    assert "most_accessed" not in body


def test_reads_charged_by_bytes_and_throttled_per_key(path: EmulatorPath, data_table: str) -> None:
    client = path.client()
    table = Resource(data_table)
    big = {"S": "x" * 3000}
    for i in range(3):
        put(client, data_table, "r-big", f"{i}", data=big)
    before = path.emulator.metrics.total(CONSUMED_RCU, table, T0 - 60, T0 + 60)
    # An EC Query of three ~3 KB items reads ~9 KB: ceil(9 KB / 4 KB) = 3 RCU, halved
    got = client.query(
        TableName=data_table,
        KeyConditionExpression="PK = :p",
        ExpressionAttributeValues={":p": {"S": "r-big"}},
    )
    assert got["Count"] == 3
    after = path.emulator.metrics.total(CONSUMED_RCU, table, T0 - 60, T0 + 60)
    assert after - before == 1.5
    # 30 RCU/s per key: 30 strongly consistent reads of a small item, then throttled
    put(client, data_table, "r-hot", "1")
    key = {"PK": {"S": "r-hot"}, "SK": {"S": "1"}}
    for _ in range(30):
        client.get_item(TableName=data_table, Key=key, ConsistentRead=True)
    with pytest.raises(client.exceptions.ProvisionedThroughputExceededException) as info:
        client.get_item(TableName=data_table, Key=key, ConsistentRead=True)
    assert info.value.response["ThrottlingReasons"][0]["reason"] == (
        "TableReadKeyRangeThroughputExceeded"
    )
    assert path.emulator.metrics.total(READ_THROTTLE_EVENTS, table, T0 - 60, T0 + 60) == 1


def test_provisioned_table_limit_and_batch_get_unprocessed_keys(
    path: EmulatorPath, data_table: str
) -> None:
    client = path.client()
    path.emulator.update_limits(table_mode=Provisioned(rcu=4, wcu=5))
    for i in range(5):
        put(client, data_table, f"p#{i}", "s")
    with pytest.raises(client.exceptions.ProvisionedThroughputExceededException) as info:
        put(client, data_table, "p#5", "s")
    response = info.value.response
    assert response["ThrottlingReasons"] == [
        {"reason": "TableWriteProvisionedThroughputExceeded", "resource": arn(data_table)}
    ]
    assert "provisioned throughput for the table was exceeded" in response["Error"]["Message"]
    # 4 RCU: 4 strongly consistent keys are read, the other 2 come back unprocessed
    keys = [{"PK": {"S": f"p#{i}"}, "SK": {"S": "s"}} for i in range(5)] + [
        {"PK": {"S": "none"}, "SK": {"S": "s"}}
    ]
    request = {data_table: {"Keys": keys, "ConsistentRead": True}}
    answer = client.batch_get_item(RequestItems=request)
    assert len(answer["Responses"][data_table]) == 4
    assert answer["UnprocessedKeys"][data_table]["Keys"] == keys[4:]
    assert answer["UnprocessedKeys"][data_table]["ConsistentRead"] is True


def test_throttled_transaction_is_cancelled_with_reasons(
    path: EmulatorPath, data_table: str
) -> None:
    client = path.client()
    for i in range(5):
        put(client, data_table, "tx-hot", f"{i}")  # 5 of 10 WCU left

    def action(pk: str, sk: str) -> dict[str, Any]:
        return {"Put": {"TableName": data_table, "Item": {"PK": {"S": pk}, "SK": {"S": sk}}}}

    actions = [action("tx-cold", "1")] + [action("tx-hot", f"t{i}") for i in range(3)]
    # 3 transactional puts on tx-hot cost 6 WCU > 5 left
    with pytest.raises(client.exceptions.TransactionCanceledException) as info:
        client.transact_write_items(TransactItems=actions)
    codes = [r["Code"] for r in info.value.response["CancellationReasons"]]
    assert codes == ["None", "ThrottlingError", "ThrottlingError", "ThrottlingError"]


def test_other_operations_and_errors_pass_through(path: EmulatorPath, data_table: str) -> None:
    client = path.client()
    assert data_table in client.list_tables()["TableNames"]
    put(client, data_table, "c", "1")
    with pytest.raises(client.exceptions.ConditionalCheckFailedException):
        client.put_item(
            TableName=data_table,
            Item={"PK": {"S": "c"}, "SK": {"S": "1"}},
            ConditionExpression="attribute_not_exists(PK)",
        )
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        put(client, "no-such-table", "a", "b")


def test_a_request_the_emulator_cannot_parse_is_counted_reported_and_logged(
    server: EmulatorServer, data_table: str, caplog: pytest.LogCaptureFixture
) -> None:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    # Given a PutItem the emulator cannot plan: its sort key is not an attribute value
    # (boto3 validates its parameters; another client, or a hand-made request, may not)
    body = json.dumps({"TableName": data_table, "Item": {"PK": {"S": "k"}, "SK": "bad"}})
    request = AWSRequest(
        method="POST",
        url=f"{server.endpoint_url}/",
        data=body.encode(),
        headers={
            "X-Amz-Target": "DynamoDB_20120810.PutItem",
            "Content-Type": "application/x-amz-json-1.0",
        },
    )
    SigV4Auth(Credentials("testing", "testing"), "dynamodb", REGION).add_auth(request)
    raw = urllib.request.Request(
        request.url, data=body.encode(), headers=dict(request.headers.items()), method="POST"
    )
    # When it is sent, DynamoDB Local still answers it (it refuses it) ...
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(raw)
    assert info.value.code >= 400  # DynamoDB Local 3.3 answers InternalFailure (500)
    # ... and the emulator counts it, reports it on its metrics route and logs it
    assert server.emulator.unparsed == {"PutItem": 1}
    with urllib.request.urlopen(f"{server.endpoint_url}/_emulator/metrics") as answer:
        assert json.load(answer)["unparsed"] == {"PutItem": 1}
    assert any("could not parse" in r.getMessage() for r in caplog.records)
    # (the guard in tests/conftest.py fails any test that leaves one: this one takes it)
    from sandbox.emulator.core import take_unparsed

    assert take_unparsed() == {"PutItem": 1}
