"""What the emulator's tests share: the scale, a manual clock and a data table."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from sandbox.engines.dynamodb_local import DynamoDBLocal
from sandbox.tables import create_tables, data_and_metadata, delete_tables

REGION = "eu-west-1"
SCALE = 0.01  # 10 WCU/s and 30 RCU/s per key
T0 = 1_800_000_000.0


class ManualClock:
    """A clock that moves only when a test sets ``now``: buckets refill on command."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def data_table(dynamodb_local: DynamoDBLocal) -> Iterator[str]:
    """A fresh data table (and its metadata table) per test module, deleted after it."""
    client = dynamodb_local.client()
    names = create_tables(client, suffix=f"-em{uuid.uuid4().hex[:8]}", exist_ok=False)
    yield data_and_metadata(names)[0]
    delete_tables(client, names.values())
