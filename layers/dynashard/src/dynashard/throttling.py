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
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

#: The error codes DynamoDB uses for throttling.
THROTTLING_ERROR_CODES: Final = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)


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
        return self.reason.endswith("KeyRangeThroughputExceeded")

    @property
    def is_write(self) -> bool:
        """bool: True for a write reason (``TableWrite...`` or ``IndexWrite...``)."""
        return self.reason.startswith(("TableWrite", "IndexWrite"))


def throttling_reasons(response: dict[str, Any]) -> list[ThrottlingReason]:
    """Read ``ThrottlingReasons`` out of a botocore error response.

    Parameters
    ----------
    response : dict
        ``ClientError.response``; botocore puts the modelled member at the top level.

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
    """
    raw = (
        response.get("ThrottlingReasons")
        or response.get("Error", {}).get("ThrottlingReasons")
        or []
    )
    return [ThrottlingReason(str(r.get("reason", "")), str(r.get("resource", ""))) for r in raw]


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
