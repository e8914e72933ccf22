"""The survey of a bare partition key before adoption: paging, read units, errors, reports.

:func:`dynashard.dynamodb.adoption.survey_bare_key` is read here against a scripted
client (each Query answers the next canned response and the request is kept), so
the pages, the ``ConsumedCapacity`` and the failures are exactly those a test chose.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from dynashard.dynamodb.adoption import BareKeySurvey, survey_bare_key
from dynashard.errors import ShardQueryError

TABLE = "events"


class ScriptedClient:
    """Answers each ``query`` with the next response (or raises it); keeps the requests."""

    def __init__(self, *responses: dict[str, Any] | Exception) -> None:
        self.responses = list(responses)
        self.requests: list[dict[str, Any]] = []

    def query(self, **request: Any) -> dict[str, Any]:
        self.requests.append(dict(request))
        answer = self.responses.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def foreign(sk: str) -> dict[str, Any]:
    """An item another program wrote under the bare key ``K`` (default schema)."""
    return {"PK": {"S": "K"}, "SK": {"S": sk}}


def dynashard_item(ts: str, event_id: str) -> dict[str, Any]:
    return {
        "PK": {"S": "K"},
        "SK": {"S": f"{ts}#{event_id}"},
        "key": {"S": "K"},
        "id": {"S": event_id},
        "ts": {"S": ts},
    }


def units(value: float) -> dict[str, Any]:
    return {"ConsumedCapacity": {"TableName": TABLE, "CapacityUnits": value}}


def test_the_survey_reads_every_page_and_adds_their_read_units() -> None:
    # Given a bare key whose items come back in three pages, each with its read units
    page_key = {"PK": {"S": "K"}, "SK": {"S": "2013-01-01T10:00:00.000000Z#a"}}
    client = ScriptedClient(
        {"Items": [foreign("2013-01-01T10:00:00.000000Z#a")], "LastEvaluatedKey": page_key,
         **units(0.5)},
        {"Items": [dynashard_item("2013-01-02T10:00:00.000000Z", "d1")],
         "LastEvaluatedKey": {"PK": {"S": "K"}, "SK": {"S": "x"}}, **units(1.5)},
        {"Items": [foreign("ALERT#1"), foreign("2013-01-03T10:00:00.000000Z#c")], **units(2.0)},
    )  # fmt: skip
    # When the key is surveyed
    survey = survey_bare_key(client, TABLE, "K")  # type: ignore[arg-type]
    # Then every page was read, each resumed where the last stopped
    assert len(client.requests) == 3
    assert "ExclusiveStartKey" not in client.requests[0]
    assert client.requests[1]["ExclusiveStartKey"] == page_key
    assert client.requests[2]["ExclusiveStartKey"] == {"PK": {"S": "K"}, "SK": {"S": "x"}}
    # And every page's items are counted, their read units added up
    assert (survey.dynashard_items, survey.foreign_items, survey.unreadable_items) == (1, 2, 1)
    assert survey.first_ts == "2013-01-01T10:00:00.000000Z"
    assert survey.last_ts == "2013-01-03T10:00:00.000000Z"
    assert survey.read_units == 4.0
    assert survey.to_json()["read_units"] == 4.0


def test_a_page_without_consumed_capacity_or_items_counts_nothing() -> None:
    # Given a first page with neither ConsumedCapacity nor Items, then one with both
    client = ScriptedClient(
        {"LastEvaluatedKey": {"PK": {"S": "K"}, "SK": {"S": "a"}}},
        {"Items": [foreign("2013-01-01T10:00:00.000000Z#a")], **units(0.5)},
    )
    # When the key is surveyed
    survey = survey_bare_key(client, TABLE, "K")  # type: ignore[arg-type]
    # Then the empty page adds no unit and no item, and is no error
    assert survey.read_units == 0.5
    assert survey.foreign_items == 1
    assert survey.readable


def test_a_failed_query_names_the_bare_key_the_error_code_and_message() -> None:
    # Given a Query the service refuses
    error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}
    client = ScriptedClient(ClientError(error, "Query"))
    # When the key is surveyed, then the error names the key, the code and the message
    with pytest.raises(ShardQueryError) as caught:
        survey_bare_key(client, TABLE, "K")  # type: ignore[arg-type]
    assert caught.value.failures == {"K": "ProvisionedThroughputExceededException: slow down"}


def test_a_query_that_never_reaches_the_service_names_the_bare_key_and_why() -> None:
    # Given a Query that cannot connect
    client = ScriptedClient(EndpointConnectionError(endpoint_url="https://dynamodb.example"))
    # When the key is surveyed, then the error names the key and the botocore error
    with pytest.raises(ShardQueryError) as caught:
        survey_bare_key(client, TABLE, "K")  # type: ignore[arg-type]
    assert caught.value.shards == ["K"]
    why = caught.value.failures["K"]
    assert why.startswith("EndpointConnectionError: ")
    assert "https://dynamodb.example" in why


def survey(**overrides: Any) -> BareKeySurvey:
    fields: dict[str, Any] = {
        "key": "K",
        "dynashard_items": 1,
        "foreign_items": 2,
        "key_attribute_items": 1,
        "unreadable_items": 2,
        "unreadable": ("'ALERT#1': a", "'ALERT#2': b"),
        "first_ts": "2013-01-01T10:00:00.000000Z",
        "last_ts": "2013-01-03T10:00:00.000000Z",
        "read_units": 4.5,
        "shard_items": 3,
    }
    return BareKeySurvey(**{**fields, **overrides})


def test_the_refusal_quotes_each_unreadable_sort_key_separated_by_semicolons() -> None:
    # When an adoption is refused, then the sentence lists the sort keys, "; " between them
    text = survey().refusal("iso_then_id")
    assert "e.g. 'ALERT#1': a; 'ALERT#2': b. Configure the codec" in text
    assert text.startswith("2 item(s) under the bare partition key 'K' have sort keys")
    assert "codec iso_then_id cannot read" in text


def test_the_refusal_ends_naming_the_setting_and_the_way_out() -> None:
    # When an adoption is refused, then the sentence ends saying what to do: configure
    # the codec (its setting named) or move the items out of the key
    text = survey().refusal("iso_then_id")
    assert text.endswith(
        ". Configure the codec that matches them (DYNASHARD_SORT_KEY_CODEC), or move them"
        " out of the key, before adopting it"
    )


def test_the_json_report_names_every_field() -> None:
    # When a survey is reported as JSON, then every field is there under its own name
    assert survey().to_json() == {
        "key": "K",
        "dynashard_items": 1,
        "foreign_items": 2,
        "key_attribute_items": 1,
        "unreadable_items": 2,
        "unreadable": ["'ALERT#1': a", "'ALERT#2': b"],
        "first_ts": "2013-01-01T10:00:00.000000Z",
        "last_ts": "2013-01-03T10:00:00.000000Z",
        "read_units": 4.5,
        "shard_items": 3,
    }
