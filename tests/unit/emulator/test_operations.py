"""Which partition keys a request charges, on the table and on each GSI."""

from __future__ import annotations

from sandbox.emulator.limits import Charge, Resource
from sandbox.emulator.operations import (
    ImageCache,
    parse_update_expression,
    plan_delete,
    plan_put,
    plan_update,
    query_partition_key,
    read_resource,
)
from sandbox.emulator.schema import (
    IndexMeta,
    TableMeta,
    region_from_authorization,
    table_meta_from_description,
)

META = TableMeta(
    name="t",
    hash_key="PK",
    range_key="SK",
    gsis=(IndexMeta("GSI1", "GSI1PK", "GSI1SK"),),
)
T = Resource("t")
G = Resource("t", "GSI1")


def _item(pk: str, sk: str, gsi: str | None = None, pad: int = 0) -> dict[str, dict[str, str]]:
    item = {"PK": {"S": pk}, "SK": {"S": sk}, "data": {"S": "x" * pad}}
    if gsi is not None:
        item["GSI1PK"] = {"S": gsi}
        item["GSI1SK"] = {"S": "s"}
    return item


def test_put_charges_table_key_and_gsi_key_with_item_size() -> None:
    # Given a 1.5 KB item that is in the GSI
    plan = plan_put(META, _item("a#1", "s", gsi="g", pad=1500), ImageCache())
    # Then it costs 2 WCU on the table partition and 2 WCU on the GSI partition
    assert plan.charges == [Charge(T, "a#1", 2.0), Charge(G, "g", 2.0)]


def test_put_without_gsi_key_charges_table_only() -> None:
    plan = plan_put(META, _item("a", "s"), ImageCache())
    assert plan.charges == [Charge(T, "a", 1.0)]


def test_transactional_put_costs_double() -> None:
    plan = plan_put(META, _item("a", "s", gsi="g"), ImageCache(), transactional=True)
    assert plan.charges == [Charge(T, "a", 2.0), Charge(G, "g", 2.0)]


def test_moving_gsi_key_charges_old_and_new_partitions() -> None:
    # Given an item seen with GSI key "old"
    cache = ImageCache()
    first = plan_put(META, _item("a", "s", gsi="old"), cache)
    cache.put(first.cache_key, first.image_after)
    # When it is updated to GSI key "new"
    plan = plan_update(
        META,
        {
            "Key": {"PK": {"S": "a"}, "SK": {"S": "s"}},
            "UpdateExpression": "SET #g = :g",
            "ExpressionAttributeNames": {"#g": "GSI1PK"},
            "ExpressionAttributeValues": {":g": {"S": "new"}},
        },
        cache,
    )
    # Then two index writes: delete the old entry, put the new one
    assert [c for c in plan.charges if c.resource == G] == [
        Charge(G, "old", 1.0),
        Charge(G, "new", 1.0),
    ]


def test_delete_of_known_item_charges_its_size_and_gsi_entry() -> None:
    cache = ImageCache()
    first = plan_put(META, _item("a", "s", gsi="g", pad=3000), cache)
    cache.put(first.cache_key, first.image_after)
    plan = plan_delete(META, {"PK": {"S": "a"}, "SK": {"S": "s"}}, cache)
    assert plan.charges == [Charge(T, "a", 3.0), Charge(G, "g", 3.0)]
    assert plan.image_after is None


def test_update_of_unseen_item_not_touching_gsi_charges_table_only() -> None:
    plan = plan_update(
        META,
        {
            "Key": {"PK": {"S": "c"}, "SK": {"S": "s"}},
            "UpdateExpression": "ADD #n :one",
            "ExpressionAttributeNames": {"#n": "count"},
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        },
        ImageCache(),
    )
    assert plan.charges == [Charge(T, "c", 1.0)]


def test_parse_update_expression_clauses() -> None:
    effects = parse_update_expression(
        "SET a = :a, #b = if_not_exists(#b, :b), c = c + :one, m.x = :x REMOVE d ADD n :one",
        {"#b": "bee"},
        {":a": {"S": "A"}, ":b": {"S": "B"}, ":one": {"N": "1"}, ":x": {"S": "X"}},
    )
    assert effects.assigned == {"a": {"S": "A"}, "bee": {"S": "B"}, "c": None, "m": None}
    assert effects.removed == {"d"}
    assert effects.added == {"n": {"N": "1"}}


def test_query_partition_key_from_expression_and_legacy_conditions() -> None:
    request = {
        "KeyConditionExpression": "#p = :p AND begins_with(SK, :s)",
        "ExpressionAttributeNames": {"#p": "PK"},
        "ExpressionAttributeValues": {":p": {"S": "DEPARTURES#JFK#3"}, ":s": {"S": "2013"}},
    }
    assert query_partition_key(request, "PK") == "DEPARTURES#JFK#3"
    legacy = {
        "KeyConditions": {"PK": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "k"}]}}
    }
    assert query_partition_key(legacy, "PK") == "k"
    assert query_partition_key({"KeyConditionExpression": "SK = :s"}, "PK") is None


def test_read_resource_of_gsi_and_table() -> None:
    assert read_resource(META, "GSI1") == (G, "GSI1PK")
    assert read_resource(META, None) == (T, "PK")


def test_table_meta_from_describe_table() -> None:
    meta = table_meta_from_description(
        {
            "TableName": "t",
            "KeySchema": [
                {"AttributeName": "PK", "KeyType": "HASH"},
                {"AttributeName": "SK", "KeyType": "RANGE"},
            ],
            "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
            "ProvisionedThroughput": {"ReadCapacityUnits": 0, "WriteCapacityUnits": 0},
            "OnDemandThroughput": {"MaxReadRequestUnits": -1, "MaxWriteRequestUnits": 200},
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "GSI1",
                    "KeySchema": [{"AttributeName": "G", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
        }
    )
    assert meta.on_demand and meta.provisioned_wcu is None
    assert meta.max_read_units is None and meta.max_write_units == 200
    assert meta.gsis[0].hash_key == "G" and meta.gsis[0].projection == "KEYS_ONLY"


def test_region_from_sigv4_credential_scope() -> None:
    header = (
        "AWS4-HMAC-SHA256 Credential=AKID/20240101/eu-west-1/dynamodb/aws4_request, "
        "SignedHeaders=host, Signature=abc"
    )
    assert region_from_authorization(header) == "eu-west-1"
    assert region_from_authorization(None) is None
