"""Query function: GET /events, /counters/{name}, /shards/{key}, and the OpenAPI document."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from dynashard import names
from dynashard.errors import CursorError, MetadataError, ShardQueryError
from dynashard.lambda_kit.cursors import CursorSigner
from functions import openapi
from functions.query import app as query

from .support import FakeFacade, LambdaContext, load_event


def _body(response: dict[str, Any]) -> dict[str, Any]:
    return json.loads(response["body"])


def _get_events(**params: str | None) -> dict[str, Any]:
    """The sample GET /events with some query parameters replaced (None removes one)."""
    event = load_event("api_get_events")
    for name, value in params.items():
        if value is None:
            event["queryStringParameters"].pop(name, None)
            event["multiValueQueryStringParameters"].pop(name, None)
        else:
            event["queryStringParameters"][name] = value
            event["multiValueQueryStringParameters"][name] = [value]
    return event


# --- GET /events ------------------------------------------------------------------------------
def test_get_events_passes_the_parsed_window_and_answers_items_and_cursor(
    context: LambdaContext,
) -> None:
    # Given the sample request: from ISO-8601, to epoch millis, limit 50, asc
    facade = FakeFacade()
    # When it is handled
    response = query.handler(load_event("api_get_events"), context, facade=facade)
    # Then the library gets UTC datetimes and the answer is items, cursor, shards queried
    assert response["statusCode"] == 200
    assert facade.query_calls == [
        (
            "DEPARTURES#JFK",
            {
                "start": datetime(2013, 1, 1, tzinfo=UTC),
                "end": datetime(2013, 1, 2, tzinfo=UTC),
                "limit": 50,
                "descending": False,
                "cursor": None,
                "allow_partial": False,
                "attribute_value": None,
                "consistent": True,
                "path": "auto",
            },
        )
    ]
    body = _body(response)
    assert set(body) == {"items", "cursor", "shards_queried", "plan"}
    assert body["plan"]["path"] == "base"
    assert body["plan"]["reason"].startswith("consistent=true")
    assert body["shards_queried"] == 4
    # the library's cursor, signed for the client (issue 39)
    assert body["cursor"] != "opaque-cursor"
    assert query.get_cursor_signer().open(body["cursor"]) == "opaque-cursor"
    assert body["items"][0]["data"] == {"dep_delay": -1.5}


def test_get_events_defaults(context: LambdaContext) -> None:
    facade = FakeFacade()
    event = _get_events(**{"from": None, "to": None, "limit": None, "order": None})
    response = query.handler(event, context, facade=facade)
    assert response["statusCode"] == 200
    [(_key, kwargs)] = facade.query_calls
    assert kwargs["limit"] == 100
    assert kwargs["descending"] is False
    assert kwargs["start"] is None and kwargs["end"] is None
    assert _body(response)["cursor"] is None


def test_get_events_desc_and_cursor_are_passed_through(context: LambdaContext) -> None:
    facade = FakeFacade()
    signed = query.get_cursor_signer().sign("abc")
    query.handler(_get_events(order="desc", cursor=signed), context, facade=facade)
    [(_key, kwargs)] = facade.query_calls
    assert kwargs["descending"] is True
    assert kwargs["cursor"] == "abc"  # the library gets its own cursor back


def test_attr_is_passed_through_as_the_targeted_value(context: LambdaContext) -> None:
    facade = FakeFacade()
    response = query.handler(_get_events(attr="UA"), context, facade=facade)
    assert response["statusCode"] == 200
    assert facade.query_calls[0][1]["attribute_value"] == "UA"


def test_consistent_false_lets_the_plan_read_gsi1_and_logs_it(
    context: LambdaContext, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a window read that allows eventual consistency
    facade = FakeFacade()
    response = query.handler(_get_events(consistent="false"), context, facade=facade)
    # Then the library is asked for it, and the body and the log say which path was taken
    assert response["statusCode"] == 200
    assert facade.query_calls[0][1]["consistent"] is False
    assert facade.query_calls[0][1]["path"] == "auto"
    plan = _body(response)["plan"]
    assert plan == {
        "path": "gsi1",
        "requests": 1,
        "expected_rcu": 12.5,
        "reason": plan["reason"],
    }
    [record] = [r for r in caplog.records if r.getMessage() == "read plan"]
    assert getattr(record, "plan", None) == plan
    assert getattr(record, "key", None) == "DEPARTURES#JFK"


def test_path_gsi1_with_consistent_read_is_400_naming_consistent(
    context: LambdaContext,
) -> None:
    response = query.handler(_get_events(path="gsi1"), context, facade=FakeFacade())
    assert response["statusCode"] == 400
    assert _body(response)["field"] == "consistent"


def test_partial_results_name_the_missing_shards(context: LambdaContext) -> None:
    facade = FakeFacade()
    response = query.handler(_get_events(partial="true"), context, facade=facade)
    assert response["statusCode"] == 200
    assert facade.query_calls[0][1]["allow_partial"] is True
    assert _body(response)["missing_shards"] == ["DEPARTURES#JFK#3"]


def test_get_events_emits_latency_and_shards_queried(
    context: LambdaContext, capsys: pytest.CaptureFixture[str]
) -> None:
    query.handler(load_event("api_get_events"), context, facade=FakeFacade())
    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    names = {m["Name"] for b in blobs for m in b["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert {"ReadLatency", "ShardsQueried"} <= names
    assert any(b.get("ShardsQueried") in (4, 4.0, [4.0]) for b in blobs)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"key": None}, "key"),
        ({"key": ""}, "key"),
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"order": "sideways"}, "order"),
        ({"partial": "perhaps"}, "partial"),
        ({"attr": ""}, "attr"),
        ({"consistent": "maybe"}, "consistent"),
        ({"path": "lsi"}, "path"),
    ],
)
def test_bad_parameter_is_400_naming_it(
    context: LambdaContext, params: dict[str, str | None], field: str
) -> None:
    # Powertools' validation notices these (its default answer is a 422): one status
    # for invalid input, 400, whichever layer notices it
    facade = FakeFacade()
    response = query.handler(_get_events(**params), context, facade=facade)
    assert response["statusCode"] == 400
    body = _body(response)
    assert body["field"] == field
    assert body["message"].startswith(f"{field}: ")
    assert facade.query_calls == []


def test_an_unknown_query_parameter_is_400_naming_it(context: LambdaContext) -> None:
    # Given a misspelled parameter (form for from), which was ignored: the whole key read
    facade = FakeFacade()
    response = query.handler(_get_events(form="2013-01-01T00:00:00Z"), context, facade=facade)
    # Then it is invalid input naming it, and nothing is read (schemathesis found it)
    assert response["statusCode"] == 400
    body = _body(response)
    assert body["field"] == "form"
    assert body["message"].startswith("form: is not a query parameter of GET /events (it takes:")
    assert facade.query_calls == []


@pytest.mark.parametrize("field", ["from", "to"])
def test_a_bound_in_epoch_seconds_is_400_naming_the_parameter(
    context: LambdaContext, field: str
) -> None:
    # Given 2013-01-01T10:15Z in epoch seconds, which as milliseconds is 1970-01-16
    facade = FakeFacade()
    response = query.handler(_get_events(**{field: "1357035300"}), context, facade=facade)
    # Then it is refused naming the parameter, not read as a window in 1970
    assert response["statusCode"] == 400
    body = _body(response)
    assert body["field"] == field
    assert "what epoch seconds look like" in body["message"]
    assert facade.query_calls == []


@pytest.mark.parametrize("field", ["from", "to"])
def test_unparseable_time_is_400_naming_the_parameter(context: LambdaContext, field: str) -> None:
    facade = FakeFacade()
    response = query.handler(_get_events(**{field: "yesterday"}), context, facade=facade)
    assert response["statusCode"] == 400
    body = _body(response)
    assert body["field"] == field
    assert "ISO-8601" in body["message"]
    assert facade.query_calls == []


def test_bad_cursor_is_400(context: LambdaContext) -> None:
    signed = query.get_cursor_signer().sign("zzz")
    response = query.handler(
        _get_events(cursor=signed), context, facade=FakeFacade(raises=CursorError("not ours"))
    )
    assert response["statusCode"] == 400
    assert _body(response) == {"message": "cursor: not ours", "field": "cursor"}


@pytest.mark.parametrize(
    "forge",
    [
        lambda signed: signed.rpartition(".")[0],  # the library's cursor, unsigned
        lambda signed: "eyJ2IjoxLCJwIjoiISJ9" + signed[signed.index(".") :],  # edited position
        lambda signed: signed[:-1] + ("A" if signed[-1] != "A" else "B"),  # edited signature
        lambda signed: CursorSigner("another-deployment-" + "x" * 32).sign("opaque-cursor"),
        lambda signed: signed + "é",
    ],
)
def test_a_cursor_the_server_did_not_issue_is_400_and_reads_nothing(
    context: LambdaContext, forge: Callable[[str], str]
) -> None:
    # Given a cursor this API handed out, then forged, edited or signed by another key
    facade = FakeFacade()
    first = query.handler(_get_events(), context, facade=facade)
    cursor = forge(_body(first)["cursor"])
    # When it is sent back
    response = query.handler(_get_events(cursor=cursor), context, facade=facade)
    # Then it is a 400 naming cursor, and DynamoDB is never asked (before issue 39 a
    # forged position came back as a retryable 503 with DynamoDB's ValidationException)
    assert response["statusCode"] == 400
    assert _body(response)["field"] == "cursor"
    assert "was not issued by this API" in _body(response)["message"]
    assert len(facade.query_calls) == 1


def test_a_missing_cursor_key_is_refused_at_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # The function's settings require the stack's key (no unsigned fallback)
    monkeypatch.delenv(names.ENV_CURSOR_KEY)
    with pytest.raises(ValueError, match=names.ENV_CURSOR_KEY):
        query.Settings()
    monkeypatch.setenv(names.ENV_CURSOR_KEY, "short")
    with pytest.raises(ValueError, match="at least 32"):
        query.Settings()


def test_failed_shard_is_503_naming_it_never_an_empty_page(context: LambdaContext) -> None:
    failure = ShardQueryError({"DEPARTURES#JFK#2": "ProvisionedThroughputExceededException"})
    response = query.handler(
        load_event("api_get_events"), context, facade=FakeFacade(raises=failure)
    )
    assert response["statusCode"] == 503
    body = _body(response)
    assert body["shards"] == ["DEPARTURES#JFK#2"]
    assert "items" not in body


def test_other_library_error_is_500(context: LambdaContext) -> None:
    response = query.handler(
        load_event("api_get_events"), context, facade=FakeFacade(raises=MetadataError())
    )
    assert response["statusCode"] == 500
    assert _body(response)["message"] == "shard metadata unavailable"


# --- GET /counters/{name}, GET /shards/{key} ---------------------------------------------------
def test_get_counter_decodes_the_name(context: LambdaContext) -> None:
    response = query.handler(load_event("api_get_counter"), context, facade=FakeFacade())
    assert response["statusCode"] == 200
    assert _body(response) == {"name": "CARRIER#UA", "value": 42, "shards": 3}


def test_get_shards_answers_count_and_history(context: LambdaContext) -> None:
    facade = FakeFacade(shards={"DEPARTURES#JFK": 4})
    response = query.handler(load_event("api_get_shards"), context, facade=facade)
    assert response["statusCode"] == 200
    assert _body(response) == {
        "key": "DEPARTURES#JFK",
        "number_of_shards": 4,
        "last_updated": 1_700_000_000,
        "shard_history": [{"since": 1_700_000_000, "count": 1}],
        "strategy": "random",
        "shard_attribute": None,
        "adopted": False,
        "max_shards": None,
    }


def test_get_shards_of_a_key_without_metadata_is_404_naming_it(context: LambdaContext) -> None:
    # Given a key nothing was written to nor configured (the CLI's status exits 4)
    facade = FakeFacade(stored=False)
    # When its metadata is read
    response = query.handler(load_event("api_get_shards"), context, facade=facade)
    # Then the answer says so, naming the key, instead of a default N=1
    assert response["statusCode"] == 404
    body = _body(response)
    assert body["field"] == "key"
    assert "'DEPARTURES#JFK' has no shard metadata" in body["message"]


def test_query_function_does_not_serve_writes(context: LambdaContext) -> None:
    facade = FakeFacade()
    response = query.handler(load_event("api_post_events"), context, facade=facade)
    assert response["statusCode"] in (404, 405)
    assert facade.put_calls == []


# --- OpenAPI ----------------------------------------------------------------------------------
def test_openapi_document_lists_every_route() -> None:
    document = openapi.openapi_schema()
    routes = {(path, method) for path, ops in document["paths"].items() for method in ops}
    assert routes == {
        ("/events", "post"),
        ("/counters/{name}", "post"),
        ("/events", "get"),
        ("/counters/{name}", "get"),
        ("/shards/{key}", "get"),
        ("/index/{key}/layout", "put"),
        ("/index/{key}", "post"),
        ("/index/{key}", "get"),
        ("/shards/{key}/strategy", "put"),
        ("/shards/{key}/max-shards", "put"),
    }
    params = {p["name"] for p in document["paths"]["/events"]["get"]["parameters"]}
    assert params == {
        "key",
        "from",
        "to",
        "limit",
        "order",
        "cursor",
        "partial",
        "attr",
        "consistent",
        "path",
    }
    page = document["components"]["schemas"]["EventsPage"]
    assert "shards_queried" in page["required"]
    assert "plan" in page["properties"]
    plan = document["components"]["schemas"]["ReadPlanBody"]
    assert set(plan["required"]) == {"path", "requests", "expected_rcu", "reason"}
    # error bodies are documented as the handlers answer them, not Powertools' default
    error_ref = {"$ref": "#/components/schemas/ErrorResponse"}
    # invalid input is a 400 on every route, whichever layer notices it; the one 422 is
    # an Idempotency-Key reused with another body
    for path, ops in document["paths"].items():
        for method, op in ops.items():
            invalid = op["responses"]["400"]["content"]["application/json"]["schema"]
            assert invalid == error_ref or error_ref in invalid["anyOf"], (path, method)
            assert ("422" in op["responses"]) == ((path, method) == ("/counters/{name}", "post"))
    assert "HTTPValidationError" not in document["components"]["schemas"]
    assert document["paths"]["/events"]["post"]["responses"]["503"]["content"]["application/json"][
        "schema"
    ] == {"$ref": "#/components/schemas/PostEventsResponse"}


def test_openapi_operations_have_ids_tags_and_every_status_the_server_sends() -> None:
    document = openapi.openapi_schema()
    operations = [(p, m, op) for p, ops in document["paths"].items() for m, op in ops.items()]
    # readable method names for a generated client, one group (module) each
    ids = [op["operationId"] for _, _, op in operations]
    assert sorted(ids) == sorted(
        [
            "write_events",
            "read_events",
            "increment_counter",
            "read_counter",
            "read_shard_info",
            "set_strategy",
            "set_max_shards",
            "configure_index",
            "write_index_entries",
            "read_index",
        ]
    )
    tags = {t["name"] for t in document["tags"]}
    for path, method, op in operations:
        assert len(op["tags"]) == 1 and op["tags"][0] in tags, (path, method)
        # API Gateway's 403 (IAM) and 429 (throttling), the function's 500, everywhere
        assert {"400", "403", "429", "500"} <= set(op["responses"]), (path, method)
        if "requestBody" in op:
            assert {"413", "415"} <= set(op["responses"]), (path, method)
        # every 503 says when to try again
        if "503" in op["responses"]:
            assert "Retry-After" in op["responses"]["503"]["headers"], (path, method)
    # the deployed default, SigV4 (API Gateway IAM authorization), for every operation
    assert document["security"] == [{"sigv4": []}]
    scheme = document["components"]["securitySchemes"]["sigv4"]
    assert scheme["x-amazon-apigateway-authtype"] == "awsSigv4"
    assert (scheme["type"], scheme["in"], scheme["name"]) == ("apiKey", "header", "Authorization")
    urls = [s["url"] for s in document["servers"]]
    assert urls == [
        "https://{restApiId}.execute-api.{region}.amazonaws.com/{stage}",
        "http://127.0.0.1:{port}",
    ]
    # typed page items, descriptions without numpydoc sections or doctests
    schemas = document["components"]["schemas"]
    assert schemas["EventsPage"]["properties"]["items"]["items"] == {
        "$ref": "#/components/schemas/EventItem"
    }
    assert set(schemas["EventItem"]["required"]) == {"key", "id", "ts", "data"}
    assert schemas["OrderedPageBody"]["properties"]["items"]["items"] == {
        "$ref": "#/components/schemas/OrderedEntry"
    }
    text = json.dumps(document)
    assert ">>>" not in text and "----------" not in text and "``" not in text
    # every reference resolves (a generated client dropped a model whose did not)
    for ref in set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', text)):
        assert ref in schemas, ref


def test_a_read_503_sends_retry_after(context: LambdaContext) -> None:
    failure = ShardQueryError({"DEPARTURES#JFK#2": "ProvisionedThroughputExceededException"})
    response = query.handler(
        load_event("api_get_events"), context, facade=FakeFacade(raises=failure)
    )
    assert response["statusCode"] == 503
    assert response["multiValueHeaders"]["Retry-After"] == ["1"]


def test_openapi_module_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert openapi.main() == 0
    document = json.loads(capsys.readouterr().out)
    assert document["info"]["title"] == "dynashard API"
    assert "Event" in document["components"]["schemas"]


def test_openapi_key_mentions_bucketed_families() -> None:
    document = openapi.openapi_schema()
    params = {p["name"]: p for p in document["paths"]["/events"]["get"]["parameters"]}
    assert "time-bucketed key family" in params["key"]["description"]
    assert "DYNASHARD_BUCKETED_KEYS" in params["key"]["description"]
