"""Contributor Insights adapters: which partition keys are hot, and the offered write load.

:class:`ContributorInsightsHotKeySource` implements
:class:`dynashard.planning.scaling.HotKeySource`: it reads the reports of the Contributor
Insights rules DynamoDB creates for a table or GSI
(DynamoDB Developer Guide, "CloudWatch contributor insights for DynamoDB: How it
works"):

- ``DynamoDBContributorInsights-PKT-{resource}-{creation timestamp}``: most throttled
  partition keys (both modes, ``THROTTLED_KEYS`` and ``ACCESSED_AND_THROTTLED_KEYS``);
- ``DynamoDBContributorInsights-PKC-{resource}-{creation timestamp}``: partition keys
  of the items that consume the most read and write capacity (only in
  ``ACCESSED_AND_THROTTLED_KEYS`` mode).

The names carry a timestamp, so the adapter asks DynamoDB for them
(``DescribeContributorInsights`` -> ``ContributorInsightsRuleList``) and then reads
each report with CloudWatch ``GetInsightRuleReport``. The local emulator brings its own
source implementing the same port (``sandbox.emulator.insights.EmulatorHotKeySource``).

:class:`InsightRuleOfferedLoad` implements :class:`dynashard.planning.scaling.OfferedLoadSource`
and, for the shrink sweep, :class:`dynashard.planning.shrinking.LoadHistorySource`.
The ingest functions log one line per logical key and invocation with the write units
they were offered (:mod:`dynashard.core.load`); the stack's Contributor Insights rule
(:func:`dynashard.core.load.write_load_rule_body`) ranks logical keys by their sum. The
adapter reads that rule's report for a window with ``GetInsightRuleReport``; the sandbox
evaluates the same rule on the same log lines (``sandbox.local_aws.logs.LocalInsightRule``).
A stack that splits the rule into parts of the key space (one rule per part,
``DYNASHARD_WRITE_LOAD_RULE`` naming them in part order) is read part by part: one
``GetInsightRuleReport`` per part and window, each part's top 100, joined with each
part's own bound on the keys it leaves out
(:meth:`dynashard.planning.shrinking.LoadHistory.from_parts`). For the shrink sweep the
report also asks for the rule's own time series (``Metrics``: ``UniqueContributors``,
returned as ``MetricDatapoints``), so that a report that names nobody, or whose
datapoints do not span the window, is taken as no evidence rather than as every key
idle (:func:`dynashard.planning.shrinking.report_gap`).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Final

from dynashard.core.load import MAX_CONTRIBUTORS
from dynashard.core.times import as_utc
from dynashard.planning.scaling import HotKey
from dynashard.planning.shrinking import LoadHistory

#: The rule's own statistics asked of ``GetInsightRuleReport`` for the shrink sweep: a
#: datapoint per period with how many contributors it counted
#: (``InsightRuleMetricDatapoint.UniqueContributors``), which shows the rule live.
HISTORY_METRICS: Final = ("UniqueContributors",)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient

#: Prefix of the Contributor Insights rules DynamoDB creates.
RULE_PREFIX = "DynamoDBContributorInsights"
_RULE_KIND = re.compile(rf"^{RULE_PREFIX}-(PKT|PKC|SKT|SKC)-")


def insight_rule_totals(
    client: CloudWatchClient,
    rule_name: str,
    start: datetime,
    end: datetime,
    max_contributors: int,
) -> dict[str, float]:
    """Read a Contributor Insights rule's top contributors over a window.

    Parameters
    ----------
    client : CloudWatchClient
        boto3 CloudWatch client.
    rule_name : str
        The rule.
    start, end : datetime
        The window (UTC); asked as one datapoint over it (a period of whole minutes).
    max_contributors : int
        Top-N (``GetInsightRuleReport`` allows 1..100).

    Returns
    -------
    dict of str to float
        First key of each contributor -> ``ApproximateAggregateValue`` over the window.

    Raises
    ------
    botocore.exceptions.ClientError
        If CloudWatch refuses (e.g. missing ``cloudwatch:GetInsightRuleReport``).
    """
    start, end = as_utc(start, "start"), as_utc(end, "end")  # naive means UTC
    window_s = max(60.0, (end - start).total_seconds())
    response = client.get_insight_rule_report(
        RuleName=rule_name,
        StartTime=start,
        EndTime=end,
        Period=int(math.ceil(window_s / 60.0) * 60),
        MaxContributorCount=max_contributors,
        OrderBy="Sum",
    )
    totals: dict[str, float] = {}
    for contributor in response.get("Contributors", []):
        keys = contributor.get("Keys") or []
        if keys:
            value = float(contributor.get("ApproximateAggregateValue", 0.0))
            totals[keys[0]] = totals.get(keys[0], 0.0) + value
    return totals


class ContributorInsightsHotKeySource:
    """:class:`~dynashard.planning.scaling.HotKeySource` over Contributor Insights for DynamoDB.

    Parameters
    ----------
    client : CloudWatchClient, optional
        boto3 CloudWatch client; created on first use if None, from the process's one
        session (:func:`~dynashard.dynamodb.raw_items.raw_items_session`).
    dynamodb_client : DynamoDBClient, optional
        boto3 DynamoDB client (for the rule names); created on first use if None, from
        the process's one session (:func:`~dynashard.dynamodb.raw_items.raw_items_session`).
    max_contributors : int
        Top-N contributors asked of each report (``GetInsightRuleReport`` allows 1..100;
        default the most, :data:`~dynashard.core.load.MAX_CONTRIBUTORS`). The reports
        name physical keys, so one key of many throttled shards takes many places: at
        fleet scale a report of 25 names a few such keys, and the keys that need a
        second shard wait minutes for a place (``docs/benchmarks.md``, fleet
        simulation). A report costs one call whatever its N.
    """

    def __init__(
        self,
        client: CloudWatchClient | None = None,
        dynamodb_client: DynamoDBClient | None = None,
        max_contributors: int = MAX_CONTRIBUTORS,
    ) -> None:
        self._client = client
        self._dynamodb = dynamodb_client
        self.max_contributors = max(1, min(MAX_CONTRIBUTORS, max_contributors))

    @property
    def client(self) -> CloudWatchClient:
        """CloudWatchClient: The CloudWatch client, created on first use."""
        if self._client is None:
            from dynashard.dynamodb.raw_items import raw_items_session

            self._client = raw_items_session().client("cloudwatch")
        return self._client

    @property
    def dynamodb_client(self) -> DynamoDBClient:
        """DynamoDBClient: The DynamoDB client, created on first use."""
        if self._dynamodb is None:
            from dynashard.dynamodb.raw_items import raw_items_session

            self._dynamodb = raw_items_session().client("dynamodb")
        return self._dynamodb

    def rule_names(self, table_name: str, index_name: str | None) -> dict[str, str]:
        """Look up the Contributor Insights rules DynamoDB created for a table or GSI.

        Parameters
        ----------
        table_name : str
            Table name.
        index_name : str or None
            GSI name, or None for the base table.

        Returns
        -------
        dict of str to str
            Kind (``PKT``, ``PKC``, ``SKT``, ``SKC``) -> rule name; empty when
            Contributor Insights is not enabled.
        """
        request: dict[str, Any] = {"TableName": table_name}
        if index_name:
            request["IndexName"] = index_name
        response = self.dynamodb_client.describe_contributor_insights(**request)
        if response.get("ContributorInsightsStatus") not in (None, "ENABLED"):
            return {}
        rules: dict[str, str] = {}
        for name in response.get("ContributorInsightsRuleList", []):
            match = _RULE_KIND.match(name)
            if match:
                rules[match.group(1)] = name
        return rules

    def _report(self, rule_name: str, start: datetime, end: datetime) -> dict[str, float]:
        return insight_rule_totals(self.client, rule_name, start, end, self.max_contributors)

    def hot_keys(
        self, table_name: str, index_name: str | None, start: datetime, end: datetime
    ) -> list[HotKey]:
        """Return the throttled and most-consuming partition keys in the window.

        Parameters
        ----------
        table_name : str
            Table name.
        index_name : str or None
            GSI name, or None for the base table.
        start, end : datetime
            The window (UTC).

        Returns
        -------
        list of HotKey
            Most throttled first, then most consuming. ``consumed_units_per_s`` is the
            PKC report's sum (read and write capacity units) over the window's seconds;
            0 in ``THROTTLED_KEYS`` mode, which has no PKC rule.

        Raises
        ------
        botocore.exceptions.ClientError
            If DynamoDB or CloudWatch refuse (e.g. missing ``cloudwatch:GetInsightRuleReport``).
        """
        start, end = as_utc(start, "start"), as_utc(end, "end")  # naive means UTC
        rules = self.rule_names(table_name, index_name)
        window_s = max(1.0, (end - start).total_seconds())
        throttled = self._report(rules["PKT"], start, end) if "PKT" in rules else {}
        consumed = self._report(rules["PKC"], start, end) if "PKC" in rules else {}
        return rank_hot_keys(throttled, consumed, window_s)


def rank_hot_keys(
    throttled: Mapping[str, float], consumed: Mapping[str, float], window_s: float
) -> list[HotKey]:
    """Join a PKT and a PKC report into :class:`HotKey` rows, most throttled first.

    Parameters
    ----------
    throttled : mapping of str to float
        Partition key -> throttle events in the window (the PKT report).
    consumed : mapping of str to float
        Partition key -> capacity units consumed in the window (the PKC report; empty
        in ``THROTTLED_KEYS`` mode).
    window_s : float
        The window's length in seconds (> 0).

    Returns
    -------
    list of HotKey
        One row per key of either report: most throttled first, then most consuming,
        then by key; ``consumed_units_per_s`` is the consumed units over ``window_s``.
    """
    hot = [
        HotKey(
            key=key,
            consumed_units_per_s=consumed.get(key, 0.0) / window_s,
            throttled_events=round(throttled.get(key, 0.0)),
        )
        for key in set(throttled) | set(consumed)
    ]
    hot.sort(key=lambda h: (-h.throttled_events, -h.consumed_units_per_s, h.key))
    return hot


class InsightRuleOfferedLoad:
    """:class:`~dynashard.planning.scaling.OfferedLoadSource` over the stack's Insights rule.

    Parameters
    ----------
    rule_name : str or sequence of str
        The rule (``DYNASHARD_WRITE_LOAD_RULE``), or the rules of the parts of the key
        space, part 0 first (:func:`dynashard.core.load.write_load_rules`; part ``i``'s
        rule counts the keys whose :func:`~dynashard.core.load.write_load_part` is
        ``i``). Every read asks each rule once: ``GetInsightRuleReport``'s quota is 20
        calls per second per Region (CloudWatch User Guide, "CloudWatch service
        quotas"), and the calls go one after another.
    client : CloudWatchClient, optional
        boto3 CloudWatch client; created on first use if None, from the process's one
        session (:func:`~dynashard.dynamodb.raw_items.raw_items_session`).
    max_contributors : int
        Top-N keys asked of each report (``GetInsightRuleReport`` allows 1..100).

    Raises
    ------
    ValueError
        If no rule is named.
    """

    def __init__(
        self,
        rule_name: str | Sequence[str],
        client: CloudWatchClient | None = None,
        max_contributors: int = MAX_CONTRIBUTORS,
    ) -> None:
        names = (rule_name,) if isinstance(rule_name, str) else tuple(rule_name)
        if not names or not all(names):
            raise ValueError(f"name the write-load rule or its parts, got {rule_name!r}")
        self.rule_names: tuple[str, ...] = names
        self._client = client
        self.max_contributors = max(1, min(MAX_CONTRIBUTORS, max_contributors))

    @property
    def rule_name(self) -> str:
        """str: The rule, or part 0's rule."""
        return self.rule_names[0]

    @property
    def client(self) -> CloudWatchClient:
        """CloudWatchClient: The CloudWatch client, created on first use."""
        if self._client is None:
            from dynashard.dynamodb.raw_items import raw_items_session

            self._client = raw_items_session().client("cloudwatch")
        return self._client

    def offered_wcu(self, start: datetime, end: datetime) -> dict[str, float]:
        """Return the rule's sum of offered WCU per logical key over the window.

        Parameters
        ----------
        start, end : datetime
            The window (UTC); the report asks for one datapoint over it (a period of
            whole minutes, as Contributor Insights aggregates).

        Returns
        -------
        dict of str to float
            Logical key -> ``ApproximateAggregateValue`` (WCU offered in the window):
            each part's top contributors (a key is in one part only).

        Raises
        ------
        botocore.exceptions.ClientError
            If CloudWatch refuses (e.g. missing ``cloudwatch:GetInsightRuleReport``, or
            ``ResourceNotFoundException`` for a rule that does not exist).
        """
        totals: dict[str, float] = {}
        for rule in self.rule_names:
            part = insight_rule_totals(self.client, rule, start, end, self.max_contributors)
            for key, value in part.items():
                totals[key] = totals.get(key, 0.0) + value
        return totals

    def peak_offered_wcu(self, start: datetime, end: datetime, period_s: int) -> LoadHistory:
        """Return each key's busiest period of offered WCU over the window (the shrink sweep).

        One ``GetInsightRuleReport`` per rule with ``Period = period_s``: the top
        contributors by their sum over the window, each with one datapoint per period,
        and the rule's own datapoints (:data:`HISTORY_METRICS`).

        Parameters
        ----------
        start, end : datetime
            The window (UTC), e.g. the last 30 minutes.
        period_s : int
            Seconds per datapoint, a multiple of 60 (Contributor Insights aggregates per
            minute at best).

        Returns
        -------
        LoadHistory
            Peak WCU/s per logical key; keys missing from a report are bounded by the
            smallest total it reported (the top-N's floor), each by its own part's
            report (:attr:`LoadHistory.part_bounds`). A report that names no
            contributor, or whose datapoints with a count (a contributor's above 0, the
            rule's with ``UniqueContributors`` above 0) do not span the window, is no
            evidence (:attr:`LoadHistory.gaps`): no peak, no bound.

        Raises
        ------
        botocore.exceptions.ClientError
            If CloudWatch refuses (e.g. missing ``cloudwatch:GetInsightRuleReport``).
        """
        start, end = as_utc(start, "start"), as_utc(end, "end")  # naive means UTC
        period = max(60, int(math.ceil(period_s / 60.0) * 60))
        return LoadHistory.from_parts(
            [self._history(rule, start, end, period) for rule in self.rule_names]
        )

    def _history(self, rule: str, start: datetime, end: datetime, period: int) -> LoadHistory:
        response = self.client.get_insight_rule_report(
            RuleName=rule,
            StartTime=start,
            EndTime=end,
            Period=period,
            MaxContributorCount=self.max_contributors,
            OrderBy="Sum",
            Metrics=list(HISTORY_METRICS),
        )
        contributors: dict[str, tuple[float, list[float]]] = {}
        active: set[datetime] = set()
        for contributor in response.get("Contributors", []):
            keys = contributor.get("Keys") or []
            if keys:
                datapoints = contributor.get("Datapoints", [])
                points = [float(d["ApproximateValue"]) for d in datapoints]
                total = float(contributor.get("ApproximateAggregateValue", 0.0))
                contributors[keys[0]] = (total, points)
                active.update(
                    as_utc(d["Timestamp"], "Timestamp")
                    for d in datapoints
                    if float(d["ApproximateValue"]) > 0
                )
        for point in response.get("MetricDatapoints", []):
            if float(point.get("UniqueContributors", 0.0)) > 0:
                active.add(as_utc(point["Timestamp"], "Timestamp"))
        return LoadHistory.from_report(start, end, period, contributors, sorted(active), rule=rule)
