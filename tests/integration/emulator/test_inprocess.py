"""The in-process path answers, throttles and counts exactly like the HTTP emulator.

The same script of requests goes through a fresh HTTP emulator and through a fresh
in-process one (same configuration, same manual clock readings); every answer and
every figure must be identical, the keys' prefix aside.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sandbox.emulator import EmulatorConfig, EmulatorServer, InProcessEmulator, PartitionEmulator
from sandbox.emulator.limits import Operation, Resource
from sandbox.engines.dynamodb_local import DynamoDBLocal, local_client
from tests.integration.emulator.conftest import REGION, SCALE, T0, ManualClock

pytestmark = pytest.mark.integration


def outcome(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """What a client sees of one call, request ids and retry timings left out."""
    try:
        answer = call()
    except ClientError as exc:
        r = exc.response
        return {
            "error": r["Error"]["Code"],
            "message": r["Error"].get("Message"),
            "status": r["ResponseMetadata"]["HTTPStatusCode"],
            "retries": r["ResponseMetadata"].get("RetryAttempts"),
            "reasons": r.get("ThrottlingReasons"),
            "cancellations": r.get("CancellationReasons"),
        }
    meta = answer.pop("ResponseMetadata")
    return {"status": meta["HTTPStatusCode"], "retries": meta["RetryAttempts"], **answer}


def script(client: Any, table: str, p: str, clock: ManualClock) -> list[dict[str, Any]]:
    """A mix of every charged operation, over and under the key's limits."""

    def put(pk: str, sk: str, **extra: Any) -> dict[str, Any]:
        item = {"PK": {"S": p + pk}, "SK": {"S": sk}, **extra}
        return outcome(lambda: client.put_item(TableName=table, Item=item))

    seen = [put("hot", f"{i}") for i in range(12)]  # 10 admitted, 2 throttled
    seen.append(put("warm", "big", data={"S": "x" * 2500}))  # 3 WCU
    batch = [
        {"PutRequest": {"Item": {"PK": {"S": p + "b"}, "SK": {"S": f"{i:02d}"}}}} for i in range(14)
    ]
    seen.append(outcome(lambda: client.batch_write_item(RequestItems={table: batch})))
    gsi = {"GSI1PK": {"S": p + "g"}, "GSI1SK": {"S": "s"}}
    seen += [put(f"spread{i}", "s", **gsi) for i in range(11)]  # the GSI key throttles
    query = {
        "TableName": table,
        "KeyConditionExpression": "PK = :p",
        "ExpressionAttributeValues": {":p": {"S": p + "hot"}},
    }
    seen += [outcome(lambda: client.query(**query)) for _ in range(3)]
    key = {"PK": {"S": p + "warm"}, "SK": {"S": "big"}}
    seen += [
        outcome(lambda: client.get_item(TableName=table, Key=key, ConsistentRead=True))
        for _ in range(31)
    ]
    keys = [
        {"PK": {"S": p + "warm"}, "SK": {"S": "big"}},
        {"PK": {"S": p + "b"}, "SK": {"S": "00"}},
    ]
    seen.append(outcome(lambda: client.batch_get_item(RequestItems={table: {"Keys": keys}})))
    clock.now += 1.0
    tx = [
        {"Put": {"TableName": table, "Item": {"PK": {"S": p + "tx"}, "SK": {"S": f"{i}"}}}}
        for i in range(6)
    ]
    seen.append(outcome(lambda: client.transact_write_items(TransactItems=tx)))  # 12 > 10
    seen.append(outcome(lambda: client.transact_write_items(TransactItems=tx[:4])))
    seen.append(
        outcome(
            lambda: client.put_item(
                TableName=table,
                Item={"PK": {"S": p + "hot"}, "SK": {"S": "0"}},
                ConditionExpression="attribute_not_exists(PK)",
            )
        )
    )
    return seen


def figures(emulator: PartitionEmulator, table: str) -> dict[str, Any]:
    resource = Resource(table)
    views = {
        op.value: emulator.metrics.contributors(
            "ACCESSED_AND_THROTTLED_KEYS", op, resource, T0 - 60, T0 + 60, n=50
        )
        for op in (Operation.WRITE, Operation.READ)
    }
    return {
        "metrics": sorted(emulator.metrics.snapshot(), key=json.dumps),
        "reasons": emulator.metrics.throttle_reasons(),
        "contributors": {
            op: {name: [dataclasses.asdict(r) for r in rows] for name, rows in v.items()}
            for op, v in views.items()
        },
        "unparsed": dict(emulator.unparsed),
    }


def normalized(value: Any, prefix: str) -> Any:
    return json.loads(json.dumps(value, default=repr).replace(prefix, "P/"))


def test_same_requests_get_the_same_answers_and_figures_over_both_paths(
    dynamodb_local: DynamoDBLocal, data_table: str
) -> None:
    # Given a fresh HTTP emulator and a fresh in-process one, same configuration
    http_clock, local_clock = ManualClock(), ManualClock()
    with EmulatorServer(
        dynamodb_local.endpoint_url, EmulatorConfig(scale=SCALE, clock=http_clock)
    ) as server:
        http_client = local_client(server.endpoint_url, region_name=REGION, total_max_attempts=1)
        # When the same script runs through each (its own keys, so DynamoDB Local's
        # answers do not depend on the order)
        over_http = script(http_client, data_table, "H/", http_clock)
        http_figures = figures(server.emulator, data_table)
    in_process = InProcessEmulator(
        dynamodb_local.endpoint_url, EmulatorConfig(scale=SCALE, clock=local_clock)
    )
    local = in_process.client(region_name=REGION, total_max_attempts=1)
    in_proc = script(local, data_table, "L/", local_clock)
    local_figures = figures(in_process.emulator, data_table)
    # Then every answer is the same, throttling errors included
    assert normalized(in_proc, "L/") == normalized(over_http, "H/")
    throttled = [o for o in over_http if o.get("error") == "ProvisionedThroughputExceededException"]
    assert len(throttled) >= 4  # the script did reach the limits
    assert any(o.get("UnprocessedItems") for o in over_http)
    assert any(o.get("error") == "TransactionCanceledException" for o in over_http)
    # And every figure: metrics, throttle reasons, Contributor Insights views
    assert normalized(local_figures, "L/") == normalized(http_figures, "H/")
    assert local_figures["reasons"]["TableWriteKeyRangeThroughputExceeded"] >= 2


@pytest.mark.parametrize("mode", ["standard", "legacy", "adaptive"])
def test_botocore_retries_a_throttled_request_as_it_does_over_http(
    dynamodb_local: DynamoDBLocal, data_table: str, mode: Any
) -> None:
    def retries(client: Any, emulator: PartitionEmulator) -> tuple[Any, float]:
        item = {"PK": {"S": f"retry-{mode}-{uuid.uuid4().hex[:6]}"}, "SK": {"S": "s"}}
        for i in range(10):
            client.put_item(TableName=data_table, Item={**item, "SK": {"S": f"{i}"}})
        with pytest.raises(ClientError) as info:
            client.put_item(TableName=data_table, Item=item)
        throttles = emulator.metrics.throttle_reasons()["TableWriteKeyRangeThroughputExceeded"]
        return info.value.response["ResponseMetadata"]["RetryAttempts"], throttles

    config = {"scale": SCALE, "clock": ManualClock()}
    with EmulatorServer(dynamodb_local.endpoint_url, EmulatorConfig(**config)) as server:
        http_client = local_client(
            server.endpoint_url, region_name=REGION, retry_mode=mode, total_max_attempts=3
        )
        over_http = retries(http_client, server.emulator)
    in_process = InProcessEmulator(dynamodb_local.endpoint_url, EmulatorConfig(**config))
    client = in_process.client(region_name=REGION, retry_mode=mode, total_max_attempts=3)
    # Each attempt is throttled and charged again: 3 attempts, 3 throttle events
    assert retries(client, in_process.emulator) == over_http == (2, 3)


def test_attach_refuses_a_client_of_another_endpoint_and_detach_restores_direct(
    dynamodb_local: DynamoDBLocal, data_table: str
) -> None:
    config = EmulatorConfig(scale=SCALE, clock=ManualClock())
    in_process = InProcessEmulator(dynamodb_local.endpoint_url, config)
    with pytest.raises(ValueError, match="bound to"):
        in_process.attach(local_client("http://127.0.0.1:9", region_name=REGION))
    client = in_process.client(region_name=REGION, total_max_attempts=1)
    in_process.attach(client)  # attaching twice registers once
    item = {"PK": {"S": "detach"}, "SK": {"S": "s"}}
    for _ in range(10):
        client.put_item(TableName=data_table, Item=item)
    with pytest.raises(client.exceptions.ProvisionedThroughputExceededException):
        client.put_item(TableName=data_table, Item=item)
    in_process.detach(client)
    client.put_item(TableName=data_table, Item=item)  # straight to DynamoDB Local
    assert in_process.emulator.metrics.throttle_reasons() == {
        "TableWriteKeyRangeThroughputExceeded": 1
    }


def test_install_on_a_session_routes_the_clients_it_creates_later(
    dynamodb_local: DynamoDBLocal, data_table: str
) -> None:
    import boto3

    in_process = InProcessEmulator(dynamodb_local.endpoint_url, EmulatorConfig(scale=SCALE))
    session = boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    in_process.install(session._session)  # type: ignore[attr-defined]
    client = session.client("dynamodb", endpoint_url=dynamodb_local.endpoint_url)
    client.put_item(TableName=data_table, Item={"PK": {"S": "installed"}, "SK": {"S": "s"}})
    views = in_process.emulator.metrics.contributors(
        "ACCESSED_AND_THROTTLED_KEYS", Operation.WRITE, Resource(data_table), 0, 4e9
    )
    assert [r.key for r in views["most_accessed"]] == ["installed"]
