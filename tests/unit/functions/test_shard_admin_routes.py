"""Shard administration through the real ingest handlers and a moto-backed Dynashard.

``PUT /shards/{key}/strategy`` and ``PUT /shards/{key}/max-shards`` (ingest), read back
with ``GET /shards/{key}`` (query); and the stack's key settings applied before a
container's first write.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import jsonschema
import pytest

from dynashard import Dynashard, Event, names
from functions import openapi
from functions.ingest import app as ingest
from functions.query import app as query
from sandbox.local_aws.aws_events import api_gateway_event

from .support import LambdaContext

KEY = "DEPARTURES#JFK"


def _call(
    facade: Dynashard, context: LambdaContext, method: str, suffix: str = "", body: Any = None
) -> tuple[int, dict[str, Any]]:
    path = f"/shards/{quote(KEY, safe='')}{suffix}"
    event = api_gateway_event(
        method,
        path,
        resource=f"/shards/{{key}}{suffix}",
        path_parameters={"key": quote(KEY, safe="")},
        body=body,
    )
    handler = query.handler if method == "GET" else ingest.api_handler
    result = handler(event, context, facade=facade)
    return result["statusCode"], json.loads(result["body"])


def test_strategy_is_set_shown_and_a_different_one_is_409_unless_forced(
    facade: Dynashard, context: LambdaContext
) -> None:
    # Given a key never seen, set to calculated by carrier with 4 shards
    body = {"strategy": "calculated", "attribute": "carrier", "initial_shards": 4}
    status, doc = _call(facade, context, "PUT", "/strategy", body)
    assert status == 200, doc
    assert (doc["strategy"], doc["shard_attribute"], doc["number_of_shards"]) == (
        "calculated",
        "carrier",
        4,
    )
    # The same request again is a no-op; GET /shards shows it
    assert _call(facade, context, "PUT", "/strategy", body) == (200, doc)
    status, shown = _call(facade, context, "GET")
    assert status == 200 and shown["shard_attribute"] == "carrier" and shown["max_shards"] is None
    # When another strategy is asked without force, Then 409 naming strategy, nothing changed
    status, conflict = _call(facade, context, "PUT", "/strategy", {"strategy": "random"})
    assert status == 409 and conflict["field"] == "strategy"
    assert "calculated(carrier)" in conflict["message"]
    assert facade.shard_info(KEY).shard_attribute == "carrier"
    # With force it changes
    status, forced = _call(
        facade, context, "PUT", "/strategy", {"strategy": "random", "force": True}
    )
    assert status == 200 and forced["strategy"] == "random" and forced["shard_attribute"] is None


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"strategy": "calculated"}, 400, "attribute"),  # the library's rule
        ({"strategy": "random", "attribute": "carrier"}, 400, "attribute"),
        ({"strategy": "ordered"}, 400, "strategy"),  # only random or calculated here
        ({"strategy": "random", "initial_shards": 0}, 400, "initial_shards"),
        ({"strategy": "random", "extra": 1}, 400, "extra"),
    ],
)
def test_a_bad_strategy_body_names_its_field(
    facade: Dynashard, context: LambdaContext, body: dict[str, Any], status: int, field: str
) -> None:
    got, doc = _call(facade, context, "PUT", "/strategy", body)
    assert (got, doc["field"]) == (status, field), doc
    assert not facade.shard_info(KEY).stored


def test_max_shards_is_set_removed_and_refused_below_n(
    facade: Dynashard, context: LambdaContext
) -> None:
    # Given a key with N = 4
    facade.set_shard_count(KEY, 4)
    # When its cap is set to 8, Then GET /shards shows it and growth stops there
    status, doc = _call(facade, context, "PUT", "/max-shards", {"max_shards": 8})
    assert status == 200 and doc["max_shards"] == 8, doc
    assert _call(facade, context, "GET")[1]["max_shards"] == 8
    assert facade.grow(KEY, 64).current == 8
    # A cap below N is a 400 naming max_shards; a cap out of range too (one status)
    status, low = _call(facade, context, "PUT", "/max-shards", {"max_shards": 2})
    assert (status, low["field"]) == (400, "max_shards")
    status, bad = _call(facade, context, "PUT", "/max-shards", {"max_shards": 0})
    assert (status, bad["field"]) == (400, "max_shards")
    status, missing = _call(facade, context, "PUT", "/max-shards", {})
    assert (status, missing["field"]) == (400, "max_shards")
    # null removes the cap
    status, removed = _call(facade, context, "PUT", "/max-shards", {"max_shards": None})
    assert status == 200 and removed["max_shards"] is None


def test_the_openapi_document_has_the_admin_routes() -> None:
    paths = openapi.openapi_schema()["paths"]
    for suffix in ("strategy", "max-shards"):
        put = paths[f"/shards/{{key}}/{suffix}"]["put"]
        assert "200" in put["responses"] and "400" in put["responses"]
    assert "409" in paths["/shards/{key}/strategy"]["put"]["responses"]


# --- the stack's key settings -----------------------------------------------------------------
def _event(key: str, i: int, carrier: str = "UA") -> dict[str, Any]:
    return Event(
        key=key, id=f"e{i}", ts=1_700_000_000_000 + i, data={"carrier": carrier}
    ).model_dump(mode="json")


def test_key_settings_create_a_new_key_before_its_first_write(
    facade: Dynashard, context: LambdaContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the stack's settings: KEY calculated by carrier, 4 shards, capped at 16
    settings = [
        {
            "key": KEY,
            "strategy": "calculated",
            "attribute": "carrier",
            "shards": 4,
            "max_shards": 16,
        }
    ]
    monkeypatch.setenv(names.ENV_KEY_SETTINGS, json.dumps(settings))
    # When the first events reach the container through POST /events
    event = api_gateway_event("POST", "/events", body={"events": [_event(KEY, 1)]})
    result = ingest.api_handler(event, context, facade=facade)
    # Then the key was created with its settings before the write, and the event went to
    # the carrier's shard (a targeted read finds it)
    assert result["statusCode"] == 200, result["body"]
    info = facade.shard_info(KEY)
    assert (info.strategy_label, info.number_of_shards, info.max_shards) == (
        "calculated(carrier)",
        4,
        16,
    )
    assert [i["id"] for i in facade.query_events(KEY, attribute_value="UA").items] == ["e1"]
    assert ingest.get_key_settings().pending == []


def test_key_settings_never_change_a_stored_key(
    facade: Dynashard, context: LambdaContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a key already written as random (it holds data)
    facade.put_events([Event.model_validate(_event(KEY, 0))])
    facade.set_shard_count(KEY, 2)
    before = facade.shard_info(KEY)
    monkeypatch.setenv(
        names.ENV_KEY_SETTINGS,
        json.dumps(
            [{"key": KEY, "strategy": "calculated", "attribute": "carrier", "max_shards": 8}]
        ),
    )
    # When an SQS batch reaches a new container
    record = {
        "messageId": "m1",
        "receiptHandle": "r",
        "body": json.dumps(_event(KEY, 1)),
        "attributes": {"ApproximateReceiveCount": "1"},
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:q",
    }
    outcomes: list[Any] = []
    real = ingest.get_key_settings()
    ensure = real.ensure
    monkeypatch.setattr(
        real, "ensure", lambda *a, **k: outcomes.extend(ensure(*a, **k)) or outcomes
    )
    response = ingest.sqs_handler({"Records": [record]}, context, facade=facade)
    # Then the write went through, the key kept its strategy and had no cap set, and the
    # difference was reported
    assert response == {"batchItemFailures": []}
    after = facade.shard_info(KEY)
    assert (after.strategy_label, after.max_shards) == (before.strategy_label, None)
    assert [(o.action, "strategy random" in o.detail) for o in outcomes] == [("differs", True)]


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({"strategy": "random"}, True),
        ({"strategy": "random", "attribute": None}, True),  # found by schemathesis, issue 39
        ({"strategy": "random", "attribute": "carrier"}, False),
        ({"strategy": "calculated", "attribute": "carrier"}, True),
        ({"strategy": "calculated"}, False),
    ],
)
def test_the_strategy_schema_accepts_exactly_what_the_route_accepts(
    facade: Dynashard, context: LambdaContext, body: dict[str, Any], valid: bool
) -> None:
    # Given the document's schema of the body, with its components
    document = openapi.openapi_schema()
    schema = {
        **document["components"]["schemas"]["StrategyBody"],
        "components": document["components"],
    }
    # Then a body is schema-valid exactly when the route takes it
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(body))
    status, answer = _call(facade, context, "PUT", "/strategy", body)
    assert (not errors) == valid, errors
    assert (status == 200) == valid, answer
