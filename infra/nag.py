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

    from .constructs.functions import DynashardFunction

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
            # the table's name: a reference to a table of the stack, or the literal name
            # of an imported one (DynamoDB table names: [a-zA-Z0-9_.-]{3,255})
            regex=(
                r"/^Resource::arn:<AWS::Partition>:cloudwatch:<AWS::Region>:"
                r"<AWS::AccountId>:insight-rule\/DynamoDBContributorInsights-\*-"
                r"(<[A-Za-z0-9]+>|[A-Za-z0-9_.-]{3,255})-\*$/g"
            )
        )
    ],
)

DATA_KEY_WILDCARDS = NagPackSuppression(
    id="AwsSolutions-IAM5",
    reason=(
        "kms:ReEncrypt* and kms:GenerateDataKey* on the data table's customer managed key "
        "only (a user's table with its own key, named by its exact ARN): the key actions "
        "CDK's Table.grant_write_data adds for such a table, which DynamoDB uses on the "
        "caller's behalf to encrypt the items it writes. Readers get kms:Decrypt only."
    ),
    applies_to=["Action::kms:ReEncrypt*", "Action::kms:GenerateDataKey*"],
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
    scaler_failure_queue: sqs.IQueue,
    api_auth: Literal["iam", "api_key"],
    stream_failure_queue: sqs.IQueue | None = None,
    api: apigw.RestApi | None = None,
    data_key_writers: Sequence[DynashardFunction] = (),
) -> None:
    """Attach the suppressions to the constructs they concern.

    The :class:`~infra.constructs.dynashard.Dynashard` construct passes what it built, so
    a stack that adds it and runs cdk-nag gets the same reasons; this module knows the
    findings and their reasons, not the construct's shape (so it does not import it).

    Parameters
    ----------
    functions : sequence of DynashardFunction
        Every function of the stack: X-Ray's wildcard on its role, the pinned runtime.
    scaler : DynashardFunction
        The scaler, whose role reads the Contributor Insights rules by name pattern.
    scaler_failure_queue : aws_cdk.aws_sqs.IQueue
        The scaler's asynchronous on-failure destination (a DLQ without redrive).
    api_auth : {"iam", "api_key"}
        The API's authorization (``DynashardParameters.api_auth``), which decides the
        methods' suppressions.
    stream_failure_queue : aws_cdk.aws_sqs.IQueue, optional
        The Kinesis event source's on-failure destination (a DLQ without redrive), when
        there are ingest functions.
    api : aws_cdk.aws_apigateway.RestApi, optional
        The REST API, when there is one: its stage (no WAF, no execution logs) and its
        methods.
    data_key_writers : sequence of DynashardFunction
        The functions granted the data table's customer managed key to write (none when
        the table has no such key).
    """
    for fn in functions:
        NagSuppressions.add_resource_suppressions(fn.role, [XRAY_WILDCARD], apply_to_children=True)
        NagSuppressions.add_resource_suppressions(fn.function, [PINNED_RUNTIME])
    NagSuppressions.add_resource_suppressions(
        scaler.role, [INSIGHT_RULE_WILDCARD], apply_to_children=True
    )
    for fn in data_key_writers:
        NagSuppressions.add_resource_suppressions(
            fn.role, [DATA_KEY_WILDCARDS], apply_to_children=True
        )
    NagSuppressions.add_resource_suppressions(scaler_failure_queue, [FAILURE_DESTINATION_IS_A_DLQ])
    if stream_failure_queue is not None:
        NagSuppressions.add_resource_suppressions(
            stream_failure_queue, [STREAM_FAILURE_QUEUE_IS_A_DLQ]
        )
    if api is None:
        return
    NagSuppressions.add_resource_suppressions(
        api.deployment_stage, [NO_WAF, NO_EXECUTION_LOGS], apply_to_children=True
    )
    method_suppressions = (
        [API_KEY_OPT_IN, API_KEY_NOT_COGNITO] if api_auth == "api_key" else [IAM_NOT_COGNITO]
    )
    NagSuppressions.add_resource_suppressions(
        api.methods, method_suppressions, apply_to_children=True
    )
