"""bench.parser: the recorded page and the result document (the timing is pyperf's)."""

from __future__ import annotations

import json

from bench import parser


def test_the_recorded_page_is_a_full_query_page_both_paths_read_alike() -> None:
    body = parser.load_body()
    page = json.loads(body)
    # A first page cut by DynamoDB's 1 MB cap: it has a LastEvaluatedKey
    assert len(body) > 1_000_000 and "LastEvaluatedKey" in page
    assert parser.check(body) == len(page["Items"]) == page["Count"]
    # and the fast path really is the fast one: its items are the wire's own
    timed = parser.paths(body)
    assert timed["parse_after"]()["Items"] == page["Items"]


def test_the_result_holds_before_after_and_their_ratio() -> None:
    runs = {
        name: parser.summary([0.2, 0.21, 0.19] if "before" in name else [0.05, 0.05, 0.06])
        for name in parser.BENCHES
    }
    doc = parser.result(runs, b"{}", 10, {"processes": 1}, {"cpus": 2}, "2026-11-26T00:00:00Z", 3)
    assert doc["benchmark"] == "parser"
    assert doc["speedup"] == round(runs["before"]["mean_ms"] / runs["after"]["mean_ms"], 2)
    assert doc["us_per_item"]["before"] == 20000.0
