"""Which of the scaler's alarms are in ``ALARM`` now: the CloudWatch adapter of the port.

:class:`CloudWatchAlarmStates` implements :class:`dynashard.planning.scaling.AlarmStateSource`
with CloudWatch ``DescribeAlarms``. A CloudWatch alarm invokes its action on a state
change only ("Using Amazon CloudWatch alarms": actions run when the state changes), so
an alarm that stays in ``ALARM`` because the first growth was not enough never invokes
the scaler again. A schedule (EventBridge, every minute) invokes the scaler to sweep: it
asks this port which of its alarms are in ``ALARM`` and handles each as if it had just
fired. The cooldown spaces two changes of a key and ``plan_shard_count`` leaves a key
whose throttled shards already fit; throttles of writers still on the old count (up to
their cache lifetime after a change) can still fall in the next window, so a key may
grow one step past its need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dynashard.core.throttling import DIM_INDEX_NAME, DIM_TABLE_NAME
from dynashard.planning.scaling import MIN_WINDOW_S, Alarm, expression_label, metric_label

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from mypy_boto3_cloudwatch import CloudWatchClient

#: Alarm names one DescribeAlarms call accepts (CloudWatch API reference, ``AlarmNames``).
DESCRIBE_ALARMS_MAX_NAMES = 100


def alarm_from_description(description: dict[str, Any], now: datetime) -> Alarm:
    """Build an :class:`Alarm` from one ``DescribeAlarms`` ``MetricAlarms`` entry.

    Parameters
    ----------
    description : dict
        ``{"AlarmName", "StateValue", "MetricName", "Dimensions", "Period",
        "EvaluationPeriods", "Metrics"?}`` as CloudWatch returns it.
    now : datetime
        End of the window (UTC).

    Returns
    -------
    Alarm
        The alarm, its window ``max(60, Period x EvaluationPeriods)`` seconds; its
        metrics named by :func:`~dynashard.planning.scaling.metric_label` (another
        namespace than ``AWS/DynamoDB`` is kept in the name) and
        :func:`~dynashard.planning.scaling.expression_label`.
    """
    dimensions = {
        str(d["Name"]): str(d["Value"]) for d in description.get("Dimensions") or [] if "Name" in d
    }
    metric_names = (
        [metric_label(description.get("Namespace"), str(description["MetricName"]))]
        if description.get("MetricName")
        else []
    )
    period = int(description.get("Period") or MIN_WINDOW_S)
    for query in description.get("Metrics") or []:  # metric-math alarms
        if label := expression_label(query.get("Expression")):
            metric_names.append(label)
        stat = query.get("MetricStat") or {}
        metric = stat.get("Metric") or {}
        if metric.get("MetricName"):
            metric_names.append(metric_label(metric.get("Namespace"), str(metric["MetricName"])))
        for dim in metric.get("Dimensions") or []:
            dimensions[str(dim.get("Name"))] = str(dim.get("Value"))
        period = max(period, int(stat.get("Period") or MIN_WINDOW_S))
    evaluations = int(description.get("EvaluationPeriods") or 1)
    return Alarm(
        name=str(description.get("AlarmName", "")),
        state=str(description.get("StateValue", "")),
        timestamp=now,
        window_s=max(MIN_WINDOW_S, period * evaluations),
        metric_names=tuple(metric_names),
        table_name=dimensions.get(DIM_TABLE_NAME),
        index_name=dimensions.get(DIM_INDEX_NAME),
    )


class CloudWatchAlarmStates:
    """:class:`~dynashard.planning.scaling.AlarmStateSource` over CloudWatch ``DescribeAlarms``.

    Parameters
    ----------
    client : CloudWatchClient, optional
        boto3 CloudWatch client; created on first use if None, from the process's one
        session (:func:`~dynashard.dynamodb.raw_items.raw_items_session`).
    """

    def __init__(self, client: CloudWatchClient | None = None) -> None:
        self._client = client

    @property
    def client(self) -> CloudWatchClient:
        """CloudWatchClient: The CloudWatch client, created on first use."""
        if self._client is None:
            from dynashard.dynamodb.raw_items import raw_items_session

            self._client = raw_items_session().client("cloudwatch")
        return self._client

    def alarms_in_alarm(self, names: Sequence[str], now: datetime) -> list[Alarm]:
        """Return the alarms among ``names`` in ``ALARM`` (``DescribeAlarms``, paginated).

        Parameters
        ----------
        names : sequence of str
            Alarm names, any number (asked 100 at a time).
        now : datetime
            End of each alarm's window (UTC).

        Returns
        -------
        list of Alarm
            The metric alarms in ``ALARM``, in the order CloudWatch lists them.

        Raises
        ------
        botocore.exceptions.ClientError
            If CloudWatch refuses (e.g. missing ``cloudwatch:DescribeAlarms``).
        """
        found: list[Alarm] = []
        paginator = self.client.get_paginator("describe_alarms")
        for start in range(0, len(names), DESCRIBE_ALARMS_MAX_NAMES):
            chunk = list(names[start : start + DESCRIBE_ALARMS_MAX_NAMES])
            for page in paginator.paginate(
                AlarmNames=chunk, StateValue="ALARM", AlarmTypes=["MetricAlarm"]
            ):
                found.extend(
                    alarm_from_description(dict(d), now) for d in page.get("MetricAlarms", [])
                )
        return found
