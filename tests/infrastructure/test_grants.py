"""Dynashard.grant_write / grant_read / grant_admin, and what the library calls (issue 39).

Two halves. The grants, synthesized on roles of a user's stack, give exactly the
actions of :mod:`infra.constructs.grants` on exactly the tables' ARNs. And every client
call in the library's source (found by parsing it, not by a list kept by hand) is
mapped to the role that makes it, whose grant must cover the IAM actions of that call:
a new call, or a call moved to another operation, fails here until the grants follow.
"""

from __future__ import annotations

import ast
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Template
from botocore import xform_name

from infra.constructs import grants
from infra.constructs.dynashard import Dynashard
from infra.constructs.grants import ADMIN, READ, WRITE, LibraryRole
from tests.infrastructure.conftest import CDK_JSON_CONTEXT, SKIP_BUNDLING, Synth

pytestmark = pytest.mark.infra

LIBRARY = Path(__file__).resolve().parents[2] / "layers" / "dynashard" / "src" / "dynashard"
ROLES = {"write": WRITE, "read": READ, "admin": ADMIN}

# --- the grants, synthesized --------------------------------------------------------


def _user_stack(*, key: bool = False) -> tuple[Stack, Dynashard, dict[str, iam.Role]]:
    """A user's stack: an imported table, Dynashard on it, one role per grant."""
    app = App(context={**CDK_JSON_CONTEXT, **SKIP_BUNDLING})
    stack = Stack(app, "Service")
    table = dynamodb.Table.from_table_attributes(
        stack,
        "Orders",
        table_name="orders",
        global_indexes=["GSI1"],
        encryption_key=kms.Key(stack, "OrdersKey") if key else None,
    )
    shards = Dynashard(stack, "Shards", table=table, contributor_insights_enabled=True)
    roles = {
        name: iam.Role(stack, f"{name.title()}Role", assumed_by=iam.AccountRootPrincipal())
        for name in ROLES
    }
    shards.grant_write(roles["write"])
    shards.grant_read(roles["read"])
    shards.grant_admin(roles["admin"])
    return stack, shards, roles


@pytest.fixture(scope="module")
def user_stack() -> tuple[Stack, Dynashard, dict[str, iam.Role], dict[str, Any]]:
    stack, shards, roles = _user_stack()
    return stack, shards, roles, Template.from_stack(stack).to_json()


def _granted(template: dict[str, Any], role_id: str) -> dict[str, set[str]]:
    """Return resource (as JSON) -> actions, over every policy statement of the role."""
    granted: dict[str, set[str]] = defaultdict(set)
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        if {"Ref": role_id} not in resource["Properties"]["Roles"]:
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            assert statement["Effect"] == "Allow"
            actions = statement["Action"]
            resources = statement["Resource"]
            for arn in resources if isinstance(resources, list) else [resources]:
                granted[json.dumps(arn, sort_keys=True)] |= set(
                    actions if isinstance(actions, list) else [actions]
                )
    return dict(granted)


def _role_id(stack: Stack, role: iam.Role) -> str:
    return str(stack.get_logical_id(role.node.default_child))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", list(ROLES))
def test_each_grant_gives_its_role_exactly_the_library_actions_on_the_two_tables(
    user_stack: tuple[Stack, Dynashard, dict[str, iam.Role], dict[str, Any]], name: str
) -> None:
    # Given a user's stack whose roles got grant_write, grant_read and grant_admin
    stack, shards, roles, template = user_stack
    role: LibraryRole = ROLES[name]
    granted = _granted(template, _role_id(stack, roles[name]))
    # Then the data table (and, for reads, its GSI1) gets the role's data actions,
    data = [arn for arn in granted if arn.endswith(':table/orders"]]}')]
    index = [arn for arn in granted if arn.endswith(':table/orders/index/GSI1"]]}')]
    metadata_id = stack.get_logical_id(shards.tables.metadata_table.node.default_child)  # type: ignore[arg-type]
    metadata = json.dumps({"Fn::GetAtt": [metadata_id, "Arn"]}, sort_keys=True)
    assert len(data) == 1, granted
    assert granted[data[0]] == set(role.data)
    if role.indexes:
        assert len(index) == 1 and granted[index[0]] == set(role.data)
    else:
        assert index == []
    # the metadata table its metadata actions, and nothing else is granted
    assert granted[metadata] == set(role.metadata)
    assert set(granted) == {*data, *index, metadata}
    assert not any("*" in action for actions in granted.values() for action in actions)


def test_the_three_grants_name_what_the_docs_promise() -> None:
    # The lists the docs and the construct's docstrings spell out (a change to a role
    # is a change to what users are told to expect)
    assert set(WRITE.data) == {
        "dynamodb:BatchWriteItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:DeleteItem",
        "dynamodb:DescribeTable",
    }
    assert set(WRITE.metadata) == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:BatchGetItem",
    }
    assert set(READ.data) == {
        "dynamodb:Query",
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:DescribeTable",
    }
    assert set(READ.metadata) == {"dynamodb:GetItem", "dynamodb:BatchGetItem"}
    compaction = {"dynamodb:ConditionCheckItem", "dynamodb:DeleteItem"}
    assert set(ADMIN.data) == set(READ.data) | compaction
    assert set(ADMIN.metadata) == set(WRITE.metadata) | {"dynamodb:Scan"}
    # no role reads or writes the data table with Scan (the library never scans it)
    assert not any("dynamodb:Scan" in role.data for role in ROLES.values())


def test_a_customer_managed_key_is_granted_as_each_role_uses_it() -> None:
    # Given the data table encrypted with a customer managed key
    stack, _, roles = _user_stack(key=True)
    template = Template.from_stack(stack).to_json()
    # Then writers and operators may encrypt and decrypt with it, readers only decrypt
    kms_actions = {
        name: {
            action
            for actions in _granted(template, _role_id(stack, role)).values()
            for action in actions
            if action.startswith("kms:")
        }
        for name, role in roles.items()
    }
    assert kms_actions["read"] == {"kms:Decrypt"}
    for name in ("write", "admin"):
        assert {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*"} <= kms_actions[name]


# --- the library's calls against the grants -----------------------------------------

#: Every client call site of the library (module :: enclosing function) -> the table it
#: acts on and the roles that make it. The scaler's CloudWatch calls are the scaler
#: function's own (checked against its synthesized role below).
CALL_SITES: dict[str, tuple[str, frozenset[str]]] = {
    "dynamodb/writer.py::ShardedWriter._write_chunk": ("data", frozenset({"write"})),
    "dynamodb/writer.py::ShardedWriter._find_stored": ("data", frozenset({"write"})),
    "dynamodb/writer.py::ShardedWriter._put_if_free": ("data", frozenset({"write"})),
    "dynamodb/counters.py::ShardedCounter.increment": ("data", frozenset({"write"})),
    "dynamodb/counters.py::ShardedCounter._marker": ("data", frozenset({"write"})),
    "dynamodb/counters.py::ShardedCounter._batch_get": ("data", frozenset({"read"})),
    "dynamodb/family_units.py::pin_bucket_unit": ("data", frozenset({"write"})),
    "dynamodb/gsi_buckets.py::Gsi1BucketRecorder.ensure_unit": ("data", frozenset({"write"})),
    "dynamodb/gsi_buckets.py::Gsi1BucketRecorder._update": ("data", frozenset({"write"})),
    "dynamodb/ordered_index.py::OrderedIndex._read_pointers": ("data", frozenset({"write"})),
    "dynamodb/ordered_index.py::OrderedIndex._replace": ("data", frozenset({"write"})),
    "dynamodb/reader.py::run_query": ("data", frozenset({"read", "admin"})),
    "dynamodb/planned_reader.py::PlannedReader.query": ("data", frozenset({"read"})),
    "dynamodb/planned_reader.py::PlannedReader._base": ("data", frozenset({"read"})),
    "dynamodb/bucketed_reader.py::BucketedReader.query.read": ("data", frozenset({"read"})),
    "dynamodb/bucketed_family.py::BucketedFamilies.query": ("data", frozenset({"read"})),
    "facade.py::Dynashard.query_events": ("data", frozenset({"read"})),
    "dynamodb/adoption.py::survey_bare_key": ("data", frozenset({"admin"})),
    "dynamodb/compaction.py::_get": ("data", frozenset({"admin"})),
    "dynamodb/compaction.py::_delete_copy": ("data", frozenset({"admin"})),
    "dynamodb/table_check.py::check_table_schema": (
        "data",
        frozenset({"write", "read", "admin"}),
    ),
    "dynamodb/metadata_store.py::DynamoDBMetadataStore._get_item": (
        "metadata",
        frozenset({"write", "read", "admin"}),
    ),
    "dynamodb/metadata_store.py::DynamoDBMetadataStore.adopted_keys": (
        "metadata",
        frozenset({"write", "read", "admin"}),
    ),
    "dynamodb/metadata_store.py::DynamoDBMetadataStore._put_new": (
        "metadata",
        frozenset({"write", "admin"}),
    ),
    "dynamodb/metadata_store.py::DynamoDBMetadataStore._update": (
        "metadata",
        frozenset({"write", "admin"}),
    ),
    "dynamodb/metadata_store.py::DynamoDBMetadataStore.scan_sharded": (
        "metadata",
        frozenset({"admin"}),
    ),
    "cloudwatch/alarms.py::CloudWatchAlarmStates.alarms_in_alarm": ("", frozenset({"scaler"})),
    "cloudwatch/insights.py::insight_rule_totals": ("", frozenset({"scaler"})),
    "cloudwatch/insights.py::ContributorInsightsHotKeySource.rule_names": (
        "",
        frozenset({"scaler"}),
    ),
    "cloudwatch/insights.py::InsightRuleOfferedLoad._history": ("", frozenset({"scaler"})),
}
#: The items of a TransactWriteItems and the IAM action each needs.
TRANSACT_ITEMS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}


def _operations() -> dict[str, str]:
    """Return boto3 method name -> IAM action, for DynamoDB and CloudWatch."""
    session = botocore.session.get_session()
    operations: dict[str, str] = {}
    for service, prefix in (("dynamodb", "dynamodb"), ("cloudwatch", "cloudwatch")):
        for name in session.get_service_model(service).operation_names:
            operations[xform_name(name)] = f"{prefix}:{name}"
    return operations


def _call_sites() -> Iterator[tuple[str, str, set[str]]]:
    """Yield (call site, boto3 operation, IAM actions) for each client call of the library.

    A call is ``<anything>.<operation>(...)`` or ``.get_paginator("<operation>")``
    where the operation is one of DynamoDB's or CloudWatch's; docstrings and comments
    are not code, so doctest examples (``create_table``) are not calls.
    """
    operations = _operations()
    for path in sorted(LIBRARY.rglob("*.py")):
        if "cli" in path.relative_to(LIBRARY).parts:
            continue  # the command calls the library (the facade), never a client itself
        module = path.relative_to(LIBRARY).as_posix()

        def walk(
            node: ast.AST, scope: list[str], module: str = module
        ) -> Iterator[tuple[str, str]]:
            for child in ast.iter_child_nodes(node):
                inner = scope
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    inner = [*scope, child.name]
                if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                    name = child.func.attr
                    if name == "get_paginator" and child.args:
                        first = child.args[0]
                        name = first.value if isinstance(first, ast.Constant) else name
                    if name in operations and name != "get_paginator":
                        yield f"{module}::{'.'.join(scope)}", name
                yield from walk(child, inner, module)

        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = {f"{module}::{name}": node for name, node in _functions(tree, [])}
        for site, operation in walk(tree, []):
            if operation == "transact_write_items":
                actions = _transact_actions(functions[site])
                assert actions, f"{site}: no Put/Update/Delete/ConditionCheck item found"
            else:
                actions = {operations[operation]}
            yield site, operation, actions


def _functions(node: ast.AST, scope: list[str]) -> Iterator[tuple[str, ast.AST]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = [*scope, child.name]
            yield ".".join(name), child
            yield from _functions(child, name)
        else:
            yield from _functions(child, scope)


def _transact_actions(function: ast.AST) -> set[str]:
    """Return the IAM actions of the transaction items the function's code builds."""
    return {
        TRANSACT_ITEMS[key.value]
        for node in ast.walk(function)
        if isinstance(node, ast.Dict)
        for key in node.keys
        if isinstance(key, ast.Constant) and key.value in TRANSACT_ITEMS
    }


def test_the_library_is_found_and_parsed() -> None:
    sites = list(_call_sites())
    assert len(sites) >= 30  # the scan sees the library's calls (33 when written)
    assert {operation for _, operation, _ in sites} >= {
        "batch_write_item",
        "query",
        "describe_table",
        "transact_write_items",
        "scan",
    }


def test_every_client_call_of_the_library_is_covered_by_the_grant_of_its_role(
    dev: Synth,
) -> None:
    # Given every client call of the library, with the IAM actions it needs
    sites = list(_call_sites())
    # Then each call site is one we know the role of (a new one must be placed)
    unknown = sorted({site for site, _, _ in sites} - set(CALL_SITES))
    assert unknown == [], f"map these calls to a role in CALL_SITES, then grant: {unknown}"
    stale = sorted(set(CALL_SITES) - {site for site, _, _ in sites})
    assert stale == [], f"no longer client calls: {stale}"
    # and its role's grant covers its actions on its table
    scaler_actions = {
        action
        for statement in _statements_of(dev, dev.stack.scaler.function.role)
        for action in _as_list(statement["Action"])
    }
    missing = []
    for site, operation, actions in sites:
        table, roles = CALL_SITES[site]
        for role in sorted(roles):
            if role == "scaler":
                granted = scaler_actions
            else:
                library_role = ROLES[role]
                granted = set(library_role.data if table == "data" else library_role.metadata)
            if not actions <= granted:
                missing.append(f"{site} {operation}: {role} lacks {sorted(actions - granted)}")
    assert missing == []


def test_the_check_fails_for_a_grant_that_misses_an_action() -> None:
    # Given the read role without Query: the readers' calls are no longer covered
    crippled = LibraryRole("read", data=("dynamodb:GetItem",), metadata=READ.metadata, indexes=True)
    uncovered = [
        site
        for site, _, actions in _call_sites()
        if "read" in CALL_SITES[site][1]
        and CALL_SITES[site][0] == "data"
        and not actions <= set(crippled.data)
    ]
    # Then the comparison sees it
    assert "dynamodb/reader.py::run_query" in uncovered


def test_the_functions_roles_are_built_from_the_same_lists() -> None:
    # One source: the constants the ingest, query and scaler constructs use are the
    # library's lists, not copies
    from infra.constructs import functions, ingest, query

    assert ingest.DATA_WRITE_ACTIONS is grants.DATA_WRITE_ACTIONS
    assert ingest.ORDERED_INDEX_ACTIONS is grants.ORDERED_INDEX_ACTIONS
    assert query.DATA_READ_ACTIONS is grants.DATA_READ_ACTIONS
    assert functions.METADATA_READ_UPDATE_ACTIONS is grants.METADATA_READ_UPDATE_ACTIONS
    assert functions.METADATA_READ_ACTIONS is grants.METADATA_READ_ACTIONS


def _statements_of(dev: Synth, role: iam.IRole) -> list[dict[str, Any]]:
    role_id = dev.stack.get_logical_id(role.node.default_child)  # type: ignore[arg-type]
    return [
        statement
        for resource in dev.of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in resource["Properties"]["Roles"]
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
