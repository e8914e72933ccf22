"""README.md's Python, run as written against DynamoDB Local.

The README's "Use it in your service" example works on the reader's own table: a hot
partition key (``OPS_LOG``) that already holds items in the table's own shape, and a
metadata table beside it. This test builds those two tables under the README's names,
puts a few entries under the bare key the way the service would, runs every ``python``
block of the README in order, as one script in a fresh interpreter with only the
endpoint and credentials a user would set, and checks what the script printed against
the table: the old entries and the new one merged in sort-key order, the new one on a
shard ``OPS_LOG#0..3``. DynamoDB Local comes from the ``dynamodb_local`` fixture, which
fails the test, never skips it, when Java or the engine is missing. The README names its
tables (``ops``, ``ops-shards``), so the test refuses to start if they exist and deletes
them afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.engines.dynamodb_local import DynamoDBLocal

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The tables the README's example names.
DATA, META = "ops", "ops-shards"
#: Entries the service wrote under the bare key before dynashard: (SK, agent).
EXISTING = (
    ("2026-06-22T09:00:00.000Z#planner", "planner"),
    ("2026-06-22T11:30:00.000Z#reviewer", "reviewer"),
)
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def readme_python() -> str:
    """Every ``python`` block of the README, in order, as one script."""
    blocks = _BLOCK.findall(README.read_text(encoding="utf-8"))
    assert blocks, "README.md has no python block to run"
    return "\n".join(blocks)


def test_the_readme_names_the_tables_this_test_builds() -> None:
    # A renamed table in the README would otherwise run against tables nobody made
    script = readme_python()
    assert f'data_table="{DATA}"' in script and f'metadata_table="{META}"' in script


def _create_tables(client: Any) -> None:
    existing = set(client.list_tables()["TableNames"])
    clash = existing & {DATA, META}
    assert not clash, f"tables {sorted(clash)} exist already: refusing to reuse them"
    client.create_table(
        TableName=DATA,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
    )
    client.create_table(
        TableName=META,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "key", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "key", "KeyType": "HASH"}],
    )
    for name in (DATA, META):
        client.get_waiter("table_exists").wait(TableName=name)


@pytest.fixture
def user_tables(dynamodb_local: DynamoDBLocal) -> Iterator[Any]:
    """The reader's table with entries under the bare key, and the metadata table."""
    client = dynamodb_local.client()
    _create_tables(client)
    try:
        for sort_key, agent in EXISTING:
            client.put_item(
                TableName=DATA,
                Item={"PK": {"S": "OPS_LOG"}, "SK": {"S": sort_key}, "agent": {"S": agent}},
            )
        yield client
    finally:
        for name in (DATA, META):
            client.delete_table(TableName=name)


def test_the_readme_example_runs_against_the_users_own_table(
    user_tables: Any, dynamodb_local: DynamoDBLocal, tmp_path: Path
) -> None:
    # Given the README's Python as a user's script, and only what a user would set
    script = tmp_path / "readme_example.py"
    script.write_text(readme_python(), encoding="utf-8")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT / "layers" / "dynashard" / "src"),
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_local.endpoint_url,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    # When it runs in a fresh interpreter, outside the checkout
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    # Then it printed the old entries and the new one, merged in sort-key order, one page
    assert result.stdout.strip().splitlines()[-1] == "['planner', 'op-1', 'reviewer'] None"
    # And the old entries stayed under the bare key; the new one is on one of 4 shards
    items = user_tables.scan(TableName=DATA)["Items"]
    by_pk: dict[str, list[str]] = {}
    for item in items:
        by_pk.setdefault(item["PK"]["S"], []).append(item["SK"]["S"])
    assert sorted(by_pk.pop("OPS_LOG")) == [sort_key for sort_key, _ in EXISTING]
    assert len(by_pk) == 1, by_pk
    ((physical, sort_keys),) = by_pk.items()
    assert physical in {f"OPS_LOG#{shard}" for shard in range(4)}
    assert sort_keys == ["2026-06-22T10:15:00.000Z#op-1"]
    info = user_tables.get_item(TableName=META, Key={"key": {"S": "OPS_LOG"}})["Item"]
    assert info["number_of_shards"]["N"] == "4"
    assert info["adopted"]["BOOL"] is True
