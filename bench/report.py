"""One report of every benchmark: ``bench/REPORT.md`` from ``bench/results/*.json``.

Run with ``python -m bench.report`` (``make bench`` runs every benchmark and then this;
``make bench-report`` only this). It runs nothing: it reads the JSON each benchmark
wrote (``hot_key``, ``reads``, ``parser``, ``ingest``, ``cold_start``, ``memory``,
``emulator_overhead``) and writes one Markdown file with

- a header: when and on what machine (CPUs, Python, platform) each benchmark ran, its
  load averages at start and end, its wall time and the sum of them;
- a summary table: every target of every benchmark, met or missed and by how much;
- one section per benchmark: one table whose figures are ratios against that
  benchmark's own baseline measured in the same run (the baseline of each is named
  in the section), a line per target, and the benchmark's chart beside it where a PNG
  exists (a relative link);
- the demo (``make demo``), when ``--demo PATH`` names its ``demo-report.json`` (which
  is not committed): the run's ``elapsed_s`` against the 600 s target and each act's.

A benchmark whose JSON is missing -- or, with ``--since``, older than the given time
(a stale result of an earlier run) -- gets a section saying "not run"; with
``--require-all`` :func:`main` then exits 1. Only names, numbers and relative links
reach the report: never a path of the machine it was generated on.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sandbox.lifecycle import exit_on_sigterm

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
REPORT = ROOT / "REPORT.md"
#: The demo's target (issue 17): ``make demo`` in under ten minutes, seconds.
DEMO_TARGET_S = 600.0
#: The key :func:`load` puts in place of a result file it could not parse: the reason.
UNREADABLE = "_unreadable"


@dataclass(frozen=True)
class Target:
    """One target of one benchmark, as the summary and the sections show it.

    Attributes
    ----------
    benchmark : str
        The benchmark's name (its JSON's stem).
    name : str
        The target's name (the key in the JSON's ``targets``, or one given here).
    target : str
        The bound, as written (``"<= 1.3"``, ``">= 0.98"``, ``"1 <= x <= 1.5"``).
    measured : str
        The measured figure, as written.
    met : bool
        Whether the benchmark judged it met.
    margin : str
        For a missed target, by how much (``"50 % over the bound"``); ``""`` when met.
    reason : str
        For a missed target, why, from the figures of the same run; ``""`` when met or
        when the benchmark gives none.
    """

    benchmark: str
    name: str
    target: str
    measured: str
    met: bool
    margin: str
    reason: str = ""


def fmt(value: Any, digits: int = 2) -> str:
    """Format a figure for a table: numbers rounded, ``None`` as "not measured"."""
    if value is None:
        return "not measured"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != 0 and abs(value) < 10 ** (-digits):
            return f"{value:.{digits}g}"
        return f"{value:,.{digits}f}"
    return str(value)


def ratio(numerator: Any, denominator: Any, digits: int = 2) -> str:
    """``numerator / denominator`` as ``"1.23x"``, or "not measured" if either is missing.

    Parameters
    ----------
    numerator, denominator : float or None
        Figures of the same unit from the same run.

    Returns
    -------
    str
        The ratio (dimensionless), or "not measured" when a figure is None or the
        denominator is zero.
    """
    if not isinstance(numerator, int | float) or not isinstance(denominator, int | float):
        return "not measured"
    if denominator == 0:
        return "not measured"
    return f"{numerator / denominator:.{digits}f}x"


_BOUND = re.compile(r"(<=|>=|==|<|>)\s*(-?\d+(?:\.\d+)?)")


def bounds(target: Any) -> tuple[float | None, float | None]:
    """The lower and upper bound a target states.

    Parameters
    ----------
    target : float or str
        A bare number is a maximum (the benchmarks' ratio targets: ``1.2`` means at most
        1.2 times the baseline); a string is read for ``>= X``, ``<= X``, ``== X`` and
        the form ``A <= x <= B``.

    Returns
    -------
    tuple of (float or None, float or None)
        ``(low, high)``; None where the target states no such bound.
    """
    if isinstance(target, bool):
        return None, None
    if isinstance(target, int | float):
        return None, float(target)
    text = str(target)
    between = re.match(r"\s*(-?\d+(?:\.\d+)?)\s*<=?\s*x\s*<=?\s*(-?\d+(?:\.\d+)?)", text)
    if between:
        return float(between.group(1)), float(between.group(2))
    low: float | None = None
    high: float | None = None
    for op, number in _BOUND.findall(text):
        value = float(number)
        if op in (">=", ">", "=="):
            low = value
        if op in ("<=", "<", "=="):
            high = value
    return low, high


def target_text(target: Any) -> str:
    """A target as the report writes it: a bare number is a maximum (``<= 1.2``)."""
    if isinstance(target, int | float) and not isinstance(target, bool):
        return f"<= {target:g}"
    return str(target)


def margin(target: Any, measured: Any, met: bool) -> str:
    """By how much a missed target is missed.

    Parameters
    ----------
    target : float or str
        The bound (see :func:`bounds`).
    measured : float or Any
        The figure; a non-number (a count of cells, a verdict) gets no margin.
    met : bool
        The benchmark's verdict; a met target gets ``""``.

    Returns
    -------
    str
        ``"0.645 over the bound of 1.3 (50 %)"`` or ``"... under ..."``; ``"missed"``
        when the distance cannot be computed from the figures.
    """
    if met:
        return ""
    low, high = bounds(target)
    if not isinstance(measured, int | float) or isinstance(measured, bool):
        return "missed"
    value = float(measured)
    if high is not None and value > high:
        pct = f" ({(value - high) / abs(high) * 100:.0f} %)" if high else ""
        return f"{value - high:.3g} over the bound of {high:g}{pct}"
    if low is not None and value < low:
        pct = f" ({(low - value) / abs(low) * 100:.0f} %)" if low else ""
        return f"{low - value:.3g} under the bound of {low:g}{pct}"
    return "missed"


def generic_targets(name: str, doc: dict[str, Any]) -> list[Target]:
    """The ``{"target", "measured", "met"}`` entries of a JSON's ``targets`` dict."""
    out = []
    for key, entry in (doc.get("targets") or {}).items():
        if not isinstance(entry, dict) or not {"target", "measured", "met"} <= entry.keys():
            continue
        met = bool(entry["met"])
        measured = entry["measured"]
        shown = f"{measured:.4g}" if isinstance(measured, float) else str(measured)
        if entry.get("handler"):
            shown += f" ({entry['handler']})"
        out.append(
            Target(
                name,
                key,
                target_text(entry["target"]),
                shown,
                met,
                margin(entry["target"], measured, met),
            )
        )
    return out


# --- per benchmark: a table (lines of Markdown) and its targets -------------------------
def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A Markdown table; cells already formatted (non-strings go through :func:`fmt`)."""
    cells = [[c if isinstance(c, str) else fmt(c) for c in row] for row in rows]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return lines


def hot_key_section(doc: dict[str, Any]) -> tuple[list[str], list[Target]]:
    """Hot key: goodput per mode and load factor, against naive (unsharded) and fixed.

    Baselines of the same run: ``naive`` (one shard, no sharding) and ``fixed`` (the
    shard count the load needs from the start) at the same load factor.
    """
    runs = doc.get("runs", [])
    by = {(r["load_factor"], r["mode"]): r for r in runs}
    rows = []
    for r in runs:
        k = r["load_factor"]
        naive = by.get((k, "naive"), {})
        fixed = by.get((k, "fixed"), {})
        rows.append(
            [
                f"{k}x",
                r["mode"],
                fmt(r.get("goodput_ratio"), 4),
                ratio(r.get("goodput_ratio"), naive.get("goodput_ratio")),
                ratio(r.get("goodput_ratio"), fixed.get("goodput_ratio"), 3),
                f"{r.get('shards_final')} / {r.get('shards_needed')}",
                ratio(r.get("shards_final"), r.get("shards_needed"), 3),
                fmt(r.get("throttled_fraction"), 3),
                fmt(r.get("scaler_runs")),
            ]
        )
    lines = [
        "Goodput is events acknowledged / events offered in the measurement window; the "
        "baselines are the `naive` (one shard) and `fixed` (the shards the load needs, "
        "from the start) runs at the same load factor k.",
        "",
        *table(
            [
                "k",
                "mode",
                "goodput",
                "goodput vs naive",
                "goodput vs fixed",
                "shards final / needed",
                "shards vs needed",
                "throttled fraction",
                "scaler runs",
            ],
            rows,
        ),
    ]
    return lines, generic_targets("hot_key", doc)


def _find(runs: Sequence[dict[str, Any]], **match: Any) -> dict[str, Any]:
    for r in runs:
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return {}


def reads_section(doc: dict[str, Any]) -> tuple[list[str], list[Target]]:
    """Reads: p50 and RCU per page against the unsharded key and gather-then-sort.

    Baselines of the same run: the ``unsharded`` reader (one plain Query per page on the
    N = 1 key) per window, and the ``gather`` reader (the article's gather-then-sort) at
    the same N and window.
    """
    runs = doc.get("runs", [])
    windows = list(dict.fromkeys(r["window"] for r in runs))
    rows = []
    for w in windows:
        ref = _find(runs, reader="unsharded", window=w)
        shards = sorted(
            {r["shards"] for r in runs if r["window"] == w and r["reader"] != "unsharded"}
        )
        for n in shards:
            base = _find(runs, reader="base", window=w, shards=n)
            gather = _find(runs, reader="gather", window=w, shards=n)
            gsi1 = _find(runs, reader="gsi1", window=w, shards=n)
            auto = _find(runs, reader="auto", window=w, shards=n)
            rows.append(
                [
                    w,
                    fmt(n),
                    ratio(base.get("p50_ms"), ref.get("p50_ms")),
                    ratio(base.get("rcu"), ref.get("rcu")),
                    ratio(gather.get("p50_ms"), base.get("p50_ms")),
                    ratio(gsi1.get("p50_ms"), ref.get("p50_ms")),
                    ratio(auto.get("p50_ms"), ref.get("p50_ms")),
                    ratio(auto.get("rcu"), ref.get("rcu")),
                ]
            )
    lines = [
        "Per page of 100 (p50 wall time, RCU consumed); `vs unsharded` divides by the "
        "unsharded reader's figure for the same window (one plain Query per page on the "
        "N = 1 key), `gather / base` is the article's gather-then-sort p50 over the base "
        "reader's at the same N (above 1: base is faster). A cell not measured in this run "
        "(GSI1 cannot serve a month at 32 or 64 shards) says so.",
        "",
        *table(
            [
                "window",
                "N",
                "base p50 vs unsharded",
                "base RCU vs unsharded",
                "gather / base p50",
                "gsi1 p50 vs unsharded",
                "auto p50 vs unsharded",
                "auto RCU vs unsharded",
            ],
            rows,
        ),
    ]
    hedged_lines, hedged_targets = reads_hedging(doc.get("hedging") or {})
    return lines + hedged_lines, reads_targets(doc) + hedged_targets


def reads_hedging(section: dict[str, Any]) -> tuple[list[str], list[Target]]:
    """The reads' hedging section: p50/p99 and RCU per N, hedging off and on."""
    t = section.get("targets") or {}
    by_shards = t.get("by_shards") or {}
    if not by_shards:
        return [], []
    rows = [
        [
            n,
            fmt(r["p50_off_ms"]),
            fmt(r["p50_on_ms"]),
            fmt(r["p99_off_ms"]),
            fmt(r["p99_on_ms"]),
            fmt(r["p99_on_over_unsharded"]),
            fmt(r["rcu_off"]),
            fmt(r["rcu_on"]),
            fmt(None if r["rcu_overhead"] is None else round(100 * r["rcu_overhead"], 1)),
        ]
        for n, r in by_shards.items()
    ]
    hedger = section.get("hedger") or {}
    lines = [
        "",
        "Hedged shard Queries (day window, limit 100, latency model on): p50 and p99 of a "
        f"page in ms, hedging off and on; unsharded p50 {fmt(t.get('unsharded_p50_ms'))} ms, "
        f"p99 {fmt(t.get('unsharded_p99_ms'))} ms. Hedger over the timed pages: "
        f"{hedger.get('hedges')} hedges of {hedger.get('queries')} Queries, "
        f"{hedger.get('hedges_won')} won, {hedger.get('hedge_read_units')} RCU.",
        "",
        *table(
            [
                "N",
                "p50 off",
                "p50 on",
                "p99 off",
                "p99 on",
                "p99 on vs unsharded",
                "RCU off",
                "RCU on",
                "RCU overhead %",
            ],
            rows,
        ),
    ]
    at = by_shards.get("32") or {}
    out: list[Target] = []
    limit, value = t.get("p99_on_over_unsharded_max"), at.get("p99_on_over_unsharded")
    if limit is not None:
        ok = value is not None and value <= limit
        out.append(
            Target(
                "reads",
                "hedged_p99_over_unsharded[day@32]",
                target_text(limit),
                fmt(value),
                ok,
                margin(limit, value, ok),
                ""
                if ok
                else (
                    f"p99 with hedging off is already {fmt(at.get('p99_off_ms'))} ms against "
                    f"the unsharded {fmt(t.get('unsharded_p99_ms'))} ms, and hedges won "
                    f"{hedger.get('hedges_won')} of {hedger.get('hedges')} sent: the tail is "
                    "the client's own CPU (32 responses parsed on 2 cores), not a slow "
                    "shard, and a hedge adds a request to it instead of cutting it"
                ),
            )
        )
    cap, overhead = t.get("rcu_overhead_max"), at.get("rcu_overhead")
    if cap is not None:
        ok = overhead is not None and overhead <= cap
        out.append(
            Target(
                "reads",
                "hedging_rcu_overhead[day@32]",
                target_text(cap),
                fmt(overhead),
                ok,
                margin(cap, overhead, ok),
            )
        )
    return lines, out


def parser_section(doc: dict[str, Any]) -> tuple[list[str], list[Target]]:
    """Parser: one recorded 1 MB Query page, botocore's parser + plain_value vs one pass.

    Baseline of the same run: ``before`` (botocore's JSON parser, then the reader's
    conversion of each item), timed in the same pyperf run as ``after``.
    """
    runs = doc.get("runs") or {}
    settings = doc.get("settings") or {}
    before = runs.get("before", {})
    rows = [
        [
            name,
            fmt(r.get("mean_ms"), 1),
            fmt(r.get("stdev_ms"), 1),
            ratio(r.get("mean_ms"), before.get("mean_ms")),
        ]
        for name, r in runs.items()
    ]
    lines = [
        f"One recorded Query page ({fmt(settings.get('items'))} items, "
        f"{fmt((settings.get('body_bytes') or 0) / 1e6, 2)} MB of wire JSON); `before` is "
        "botocore's parser then `item_to_event` per item, `after` the library's parser "
        "(items left as the wire had them) then the same; `parse_*` the parsers alone. "
        f"Speedup {fmt(doc.get('speedup'))}x (parser alone {fmt(doc.get('parse_speedup'))}x).",
        "",
        *table(["path", "mean ms", "stdev ms", "vs before"], rows),
    ]
    return lines, generic_targets("parser", doc)


def reads_targets(doc: dict[str, Any]) -> list[Target]:
    """The read benchmark's targets from its ``targets`` (not in the generic shape)."""
    t = doc.get("targets") or {}
    met = t.get("met") or {}
    out = generic_targets("reads", doc)
    n = t.get("shards")
    limit = t.get("p50_over_unsharded_max")
    floors = t.get("fanout_floor_p50_over_unsharded") or {}
    for window, value in (t.get("p50_over_unsharded") or {}).items():
        ok = limit is not None and value <= limit
        floor_ratio = floors.get(window)
        out.append(
            Target(
                "reads",
                f"base_p50_over_unsharded[{window}@{n}]",
                target_text(limit),
                fmt(value),
                ok,
                margin(limit, value, ok),
                ""
                if ok or floor_ratio is None
                else (
                    f"the fan-out floor of this run (the {n} shard Queries of a page sent "
                    f"in parallel, nothing merged or decoded) is {fmt(floor_ratio)} x "
                    "unsharded: the page waits for the slowest of N round trips and this "
                    "client's 2 cores parse N responses, so no merge can bring it lower"
                ),
            )
        )
    floor = t.get("gather_over_base_p50_day_min")
    for window in ("day", "month"):  # the month window: issue 29's "keep it"
        gather = (t.get("gather_over_base_p50") or {}).get(f"{window}@{n}")
        if floor is None or (window == "month" and gather is None):
            continue
        ok = gather is not None and gather >= floor
        out.append(
            Target(
                "reads",
                f"gather_over_base_p50[{window}@{n}]",
                f">= {floor:g}",
                fmt(gather),
                ok,
                margin(f">= {floor}", gather, ok),
                ""
                if ok or window != "day"
                else (
                    "a day holds less than a page per shard, so gather-then-sort reads no "
                    f"more than the base reader: both send {n} Queries and merge the same "
                    "items; the gain is over long windows (month, same run: "
                    f"{fmt((t.get('gather_over_base_p50') or {}).get(f'month@{n}'))} x)"
                ),
            )
        )
    cells = t.get("rcu_per_page") or {}
    if cells:
        within = sum(1 for c in cells.values() if c.get("met"))
        ok = within == len(cells)
        out.append(
            Target(
                "reads",
                "rcu_within_allowance",
                str(t.get("rcu_allowance", "unsharded RCU + 1 per shard")),
                f"{within} of {len(cells)} cells",
                ok,
                "" if ok else f"{len(cells) - within} cells over the allowance",
            )
        )
    for key in ("gsi1_wins_cool_hour_in_requests_and_p50", "auto_takes_gsi1_on_cool_hour"):
        if key in met:
            out.append(Target("reads", key, "yes", fmt(bool(met[key])), bool(met[key]), ""))
    return out


def ingest_section(doc: dict[str, Any]) -> tuple[list[str], list[Target]]:
    """Ingest: records per second against the article's per-item ``put_item`` loop.

    Baseline of the same run: the same records through the write-sharding article's
    ``ShardedTimeSeriesWriter.write_event`` (one ``put_item`` per record), same backend.
    """
    rows = [
        [
            r.get("backend", ""),
            fmt(r.get("batch_size")),
            ratio(r.get("records_per_s"), r.get("baseline_records_per_s")),
            fmt(r.get("records_per_s"), 0),
            fmt(r.get("baseline_records_per_s"), 0),
            fmt(r.get("cpu_ms_per_record"), 3),
            ratio(r.get("cpu_ms_per_record"), r.get("baseline_cpu_ms_per_record")),
        ]
        for r in doc.get("runs", [])
    ]
    lines = [
        "The baseline is the same records through the write-sharding article's per-item "
        "`put_item` loop on the same backend in the same run; CPU is this process's "
        "milliseconds per record (DynamoDB Local's own CPU not included).",
        "",
        *table(
            [
                "backend",
                "batch",
                "records/s vs put_item loop",
                "records/s",
                "loop records/s",
                "CPU ms/record",
                "CPU vs loop",
            ],
            rows,
        ),
    ]
    return lines, generic_targets("ingest", doc)


def cold_start_section(doc: dict[str, Any]) -> tuple[list[str], list[Target]]:
    """Cold start: import + first call per handler against two baselines.

    Baselines of the same run: a handler importing Powertools' Logger only, and one
    with Logger, boto3 and one DynamoDB client (``baselines`` in the JSON).
    """
    base = doc.get("baselines") or {}
    boto3 = base.get("boto3", {})
    logger = base.get("logger", {})
    rows = []
    for r in doc.get("runs", []):
        rows.append(
            [
                r["handler"],
                ratio(r.get("total_ms"), r.get("baseline_boto3_ms", boto3.get("total_ms"))),
                ratio(r.get("total_ms"), r.get("baseline_logger_ms", logger.get("total_ms"))),
                ratio(r.get("cpu_ms"), boto3.get("cpu_ms")),
                fmt(r.get("import_ms"), 1),
                fmt(r.get("first_invoke_ms"), 1),
                fmt(r.get("total_ms"), 1),
            ]
        )
    for label, b in (("baseline: Logger + boto3 + client", boto3), ("baseline: Logger", logger)):
        if b:
            rows.append(
                [
                    label,
                    ratio(b.get("total_ms"), boto3.get("total_ms")),
                    ratio(b.get("total_ms"), logger.get("total_ms")),
                    ratio(b.get("cpu_ms"), boto3.get("cpu_ms")),
                    fmt(b.get("import_ms"), 1),
                    fmt(b.get("first_invoke_ms"), 1),
                    fmt(b.get("total_ms"), 1),
                ]
            )
    lines = [
        "Import and first call of each handler in a fresh process (medians); the "
        "baselines, measured in the same run, are a handler with Powertools' Logger, "
        "boto3 and one DynamoDB client (the target's) and one with the Logger only.",
        "",
        *table(
            [
                "handler",
                "vs boto3 baseline",
                "vs Logger baseline",
                "CPU vs boto3 baseline",
                "import ms",
                "first call ms",
                "total ms",
            ],
            rows,
        ),
    ]
    return lines, [_cold_start_reason(t, doc) for t in generic_targets("cold_start", doc)]


def _cold_start_reason(target: Target, doc: dict[str, Any]) -> Target:
    """A missed cold-start target, with its import and first call against the baseline's."""
    if target.met:
        return target
    boto3 = (doc.get("baselines") or {}).get("boto3") or {}
    handler = target.name.partition("[")[2].rstrip("]") or target.measured.partition("(")[2]
    run = _find(doc.get("runs", []), handler=handler.rstrip(")"))
    if not run or not boto3:
        return target
    first_call = (
        "reads the key's metadata and its shards"
        if run["handler"].startswith("query")
        else "reads its alarms and the keys' metadata"
        if run["handler"].startswith("scaler")
        else "reads the key's metadata, records its GSI1 buckets and writes the events"
    )
    reason = (
        f"the first call takes {fmt(run.get('first_invoke_ms'), 1)} ms against the "
        f"baseline's {fmt(boto3.get('first_invoke_ms'), 1)} (one GetItem): it loads what "
        f"the import deferred and {first_call}, each request a round trip; the import "
        f"takes {fmt(run.get('import_ms'), 1)} ms against {fmt(boto3.get('import_ms'), 1)} "
        "(pydantic's models, Powertools' Tracer with the X-Ray SDK; docs/benchmarks.md has "
        "the import profile)"
    )
    return replace(target, reason=reason)


def memory_section(doc: dict[str, Any]) -> tuple[list[str], list[Target]]:
    """Memory: peak RSS per handler and workload against the boto3 baseline.

    Baseline of the same run: the ``baseline.boto3`` process (Logger, boto3, one
    DynamoDB client); the stack's sizes are compared in the targets.
    """
    runs = doc.get("runs", [])
    boto3 = _find(runs, handler="baseline.boto3")
    rows = [
        [
            r["handler"],
            ratio(r.get("peak_rss_mib"), boto3.get("peak_rss_mib")),
            fmt(r.get("peak_rss_mib"), 1),
            ratio(r.get("cpu_ms"), boto3.get("cpu_ms")),
            fmt(r.get("cpu_ms"), 1),
        ]
        for r in runs
    ]
    sizes = doc.get("sizes") or {}
    stack = {
        k.split("[", 1)[1].rstrip("]"): v.get("measured")
        for k, v in (doc.get("targets") or {}).items()
        if k.startswith("stack_memory_mb[") and isinstance(v, dict)
    }
    size_line = ", ".join(
        f"{fn} {fmt(s.get('memory_mb'))} MB derived ({s.get('bound', '?')}-bound), "
        f"{fmt(stack.get(fn))} MB in the stack"
        for fn, s in sizes.items()
    )
    lines = [
        "Peak RSS (VmHWM) after import and one invocation with the workload, medians over "
        "fresh processes; the baseline is the Logger + boto3 + one DynamoDB client process "
        "of the same run.",
        "",
        *table(
            [
                "handler [workload]",
                "peak RSS vs boto3 baseline",
                "peak RSS MiB",
                "CPU vs boto3 baseline",
                "CPU ms",
            ],
            rows,
        ),
    ]
    if size_line:
        lines += ["", f"Lambda memory sizes: {size_line}."]
    return lines, generic_targets("memory", doc)


def emulator_overhead_section(doc: dict[str, Any]) -> tuple[list[str], list[Target]]:
    """Emulator overhead: median latency per path against direct DynamoDB Local.

    Baseline of the same run: the ``direct`` path (a boto3 client of DynamoDB Local),
    interleaved request by request with the others.
    """
    rows = []
    for op, paths in (doc.get("operations") or {}).items():
        direct = paths.get("direct", {})
        for path, p in paths.items():
            rows.append(
                [
                    op,
                    path,
                    ratio(p.get("median_ms"), direct.get("median_ms")),
                    ratio(p.get("p90_ms"), direct.get("p90_ms")),
                    fmt(p.get("median_ms"), 3),
                    fmt(p.get("requests")),
                ]
            )
    lines = [
        "Sequential requests, interleaved path by path; the baseline is `direct` (a boto3 "
        "client of DynamoDB Local) in the same run.",
        "",
        *table(
            ["operation", "path", "median vs direct", "p90 vs direct", "median ms", "requests"],
            rows,
        ),
    ]
    return lines, generic_targets("emulator_overhead", doc)


@dataclass(frozen=True)
class Benchmark:
    """A benchmark the report covers: its JSON's stem, title, command and section."""

    name: str
    title: str
    command: str
    section: Callable[[dict[str, Any]], tuple[list[str], list[Target]]]


#: In the order ``make bench`` runs them.
BENCHMARKS = (
    Benchmark("hot_key", "Hot key", "make bench-hot-key", hot_key_section),
    Benchmark("reads", "Reads", "make bench-reads", reads_section),
    Benchmark("parser", "Parser", "make bench-parser", parser_section),
    Benchmark("ingest", "Ingest", "make bench-ingest", ingest_section),
    Benchmark("cold_start", "Cold start", "make bench-cold-start", cold_start_section),
    Benchmark("memory", "Memory", "make bench-memory", memory_section),
    Benchmark(
        "emulator_overhead", "Emulator overhead", "make bench-emulator", emulator_overhead_section
    ),
)


# --- the document ------------------------------------------------------------------------
def wall_s(doc: dict[str, Any]) -> float | None:
    """A benchmark's wall time, seconds (``total_wall_s`` or ``elapsed_s``)."""
    for key in ("total_wall_s", "elapsed_s"):
        if isinstance(doc.get(key), int | float):
            return float(doc[key])
    return None


def load_averages(doc: dict[str, Any]) -> str:
    """The load averages a benchmark recorded, at start -> at end (1-minute first)."""
    machine = doc.get("machine") or {}
    load = doc.get("load_average") or {}
    pairs = [
        (machine.get("loadavg_start"), machine.get("loadavg_end")),
        (load.get("before"), load.get("after")),
    ]
    for start, end in pairs:
        if start or end:
            return f"{_loads(start)} -> {_loads(end)}"
    one_minute = machine.get("load_average_1m")
    if one_minute:
        return " -> ".join(fmt(v) for v in one_minute) + " (1 min)"
    return "not recorded"


def _loads(values: Sequence[float] | None) -> str:
    return " / ".join(fmt(v) for v in values) if values else "?"


def load(results: Path, since: datetime | None = None) -> dict[str, dict[str, Any] | None]:
    """Each benchmark's JSON, or None when missing or older than ``since``.

    A file that exists but is not a JSON object becomes ``{UNREADABLE: reason}``: the
    report says why it could not be read, and ``--require-all`` fails on it.

    Parameters
    ----------
    results : Path
        The directory with ``NAME.json`` (``bench/results``).
    since : datetime, optional
        Results dated (their ``date``, UTC) before this are stale: treated as not run. A
        result without a ``date`` counts as current.

    Returns
    -------
    dict of str to (dict or None)
        Benchmark name -> its JSON document.
    """
    docs: dict[str, dict[str, Any] | None] = {}
    for b in BENCHMARKS:
        path = results / f"{b.name}.json"
        if not path.exists():
            docs[b.name] = None
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            docs[b.name] = {UNREADABLE: f"{exc.__class__.__name__}: {exc}"}
            continue
        if not isinstance(doc, dict):
            docs[b.name] = {UNREADABLE: f"a JSON {type(doc).__name__}, not an object"}
            continue
        dated = _date(doc)
        stale = since is not None and dated is not None and dated < since
        docs[b.name] = None if stale else doc
    return docs


def _date(doc: dict[str, Any]) -> datetime | None:
    try:
        return datetime.strptime(str(doc.get("date")), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def demo_lines(demo: dict[str, Any]) -> tuple[list[str], list[Target]]:
    """The demo's section: its ``elapsed_s`` against :data:`DEMO_TARGET_S` and each act's."""
    elapsed = demo.get("elapsed_s")
    rows: list[list[Any]] = [
        ["whole run", fmt(elapsed, 1), ratio(elapsed, DEMO_TARGET_S), fmt(demo.get("ok"))]
    ]
    for act in ("first_act", "second_act"):
        if isinstance(demo.get(act), dict):
            a = demo[act]
            rows.append(
                [
                    act.replace("_", " "),
                    fmt(a.get("elapsed_s"), 1),
                    ratio(a.get("elapsed_s"), DEMO_TARGET_S),
                    fmt(a.get("ok")),
                ]
            )
    ok = isinstance(elapsed, int | float) and elapsed < DEMO_TARGET_S
    target = Target(
        "demo",
        "elapsed_s",
        f"< {fmt(DEMO_TARGET_S, 0)} s",
        fmt(elapsed, 1),
        ok,
        margin(f"<= {DEMO_TARGET_S}", elapsed, ok),
    )
    lines = [
        f"`make demo` (both acts, {fmt(demo.get('events'))} events, every check), from its "
        "`demo-report.json` (not committed; figures copied here).",
        "",
        *table(["part", "elapsed s", "vs the 600 s target", "checks passed"], rows),
    ]
    return lines, [target]


def render(
    docs: dict[str, dict[str, Any] | None],
    results: Path,
    out: Path,
    demo: dict[str, Any] | None = None,
    generated: datetime | None = None,
) -> str:
    """The report's Markdown.

    Parameters
    ----------
    docs : dict of str to (dict or None)
        :func:`load` output.
    results : Path
        Where the charts are (``NAME.png``), linked relative to ``out``'s directory.
    out : Path
        Where the report goes (for the relative links only).
    demo : dict, optional
        A ``demo-report.json`` document.
    generated : datetime, optional
        When the report was generated (default: now, UTC).

    Returns
    -------
    str
        The Markdown document, no absolute path in it.
    """
    generated = generated or datetime.now(UTC)
    ran = {name: doc for name, doc in docs.items() if doc is not None}
    machines = [doc.get("machine") or {} for doc in ran.values()]

    def distinct(key: str) -> str:
        values = list(dict.fromkeys(str(m[key]) for m in machines if m.get(key) is not None))
        return ", ".join(values) if values else "not recorded"

    def platform() -> str:
        # Some benchmarks record platform.platform(), others platform.machine() and
        # platform.system(): keep the most specific, drop what another one contains.
        values = {str(m[k]) for m in machines for k in ("platform", "system") if m.get(k)}
        kept = sorted(v for v in values if not any(v != o and v in o for o in values))
        return ", ".join(kept) if kept else "platform not recorded"

    lines = [
        "# Benchmark report",
        "",
        f"Generated {generated.strftime('%Y-%m-%d %H:%M UTC')} by `python -m bench.report` "
        "from `bench/results/*.json` (`make bench` runs every benchmark, then this). Every "
        "ratio is against a baseline measured in the same run of the same benchmark.",
        "",
        f"Machine: {distinct('cpus')} CPUs, Python {distinct('python')}, {platform()}.",
        "",
    ]
    runs_rows = []
    total = 0.0
    for b in BENCHMARKS:
        doc = docs.get(b.name)
        if doc is None:
            runs_rows.append([b.title, "not run", "", ""])
            continue
        w = wall_s(doc)
        total += w or 0.0
        runs_rows.append(
            [b.title, str(doc.get("date", "not recorded")), fmt(w, 1), load_averages(doc)]
        )
    runs_rows.append(["**all**", "", f"**{fmt(total, 1)}** ({total / 60:.1f} min)", ""])
    lines += table(
        ["benchmark", "finished (UTC)", "wall s", "load average start -> end"], runs_rows
    )

    sections: list[str] = []
    targets: list[Target] = []
    for b in BENCHMARKS:
        doc = docs.get(b.name)
        sections += ["", f"## {b.title}", ""]
        if doc is None:
            sections += [f"Not run: no current `bench/results/{b.name}.json` (`{b.command}`)."]
            targets.append(Target(b.name, "(all)", "", "not run", False, "not run"))
            continue
        if UNREADABLE in doc:
            sections += [f"Could not read `{b.name}.json` ({doc[UNREADABLE]})."]
            targets.append(Target(b.name, "(all)", "", "unreadable", False, "unreadable file"))
            continue
        try:
            body, found = b.section(doc)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            # A JSON of another shape than this report knows: say so, keep the others.
            body = [f"Could not read `{b.name}.json`'s figures ({exc.__class__.__name__}: {exc})."]
            found = [Target(b.name, "(all)", "", "unreadable", False, "unreadable result")]
        targets += found
        sections += [
            f"`{b.command}` -> `bench/results/{b.name}.json`, {fmt(wall_s(doc), 1)} s.",
            "",
        ]
        sections += body
        sections += ["", "Targets:", ""]
        sections += [f"- {line}" for line in target_lines(found)] or ["- none recorded"]
        png = results / f"{b.name}.png"
        if png.is_file():
            link = Path(os.path.relpath(png, out.parent)).as_posix()
            sections += ["", f"![{b.title} chart]({link})"]
    if demo is not None:
        body, found = demo_lines(demo)
        targets += found
        sections += ["", "## Demo", "", *body, "", "Targets:", ""]
        sections += [f"- {line}" for line in target_lines(found)]
    else:
        sections += [
            "",
            "## Demo",
            "",
            "Not given (`python -m bench.report --demo demo-report.json` adds it).",
        ]

    met = sum(1 for t in targets if t.met)
    lines += ["", "## Summary", "", f"{met} of {len(targets)} targets met.", ""]
    lines += table(
        ["benchmark", "target", "bound", "measured", "verdict"],
        [[t.benchmark, t.name, t.target, t.measured, verdict(t)] for t in targets],
    )
    return "\n".join(lines + sections) + "\n"


def verdict(t: Target) -> str:
    """``"met"``, or ``"**missed**: <margin>"``, then the reason where one is given."""
    if t.met:
        return "met"
    text = f"**missed**: {t.margin}" if t.margin else "**missed**"
    return f"{text}. Why: {t.reason}" if t.reason else text


def target_lines(found: Sequence[Target]) -> list[str]:
    """One line per target: ``name: measured (bound) -- met / missed by ...``."""
    return [f"`{t.name}`: {t.measured} (target {t.target}) -- {verdict(t)}" for t in found]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line of ``python -m bench.report``.

    Parameters
    ----------
    argv : sequence of str or None
        ``--results DIR``, ``--output PATH``, ``--demo PATH``, ``--since
        YYYY-MM-DDTHH:MM:SSZ`` (UTC), ``--require-all``; None reads ``sys.argv``.

    Returns
    -------
    argparse.Namespace
        The options.
    """
    parser = argparse.ArgumentParser(
        prog="python -m bench.report", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="the benchmarks' JSON")
    parser.add_argument("--output", type=Path, default=REPORT)
    parser.add_argument("--demo", type=Path, default=None, help="a demo-report.json to include")
    parser.add_argument(
        "--since",
        default=None,
        help="UTC time (YYYY-MM-DDTHH:MM:SSZ): results dated earlier are stale, not run",
    )
    parser.add_argument(
        "--require-all", action="store_true", help="exit 1 when a benchmark has no (current) result"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Write the report; print each benchmark's wall time and the sum.

    Returns
    -------
    int
        0; 1 with ``--require-all`` when a benchmark's JSON is missing or stale, or when
        ``--demo`` names an unreadable file; 2 for a malformed ``--since``.
    """
    exit_on_sigterm()
    args = parse_args(argv)
    since = None
    if args.since:
        try:
            since = datetime.strptime(args.since, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            print(f"--since {args.since!r}: expected YYYY-MM-DDTHH:MM:SSZ", file=sys.stderr)
            return 2
    demo = None
    if args.demo is not None:
        try:
            demo = json.loads(args.demo.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(
                f"--demo: cannot read {args.demo.name}: {exc.__class__.__name__}", file=sys.stderr
            )
            return 1
    docs = load(args.results, since)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render(docs, args.results, args.output, demo), encoding="utf-8")
    total = 0.0
    for b in BENCHMARKS:
        doc = docs[b.name]
        w = wall_s(doc) if doc is not None else None
        total += w or 0.0
        print(f"{b.name:<18} {'not run' if doc is None else fmt(w, 1) + ' s'}")
    print(f"{'all':<18} {total:.1f} s ({total / 60:.1f} min)")
    print(f"wrote {args.output.name}")
    missing = [name for name, doc in docs.items() if doc is None or UNREADABLE in doc]
    if missing and args.require_all:
        print(f"not run, stale or unreadable: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
