"""Create the project's tables in DynamoDB Local from the definitions in ``infra/``.

The same :data:`infra.table_specs.ALL_TABLES` that the CDK stack declares are created
here through :func:`infra.table_specs.create_table_request`, so the sandbox and the
deployed stack cannot drift.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from infra.table_specs import (
    ALL_TABLES,
    DATA_TABLE,
    METADATA_TABLE,
    TableSpec,
    create_table_request,
)
from sandbox.engines.dynamodb_local import SandboxError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from mypy_boto3_dynamodb import DynamoDBClient


class TableNotActiveError(SandboxError):
    """A table did not reach ``ACTIVE`` (with all its GSIs) in time."""


def table_name(spec: TableSpec, suffix: str = "") -> str:
    """Return the sandbox's physical name of a table.

    Parameters
    ----------
    spec : TableSpec
        The table.
    suffix : str
        Appended to ``spec.default_name`` (e.g. ``-test-1a2b``) for isolated tables.

    Returns
    -------
    str
        The table name.
    """
    return f"{spec.default_name}{suffix}"


def _is_active(client: DynamoDBClient, name: str) -> bool:
    table = client.describe_table(TableName=name)["Table"]
    if table.get("TableStatus") != "ACTIVE":
        return False
    return all(g.get("IndexStatus") == "ACTIVE" for g in table.get("GlobalSecondaryIndexes", []))


def wait_active(client: DynamoDBClient, name: str, timeout_s: float = 30.0) -> None:
    """Wait until a table and all its GSIs are ``ACTIVE``.

    Parameters
    ----------
    client : DynamoDBClient
        Client bound to the endpoint.
    name : str
        Table name.
    timeout_s : float
        Seconds to wait; polls ``DescribeTable`` with a back-off from 10 ms to 0.5 s.

    Raises
    ------
    TableNotActiveError
        When the table is not active within ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.01
    while not _is_active(client, name):
        if time.monotonic() >= deadline:
            raise TableNotActiveError(f"table {name!r} not ACTIVE after {timeout_s:.0f} s")
        # DescribeTable is the only way to observe the status: back off between polls.
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def create_tables(
    client: DynamoDBClient,
    *,
    suffix: str = "",
    specs: Iterable[TableSpec] = ALL_TABLES,
    exist_ok: bool = True,
    timeout_s: float = 30.0,
) -> dict[str, str]:
    """Create every table (default: all of ``infra.table_specs.ALL_TABLES``).

    Parameters
    ----------
    client : DynamoDBClient
        Client bound to DynamoDB Local (or any endpoint).
    suffix : str
        Appended to each default name, for isolated sets of tables.
    specs : iterable of TableSpec
        Tables to create.
    exist_ok : bool
        Leave a table that already exists as it is instead of failing.
    timeout_s : float
        Seconds to wait for each table to become ``ACTIVE``.

    Returns
    -------
    dict of str to str
        Logical id (``DataTable``, ``MetadataTable``) to physical table name.

    Raises
    ------
    botocore.exceptions.ClientError
        ``ResourceInUseException`` when a table exists and ``exist_ok`` is False.
    TableNotActiveError
        When a table does not become active in time.
    """
    created: dict[str, str] = {}
    ttl: dict[str, str] = {}
    for spec in specs:
        name = table_name(spec, suffix)
        try:
            client.create_table(**create_table_request(spec, name))
            if spec.ttl_attribute:
                ttl[name] = spec.ttl_attribute
        except client.exceptions.ResourceInUseException:
            if not exist_ok:
                raise
        created[spec.logical_id] = name
    for name in created.values():
        wait_active(client, name, timeout_s)
    for name, attribute in ttl.items():  # as the stack's TimeToLiveSpecification does
        client.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute},
        )
    return created


def delete_tables(client: DynamoDBClient, names: Iterable[str]) -> None:
    """Delete tables, ignoring those that do not exist.

    Parameters
    ----------
    client : DynamoDBClient
        Client bound to the endpoint.
    names : iterable of str
        Table names.
    """
    for name in names:
        try:
            client.delete_table(TableName=name)
        except client.exceptions.ResourceNotFoundException:
            continue


def data_and_metadata(names: dict[str, str]) -> tuple[str, str]:
    """Pick the data and metadata table names out of :func:`create_tables`' result.

    Parameters
    ----------
    names : dict of str to str
        Logical id to physical name.

    Returns
    -------
    tuple of (str, str)
        ``(data_table, metadata_table)``.
    """
    return names[DATA_TABLE.logical_id], names[METADATA_TABLE.logical_id]
