"""The data and metadata tables, as the specs and the issue require."""

from __future__ import annotations

import pytest

from dynashard import names
from infra.table_specs import DATA_TABLE, METADATA_TABLE
from tests.infrastructure.conftest import Synth

pytestmark = pytest.mark.infra


def _table(s: Synth, which: str) -> dict:
    tables = s.stack.tables
    construct = tables.data_table if which == "data" else tables.metadata_table
    return s.resources[s.logical_id(construct)]


def test_data_table_keys_and_gsi_come_from_the_spec(dev: Synth) -> None:
    props = _table(dev, "data")["Properties"]
    assert props["KeySchema"] == [
        {"AttributeName": DATA_TABLE.partition_key, "KeyType": "HASH"},
        {"AttributeName": DATA_TABLE.sort_key, "KeyType": "RANGE"},
    ]
    (gsi,) = props["GlobalSecondaryIndexes"]
    (spec,) = DATA_TABLE.indexes
    assert gsi == {
        "IndexName": names.GSI1_NAME,
        "KeySchema": [
            {"AttributeName": spec.partition_key, "KeyType": "HASH"},
            {"AttributeName": spec.sort_key, "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "ALL"},
    }
    assert {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]} == {
        names.ATTR_PK: "S",
        names.ATTR_SK: "S",
        names.ATTR_GSI1PK: "S",
        names.ATTR_GSI1SK: "S",
    }


def test_data_table_defaults_on_demand_pitr_encryption_insights(dev: Synth) -> None:
    table = _table(dev, "data")
    props = table["Properties"]
    (replica,) = props["Replicas"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert "WriteOnDemandThroughputSettings" not in props  # uncapped by default
    assert "WarmThroughput" not in props
    assert props["SSESpecification"] == {"SSEEnabled": True, "SSEType": "KMS"}
    assert replica["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    insights = {"Enabled": True, "Mode": "ACCESSED_AND_THROTTLED_KEYS"}
    assert replica["ContributorInsightsSpecification"] == insights
    assert replica["GlobalSecondaryIndexes"] == [
        {"IndexName": names.GSI1_NAME, "ContributorInsightsSpecification": insights}
    ]
    # dev stage: throw-away tables
    assert table["DeletionPolicy"] == "Delete"
    assert replica.get("DeletionProtectionEnabled") in (None, False)


def test_prod_stage_retains_protects_and_applies_caps(prod: Synth) -> None:
    table = _table(prod, "data")
    props = table["Properties"]
    (replica,) = props["Replicas"]
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"
    assert replica["DeletionProtectionEnabled"] is True
    assert replica["ContributorInsightsSpecification"]["Mode"] == "THROTTLED_KEYS"
    assert replica["ReadOnDemandThroughputSettings"] == {"MaxReadRequestUnits": 20000}
    assert props["WriteOnDemandThroughputSettings"] == {"MaxWriteRequestUnits": 8000}
    assert props["WarmThroughput"] == {"ReadUnitsPerSecond": 15000, "WriteUnitsPerSecond": 6000}
    meta = _table(prod, "metadata")
    assert meta["DeletionPolicy"] == "Retain"
    assert meta["Properties"]["Replicas"][0]["DeletionProtectionEnabled"] is True


def test_metadata_table_simple_key_on_demand_pitr(dev: Synth) -> None:
    props = _table(dev, "metadata")["Properties"]
    assert props["KeySchema"] == [
        {"AttributeName": METADATA_TABLE.partition_key, "KeyType": "HASH"}
    ]
    assert METADATA_TABLE.partition_key == names.ATTR_META_KEY
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert "GlobalSecondaryIndexes" not in props
    assert props["Replicas"][0]["PointInTimeRecoverySpecification"] == {
        "PointInTimeRecoveryEnabled": True
    }


def test_exactly_two_tables(dev: Synth) -> None:
    assert len(dev.of_type("AWS::DynamoDB::GlobalTable")) == 2
    assert not dev.of_type("AWS::DynamoDB::Table")


def test_data_table_expires_items_through_its_ttl_attribute(dev: Synth) -> None:
    # Idempotency markers of counters carry it (dynashard.dynamodb.counters), so they expire.
    props = _table(dev, "data")["Properties"]
    assert props["TimeToLiveSpecification"] == {
        "AttributeName": names.ATTR_EXPIRES_AT,
        "Enabled": True,
    }
    assert DATA_TABLE.ttl_attribute == names.ATTR_EXPIRES_AT
