"""Error bodies, checked against botocore's own parser, model and retry rules."""

from __future__ import annotations

import json
import zlib

import botocore.session
from botocore.parsers import JSONParser, create_parser
from botocore.retries.standard import RetryContext
from botocore.retries.standard import ThrottledRetryableChecker as _StandardThrottle

from sandbox.emulator.errors import (
    MSG_ON_DEMAND_TABLE,
    MSG_PROVISIONED_INDEX,
    response_headers,
    throttle_message,
    throttling_error_body,
    transaction_canceled_body,
)

ARN = "arn:aws:dynamodb:eu-west-1:000000000000:table/dynashard-data"


def _parse(body: bytes, operation: str = "PutItem") -> dict[str, object]:
    session = botocore.session.get_session()
    model = session.get_service_model("dynamodb")
    parser = create_parser("json")
    http = {"status_code": 400, "headers": response_headers(body), "body": body}
    parsed: dict[str, object] = parser.parse(http, model.operation_model(operation).output_shape)
    return parsed


def test_body_is_dynamodb_json_error_shape() -> None:
    body = throttling_error_body(
        "ProvisionedThroughputExceededException",
        MSG_ON_DEMAND_TABLE,
        [("TableWriteKeyRangeThroughputExceeded", ARN)],
    )
    assert json.loads(body) == {
        "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "message": MSG_ON_DEMAND_TABLE,
        "ThrottlingReasons": [{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": ARN}],
    }


def test_botocore_parses_code_message_and_throttling_reasons() -> None:
    # Given the body botocore receives
    body = throttling_error_body(
        "ProvisionedThroughputExceededException",
        MSG_PROVISIONED_INDEX,
        [("IndexWriteKeyRangeThroughputExceeded", ARN + "/index/GSI1")],
    )
    # When botocore parses it (the model names the member ThrottlingReasons)
    session = botocore.session.get_session()
    model = session.get_service_model("dynamodb")
    shape = model.shape_for_error_code("ProvisionedThroughputExceededException")
    assert "ThrottlingReasons" in shape.members
    parsed = _parse(body)
    # Then the code, message and reasons come out as a client would read them
    assert parsed["Error"] == {
        "Code": "ProvisionedThroughputExceededException",
        "Message": MSG_PROVISIONED_INDEX,
    }
    modeled = JSONParser()._parse_shape(shape, json.loads(body))
    assert modeled["ThrottlingReasons"] == [
        {"reason": "IndexWriteKeyRangeThroughputExceeded", "resource": ARN + "/index/GSI1"}
    ]


def test_throttling_exception_uses_the_models_lowercase_member() -> None:
    body = json.loads(throttling_error_body("ThrottlingException", "m", [("r", ARN)]))
    model = botocore.session.get_session().get_service_model("dynamodb")
    assert "throttlingReasons" in model.shape_for_error_code("ThrottlingException").members
    assert body["throttlingReasons"] == [{"reason": "r", "resource": ARN}]


def test_crc32_header_matches_body() -> None:
    body = throttling_error_body("ProvisionedThroughputExceededException", "m", [])
    headers = response_headers(body, "req-1")
    assert headers["x-amz-crc32"] == str(zlib.crc32(body))
    assert headers["x-amzn-RequestId"] == "req-1"
    assert headers["Content-Type"] == "application/x-amz-json-1.0"


def test_both_retry_modes_classify_the_answer_as_throttling() -> None:
    body = throttling_error_body(
        "ProvisionedThroughputExceededException", MSG_ON_DEMAND_TABLE, [("r", ARN)]
    )
    parsed = _parse(body)
    # standard/adaptive mode: the throttling checker keys on the error code
    context = RetryContext(attempt_number=1, parsed_response=parsed)
    assert _StandardThrottle().is_retryable(context)
    # legacy mode (boto3's default): DynamoDB's _retry.json policies
    from botocore.retryhandler import create_retry_handler

    loader = botocore.session.get_session().get_component("data_loader")
    retry_config = loader.load_data("_retry")
    handler = create_retry_handler(
        botocore.translate.build_retry_config(
            "dynamodb", retry_config["retry"], retry_config["definitions"]
        ),
        operation_name="PutItem",
    )
    http = type("R", (), {"status_code": 400, "headers": response_headers(body)})()
    delay = handler(
        attempts=1,
        response=(http, parsed),
        caught_exception=None,
        request_dict={"context": {}},
    )
    assert delay is not None and delay > 0


def test_transaction_canceled_lists_reasons_in_order() -> None:
    body = json.loads(transaction_canceled_body([None, "ThrottlingError"], "slow down"))
    assert body["__type"].endswith("#TransactionCanceledException")
    assert body["CancellationReasons"] == [
        {"Code": "None"},
        {"Code": "ThrottlingError", "Message": "slow down"},
    ]
    assert body["message"].endswith("[None, ThrottlingError]")


def test_messages_by_mode_and_resource() -> None:
    assert throttle_message(on_demand=True, index=False) == MSG_ON_DEMAND_TABLE
    assert throttle_message(on_demand=False, index=True) == MSG_PROVISIONED_INDEX
    assert "provisioned throughput for the table" in throttle_message(on_demand=False, index=False)
    assert "global secondary indexes" in throttle_message(on_demand=True, index=True)
