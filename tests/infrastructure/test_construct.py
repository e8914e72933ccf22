"""The Dynashard construct in a user's stack: on its own table, and on an imported one.

The project's own stack is the construct on the project's table (every other test of
this folder checks that template); here the construct is added to stacks it does not
know: one that declares its table and wants the scaler only, and the example app of
docs/DEPLOY.md, which imports its table by name and wants the query function too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Aspects, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks

from dynashard import names
from examples.existing_stack import app as example
from infra.alarm_specs import SCALER_ALARMS
from infra.config import DynashardParameters
from infra.constructs.dynashard import CONTRIBUTOR_INSIGHTS_WARNING, Dynashard
from tests.infrastructure.conftest import SKIP_BUNDLING, Synth

pytestmark = pytest.mark.infra

REPO_ROOT = Path(__file__).resolve().parents[2]
NAG = Match.string_like_regexp("AwsSolutions-.*")


def _attr(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


def _insights() -> dynamodb.ContributorInsightsSpecification:
    return dynamodb.ContributorInsightsSpecification(enabled=True)


def _own_table(stack: Stack, *, gsi1: bool = True, insights: bool = True) -> dynamodb.Table:
    """A table the user's stack declares, with dynashard's keys (``Table``, not V2)."""
    table = dynamodb.Table(
        stack,
        "Events",
        partition_key=_attr(names.ATTR_PK),
        sort_key=_attr(names.ATTR_SK),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        contributor_insights_specification=_insights() if insights else None,
    )
    if gsi1:
        table.add_global_secondary_index(
            index_name=names.GSI1_NAME,
            partition_key=_attr(names.ATTR_GSI1PK),
            sort_key=_attr(names.ATTR_GSI1SK),
            contributor_insights_specification=_insights() if insights else None,
        )
    return table


def _user_stack(name: str = "orders-dev") -> Stack:
    return Stack(App(context=SKIP_BUNDLING), name)


def _resolve(value: Any) -> str:
    """Render literals, Refs, GetAtts and ``Fn::Join`` as text (``<LogicalId>``)."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::GetAtt" in value:
        return "<{}.{}>".format(*value["Fn::GetAtt"])
    separator, parts = value["Fn::Join"]
    return str(separator).join(_resolve(part) for part in parts)


def _of_type(template: dict[str, Any], cfn_type: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == cfn_type}


def _statements(template: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    return [
        st
        for policy in _of_type(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _by_sid(template: dict[str, Any], role_id: str) -> dict[str, list[str]]:
    """Each statement's resources, rendered, by Sid (statements without one are left out)."""
    found = {}
    for st in _statements(template, role_id):
        if "Sid" in st:
            resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            found[st["Sid"]] = [_resolve(r) for r in resources]
    return found


def _function(template: dict[str, Any], handler: str, code: str) -> tuple[str, dict[str, Any]]:
    """The one function with this handler whose code asset is ``functions/<code>``."""
    found = [
        (fid, f["Properties"])
        for fid, f in _of_type(template, "AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == handler
        and f["Properties"]["Environment"]["Variables"][names.ENV_POWERTOOLS_SERVICE_NAME] == code
    ]
    assert len(found) == 1, found
    return found[0]


def _role_id(function: dict[str, Any]) -> str:
    return str(function["Role"]["Fn::GetAtt"][0])


# --- (1) the user's own table, the scaler only ------------------------------------------


@pytest.fixture(scope="module")
def own() -> tuple[Stack, Dynashard, dict[str, Any]]:
    """A user's stack: its own ``Table`` and the construct, no ingest or query functions."""
    stack = _user_stack()
    construct = Dynashard(stack, "Dynashard", table=_own_table(stack))
    return stack, construct, Template.from_stack(stack).to_json()


def test_own_table_gets_a_metadata_table_and_no_second_data_table(own: Any) -> None:
    stack, construct, template = own
    (user_table,) = _of_type(template, "AWS::DynamoDB::Table")  # the user's, untouched
    assert user_table == stack.get_logical_id(stack.node.find_child("Events").node.default_child)
    (metadata,) = _of_type(template, "AWS::DynamoDB::GlobalTable").values()
    assert metadata["Properties"]["KeySchema"] == [
        {"AttributeName": names.ATTR_META_KEY, "KeyType": "HASH"}
    ]
    assert construct.tables.data_table is stack.node.find_child("Events")


def test_own_table_alarms_name_the_users_table_and_invoke_the_scaler(own: Any) -> None:
    stack, _, template = own
    table_ref = {"Ref": stack.get_logical_id(stack.node.find_child("Events").node.default_child)}
    scaler_id, _ = _function(template, "app.handler", "scaler")
    alarms = _of_type(template, "AWS::CloudWatch::Alarm")
    scaler_alarms = {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in alarms.values()
        if a["Properties"].get("AlarmActions") == [{"Fn::GetAtt": [scaler_id, "Arn"]}]
    }
    assert sorted(scaler_alarms) == sorted(
        f"orders-dev-Dynashard-{spec.id}" for spec in SCALER_ALARMS
    )
    for spec in SCALER_ALARMS:
        dims = {
            d["Name"]: d["Value"]
            for d in scaler_alarms[f"orders-dev-Dynashard-{spec.id}"]["Dimensions"]
        }
        assert dims["TableName"] == table_ref
        assert dims.get("GlobalSecondaryIndexName") == spec.index_name
    # and the scaler's own failure queue and its misconfiguration are alarmed; nothing
    # else (no ingest queues)
    assert len(alarms) == len(SCALER_ALARMS) + 2


def test_own_table_scaler_has_its_schedule_layer_and_no_ingest_or_query(own: Any) -> None:
    _, construct, template = own
    scaler_id, scaler = _function(template, "app.handler", "scaler")
    assert len(_of_type(template, "AWS::Lambda::Function")) == 1
    (layer_id,) = _of_type(template, "AWS::Lambda::LayerVersion")
    assert scaler["Layers"] == [{"Ref": layer_id}]
    (rule,) = _of_type(template, "AWS::Events::Rule").values()
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 minute)"
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [scaler_id, "Arn"]}
    for absent in (
        "AWS::ApiGateway::RestApi",
        "AWS::Kinesis::Stream",
        "AWS::Lambda::EventSourceMapping",
        "AWS::CloudWatch::InsightRule",
    ):
        assert _of_type(template, absent) == {}, absent
    (queue,) = _of_type(template, "AWS::SQS::Queue")  # the scaler's on-failure queue only
    assert queue.startswith("DynashardScalerFailureQueue")
    assert names.ENV_WRITE_LOAD_RULE not in scaler["Environment"]["Variables"]
    assert construct.api is None and construct.ingest is None and construct.query is None
    (dashboard,) = _of_type(template, "AWS::CloudWatch::Dashboard").values()
    assert dashboard["Properties"]["DashboardName"] == "orders-dev-Dynashard"


def test_own_table_scaler_iam_is_scoped_to_the_users_table(own: Any) -> None:
    stack, construct, template = own
    table = stack.get_logical_id(stack.node.find_child("Events").node.default_child)
    metadata = stack.get_logical_id(construct.tables.metadata_table.node.default_child)
    _, scaler = _function(template, "app.handler", "scaler")
    sids = _by_sid(template, _role_id(scaler))
    assert sids["FindContributorInsightsRules"] == [
        f"<{table}.Arn>",
        f"<{table}.Arn>/index/{names.GSI1_NAME}",
    ]
    (rule_arn,) = sids["ReadContributorInsightsReports"]
    assert rule_arn.endswith(f":insight-rule/DynamoDBContributorInsights-*-<{table}>-*")
    assert sids["ReadUpdateShardMetadata"] == [f"<{metadata}.Arn>"]
    # no ingest functions, no write-load rule: nothing to shrink on, so no Scan either
    assert "ReadWriteLoadReport" not in sids and "FindShardedKeysToShrink" not in sids
    assert construct.functions == [construct.scaler.function]


def test_own_table_with_contributor_insights_synthesizes_without_warnings(own: Any) -> None:
    stack, _, _ = own
    assert Annotations.from_stack(stack).find_warning("*", Match.any_value()) == []
    assert Annotations.from_stack(stack).find_error("*", Match.any_value()) == []


# --- (2) an imported table: the example app of docs/DEPLOY.md ----------------------------


@pytest.fixture(scope="module")
def imported() -> tuple[Stack, dict[str, Any]]:
    """examples/existing_stack/app.py, with cdk-nag's AwsSolutions checks added."""
    _, stack = example.build_app(SKIP_BUNDLING)
    Aspects.of(stack).add(AwsSolutionsChecks(verbose=True))
    return stack, Template.from_stack(stack).to_json()


def test_imported_table_is_not_created_only_the_metadata_table_is(imported: Any) -> None:
    _, template = imported
    assert _of_type(template, "AWS::DynamoDB::Table") == {}
    (metadata,) = _of_type(template, "AWS::DynamoDB::GlobalTable").values()
    assert metadata["Properties"]["KeySchema"][0]["AttributeName"] == names.ATTR_META_KEY
    assert metadata["DeletionPolicy"] == "Retain"  # stage prod


def test_imported_table_alarms_use_its_name(imported: Any) -> None:
    _, template = imported
    dims = sorted(
        tuple(sorted((d["Name"], d["Value"]) for d in a["Properties"]["Dimensions"]))
        for a in _of_type(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("Namespace") == "AWS/DynamoDB"
    )
    table_only = (("TableName", "orders"),)
    with_gsi = (("GlobalSecondaryIndexName", names.GSI1_NAME), ("TableName", "orders"))
    assert dims == sorted([table_only, table_only, with_gsi, with_gsi])


def test_imported_table_iam_names_its_arn_and_its_index(imported: Any) -> None:
    _, template = imported
    arn = "arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/orders"
    _, query = _function(template, "app.handler", "query")
    reads = _by_sid(template, _role_id(query))["ReadDataTable"]
    assert reads == [arn, f"{arn}/index/{names.GSI1_NAME}"]
    _, scaler = _function(template, "app.handler", "scaler")
    sids = _by_sid(template, _role_id(scaler))
    assert sids["FindContributorInsightsRules"] == [arn, f"{arn}/index/{names.GSI1_NAME}"]
    (rule_arn,) = sids["ReadContributorInsightsReports"]
    assert rule_arn.endswith(":insight-rule/DynamoDBContributorInsights-*-orders-*")
    # the environment names it too
    for fn in (query, scaler):
        assert fn["Environment"]["Variables"][names.ENV_DATA_TABLE] == "orders"


def test_imported_table_query_function_serves_the_get_routes_only(imported: Any) -> None:
    _, template = imported
    methods = [
        m["Properties"]["HttpMethod"]
        for m in _of_type(template, "AWS::ApiGateway::Method").values()
    ]
    assert sorted(methods) == ["GET"] * 4
    assert len(_of_type(template, "AWS::Lambda::Function")) == 2  # query and scaler
    assert set(template["Outputs"]) == {"MetadataTableName", "LayerArn", "ApiUrl"}


def test_imported_table_synthesizes_without_warnings_or_cdk_nag_findings(imported: Any) -> None:
    stack, _ = imported
    annotations = Annotations.from_stack(stack)
    assert annotations.find_error("*", Match.any_value()) == []
    assert [w.entry.data for w in annotations.find_warning("*", Match.any_value())] == []
    # the construct carries the reasons of its cdk-nag suppressions into the user's stack
    assert annotations.find_error("*", NAG) == []


def test_the_deploy_guide_shows_the_example_as_it_is() -> None:
    source = (REPO_ROOT / "examples" / "existing_stack" / "app.py").read_text()
    section = re.search(r"# --8<-- \[start:stack\]\n(.*?)\n+# --8<-- \[end:stack\]", source, re.S)
    assert section is not None
    assert section.group(1) in (REPO_ROOT / "docs" / "DEPLOY.md").read_text()


# --- what the construct cannot know, and says -------------------------------------------


def test_imported_table_without_contributor_insights_warns_how_to_enable_it() -> None:
    stack = _user_stack()
    table = dynamodb.Table.from_table_name(stack, "Orders", "orders")
    Dynashard(stack, "Dynashard", table=table)
    (warning,) = Annotations.from_stack(stack).find_warning("*", Match.any_value())
    assert CONTRIBUTOR_INSIGHTS_WARNING in warning.entry.data
    assert "update-contributor-insights" in warning.entry.data
    assert f"--index-name {names.GSI1_NAME}" in warning.entry.data


def test_own_table_without_contributor_insights_warns() -> None:
    stack = _user_stack()
    Dynashard(stack, "Dynashard", table=_own_table(stack, insights=False))
    (warning,) = Annotations.from_stack(stack).find_warning("*", Match.any_value())
    assert CONTRIBUTOR_INSIGHTS_WARNING in warning.entry.data
    assert "contributor_insights_specification" in warning.entry.data


def test_own_table_cannot_be_told_it_has_contributor_insights() -> None:
    stack = _user_stack()
    with pytest.raises(ValueError, match="contributor_insights_enabled is for an imported"):
        Dynashard(stack, "Dynashard", table=_own_table(stack), contributor_insights_enabled=True)


def test_own_table_with_other_keys_fails_the_synth_naming_them() -> None:
    stack = _user_stack()
    table = dynamodb.TableV2(stack, "Events", partition_key=_attr("id"))
    Dynashard(stack, "Dynashard", table=table)
    with pytest.raises(RuntimeError) as failure:
        Template.from_stack(stack)
    message = str(failure.value)
    assert "cannot be dynashard's data table" in message
    assert "(('id', 'HASH'),)" in message and f"no {names.GSI1_NAME}" in message


def test_own_table_without_gsi1_gets_the_table_alarms_only() -> None:
    stack = _user_stack()
    Dynashard(stack, "Dynashard", table=_own_table(stack, gsi1=False), gsi1=False, with_query=True)
    template = Template.from_stack(stack).to_json()
    alarms = _of_type(template, "AWS::CloudWatch::Alarm").values()
    assert sorted(
        a["Properties"].get("MetricName") for a in alarms if "AlarmActions" in a["Properties"]
    ) == [
        "ReadKeyRangeThroughputThrottleEvents",
        "WriteKeyRangeThroughputThrottleEvents",
    ]
    assert "/index/" not in json.dumps(_of_type(template, "AWS::IAM::Policy"))
    assert Annotations.from_stack(stack).find_warning("*", Match.any_value()) == []


def test_customer_managed_key_of_an_imported_table_is_granted_to_its_functions() -> None:
    stack = _user_stack()
    key_arn = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    table = dynamodb.Table.from_table_attributes(
        stack,
        "Orders",
        table_name="orders",
        global_indexes=[names.GSI1_NAME],
        encryption_key=kms.Key.from_key_arn(stack, "OrdersKey", key_arn),
    )
    construct = Dynashard(
        stack,
        "Dynashard",
        table=table,
        with_ingest=True,
        with_query=True,
        contributor_insights_enabled=True,
    )
    Aspects.of(stack).add(AwsSolutionsChecks(verbose=True))
    template = Template.from_stack(stack).to_json()
    # the write grants' wildcards are suppressed with their reason, nothing else is
    annotations = Annotations.from_stack(stack)
    assert annotations.find_error("*", NAG) == [] and annotations.find_warning("*", NAG) == []

    def kms_actions(fn: Any) -> set[str]:
        role = stack.get_logical_id(fn.role.node.default_child)
        return {
            action
            for st in _statements(template, role)
            if st["Resource"] == key_arn
            for action in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
        }

    assert kms_actions(construct.query.function) == {"kms:Decrypt"}
    writes = {"kms:Decrypt", "kms:Encrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*"}
    for fn in (construct.ingest.api_function, construct.ingest.stream_function):
        assert kms_actions(fn) == writes
    assert kms_actions(construct.scaler.function) == set()  # it reads no item
    # with ingest functions, the write-load rules are there, one per part of the key
    # space, named by the construct, and the scaler reads them all, part 0 first
    rules = _of_type(template, "AWS::CloudWatch::InsightRule").values()
    parts = DynashardParameters().write_load_parts
    expected = [f"orders-dev-Dynashard-offered-write-units-{i}-of-{parts}" for i in range(parts)]
    assert sorted(r["Properties"]["RuleName"] for r in rules) == sorted(expected)
    _, scaler = _function(template, "app.handler", "scaler")
    assert scaler["Environment"]["Variables"][names.ENV_WRITE_LOAD_RULE] == ",".join(expected)


def test_one_write_load_part_is_the_single_rule_over_every_line() -> None:
    # Given a construct whose write-load rule is not split (write_load_parts=1)
    stack = _user_stack()
    table = dynamodb.Table.from_table_name(stack, "Orders", "orders")
    Dynashard(
        stack,
        "Dynashard",
        table=table,
        parameters=DynashardParameters(write_load_parts=1),
        with_ingest=True,
        gsi1=False,
        contributor_insights_enabled=True,
    )
    template = Template.from_stack(stack).to_json()
    # Then there is one rule, named as before the split, counting every write-load line
    (rule,) = _of_type(template, "AWS::CloudWatch::InsightRule").values()
    assert rule["Properties"]["RuleName"] == "orders-dev-Dynashard-offered-write-units"
    body = json.loads(_resolve(rule["Properties"]["RuleBody"]))
    assert body["Contribution"]["Filters"] == [{"Match": "$.message", "In": ["write load"]}]
    _, scaler = _function(template, "app.handler", "scaler")
    assert scaler["Environment"]["Variables"][names.ENV_WRITE_LOAD_RULE] == (
        "orders-dev-Dynashard-offered-write-units"
    )
    _, writer = _function(template, "app.sqs_handler", "ingest")
    assert writer["Environment"]["Variables"][names.ENV_WRITE_LOAD_PARTS] == "1"


def test_two_tables_in_one_stack_get_names_of_their_own() -> None:
    stack = _user_stack()
    for name in ("orders", "payments"):
        table = dynamodb.Table.from_table_name(stack, name, name)
        Dynashard(stack, f"{name}-sharding", table=table, contributor_insights_enabled=True)
    template = Template.from_stack(stack).to_json()
    names_ = [
        a["Properties"]["AlarmName"]
        for a in _of_type(template, "AWS::CloudWatch::Alarm").values()
        if "AlarmName" in a["Properties"]
    ]
    assert len(names_) == len(set(names_)) == 2 * len(SCALER_ALARMS)
    dashboards = {
        d["Properties"]["DashboardName"]
        for d in _of_type(template, "AWS::CloudWatch::Dashboard").values()
    }
    assert dashboards == {"orders-dev-orders-sharding", "orders-dev-payments-sharding"}


def test_a_name_prefix_cloudwatch_would_refuse_is_refused() -> None:
    stack = _user_stack()
    table = dynamodb.Table.from_table_name(stack, "Orders", "orders")
    with pytest.raises(ValueError, match="name_prefix"):
        Dynashard(stack, "my sharding", table=table)


# --- (3) the project's stack is the construct on its own table ---------------------------


def test_project_stack_is_the_construct_with_the_logical_ids_it_always_had(dev: Synth) -> None:
    assert isinstance(dev.stack.dynashard, Dynashard)
    assert dev.stack.tables.data_table is dev.stack.data_table
    assert dev.stack.dynashard.name_prefix == dev.stack.stack_name == "dynashard-dev"
    # "Default" keeps the construct out of the logical ids: a deployed stack updates in
    # place (its metadata table, with every key's shard_history, is not replaced)
    for construct, logical_id in (
        (dev.stack.data_table, "TablesDataTable514F821E"),
        (dev.stack.tables.metadata_table, "TablesMetadataTableF1522A0E"),
        (dev.stack.scaler.function.function, "ScalerFunctionB87D86ED"),
        (dev.stack.ingest.queue, "IngestQueue95F6DB49"),
        (dev.stack.query.function.function, "QueryFunctionC9F0EC17"),
    ):
        assert dev.logical_id(construct) == logical_id
