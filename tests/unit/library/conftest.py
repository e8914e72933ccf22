from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from dynashard import Dynashard, DynashardConfig
from infra.table_specs import ALL_TABLES, DATA_TABLE, METADATA_TABLE, create_table_request


@pytest.fixture
def ddb_client(atomic_calls: Callable[[Any], Any]) -> Iterator[object]:
    """A moto-backed DynamoDB client with the project's tables created from infra/.

    Each call is atomic (``atomic_calls``): the library calls it from its threads.
    """
    with mock_aws():
        client = atomic_calls(boto3.client("dynamodb", region_name="us-east-1"))
        for spec in ALL_TABLES:
            client.create_table(**create_table_request(spec))
        yield client


@pytest.fixture
def facade(ddb_client: object) -> Iterator[Dynashard]:
    ds = Dynashard(
        DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name, max_workers=4),
        client=ddb_client,  # type: ignore[arg-type]
    )
    yield ds
    ds.close()
