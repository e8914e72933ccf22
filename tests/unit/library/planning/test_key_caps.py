"""A key's own cap on its shard count (metadata attribute ``max_shards``, issue 26 defect 10).

Every growth path must honour it: the facade's grow, the operator's set (unless forced),
a writer's in-band growth, and the scaler's plan (tests/unit/library/planning/test_scaling.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig
from dynashard.errors import InvalidInputError
from infra.table_specs import DATA_TABLE, METADATA_TABLE

from ..core.test_throttling import build, throttle
from ..dynamodb.test_writer_reader import make_events


def test_grow_stops_at_the_keys_own_cap(facade: Dynashard) -> None:
    # Given a key capped at 2 shards (the configured cap is 1,000)
    info = facade.set_max_shards("L", 2)
    assert (info.max_shards, info.number_of_shards) == (2, 1)
    # When it is grown to 8
    result = facade.grow("L", 8)
    # Then it stops at its cap
    assert (result.changed, result.current) == (True, 2)
    assert facade.shard_info("L").number_of_shards == 2
    assert facade.grow("L", 8).reason == "capped"


def test_the_cap_is_stored_and_read_back(facade: Dynashard) -> None:
    facade.set_max_shards("L", 3)
    assert facade.shard_info("L").max_shards == 3
    assert facade.shard_info("L").to_json()["max_shards"] == 3
    facade.set_max_shards("L", None)  # removed: the configured cap applies again
    assert facade.shard_info("L").max_shards is None
    assert facade.grow("L", 8).current == 8


def test_setting_a_count_above_the_cap_is_refused_unless_forced(facade: Dynashard) -> None:
    facade.set_max_shards("L", 2)
    with pytest.raises(InvalidInputError, match="max_shards of 'L', 2"):
        facade.set_shard_count("L", 8)
    assert facade.shard_info("L").number_of_shards == 1
    assert facade.set_shard_count("L", 8, force=True).current == 8


def test_a_cap_below_the_count_in_force_is_refused(facade: Dynashard) -> None:
    facade.set_shard_count("L", 4)
    with pytest.raises(InvalidInputError, match="below the 4 shard"):
        facade.set_max_shards("L", 2)
    with pytest.raises(InvalidInputError, match=r"within 1\.\.1000"):
        facade.set_max_shards("L", 1001)


def test_in_band_growth_stops_at_the_cap(ddb_client: Any) -> None:
    # Given a key capped at 2 and a writer throttled by key range three times
    ds, writer = build(ddb_client, throttle("TableWriteKeyRangeThroughputExceeded"), times=3)
    ds.set_max_shards("K", 2)
    ds.set_shard_count("K", 2)
    # When it writes (it asks for growth in-band, doubling)
    assert all(o.ok for o in writer.write(make_events(10)))
    # Then the key did not grow past its cap
    assert ds.shard_info("K").number_of_shards == 2


def test_the_configured_cap_still_bounds_a_keys_cap(ddb_client: Any) -> None:
    ds = Dynashard(
        DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name, max_shards=4),
        client=ddb_client,  # type: ignore[arg-type]
    )
    with pytest.raises(InvalidInputError):
        ds.set_max_shards("L", 8)
    assert ds.grow("L", 100).current == 4


def test_a_cap_stored_in_the_metadata_item_is_honoured(facade: Dynashard, ddb_client: Any) -> None:
    # Given a key whose metadata item carries max_shards = 2 (the data model's attribute)
    facade.set_shard_count("L", 1)
    ddb_client.update_item(
        TableName=METADATA_TABLE.default_name,
        Key={"key": {"S": "L"}},
        UpdateExpression="SET max_shards = :m",
        ExpressionAttributeValues={":m": {"N": "2"}},
    )
    # When it is grown to 8, Then it stops at 2
    assert facade.grow("L", 8).current == 2
