"""Where the scaler learns which partition keys are hot: a port and its CloudWatch adapter.

:class:`HotKeySource` is the port; :class:`ContributorInsightsHotKeySource` reads the
reports of the Contributor Insights rules DynamoDB creates for a table or GSI
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
source implementing the same port.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from datetime import datetime

    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient

#: Prefix of the Contributor Insights rules DynamoDB creates.
RULE_PREFIX = "DynamoDBContributorInsights"
_RULE_KIND = re.compile(rf"^{RULE_PREFIX}-(PKT|PKC|SKT|SKC)-")


@dataclass(frozen=True)
class HotKey:
    """One partition key value that was hot in a time window.

    Attributes
    ----------
    key : str
        The partition key value as stored: a physical key ``{logical}#{shard}`` of the
        data table, or a logical key.
    consumed_units_per_s : float
        Capacity it consumed, units per second averaged over the window (0 when the
        source only sees throttling).
    throttled_events : int
        Requests on it that were throttled in the window.
    """

    key: str
    consumed_units_per_s: float
    throttled_events: int


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


class HotKeySource(Protocol):
    """A port that names the hottest partition keys of a table or GSI in a window."""

    def hot_keys(
        self, table_name: str, index_name: str | None, start: datetime, end: datetime
    ) -> list[HotKey]:
        """Return the hot partition keys between ``start`` and ``end``.

        Parameters
        ----------
        table_name : str
            DynamoDB table name.
        index_name : str or None
            GSI name, or None for the base table.
        start, end : datetime
            The window (UTC).

        Returns
        -------
        list of HotKey
            Hottest first; empty when nothing was throttled or accessed.
        """
        ...


class ContributorInsightsHotKeySource:
    """:class:`HotKeySource` over CloudWatch Contributor Insights for DynamoDB.

    Parameters
    ----------
    client : CloudWatchClient, optional
        boto3 CloudWatch client; created on first use if None.
    dynamodb_client : DynamoDBClient, optional
        boto3 DynamoDB client (for the rule names); created on first use if None.
    max_contributors : int
        Top-N contributors asked of each report (GetInsightRuleReport allows 1..100).
    """

    def __init__(
        self,
        client: CloudWatchClient | None = None,
        dynamodb_client: DynamoDBClient | None = None,
        max_contributors: int = 25,
    ) -> None:
        self._client = client
        self._dynamodb = dynamodb_client
        self.max_contributors = max(1, min(100, max_contributors))

    @property
    def client(self) -> CloudWatchClient:
        """CloudWatchClient: The CloudWatch client, created on first use."""
        if self._client is None:
            import boto3

            self._client = boto3.client("cloudwatch")
        return self._client

    @property
    def dynamodb_client(self) -> DynamoDBClient:
        """DynamoDBClient: The DynamoDB client, created on first use."""
        if self._dynamodb is None:
            import boto3

            self._dynamodb = boto3.client("dynamodb")
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
        rules = self.rule_names(table_name, index_name)
        window_s = max(1.0, (end - start).total_seconds())
        throttled = self._report(rules["PKT"], start, end) if "PKT" in rules else {}
        consumed = self._report(rules["PKC"], start, end) if "PKC" in rules else {}
        keys = set(throttled) | set(consumed)
        hot = [
            HotKey(
                key=key,
                consumed_units_per_s=consumed.get(key, 0.0) / window_s,
                throttled_events=round(throttled.get(key, 0.0)),
            )
            for key in keys
        ]
        hot.sort(key=lambda h: (-h.throttled_events, -h.consumed_units_per_s, h.key))
        return hot
