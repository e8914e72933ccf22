"""The start-up check of the data table against the configured key schema.

A table brought by its owner (issue 27) is described once, with ``DescribeTable``, and
compared with the configured :class:`~dynashard.core.schema.TableSchema`
(:func:`~dynashard.core.schema.schema_mismatches`): a wrong key name or type would
otherwise surface only as a ``ValidationException`` on the first write, or, worse, as
reads that find nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dynashard.core.schema import TableSchema, schema_mismatches
from dynashard.errors import TableSchemaError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def check_table_schema(client: DynamoDBClient, table_name: str, schema: TableSchema) -> None:
    """Check a table's key schema and GSI against a schema; raise naming each mismatch.

    Parameters
    ----------
    client : DynamoDBClient
        boto3 DynamoDB client (needs ``dynamodb:DescribeTable`` on the table).
    table_name : str
        The data table.
    schema : TableSchema
        The configured schema.

    Raises
    ------
    TableSchemaError
        If the table does not exist (``ResourceNotFoundException``), cannot be
        described (the AWS error code named), or differs from ``schema``: its
        ``mismatches`` list each difference (partition or sort key name or type, the
        GSI missing, its keys, or a projection other than ``ALL``).

    Examples
    --------
    >>> check_table_schema(client, "dynashard-data", DEFAULT_SCHEMA)  # doctest: +SKIP
    """
    try:
        table: dict[str, Any] = dict(client.describe_table(TableName=table_name)["Table"])
    except ClientError as exc:
        error = exc.response["Error"]
        if error["Code"] == "ResourceNotFoundException":
            raise TableSchemaError([f"table {table_name!r} does not exist"]) from exc
        why = f"{error['Code']}: {error.get('Message', '')}"
        raise TableSchemaError([f"table {table_name!r} cannot be described: {why}"]) from exc
    except BotoCoreError as exc:
        raise TableSchemaError(
            [f"table {table_name!r} cannot be described: {type(exc).__name__}: {exc}"]
        ) from exc
    table.setdefault("TableName", table_name)
    mismatches = schema_mismatches(table, schema)
    if mismatches:
        raise TableSchemaError(mismatches)
