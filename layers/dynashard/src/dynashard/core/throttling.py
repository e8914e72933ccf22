"""Telling a hot partition from every other throttle (invariant 6), purely.

DynamoDB's throttling errors (``ProvisionedThroughputExceededException``,
``ThrottlingException``, ``RequestLimitExceeded``) carry ``ThrottlingReasons``, a list
of ``{reason, resource}`` where ``reason`` = ResourceType (``Table``/``Index``) +
OperationType (``Read``/``Write``) + LimitType (``KeyRangeThroughputExceeded``,
``ProvisionedThroughputExceeded``, ``AccountLimitExceeded``,
``MaxOnDemandThroughputExceeded``) and ``resource`` is the table or index ARN (API
reference, ``ThrottlingReason``; Developer Guide, "DynamoDB throttling resolution
guide"). Only ``KeyRangeThroughputExceeded`` is helped by more shards; the other limits
are the table's, the account's or the on-demand maximum's, and adding shards does
nothing for them.

This module is also the one place that spells DynamoDB's CloudWatch words: the
``AWS/DynamoDB`` namespace, its ``TableName`` / ``GlobalSecondaryIndexName``
dimensions and the key-range throttle metrics the scaler's alarms watch (Developer
Guide, "DynamoDB metrics and dimensions" and "CloudWatch throttling metrics"). The
CDK stack (``infra/alarm_specs.py``), the scaler (:mod:`dynashard.planning.scaling`) and the
sandbox import them from here, so the alarm, the policy and the emulator cannot drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, Literal

#: The error codes DynamoDB uses for throttling.
THROTTLING_ERROR_CODES: Final = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)

#: The error member that lists the reasons, as botocore's DynamoDB model names it:
#: ``ThrottlingReasons`` (ProvisionedThroughputExceededException, RequestLimitExceeded)
#: and ``throttlingReasons`` (ThrottlingException).
THROTTLING_REASONS_MEMBERS: Final = ("ThrottlingReasons", "throttlingReasons")

# --- ThrottlingReasons codes (API reference, ``ThrottlingReason``) ------------------------
#: LimitType suffix of the reasons more shards relieve: a hot partition key value.
KEY_RANGE_MARKER: Final = "KeyRangeThroughputExceeded"
#: ResourceType + OperationType prefixes of the write reasons (table and GSI).
WRITE_REASON_PREFIXES: Final = ("TableWrite", "IndexWrite")
#: The four key-range ``ThrottlingReason.reason`` codes.
TABLE_WRITE_KEY_RANGE: Final = "TableWriteKeyRangeThroughputExceeded"
INDEX_WRITE_KEY_RANGE: Final = "IndexWriteKeyRangeThroughputExceeded"
TABLE_READ_KEY_RANGE: Final = "TableReadKeyRangeThroughputExceeded"
INDEX_READ_KEY_RANGE: Final = "IndexReadKeyRangeThroughputExceeded"
KEY_RANGE_REASONS: Final = frozenset(
    {TABLE_WRITE_KEY_RANGE, INDEX_WRITE_KEY_RANGE, TABLE_READ_KEY_RANGE, INDEX_READ_KEY_RANGE}
)

# --- CloudWatch: namespace, dimensions, key-range metrics ---------------------------------
#: Namespace of the metrics DynamoDB publishes.
DYNAMODB_NAMESPACE: Final = "AWS/DynamoDB"
#: Dimension names of table and index metrics in ``AWS/DynamoDB``.
DIM_TABLE_NAME: Final = "TableName"
DIM_INDEX_NAME: Final = "GlobalSecondaryIndexName"
#: Throttle events of requests over a partition key value's limit (one per request).
WRITE_KEY_RANGE_METRIC: Final = "WriteKeyRangeThroughputThrottleEvents"
READ_KEY_RANGE_METRIC: Final = "ReadKeyRangeThroughputThrottleEvents"
#: Metrics whose alarms mean "a partition key value is over its limit", and the
#: operation each is about: the only throttling that more shards relieve.
KEY_RANGE_METRICS: Final[Mapping[str, Literal["write", "read"]]] = MappingProxyType(
    {WRITE_KEY_RANGE_METRIC: "write", READ_KEY_RANGE_METRIC: "read"}
)


def is_key_range_reason(reason: str) -> bool:
    """Tell whether a ``ThrottlingReason.reason`` code is key-range throttling.

    Parameters
    ----------
    reason : str
        E.g. ``TableWriteKeyRangeThroughputExceeded``.

    Returns
    -------
    bool
        True for the four ``...KeyRangeThroughputExceeded`` reasons (a hot partition).
    """
    return reason.endswith(KEY_RANGE_MARKER)


class ThrottleKind(StrEnum):
    """What a throttle means for shard growth."""

    KEY_RANGE = "key_range"  # a hot partition: more shards help
    CAPACITY = "capacity"  # table, index, account or on-demand maximum: only back off
    UNKNOWN = "unknown"  # no reasons given: back off, do not grow


@dataclass(frozen=True)
class ThrottlingReason:
    """One entry of ``ThrottlingReasons``.

    Attributes
    ----------
    reason : str
        E.g. ``TableWriteKeyRangeThroughputExceeded``.
    resource : str
        ARN of the table or index.

    Examples
    --------
    >>> reason = ThrottlingReason("IndexWriteKeyRangeThroughputExceeded", "arn:...:index/GSI1")
    >>> reason.is_key_range, reason.is_write
    (True, True)
    """

    reason: str
    resource: str

    @property
    def is_key_range(self) -> bool:
        """bool: True for a ``...KeyRangeThroughputExceeded`` reason (a hot partition)."""
        return is_key_range_reason(self.reason)

    @property
    def is_write(self) -> bool:
        """bool: True for a write reason (``TableWrite...`` or ``IndexWrite...``)."""
        return self.reason.startswith(WRITE_REASON_PREFIXES)


def throttling_reasons(response: dict[str, Any]) -> list[ThrottlingReason]:
    """Read the throttling reasons out of a botocore error response.

    DynamoDB's service model spells the member two ways: ``ThrottlingReasons`` on
    ``ProvisionedThroughputExceededException`` and ``RequestLimitExceeded``, but
    ``throttlingReasons`` (lower-case t) on ``ThrottlingException`` (botocore's
    ``data/dynamodb/2012-08-10/service-2.json``, checked with botocore 1.43: shapes
    ``ThrottlingException.members.throttlingReasons`` and
    ``ProvisionedThroughputExceededException.members.ThrottlingReasons``, both a
    ``ThrottlingReasonList`` of ``{reason, resource}``). botocore's JSON parser puts
    a modelled error's members at the top level of ``ClientError.response`` under
    their model names, so both spellings are read, at the top level and under
    ``Error``.

    Parameters
    ----------
    response : dict
        ``ClientError.response``.

    Returns
    -------
    list of ThrottlingReason
        Empty when the error has none.

    Examples
    --------
    >>> response = {
    ...     "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "..."},
    ...     "ThrottlingReasons": [
    ...         {"reason": "TableWriteKeyRangeThroughputExceeded", "resource": "arn:...:table/d"}
    ...     ],
    ... }
    >>> throttling_reasons(response)
    [ThrottlingReason(reason='TableWriteKeyRangeThroughputExceeded', resource='arn:...:table/d')]
    >>> throttling_reasons({"Error": {"Code": "ThrottlingException"}})
    []

    ``ThrottlingException`` spells the member ``throttlingReasons``:

    >>> response = {
    ...     "Error": {"Code": "ThrottlingException"},
    ...     "throttlingReasons": [
    ...         {"reason": "TableWriteAccountLimitExceeded", "resource": "arn:...:table/d"}
    ...     ],
    ... }
    >>> [r.reason for r in throttling_reasons(response)]
    ['TableWriteAccountLimitExceeded']
    """
    error = response.get("Error") or {}
    raw: list[Any] = []
    for source in (response, error):
        for member in THROTTLING_REASONS_MEMBERS:
            value = source.get(member)
            if isinstance(value, list):
                raw.extend(value)
    reasons: list[ThrottlingReason] = []
    for r in raw:
        if isinstance(r, Mapping):
            reason = ThrottlingReason(str(r.get("reason", "")), str(r.get("resource", "")))
            if reason not in reasons:
                reasons.append(reason)
    return reasons


def classify(reasons: list[ThrottlingReason]) -> ThrottleKind:
    """Classify a throttle by its reasons.

    Parameters
    ----------
    reasons : list of ThrottlingReason
        From :func:`throttling_reasons`.

    Returns
    -------
    ThrottleKind
        ``KEY_RANGE`` when any reason is a key-range limit (shards help), ``CAPACITY``
        when all are other limits, ``UNKNOWN`` when there are none.

    Examples
    --------
    A hot partition, a table at its provisioned capacity, and a throttle that does not
    say why:

    >>> classify([ThrottlingReason("TableWriteKeyRangeThroughputExceeded", "t")])
    <ThrottleKind.KEY_RANGE: 'key_range'>
    >>> classify([ThrottlingReason("TableWriteProvisionedThroughputExceeded", "t")])
    <ThrottleKind.CAPACITY: 'capacity'>
    >>> classify([])
    <ThrottleKind.UNKNOWN: 'unknown'>
    """
    if not reasons:
        return ThrottleKind.UNKNOWN
    if any(r.is_key_range for r in reasons):
        return ThrottleKind.KEY_RANGE
    return ThrottleKind.CAPACITY
