"""Where the scaler learns the write load each logical key was offered: a port and its adapter.

The ingest functions log one line per logical key and invocation with the write units
they were offered (:mod:`dynashard.load`); the stack's Contributor Insights rule
(:func:`dynashard.load.write_load_rule_body`) ranks logical keys by their sum.
:class:`InsightRuleOfferedLoad` reads that rule's report for a window with CloudWatch
``GetInsightRuleReport``; the sandbox evaluates the same rule on the same log lines
(:class:`sandbox.logs.LocalInsightRule`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from dynashard.load import MAX_CONTRIBUTORS

try:  # package import (tests, sandbox): functions.scaler.offered_load
    from .hot_keys import insight_rule_totals
except ImportError:  # Lambda asset root: a top-level module next to its siblings
    from hot_keys import insight_rule_totals  # type: ignore[no-redef]

if TYPE_CHECKING:
    from datetime import datetime

    from mypy_boto3_cloudwatch import CloudWatchClient


class OfferedLoadSource(Protocol):
    """A port that tells how many write units each logical key was offered in a window."""

    def offered_wcu(self, start: datetime, end: datetime) -> dict[str, float]:
        """Return the write units offered per logical key between ``start`` and ``end``.

        Parameters
        ----------
        start, end : datetime
            The window (UTC).

        Returns
        -------
        dict of str to float
            Logical key -> write capacity units offered in the window (first deliveries),
            for the busiest keys; a key missing was offered nothing the source saw.
        """
        ...


class InsightRuleOfferedLoad:
    """:class:`OfferedLoadSource` over the stack's Contributor Insights rule.

    Parameters
    ----------
    rule_name : str
        The rule (``DYNASHARD_WRITE_LOAD_RULE``).
    client : CloudWatchClient, optional
        boto3 CloudWatch client; created on first use if None.
    max_contributors : int
        Top-N keys asked of the report (``GetInsightRuleReport`` allows 1..100).
    """

    def __init__(
        self,
        rule_name: str,
        client: CloudWatchClient | None = None,
        max_contributors: int = MAX_CONTRIBUTORS,
    ) -> None:
        self.rule_name = rule_name
        self._client = client
        self.max_contributors = max(1, min(MAX_CONTRIBUTORS, max_contributors))

    @property
    def client(self) -> CloudWatchClient:
        """CloudWatchClient: The CloudWatch client, created on first use."""
        if self._client is None:
            import boto3

            self._client = boto3.client("cloudwatch")
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
            Logical key -> ``ApproximateAggregateValue`` (WCU offered in the window).

        Raises
        ------
        botocore.exceptions.ClientError
            If CloudWatch refuses (e.g. missing ``cloudwatch:GetInsightRuleReport``, or
            ``ResourceNotFoundException`` for a rule that does not exist).
        """
        return insight_rule_totals(self.client, self.rule_name, start, end, self.max_contributors)
