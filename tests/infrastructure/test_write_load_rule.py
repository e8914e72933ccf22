"""Write-load Contributor Insights rules: one per part of the key space, on the ingest logs.

The rules are read by the scaler only; the writers put each key's part in their lines
and part i's rule counts only part i's lines.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dynashard import names
from dynashard.core.load import (
    WRITE_LOAD_MESSAGE,
    WRITE_LOAD_RULE_SUFFIX,
    summarize_write_load,
)
from infra.config import DynashardParameters
from infra.constructs.write_load import write_load_rule_names
from sandbox.local_aws.logs import LocalInsightRule
from tests.infrastructure.conftest import Synth
from tests.infrastructure.test_iam import _actions, _resources, _statements

pytestmark = pytest.mark.infra

INGEST = ("api_function", "queue_function", "stream_function")


def _rules(s: Synth) -> list[dict[str, Any]]:
    """Return the rules' properties, in the order the scaler's environment names them."""
    by_name = {
        r["Properties"]["RuleName"]: dict(r["Properties"])
        for r in s.of_type("AWS::CloudWatch::InsightRule").values()
    }
    return [by_name.pop(name) for name in _scaler_env(s)[names.ENV_WRITE_LOAD_RULE].split(",")]


def _scaler_env(s: Synth) -> dict[str, Any]:
    props = s.resources[s.logical_id(s.stack.scaler.function.function)]["Properties"]
    return dict(props["Environment"]["Variables"])


def _resolve(value: Any) -> str:
    """Resolve literals, Refs and ``Fn::Join``; ``{"Ref": id}`` becomes ``<id>``."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::GetAtt" in value:
        return "<{}.{}>".format(*value["Fn::GetAtt"])
    separator, parts = value["Fn::Join"]
    return str(separator).join(_resolve(part) for part in parts)


def _rule_arn(rule_name: str) -> str:
    return (
        "arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:insight-rule/" + rule_name
    )


def test_one_enabled_rule_per_part_named_after_the_stack(dev: Synth, prod: Synth) -> None:
    # Given dev at the default number of parts and prod at 3 (its context)
    for s, parts in ((dev, DynashardParameters().write_load_parts), (prod, 3)):
        rules = _rules(s)
        # Then every rule the template holds is one the scaler reads, one per part
        assert len(rules) == len(s.of_type("AWS::CloudWatch::InsightRule")) == parts
        assert [r["RuleName"] for r in rules] == s.stack.write_load.rule_names
        for i, rule in enumerate(rules):
            assert rule["RuleState"] == "ENABLED"
            assert rule["RuleName"] == (
                f"{s.stack.stack_name}-{WRITE_LOAD_RULE_SUFFIX}-{i}-of-{parts}"
            )
            assert len(rule["RuleName"]) <= 128
    assert _rules(dev)[0]["RuleName"] == "dynashard-dev-offered-write-units-0-of-8"


def test_each_rule_sums_offered_wcu_per_logical_key_of_its_part(dev: Synth) -> None:
    log_groups = [f"<{dev.logical_id(getattr(dev.stack.ingest, a).log_group)}>" for a in INGEST]
    for part, rule in enumerate(_rules(dev)):
        body = json.loads(_resolve(rule["RuleBody"]))
        assert body["Schema"] == {"Name": "CloudWatchLogRule", "Version": 1}
        assert body["LogFormat"] == "JSON"
        assert body["AggregateOn"] == "Sum"
        contribution = body["Contribution"]
        assert contribution["Keys"] == ["$.logical_key"]
        assert contribution["ValueOf"] == "$.offered_wcu"
        # the syntax's numeric match on the line's part ("Contributor Insights rule syntax")
        assert contribution["Filters"] == [
            {"Match": "$.message", "In": ["write load"]},
            {"Match": "$.part", "EqualTo": part},
        ]
        assert body["LogGroupNames"] == log_groups
        # only the ingest functions' logs: not the query's or the scaler's own
        for fn in (dev.stack.query.function, dev.stack.scaler.function):
            assert f"<{dev.logical_id(fn.log_group)}>" not in body["LogGroupNames"]


@pytest.mark.parametrize("which", ["dev", "prod"])
def test_the_writers_lines_match_exactly_the_rule_of_their_keys_part(
    which: str, request: pytest.FixtureRequest
) -> None:
    # Given the stack's rules and the writers' parts, both as deployed
    s: Synth = request.getfixturevalue(which)
    rules = [LocalInsightRule(_resolve(r["RuleBody"])) for r in _rules(s)]
    for attr in INGEST:
        fn = getattr(s.stack.ingest, attr)
        env = s.resources[s.logical_id(fn.function)]["Properties"]["Environment"]["Variables"]
        parts = int(env[names.ENV_WRITE_LOAD_PARTS])
        assert parts == len(rules)
    # When the writers log one line per key (the library's own fields)
    keys = [f"K{i:05d}" for i in range(200)] + ["DEPARTURES#JFK", "OPS_LOG#2013-01-01"]
    for key in keys:
        (load,) = summarize_write_load([(key, 1, False)], parts)
        line = json.dumps({"message": WRITE_LOAD_MESSAGE, **load.log_fields()})
        # Then each line is counted by one rule, its part's (none is lost, none twice)
        matched = [i for i, rule in enumerate(rules) if rule.put(line)]
        assert matched == [load.part], key


def test_scaler_environment_names_the_rules_in_part_order(dev: Synth) -> None:
    assert _scaler_env(dev)[names.ENV_WRITE_LOAD_RULE] == ",".join(
        write_load_rule_names(dev.stack.stack_name, DynashardParameters().write_load_parts)
    )


def test_only_the_scaler_may_read_the_rules_reports(dev: Synth) -> None:
    rule_arns = [_rule_arn(r["RuleName"]) for r in _rules(dev)]
    scaler = [
        st
        for st in _statements(dev, dev.stack.scaler.function)
        if _resolve(_resources(st)[0]) in rule_arns
    ]
    assert len(scaler) == 1
    (statement,) = scaler
    assert _actions(statement) == {"cloudwatch:GetInsightRuleReport"}
    assert [_resolve(r) for r in _resources(statement)] == rule_arns  # these rules only
    for fn in [getattr(dev.stack.ingest, a) for a in INGEST] + [dev.stack.query.function]:
        statements = _statements(dev, fn)
        assert not any("cloudwatch:GetInsightRuleReport" in _actions(st) for st in statements)
        assert not any("insight-rule/" in _resolve(r) for st in statements for r in _resources(st))


def test_scaler_keeps_reading_dynamodb_contributor_insights(dev: Synth) -> None:
    reports = [
        st
        for st in _statements(dev, dev.stack.scaler.function)
        if "cloudwatch:GetInsightRuleReport" in _actions(st)
    ]
    arns = sorted(_resolve(r) for st in reports for r in _resources(st))
    table = dev.logical_id(dev.stack.tables.data_table)
    assert arns == sorted(
        [
            *(_rule_arn(r["RuleName"]) for r in _rules(dev)),
            _rule_arn(f"DynamoDBContributorInsights-*-<{table}>-*"),
        ]
    )


def test_one_part_is_the_single_rule_over_every_line() -> None:
    assert write_load_rule_names("stack") == [f"stack-{WRITE_LOAD_RULE_SUFFIX}"]
    assert write_load_rule_names("stack", 2) == [
        f"stack-{WRITE_LOAD_RULE_SUFFIX}-0-of-2",
        f"stack-{WRITE_LOAD_RULE_SUFFIX}-1-of-2",
    ]


def test_rule_name_longer_than_cloudwatch_allows_is_refused() -> None:
    with pytest.raises(ValueError, match="128 characters"):
        write_load_rule_names("s" * (128 - len(WRITE_LOAD_RULE_SUFFIX)))
    assert len(write_load_rule_names("s" * (127 - len(WRITE_LOAD_RULE_SUFFIX)))[0]) == 128
    with pytest.raises(ValueError, match="128 characters"):
        write_load_rule_names("s" * (128 - len(WRITE_LOAD_RULE_SUFFIX) - 7), 8)
    with pytest.raises(ValueError, match=r"1\.\.20"):
        write_load_rule_names("stack", 21)
