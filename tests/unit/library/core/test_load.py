from __future__ import annotations

import json
import zlib
from collections import Counter

import pytest

from dynashard.core.load import (
    FIELD_OFFERED_WCU,
    MAX_WRITE_LOAD_PARTS,
    WRITE_LOAD_MESSAGE,
    KeyWriteLoad,
    refused_write_load,
    summarize_write_load,
    write_load_part,
    write_load_rule,
    write_load_rule_body,
    write_load_rules,
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
        "part": 0,
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


def test_a_key_is_in_one_part_the_same_in_every_process() -> None:
    # a stable hash (CRC-32 of the UTF-8 key), not Python's salted hash()
    for key in ("DEPARTURES#JFK", "OPS_LOG#2013-01-01", "K00042", "é"):
        assert write_load_part(key, 8) == zlib.crc32(key.encode("utf-8")) % 8
        assert write_load_part(key, 1) == 0
    with pytest.raises(ValueError, match=">= 1"):
        write_load_part("K", 0)


def test_parts_share_a_fleet_of_keys_evenly() -> None:
    counts = Counter(write_load_part(f"TENANT#{i}", 8) for i in range(8000))
    assert sorted(counts) == list(range(8))
    assert max(counts.values()) < 1.1 * 1000 and min(counts.values()) > 0.9 * 1000


def test_each_line_carries_its_keys_part() -> None:
    loads = summarize_write_load([("DEPARTURES#JFK", 1, False), ("K00042", 2, False)], parts=8)
    assert [load.log_fields()["part"] for load in loads] == [
        write_load_part("DEPARTURES#JFK", 8),
        write_load_part("K00042", 8),
    ]


def test_each_parts_rule_counts_only_its_parts_lines() -> None:
    rules = write_load_rules(["/aws/lambda/a"], 3)
    assert len(rules) == 3
    for part, rule in enumerate(rules):
        assert rule == write_load_rule(["/aws/lambda/a"], part)
        assert rule["Contribution"]["Filters"] == [
            {"Match": "$.message", "In": [WRITE_LOAD_MESSAGE]},
            {"Match": "$.part", "EqualTo": part},
        ]
    # one part: the single rule over every line, as before the split
    assert write_load_rules(["/aws/lambda/a"], 1) == [write_load_rule(["/aws/lambda/a"])]
    with pytest.raises(ValueError, match="parts"):
        write_load_rules(["/aws/lambda/a"], MAX_WRITE_LOAD_PARTS + 1)
