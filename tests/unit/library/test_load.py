from __future__ import annotations

import json

from dynashard.core.load import (
    FIELD_OFFERED_WCU,
    WRITE_LOAD_MESSAGE,
    KeyWriteLoad,
    refused_write_load,
    summarize_write_load,
    write_load_rule,
    write_load_rule_body,
    write_units,
)


def test_one_wcu_per_started_kilobyte() -> None:
    assert [write_units(n) for n in (0, 1, 1024, 1025, 4096, 4097)] == [1, 1, 1, 2, 4, 5]


def test_write_load_adds_up_per_key_in_order_of_first_appearance() -> None:
    # Given two keys and a redelivered event
    writes = [("B", 1, False), ("A", 2, False), ("B", 3, True), ("A", 1, False)]
    # When summarized
    loads = summarize_write_load(writes)
    # Then first deliveries are offered and redeliveries counted apart
    assert loads == [
        KeyWriteLoad("B", events=2, offered_wcu=1, redelivered_wcu=3),
        KeyWriteLoad("A", events=2, offered_wcu=3, redelivered_wcu=0),
    ]
    assert loads[0].log_fields() == {
        "logical_key": "B",
        "events": 2,
        "offered_wcu": 1,
        "redelivered_wcu": 3,
    }


def test_refused_load_names_only_the_keys_with_refusals() -> None:
    outcomes = [("A", 1, True), ("B", 2, False), ("B", 1, False), ("C", 5, True)]
    assert refused_write_load(outcomes) == {
        "B": {"logical_key": "B", "events": 2, "refused_wcu": 3}
    }


def test_the_rule_ranks_logical_keys_by_the_offered_units_of_write_load_lines() -> None:
    rule = json.loads(write_load_rule_body(["/aws/lambda/a", "/aws/lambda/b"]))
    assert rule == write_load_rule(["/aws/lambda/a", "/aws/lambda/b"])
    assert rule["Schema"] == {"Name": "CloudWatchLogRule", "Version": 1}
    assert rule["LogGroupNames"] == ["/aws/lambda/a", "/aws/lambda/b"]
    assert rule["LogFormat"] == "JSON"
    assert rule["AggregateOn"] == "Sum"
    contribution = rule["Contribution"]
    assert contribution["Keys"] == ["$.logical_key"]
    assert contribution["ValueOf"] == f"$.{FIELD_OFFERED_WCU}"
    assert contribution["Filters"] == [{"Match": "$.message", "In": [WRITE_LOAD_MESSAGE]}]
