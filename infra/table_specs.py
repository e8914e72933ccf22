"""The table definitions: the one source for the CDK stack and the local sandbox.

Pure data, no CDK import, so the sandbox can create the very same tables in DynamoDB
Local (:func:`create_table_request`) that ``infra/constructs/tables.py`` declares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dynashard import names


@dataclass(frozen=True)
class IndexSpec:
    """A global secondary index with string keys and ``ALL`` projection.

    Parameters
    ----------
    name : str
        Index name, e.g. ``GSI1``.
    partition_key : str
        Attribute name of the index partition key (type ``S``).
    sort_key : str
        Attribute name of the index sort key (type ``S``).
    """

    name: str
    partition_key: str
    sort_key: str


@dataclass(frozen=True)
class TableSpec:
    """A DynamoDB table with string keys, on-demand billing.

    Parameters
    ----------
    logical_id : str
        Construct id in the CDK app.
    default_name : str
        Physical table name used by the sandbox (CloudFormation names the deployed one).
    partition_key : str
        Attribute name of the partition key (type ``S``).
    sort_key : str or None
        Attribute name of the sort key (type ``S``), or None for a simple primary key.
    indexes : tuple of IndexSpec
        Global secondary indexes.
    ttl_attribute : str or None
        The table's Time to Live attribute (epoch seconds), or None for none. Not part of
        ``CreateTable``: the sandbox turns it on with ``UpdateTimeToLive``.
    """

    logical_id: str
    default_name: str
    partition_key: str
    sort_key: str | None = None
    indexes: tuple[IndexSpec, ...] = field(default_factory=tuple)
    ttl_attribute: str | None = None


DATA_TABLE = TableSpec(
    logical_id="DataTable",
    default_name=names.DEFAULT_DATA_TABLE,
    partition_key=names.ATTR_PK,
    sort_key=names.ATTR_SK,
    indexes=(IndexSpec(names.GSI1_NAME, names.ATTR_GSI1PK, names.ATTR_GSI1SK),),
    ttl_attribute=names.ATTR_EXPIRES_AT,
)

METADATA_TABLE = TableSpec(
    logical_id="MetadataTable",
    default_name=names.DEFAULT_METADATA_TABLE,
    partition_key=names.ATTR_META_KEY,
)

ALL_TABLES: tuple[TableSpec, ...] = (DATA_TABLE, METADATA_TABLE)


def create_table_request(spec: TableSpec, table_name: str | None = None) -> dict[str, Any]:
    """Build the ``CreateTable`` request for a table spec (on-demand billing).

    Parameters
    ----------
    spec : TableSpec
        The table to create.
    table_name : str, optional
        Physical name; defaults to ``spec.default_name``.

    Returns
    -------
    dict
        Keyword arguments for ``DynamoDB.Client.create_table``.
    """
    attrs = {spec.partition_key}
    key_schema = [{"AttributeName": spec.partition_key, "KeyType": "HASH"}]
    if spec.sort_key:
        attrs.add(spec.sort_key)
        key_schema.append({"AttributeName": spec.sort_key, "KeyType": "RANGE"})
    gsis = []
    for index in spec.indexes:
        attrs.update((index.partition_key, index.sort_key))
        gsis.append(
            {
                "IndexName": index.name,
                "KeySchema": [
                    {"AttributeName": index.partition_key, "KeyType": "HASH"},
                    {"AttributeName": index.sort_key, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        )
    request: dict[str, Any] = {
        "TableName": table_name or spec.default_name,
        "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"} for a in sorted(attrs)],
        "KeySchema": key_schema,
        "BillingMode": "PAY_PER_REQUEST",
    }
    if gsis:
        request["GlobalSecondaryIndexes"] = gsis
    return request
