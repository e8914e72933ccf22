"""cdk-nag (AwsSolutions) suppressions of the stack, each with its reason.

Every suppression is attached to the narrowest construct it concerns and, for IAM5,
to the exact wildcard it accepts (``applies_to``), so a new wildcard still fails the
synth. The infrastructure tests check that no finding is left unsuppressed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from cdk_nag import NagPackSuppression, NagSuppressions, RegexAppliesTo

from dynashard import names

if TYPE_CHECKING:
    from aws_cdk import aws_apigateway as apigw
    from aws_cdk import aws_sqs as sqs

    from infra.constructs.functions import DynashardFunction

XRAY_WILDCARD = NagPackSuppression(
    id="AwsSolutions-IAM5",
    reason=(
        "Only xray:PutTraceSegments and xray:PutTelemetryRecords (added by Lambda active "
        "tracing) use Resource '*': X-Ray defines no resource types for these actions "
        "(Service Authorization Reference, AWS X-Ray), so '*' is the only value they "
        "accept. Every DynamoDB, SQS and Kinesis statement names exact ARNs."
    ),
    applies_to=["Resource::*"],
)

INSIGHT_RULE_WILDCARD = NagPackSuppression(
    id="AwsSolutions-IAM5",
    reason=(
        "cloudwatch:GetInsightRuleReport (read-only) on the Contributor Insights rules "
        "DynamoDB creates for the data table. DynamoDB names them when Contributor "
        "Insights is enabled (DynamoDBContributorInsights-<PKC|SKC|PKT|SKT>-<table>-"
        "<epoch>), so the names are unknown at deploy time; the pattern is pinned to this "
        "account, region and table name."
    ),
    applies_to=[
        RegexAppliesTo(
            regex=(
                r"/^Resource::arn:<AWS::Partition>:cloudwatch:<AWS::Region>:"
                r"<AWS::AccountId>:insight-rule\/DynamoDBContributorInsights-\*-<[A-Za-z0-9]+>-\*$/g"
            )
        )
    ],
)

PINNED_RUNTIME = NagPackSuppression(
    id="AwsSolutions-L1",
    reason=(
        f"The runtime is pinned once, in dynashard.names (LAMBDA_PYTHON_RUNTIME = "
        f"{names.LAMBDA_PYTHON_RUNTIME!r}), to the Python version the layer's compiled "
        "wheels (pydantic-core, wrapt) are built for and the tests run against; it is a "
        "supported Lambda runtime. Moving to a newer one is a deliberate change of that "
        "constant, the layer build and the test matrix, not a drift fix."
    ),
)

STREAM_FAILURE_QUEUE_IS_A_DLQ = NagPackSuppression(
    id="AwsSolutions-SQS3",
    reason=(
        "This queue is itself the on-failure destination (dead-letter role) of the Kinesis "
        "event source mapping; cdk-nag only recognizes redrive-policy DLQs. It is "
        "watched by the StreamFailureQueueDepth alarm."
    ),
)

NO_WAF = NagPackSuppression(
    id="AwsSolutions-APIG3",
    reason=(
        "Every method requires SigV4 (IAM) authorization or an API key with a usage plan, "
        "and the stage is throttled; a WAFv2 web ACL is an account-level choice with its "
        "own per-request cost that operators can associate with the stage ARN."
    ),
)

NO_EXECUTION_LOGS = NagPackSuppression(
    id="AwsSolutions-APIG6",
    reason=(
        "Execution logging needs the account-wide API Gateway CloudWatch Logs role "
        "(AWS::ApiGateway::Account), a per-region singleton that one application stack "
        "should not own or overwrite. Access logging (APIG1) is on, with request id, "
        "caller, status, latency and response length, and the functions log in JSON."
    ),
)

IAM_NOT_COGNITO = NagPackSuppression(
    id="AwsSolutions-COG4",
    reason=(
        "The API is called by AWS principals (services, pipelines, operators), not by end "
        "users: methods use IAM (SigV4) authorization, which API Gateway checks before "
        "the integration runs; a Cognito user pool would add a user directory the "
        "application does not have."
    ),
)

API_KEY_OPT_IN = NagPackSuppression(
    id="AwsSolutions-APIG4",
    reason=(
        "API-key access is an explicit opt-in (context api_auth=api_key) for clients that "
        "cannot sign SigV4; every method then requires the key, and the usage plan "
        "throttles it. The default deployment uses IAM authorization."
    ),
)

API_KEY_NOT_COGNITO = NagPackSuppression(
    id="AwsSolutions-COG4",
    reason=(
        "API-key access is an explicit opt-in (context api_auth=api_key) for service "
        "clients without AWS credentials; there are no end users to put in a Cognito "
        "user pool. The default deployment uses IAM authorization."
    ),
)


FAILURE_DESTINATION_IS_A_DLQ = NagPackSuppression(
    id="AwsSolutions-SQS3",
    reason=(
        "This queue is itself the on-failure destination (dead-letter role) of the "
        "scaler's asynchronous invocations; cdk-nag only recognizes redrive-policy DLQs. "
        "It is watched by the ScalerFailureQueueDepth alarm."
    ),
)


def add_suppressions(
    *,
    functions: Sequence[DynashardFunction],
    scaler: DynashardFunction,
    stream_failure_queue: sqs.IQueue,
    scaler_failure_queue: sqs.IQueue,
    api: apigw.RestApi,
    api_auth: Literal["iam", "api_key"],
) -> None:
    """Attach the suppressions to the constructs they concern.

    The stack passes what it built; this module knows the findings and their reasons,
    not the stack's shape (so it does not import it).

    Parameters
    ----------
    functions : sequence of DynashardFunction
        Every function of the stack: X-Ray's wildcard on its role, the pinned runtime.
    scaler : DynashardFunction
        The scaler, whose role reads the Contributor Insights rules by name pattern.
    stream_failure_queue : aws_cdk.aws_sqs.IQueue
        The Kinesis event source's on-failure destination (a DLQ without redrive).
    scaler_failure_queue : aws_cdk.aws_sqs.IQueue
        The scaler's asynchronous on-failure destination (a DLQ without redrive).
    api : aws_cdk.aws_apigateway.RestApi
        The REST API: its stage (no WAF, no execution logs) and its methods.
    api_auth : {"iam", "api_key"}
        The API's authorization (``StackParameters.api_auth``), which decides the
        methods' suppressions.
    """
    for fn in functions:
        NagSuppressions.add_resource_suppressions(fn.role, [XRAY_WILDCARD], apply_to_children=True)
        NagSuppressions.add_resource_suppressions(fn.function, [PINNED_RUNTIME])
    NagSuppressions.add_resource_suppressions(
        scaler.role, [INSIGHT_RULE_WILDCARD], apply_to_children=True
    )
    NagSuppressions.add_resource_suppressions(stream_failure_queue, [STREAM_FAILURE_QUEUE_IS_A_DLQ])
    NagSuppressions.add_resource_suppressions(scaler_failure_queue, [FAILURE_DESTINATION_IS_A_DLQ])
    NagSuppressions.add_resource_suppressions(
        api.deployment_stage, [NO_WAF, NO_EXECUTION_LOGS], apply_to_children=True
    )
    method_suppressions = (
        [API_KEY_OPT_IN, API_KEY_NOT_COGNITO] if api_auth == "api_key" else [IAM_NOT_COGNITO]
    )
    NagSuppressions.add_resource_suppressions(
        api.methods, method_suppressions, apply_to_children=True
    )
