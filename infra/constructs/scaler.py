"""Scaler: key-range throttle alarms that invoke the scaler function directly, and a sweep.

Every alarm comes from :data:`infra.alarm_specs.SCALER_ALARMS`, the definition the
sandbox's alarm evaluator applies too; the alarm action is a Lambda action (CloudWatch
invokes the function with the alarm state change), so there is no SNS hop.

An action runs only on a state change, so an alarm that stays in ``ALARM`` (the first
growth was not enough) would never call the scaler again. An EventBridge rule invokes
the scaler every minute to sweep: it reads which of its alarms are in ``ALARM``
(``DescribeAlarms``) and handles those. The alarms have names of their own
(``{name prefix}-{spec id}``, the prefix being the stack's name by default) so that
the function's environment and policy can name them without a reference to the
alarms, which reference the function (a cycle).

The scaler also reads the report of the ingest functions' write-load Contributor
Insights rule (:mod:`dynashard.core.load`), when there are ingest functions, named in its
environment and policy by the rule's name, so this construct does not reference the
ingest construct either. A data table without its GSI (``GSI1`` by default) gets the
table's two alarms only.

Both triggers invoke the function asynchronously. Lambda retries a failed asynchronous
invocation twice (:data:`ASYNC_RETRY_ATTEMPTS`), then sends the invocation record (the
alarm event or the schedule event, the error, the attempt count) to the function's
on-failure destination, :attr:`Scaler.failure_queue`, an encrypted SQS queue whose depth
is alarmed (``ScalerFailureQueueDepth``, :mod:`infra.constructs.monitoring`): a growth
that failed is not dropped silently. The function has reserved concurrency
(``scaler_reserved_concurrency``), so a burst of ingest or query invocations cannot
starve it of the account's pool, and only that many scaler runs race on the metadata
table.

The sweep also shrinks the keys that stayed cool (:mod:`dynashard.planning.shrinking`): it finds
the keys above the default count with a paginated ``Scan`` of the metadata table
(``dynamodb:Scan`` on that table only) and reads their load history from the same
write-load rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from aws_cdk import ArnFormat, Aws, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from dynashard import names

from ..alarm_specs import SCALER_ALARMS, SWEEP_RATE_MINUTES, AlarmSpec
from ..config import DynashardParameters
from ..deploy_checks import SSE_SQS, Suppression, skip_checkov
from .functions import (
    DynashardFunction,
    build_function,
    build_metadata_statement,
    stack_arn,
)
from .tables import Tables

#: Retries of a failed asynchronous invocation before the on-failure destination
#: (Lambda's maximum, also its default: "Configuring error handling for asynchronous
#: invocation", AWS Lambda Developer Guide).
ASYNC_RETRY_ATTEMPTS = 2

#: Longest alarm name CloudWatch accepts (``PutMetricAlarm``).
MAX_ALARM_NAME_LENGTH = 255

#: checkov's CKV_AWS_116 reads only ``DeadLetterConfig``; the scaler has an on-failure
#: destination instead.
ON_FAILURE_DESTINATION = Suppression(
    "CKV_AWS_116",
    "Invoked asynchronously (alarm action, EventBridge schedule) with an on-failure "
    "destination instead of a DLQ: AWS::Lambda::EventInvokeConfig sends the failed "
    "event with its error and attempt count to ScalerFailureQueue (SSE-SQS, depth "
    "alarmed) after two retries. A destination carries more than a DLQ (the error), "
    "which the AWS Lambda Developer Guide recommends; checkov 3 reads only DeadLetterConfig.",
)


def alarm_metric(spec: AlarmSpec, table_name: str) -> cloudwatch.Metric:
    """Return the CloudWatch metric of an alarm spec for a table.

    Parameters
    ----------
    spec : AlarmSpec
        The shared alarm definition.
    table_name : str
        Physical table name (a CDK token).

    Returns
    -------
    aws_cdk.aws_cloudwatch.Metric
        Namespace, name, dimensions, statistic and period as in the spec.
    """
    return cloudwatch.Metric(
        namespace=spec.namespace,
        metric_name=spec.metric_name,
        dimensions_map=spec.dimensions(table_name),
        statistic=spec.statistic,
        period=Duration.seconds(spec.period_s),
    )


def alarm_name(name_prefix: str, spec: AlarmSpec) -> str:
    """Return the name of a spec's alarm.

    Parameters
    ----------
    name_prefix : str
        The names of one :class:`~infra.constructs.dynashard.Dynashard` construct's
        resources start with it: its stack's name unless told otherwise.
    spec : AlarmSpec
        The alarm's definition.

    Returns
    -------
    str
        ``{name_prefix}-{spec.id}``, e.g. ``dynashard-dev-TableWriteKeyRange``.

    Raises
    ------
    ValueError
        If the name is longer than the 255 characters CloudWatch allows
        (``PutMetricAlarm``, CloudWatch API Reference).
    """
    name = f"{name_prefix}-{spec.id}"
    if len(name) > MAX_ALARM_NAME_LENGTH:
        raise ValueError(f"alarm name {name!r} is longer than {MAX_ALARM_NAME_LENGTH} characters")
    return name


def scaler_alarm_specs(gsi_name: str | None) -> tuple[AlarmSpec, ...]:
    """Return the alarms of a data table: :data:`SCALER_ALARMS`, the GSI's only if it has one.

    Parameters
    ----------
    gsi_name : str or None
        The data table's time-bucket GSI (``GSI1`` by default; the GSI alarms are on
        this index, their ids unchanged); None: the table has none.

    Returns
    -------
    tuple of AlarmSpec
        In :data:`SCALER_ALARMS` order.
    """
    return tuple(
        spec if spec.index_name is None else dataclasses.replace(spec, index_name=gsi_name)
        for spec in SCALER_ALARMS
        if gsi_name is not None or spec.index_name is None
    )


def _build_alarm(
    scope: Construct, spec: AlarmSpec, name: str, table_name: str, target: lambda_.IFunction
) -> cloudwatch.Alarm:
    """Return the alarm of one spec whose ALARM action invokes ``target``."""
    alarm = cloudwatch.Alarm(
        scope,
        f"{spec.id}Alarm",
        alarm_name=name,
        metric=alarm_metric(spec, table_name),
        threshold=spec.threshold,
        evaluation_periods=spec.evaluation_periods,
        datapoints_to_alarm=spec.datapoints_to_alarm,
        comparison_operator=cloudwatch.ComparisonOperator[spec.comparison.name],
        treat_missing_data=cloudwatch.TreatMissingData[spec.treat_missing_data.name],
        alarm_description=(
            f"{spec.metric_name} on {spec.index_name or 'the data table'}: "
            "a hot partition; invokes the dynashard scaler"
        ),
    )
    alarm.add_alarm_action(actions.LambdaAction(target, use_unique_permission_id=True))
    return alarm


def _build_scaler_statements(
    scope: Construct,
    tables: Tables,
    alarm_names: list[str],
    write_load_rule_names: Sequence[str],
    gsi_name: str | None,
) -> list[iam.PolicyStatement]:
    """Return the scaler's statements: metadata, Contributor Insights, its alarms' states.

    DynamoDB names its Contributor Insights rules when they are enabled
    (``DynamoDBContributorInsights-<PKC|SKC|PKT|SKT>-<table>-<epoch ms>``), so the
    rule ARN is matched by table name, and ``DescribeContributorInsights`` on the
    table (and its GSI, when the table has one) tells the scaler the exact names. The
    ingest functions' write-load rules, when there are ingest functions, have known
    names, so their reports are allowed on those ARNs only.
    """
    table = tables.data_table
    rule_arn = (
        f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:insight-rule/"
        f"DynamoDBContributorInsights-*-{table.table_name}-*"
    )
    if write_load_rule_names:
        # the sweep shrinks keys from the write-load report only (no report, no shrink):
        # it finds the keys above the default count with a Scan of the metadata table
        shrink = [
            iam.PolicyStatement(
                sid="FindShardedKeysToShrink",
                actions=["dynamodb:Scan"],
                resources=[tables.metadata_table.table_arn],
            )
        ]
        write_load = [
            iam.PolicyStatement(
                sid="ReadWriteLoadReport",
                actions=["cloudwatch:GetInsightRuleReport"],
                resources=[
                    stack_arn(
                        scope, "cloudwatch", "insight-rule", name, ArnFormat.SLASH_RESOURCE_NAME
                    )
                    for name in write_load_rule_names
                ],
            )
        ]
    else:
        shrink = write_load = []
    index_arns = [f"{table.table_arn}/index/{gsi_name}"] if gsi_name else []
    return [
        build_metadata_statement(tables, update=True),
        *shrink,
        iam.PolicyStatement(
            sid="ReadContributorInsightsReports",
            actions=["cloudwatch:GetInsightRuleReport"],
            resources=[rule_arn],
        ),
        *write_load,
        iam.PolicyStatement(
            sid="FindContributorInsightsRules",
            actions=["dynamodb:DescribeContributorInsights"],
            resources=[table.table_arn, *index_arns],
        ),
        iam.PolicyStatement(
            sid="SweepOwnAlarms",
            actions=["cloudwatch:DescribeAlarms"],
            resources=[
                stack_arn(scope, "cloudwatch", "alarm", name, ArnFormat.COLON_RESOURCE_NAME)
                for name in alarm_names
            ],
        ),
    ]


def _shrink_environment(config: DynashardParameters) -> dict[str, str]:
    """Return the shrink sweep's settings (the low-water mark only when set)."""
    env = {names.ENV_SHRINK_COOL_PERIOD_S: f"{config.shrink_cool_period_s:g}"}
    if config.shrink_utilization is not None:
        env[names.ENV_SHRINK_UTILIZATION] = f"{config.shrink_utilization:g}"
    return env


class Scaler(Construct):
    """The shard-growth path: throttle alarms -> scaler function -> metadata table.

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct.
    construct_id : str
        Construct id.
    config : DynashardParameters
        The functions' defaults and the planning parameters (environment).
    tables : Tables
        The data table (alarm dimensions) and the metadata table (shard counts).
    layer : aws_cdk.aws_lambda.ILayerVersion
        The dynashard layer.
    name_prefix : str
        First part of the alarms' names (:func:`alarm_name`).
    write_load_rule_names : sequence of str
        Names of the ingest functions' write-load Contributor Insights rules, part 0
        first (:attr:`infra.constructs.write_load.WriteLoadRules.rule_names`); the
        function reads their reports (``DYNASHARD_WRITE_LOAD_RULE``, comma-separated;
        ``cloudwatch:GetInsightRuleReport``). Empty without ingest functions: the
        function plans from DynamoDB's Contributor Insights alone, and the sweep shrinks
        no key (a key missing from the write-load report is unknown, not idle).
    gsi_name : str or None
        The data table's time-bucket GSI (its two alarms, ``DescribeContributorInsights``
        on it); None: the table has none.

    Attributes
    ----------
    function : DynashardFunction
        The scaler function (handler ``app.handler``).
    alarms : list of aws_cdk.aws_cloudwatch.Alarm
        One alarm per :func:`scaler_alarm_specs` entry, in that order, named by
        :func:`alarm_name`.
    sweep : aws_cdk.aws_events.Rule
        Invokes the function every :data:`SWEEP_RATE_MINUTES` minute(s).
    failure_queue : aws_cdk.aws_sqs.Queue
        On-failure destination of the function's asynchronous invocations (an alarm's
        or the sweep's event after :data:`ASYNC_RETRY_ATTEMPTS` retries), SSE-SQS,
        14 days' retention.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DynashardParameters,
        tables: Tables,
        layer: lambda_.ILayerVersion,
        name_prefix: str,
        write_load_rule_names: Sequence[str],
        gsi_name: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        specs = scaler_alarm_specs(gsi_name)
        alarm_names = [alarm_name(name_prefix, spec) for spec in specs]
        self.function: DynashardFunction = build_function(
            self,
            "Function",
            config=config,
            tables=tables,
            layer=layer,
            code_dir="scaler",
            handler="app.handler",
            memory="scaler",
            description="dynashard scaler: grows shard counts of throttled logical keys",
            statements=_build_scaler_statements(
                self, tables, alarm_names, write_load_rule_names, gsi_name
            ),
            environment={
                names.ENV_SCALER_ALARM_NAMES: ",".join(alarm_names),
                **(
                    {names.ENV_WRITE_LOAD_RULE: ",".join(write_load_rule_names)}
                    if write_load_rule_names
                    else {}
                ),
                **_shrink_environment(config),
            },
            reserved_concurrency=config.scaler_reserved_concurrency,
        )
        self.failure_queue = sqs.Queue(
            self,
            "FailureQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        skip_checkov(self.failure_queue, SSE_SQS)
        self.function.function.configure_async_invoke(
            on_failure=destinations.SqsDestination(self.failure_queue),
            retry_attempts=ASYNC_RETRY_ATTEMPTS,
        )
        skip_checkov(self.function.function, ON_FAILURE_DESTINATION)
        self.alarms = [
            _build_alarm(self, spec, name, tables.data_table.table_name, self.function.function)
            for spec, name in zip(specs, alarm_names, strict=True)
        ]
        self.sweep = events.Rule(
            self,
            "Sweep",
            description="dynashard scaler: sweep the throttle alarms that stayed in ALARM",
            schedule=events.Schedule.rate(Duration.minutes(SWEEP_RATE_MINUTES)),
            # EventBridge does not redeliver (the next sweep comes a minute later); a
            # function error is still retried by Lambda's asynchronous invocation, as for
            # an alarm action, with the same event time.
            targets=[targets.LambdaFunction(self.function.function, retry_attempts=0)],
        )
