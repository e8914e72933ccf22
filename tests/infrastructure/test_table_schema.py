"""The data table's own key schema as stack parameters (``partition_key_attr``, ...).

Each schema parameter is rendered into every function's environment only when set; a
schema other than the default gives every function's role ``dynamodb:DescribeTable``
on the data table (the functions check the table's key schema at cold start) and
nothing more; a table the app declares is checked against the schema at synth time;
the GSI's alarms, grants and graphs use the schema's GSI name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic
import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

from dynashard import names
from infra.config import SCHEMA_ENV, DynashardParameters, StackParameters
from infra.constructs.dynashard import Dynashard
from tests.infrastructure.conftest import SKIP_BUNDLING, Synth, _synth

pytestmark = pytest.mark.infra

#: A schema that differs from the default in its non-key attributes only, so the
#: project's own data table (``PK``/``SK``, ``GSI1``) still fits it.
SCHEMA_CONTEXT: dict[str, Any] = {
    "key_attr": "logical_key",
    "id_attr": "event_id",
    "payload": "flat",
}
DESCRIBE_TABLE = "dynamodb:DescribeTable"


@pytest.fixture(scope="module")
def schema_stack(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The project's stack with :data:`SCHEMA_CONTEXT`."""
    return _synth(SCHEMA_CONTEXT, tmp_path_factory.mktemp("cdk-schema"))


def _dynashard_functions(template: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The stack's own functions (those told the data table), by logical id."""
    return {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
        and names.ENV_DATA_TABLE
        in resource["Properties"].get("Environment", {}).get("Variables", {})
    }


def _role_statements(
    template: Mapping[str, Any], function: Mapping[str, Any]
) -> list[dict[str, Any]]:
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    return [
        statement
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy"
        and {"Ref": role_id} in resource["Properties"]["Roles"]
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


# --- parameters -------------------------------------------------------------------------


def test_the_default_schema_sets_nothing() -> None:
    config = StackParameters()
    assert config.table_schema.is_default
    assert config.schema_environment == {}


def test_each_schema_parameter_names_its_environment_variable() -> None:
    given = {name: f"a_{name}" for name in SCHEMA_ENV}
    given |= {"sort_key_codec": "epoch_ms_number", "payload": "flat", "gsi_name": "ByHour"}
    config = DynashardParameters.model_validate(given)
    assert config.schema_environment == {SCHEMA_ENV[name]: value for name, value in given.items()}
    schema = config.table_schema
    assert (schema.partition_key, schema.sort_key_type, schema.gsi_name) == (
        "a_partition_key_attr",
        "N",
        "ByHour",
    )


def test_an_empty_gsi_name_says_the_table_has_none_and_empty_others_are_unset() -> None:
    config = StackParameters.model_validate({"gsi_name": "", "key_attr": "", "payload": "none"})
    assert config.table_schema.gsi_name is None
    assert config.schema_environment == {names.ENV_GSI_NAME: ""}


def test_an_unknown_codec_fails_with_the_librarys_message() -> None:
    with pytest.raises(pydantic.ValidationError, match="unknown codec 'bogus'; one of "):
        StackParameters.model_validate({"sort_key_codec": "bogus"})


def test_two_roles_on_one_attribute_fail_with_the_librarys_message() -> None:
    with pytest.raises(pydantic.ValidationError, match="each role needs its own attribute"):
        StackParameters.model_validate({"key_attr": "PK"})


def test_an_unknown_payload_is_refused() -> None:
    with pytest.raises(pydantic.ValidationError, match="payload"):
        StackParameters.model_validate({"payload": "deep"})


# --- the project's stack ----------------------------------------------------------------


def test_the_default_stack_renders_no_schema_variable_and_grants_no_describe(dev: Synth) -> None:
    template = dev.template.to_json()
    functions = _dynashard_functions(template)
    assert len(functions) == 5
    for function in functions.values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert not set(variables) & set(SCHEMA_ENV.values())
        for statement in _role_statements(template, function):
            assert DESCRIBE_TABLE not in _actions(statement)


def test_a_schema_is_rendered_into_every_function_only_where_set(schema_stack: Synth) -> None:
    functions = _dynashard_functions(schema_stack.template.to_json())
    assert len(functions) == 5
    for function in functions.values():
        variables = function["Properties"]["Environment"]["Variables"]
        rendered = {k: v for k, v in variables.items() if k in SCHEMA_ENV.values()}
        assert rendered == {
            names.ENV_KEY_ATTR: "logical_key",
            names.ENV_ID_ATTR: "event_id",
            names.ENV_PAYLOAD: "flat",
        }


def test_a_schema_grants_every_function_describe_table_on_the_data_table_only(
    schema_stack: Synth,
) -> None:
    template = schema_stack.template.to_json()
    data_table_arn = {"Fn::GetAtt": [schema_stack.logical_id(schema_stack.stack.data_table), "Arn"]}
    for function in _dynashard_functions(template).values():
        describes = [
            s for s in _role_statements(template, function) if DESCRIBE_TABLE in _actions(s)
        ]
        assert len(describes) == 1
        (statement,) = describes
        assert _actions(statement) == {DESCRIBE_TABLE}
        assert statement["Resource"] == data_table_arn


def test_the_projects_table_not_fitting_the_schema_fails_the_synth(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError) as failure:
        _synth({"partition_key_attr": "pk"}, tmp_path)
    message = str(failure.value)
    assert "cannot be dynashard's data table" in message
    assert "dynashard writes (('pk', 'HASH'), ('SK', 'RANGE'))" in message


def test_an_unknown_codec_stops_the_app_before_the_synth(tmp_path: Path) -> None:
    with pytest.raises(pydantic.ValidationError, match="unknown codec 'iso'"):
        _synth({"sort_key_codec": "iso"}, tmp_path)


# --- a user's own table -----------------------------------------------------------------

OWN_SCHEMA = DynashardParameters(
    partition_key_attr="pk",
    sort_key_attr="at",
    sort_key_codec="epoch_ms_number",
    gsi_name="ByHour",
    gsi_partition_key_attr="hour_pk",
    gsi_sort_key_attr="hour_at",
)


def _own_table(stack: Stack, *, sort_type: dynamodb.AttributeType) -> dynamodb.Table:
    """A user's table keyed ``pk`` (S) / ``at`` (``sort_type``), GSI ``ByHour``."""
    insights = dynamodb.ContributorInsightsSpecification(enabled=True)
    table = dynamodb.Table(
        stack,
        "Flights",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="at", type=sort_type),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        contributor_insights_specification=insights,
    )
    table.add_global_secondary_index(
        index_name="ByHour",
        partition_key=dynamodb.Attribute(name="hour_pk", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="hour_at", type=sort_type),
        contributor_insights_specification=insights,
    )
    return table


def test_a_table_fitting_its_schema_gets_the_schemas_gsi_in_alarms_and_grants() -> None:
    stack = Stack(App(context=SKIP_BUNDLING), "flights-dev")
    table = _own_table(stack, sort_type=dynamodb.AttributeType.NUMBER)
    Dynashard(stack, "Dynashard", table=table, parameters=OWN_SCHEMA, with_query=True)
    template = Template.from_stack(stack).to_json()
    text = json.dumps(template)
    assert "/index/ByHour" in text and f"/index/{names.GSI1_NAME}" not in text
    indexes = {
        dimension["Value"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        for dimension in resource["Properties"].get("Dimensions", [])
        if dimension["Name"] == "GlobalSecondaryIndexName"
    }
    assert indexes == {"ByHour"}
    for function in _dynashard_functions(template).values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables[names.ENV_SORT_KEY_CODEC] == "epoch_ms_number"
        assert variables[names.ENV_GSI_NAME] == "ByHour"
        assert any(DESCRIBE_TABLE in _actions(s) for s in _role_statements(template, function))


def test_a_table_not_fitting_its_schema_fails_the_synth_naming_the_mismatch() -> None:
    stack = Stack(App(context=SKIP_BUNDLING), "flights-dev")
    table = _own_table(stack, sort_type=dynamodb.AttributeType.STRING)
    Dynashard(stack, "Dynashard", table=table, parameters=OWN_SCHEMA)
    with pytest.raises(RuntimeError) as failure:
        Template.from_stack(stack)
    message = str(failure.value)
    assert "cannot be dynashard's data table" in message
    assert "attribute at is of type S, dynashard writes N" in message
    assert "attribute hour_at is of type S, dynashard writes N" in message


def test_a_table_without_the_schemas_gsi_fails_the_synth_naming_it() -> None:
    stack = Stack(App(context=SKIP_BUNDLING), "flights-dev")
    table = _own_table(stack, sort_type=dynamodb.AttributeType.NUMBER)
    parameters = OWN_SCHEMA.model_copy(update={"gsi_name": "ByDay"})
    Dynashard(stack, "Dynashard", table=table, parameters=parameters)
    with pytest.raises(RuntimeError, match="it has no ByDay"):
        Template.from_stack(stack)
