"""The read path's one-pass parsing: a Query's items as the wire had them (issue 29).

dynashard.dynamodb.raw_items overrides botocore's ``JSONParser._handle_json_body``,
which is not public: the first tests pin the contract it relies on, so that a botocore
release that changes it fails here rather than silently turning the fast path off or
changing what the reader sees. The others compare the fast parser with botocore's own on
the same recorded bodies, through real clients (signing, retries, ``before-send``), and
check that the library's own client has the fast path on.
"""

from __future__ import annotations

import base64
import inspect
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import Binary
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from botocore.parsers import JSONParser, ResponseParserFactory
from moto import mock_aws

from dynashard import Dynashard, DynashardConfig
from dynashard.dynamodb.raw_items import (
    RAW_MEMBERS,
    RawItemsJSONParser,
    RawItemsParserFactory,
    _raw_member,
    raw_items_session,
)
from dynashard.facade import make_client
from dynashard.model import Event, plain_value
from infra.table_specs import ALL_TABLES, DATA_TABLE, METADATA_TABLE, create_table_request

ENDPOINT = "http://127.0.0.1:9"  # never reached: every response comes from before-send
B1, B2 = bytes([0, 1, 2, 255]), b"\x10payload"


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def item(i: int, **extra: Any) -> dict[str, Any]:
    """A stored item as dynashard writes it, in DynamoDB's wire JSON."""
    sk = f"2013-01-01T05:{i:02d}:00.000000Z#e{i}"
    return {
        "PK": {"S": "DEPARTURES#JFK#3"},
        "SK": {"S": sk},
        "GSI1PK": {"S": "DEPARTURES#JFK#2013-01-01"},
        "GSI1SK": {"S": sk},
        "key": {"S": "DEPARTURES#JFK"},
        "id": {"S": f"e{i}"},
        "ts": {"S": sk.split("#")[0]},
        "shard": {"N": "3"},
        "data": {
            "M": {
                "carrier": {"S": "UA"},
                "dep_delay": {"N": "-4"},
                "distance": {"N": "1400.5"},
                "big": {"N": "12345678901234567890123456789012345678"},
                "tiny": {"N": "1E-130"},
                "cancelled": {"BOOL": False},
                "tail": {"NULL": True},
                "tags": {"SS": ["b", "a"]},
                "gates": {"NS": ["12", "3", "7.5"]},
                "legs": {"L": [{"S": "EWR"}, {"N": "2"}, {"M": {"x": {"L": []}}}]},
                "nested": {"M": {"deeper": {"M": {"deepest": {"S": "é ✓"}}}}},
                **extra,
            }
        },
    }


#: Recorded Query bodies: binary, sets, nested maps, numbers, paging, capacity.
QUERY_BODIES: dict[str, dict[str, Any]] = {
    "binary": {
        "Items": [
            item(1, blob={"B": b64(B1)}, one_blob={"BS": [b64(B2)]}),
            item(2, blobs_in_a_list={"L": [{"B": b64(B2)}, {"B": ""}]}),
        ],
        "Count": 2,
        "ScannedCount": 2,
    },
    "paged": {
        "Items": [item(i) for i in range(5)],
        "Count": 5,
        "ScannedCount": 7,
        "LastEvaluatedKey": {
            "PK": {"S": "DEPARTURES#JFK#3"},
            "SK": {"S": "2013-01-01T05:04:00.000000Z#e4"},
        },
        "ConsumedCapacity": {"TableName": "dynashard-data", "CapacityUnits": 1.5},
    },
    "capacity_as_integer": {  # DynamoDB Local sends whole units as 1, not 1.0
        "Items": [],
        "Count": 0,
        "ScannedCount": 0,
        "ConsumedCapacity": {
            "TableName": "dynashard-data",
            "CapacityUnits": 1,
            "Table": {"CapacityUnits": 1},
        },
        "AMemberNoModelHas": {"x": 1},
    },
    "empty": {"Count": 0, "ScannedCount": 0},
}

THROTTLED = {
    "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
    "message": "Throughput exceeds the current capacity for one or more key ranges.",
    "ThrottlingReasons": [
        {
            "reason": "TableReadKeyRangeThroughputExceeded",
            "resource": "arn:aws:dynamodb:us-east-1:123456789012:table/dynashard-data",
        }
    ],
}


def response_dict(body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    return {
        "status_code": status,
        "headers": {"x-amzn-requestid": "REQ1", "content-type": "application/x-amz-json-1.0"},
        "body": json.dumps(body).encode("utf-8"),
        "context": {},
    }


def output_shape(operation: str = "Query") -> Any:
    model = boto3.client("dynamodb", region_name="us-east-1").meta.service_model
    return model.operation_model(operation).output_shape


def as_botocore(value: Any) -> Any:
    """The wire's typed JSON with each B/BS value decoded, as botocore's parser gives it."""
    if isinstance(value, list):
        return [as_botocore(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k == "B" and isinstance(v, str):
            out[k] = base64.b64decode(v)
        elif k == "BS" and isinstance(v, list):
            out[k] = [base64.b64decode(b) for b in v]
        else:
            out[k] = as_botocore(v)
    return out


def answering(client: Any, bodies: Iterator[tuple[int, dict[str, Any]]]) -> list[Any]:
    """Answer each request of ``client`` from ``bodies`` in a ``before-send`` hook."""
    seen: list[Any] = []

    def send(request: Any, **_: Any) -> AWSResponse:
        seen.append(request)
        status, body = next(bodies)
        raw = json.dumps(body).encode("utf-8")
        headers = {"x-amzn-RequestId": f"REQ{len(seen)}", "Content-Length": str(len(raw))}

        class Raw:
            def stream(self, **_: Any) -> Iterator[bytes]:
                yield raw

        return AWSResponse(request.url, status, headers, Raw())

    client.meta.events.register("before-send.dynamodb", send)
    return seen


# --- the botocore contract the fast parser relies on --------------------------------------
def test_botocore_json_parser_still_routes_a_body_through_handle_json_body() -> None:
    # Given botocore's JSON parser, spied on the method raw_items overrides
    calls: list[tuple[bytes, str | None]] = []

    class Spy(JSONParser):  # type: ignore[misc]
        def _handle_json_body(self, raw_body: bytes, shape: Any) -> Any:
            calls.append((raw_body, None if shape is None else shape.name))
            return super()._handle_json_body(raw_body, shape)

    shape = output_shape()
    response = response_dict(QUERY_BODIES["paged"])
    # When a successful Query response and a modeled error are parsed
    Spy().parse(response, shape)
    model = boto3.client("dynamodb", region_name="us-east-1").meta.service_model
    throttle = model.shape_for_error_code("ProvisionedThroughputExceededException")
    Spy().parse(response_dict(THROTTLED, 400), throttle)
    # Then both bodies go through _handle_json_body(raw_body, shape), once each, with the
    # output shape named as RAW_MEMBERS names it and the error shape under its own name
    assert calls == [
        (response["body"], "QueryOutput"),
        (json.dumps(THROTTLED).encode("utf-8"), "ProvisionedThroughputExceededException"),
    ]
    assert list(inspect.signature(JSONParser._handle_json_body).parameters) == [
        "self",
        "raw_body",
        "shape",
    ]
    assert "QueryOutput" in RAW_MEMBERS and RAW_MEMBERS["QueryOutput"] in shape.members
    # and the factory still builds parsers from its defaults (the attribute it passes on)
    assert ResponseParserFactory()._defaults == {}


def test_a_session_registered_factory_makes_its_clients_parsers() -> None:
    # Given the process's raw-items session: its botocore session holds the factory
    session = raw_items_session()
    assert isinstance(
        session._session.get_component("response_parser_factory"), RawItemsParserFactory
    )
    assert isinstance(RawItemsParserFactory().create_parser("json"), RawItemsJSONParser)
    assert type(RawItemsParserFactory().create_parser("rest-json")) is not RawItemsJSONParser
    # and boto3's default session is untouched
    default = boto3.Session()._session.get_component("response_parser_factory")
    assert not isinstance(default, RawItemsParserFactory)


# --- the fast parser against botocore's, on the same recorded bodies ----------------------
@pytest.mark.parametrize("name", sorted(QUERY_BODIES))
def test_fast_parser_equals_botocores_but_for_the_items_binary_form(name: str) -> None:
    shape = output_shape()
    body = QUERY_BODIES[name]
    slow = JSONParser().parse(response_dict(body), shape)
    fast = RawItemsJSONParser().parse(response_dict(body), shape)
    # The items are the wire's own objects, B and BS as base64 text
    assert fast.get("Items") == body.get("Items")
    # Everything else, ResponseMetadata and ConsumedCapacity's number types included, is botocore's
    assert {k: v for k, v in fast.items() if k != "Items"} == {
        k: v for k, v in slow.items() if k != "Items"
    }
    assert fast["ResponseMetadata"]["RequestId"] == "REQ1"
    if "ConsumedCapacity" in slow:
        units = fast["ConsumedCapacity"]["CapacityUnits"]
        assert type(units) is type(slow["ConsumedCapacity"]["CapacityUnits"])
    # and the items are botocore's once the binary values are decoded
    assert as_botocore(fast.get("Items")) == slow.get("Items")
    # plain_value, the one walk over them, gives the same result from either form
    for wire, parsed in zip(fast.get("Items", []), slow.get("Items", []), strict=True):
        assert {k: plain_value(v) for k, v in wire.items()} == {
            k: plain_value(v) for k, v in parsed.items()
        }


def test_binary_values_decode_to_the_same_binary_from_either_form() -> None:
    shape = output_shape()
    fast = RawItemsJSONParser().parse(response_dict(QUERY_BODIES["binary"]), shape)
    data = plain_value(fast["Items"][0]["data"])
    assert data["blob"] == Binary(B1) and data["one_blob"] == [Binary(B2)]
    listed = plain_value(fast["Items"][1]["data"])["blobs_in_a_list"]
    assert listed == [Binary(B2), Binary(b"")]
    # a binary set of two reads the same from either form, sorted by its bytes
    want = sorted([Binary(B1), Binary(B2)], key=lambda b: b.value)
    for form in ({"BS": [b64(B1), b64(B2)]}, {"BS": [B1, B2]}):
        assert plain_value(form) == want


@pytest.mark.parametrize("operation", ["GetItem", "BatchGetItem", "Scan", "PutItem"])
def test_other_operations_are_botocores_own(operation: str) -> None:
    bodies = {
        "GetItem": {"Item": item(1, blob={"B": b64(B1)})},
        "BatchGetItem": {"Responses": {"t": [item(1, blob={"B": b64(B1)})]}},
        "Scan": {"Items": [item(1, blob={"B": b64(B1)})], "Count": 1, "ScannedCount": 1},
        "PutItem": {"Attributes": item(1, blob={"B": b64(B1)})},
    }
    shape = output_shape(operation)
    response = response_dict(bodies[operation])
    assert RawItemsJSONParser().parse(response, shape) == JSONParser().parse(response, shape)


# --- through real clients: signing, retries, before-send, errors --------------------------
def both_clients(total_max_attempts: int) -> tuple[Any, Any]:
    config = DynashardConfig("T", "M", endpoint_url=ENDPOINT)
    fast = make_client(config, total_max_attempts=total_max_attempts)
    slow = boto3.client(
        "dynamodb",
        endpoint_url=ENDPOINT,
        config=fast.meta.config,
    )
    return fast, slow


QUERY = {
    "TableName": "T",
    "KeyConditionExpression": "PK = :pk",
    "ExpressionAttributeValues": {":pk": {"S": "K#0"}},
}


def test_a_throttled_query_raises_the_same_client_error_with_its_throttling_reasons() -> None:
    fast, slow = both_clients(total_max_attempts=1)
    raised = []
    for client in (fast, slow):
        answering(client, iter([(400, THROTTLED)]))
        with pytest.raises(ClientError) as caught:
            client.query(**QUERY)
        raised.append(caught.value.response)
    fast_error, slow_error = raised
    assert fast_error["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert fast_error["ThrottlingReasons"] == THROTTLED["ThrottlingReasons"]
    assert fast_error == slow_error


def test_retries_signing_and_response_metadata_are_unchanged() -> None:
    # Given both clients with botocore's standard retries, each throttled once, then answered
    fast, slow = both_clients(total_max_attempts=3)
    answers = []
    for client in (fast, slow):
        seen = answering(client, iter([(400, THROTTLED), (200, QUERY_BODIES["paged"])]))
        response = client.query(**QUERY)
        # Then botocore retried the throttle and signed every attempt
        assert len(seen) == 2
        assert all(r.headers["Authorization"].startswith(b"AWS4-HMAC-SHA256") for r in seen)
        answers.append(response)
    fast_response, slow_response = answers
    assert fast_response["ResponseMetadata"]["RetryAttempts"] == 1
    assert fast_response["ResponseMetadata"]["RequestId"] == "REQ2"
    assert fast_response["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert fast_response["ResponseMetadata"] == slow_response["ResponseMetadata"]
    assert fast_response["LastEvaluatedKey"] == slow_response["LastEvaluatedKey"]
    assert fast_response["ConsumedCapacity"] == slow_response["ConsumedCapacity"]


def test_the_facades_reader_client_has_the_fast_path_on() -> None:
    # Given a facade that builds its own client, and a Query answered with a binary value
    ds = Dynashard(DynashardConfig("T", "M", endpoint_url=ENDPOINT))
    answering(ds.client, iter([(200, QUERY_BODIES["binary"])]))
    # When the reads' client queries
    items = ds.client.query(**QUERY)["Items"]
    # Then the items are as the wire had them: botocore did not walk them
    assert items == QUERY_BODIES["binary"]["Items"]
    assert isinstance(items[0]["data"]["M"]["blob"]["B"], str)
    ds.close()


# --- end to end: the reader's events are the same through either parser -------------------
def test_a_read_through_the_fast_path_gives_the_events_botocores_parser_gives() -> None:
    with mock_aws():
        slow = boto3.client("dynamodb", region_name="us-east-1")
        for spec in ALL_TABLES:
            slow.create_table(**create_table_request(spec))
        tables = (DATA_TABLE.default_name, METADATA_TABLE.default_name)
        writer = Dynashard(DynashardConfig(*tables, default_shards=4, max_workers=2), client=slow)
        events = [
            Event(
                key="DEPARTURES#JFK",
                id=f"e{i}",
                ts=f"2013-01-01T05:{i:02d}:00Z",
                data={"dep_delay": i - 3, "distance": 1400.5, "tags": ["a", None, True]},
            )
            for i in range(12)
        ]
        assert all(o.ok for o in writer.put_events(events))
        # one stored event also holds a binary value (another program's write)
        for page in slow.get_paginator("scan").paginate(TableName=tables[0]):
            first = page["Items"][0]
            break
        slow.update_item(
            TableName=tables[0],
            Key={"PK": first["PK"], "SK": first["SK"]},
            UpdateExpression="SET #d.#b = :b",
            ExpressionAttributeNames={"#d": "data", "#b": "blob"},
            ExpressionAttributeValues={":b": {"B": B1}},
        )
        fast_reader = Dynashard(DynashardConfig(*tables, max_workers=2))
        slow_reader = Dynashard(DynashardConfig(*tables, max_workers=2), client=slow)
        got = fast_reader.query_events("DEPARTURES#JFK", limit=100)
        want = slow_reader.query_events("DEPARTURES#JFK", limit=100)
        assert got.items == want.items and len(got.items) == 12
        assert sum("blob" in e["data"] for e in got.items) == 1
        assert [e["data"]["blob"] for e in got.items if "blob" in e["data"]] == [Binary(B1)]
        for ds in (writer, fast_reader, slow_reader):
            ds.close()


def test_the_session_takes_the_programs_default_profile_and_region(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import boto3

    from dynashard.dynamodb import raw_items

    config = tmp_path / "config"
    config.write_text("[profile ops]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setattr(raw_items, "_session", None)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    boto3.setup_default_session(profile_name="ops", region_name="eu-central-1")
    session = raw_items.raw_items_session()  # both set back by monkeypatch
    assert (session.profile_name, session.region_name) == ("ops", "eu-central-1")


def test_another_services_query_output_is_botocores_own() -> None:
    # Given the process's session also serves CloudWatch (the scaler's adapters), and a
    # json service whose output shape is also called QueryOutput, with items of its own
    from botocore.model import ShapeResolver

    from dynashard.dynamodb.raw_items import RawItemsJSONParser

    shapes = ShapeResolver(
        {
            "QueryOutput": {"type": "structure", "members": {"Items": {"shape": "Names"}}},
            "Names": {"type": "list", "member": {"shape": "Name"}},
            "Name": {"type": "string"},
        }
    )
    shape = shapes.get_shape_by_name("QueryOutput")
    body = json.dumps({"Items": ["a", "b"]}).encode()

    # When either parser handles its body
    ours = RawItemsJSONParser()._handle_json_body(body, shape)
    theirs = JSONParser()._handle_json_body(body, shape)

    # Then the result is botocore's; only DynamoDB's items (AttributeValue maps) stay raw
    assert ours == theirs == {"Items": ["a", "b"]}
    dynamodb = boto3.session.Session().client("dynamodb", region_name="us-east-1")
    query = dynamodb.meta.service_model.operation_model("Query").output_shape
    assert _raw_member(query) == "Items"
    assert _raw_member(shape) is None
