"""Table metadata the emulator needs: key schema, GSIs, capacity mode, ARNs.

Built from a ``DescribeTable`` answer (API reference, ``TableDescription``), so the
emulator knows exactly what DynamoDB Local knows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

#: Account id in the ARNs the emulator writes (DynamoDB Local uses the same).
FAKE_ACCOUNT_ID: Final = "000000000000"
#: Region of DynamoDB Local's own ARNs, used when a request names none.
LOCAL_REGION: Final = "ddblocal"

_CREDENTIAL_RE: Final = re.compile(r"Credential=[^/,\s]+/\d{8}/([^/,\s]+)/")


def region_from_authorization(header: str | None) -> str | None:
    """Return the region of a SigV4 ``Authorization`` header's credential scope.

    Parameters
    ----------
    header : str or None
        E.g. ``AWS4-HMAC-SHA256 Credential=AKID/20240101/eu-west-1/dynamodb/aws4_request,
        SignedHeaders=..., Signature=...``.

    Returns
    -------
    str or None
        ``eu-west-1`` in the example; None when there is no credential scope.
    """
    if not header:
        return None
    match = _CREDENTIAL_RE.search(header)
    return match.group(1) if match else None


def table_arn(table: str, region: str, account: str = FAKE_ACCOUNT_ID) -> str:
    """Return a table ARN: ``arn:aws:dynamodb:<region>:<account>:table/<name>``.

    Parameters
    ----------
    table : str
        Table name.
    region : str
        AWS Region.
    account : str
        Account id.

    Returns
    -------
    str
        The ARN.
    """
    return f"arn:aws:dynamodb:{region}:{account}:table/{table}"


def index_arn(table: str, index: str, region: str, account: str = FAKE_ACCOUNT_ID) -> str:
    """Return a GSI ARN: the table ARN plus ``/index/<name>``.

    Parameters
    ----------
    table : str
        Table name.
    index : str
        Index name.
    region : str
        AWS Region.
    account : str
        Account id.

    Returns
    -------
    str
        The ARN.
    """
    return f"{table_arn(table, region, account)}/index/{index}"


@dataclass(frozen=True, slots=True)
class IndexMeta:
    """A global secondary index.

    Parameters
    ----------
    name : str
        Index name.
    hash_key : str
        Attribute name of its partition key.
    range_key : str or None
        Attribute name of its sort key.
    projection : str
        ``ALL``, ``KEYS_ONLY`` or ``INCLUDE``.
    non_key_attributes : tuple of str
        Projected non-key attributes, for ``INCLUDE``.
    provisioned_rcu, provisioned_wcu : float or None
        Provisioned capacity (provisioned tables), units/s.
    max_read_units, max_write_units : float or None
        On-demand maximum throughput, units/s (None: no maximum).
    """

    name: str
    hash_key: str
    range_key: str | None
    projection: str = "ALL"
    non_key_attributes: tuple[str, ...] = ()
    provisioned_rcu: float | None = None
    provisioned_wcu: float | None = None
    max_read_units: float | None = None
    max_write_units: float | None = None


@dataclass(frozen=True, slots=True)
class TableMeta:
    """A table as the emulator sees it.

    Parameters
    ----------
    name : str
        Table name.
    hash_key : str
        Attribute name of the partition key.
    range_key : str or None
        Attribute name of the sort key.
    gsis : tuple of IndexMeta
        Global secondary indexes.
    on_demand : bool
        True for ``PAY_PER_REQUEST`` billing.
    provisioned_rcu, provisioned_wcu : float or None
        Provisioned capacity, units/s.
    max_read_units, max_write_units : float or None
        On-demand maximum throughput, units/s (None: no maximum).
    """

    name: str
    hash_key: str
    range_key: str | None = None
    gsis: tuple[IndexMeta, ...] = ()
    on_demand: bool = True
    provisioned_rcu: float | None = None
    provisioned_wcu: float | None = None
    max_read_units: float | None = None
    max_write_units: float | None = None

    @property
    def key_attributes(self) -> tuple[str, ...]:
        """Tuple of str: the primary key's attribute names."""
        return (self.hash_key,) if self.range_key is None else (self.hash_key, self.range_key)

    def gsi(self, name: str) -> IndexMeta | None:
        """Return a GSI by name.

        Parameters
        ----------
        name : str
            Index name.

        Returns
        -------
        IndexMeta or None
            None for an unknown name (or a local secondary index).
        """
        for index in self.gsis:
            if index.name == name:
                return index
        return None


def _keys(schema: list[Mapping[str, str]]) -> tuple[str, str | None]:
    hash_key = next(k["AttributeName"] for k in schema if k["KeyType"] == "HASH")
    range_key = next((k["AttributeName"] for k in schema if k["KeyType"] == "RANGE"), None)
    return hash_key, range_key


def _positive(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def table_meta_from_description(table: Mapping[str, Any]) -> TableMeta:
    """Build a :class:`TableMeta` from the ``Table`` of a ``DescribeTable`` answer.

    Parameters
    ----------
    table : mapping
        ``TableDescription`` (DynamoDB JSON response, not boto3-parsed).

    Returns
    -------
    TableMeta
        Capacity 0 (as DynamoDB Local reports for on-demand) and ``-1`` maxima mean none.

    Raises
    ------
    KeyError
        If ``TableName`` or ``KeySchema`` is missing.
    """
    hash_key, range_key = _keys(table["KeySchema"])
    billing = (table.get("BillingModeSummary") or {}).get("BillingMode", "PROVISIONED")
    throughput = table.get("ProvisionedThroughput") or {}
    on_demand_max = table.get("OnDemandThroughput") or {}
    gsis = []
    for g in table.get("GlobalSecondaryIndexes") or []:
        g_hash, g_range = _keys(g["KeySchema"])
        projection = g.get("Projection") or {}
        g_throughput = g.get("ProvisionedThroughput") or {}
        g_max = g.get("OnDemandThroughput") or {}
        gsis.append(
            IndexMeta(
                name=g["IndexName"],
                hash_key=g_hash,
                range_key=g_range,
                projection=projection.get("ProjectionType", "ALL"),
                non_key_attributes=tuple(projection.get("NonKeyAttributes") or ()),
                provisioned_rcu=_positive(g_throughput.get("ReadCapacityUnits")),
                provisioned_wcu=_positive(g_throughput.get("WriteCapacityUnits")),
                max_read_units=_positive(g_max.get("MaxReadRequestUnits")),
                max_write_units=_positive(g_max.get("MaxWriteRequestUnits")),
            )
        )
    return TableMeta(
        name=table["TableName"],
        hash_key=hash_key,
        range_key=range_key,
        gsis=tuple(gsis),
        on_demand=billing == "PAY_PER_REQUEST",
        provisioned_rcu=_positive(throughput.get("ReadCapacityUnits")),
        provisioned_wcu=_positive(throughput.get("WriteCapacityUnits")),
        max_read_units=_positive(on_demand_max.get("MaxReadRequestUnits")),
        max_write_units=_positive(on_demand_max.get("MaxWriteRequestUnits")),
    )


def key_value_text(value: Mapping[str, Any]) -> str:
    """Return the text of a key attribute value (``S``, ``N`` or ``B``).

    Parameters
    ----------
    value : mapping
        A key attribute value in DynamoDB JSON.

    Returns
    -------
    str
        The scalar as text: what the emulator uses to name a partition.
    """
    for raw in value.values():
        return raw if isinstance(raw, str) else str(raw)
    return ""
