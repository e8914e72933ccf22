"""Monitoring: one CloudWatch dashboard, the dead-letter alarms and the misconfiguration alarm.

The dashboard shows throttle events by reason (so a hot partition is told apart from
a table, account or on-demand-maximum limit, design invariant 6), consumed capacity,
the shard counts and ingest failures the functions emit (Powertools Metrics, EMF,
namespace ``dynashard``), DLQ depth and read latency. Without ingest or query functions
(:class:`~infra.constructs.dynashard.Dynashard` on a table written by other code), it
leaves their graphs and alarms out.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from dynashard import names

from ..alarm_specs import DYNAMODB_NAMESPACE, AlarmSpec
from .api import EventsApi
from .ingest import Ingest
from .query import Query
from .scaler import Scaler
from .tables import Tables

#: The eight DynamoDB throttle metrics by cause ("CloudWatch throttling metrics",
#: Amazon DynamoDB Developer Guide). Only the key-range pair is fixed by shards.
THROTTLE_METRICS_BY_REASON = (
    "WriteKeyRangeThroughputThrottleEvents",
    "ReadKeyRangeThroughputThrottleEvents",
    "WriteProvisionedThroughputThrottleEvents",
    "ReadProvisionedThroughputThrottleEvents",
    "WriteAccountLimitThrottleEvents",
    "ReadAccountLimitThrottleEvents",
    "WriteMaxOnDemandThroughputThrottleEvents",
    "ReadMaxOnDemandThroughputThrottleEvents",
)
_PERIOD = Duration.minutes(1)


def _dynamodb_metric(
    metric_name: str, table_name: str, index_name: str | None = None, statistic: str = "Sum"
) -> cloudwatch.Metric:
    """Return an ``AWS/DynamoDB`` metric for the table or one of its GSIs."""
    dims = AlarmSpec(id="dashboard", metric_name=metric_name, index_name=index_name).dimensions(
        table_name
    )
    return cloudwatch.Metric(
        namespace=DYNAMODB_NAMESPACE,
        metric_name=metric_name,
        dimensions_map=dims,
        statistic=statistic,
        period=_PERIOD,
        label=f"{metric_name} ({index_name or 'table'})",
    )


def _own_metrics(token: str, statistic: str, label: str) -> cloudwatch.MathExpression:
    """Return a SEARCH over the functions' own metrics whose names contain ``token``.

    A search keeps the dashboard in step with the metric names the functions emit
    (CloudWatch splits CamelCase names into search tokens).
    """
    return cloudwatch.MathExpression(
        expression=(
            f"SEARCH('Namespace=\"{names.METRICS_NAMESPACE}\" {token}', "
            f"'{statistic}', {int(_PERIOD.to_seconds())})"
        ),
        label=label,
        period=_PERIOD,
    )


def _queue_depth(queue: sqs.IQueue, label: str | None = None) -> cloudwatch.Metric:
    """Return the visible-message count of a queue (maximum per minute).

    Alarms pass no label: a labelled metric makes CloudWatch's alarm a metric-math
    alarm (``Metrics``) instead of a plain one (``MetricName``, ``Dimensions``).
    """
    return queue.metric_approximate_number_of_messages_visible(
        statistic="Maximum", period=_PERIOD, label=label
    )


def _build_dlq_alarm(
    scope: Construct,
    construct_id: str,
    queue: sqs.IQueue,
    description: str = "Ingest records gave up on: inspect and redrive",
) -> cloudwatch.Alarm:
    """Return an alarm that fires as soon as one message sits in a dead-letter queue."""
    return cloudwatch.Alarm(
        scope,
        construct_id,
        metric=_queue_depth(queue),
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=description,
    )


def _build_misconfiguration_alarm(
    scope: Construct, construct_id: str, services: Sequence[str]
) -> cloudwatch.Alarm:
    """Return an alarm that fires as soon as a function finds its own configuration invalid.

    The functions count :data:`dynashard.names.METRIC_FUNCTION_MISCONFIGURED` (Powertools
    Metrics, dimension ``service``) on every invocation whose settings or facade do not
    build from their environment (:class:`dynashard.errors.ConfigurationError`: the REST
    API answers 500, a queue, stream or scaler invocation fails). The API's 5XXError
    would also count the 503s of throttled writes and failed shard queries, which
    clients retry; this metric counts the operator's error alone. One math expression
    sums the services' metrics (``FILL`` with 0: a service that emitted nothing).
    """
    metrics = {
        f"m{i}": cloudwatch.Metric(
            namespace=names.METRICS_NAMESPACE,
            metric_name=names.METRIC_FUNCTION_MISCONFIGURED,
            dimensions_map={names.METRICS_SERVICE_DIMENSION: service},
            statistic="Sum",
            period=_PERIOD,
        )
        for i, service in enumerate(services)
    }
    return cloudwatch.Alarm(
        scope,
        construct_id,
        metric=cloudwatch.MathExpression(
            expression=" + ".join(f"FILL({m}, 0)" for m in metrics),
            using_metrics=metrics,
            period=_PERIOD,
        ),
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=(
            "A function's own configuration (its environment) is invalid: every request it "
            "serves fails. Its log names the setting (message 'function misconfigured'); "
            "fix the stack's parameter and deploy again"
        ),
    )


def _build_throttle_widgets(table_name: str, gsi_name: str | None) -> list[cloudwatch.IWidget]:
    """Return throttle-by-reason and consumed-capacity graphs for the table (and its GSI)."""
    indexes = (None, gsi_name) if gsi_name else (None,)
    widgets: list[cloudwatch.IWidget] = []
    for index in indexes:
        where = index or "table"
        widgets.append(
            cloudwatch.GraphWidget(
                title=f"Throttle events by reason ({where})",
                left=[_dynamodb_metric(m, table_name, index) for m in THROTTLE_METRICS_BY_REASON],
                width=12,
            )
        )
    widgets.append(
        cloudwatch.GraphWidget(
            title="Consumed capacity (units per minute)",
            left=[
                _dynamodb_metric(m, table_name, index)
                for m in ("ConsumedWriteCapacityUnits", "ConsumedReadCapacityUnits")
                for index in indexes
            ],
            width=12,
        )
    )
    return widgets


class Monitoring(Construct):
    """The dashboard and the dead-letter alarms.

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct.
    construct_id : str
        Construct id.
    dashboard_name : str
        Name of the dashboard (the stack's name, ``dynashard-<stage>``, in the project's
        stack).
    tables, scaler
        The data table (throttles, capacity, latency) and the scaler (its alarms and its
        on-failure queue).
    api, ingest, query : optional
        The REST API and the ingest and query constructs, when there are: their errors,
        dead-letter queues and latency.
    gsi_name : str or None
        The data table's time-bucket GSI (its throttle and capacity graphs), ``GSI1`` by
        default; None: the table has none.

    Attributes
    ----------
    dashboard : aws_cdk.aws_cloudwatch.Dashboard
        The dashboard.
    dlq_alarm, stream_failure_alarm : aws_cdk.aws_cloudwatch.Alarm or None
        Depth alarms of the ingest DLQ and of the stream's on-failure queue; None without
        ingest functions.
    scaler_failure_alarm : aws_cdk.aws_cloudwatch.Alarm
        Depth alarm of the scaler's on-failure queue (a growth or sweep that failed
        after Lambda's retries).
    misconfiguration_alarm : aws_cdk.aws_cloudwatch.Alarm
        Fires on the first invocation of any function whose own configuration is invalid
        (:func:`_build_misconfiguration_alarm`).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        dashboard_name: str,
        tables: Tables,
        scaler: Scaler,
        api: EventsApi | None = None,
        ingest: Ingest | None = None,
        query: Query | None = None,
        gsi_name: str | None = names.GSI1_NAME,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dlq_alarm: cloudwatch.Alarm | None = None
        self.stream_failure_alarm: cloudwatch.Alarm | None = None
        if ingest is not None:
            self.dlq_alarm = _build_dlq_alarm(
                self, "DeadLetterQueueDepth", ingest.dead_letter_queue
            )
            self.stream_failure_alarm = _build_dlq_alarm(
                self, "StreamFailureQueueDepth", ingest.stream_failure_queue
            )
        self.scaler_failure_alarm = _build_dlq_alarm(
            self,
            "ScalerFailureQueueDepth",
            scaler.failure_queue,
            "Scaler invocations that failed after Lambda's retries (a growth or sweep not "
            "done): read the error in the message, fix, and re-invoke with its event",
        )
        functions = [
            *((ingest.api_function,) if ingest is not None else ()),
            *((query.function,) if query is not None else ()),
            scaler.function,
        ]
        self.misconfiguration_alarm = _build_misconfiguration_alarm(
            self, "FunctionMisconfigured", sorted({f.service for f in functions})
        )
        table_name = tables.data_table.table_name
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=dashboard_name,
            default_interval=Duration.hours(3),
        )
        queue_alarms = [
            self.dlq_alarm,
            self.stream_failure_alarm,
            self.scaler_failure_alarm,
            self.misconfiguration_alarm,
        ]
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="Alarms",
                alarms=[*scaler.alarms, *(a for a in queue_alarms if a is not None)],
                width=24,
            )
        )
        self.dashboard.add_widgets(*_build_throttle_widgets(table_name, gsi_name))
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Shards grown and queried (the functions' metrics)",
                left=[_own_metrics("Shards", "Maximum", "shards grown / queried")],
                width=12,
            ),
            *([_build_ingest_failures_widget(ingest, api)] if ingest is not None else []),
        )
        self.dashboard.add_widgets(
            _build_queue_depth_widget(ingest, scaler), _build_latency_widget(table_name, query)
        )


def _build_ingest_failures_widget(ingest: Ingest, api: EventsApi | None) -> cloudwatch.IWidget:
    """Return the graph of the ingest functions' errors, failed records and the API's 5xx."""
    ingest_fns = (ingest.api_function, ingest.queue_function, ingest.stream_function)
    return cloudwatch.GraphWidget(
        title="Ingest failures",
        left=[
            *(f.function.metric_errors(period=_PERIOD) for f in ingest_fns),
            _own_metrics("Failed", "Sum", "failed records"),
            *([api.api.metric_server_error(period=_PERIOD)] if api is not None else []),
        ],
        width=12,
    )


def _build_queue_depth_widget(ingest: Ingest | None, scaler: Scaler) -> cloudwatch.IWidget:
    """Return the graph of the dead-letter and on-failure queues' depth."""
    ingest_queues = (
        [
            _queue_depth(ingest.dead_letter_queue, "ingest DLQ"),
            _queue_depth(ingest.stream_failure_queue, "stream on-failure queue"),
        ]
        if ingest is not None
        else []
    )
    return cloudwatch.GraphWidget(
        title="Dead-letter depth (messages)",
        left=[*ingest_queues, _queue_depth(scaler.failure_queue, "scaler on-failure queue")],
        width=12,
    )


def _build_latency_widget(table_name: str, query: Query | None) -> cloudwatch.IWidget:
    """Return the read latency graph: the query function's (if any) and DynamoDB's."""
    query_latency = []
    if query is not None:
        fn = query.function.function
        query_latency = [
            fn.metric_duration(statistic="p50", period=_PERIOD, label="query p50"),
            fn.metric_duration(statistic="p99", period=_PERIOD, label="query p99"),
        ]
    return cloudwatch.GraphWidget(
        title="Read latency (ms)",
        left=[
            *query_latency,
            cloudwatch.Metric(
                namespace=DYNAMODB_NAMESPACE,
                metric_name="SuccessfulRequestLatency",
                dimensions_map={"TableName": table_name, "Operation": "Query"},
                statistic="Average",
                period=_PERIOD,
                label="DynamoDB Query (server side)",
            ),
        ],
        width=12,
    )
