"""PNG charts drawn from the benchmarks' JSON (matplotlib, Agg backend).

Each benchmark writes its JSON and then calls :func:`render` on it, which writes the
PNG beside it (``bench/results/hot_key.png``, ``bench/results/reads.png``,
``bench/results/fleet.png``); ``python -m
bench charts`` (:func:`main`) redraws them from the JSON already in ``bench/results/``
without running anything. Only what the JSON holds is drawn.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter


def hot_key_chart(doc: dict[str, Any], path: Path) -> Path:
    """Chart the hot-key benchmark: throughput and throttles over time, per mode and k.

    Runs that carry a ``timeline`` (offered and acknowledged events per second, the
    shard count and key-range throttle events per second, per time bin) get one panel per load
    factor with a line per mode; without timelines, goodput and the throttled fraction
    per mode and load factor are drawn as bars.
    """
    runs = doc["runs"]
    factors = sorted({r["load_factor"] for r in runs})
    modes = list(dict.fromkeys(r["mode"] for r in runs))
    colors = {"naive": "tab:red", "fixed": "tab:green", "adaptive": "tab:blue"}
    if all("timeline" in r for r in runs):
        fig, axes = plt.subplots(
            2, len(factors), figsize=(5 * len(factors), 7), dpi=100, squeeze=False
        )
        for col, k in enumerate(factors):
            top, bottom = axes[0][col], axes[1][col]
            for r in (r for r in runs if r["load_factor"] == k):
                t = r["timeline"]
                color = colors.get(r["mode"])
                top.plot(t["t_s"], t["acknowledged_per_s"], color=color, label=f"{r['mode']} ack")
                bottom.step(
                    t["throttles_t_s"],
                    t["throttle_events_per_s"],
                    where="post",
                    color=color,
                    label=r["mode"],
                )
                right = top.twinx() if r["mode"] == "adaptive" else None
                if right is not None:
                    right.step(t["t_s"], t["shards"], where="post", color=color, linestyle=":")
                    right.set_ylabel("adaptive N (dotted)")
                    right.set_ylim(0, max(t["shards"]) * 1.2 + 1)
            offered = next(r["offered_per_s"] for r in runs if r["load_factor"] == k)
            top.axhline(offered, color="grey", linestyle="--", label="offered")
            top.set_title(f"k = {k} x the key's limit")
            top.set_ylabel("events/s acknowledged")
            bottom.set_ylabel("key-range throttle events/s")
            bottom.set_xlabel("emulated seconds since the load started")
            top.legend(fontsize=8)
            bottom.legend(fontsize=8)
            top.grid(True, alpha=0.3)
            bottom.grid(True, alpha=0.3)
    else:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4), dpi=100, squeeze=False)
        width = 0.8 / max(1, len(modes))
        for i, mode in enumerate(modes):
            xs = [j + i * width for j in range(len(factors))]
            by_k = {r["load_factor"]: r for r in runs if r["mode"] == mode}
            axes[0][0].bar(
                xs,
                [by_k[k]["goodput_ratio"] or 0 for k in factors],
                width,
                label=mode,
                color=colors.get(mode),
            )
            axes[0][1].bar(
                xs,
                [by_k[k]["throttled_fraction"] for k in factors],
                width,
                label=mode,
                color=colors.get(mode),
            )
        for ax, title in zip(axes[0], ("goodput", "throttled fraction of attempts"), strict=True):
            ax.set_xticks([j + width * (len(modes) - 1) / 2 for j in range(len(factors))])
            ax.set_xticklabels([f"k={k}" for k in factors])
            ax.set_title(title)
            ax.set_ylim(0, 1.05)
            ax.legend(fontsize=8)
            ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"hot key benchmark ({doc.get('date', '')})")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


#: One colour per reader, the same in every panel.
READER_COLORS = {
    "base": "tab:blue",
    "gsi1": "tab:orange",
    "auto": "tab:green",
    "gather": "tab:red",
    "fanout": "tab:purple",
}


def reads_chart(doc: dict[str, Any], path: Path) -> Path:
    """Chart the read benchmark: p50 latency of a page against the shard count.

    One panel per read window (day, month, cool hour), one line per reader (base,
    gsi1, auto, gather, fanout); the unsharded reader is the dashed line.
    """
    windows = list(dict.fromkeys(r["window"] for r in doc["runs"]))
    fig, axes = plt.subplots(1, len(windows), figsize=(5 * len(windows), 4), dpi=100, squeeze=False)
    for ax, window in zip(axes[0], windows, strict=True):
        series: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for r in doc["runs"]:
            if r["window"] == window and r.get("p50_ms") is not None:
                series[r["reader"]].append((r["shards"], r["p50_ms"]))
        for reader, points in sorted(series.items()):
            points.sort()
            xs, ys = [p[0] for p in points], [p[1] for p in points]
            if reader == "unsharded":
                ax.axhline(ys[0], color="grey", linestyle="--", label="unsharded")
            else:
                ax.plot(xs, ys, marker="o", label=reader, color=READER_COLORS.get(reader))
        shard_counts = sorted({r["shards"] for r in doc["runs"]})
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        plain = FuncFormatter(lambda v, _pos: f"{v:g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
        ax.set_xticks(shard_counts)
        ax.set_xticklabels([str(n) for n in shard_counts])
        ax.set_xlabel("shard count N")
        ax.set_ylabel("p50 latency of a page, ms (log)")
        ax.set_title(f"window: {window}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    limit = doc.get("settings", {}).get("limit")
    fig.suptitle(f"read latency against shard count (pages of {limit}; {doc.get('date', '')})")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


#: One colour per fleet policy, the same in every panel.
POLICY_COLORS = {
    "none": "tab:red",
    "static": "tab:orange",
    "blog": "tab:purple",
    "dynashard": "tab:blue",
    "oracle": "tab:green",
}
#: Short labels of the fleet workloads.
FLEET_LABELS = {
    "zipf": "(a) Zipf",
    "churn": "(b) churn",
    "flash": "(c) flash",
    "diurnal": "(d) diurnal",
    "backfill": "(e) backfill",
}


def _fleet_bars(
    ax: Any, workloads: dict[str, Any], figure: Callable[[dict[str, Any]], float | None]
) -> None:
    names = list(workloads)
    policies = list(POLICY_COLORS)
    width = 0.8 / len(policies)
    for i, policy in enumerate(policies):
        xs = [j + i * width for j in range(len(names))]
        values = [figure(workloads[n]["policies"].get(policy, {})) or 0.0 for n in names]
        ax.bar(xs, values, width, label=policy, color=POLICY_COLORS[policy])
    ax.set_xticks([j + width * (len(policies) - 1) / 2 for j in range(len(names))])
    ax.set_xticklabels([FLEET_LABELS.get(n, n) for n in names], fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)


def _fleet_series(ax: Any, body: dict[str, Any], field: str, unit_minutes: float) -> None:
    for policy, color in POLICY_COLORS.items():
        s = body["policies"].get(policy, {}).get("series", {})
        if field not in s:
            continue
        xs = [i * s["bin_minutes"] / unit_minutes for i in range(len(s[field]))]
        ax.step(xs, s[field], where="post", color=color, label=policy, linewidth=1)
    ax.grid(True, alpha=0.3)


def fleet_chart(doc: dict[str, Any], path: Path) -> Path:
    """Chart the fleet simulation: each workload's figures per policy, and three timelines.

    Top row: goodput, shard-seconds against the oracle's (log) and the longest run of
    seconds any key needing more than one partition was throttled (log), one bar per
    policy and workload, with the targets (0.99, 1.25, 180 s) dashed. Bottom row: goodput
    per bin over time for (b) churn and (d) diurnal, and the backfill key's shard count
    over the 30 days of (e) (the most in force in each bin), where those were run.
    """
    workloads = doc["workloads"]
    fig, axes = plt.subplots(2, 3, figsize=(17, 8.5), dpi=100)
    top, bottom = axes[0], axes[1]
    _fleet_bars(top[0], workloads, lambda f: f.get("goodput"))
    top[0].axhline(0.99, color="grey", linestyle="--", linewidth=1)
    top[0].set_ylim(0, 1.05)
    top[0].set_title("goodput (written / offered; target >= 0.99 on a-d)")
    _fleet_bars(top[1], workloads, lambda f: f.get("shard_seconds_vs_oracle"))
    top[1].axhline(1.25, color="grey", linestyle="--", linewidth=1)
    top[1].set_yscale("log")
    top[1].set_title("shard-seconds / oracle's (log; target <= 1.25)")
    _fleet_bars(top[2], workloads, lambda f: max(1, f.get("longest_throttled_streak_s") or 0))
    top[2].axhline(180, color="grey", linestyle="--", linewidth=1)
    top[2].set_yscale("log")
    top[2].set_title("longest throttled streak of a key, s (log; target <= 180)")
    plain = FuncFormatter(lambda v, _pos: f"{v:g}")
    for ax in top[1:]:
        ax.yaxis.set_major_formatter(plain)
    panels = (
        ("churn", "goodput", 1.0, "(b) churn: goodput per minute", "emulated minutes"),
        ("diurnal", "goodput", 60.0, "(d) diurnal: goodput per bin", "emulated hours"),
        ("backfill", "watched_n_max", 1440.0, "(e) backfill key's N", "emulated days"),
    )
    for ax, (name, field, unit, title, xlabel) in zip(bottom, panels, strict=True):
        if name not in workloads:
            ax.set_axis_off()
            continue
        _fleet_series(ax, workloads[name], field, unit)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        if field == "goodput":
            ax.set_ylim(0, 1.05)
        else:
            ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    handles, labels = top[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", ncols=5, fontsize=8)
    params = doc.get("parameters", {})
    fig.suptitle(
        f"fleet simulation, seed {params.get('seed')} ({doc.get('date', '')}; "
        "per-workload keys and minutes in fleet.json)",
        x=0.01,
        horizontalalignment="left",
    )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


#: Benchmark name (the JSON's ``benchmark``) -> chart.
CHARTS = {"hot_key": hot_key_chart, "reads": reads_chart, "fleet": fleet_chart}


def render(json_path: Path) -> Path | None:
    """Write the PNG of one benchmark's JSON beside it.

    Parameters
    ----------
    json_path : Path
        ``bench/results/NAME.json``.

    Returns
    -------
    Path or None
        The PNG written, or None for a benchmark without a chart.
    """
    doc = json.loads(json_path.read_text(encoding="utf-8"))
    chart = CHARTS.get(doc.get("benchmark", json_path.stem))
    if chart is None:
        return None
    return chart(doc, json_path.with_suffix(".png"))


def render_all(results: Path) -> list[Path]:
    """Write the PNG of every benchmark JSON in ``results`` that has a chart."""
    written = [render(p) for p in sorted(results.glob("*.json"))]
    return [p for p in written if p is not None]


#: Where the benchmarks write their JSON.
RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    """Redraw the PNG of every benchmark JSON that has a chart; print each path written.

    Parameters
    ----------
    argv : list of str, optional
        ``[--results DIR]``; ``sys.argv[1:]`` when None.

    Returns
    -------
    int
        0.
    """
    parser = argparse.ArgumentParser(
        prog="python -m bench charts",
        description="Redraw the benchmarks' PNG charts from their JSON (runs nothing).",
    )
    parser.add_argument(
        "--results", type=Path, default=RESULTS, help="the benchmarks' JSON (bench/results)"
    )
    args = parser.parse_args(argv)
    for path in render_all(args.results):
        shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
        print(f"wrote {shown}")
    return 0
