"""``python -m bench NAME|report|charts``: run one benchmark, write the report, or redraw.

Each name is a module of ``bench/`` with ``main(argv) -> int``; this command imports it
only when it is asked for (so ``python -m bench --help`` loads no benchmark), hands it
every argument after the name and exits with its code. ``python -m bench NAME --help``
lists the benchmark's own options. A benchmark writes its JSON in ``bench/results/``
(hot-key and reads also the PNG beside it); ``report`` writes ``bench/REPORT.md`` from
the JSON already there and ``charts`` redraws the PNGs, neither running anything.

Examples
--------
``python -m bench reads --quick``, ``python -m bench report --demo demo-report.json``,
``python -m bench charts``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Benchmark name -> the module whose ``main(argv)`` runs it. The one place that names them.
BENCHMARKS = {
    "hot-key": "bench.hot_key",
    "reads": "bench.reads",
    "ingest": "bench.ingest",
    "cold-start": "bench.cold_start",
    "memory": "bench.memory",
    "emulator-overhead": "bench.emulator_overhead",
    "gsi-reads": "bench.gsi_reads",
    "bucketed-reads": "bench.bucketed_reads",
    "growth-config": "bench.growth_config",
    "fleet": "bench.fleet",
    "fleet-paper": "bench.fleet.paper",  # the figures of docs/fleet-scale.md, the planner timed
    "parser": "bench.parser",  # a recorded 1 MB Query page: botocore + plain_value vs one pass
}
#: Not benchmarks: they read the results the benchmarks wrote and run nothing.
TOOLS = {
    "report": "bench.report",  # bench/REPORT.md from bench/results/*.json
    "charts": "bench.charts",  # the PNGs from bench/results/*.json
}
#: Every name this command takes.
COMMANDS = {**BENCHMARKS, **TOOLS}


def parser() -> argparse.ArgumentParser:
    """Return the command's parser: a name, then that job's own arguments."""
    result = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run a benchmark, write the report, or redraw the charts.",
        epilog=(
            "benchmarks (each writes its JSON, and some a PNG, in bench/results/):\n  "
            + ", ".join(BENCHMARKS)
            + "\n\nfrom the JSON already in bench/results/, running nothing:\n"
            "  report  write bench/REPORT.md\n"
            "  charts  redraw the PNGs\n\n"
            "Example: python -m bench reads --quick"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    result.add_argument("name", metavar="NAME", choices=list(COMMANDS), help="what to run")
    result.add_argument(
        "args",
        nargs=argparse.REMAINDER,
        help="its arguments (python -m bench NAME --help lists them)",
    )
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Run one benchmark (or the report, or the charts) with the remaining arguments.

    Parameters
    ----------
    argv : sequence of str, optional
        ``NAME [ARGS...]``; ``sys.argv[1:]`` when None.

    Returns
    -------
    int
        The job's exit code (argparse exits 2 on an unknown name).
    """
    ns = parser().parse_args(argv)
    module = importlib.import_module(COMMANDS[ns.name])
    return int(module.main(ns.args) or 0)


if __name__ == "__main__":
    sys.exit(main())
