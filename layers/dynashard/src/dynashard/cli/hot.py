"""``dynashard hot``: the hottest partition keys, mapped to logical keys and planned.

Against AWS the rows come from Contributor Insights for DynamoDB, through the scaler's
own adapter (:class:`~dynashard.cloudwatch.insights.ContributorInsightsHotKeySource`).
Against the sandbox they come from the partition emulator's admin route
``GET /_emulator/contributors``, which reports the same PKT / PKC views; both are
ranked by :func:`~dynashard.cloudwatch.insights.rank_hot_keys`, and planned as the scaler
plans them (:mod:`dynashard.planning.shards`).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from dynashard import defaults, names
from dynashard.cli.context import env_default
from dynashard.cloudwatch.insights import (
    ContributorInsightsHotKeySource,
    insight_rule_totals,
    rank_hot_keys,
)
from dynashard.errors import DynashardError
from dynashard.planning.shards import (
    attempts_per_request,
    loads_by_logical_key,
    owns_shard,
    partition_group,
    plan_shard_count,
)

if TYPE_CHECKING:
    from dynashard.cli.context import Options
    from dynashard.planning.scaling import HotKey


class EmulatorUnavailableError(DynashardError):
    """The partition emulator's admin route did not answer."""

    default_message = "the partition emulator did not answer"


def emulator_hot_keys(
    endpoint_url: str,
    table: str,
    index: str | None,
    minutes: float,
    top: int,
    read: bool,
) -> list[HotKey]:
    """Read the emulator's Contributor-Insights views over HTTP and rank them.

    Parameters
    ----------
    endpoint_url : str
        The emulator's endpoint (the one boto3 talks to).
    table : str
        Table name.
    index : str or None
        GSI name.
    minutes : float
        Window, minutes back from now.
    top : int
        Rows per view.
    read : bool
        Read capacity (RCU) instead of write.

    Returns
    -------
    list of HotKey
        Most throttled first, then most consuming.

    Raises
    ------
    EmulatorUnavailableError
        If the endpoint is not the partition emulator (DynamoDB Local has no admin
        route) or does not answer.
    """
    query = {
        "table": table,
        "minutes": f"{minutes:g}",
        "n": str(top),
        "operation": "Read" if read else "Write",
        "mode": "ACCESSED_AND_THROTTLED_KEYS",
    }
    if index:
        query["index"] = index
    url = f"{endpoint_url.rstrip('/')}/_emulator/contributors?{urllib.parse.urlencode(query)}"
    if urllib.parse.urlsplit(url).scheme not in {"http", "https"}:
        raise EmulatorUnavailableError(f"{endpoint_url!r} is not an http(s) endpoint URL")
    try:
        # B310: the scheme is checked just above (http or https only, no file:).
        with urllib.request.urlopen(url, timeout=10) as response:  # nosec B310
            body = json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise EmulatorUnavailableError(
            f"{url} did not answer as the partition emulator ({exc}); is --endpoint-url the "
            "emulator (the sandbox started with --emulator), not DynamoDB Local?"
        ) from exc
    throttled = {r["key"]: float(r["throttled_events"]) for r in body.get("most_throttled", [])}
    consumed = {r["key"]: float(r["consumed_units"]) for r in body.get("most_accessed", [])}
    return rank_hot_keys(throttled, consumed, minutes * 60.0)


def hot_report(
    opts: Options,
    *,
    minutes: float,
    index: str | None,
    top: int,
    emulator: bool,
    read: bool,
    gsi_name: str | None = None,
) -> dict[str, Any] | None:
    """Build the report of ``dynashard hot``.

    Parameters
    ----------
    opts : Options
        Global options (clients, tables).
    minutes : float
        Window, minutes.
    index : str or None
        GSI name, or None for the base table.
    top : int
        Contributors per report.
    emulator : bool
        Ask the partition emulator at ``opts.endpoint_url`` instead of CloudWatch.
    read : bool
        Read capacity instead of write.
    gsi_name : str, optional
        The data table's time-bucket GSI, whose partition keys ``{logical}#{bucket}#{shard}``
        map back to logical keys when ``index`` names it; default ``DYNASHARD_GSI_NAME``
        (the functions' schema setting), else ``GSI1``. Keys of another index are
        unmapped (:func:`~dynashard.planning.shards.partition_group`).

    Returns
    -------
    dict or None
        ``source``, ``resource``, ``operation``, ``physical_keys`` (as reported),
        ``logical_keys`` (throttled events, consumed units/s, the shard count in force
        and the planner's count for each) and ``unmapped``; None when Contributor
        Insights is not enabled on the table (or index).

    Raises
    ------
    EmulatorUnavailableError
        If ``emulator`` and the endpoint is not the emulator.
    botocore.exceptions.ClientError
        If DynamoDB or CloudWatch refuse.
    """
    end = datetime.now(UTC)
    start = end - timedelta(minutes=minutes)
    if emulator:
        if not opts.endpoint_url:
            raise EmulatorUnavailableError("--source emulator needs --endpoint-url")
        hot = emulator_hot_keys(opts.endpoint_url, opts.data_table, index, minutes, top, read)
        source_name = f"partition emulator {opts.endpoint_url}"
    else:
        adapter = ContributorInsightsHotKeySource(
            client=opts.cloudwatch(), dynamodb_client=opts.dynamodb(), max_contributors=top
        )
        rules = adapter.rule_names(opts.data_table, index)
        if not rules:
            return None
        reports = {
            kind: insight_rule_totals(adapter.client, rules[kind], start, end, top)
            for kind in ("PKT", "PKC")
            if kind in rules
        }
        hot = rank_hot_keys(reports.get("PKT", {}), reports.get("PKC", {}), minutes * 60.0)
        source_name = "Contributor Insights"
    kind: Literal["write", "read"] = "read" if read else "write"
    limit = env_default(defaults.PARTITION_RCU if read else defaults.PARTITION_WCU)
    utilization = env_default(defaults.TARGET_UTILIZATION)
    write_attempts = int(env_default(defaults.WRITE_MAX_ATTEMPTS))
    if gsi_name is None:
        # As FunctionSettings reads it: an empty value means the table has no GSI.
        gsi_name = os.environ.get(names.ENV_GSI_NAME, names.GSI1_NAME).strip() or None
    ds = opts.facade()
    rows: list[dict[str, Any]] = []
    try:
        # The metadata, not the format, says whose a reported key is (SENSOR#42 is not
        # SENSOR's unless SENSOR has had 43 shards).
        loads, unmapped = loads_by_logical_key(
            hot,
            index_name=index,
            owns=lambda key, shard: owns_shard(ds.shard_info(key), shard),
            gsi_name=gsi_name,
        )
        logical_of = {
            h.key: parts[0]
            for h in hot
            if h.key not in unmapped and (parts := partition_group(h.key, index, gsi_name))
        }
        for logical, groups in loads.items():
            info = ds.shard_info(logical)
            attempts = attempts_per_request(logical, kind, write_attempts)
            planned = max(
                plan_shard_count(
                    info.number_of_shards,
                    g.demand_units_per_s(limit, minutes * 60.0, attempts),
                    limit,
                    utilization,
                    ds.config.max_shards,
                )
                for g in groups
            )
            rows.append(
                {
                    "key": logical,
                    "throttled_events": sum(g.throttled_events for g in groups),
                    "consumed_units_per_s": round(sum(g.consumed_units_per_s for g in groups), 3),
                    "shards": info.number_of_shards,
                    "planned_shards": planned,
                    "physical_keys": [h.key for h in hot if logical_of.get(h.key) == logical],
                }
            )
    finally:
        ds.close()
    rows.sort(key=lambda r: (-r["throttled_events"], -r["consumed_units_per_s"], r["key"]))
    return {
        "source": source_name,
        "resource": opts.data_table + (f"/index/{index}" if index else ""),
        "operation": kind,
        "window": {"start": start.isoformat(), "end": end.isoformat()},
        "partition_limit_units_per_s": limit,
        "target_utilization": utilization,
        "physical_keys": [
            {
                "key": h.key,
                "throttled_events": h.throttled_events,
                "consumed_units_per_s": round(h.consumed_units_per_s, 3),
            }
            for h in hot
        ],
        "logical_keys": rows,
        "unmapped": unmapped,
    }
