"""CloudWatch Logs and Contributor Insights, emulated for the functions' own log lines.

On AWS the ingest functions' JSON log lines go to their log groups, and a Contributor
Insights rule (:func:`dynashard.core.load.write_load_rule_body`) ranks logical keys by the
write units they were offered; the scaler reads its report. Here
:class:`LocalInsightRule` evaluates the same rule body on the same lines: a
:class:`LogTap` formats each record of the functions' Powertools logger with the
logger's own formatter (the line Lambda would ship) and hands it to the rule, stamped
with the sandbox clock (emulated time when the act runs faster than real time).

Rule syntax supported (CloudWatch User Guide, "Contributor Insights rule syntax"):
``LogFormat`` ``JSON``; ``Contribution.Keys`` (1 to 4 JSON paths), ``ValueOf`` (a JSON
path; without it each matching line counts 1), ``Filters`` with ``Match`` and ``In``
(the field's value is one of the strings) or ``EqualTo`` (the field is that number);
``AggregateOn`` ``Sum`` or ``Count``. Anything else raises ``ValueError``.

The rule answers both of the scaler's load ports: :meth:`LocalInsightRule.offered_wcu`
(one window, for growth) and :meth:`LocalInsightRule.peak_offered_wcu` (each key's
busiest period of a window, for the shrink sweep), as
:class:`dynashard.cloudwatch.insights.InsightRuleOfferedLoad` reads them on AWS. A
stack that splits the write-load rule into parts of the key space has one rule per
part; :class:`LocalWriteLoadRules` reads them together, as that adapter reads the parts'
reports (each part's own top N, joined by
:meth:`dynashard.planning.shrinking.LoadHistory.from_parts`).
"""

from __future__ import annotations

import bisect
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from dynashard.core.load import MAX_CONTRIBUTORS
from dynashard.planning.shrinking import LoadHistory

#: The filter operators emulated; ``In`` takes strings, ``EqualTo`` one number.
_FILTER_OPS = ("In", "EqualTo")


def _path(expression: str) -> list[str]:
    if not expression.startswith("$."):
        raise ValueError(f"JSON path {expression!r} must start with '$.'")
    return expression[2:].split(".")


def _lookup(document: Any, path: Sequence[str]) -> Any:
    for part in path:
        if not isinstance(document, Mapping) or part not in document:
            return None
        document = document[part]
    return document


class LocalInsightRule:
    """A Contributor Insights rule evaluated on log lines fed to it.

    Parameters
    ----------
    body : str or mapping
        The rule body (JSON text or its dict), as the stack deploys it.
    clock : callable
        ``() -> epoch seconds``: the time a line is stamped with when it arrives
        (CloudWatch uses the log event's timestamp; here the sandbox clock).

    Raises
    ------
    ValueError
        If the body uses syntax this emulation does not support.

    Attributes
    ----------
    started : float
        The clock when the rule was created, epoch seconds: it has seen no line before.
    """

    def __init__(self, body: str | Mapping[str, Any], clock: Callable[[], float] = time.time):
        rule = json.loads(body) if isinstance(body, str) else dict(body)
        if rule.get("LogFormat") != "JSON":
            raise ValueError(f"LogFormat {rule.get('LogFormat')!r}: only JSON is emulated")
        contribution = rule.get("Contribution") or {}
        keys = contribution.get("Keys") or []
        if not 1 <= len(keys) <= 4:
            raise ValueError(f"Contribution.Keys must name 1 to 4 fields, got {keys!r}")
        self.aggregate_on = rule.get("AggregateOn", "Sum")
        if self.aggregate_on not in ("Sum", "Count"):
            raise ValueError(f"AggregateOn {self.aggregate_on!r}: Sum or Count")
        self.log_group_names = list(rule.get("LogGroupNames") or [])
        self._keys = [_path(k) for k in keys]
        value_of = contribution.get("ValueOf")
        self._value = _path(value_of) if value_of else None
        self._filters: list[tuple[list[str], str, Any]] = []
        for spec in contribution.get("Filters") or []:
            ops = set(spec) - {"Match"}
            if "Match" not in spec or len(ops) != 1 or not ops <= set(_FILTER_OPS):
                raise ValueError(f"filter {spec!r}: only Match with In or EqualTo is emulated")
            (op,) = ops
            operand = spec[op]
            if op == "In":
                operand = list(operand)
            elif isinstance(operand, bool) or not isinstance(operand, int | float):
                raise ValueError(f"filter {spec!r}: EqualTo takes one number")
            self._filters.append((_path(spec["Match"]), op, operand))
        self.clock = clock
        self.started = clock()
        self._times: list[float] = []
        self._rows: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        self.lines_seen = 0
        self.lines_matched = 0

    def put(self, line: str, timestamp: float | None = None) -> bool:
        """Offer one log line to the rule.

        Parameters
        ----------
        line : str
            The log line; lines that are not JSON objects never match, as in CloudWatch.
        timestamp : float, optional
            Epoch seconds; default the rule's clock.

        Returns
        -------
        bool
            Whether the line matched the rule's filters and contributed.
        """
        stamp = self.clock() if timestamp is None else timestamp
        try:
            document = json.loads(line)
        except ValueError:
            document = None
        with self._lock:
            self.lines_seen += 1
        if not isinstance(document, Mapping):
            return False
        contribution = self.contribution(document)
        if contribution is None:
            return False
        key, value = contribution
        with self._lock:
            index = bisect.bisect_right(self._times, stamp)
            self._times.insert(index, stamp)
            self._rows.insert(index, (key, value))
            self.lines_matched += 1
        return True

    def contribution(self, document: Mapping[str, Any]) -> tuple[str, float] | None:
        """Return what one JSON log event contributes: its contributor key and value.

        Parameters
        ----------
        document : mapping
            The log event, parsed.

        Returns
        -------
        tuple of (str, float) or None
            The contributor (its keys' values joined with ``|``) and the value added
            (1 for ``Count``); None when a filter does not match or a field is missing.
        """
        for path, op, operand in self._filters:
            found = _lookup(document, path)
            if op == "In" and found not in operand:
                return None
            if op == "EqualTo" and (
                isinstance(found, bool) or not isinstance(found, int | float) or found != operand
            ):
                return None
        parts = [_lookup(document, path) for path in self._keys]
        if any(p is None for p in parts):
            return None
        if self._value is None or self.aggregate_on == "Count":
            value = 1.0
        else:
            raw = _lookup(document, self._value)
            if isinstance(raw, bool) or not isinstance(raw, int | float):
                return None
            value = float(raw)
        return "|".join(str(p) for p in parts), value

    def report(self, start: float, end: float, max_contributors: int = 100) -> dict[str, float]:
        """Return the top contributors between two instants, like ``GetInsightRuleReport``.

        Parameters
        ----------
        start, end : float
            Epoch seconds; lines stamped in ``[start, end)`` count.
        max_contributors : int
            Top-N (CloudWatch allows 1..100).

        Returns
        -------
        dict of str to float
            Contributor key -> aggregate value, largest first.
        """
        with self._lock:
            lo = bisect.bisect_left(self._times, start)
            hi = bisect.bisect_left(self._times, end)
            rows = self._rows[lo:hi]
        totals: dict[str, float] = {}
        for key, value in rows:
            totals[key] = totals.get(key, 0.0) + value
        top = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[: max(1, max_contributors)]
        return dict(top)

    def offered_wcu(self, start: datetime, end: datetime) -> dict[str, float]:
        """Answer the scaler's ``OfferedLoadSource`` port from this rule's report.

        Parameters
        ----------
        start, end : datetime
            The window (aware datetimes).

        Returns
        -------
        dict of str to float
            Logical key -> write units offered in the window.
        """
        return self.report(start.timestamp(), end.timestamp())

    def peak_offered_wcu(
        self,
        start: datetime,
        end: datetime,
        period_s: int,
        max_contributors: int = MAX_CONTRIBUTORS,
    ) -> LoadHistory:
        """Answer the shrink sweep's ``LoadHistorySource`` port: each key's busiest period.

        What :meth:`dynashard.cloudwatch.insights.InsightRuleOfferedLoad.peak_offered_wcu`
        asks of ``GetInsightRuleReport`` (``Period = period_s``, ``OrderBy`` ``Sum``):
        the top contributors by their sum over the window, each with one datapoint per
        period, periods aligned on multiples of the period since the epoch (as
        CloudWatch aggregates per clock minute) and cut at the window's ends.

        Parameters
        ----------
        start, end : datetime
            The window (aware datetimes); lines stamped in ``[start, end)`` count.
        period_s : int
            Seconds per datapoint, rounded up to a whole minute (at least 60).
        max_contributors : int
            Top-N (``GetInsightRuleReport`` allows 1..100, :data:`MAX_CONTRIBUTORS`).

        Returns
        -------
        LoadHistory
            Peak WCU/s per logical key (its busiest period's sum over the period);
            keys left out are bounded by the smallest reported window total, as
            :meth:`LoadHistory.from_report` reads a report. The periods in which any
            line counted stand for the report's datapoints (``MetricDatapoints`` with
            ``UniqueContributors`` above 0), so a window the rule did not watch whole,
            or in which it counted nothing, is no evidence here as on AWS
            (:func:`dynashard.planning.shrinking.report_gap`).
        """
        period = max(60, int(math.ceil(period_s / 60.0) * 60))
        lo_s, hi_s = start.timestamp(), end.timestamp()
        with self._lock:
            lo = bisect.bisect_left(self._times, lo_s)
            hi = bisect.bisect_left(self._times, hi_s)
            rows = list(zip(self._times[lo:hi], self._rows[lo:hi], strict=True))
        points: dict[str, dict[int, float]] = {}
        for stamp, (key, value) in rows:
            per_period = points.setdefault(key, {})
            bucket = int(stamp // period)
            per_period[bucket] = per_period.get(bucket, 0.0) + value
        totals = {key: sum(p.values()) for key, p in points.items()}
        top = sorted(totals, key=lambda k: (-totals[k], k))[: max(1, max_contributors)]
        contributors = {k: (totals[k], list(points[k].values())) for k in top}
        active = sorted(
            {bucket for per_period in points.values() for bucket, v in per_period.items() if v > 0}
        )
        return LoadHistory.from_report(
            start,
            end,
            period,
            contributors,
            [datetime.fromtimestamp(b * period, UTC) for b in active],
        )


class LocalWriteLoadRules:
    """The write-load rule's parts, read together as the scaler reads them on AWS.

    Each part's rule keeps its own lines; growth gets every part's top contributors
    (a key is in one part only), the shrink sweep every part's history joined with
    each part's own bound (:meth:`dynashard.planning.shrinking.LoadHistory.from_parts`),
    as :class:`dynashard.cloudwatch.insights.InsightRuleOfferedLoad` does.

    Parameters
    ----------
    rules : sequence of LocalInsightRule
        One per part, part 0 first (the order of the scaler's
        ``DYNASHARD_WRITE_LOAD_RULE``).

    Raises
    ------
    ValueError
        If ``rules`` is empty.
    """

    def __init__(self, rules: Sequence[LocalInsightRule]) -> None:
        if not rules:
            raise ValueError("no write-load rule")
        self.rules = list(rules)

    @property
    def started(self) -> float:
        """float: When the newest part's rule was created (none saw a line before)."""
        return max(rule.started for rule in self.rules)

    @property
    def lines_matched(self) -> int:
        """int: Lines counted, over every part (each line counts in one part at most)."""
        return sum(rule.lines_matched for rule in self.rules)

    def offered_wcu(self, start: datetime, end: datetime) -> dict[str, float]:
        """Answer ``OfferedLoadSource``: every part's top contributors of the window.

        Parameters
        ----------
        start, end : datetime
            The window (aware datetimes).

        Returns
        -------
        dict of str to float
            Logical key -> write units offered in the window.
        """
        totals: dict[str, float] = {}
        for rule in self.rules:
            for key, value in rule.offered_wcu(start, end).items():
                totals[key] = totals.get(key, 0.0) + value
        return totals

    def peak_offered_wcu(
        self,
        start: datetime,
        end: datetime,
        period_s: int,
        max_contributors: int = MAX_CONTRIBUTORS,
    ) -> LoadHistory:
        """Answer ``LoadHistorySource``: each part's history, joined.

        Parameters
        ----------
        start, end : datetime
            The window (aware datetimes).
        period_s : int
            Seconds per datapoint.
        max_contributors : int
            Top-N of each part's report.

        Returns
        -------
        LoadHistory
            Peaks of every part; a key a part left out is bounded by that part's.
        """
        return LoadHistory.from_parts(
            [r.peak_offered_wcu(start, end, period_s, max_contributors) for r in self.rules]
        )


class LogTap(logging.Filter):
    """A logger filter that hands every line of a Powertools logger to insight rules.

    Each record is formatted by the logger's Powertools handler's formatter, so the
    rules see the JSON line Lambda would ship to CloudWatch Logs. A filter, not a
    handler: Powertools takes a configured logger's first handler as its own, so a
    handler added before the function's first cold start would be taken for it.

    Parameters
    ----------
    logger_name : str
        The standard-library logger Powertools writes through (its service name,
        ``POWERTOOLS_SERVICE_NAME``).
    rules : sequence of LocalInsightRule
        Where the lines go.
    """

    def __init__(self, logger_name: str, rules: Sequence[LocalInsightRule]) -> None:
        super().__init__()
        self.logger_name = logger_name
        self.rules = list(rules)
        self.errors: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        """Format the record as its Powertools handler does and offer it to the rules.

        Parameters
        ----------
        record : logging.LogRecord
            The record.

        Returns
        -------
        bool
            Always True: the record goes on to the logger's handlers unchanged.
        """
        owner = logging.getLogger(self.logger_name)
        formatter = next((h.formatter for h in owner.handlers if h.formatter), None)
        try:
            line = formatter.format(record) if formatter is not None else record.getMessage()
        except Exception as exc:  # a tap must never fail the function; kept for the report
            self._error(exc)
            return True
        for rule in self.rules:
            try:
                rule.put(line)
            except Exception as exc:  # one rule's failure does not keep the line from others
                self._error(exc)
        return True

    def _error(self, exc: Exception) -> None:
        if len(self.errors) < 10:
            self.errors.append(f"log tap: {exc!r}")

    def __enter__(self) -> LogTap:
        logging.getLogger(self.logger_name).addFilter(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        logging.getLogger(self.logger_name).removeFilter(self)
