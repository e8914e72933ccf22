"""Least privilege per function, asserted on the synthesized policies."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.infrastructure.conftest import Synth

pytestmark = pytest.mark.infra

DATA_WRITES = {
    "dynamodb:BatchWriteItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:GetItem",  # an idempotent counter increment's marker
    # an epoch_ms_number table's redelivered event, looked for on the key's other shards:
    # every ingest function (the queue's and the stream's redeliver the most)
    "dynamodb:BatchGetItem",
}
#: The API function's more: the ordered index's per-id pointers, and the Delete of an
#: entry that moved on a re-put (POST /index/{key}).
ORDERED_INDEX = {"dynamodb:BatchGetItem", "dynamodb:DeleteItem"}
META_READ_UPDATE = {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
WRITE_ACTIONS = {
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:TransactWriteItems",
}


def _statements(s: Synth, fn: Any) -> list[dict[str, Any]]:
    role_id = s.logical_id(fn.role)
    statements = []
    for policy in s.of_type("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def _resources(statement: dict[str, Any]) -> list[Any]:
    res = statement["Resource"]
    return res if isinstance(res, list) else [res]


def _grants(s: Synth, fn: Any, resource: Any) -> set[str]:
    """Every DynamoDB action granted on exactly ``resource``."""
    return {
        a
        for st in _statements(s, fn)
        if resource in _resources(st)
        for a in _actions(st)
        if a.startswith("dynamodb:")
    }


def _arn(s: Synth, table: Any) -> dict[str, Any]:
    return {"Fn::GetAtt": [s.logical_id(table), "Arn"]}


def test_no_wildcard_actions_and_no_unmanaged_wildcard_resources(dev: Synth) -> None:
    for policy in dev.of_type("AWS::IAM::Policy").values():
        for st in policy["Properties"]["PolicyDocument"]["Statement"]:
            assert st["Effect"] == "Allow"
            assert all("*" not in a for a in _actions(st)), st
            if _resources(st) == ["*"]:  # only X-Ray accepts no resource-level scoping
                assert _actions(st) == {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
            if any(a.startswith(("dynamodb:", "sqs:", "kinesis:")) for a in _actions(st)):
                assert "*" not in str(_resources(st)), st
    assert not dev.of_type("AWS::IAM::ManagedPolicy")
    for role in dev.of_type("AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role["Properties"]


@pytest.mark.parametrize("attr", ["api_function", "queue_function", "stream_function"])
def test_ingest_writes_data_and_reads_updates_metadata_only(dev: Synth, attr: str) -> None:
    fn = getattr(dev.stack.ingest, attr)
    tables = dev.stack.tables
    data, meta = _arn(dev, tables.data_table), _arn(dev, tables.metadata_table)
    ordered = attr == "api_function"
    assert _grants(dev, fn, data) == DATA_WRITES | (ORDERED_INDEX if ordered else set())
    # the API function's PUT /shards/{key}/max-shards reads whether a raised cap would
    # open an adopted key's bare partition key (BatchGetItem on the metadata table)
    assert _grants(dev, fn, meta) == META_READ_UPDATE | (
        {"dynamodb:BatchGetItem"} if ordered else set()
    )
    dynamo = [st for st in _statements(dev, fn) if any("dynamodb:" in a for a in _actions(st))]
    assert all(_resources(st) in ([data], [meta]) for st in dynamo)  # no index, no other table
    deletes = "dynamodb:DeleteItem" in {a for st in dynamo for a in _actions(st)}
    assert deletes == ordered  # only an ordered-index re-put deletes (its moved entry)


def test_query_may_only_read(dev: Synth) -> None:
    fn = dev.stack.query.function
    tables = dev.stack.tables
    data, meta = _arn(dev, tables.data_table), _arn(dev, tables.metadata_table)
    reads = {"dynamodb:Query", "dynamodb:GetItem", "dynamodb:BatchGetItem"}
    assert _grants(dev, fn, data) == reads
    assert _grants(dev, fn, meta) == {"dynamodb:GetItem", "dynamodb:BatchGetItem"}
    gsi = {"Fn::Join": ["", [data, "/index/GSI1"]]}
    assert _grants(dev, fn, gsi) == reads
    granted = {a for st in _statements(dev, fn) for a in _actions(st)}
    assert not granted & WRITE_ACTIONS
    assert not any(a.startswith(("sqs:", "kinesis:", "cloudwatch:")) for a in granted)


def test_scaler_updates_metadata_and_reads_insights_only(dev: Synth) -> None:
    fn = dev.stack.scaler.function
    tables = dev.stack.tables
    data, meta = _arn(dev, tables.data_table), _arn(dev, tables.metadata_table)
    # the shrink sweep scans the metadata table for keys above the default, nothing else
    assert _grants(dev, fn, meta) == META_READ_UPDATE | {"dynamodb:Scan"}
    (scan,) = [st for st in _statements(dev, fn) if "dynamodb:Scan" in _actions(st)]
    assert _actions(scan) == {"dynamodb:Scan"} and _resources(scan) == [meta]
    assert _grants(dev, fn, data) == {"dynamodb:DescribeContributorInsights"}  # no data access
    granted = {a for st in _statements(dev, fn) for a in _actions(st)}
    assert "cloudwatch:GetInsightRuleReport" in granted
    # DynamoDB's rules of this table, and the stack's own write-load rule by name
    # (tests/infrastructure/test_write_load_rule.py checks that one in detail)
    insights, write_load = [
        st for st in _statements(dev, fn) if "cloudwatch:GetInsightRuleReport" in _actions(st)
    ]
    rule_arn = str(insights["Resource"])
    assert "insight-rule/DynamoDBContributorInsights-" in rule_arn
    assert dev.logical_id(tables.data_table) in rule_arn  # scoped to this table's rules
    for rule_name in dev.stack.write_load.rule_names:
        assert f"insight-rule/{rule_name}" in str(write_load["Resource"])
    assert not granted & {"dynamodb:BatchWriteItem", "dynamodb:Query", "dynamodb:DeleteItem"}
    # The sweep may read the state of its own alarms, by name, and nothing else
    (sweep,) = [st for st in _statements(dev, fn) if "cloudwatch:DescribeAlarms" in _actions(st)]
    assert _actions(sweep) == {"cloudwatch:DescribeAlarms"}
    alarm_names = [
        dev.resources[dev.logical_id(a)]["Properties"]["AlarmName"] for a in dev.stack.scaler.alarms
    ]
    arns = [json.dumps(r) for r in _resources(sweep)]
    assert len(arns) == len(alarm_names) and not any("*" in a for a in arns)
    # (as a set: the recommended @aws-cdk/aws-iam:minimizePolicies flag sorts a
    # statement's resources, and the order of an IAM Resource list means nothing)
    named = {arn.split(":alarm:", 1)[1].split('"', 1)[0] for arn in arns}
    assert named == set(alarm_names)


def test_each_function_writes_only_its_own_log_group(dev: Synth) -> None:
    stack = dev.stack
    fns = [
        stack.ingest.api_function,
        stack.ingest.queue_function,
        stack.ingest.stream_function,
        stack.query.function,
        stack.scaler.function,
    ]
    for fn in fns:
        logs = [
            st for st in _statements(dev, fn) if any(a.startswith("logs:") for a in _actions(st))
        ]
        assert logs == [
            {
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                "Effect": "Allow",
                "Resource": {"Fn::GetAtt": [dev.logical_id(fn.log_group), "Arn"]},
            }
        ]
