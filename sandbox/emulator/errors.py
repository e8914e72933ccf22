"""Error answers exactly as DynamoDB's JSON protocol sends them.

An error is HTTP 400 with ``Content-Type: application/x-amz-json-1.0``, an
``x-amz-crc32`` header (botocore checks it) and a body
``{"__type": "com.amazonaws.dynamodb.v20120810#<Code>", "message": ..., ...}``.
The members follow botocore's model of the DynamoDB API (``service-2.json``):
``ProvisionedThroughputExceededException`` and ``RequestLimitExceeded`` carry
``ThrottlingReasons``; ``ThrottlingException`` carries ``throttlingReasons``; each reason
is ``{"reason": ..., "resource": <table or index ARN>}`` (API reference,
``ThrottlingReason``). Messages are DynamoDB's, as the API reference quotes them for
``TransactionCanceledException`` (codes ``ProvisionedThroughputExceeded`` and
``ThrottlingError``).
"""

from __future__ import annotations

import json
import uuid
import zlib
from collections.abc import Sequence
from typing import Final, Literal

#: Prefix of ``__type`` in DynamoDB's JSON error bodies.
ERROR_TYPE_PREFIX: Final = "com.amazonaws.dynamodb.v20120810#"
#: Content type of the DynamoDB JSON protocol.
CONTENT_TYPE: Final = "application/x-amz-json-1.0"

PROVISIONED_THROUGHPUT_EXCEEDED: Final = "ProvisionedThroughputExceededException"
THROTTLING_EXCEPTION: Final = "ThrottlingException"
TRANSACTION_CANCELED: Final = "TransactionCanceledException"

#: Exception codes the emulator may answer a throttled request with.
ThrottleCode = Literal["ProvisionedThroughputExceededException", "ThrottlingException"]

#: Provisioned table over its capacity (API reference, TransactionCanceledException).
MSG_PROVISIONED_TABLE: Final = (
    "The level of configured provisioned throughput for the table was exceeded. "
    "Consider increasing your provisioning level with the UpdateTable API."
)
#: Provisioned GSI over its capacity.
MSG_PROVISIONED_INDEX: Final = (
    "The level of configured provisioned throughput for one or more global secondary "
    "indexes of the table was exceeded. Consider increasing your provisioning level for "
    "the under-provisioned global secondary indexes with the UpdateTable API."
)
#: On-demand table (or hot key) over its capacity.
MSG_ON_DEMAND_TABLE: Final = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is "
    "automatically scaling your table or index so please try again shortly. If exceptions "
    "persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
#: On-demand GSI over its capacity.
MSG_ON_DEMAND_INDEX: Final = (
    "Throughput exceeds the current capacity for one or more global secondary indexes. "
    "DynamoDB is automatically scaling your index so please try again shortly."
)


def throttle_message(*, on_demand: bool, index: bool) -> str:
    """Return DynamoDB's message for a throttled request.

    Parameters
    ----------
    on_demand : bool
        True when the throttled table is on-demand.
    index : bool
        True when a GSI is the throttled resource.

    Returns
    -------
    str
        One of the four ``MSG_*`` texts.
    """
    if on_demand:
        return MSG_ON_DEMAND_INDEX if index else MSG_ON_DEMAND_TABLE
    return MSG_PROVISIONED_INDEX if index else MSG_PROVISIONED_TABLE


def error_body(code: str, message: str, **members: object) -> bytes:
    """Serialize a DynamoDB JSON error body.

    Parameters
    ----------
    code : str
        Error code, e.g. ``ProvisionedThroughputExceededException``.
    message : str
        The ``message`` member.
    **members
        Further modelled members (``ThrottlingReasons``, ``CancellationReasons``).

    Returns
    -------
    bytes
        Compact UTF-8 JSON.
    """
    body: dict[str, object] = {"__type": ERROR_TYPE_PREFIX + code, "message": message}
    body.update(members)
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def throttling_error_body(code: str, message: str, reasons: Sequence[tuple[str, str]]) -> bytes:
    """Serialize a throttling error with its throttling reasons.

    Parameters
    ----------
    code : str
        ``ProvisionedThroughputExceededException``, ``ThrottlingException`` or
        ``RequestLimitExceeded``.
    message : str
        The message (see :func:`throttle_message`).
    reasons : sequence of (str, str)
        ``(reason, resource ARN)`` pairs, e.g.
        ``("TableWriteKeyRangeThroughputExceeded", "arn:aws:dynamodb:...:table/t")``.

    Returns
    -------
    bytes
        The body; the list member is ``throttlingReasons`` for ``ThrottlingException``
        and ``ThrottlingReasons`` otherwise, as botocore's model names them.
    """
    member = "throttlingReasons" if code == THROTTLING_EXCEPTION else "ThrottlingReasons"
    listed = [{"reason": reason, "resource": resource} for reason, resource in reasons]
    return error_body(code, message, **{member: listed})


def transaction_canceled_body(codes: Sequence[str | None], message: str) -> bytes:
    """Serialize a ``TransactionCanceledException`` for throttled transaction items.

    Parameters
    ----------
    codes : sequence of (str or None)
        Per action, in request order: ``ThrottlingError`` or
        ``ProvisionedThroughputExceeded`` for a throttled one, None for the others
        (reported as ``{"Code": "None"}``, as DynamoDB does).
    message : str
        Message of the throttled items.

    Returns
    -------
    bytes
        The body, with ``CancellationReasons`` and DynamoDB's summary message
        ``Transaction cancelled, please refer cancellation reasons for specific reasons
        [None, ThrottlingError]``.
    """
    reasons: list[dict[str, str]] = [
        {"Code": "None"} if c is None else {"Code": c, "Message": message} for c in codes
    ]
    summary = ", ".join(c or "None" for c in codes)
    return error_body(
        TRANSACTION_CANCELED,
        "Transaction cancelled, please refer cancellation reasons for specific reasons "
        f"[{summary}]",
        CancellationReasons=reasons,
    )


def response_headers(body: bytes, request_id: str | None = None) -> dict[str, str]:
    """Return the headers DynamoDB sends with a JSON body.

    Parameters
    ----------
    body : bytes
        The body exactly as sent.
    request_id : str, optional
        ``x-amzn-RequestId``; a new UUID when None.

    Returns
    -------
    dict of str to str
        ``Content-Type``, ``x-amzn-RequestId`` and ``x-amz-crc32`` (CRC32 of the body,
        decimal; botocore retries a response whose body does not match it).
    """
    return {
        "Content-Type": CONTENT_TYPE,
        "x-amzn-RequestId": request_id or str(uuid.uuid4()),
        "x-amz-crc32": str(zlib.crc32(body) & 0xFFFFFFFF),
    }
