"""Builders of the events AWS hands to Lambda: API Gateway, SQS and Kinesis.

The shapes follow the AWS Lambda Developer Guide ("Using Lambda with API Gateway":
REST API proxy integration, payload format 1.0; "Using Lambda with Amazon SQS";
"Using Lambda with Kinesis Data Streams") so the real handlers can be driven locally
by the gateway, the pollers and the demo exactly as Lambda would drive them.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

#: Account id and region used in the fake ARNs.
ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
#: API Gateway stage name of the sandbox.
STAGE = "local"
#: Default event source ARNs.
SQS_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:dynashard-ingest"
KINESIS_STREAM_ARN = f"arn:aws:kinesis:{REGION}:{ACCOUNT_ID}:stream/dynashard-ingest"


def _multi(values: Mapping[str, str | Sequence[str]] | None) -> tuple[Any, Any]:
    """Split a mapping into API Gateway's single- and multi-value forms (None if empty)."""
    if not values:
        return None, None
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in values.items():
        items = [value] if isinstance(value, str) else list(value)
        if not items:
            continue
        multi[name] = items
        single[name] = items[-1]  # API Gateway keeps the last value in the single form
    return (single or None), (multi or None)


def api_gateway_event(
    method: str,
    path: str,
    *,
    resource: str | None = None,
    path_parameters: Mapping[str, str] | None = None,
    query: Mapping[str, str | Sequence[str]] | None = None,
    headers: Mapping[str, str | Sequence[str]] | None = None,
    body: str | bytes | Mapping[str, Any] | Sequence[Any] | None = None,
    source_ip: str = "127.0.0.1",
    stage: str = STAGE,
    request_id: str | None = None,
) -> dict[str, Any]:
    """Build an API Gateway REST API proxy event (payload format 1.0).

    Parameters
    ----------
    method : str
        HTTP method, e.g. ``GET``.
    path : str
        Request path without the stage, e.g. ``/counters/CARRIER%23UA`` decoded as
        ``/counters/CARRIER#UA``.
    resource : str, optional
        The resource template, e.g. ``/counters/{name}``; defaults to ``path``.
    path_parameters : mapping, optional
        Values of the template's ``{...}`` parameters.
    query : mapping, optional
        Query string parameters; a sequence value gives a repeated parameter.
    headers : mapping, optional
        Request headers; a sequence value gives a repeated header.
    body : str, bytes, mapping or sequence, optional
        Body: text as is, bytes base64-encoded (``isBase64Encoded`` true), other values
        as JSON (and a ``Content-Type: application/json`` header if none is given).
    source_ip : str
        ``requestContext.identity.sourceIp``.
    stage : str
        Stage name.
    request_id : str, optional
        ``requestContext.requestId``; a random UUID when None.

    Returns
    -------
    dict
        The event, with ``resource``, ``path``, ``httpMethod``, ``headers``,
        ``multiValueHeaders``, ``queryStringParameters``,
        ``multiValueQueryStringParameters``, ``pathParameters``, ``stageVariables``,
        ``requestContext``, ``body`` and ``isBase64Encoded``.
    """
    method = method.upper()
    hdrs: dict[str, str | Sequence[str]] = dict(headers or {})
    is_b64 = False
    text: str | None
    if body is None:
        text = None
    elif isinstance(body, bytes):
        text, is_b64 = base64.b64encode(body).decode("ascii"), True
    elif isinstance(body, str):
        text = body
    else:
        text = json.dumps(body, separators=(",", ":"))
        if not any(k.lower() == "content-type" for k in hdrs):
            hdrs["Content-Type"] = "application/json"
    hdrs.setdefault("Host", "localhost")
    hdrs.setdefault("User-Agent", "dynashard-sandbox")
    hdrs.setdefault("X-Forwarded-For", source_ip)
    hdrs.setdefault("X-Forwarded-Proto", "http")
    single_headers, multi_headers = _multi(hdrs)
    single_query, multi_query = _multi(query)
    now = datetime.now(UTC)
    rid = request_id or str(uuid.uuid4())
    return {
        "resource": resource or path,
        "path": path,
        "httpMethod": method,
        "headers": single_headers,
        "multiValueHeaders": multi_headers,
        "queryStringParameters": single_query,
        "multiValueQueryStringParameters": multi_query,
        "pathParameters": dict(path_parameters) if path_parameters else None,
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": "local",
            "resourceId": "local",
            "resourcePath": resource or path,
            "httpMethod": method,
            "extendedRequestId": rid,
            "requestId": rid,
            "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "requestTimeEpoch": int(now.timestamp() * 1000),
            "path": f"/{stage}{path}",
            "protocol": "HTTP/1.1",
            "stage": stage,
            "domainName": "localhost",
            "domainPrefix": "localhost",
            "identity": {
                "accountId": None,
                "apiKey": None,
                "caller": None,
                "cognitoAuthenticationProvider": None,
                "cognitoAuthenticationType": None,
                "cognitoIdentityId": None,
                "cognitoIdentityPoolId": None,
                "principalOrgId": None,
                "sourceIp": source_ip,
                "user": None,
                "userAgent": single_headers.get("User-Agent") if single_headers else None,
                "userArn": None,
            },
        },
        "body": text,
        "isBase64Encoded": is_b64,
    }


def sqs_record(
    body: str | Mapping[str, Any],
    *,
    message_id: str | None = None,
    receive_count: int = 1,
    queue_arn: str = SQS_QUEUE_ARN,
    sent_ms: int | None = None,
) -> dict[str, Any]:
    """Build one SQS record as Lambda's event source mapping delivers it.

    Parameters
    ----------
    body : str or mapping
        Message body; a mapping is serialized to JSON.
    message_id : str, optional
        ``messageId``; a random UUID when None. Keep it across redeliveries.
    receive_count : int
        ``attributes.ApproximateReceiveCount`` (1 on first delivery).
    queue_arn : str
        ``eventSourceARN``.
    sent_ms : int, optional
        ``SentTimestamp`` in epoch milliseconds; now when None.

    Returns
    -------
    dict
        The record (``messageId``, ``receiptHandle``, ``body``, ``attributes``,
        ``messageAttributes``, ``md5OfBody``, ``eventSource``, ``eventSourceARN``,
        ``awsRegion``).
    """
    text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    now_ms = int(time.time() * 1000)
    mid = message_id or str(uuid.uuid4())
    receipt = base64.b64encode(f"{mid}:{receive_count}:{uuid.uuid4()}".encode()).decode()
    return {
        "messageId": mid,
        "receiptHandle": receipt,
        "body": text,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": str(sent_ms if sent_ms is not None else now_ms),
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": str(now_ms),
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": queue_arn.split(":")[3],
    }


def _lambda_message_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Turn ``ReceiveMessage``'s ``MessageAttributes`` into Lambda's record shape."""
    out: dict[str, Any] = {}
    for name, value in attributes.items():
        binary = value.get("BinaryValue")
        out[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode("ascii") if binary else None,
            "stringListValues": list(value.get("StringListValues", [])),
            "binaryListValues": list(value.get("BinaryListValues", [])),
            "dataType": value.get("DataType", "String"),
        }
    return out


def sqs_message_record(message: Mapping[str, Any], queue_arn: str) -> dict[str, Any]:
    """Build the Lambda record of a message as SQS's ``ReceiveMessage`` returned it.

    Parameters
    ----------
    message : mapping
        One entry of ``ReceiveMessage``'s ``Messages`` (boto3's shape: ``MessageId``,
        ``ReceiptHandle``, ``Body``, ``MD5OfBody``, ``Attributes``, ``MessageAttributes``),
        received with ``MessageSystemAttributeNames=["All"]`` and
        ``MessageAttributeNames=["All"]``.
    queue_arn : str
        The queue's ARN (``eventSourceARN``).

    Returns
    -------
    dict
        The record, as :func:`sqs_record` shapes it; a FIFO queue's attributes
        (``SequenceNumber``, ``MessageGroupId``, ``MessageDeduplicationId``) kept.
    """
    attributes = {str(k): str(v) for k, v in (message.get("Attributes") or {}).items()}
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": attributes,
        "messageAttributes": _lambda_message_attributes(message.get("MessageAttributes") or {}),
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": queue_arn.split(":")[3],
    }


def sqs_event(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Wrap SQS records (see :func:`sqs_record`) into a Lambda batch event.

    Parameters
    ----------
    records : iterable of mapping
        Records; at most 10,000 per batch on AWS (10 for FIFO queues).

    Returns
    -------
    dict
        ``{"Records": [...]}``.
    """
    return {"Records": [dict(r) for r in records]}


_SEQUENCE = itertools.count(
    49_590_338_271_490_256_608_559_692_538_361_571_095_921_575_989_136_588_898
)
_SEQUENCE_LOCK = threading.Lock()


def _next_sequence() -> str:
    with _SEQUENCE_LOCK:
        return str(next(_SEQUENCE))


def kinesis_record(
    data: str | bytes | Mapping[str, Any],
    *,
    partition_key: str,
    sequence_number: str | None = None,
    shard_id: str = "shardId-000000000000",
    stream_arn: str = KINESIS_STREAM_ARN,
    arrival_s: float | None = None,
) -> dict[str, Any]:
    """Build one Kinesis Data Streams record as Lambda's event source mapping delivers it.

    Parameters
    ----------
    data : str, bytes or mapping
        Record payload; a mapping is serialized to JSON. Base64-encoded in the event.
    partition_key : str
        Kinesis partition key.
    sequence_number : str, optional
        Sequence number; increasing numbers are generated when None.
    shard_id : str
        Kinesis shard id (part of ``eventID``).
    stream_arn : str
        ``eventSourceARN``.
    arrival_s : float, optional
        ``approximateArrivalTimestamp`` in epoch seconds; now when None.

    Returns
    -------
    dict
        The record (``kinesis`` with ``data``, ``partitionKey``, ``sequenceNumber``,
        ``approximateArrivalTimestamp``; ``eventID``, ``eventSource`` and so on).
    """
    if isinstance(data, bytes):
        raw = data
    elif isinstance(data, str):
        raw = data.encode("utf-8")
    else:
        raw = json.dumps(data, separators=(",", ":")).encode("utf-8")
    seq = sequence_number or _next_sequence()
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key,
            "sequenceNumber": seq,
            "data": base64.b64encode(raw).decode("ascii"),
            "approximateArrivalTimestamp": arrival_s if arrival_s is not None else time.time(),
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{shard_id}:{seq}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": f"arn:aws:iam::{ACCOUNT_ID}:role/dynashard-ingest",
        "awsRegion": stream_arn.split(":")[3],
        "eventSourceARN": stream_arn,
    }


def kinesis_event(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Wrap Kinesis records (see :func:`kinesis_record`) into a Lambda batch event.

    Parameters
    ----------
    records : iterable of mapping
        Records in stream order.

    Returns
    -------
    dict
        ``{"Records": [...]}``.
    """
    return {"Records": [dict(r) for r in records]}


@dataclass
class LambdaContext:
    """A stand-in for the Lambda context object (the attributes Powertools reads).

    Parameters
    ----------
    function_name : str
        Function name.
    memory_limit_in_mb : int
        Configured memory, MB.
    timeout_s : float
        Configured timeout, seconds (drives :meth:`get_remaining_time_in_millis`).
    """

    function_name: str = "dynashard-local"
    memory_limit_in_mb: int = 512
    timeout_s: float = 30.0
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/dynashard-local"
    log_stream_name: str = "local"
    _started: float = field(default_factory=time.monotonic, repr=False)

    @property
    def invoked_function_arn(self) -> str:
        """str: The function ARN."""
        return f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        """Return the milliseconds left before the configured timeout.

        Returns
        -------
        int
            Milliseconds, never negative.
        """
        left = self.timeout_s - (time.monotonic() - self._started)
        return max(0, int(left * 1000))


def scheduled_event(at: datetime, rule_name: str = "dynashard-local-ScalerSweep") -> dict[str, Any]:
    """Build the event an EventBridge schedule (a ``rate`` rule) sends a Lambda target.

    Parameters
    ----------
    at : datetime
        When the schedule fired (UTC); the scaler's sweep takes it as "now".
    rule_name : str
        The rule's name, in ``resources``.

    Returns
    -------
    dict
        ``{"version", "id", "detail-type": "Scheduled Event", "source": "aws.events",
        "account", "time", "region", "resources", "detail": {}}`` (EventBridge User
        Guide, "Creating a rule that runs on a schedule").
    """
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT_ID}:rule/{rule_name}"],
        "detail": {},
    }


def batch_item_failures(response: Mapping[str, Any] | None) -> set[str]:
    """Read the item identifiers of a partial batch response.

    Parameters
    ----------
    response : mapping or None
        What an SQS or Kinesis handler returned (``{"batchItemFailures": [...]}``);
        None or a response without the key means every record succeeded.

    Returns
    -------
    set of str
        ``itemIdentifier`` values (SQS message ids or Kinesis sequence numbers).
    """
    if not response:
        return set()
    return {str(f["itemIdentifier"]) for f in response.get("batchItemFailures", [])}
