"""The soak: the model of the whole library on DynamoDB Local, thousands of sequences.

``make soak`` runs ``python -m tests.model.soak``: it starts DynamoDB Local (in memory,
as the integration tests do), creates one set of tables (dynashard's own, and a data
table per other table layout of the model), and runs the machine of
:mod:`tests.model.machine` for ``--sequences`` sequences of up to ``--steps`` steps,
each sequence on fresh key prefixes over the shared tables, under the table layout it
draws (``--layout NAME``, repeatable, draws from those only). It prints the seed (pass
``--seed`` to replay a run), writes a JSON summary (sequences, steps, divergences by
label with an example each, observations, seed, elapsed seconds, steps/s) to
``--report`` and exits 1 on any divergence.

By default the first divergence stops the run and hypothesis shrinks it to a minimal
example (printed); ``--keep-going`` records every divergence and goes on (no shrinking),
to count them.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from sandbox.engines.dynamodb_local import DynamoDBLocal
from sandbox.tables import create_tables, data_and_metadata
from tests.model.machine import (
    LAYOUTS,
    Backend,
    Report,
    Semantics,
    create_layout_tables,
    machine_for,
)


def main(argv: list[str] | None = None) -> int:
    """Run the soak; return the exit status (0: no divergence).

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 when no sequence diverged from the model, else 1.
    """
    parser = argparse.ArgumentParser(prog="python -m tests.model.soak", description=__doc__)
    parser.add_argument("--sequences", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--report", default="soak-report.json")
    parser.add_argument("--keep-going", action="store_true")
    parser.add_argument("--workers", type=int, default=4, help="threads of each facade")
    parser.add_argument(
        "--layout",
        action="append",
        choices=[x.name for x in LAYOUTS],
        help="draw the table layout from these only (repeatable; default: every layout)",
    )
    args = parser.parse_args(argv)
    run_seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    print(f"soak: seed {run_seed} (replay: python -m tests.model.soak --seed {run_seed})")
    report = Report()
    status = "passed"
    failure = ""
    started = time.monotonic()
    with DynamoDBLocal() as ddb:
        # the library's own kind of client: Query pages parsed once (raw items)
        client = ddb.client(raw_items=True)
        data_table, metadata_table = data_and_metadata(create_tables(client, suffix="-soak"))
        tables = create_layout_tables(client, suffix="-soak")
        semantics = Semantics(raise_on_divergence=not args.keep_going)
        backend = Backend(client, data_table, metadata_table, args.workers, tables)
        layouts = tuple(args.layout) if args.layout else None
        machine = machine_for(backend, semantics, report, layouts)
        phases = [Phase.generate] if args.keep_going else [Phase.generate, Phase.shrink]
        run_settings = settings(
            max_examples=args.sequences,
            stateful_step_count=args.steps,
            database=None,
            deadline=None,
            phases=phases,
            suppress_health_check=list(HealthCheck),
        )
        try:
            run_state_machine_as_test(seed(run_seed)(machine), settings=run_settings)
        except AssertionError as exc:
            status, failure = "diverged", str(exc)
    elapsed = time.monotonic() - started
    summary = {
        "status": status,
        "seed": run_seed,
        "layouts": args.layout or [x.name for x in LAYOUTS],
        "sequences": report.sequences,
        "steps": report.steps,
        "elapsed_s": round(elapsed, 1),
        "steps_per_s": round(report.steps / elapsed, 1) if elapsed else None,
        "divergences": sum(report.divergences.values()),
        "divergences_by_label": report.divergences,
        "examples": report.examples,
        "observations": report.observations,
        "failure": failure[-20000:],
    }
    Path(args.report).write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k not in ("failure", "examples")}))
    if failure:
        print(failure, file=sys.stderr)
    return 0 if summary["divergences"] == 0 and status == "passed" else 1


if __name__ == "__main__":
    sys.exit(main())
