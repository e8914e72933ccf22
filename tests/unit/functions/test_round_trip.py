"""Ingest -> query through the real handlers and a moto-backed Dynashard (no network)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from dynashard import Dynashard
from functions.ingest import app as ingest
from functions.query import app as query

from .support import LambdaContext, load_event


def _get(
    name: str, path: str | None = None, params: dict[str, str] | None = None
) -> dict[str, Any]:
    event = load_event(name)
    if path is not None:
        event["path"] = path
    if params is not None:
        event["queryStringParameters"] = params
        event["multiValueQueryStringParameters"] = {k: [v] for k, v in params.items()}
    return event


def test_events_written_by_api_sqs_and_kinesis_read_back_in_order(
    facade: Dynashard, context: LambdaContext
) -> None:
    # Given events arriving through the API, SQS and Kinesis (with duplicates across them)
    ok = ingest.api_handler(load_event("api_post_events_batch"), context, facade=facade)
    assert ok["statusCode"] == 200
    sqs = ingest.sqs_handler(load_event("sqs_batch"), context, facade=facade)
    kinesis = ingest.kinesis_handler(load_event("kinesis_batch"), context, facade=facade)
    assert sqs == {
        "batchItemFailures": [{"itemIdentifier": "9d6e3b8a-1c2f-4e5d-8a7b-3f0e1d2c4b5a"}]
    }
    assert kinesis == {"batchItemFailures": []}
    # When JFK's day is read, page by page, through the query handler
    seen: list[dict[str, Any]] = []
    params = {"key": "DEPARTURES#JFK", "from": "2013-01-01", "to": "2013-01-02", "limit": "1"}
    for _ in range(5):
        response = query.handler(_get("api_get_events", params=params), context, facade=facade)
        assert response["statusCode"] == 200
        body = json.loads(response["body"])
        seen.extend(body["items"])
        if body["cursor"] is None:
            break
        params = {**params, "cursor": body["cursor"]}
    # Then each event is there once (redeliveries collapse), in time order, data intact
    assert [(e["id"], e["ts"]) for e in seen] == [
        ("2013-01-01-B6-725", "2013-01-01T05:40:00.000000Z"),
        ("2013-01-01-UA-1696", "2013-01-01T05:58:00.000000Z"),
    ]
    assert seen[0]["data"]["dep_delay"] == -1.0
    assert seen[0]["data"]["flight"] == 725


def test_descending_read_and_empty_window(facade: Dynashard, context: LambdaContext) -> None:
    ingest.api_handler(load_event("api_post_events_batch"), context, facade=facade)
    params = {"key": "DEPARTURES#JFK", "order": "desc"}
    body = json.loads(
        query.handler(_get("api_get_events", params=params), context, facade=facade)["body"]
    )
    assert [e["id"] for e in body["items"]] == ["2013-01-01-UA-1696", "2013-01-01-B6-725"]
    params = {"key": "DEPARTURES#JFK", "from": "2014-01-01T00:00:00Z"}
    body = json.loads(
        query.handler(_get("api_get_events", params=params), context, facade=facade)["body"]
    )
    plan = body.pop("plan")
    assert body == {"items": [], "cursor": None, "shards_queried": 1}
    assert plan["path"] == "base" and plan["requests"] == 1


def test_counter_increments_read_back_and_idempotency_key_counts_once(
    facade: Dynashard, context: LambdaContext
) -> None:
    # Given the same keyed increment twice and an unkeyed one
    post = load_event("api_post_counter")
    assert ingest.api_handler(post, context, facade=facade)["statusCode"] == 200
    assert ingest.api_handler(post, context, facade=facade)["statusCode"] == 200
    unkeyed = load_event("api_post_counter")
    del unkeyed["headers"]["Idempotency-Key"]
    del unkeyed["multiValueHeaders"]["Idempotency-Key"]
    unkeyed["body"] = json.dumps({"by": -2})
    ingest.api_handler(unkeyed, context, facade=facade)
    # When the counter is read through the query handler
    response = query.handler(load_event("api_get_counter"), context, facade=facade)
    # Then the keyed one counted once: 5 - 2
    assert response["statusCode"] == 200
    body = json.loads(response["body"])
    assert body["name"] == "CARRIER#UA"
    assert body["value"] == 3
    assert body["shards"] >= 1


def test_shard_info_of_a_written_and_a_grown_key(facade: Dynashard, context: LambdaContext) -> None:
    ingest.api_handler(load_event("api_post_events"), context, facade=facade)
    growth = facade.grow("DEPARTURES#JFK", 4)
    assert growth.changed, growth.reason
    response = query.handler(load_event("api_get_shards"), context, facade=facade)
    assert response["statusCode"] == 200
    body = json.loads(response["body"])
    assert body["key"] == "DEPARTURES#JFK"
    assert body["number_of_shards"] == 4
    assert body["shard_history"][-1]["count"] == 4
    never = _get("api_get_shards", path="/shards/" + quote("NEVER#SEEN", safe=""))
    # a key never written nor configured: a 404 naming it (the CLI's status exits 4)
    unknown = query.handler(never, context, facade=facade)
    assert (unknown["statusCode"], json.loads(unknown["body"])["field"]) == (404, "key")


def test_bad_cursor_from_the_real_library_is_400(facade: Dynashard, context: LambdaContext) -> None:
    params = {"key": "DEPARTURES#JFK", "cursor": "not-a-cursor"}
    response = query.handler(_get("api_get_events", params=params), context, facade=facade)
    assert response["statusCode"] == 400
    assert json.loads(response["body"])["field"] == "cursor"


def test_attr_reads_one_shard_of_a_calculated_key_and_is_400_elsewhere(
    facade: Dynashard, context: LambdaContext
) -> None:
    # Given JFK sharded by carrier over 4, then 8 shards; EWR left random
    facade.set_strategy("DEPARTURES#JFK", "calculated", attribute="carrier", initial_shards=4)
    ingest.api_handler(load_event("api_post_events_batch"), context, facade=facade)
    facade.set_shard_count("DEPARTURES#JFK", 8)
    # When UA's JFK departures are read with attr=
    params = {"key": "DEPARTURES#JFK", "attr": "UA"}
    response = query.handler(_get("api_get_events", params=params), context, facade=facade)
    # Then only UA's, from one shard per count (at most 2), and the body says how many
    assert response["statusCode"] == 200
    body = json.loads(response["body"])
    assert [e["id"] for e in body["items"]] == ["2013-01-01-UA-1696"]
    assert 1 <= body["shards_queried"] <= 2
    full = query.handler(
        _get("api_get_events", params={"key": "DEPARTURES#JFK"}), context, facade=facade
    )
    assert json.loads(full["body"])["shards_queried"] == 8
    # And attr= on the random key is a 400 naming the parameter
    params = {"key": "DEPARTURES#EWR", "attr": "UA"}
    response = query.handler(_get("api_get_events", params=params), context, facade=facade)
    assert response["statusCode"] == 400
    body = json.loads(response["body"])
    assert body["field"] == "attr"
    assert "calculated" in body["message"]


def test_bucketed_family_through_the_handlers(facade: Dynashard, context: LambdaContext) -> None:
    # Given OPS_LOG bucketed by day, and events over three days posted to the API
    from dataclasses import replace

    from dynashard.core.families import parse_bucketed_keys

    ds = Dynashard(
        replace(facade.config, bucketed_keys=parse_bucketed_keys("OPS_LOG=day")),
        client=facade.client,
    )
    events = [
        {"key": "OPS_LOG", "id": f"op{d}{h}", "ts": f"2026-06-2{d}T{h:02d}:00:00Z"}
        for d in (2, 3, 4)
        for h in (1, 13)
    ]
    post = load_event("api_post_events_batch")
    post["body"] = json.dumps({"events": events})
    assert ingest.api_handler(post, context, facade=ds)["statusCode"] == 200
    # When GET /events?key=OPS_LOG&from=&to= is read newest first, 4 a page
    params = {"key": "OPS_LOG", "from": "2026-06-22", "to": "2026-06-25", "order": "desc"}
    params["limit"] = "4"
    pages = []
    while True:
        response = query.handler(_get("api_get_events", params=params), context, facade=ds)
        assert response["statusCode"] == 200, response["body"]
        body = json.loads(response["body"])
        pages.append([(e["key"], e["id"]) for e in body["items"]])
        if body["cursor"] is None:
            break
        params = {**params, "cursor": body["cursor"]}
    # Then the pages cross the day buckets in order, under the family key
    assert pages == [
        [("OPS_LOG", "op413"), ("OPS_LOG", "op41"), ("OPS_LOG", "op313"), ("OPS_LOG", "op31")],
        [("OPS_LOG", "op213"), ("OPS_LOG", "op21")],
    ]
    # And an open window on the family is a 400 naming the missing bound
    response = query.handler(_get("api_get_events", params={"key": "OPS_LOG"}), context, facade=ds)
    assert response["statusCode"] == 400
    assert json.loads(response["body"])["field"] == "from"
    ds.close()
