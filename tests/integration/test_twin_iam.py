"""A role without an action fails locally as it fails on AWS (issue 30).

The synthesized dev template, with ``dynamodb:BatchWriteItem`` taken out of the SQS
ingest function's role, is run by the twin on DynamoDB Local: an SQS batch through that
function fails, every record reported back, because the writer's ``BatchWriteItem`` is
refused with AWS's ``AccessDeniedException`` naming the action; the unmodified template
writes the same batch.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from dynashard import Dynashard, DynashardConfig
from sandbox.engines.dynamodb_local import DynamoDBLocal
from sandbox.env_vars import function_environment, patched_environ, reset_function_caches
from sandbox.local_aws.aws_events import sqs_event, sqs_record
from sandbox.twin import LocalTwin
from sandbox.twin.iam import install_default
from sandbox.twin.sources import SQS_HANDLER
from sandbox.twin.synth import synthesized_template

pytestmark = pytest.mark.integration

ACTION = "dynamodb:BatchWriteItem"


def _without_action(template: dict[str, Any], handler: str, action: str) -> int:
    """Remove ``action`` from every statement of the role of ``handler``'s function.

    Returns the number of statements it was removed from.
    """
    resources = template["Resources"]
    module, _, attribute = handler.partition(":")
    (function,) = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"]["Handler"] == f"{module.rsplit('.', 1)[1]}.{attribute}"
        and r["Metadata"]["aws:asset:path"].endswith(module.rsplit(".", 1)[0].replace(".", "/"))
    ]
    role = {"Ref": function["Properties"]["Role"]["Fn::GetAtt"][0]}
    removed = 0
    for resource in resources.values():
        if resource["Type"] != "AWS::IAM::Policy" or role not in resource["Properties"]["Roles"]:
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            actions = [actions] if isinstance(actions, str) else actions
            if action in actions:
                statement["Action"] = [a for a in actions if a != action]
                removed += 1
    return removed


@pytest.fixture(scope="module")
def denied_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dev template, its SQS ingest function's role without ``dynamodb:BatchWriteItem``."""
    template = synthesized_template().template
    assert _without_action(template, SQS_HANDLER, ACTION) >= 1
    path = tmp_path_factory.mktemp("twin") / "dynashard-dev-nobatchwrite.template.json"
    path.write_text(json.dumps(template))
    return path


def _twin(template: Path | None, tables: tuple[str, str]) -> LocalTwin:
    twin = LocalTwin.load(template=template) if template else LocalTwin.load()
    twin.bind_tables({"DataTable": tables[0], "MetadataTable": tables[1]})
    return twin


@pytest.fixture
def run_batch(dynamodb_local: DynamoDBLocal, sandbox_tables: tuple[str, str]) -> Iterator[Any]:
    """Send an SQS batch through the twin's SQS ingest function; return what it answered.

    Returns ``(response, denials, stored ids)``: the function's partial batch response,
    the ``AccessDeniedException`` errors its role raised, and the ids read back.
    """
    install_default()

    def run(template: Path | None, key: str) -> tuple[Any, list[ClientError], list[str]]:
        twin = _twin(template, sandbox_tables)
        env = function_environment(dynamodb_local.endpoint_url, twin=twin)
        fn = twin.function(SQS_HANDLER)
        assert fn.role is not None
        denials: list[ClientError] = []
        check = fn.role.check

        def recording_check(checks: Any) -> None:
            try:
                check(checks)
            except ClientError as exc:
                denials.append(exc)
                raise

        fn.role.check = recording_check  # type: ignore[method-assign]
        events = [
            {"key": key, "id": f"{key}-{i}", "ts": f"2013-01-01T00:0{i}:00Z", "data": {}}
            for i in range(3)
        ]
        with patched_environ(env):
            reset_function_caches()
            try:
                response = fn(sqs_event(sqs_record(e) for e in events))
            finally:
                reset_function_caches()
            ds = Dynashard(
                DynashardConfig(*sandbox_tables, endpoint_url=dynamodb_local.endpoint_url)
            )
            try:
                stored = [i["id"] for i in ds.query_events(key, limit=10).items]
            finally:
                ds.close()
        return response, denials, stored

    yield run


def test_a_role_without_batch_write_item_fails_the_batch_naming_the_action(
    denied_template: Path,
    run_batch: Any,
    sandbox_tables: tuple[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = f"IAM#DENIED#{uuid.uuid4().hex[:6]}"
    with caplog.at_level(logging.WARNING):
        response, denials, stored = run_batch(denied_template, key)
    # Every record comes back failed, nothing is stored...
    assert len(response["batchItemFailures"]) == 3
    assert stored == []
    # ...because the role refused the writer's BatchWriteItem, as AWS does.
    assert denials, "no call was refused"
    errors = {(d.response["Error"]["Code"], d.operation_name) for d in denials}
    assert errors == {("AccessDeniedException", "BatchWriteItem")}
    message = denials[0].response["Error"]["Message"]
    assert f"is not authorized to perform: {ACTION} on resource: " in message
    assert message.endswith(f"because no identity-based policy allows the {ACTION} action")
    assert f":table/{sandbox_tables[0]} " in message
    assert ":assumed-role/IngestQueueFunctionRole" in message
    # The function says why it gave each record back, as its CloudWatch log would.
    reasons = [str(getattr(r, "reason", "")) for r in caplog.records]
    rejected = [r for r in reasons if "AccessDeniedException" in r and ACTION in r]
    assert len(rejected) == 3, reasons


def test_the_unmodified_template_writes_the_same_batch(run_batch: Any) -> None:
    key = f"IAM#ALLOWED#{uuid.uuid4().hex[:6]}"
    response, denials, stored = run_batch(None, key)
    assert not (response or {}).get("batchItemFailures")
    assert denials == []
    assert stored == [f"{key}-{i}" for i in range(3)]
