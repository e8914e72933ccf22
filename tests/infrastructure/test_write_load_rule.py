"""Write-load Contributor Insights rule: on the ingest logs, read by the scaler only."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dynashard import names
from dynashard.core.load import WRITE_LOAD_RULE_SUFFIX
from infra.constructs.ingest import write_load_rule_name
from tests.infrastructure.conftest import Synth
from tests.infrastructure.test_iam import _actions, _resources, _statements

pytestmark = pytest.mark.infra

INGEST = ("api_function", "queue_function", "stream_function")


def _rule(s: Synth) -> dict[str, Any]:
    (rule,) = s.of_type("AWS::CloudWatch::InsightRule").values()
    return dict(rule["Properties"])


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


def test_rule_is_enabled_and_named_after_the_stack(dev: Synth, prod: Synth) -> None:
    for s in (dev, prod):
        rule = _rule(s)
        assert rule["RuleState"] == "ENABLED"
        assert rule["RuleName"] == f"{s.stack.stack_name}-{WRITE_LOAD_RULE_SUFFIX}"
        assert rule["RuleName"] == s.stack.ingest.write_load_rule_name
        assert len(rule["RuleName"]) <= 128
    assert _rule(dev)["RuleName"] == "dynashard-dev-offered-write-units"


def test_rule_sums_offered_wcu_per_logical_key_on_the_ingest_log_groups(dev: Synth) -> None:
    body = json.loads(_resolve(_rule(dev)["RuleBody"]))
    assert body["Schema"] == {"Name": "CloudWatchLogRule", "Version": 1}
    assert body["LogFormat"] == "JSON"
    assert body["AggregateOn"] == "Sum"
    contribution = body["Contribution"]
    assert contribution["Keys"] == ["$.logical_key"]
    assert contribution["ValueOf"] == "$.offered_wcu"
    assert contribution["Filters"] == [{"Match": "$.message", "In": ["write load"]}]
    log_groups = [f"<{dev.logical_id(getattr(dev.stack.ingest, a).log_group)}>" for a in INGEST]
    assert body["LogGroupNames"] == log_groups
    # only the ingest functions' logs: not the query's or the scaler's own
    for fn in (dev.stack.query.function, dev.stack.scaler.function):
        assert f"<{dev.logical_id(fn.log_group)}>" not in body["LogGroupNames"]


def test_scaler_environment_names_the_rule(dev: Synth) -> None:
    props = dev.resources[dev.logical_id(dev.stack.scaler.function.function)]["Properties"]
    assert props["Environment"]["Variables"][names.ENV_WRITE_LOAD_RULE] == _rule(dev)["RuleName"]


def test_only_the_scaler_may_read_the_rule_report(dev: Synth) -> None:
    rule_arn = _rule_arn(_rule(dev)["RuleName"])
    scaler = [
        st
        for st in _statements(dev, dev.stack.scaler.function)
        if _resolve(_resources(st)[0]) == rule_arn
    ]
    assert len(scaler) == 1
    (statement,) = scaler
    assert _actions(statement) == {"cloudwatch:GetInsightRuleReport"}
    assert [_resolve(r) for r in _resources(statement)] == [rule_arn]  # this rule only
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
            _rule_arn(_rule(dev)["RuleName"]),
            _rule_arn(f"DynamoDBContributorInsights-*-<{table}>-*"),
        ]
    )


def test_rule_name_longer_than_cloudwatch_allows_is_refused() -> None:
    with pytest.raises(ValueError, match="128 characters"):
        write_load_rule_name("s" * (128 - len(WRITE_LOAD_RULE_SUFFIX)))
    assert len(write_load_rule_name("s" * (127 - len(WRITE_LOAD_RULE_SUFFIX)))) == 128
