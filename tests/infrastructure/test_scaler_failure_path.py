"""The scaler's asynchronous failures land on an encrypted, alarmed queue; it has reserved
concurrency. Without them a growth that failed after Lambda's two retries was dropped
silently, and a burst of other functions could starve the scaler of concurrency."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from infra.config import StackParameters
from infra.constructs.scaler import ASYNC_RETRY_ATTEMPTS
from tests.infrastructure.conftest import Synth

pytestmark = pytest.mark.infra


@pytest.fixture
def synths(dev: Synth, prod: Synth) -> dict[str, Synth]:
    """Both synths by name (named fixtures keep these tests in the synth's xdist group)."""
    return {"dev": dev, "prod": prod}


def _scaler_function_id(s: Synth) -> str:
    return s.logical_id(s.stack.scaler.function.function)


def _failure_queue_id(s: Synth) -> str:
    return s.logical_id(s.stack.scaler.failure_queue)


@pytest.mark.parametrize("variant", ["dev", "prod"])
def test_failed_async_invocations_go_to_the_failure_queue(
    variant: str, synths: dict[str, Synth]
) -> None:
    s: Synth = synths[variant]
    function_id = _scaler_function_id(s)
    (config,) = s.of_type("AWS::Lambda::EventInvokeConfig").values()
    props = config["Properties"]
    assert props["FunctionName"] == {"Ref": function_id}
    assert props["Qualifier"] == "$LATEST"
    assert props["MaximumRetryAttempts"] == ASYNC_RETRY_ATTEMPTS == 2
    assert props["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": [_failure_queue_id(s), "Arn"]
    }


@pytest.mark.parametrize("variant", ["dev", "prod"])
def test_failure_queue_is_encrypted_tls_only_and_kept_14_days(
    variant: str, synths: dict[str, Synth]
) -> None:
    s: Synth = synths[variant]
    queue_id = _failure_queue_id(s)
    queue = s.resources[queue_id]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["MessageRetentionPeriod"] == 14 * 24 * 3600
    (policy,) = [
        p
        for p in s.of_type("AWS::SQS::QueuePolicy").values()
        if p["Properties"]["Queues"] == [{"Ref": queue_id}]
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(
        st["Effect"] == "Deny" and st["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for st in statements
    )


def test_only_the_scaler_role_may_send_to_its_failure_queue(dev: Synth) -> None:
    queue_arn = {"Fn::GetAtt": [_failure_queue_id(dev), "Arn"]}
    grants = [
        (policy["Properties"]["Roles"], _as_list(st["Action"]))
        for policy in dev.of_type("AWS::IAM::Policy").values()
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
        if st["Resource"] == queue_arn
    ]
    role_id = dev.logical_id(dev.stack.scaler.function.role)
    assert [roles for roles, _ in grants] == [[{"Ref": role_id}]]
    ((_, actions),) = grants
    # CDK's grant_send_messages: send, and the two reads SendMessage's callers make.
    assert set(actions) == {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}


def test_failure_queue_depth_is_alarmed(dev: Synth) -> None:
    queue_id = _failure_queue_id(dev)
    alarms = [
        a["Properties"]
        for a in dev.of_type("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("Dimensions")
        == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}]
    ]
    assert len(alarms) == 1
    (alarm,) = alarms
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert alarm["Threshold"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["EvaluationPeriods"] == 1
    assert alarm["TreatMissingData"] == "notBreaching"


def test_scaler_has_reserved_concurrency_and_no_other_function_does(dev: Synth) -> None:
    scaler_id = _scaler_function_id(dev)
    reserved = {
        k: v["Properties"].get("ReservedConcurrentExecutions")
        for k, v in dev.of_type("AWS::Lambda::Function").items()
    }
    assert reserved.pop(scaler_id) == dev.stack.config.scaler_reserved_concurrency == 2
    assert set(reserved.values()) == {None}


@pytest.mark.parametrize("value", ["0", "1001", "none"])
def test_scaler_reserved_concurrency_must_be_1_to_1000(value: str) -> None:
    with pytest.raises(ValidationError, match="scaler_reserved_concurrency"):
        StackParameters.model_validate({"scaler_reserved_concurrency": value})


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value
