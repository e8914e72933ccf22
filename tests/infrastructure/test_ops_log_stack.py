"""The operation-log service's stack (examples/ops_log/stack.py), as the guide deploys it.

docs/add-to-your-service.md shows this stack as the way to add dynashard to a service
whose table keeps its own layout; tests/integration/test_guide.py holds the page to the
file. Here it is synthesized, with cdk-nag, and its template checked for what the page
says it does: the table's schema reaches the functions, no GSI is watched or granted,
and the service's role gets what the library needs and no more.
"""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import Aspects, Stack
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks

from dynashard import names
from examples.ops_log import stack as example
from infra.config import SCHEMA_ENV
from infra.constructs.grants import READ, WRITE
from tests.infrastructure.conftest import SKIP_BUNDLING

pytestmark = pytest.mark.infra

TABLE_ARN = "arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/ops-service"
#: The variables of the data table's key schema (SCHEMA_ENV's values).
SCHEMA_VARIABLES = frozenset(SCHEMA_ENV.values())


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


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _of_type(template: dict[str, Any], cfn_type: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == cfn_type}


@pytest.fixture(scope="module")
def synth() -> tuple[Stack, dict[str, Any]]:
    """examples/ops_log/stack.py, with cdk-nag's AwsSolutions checks added."""
    _, stack = example.build_app(SKIP_BUNDLING)
    Aspects.of(stack).add(AwsSolutionsChecks(verbose=True))
    return stack, Template.from_stack(stack).to_json()


def test_synthesizes_without_errors_warnings_or_cdk_nag_findings(synth: Any) -> None:
    stack, _ = synth
    annotations = Annotations.from_stack(stack)
    assert annotations.find_error("*", Match.any_value()) == []
    assert [w.entry.data for w in annotations.find_warning("*", Match.any_value())] == []


def test_the_functions_get_the_tables_schema_and_may_check_it(synth: Any) -> None:
    _, template = synth
    functions = _of_type(template, "AWS::Lambda::Function")
    assert len(functions) == 1  # the scaler: the service writes and reads with the library
    (scaler,) = functions.values()
    variables = scaler["Properties"]["Environment"]["Variables"]
    schema = {k: v for k, v in variables.items() if k in SCHEMA_VARIABLES}
    assert schema == {
        names.ENV_SORT_KEY_CODEC: "iso_ms_then_id",
        names.ENV_GSI_NAME: "",
        names.ENV_PAYLOAD: "flat",
    }
    assert variables[names.ENV_DATA_TABLE] == "ops-service"
    role = scaler["Properties"]["Role"]["Fn::GetAtt"][0]
    (policy,) = [
        p
        for p in _of_type(template, "AWS::IAM::Policy").values()
        if p["Properties"]["Roles"] == [{"Ref": role}]
    ]
    described = [
        _resolve(s["Resource"])
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s["Action"] == "dynamodb:DescribeTable"
    ]
    assert described == [TABLE_ARN]


def test_only_the_tables_key_range_throttles_are_alarmed_no_gsi(synth: Any) -> None:
    _, template = synth
    alarms = sorted(
        (a["MetricName"], tuple((d["Name"], d["Value"]) for d in a["Dimensions"]))
        for a in (
            alarm["Properties"] for alarm in _of_type(template, "AWS::CloudWatch::Alarm").values()
        )
        if a.get("Namespace") == "AWS/DynamoDB"
    )
    table = (("TableName", "ops-service"),)
    assert alarms == [
        ("ReadKeyRangeThroughputThrottleEvents", table),
        ("WriteKeyRangeThroughputThrottleEvents", table),
    ]
    assert _of_type(template, "AWS::DynamoDB::Table") == {}  # imported, not created


def test_the_service_role_gets_what_the_library_needs_and_no_more(synth: Any) -> None:
    _, template = synth
    (policy,) = [
        p
        for p in _of_type(template, "AWS::IAM::Policy").values()
        if p["Properties"]["Roles"] == ["ops-service"]
    ]
    granted: dict[str, set[str]] = {}
    for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
        for resource in _listed(statement["Resource"]):
            granted.setdefault(_resolve(resource), set()).update(_listed(statement["Action"]))
    (metadata_id,) = _of_type(template, "AWS::DynamoDB::GlobalTable")
    # grant_write and grant_read: the library's WRITE and READ roles, on the table alone
    # (dynashard's schema names no GSI here) and on the metadata table
    assert granted == {
        TABLE_ARN: set(WRITE.data) | set(READ.data),
        f"<{metadata_id}.Arn>": set(WRITE.metadata) | set(READ.metadata),
    }
