"""In-band growth on or off: the demo's second act and the hot-key benchmark, in both modes.

Run with ``python -m bench growth-config``. Whether throttled writers grow a key
themselves (``in_band_growth``) besides the alarm-driven scaler is the stack parameter
``in_band_growth``; this benchmark runs the demo's second act and the hot-key benchmark
with it off and on and says which mode the stack should default to. It chose off (the
stack's default since; ``bench/results/growth_config.json`` was measured before the
sandbox ran from the synthesized template, with the second act's in-band setting given
explicitly in both modes).

Per mode it runs:

- the demo's second act (``python -m sandbox demo --act 2``, plus ``--in-band-growth``
  in the ``on`` mode), in a process of its own, on DynamoDB Local and the partition
  emulator, at the act's default settings; from its report it keeps the act's
  targets: each origin key's ``N*``, the count it reached and when, the scaler rounds
  from the first alarm's to the one that got it there (at most two allowed), its
  largest count over ``N*`` (at most 1.5), the emulated seconds from the first throttle
  until written events keep up with offered ones (at most 150), lost, mismatched and
  duplicated events, throttle events and redeliveries;
- the hot-key benchmark's adaptive mode (:func:`bench.hot_key.run_one`) at each load
  factor asked for, with the writers' facade built with ``in_band`` off or on (naive
  and fixed are left out: with in-band growth on, a naive key grows too); it keeps
  goodput, throttled fraction, convergence time, scaler runs, final count over the
  count needed and the benchmark's own targets (:func:`bench.hot_key.targets`).

Which mode is better (:func:`better`), by this rule, in order:

1. a mode whose two runs the machine kept on schedule is judged; if the second act of
   either mode ran late (``machine_kept_schedule`` false), no mode is chosen;
2. more of the second act's targets met (``N*`` within two scaler runs, never past
   1.5 ``N*``, recovery within 150 emulated seconds, no event lost or mismatched);
3. then more of the hot-key benchmark's targets met;
4. then the shorter recovery of the second act (emulated seconds; never recovered
   counts as infinitely long);
5. then fewer key-range throttle events in the second act;
6. then the lower mean throttled fraction over the hot-key runs.

A mode that wins no step ties with the other (``better`` is then None).

A caveat on the second act's ``in_band_on`` figures (:data:`ACT2_CLOCK_CAVEAT`): the
demo runs the ingest functions' shard metadata on the wall clock and the scaler's on the
act's accelerated clock, so the two growers' cooldowns do not run on one clock as they
do in AWS.

It writes ``bench/results/growth_config.json`` and prints a table. Every figure is
measured in the run; nothing is hard-coded.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.machine import load_average, machine, utc_now, write_result

RESULTS = Path(__file__).resolve().parent / "results" / "growth_config.json"
#: Mode name -> whether throttled writers grow keys in-band.
MODES = {"in_band_off": False, "in_band_on": True}
#: The hot-key benchmark's load factors run in each mode (its targets are at 16 and 64).
HOT_KEY_LOAD_FACTORS = (4, 16, 64)
#: The second act's target checks (:func:`sandbox.scenarios.demo.acts.second_act`), in
#: the order the issue states them, and the data checks that say nothing was lost.
ACT2_GROWTH_TARGETS = (
    "every_key_reached_target_within_two_scaler_runs",
    "no_key_grew_past_1_5_target",
    "throughput_recovered",
)
ACT2_DATA_CHECKS = (
    "all_events_written",
    "all_events_read_back",
    "reads_equal_source",
    "no_duplicates",
    "counters_equal_source",
)
#: What the second act's in-band figures are not (recorded in the result's ``setup``).
ACT2_CLOCK_CAVEAT = (
    "in the second act the ingest functions' shard metadata runs on the wall clock "
    "(time.time) and the scaler's on the act's accelerated clock (x speed, from the "
    "minute's floor): with in-band growth on, a writer's own cooldown lasts cooldown_s "
    "wall seconds (speed x as many emulated ones), each grower compares the other's "
    "last_updated across the two clocks, and a writer's change is stamped on the wall "
    "clock; one clock, as in AWS, may give other in-band figures"
)
#: Emulated seconds within which the second act's scaler runs are one round.
ROUND_S = 10.0
#: Largest count of a key over its ``N*`` the second act allows.
MAX_OVER_TARGET = 1.5


def scaler_rounds(alarms: Sequence[Mapping[str, Any]], speed: float) -> list[float]:
    """Return the start times of the scaler's rounds in the second act.

    The act's alarm history has one entry per alarm that fired and one per alarm a
    sweep found in ``ALARM``. Entries within :data:`ROUND_S` emulated seconds of a
    round's first are one round: a sweep's entries share their time, and the alarms
    that fire together (the table's and the index's) or with a sweep act on the same
    minute of figures. The act's "within two scaler runs" deadline counts the same way
    (the first alarm's run, the sweep after it, plus 10 s for the run itself).

    Parameters
    ----------
    alarms : sequence of mapping
        :meth:`sandbox.scenarios.demo.growth.GrowthLoop.alarm_history` entries
        (``at_s``: wall seconds after the act started).
    speed : float
        Emulated seconds per wall second.

    Returns
    -------
    list of float
        Sorted start times of the rounds, wall seconds.
    """
    rounds: list[float] = []
    for at_s in sorted({float(a["at_s"]) for a in alarms}):
        if not rounds or (at_s - rounds[-1]) * speed > ROUND_S:
            rounds.append(at_s)
    return rounds


def rounds_to_target(
    key: str,
    n_star: int,
    reached_s: float | None,
    alarms: Sequence[Mapping[str, Any]],
    speed: float,
) -> int | None:
    """Return how many scaler rounds, from the first alarm's, it took a key to reach ``N*``.

    Parameters
    ----------
    key : str
        Logical key.
    n_star : int
        Its target count.
    reached_s : float or None
        Wall seconds after the act started at which its count reached ``N*`` (the
        metadata's whole-second stamp); None if never.
    alarms : sequence of mapping
        The act's ``alarms``.
    speed : float
        Emulated seconds per wall second.

    Returns
    -------
    int or None
        The 1-based index of the round that grew the key to ``N*`` or past it,
        counted from the first alarm's round. When writers got it there (no round
        reports that growth): 0 before the first alarm, else the round within whose
        first :data:`ROUND_S` emulated seconds it happened or, past them, the round
        after (the act's deadline counts alike: two rounds are met within 10 s of the
        second's start). None if the key never reached ``N*``.
    """
    if reached_s is None:
        return None
    first_alarm = next((a["at_s"] for a in alarms if a.get("via") == "alarm"), None)
    if first_alarm is None:
        return 0
    rounds = [t for t in scaler_rounds(alarms, speed) if t >= first_alarm]
    by_scaler = next(
        (
            float(a["at_s"])
            for a in sorted(alarms, key=lambda a: a["at_s"])
            for g in a.get("grown", [])
            if g.get("key") == key and g.get("current", 0) >= n_star
        ),
        None,
    )
    if by_scaler is not None:
        return sum(1 for t in rounds if t <= by_scaler)
    if reached_s < first_alarm:
        return 0
    return 1 + sum(1 for t in rounds if (reached_s - t) * speed > ROUND_S)


def key_figures(
    key: str, schedule: Mapping[str, Any], alarms: Sequence[Mapping[str, Any]], speed: float
) -> dict[str, Any]:
    """Summarize one origin key of the second act against its ``N*``.

    Parameters
    ----------
    key : str
        Logical key.
    schedule : mapping
        The act's ``schedule`` entry of the key (``target_shards``, ``shards_reached``,
        ``reached_target_at_s``, ``max_shards``).
    alarms : sequence of mapping
        The act's ``alarms``.
    speed : float
        Emulated seconds per wall second.

    Returns
    -------
    dict
        ``n_star``, ``counts`` (the key's counts in order), ``max_n``,
        ``max_n_over_n_star``, ``reached_n_star_at_emulated_s`` (after the act started,
        None if never), ``scaler_rounds_to_n_star`` (:func:`rounds_to_target`), and
        ``grown_by`` per change (``scaler`` when a scaler run reported that growth,
        else ``in_band``). A change made by a writer is stamped by the writer's own
        clock, which in the sandbox is the wall clock, not the act's: its time is
        approximate.
    """
    n_star = int(schedule["target_shards"])
    steps = list(schedule.get("shards_reached", []))
    reached = schedule.get("reached_target_at_s")
    scaler_growths = {
        (g["key"], g["current"]) for a in alarms for g in a.get("grown", []) if "key" in g
    }
    max_n = int(schedule.get("max_shards") or max((s["count"] for s in steps), default=0))
    return {
        "n_star": n_star,
        "counts": [s["count"] for s in steps],
        "max_n": max_n,
        "max_n_over_n_star": round(max_n / n_star, 3),
        "reached_n_star_at_emulated_s": None if reached is None else round(reached * speed, 1),
        "scaler_rounds_to_n_star": rounds_to_target(key, n_star, reached, alarms, speed),
        "grown_by": [
            {
                "count": s["count"],
                "at_emulated_s": round(s["since_s"] * speed, 1),
                "by": "scaler" if (key, s["count"]) in scaler_growths else "in_band",
            }
            for s in steps[1:]
        ],
    }


def act2_figures(act: Mapping[str, Any]) -> dict[str, Any]:
    """Keep the second act's targets and the figures behind them from its report.

    Parameters
    ----------
    act : mapping
        The ``second_act`` entry of the demo's report
        (:func:`sandbox.scenarios.demo.acts.second_act`).

    Returns
    -------
    dict
        ``targets`` (name -> met), ``targets_met`` (how many), ``all_targets_met``,
        ``keys`` (:func:`key_figures` per origin key), ``first_alarm_emulated_s``,
        ``scaler_rounds_emulated_s``, ``recovery_emulated_s``, ``recovery_target_emulated_s``,
        event counts (offered, written, failed, lost, redelivered), ``mismatches``,
        ``duplicates``, ``counters_mismatched``, ``throttle_events``, ``checks`` (every
        check of the act), ``machine`` and ``growth`` (the act's settings).
    """
    speed = float(act["growth"]["speed"])
    checks = dict(act["checks"])
    alarms = act.get("alarms", [])
    lost = act["events_offered"] - act["events_written"]
    targets = {name: bool(checks.get(name, False)) for name in ACT2_GROWTH_TARGETS}
    targets["no_event_lost_or_mismatched"] = all(checks.get(n, False) for n in ACT2_DATA_CHECKS)
    first_alarm = next((a["at_s"] for a in alarms if a["via"] == "alarm"), None)
    first_throttle = act.get("first_throttle_s")
    return {
        "targets": targets,
        "targets_met": sum(targets.values()),
        "all_targets_met": all(targets.values()),
        "keys": {
            key: key_figures(key, entry, alarms, speed)
            for key, entry in act.get("schedule", {}).items()
        },
        "first_alarm_emulated_s": None if first_alarm is None else round(first_alarm * speed, 1),
        "scaler_rounds_emulated_s": [round(t * speed, 1) for t in scaler_rounds(alarms, speed)],
        "scaler_runs_that_grew": sum(1 for a in alarms if a.get("grown")),
        "recovery_emulated_s": act.get("time_to_recover_emulated_s"),
        "recovery_target_emulated_s": act.get("recovery_target_emulated_s"),
        "recovery_not_judged": act.get("recovery_not_judged"),
        "first_throttle_emulated_s": (
            None if first_throttle is None else round(first_throttle * speed, 1)
        ),
        "events_offered": act["events_offered"],
        "events_written": act["events_written"],
        "events_failed": act["events_failed"],
        "events_lost": lost,
        "events_redelivered": act["events_redelivered"],
        "mismatches": act["mismatches"],
        "duplicates": act["duplicates"],
        "counters_mismatched": act["counters_mismatched"],
        "throttle_events": act.get("throttle_events", {}),
        "written_per_s_while_throttled": act.get("written_per_s_while_throttled"),
        "written_per_s_after_recovery": act.get("written_per_s_after_recovery"),
        "checks": checks,
        "ok": bool(act["ok"]),
        "machine": act.get("machine", {}),
        "growth": act["growth"],
        "elapsed_wall_s": act.get("elapsed_s"),
    }


def act2_command(in_band: bool, report: Path, speed: float | None) -> list[str]:
    """Return the command that runs the demo's second act in a process of its own.

    Parameters
    ----------
    in_band : bool
        ``--in-band-growth on`` or ``off`` (never the stack's default: each mode says).
    report : Path
        Where the demo writes its report (and the chart beside it).
    speed : float or None
        ``--speed``; None keeps the demo's default.

    Returns
    -------
    list of str
        ``python -m sandbox demo --act 2 --report REPORT --in-band-growth on|off
        [--speed S]``.
    """
    argv = [sys.executable, "-m", "sandbox", "demo", "--act", "2", "--report", str(report)]
    argv += ["--in-band-growth", "on" if in_band else "off"]
    if speed is not None:
        argv += ["--speed", f"{speed:g}"]
    return argv


def run_act2(in_band: bool, report: Path, speed: float | None) -> dict[str, Any]:
    """Run the demo's second act and return its report's ``second_act``.

    Each mode runs in a process of its own: :func:`sandbox.scenarios.demo.cli.run` sends
    the functions' output to a log file it closes at the end, and the functions' loggers
    keep writing to that closed file in a second run in the same process (a traceback
    per log line, on the CPU the act needs to keep its schedule).

    Parameters
    ----------
    in_band : bool
        Pass ``--in-band-growth``.
    report : Path
        Where the demo writes its report (and the chart beside it).
    speed : float or None
        ``--speed``; None keeps the demo's default.

    Returns
    -------
    dict
        The act's report (whether or not its checks passed).

    Raises
    ------
    RuntimeError
        If the demo could not run (exit code 2, or no report written).
    """
    root = Path(__file__).resolve().parents[1]
    code = subprocess.run(act2_command(in_band, report, speed), cwd=root, check=False).returncode
    if code == 2 or not report.is_file():
        raise RuntimeError(f"the second act could not run (exit code {code})")
    return dict(json.loads(report.read_text(encoding="utf-8"))["second_act"])


@contextlib.contextmanager
def writers_in_band(in_band: bool) -> Iterator[None]:
    """Build the hot-key benchmark's facades with ``in_band`` set, for the duration.

    :func:`bench.hot_key.run_one` builds its writer (and its grower and reader, which
    write no events) with :func:`bench.hot_key.make_facade`'s default, in-band growth
    off; this swaps in the same function with ``in_band`` given.

    Parameters
    ----------
    in_band : bool
        Whether the writers grow a throttled key themselves.

    Yields
    ------
    None
    """
    import bench.hot_key as hot_key

    original = hot_key.make_facade
    hot_key.make_facade = functools.partial(original, in_band=in_band)
    try:
        yield
    finally:
        hot_key.make_facade = original


def shard_steps(timeline: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return the changes of the shard count in force over a hot-key run's timeline.

    Parameters
    ----------
    timeline : mapping
        A hot-key run's ``timeline`` (``t_s``, ``shards`` per bin).

    Returns
    -------
    list of dict
        ``{"t_s", "shards"}`` (emulated seconds) where the count differs from the bin
        before, the first bin included.
    """
    steps: list[dict[str, Any]] = []
    for t_s, count in zip(timeline.get("t_s", []), timeline.get("shards", []), strict=False):
        if not steps or steps[-1]["shards"] != count:
            steps.append({"t_s": t_s, "shards": count})
    return steps


def run_hot_key(in_band: bool, load_factors: Sequence[int]) -> list[dict[str, Any]]:
    """Run the hot-key benchmark's adaptive mode with the writers' in-band growth set.

    Parameters
    ----------
    in_band : bool
        Whether the writers grow a throttled key themselves.
    load_factors : sequence of int
        k, the offered load in multiples of the key's limit.

    Returns
    -------
    list of dict
        :func:`bench.hot_key.run_one` results, the timeline replaced by its shard steps.
    """
    from bench.hot_key import run_one, sandbox_env
    from infra.table_specs import DATA_TABLE, METADATA_TABLE
    from sandbox.engines.dynamodb_local import DynamoDBLocal
    from sandbox.tables import create_tables, data_and_metadata

    runs: list[dict[str, Any]] = []
    with DynamoDBLocal() as ddb:
        tables = data_and_metadata(
            create_tables(
                ddb.client(),
                suffix=f"-bench{uuid.uuid4().hex[:6]}",
                specs=(DATA_TABLE, METADATA_TABLE),
            )
        )
        with sandbox_env(ddb.endpoint_url, tables), writers_in_band(in_band):
            for k in load_factors:
                result = run_one(ddb, tables, "adaptive", k)
                steps = shard_steps(result.pop("timeline"))
                runs.append({**result, "in_band": in_band, "shard_steps": steps})
                print(f"  hot-key in_band={in_band} k={k}: {runs[-1]}", flush=True)
    return runs


def hot_key_figures(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Summarize a mode's hot-key runs: per load factor, and the benchmark's targets.

    Parameters
    ----------
    runs : sequence of mapping
        :func:`run_hot_key` output.

    Returns
    -------
    dict
        ``runs`` (per load factor: goodput, throttled fraction, convergence, scaler
        runs, counts, shard steps), ``targets`` (:func:`bench.hot_key.targets`),
        ``targets_met`` and ``mean_throttled_fraction``.
    """
    from bench.hot_key import targets

    kept = (
        "load_factor",
        "goodput_ratio",
        "throttled_fraction",
        "converge_s",
        "scaler_runs",
        "shards_final",
        "shards_needed",
        "offered_events",
        "acknowledged_events",
        "undrained_batches",
        "run_s",
        "speed_emulated_s_per_wall_s",
        "shard_steps",
    )
    per_k = [
        {
            **{name: r[name] for name in kept if name in r},
            "shards_over_needed": round(r["shards_final"] / r["shards_needed"], 3),
        }
        for r in runs
    ]
    goals = targets([dict(r) for r in runs])
    fractions = [r["throttled_fraction"] for r in runs]
    return {
        "runs": per_k,
        "targets": goals,
        "targets_met": sum(1 for t in goals.values() if t["met"]),
        "mean_throttled_fraction": (
            round(sum(fractions) / len(fractions), 4) if fractions else None
        ),
    }


def _sort_key(mode: Mapping[str, Any]) -> tuple[float, ...]:
    """Return a mode's standing under :func:`better`'s rule: larger is better."""
    act = mode.get("act2") or {}
    hot = mode.get("hot_key") or {}
    recovery = act.get("recovery_emulated_s")
    throttles = (act.get("throttle_events") or {}).get("key_range")
    fraction = hot.get("mean_throttled_fraction")
    return (
        float(act.get("targets_met", 0)),
        float(hot.get("targets_met", 0)),
        -(math.inf if recovery is None else float(recovery)),
        -(math.inf if throttles is None else float(throttles)),
        -(math.inf if fraction is None else float(fraction)),
    )


#: The steps of :func:`better`'s rule after the schedule check, in order.
RULE_STEPS = (
    "second-act targets met",
    "hot-key targets met",
    "second-act recovery, emulated s",
    "second-act key-range throttle events",
    "hot-key mean throttled fraction",
)


def better(modes: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Choose the better mode by the rule of the module docstring.

    Parameters
    ----------
    modes : mapping of str to mapping
        Mode name -> ``{"act2": act2_figures(...) or None, "hot_key":
        hot_key_figures(...) or None}``.

    Returns
    -------
    dict
        ``{"mode", "decided_by", "reason"}``: ``mode`` is the better mode's name, or
        None when the machine ran a second act late or no step of the rule tells the
        modes apart; ``decided_by`` the rule's step that did (None if none).
    """
    late = [
        name
        for name, m in modes.items()
        if m.get("act2") is not None and not m["act2"]["machine"].get("kept_schedule", True)
    ]
    if late:
        return {
            "mode": None,
            "decided_by": "schedule",
            "reason": f"the machine could not offer the second act's load in {', '.join(late)}",
        }
    ranked = sorted(modes, key=lambda name: _sort_key(modes[name]), reverse=True)
    if len(ranked) < 2:
        return {"mode": ranked[0] if ranked else None, "decided_by": None, "reason": "one mode"}
    first, second = _sort_key(modes[ranked[0]]), _sort_key(modes[ranked[1]])
    for step, a, b in zip(RULE_STEPS, first, second, strict=True):
        if a != b:
            return {
                "mode": ranked[0],
                "decided_by": step,
                "reason": f"{step}: {ranked[0]} {abs(a):g} vs {ranked[1]} {abs(b):g}",
            }
    return {"mode": None, "decided_by": None, "reason": "the modes tie on every step"}


def print_table(modes: Mapping[str, Mapping[str, Any]]) -> None:
    """Print each mode's second-act targets and hot-key figures.

    Parameters
    ----------
    modes : mapping of str to mapping
        As for :func:`better`.
    """
    for name, m in modes.items():
        act = m.get("act2")
        if act is not None:
            keys = ", ".join(
                f"{k.removeprefix('DEPARTURES#')} N*={f['n_star']} max={f['max_n']} "
                f"rounds={f['scaler_rounds_to_n_star']}"
                for k, f in act["keys"].items()
            )
            print(
                f"{name} act 2: targets {act['targets']} recovery "
                f"{act['recovery_emulated_s']} s, key-range throttles "
                f"{act['throttle_events'].get('key_range')}, lost {act['events_lost']}, "
                f"mismatches {act['mismatches']}; {keys}"
            )
        hot = m.get("hot_key")
        if hot is not None:
            for r in hot["runs"]:
                print(
                    f"{name} hot-key k={r['load_factor']}: goodput {r['goodput_ratio']} "
                    f"throttled {r['throttled_fraction']} converge {r['converge_s']} s "
                    f"scaler {r['scaler_runs']} N {r['shards_final']}/{r['shards_needed']}"
                )


def main(argv: Sequence[str] | None = None) -> int:
    """Run both modes, write ``bench/results/growth_config.json`` and print the verdict.

    Parameters
    ----------
    argv : sequence of str, optional
        ``--modes``, ``--skip-act2``, ``--skip-hot-key``, ``--load-factors``,
        ``--speed`` (the second act's), ``--act-reports DIR`` (keep the demo's reports
        and charts there; default a temporary folder), ``--output PATH``.

    Returns
    -------
    int
        0.
    """
    from sandbox.lifecycle import exit_on_sigterm

    parser = argparse.ArgumentParser(
        prog="python -m bench growth-config",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--skip-act2", action="store_true", help="run the hot-key part only")
    parser.add_argument("--skip-hot-key", action="store_true", help="run the second act only")
    parser.add_argument("--load-factors", type=int, nargs="+", default=list(HOT_KEY_LOAD_FACTORS))
    parser.add_argument("--speed", type=float, default=None, help="the second act's --speed")
    parser.add_argument(
        "--act-reports",
        type=Path,
        default=None,
        help="keep the second act's reports and charts in this folder (default: discarded)",
    )
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    wall0 = time.monotonic()
    load_start = load_average()
    modes: dict[str, dict[str, Any]] = {n: {"act2": None, "hot_key": None} for n in args.modes}
    with exit_on_sigterm(), tempfile.TemporaryDirectory(prefix="growth-config-") as tmp:
        reports = args.act_reports or Path(tmp)
        if not args.skip_act2:
            for name in args.modes:
                report = reports / f"act2-{name}.json"
                modes[name]["act2"] = act2_figures(run_act2(MODES[name], report, args.speed))
        if not args.skip_hot_key:
            for name in args.modes:
                modes[name]["hot_key"] = hot_key_figures(
                    run_hot_key(MODES[name], args.load_factors)
                )
    result: dict[str, Any] = {
        "benchmark": "growth_config",
        "date": utc_now(),
        "machine": machine(load_start),
        "question": (
            "issue 30: should the stack's functions let throttled writers grow keys "
            "in-band (in_band_growth, default on) or leave growth to the scaler?"
        ),
        "setup": {
            "act2": (
                "python -m sandbox demo --act 2 at its defaults (speed, load 3 x the "
                "limit per key, target utilization 0.5), --in-band-growth in the on mode"
            ),
            "hot_key": (
                "bench.hot_key adaptive mode at load factors "
                f"{list(args.load_factors)}, the writers' facade built with in_band "
                "off or on"
            ),
            "rule": [
                "judged only when both second acts kept their schedule",
                *RULE_STEPS,
            ],
            "max_n_over_n_star": MAX_OVER_TARGET,
            "act2_clock_caveat": ACT2_CLOCK_CAVEAT,
        },
        "modes": modes,
        "better": better(modes),
        "total_wall_s": round(time.monotonic() - wall0, 1),
    }
    write_result(args.output, result)
    print_table(modes)
    print(f"better: {result['better']}")
    print(f"wrote {args.output.name} in {result['total_wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
