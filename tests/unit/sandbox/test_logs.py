"""Contributor Insights emulated on the functions' own JSON log lines."""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_lambda_powertools import Logger

from dynashard.core.load import (
    summarize_write_load,
    write_load_part,
    write_load_rule,
    write_load_rule_body,
    write_load_rules,
)
from sandbox.local_aws.logs import LocalInsightRule, LocalWriteLoadRules, LogTap


def line(key: Any = "K", wcu: Any = 1, message: str = "write load", **more: Any) -> str:
    document = {"level": "INFO", "message": message, "service": "ingest", **more}
    if key is not None:
        document["logical_key"] = key
    if wcu is not None:
        document["offered_wcu"] = wcu
    return json.dumps(document)


@pytest.fixture
def rule() -> LocalInsightRule:
    # the stack's rule body, stamped at a fixed instant unless told otherwise
    return LocalInsightRule(write_load_rule_body(["g"]), clock=lambda: 1000.0)


# --- LocalInsightRule ----------------------------------------------------------------
def test_matching_lines_add_their_offered_wcu_per_logical_key(rule: LocalInsightRule) -> None:
    # Given write-load lines of two keys
    # When they are put to the stack's rule
    assert rule.put(line("K", 3))
    assert rule.put(line("K", 2.5))
    assert rule.put(line("L", 1))
    # Then the report sums each key's offered WCU, largest first
    report = rule.report(0.0, 2000.0)
    assert report == {"K": 5.5, "L": 1.0}
    assert list(report) == ["K", "L"]
    assert (rule.lines_seen, rule.lines_matched) == (3, 3)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("write load K 3", id="not JSON"),
        pytest.param('["write load"]', id="JSON but not an object"),
        pytest.param(line(message="read load"), id="other message"),
        pytest.param(line(key=None), id="no logical_key"),
        pytest.param(line(wcu=None), id="no offered_wcu"),
        pytest.param(line(wcu="3"), id="offered_wcu a string"),
        pytest.param(line(wcu=True), id="offered_wcu a bool"),
        pytest.param(line(wcu=[3]), id="offered_wcu a list"),
    ],
)
def test_lines_that_do_not_match_do_not_contribute(rule: LocalInsightRule, text: str) -> None:
    # Given a line the rule must not count
    # When it is put
    matched = rule.put(text)
    # Then it is seen but contributes nothing
    assert not matched
    assert (rule.lines_seen, rule.lines_matched) == (1, 0)
    assert rule.report(0.0, 2000.0) == {}


def test_a_rule_may_be_given_as_a_dict_and_count_lines() -> None:
    # Given the stack's rule as a dict, aggregated by count
    body = {**write_load_rule(["g"]), "AggregateOn": "Count"}
    rule = LocalInsightRule(body, clock=lambda: 5.0)
    # When lines of two keys are put
    for text in (line("K", 30), line("K", 40), line("L", 100)):
        rule.put(text)
    # Then each matching line counts 1, whatever its value
    assert rule.report(0.0, 10.0) == {"K": 2.0, "L": 1.0}


def test_composite_keys_join_their_parts() -> None:
    # Given a rule keyed on two fields, without ValueOf
    body = {
        "LogFormat": "JSON",
        "Contribution": {"Keys": ["$.logical_key", "$.detail.shard"]},
        "AggregateOn": "Sum",
    }
    rule = LocalInsightRule(body, clock=lambda: 5.0)
    # When lines with and without the nested field are put
    assert rule.put(line("K", 1, detail={"shard": 2}))
    assert rule.put(line("K", 1, detail={"shard": 2}))
    assert not rule.put(line("K", 1, detail="flat"))
    # Then the contributor is the parts joined, each line counting 1
    assert rule.report(0.0, 10.0) == {"K|2": 2.0}


def test_the_report_only_counts_lines_stamped_in_its_half_open_window(
    rule: LocalInsightRule,
) -> None:
    # Given lines stamped at 10, 20 and 30 (put out of order)
    rule.put(line("K", 1), timestamp=20.0)
    rule.put(line("K", 2), timestamp=10.0)
    rule.put(line("K", 4), timestamp=30.0)
    # When reports of several windows are asked for
    # Then each counts the lines in [start, end)
    assert rule.report(10.0, 30.0) == {"K": 3.0}
    assert rule.report(10.5, 30.5) == {"K": 5.0}
    assert rule.report(0.0, 10.0) == {}
    assert rule.report(30.0, 31.0) == {"K": 4.0}


def test_lines_are_stamped_with_the_rules_clock_when_they_arrive() -> None:
    # Given a rule whose clock is moved by hand (the sandbox's emulated clock)
    now = [100.0]
    rule = LocalInsightRule(write_load_rule_body(["g"]), clock=lambda: now[0])
    # When lines arrive at 100 and at 200
    rule.put(line("K", 1))
    now[0] = 200.0
    rule.put(line("K", 7))
    # Then each counts in the window of its arrival
    assert rule.report(100.0, 101.0) == {"K": 1.0}
    assert rule.report(150.0, 250.0) == {"K": 7.0}


def test_the_report_ranks_contributors_and_keeps_the_top_n(rule: LocalInsightRule) -> None:
    # Given four keys with different totals (B and C tied)
    for key, wcu in [("A", 1), ("B", 5), ("C", 5), ("D", 9), ("A", 1)]:
        rule.put(line(key, wcu))
    # When the top 3 are asked for
    report = rule.report(0.0, 2000.0, max_contributors=3)
    # Then they are the largest, largest first, ties by key
    assert list(report.items()) == [("D", 9.0), ("B", 5.0), ("C", 5.0)]
    # And at least one contributor is always reported
    assert rule.report(0.0, 2000.0, max_contributors=0) == {"D": 9.0}


def test_offered_wcu_reports_the_window_of_two_aware_datetimes(rule: LocalInsightRule) -> None:
    # Given lines stamped at two instants
    t0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    rule.put(line("K", 3), timestamp=t0.timestamp())
    rule.put(line("K", 4), timestamp=t0.timestamp() + 60)
    # When the scaler asks for the first minute
    offered = rule.offered_wcu(t0, datetime(2024, 5, 1, 12, 1, tzinfo=UTC))
    # Then only the first line counts
    assert offered == {"K": 3.0}


def test_peak_offered_wcu_is_each_keys_busiest_minute_per_second(
    rule: LocalInsightRule,
) -> None:
    # Given K offered 60 WCU in the minute from 12:00, 180 in the next, 30 in the last;
    # L offered 6 WCU in each minute; and a line of K just before the window
    t0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC).timestamp()
    rule.put(line("K", 999), timestamp=t0 - 1)
    for minute, wcu in enumerate([60, 180, 30]):
        for second in (0, 30, 59.5):
            rule.put(line("K", wcu / 3), timestamp=t0 + 60 * minute + second)
            rule.put(line("L", 2), timestamp=t0 + 60 * minute + second)
    start = datetime.fromtimestamp(t0, UTC)
    end = datetime.fromtimestamp(t0 + 180, UTC)
    # When the shrink sweep asks for the window, per minute
    history = rule.peak_offered_wcu(start, end, 60)
    # Then each key's peak is its busiest minute over 60 s, the window's line before not counted
    assert history.peak_units_per_s == {"K": pytest.approx(3.0), "L": pytest.approx(0.1)}
    assert (history.start, history.end, history.period_s) == (start, end, 60)
    # And an unseen key is bounded by the smallest total named (L's 18 WCU in the
    # window: at most 0.3 WCU/s in a minute), never taken for idle (issue 38, bug 9)
    assert history.unreported_units_per_s == pytest.approx(0.3)
    assert history.peak("M") == pytest.approx(0.3)
    assert history.gaps == ()
    # And a period is rounded up to whole minutes, as Contributor Insights aggregates
    two_minutes = rule.peak_offered_wcu(start, end, 90)
    assert two_minutes.period_s == 120
    assert two_minutes.peak("K") == pytest.approx(240 / 120)


def test_a_rule_that_counted_nothing_or_not_the_whole_window_is_no_evidence(
    rule: LocalInsightRule,
) -> None:
    # Given a rule that has counted nothing in a 30-minute window
    t0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC).timestamp()
    start, end = (datetime.fromtimestamp(t, UTC) for t in (t0, t0 + 1800))
    empty = rule.peak_offered_wcu(start, end, 60)
    # Then its history is no evidence, as the AWS adapter reads an empty report
    assert empty.peak("K") == math.inf
    assert empty.gap("K") == "the report names no contributor and has no datapoint"
    # And lines only in the last 5 minutes (a rule created since) are no evidence either
    for minute in range(25, 30):
        rule.put(line("K", 6), timestamp=t0 + 60 * minute + 1)
    late = rule.peak_offered_wcu(start, end, 60)
    assert late.peak_units_per_s == {} and "did not count the whole window" in late.gap("K")
    # nor lines only in the first 10 minutes (a rule that stopped counting)
    start, end = (datetime.fromtimestamp(t, UTC) for t in (t0 + 1500, t0 + 3300))
    assert "stopped counting" in rule.peak_offered_wcu(start, end, 60).gap("K")
    # while lines in every minute are
    for minute in range(30, 55):
        rule.put(line("K", 6), timestamp=t0 + 60 * minute + 1)
    live = rule.peak_offered_wcu(start, end, 60)
    assert live.gaps == () and live.peak("K") == pytest.approx(0.1)


def test_peak_offered_wcu_bounds_keys_cut_by_the_top_n(rule: LocalInsightRule) -> None:
    # Given three keys offering 50, 20 and 10 WCU in one minute
    t0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC).timestamp()
    for key, wcu in [("A", 50), ("B", 20), ("C", 10)]:
        rule.put(line(key, wcu), timestamp=t0 + 5)
    start, end = (datetime.fromtimestamp(t, UTC) for t in (t0, t0 + 60))
    # When only the top 2 are reported
    history = rule.peak_offered_wcu(start, end, 60, max_contributors=2)
    # Then C, cut, is bounded by the smallest reported total, as the AWS adapter reads it
    assert set(history.peak_units_per_s) == {"A", "B"}
    assert history.peak("C") == pytest.approx(20 / 60)
    assert history.unreported_units_per_s == pytest.approx(20 / 60)


def test_a_parts_rule_counts_the_lines_whose_part_is_equal_to_its_own() -> None:
    # Given part 1's rule of 3
    rule = LocalInsightRule(write_load_rule_body(["g"], part=1), clock=lambda: 5.0)
    # When lines of parts 0, 1 and 2 are put, and a part written as text or true
    assert not rule.put(line("A", 7, part=0))
    assert rule.put(line("B", 5, part=1))
    assert rule.put(line("C", 2, part=1.0))
    assert not rule.put(line("D", 1, part=2))
    assert not rule.put(line("E", 1, part="1"))
    assert not rule.put(line("F", 1, part=True))
    assert not rule.put(line("G", 1))  # no part at all
    # Then EqualTo matched the number only
    assert rule.report(0.0, 10.0) == {"B": 5.0, "C": 2.0}


def test_the_parts_together_answer_as_the_adapter_joins_the_reports() -> None:
    # Given three parts' rules on the writers' own lines, 30 keys offering 60..1,800 WCU
    rules = [LocalInsightRule(body, clock=lambda: 1000.0) for body in write_load_rules(["g"], 3)]
    parts = LocalWriteLoadRules(rules)
    offered = {f"K{i}": 60.0 * (1 + i) for i in range(30)}
    for key, units in offered.items():
        (load,) = summarize_write_load([(key, int(units), False)], 3)
        for rule in rules:
            rule.put(json.dumps({"message": "write load", **load.log_fields()}))
    # Then every line was counted once, by its part's rule
    assert parts.lines_matched == len(offered)
    assert [r.lines_matched for r in rules] == [
        sum(write_load_part(k, 3) == i for k in offered) for i in range(3)
    ]
    start, end = (datetime.fromtimestamp(t, UTC) for t in (990.0, 1060.0))
    assert parts.offered_wcu(start, end) == offered
    # and with each part's top 2, a key left out is bounded by its own part's 2nd
    history = parts.peak_offered_wcu(start, end, 60, max_contributors=2)
    assert len(history.part_bounds) == 3
    for key, units in offered.items():
        mine = sorted(
            (u for k, u in offered.items() if write_load_part(k, 3) == write_load_part(key, 3))
        )
        second = mine[-2]
        assert history.peak(key) == pytest.approx(max(units, second) / 60), key
    assert parts.started == 1000.0
    with pytest.raises(ValueError, match="no write-load rule"):
        LocalWriteLoadRules([])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"LogFormat": "CLF"}, "only JSON", id="CLF log format"),
        pytest.param(
            {"Filters": [{"Match": "$.message", "GreaterThan": 3}]},
            "only Match with In",
            id="GreaterThan filter",
        ),
        pytest.param(
            {"Filters": [{"Match": "$.message", "In": ["x"], "NotIn": ["y"]}]},
            "only Match with In",
            id="extra filter op",
        ),
        pytest.param({"Filters": [{"In": ["x"]}]}, "only Match with In", id="In without Match"),
        pytest.param(
            {"Filters": [{"Match": "$.part", "EqualTo": "1"}]}, "one number", id="EqualTo text"
        ),
        pytest.param({"Keys": [f"$.k{i}" for i in range(5)]}, "1 to 4", id="5 keys"),
        pytest.param({"Keys": []}, "1 to 4", id="no keys"),
        pytest.param({"AggregateOn": "Max"}, "Sum or Count", id="Max"),
        pytest.param({"Keys": ["logical_key"]}, "must start with", id="path without $."),
    ],
)
def test_unsupported_rule_syntax_is_rejected(change: dict[str, Any], message: str) -> None:
    # Given the stack's rule changed to use syntax the emulation does not support
    body = write_load_rule(["g"])
    for name, value in change.items():
        if name in ("LogFormat", "AggregateOn"):
            body[name] = value
        else:
            body["Contribution"][name] = value
    # When / Then building the rule raises
    with pytest.raises(ValueError, match=message):
        LocalInsightRule(body)


# --- LogTap ----------------------------------------------------------------------------
def powertools_logger() -> tuple[str, Logger]:
    service = f"tap-test-{uuid.uuid4().hex}"
    return service, Logger(service=service, level="INFO")


def test_a_tap_hands_the_loggers_json_lines_to_the_rule(
    rule: LocalInsightRule, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a Powertools logger and a tap on it
    service, logger = powertools_logger()
    with LogTap(service, [rule]) as tap:
        # When the function logs its write load
        logger.info("write load", extra={"logical_key": "K", "offered_wcu": 3})
        logger.info("something else", extra={"logical_key": "K", "offered_wcu": 50})
    # Then the rule counted the write load line, formatted as Powertools formats it
    assert rule.report(0.0, 2000.0) == {"K": 3.0}
    assert (rule.lines_seen, rule.lines_matched) == (2, 1)
    assert tap.errors == []
    # And the logger still printed its JSON lines
    printed = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
    assert [(p["message"], p["service"]) for p in printed] == [
        ("write load", service),
        ("something else", service),
    ]
    assert printed[0]["offered_wcu"] == 3


def test_lines_logged_after_the_tap_is_closed_do_not_reach_the_rule(
    rule: LocalInsightRule, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a tap that was opened and closed on a logger
    service, logger = powertools_logger()
    with LogTap(service, [rule]):
        logger.info("write load", extra={"logical_key": "K", "offered_wcu": 1})
    # When the logger logs again
    logger.info("write load", extra={"logical_key": "K", "offered_wcu": 100})
    # Then the rule only has the line logged while the tap was open
    assert rule.report(0.0, 2000.0) == {"K": 1.0}
    assert rule.lines_seen == 1
    # And the logger printed both
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_a_rule_that_raises_never_fails_the_logger(
    rule: LocalInsightRule, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a tap over a rule that raises and the stack's rule
    class Broken:
        def put(self, text: str) -> bool:
            raise RuntimeError("rule broke")

    service, logger = powertools_logger()
    with LogTap(service, [rule, Broken()]) as tap:  # type: ignore[list-item]
        # When the logger logs
        logger.info("write load", extra={"logical_key": "K", "offered_wcu": 2})
    # Then the line still reached the working rule and was printed
    assert rule.report(0.0, 2000.0) == {"K": 2.0}
    assert "write load" in capsys.readouterr().out
    # And the failure was kept for the report
    assert len(tap.errors) == 1
    assert "rule broke" in tap.errors[0]
