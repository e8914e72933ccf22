"""The chaos run's replay: good events and poison through the pollers while faults strike.

A producer puts batches of departures on a Kinesis stream (nine in ten) and an SQS queue
(one in ten), with poison mixed in; a counter client sends each carrier's increments
through the API with an ``Idempotency-Key``; an injector strikes the faults of the
schedule (:mod:`sandbox.scenarios.chaos.faults`); readers check every read
(:mod:`sandbox.scenarios.chaos.ledger`). :func:`replay` runs them until every good event
is acknowledged or the pollers have settled.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sandbox.harness.dataset import CARRIER_COUNTER, Departure
from sandbox.scenarios.chaos.faults import Faults, kill_and_restart, resize, storm
from sandbox.scenarios.chaos.ledger import Ledger, ReadCheck, event_id, reader, tracked
from sandbox.scenarios.chaos.poison import Poison, make_poison

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_sqs import SQSClient

    from dynashard import Dynashard
    from sandbox.emulator import EmulatorServer
    from sandbox.engines.dynamodb_local import DynamoDBLocal
    from sandbox.engines.moto_server import MotoServer
    from sandbox.harness.handlers import Handlers
    from sandbox.local_aws.lambda_runtime import LocalFunction
    from sandbox.local_aws.pollers import EventSources, KinesisPoller, SqsPoller
    from sandbox.twin import LocalTwin

#: Poison: one in every batch sent to the queue (dead-lettered after the template's
#: ``maxReceiveCount`` receives, in parallel with the rest), and one per this many good
#: events on the stream (each holds its shard while its batch is bisected down to it and
#: retried the template's ``MaximumRetryAttempts`` times).
KINESIS_POISON_EVERY = 5_000
#: One batch of :data:`BATCH` in this many goes to SQS; the rest to Kinesis.
SQS_EVERY = 10
BATCH = 100
#: Messages the producer lets wait in the SQS queue (moto scans the whole queue on each
#: receive, so a long queue costs it CPU).
SQS_MAX_BACKLOG = 400
#: Good departures per client-side counter increment.
COUNTER_CHUNK = 5_000
#: The ingest queue's visibility timeout in this run, s: the template's (six times the
#: function timeout, 180 s) compressed thirtyfold, so that a poison message reaches the
#: dead-letter queue after the template's ``maxReceiveCount`` receives in 30 s rather
#: than 15 minutes. The product (5 x 6 s) bounds how long a good message can keep failing
#: before it is dead-lettered, so it must exceed a restart of DynamoDB Local (about
#: 5 s here). The run's one change to the template, named in the report.
VISIBILITY_TIMEOUT_S = 6
#: Kinesis retry back-off (s): 0.25 s doubling up to 5 s. Lambda does not publish its
#: schedule, so this is local; the number of retries is the template's.
KINESIS_BACKOFF_S = 0.25
KINESIS_BACKOFF_MAX_S = 5.0
#: Reader threads.
READERS = 2


@dataclass(frozen=True)
class ChaosPlan:
    """What the run offers and when it strikes.

    Attributes
    ----------
    departures : sequence of Departure
        The good events, in time order.
    keys : sequence of str
        Their logical keys (the ones resized and stormed).
    schedule : sequence of (float, str, int)
        (share of good events acknowledged, fault, argument).
    seed : int
        Seed of the readers (reader ``n`` uses ``seed + n``).
    """

    departures: Sequence[Departure]
    keys: Sequence[str]
    schedule: Sequence[tuple[float, str, int]]
    seed: int


@dataclass(frozen=True)
class ChaosRig:
    """What the run stands on: the engines, the library, the template and its functions.

    Attributes
    ----------
    twin : LocalTwin
        The stack's twin, its tables, queues and stream bound: the event source
        mappings the pollers run are its template's.
    ddb : DynamoDBLocal
        Killed and restarted by the faults.
    emulator : EmulatorServer
        In front of DynamoDB Local for the functions; its limits make the storm.
    moto : MotoServer
        SQS and Kinesis.
    direct : Dynashard
        The library on DynamoDB Local, no cooldown: grows and shrinks, reads counters.
    readers : Dynashard
        The library on DynamoDB Local, as a reader has it.
    functions : mapping of str to LocalFunction
        ``kinesis``, ``sqs`` and ``api``: the template's ingest functions
        (:meth:`LocalTwin.function`: their names, timeouts and roles, IAM checks on).
    sources : EventSources
        The queue, its DLQ, the stream and the on-failure queue.
    """

    twin: LocalTwin
    ddb: DynamoDBLocal
    emulator: EmulatorServer
    moto: MotoServer
    direct: Dynashard
    readers: Dynashard
    functions: Mapping[str, LocalFunction]
    sources: EventSources


@dataclass(frozen=True)
class ChaosRecord:
    """What the run writes down as it goes, for the audit.

    Attributes
    ----------
    ledger : Ledger
        Acknowledgement times.
    check : ReadCheck
        The readers' figures.
    faults : Faults
        What was injected and how the system came back.
    """

    ledger: Ledger = field(default_factory=Ledger)
    check: ReadCheck = field(default_factory=ReadCheck)
    faults: Faults = field(default_factory=Faults)


@dataclass
class ReplayResult:
    """What the replay offered, and where the sources live."""

    poison: list[Poison]
    counters_sent: Counter[str]
    counter_errors: list[str]
    sources: EventSources
    pollers: dict[str, Any]
    ingest_s: float


def replay(plan: ChaosPlan, rig: ChaosRig, record: ChaosRecord) -> ReplayResult:
    """Replay the plan's departures with poison through the pollers while faults strike.

    Parameters
    ----------
    plan : ChaosPlan
        The events and the fault schedule.
    rig : ChaosRig
        The engines, the library and the functions (the functions' environment set).
    record : ChaosRecord
        Filled as the run goes.

    Returns
    -------
    ReplayResult
        The poison offered, the counter increments sent, the pollers' figures.
    """
    return _Replay(plan, rig, record).run()


class _Replay:
    """One replay: the shared state of its threads, and one method per thread."""

    def __init__(self, plan: ChaosPlan, rig: ChaosRig, record: ChaosRecord) -> None:
        from sandbox.engines.moto_server import aws_client

        self.plan, self.rig, self.record = plan, rig, record
        self.sqs: SQSClient = aws_client("sqs", rig.moto.endpoint_url, max_pool_connections=16)
        self.kinesis: KinesisClient = aws_client(
            "kinesis", rig.moto.endpoint_url, max_pool_connections=16
        )
        self.good = len(plan.departures)
        self.stop = threading.Event()
        self.produced = threading.Event()
        self.poison: list[Poison] = []
        self.counters_sent: Counter[str] = Counter()
        self.counter_errors: list[str] = []
        self.counter_queue: list[tuple[str, int, str]] = []
        self.counter_lock = threading.Condition()
        self.started = 0.0

    # --- the run ----------------------------------------------------------------------------
    def run(self) -> ReplayResult:
        kp, sp = self._pollers()
        threads = [
            threading.Thread(target=self._produce, name="chaos-produce", daemon=True),
            threading.Thread(target=self._count, name="chaos-count", daemon=True),
            threading.Thread(target=self._inject, name="chaos-inject", daemon=True),
        ]
        record = self.record
        reader_threads = [
            threading.Thread(
                target=reader,
                args=(
                    self.rig.readers,
                    self.plan.departures,
                    record.ledger,
                    record.check,
                    self.stop,
                    self.plan.seed + n,
                ),
                name=f"chaos-read-{n}",
                daemon=True,
            )
            for n in range(READERS)
        ]
        self.started = time.monotonic()
        with kp, sp:
            for thread in threads + reader_threads:
                thread.start()
            self._wait_settled(kp, sp, injector=threads[2])
            ingest_s = time.monotonic() - self.started
            threads[1].join(timeout=180)
            self.stop.set()
            for thread in reader_threads + threads:
                thread.join(timeout=60)
        throttle_reasons = self.rig.emulator.emulator.metrics.throttle_reasons()
        record.faults.throttled_requests = sum(throttle_reasons.values())
        return ReplayResult(
            poison=self.poison,
            counters_sent=self.counters_sent,
            counter_errors=self.counter_errors,
            sources=self.rig.sources,
            pollers={"kinesis": kp.stats.to_json(), "sqs": sp.stats.to_json()},
            ingest_s=ingest_s,
        )

    def _invoker(self, name: str) -> Callable[[dict[str, Any]], Any]:
        fn = self.rig.functions[name]
        return lambda event: fn(event)  # its own context: the template's name and timeout

    def _pollers(self) -> tuple[KinesisPoller, SqsPoller]:
        """Return the pollers, running the template's event source mappings.

        Batch sizes, windows, retries, bisection and partial responses are the
        template's; only the Kinesis retry back-off (:data:`KINESIS_BACKOFF_S`), which
        AWS does not publish, is set here.
        """
        from sandbox.local_aws.pollers import KinesisPoller, SqsPoller
        from sandbox.twin.sources import KINESIS_HANDLER, SQS_HANDLER, poller_client

        twin, sources, ledger = self.rig.twin, self.rig.sources, self.record.ledger
        endpoint = self.rig.moto.endpoint_url
        # The pollers read and report failures with the functions' roles, as Lambda does.
        kp = KinesisPoller(
            poller_client(twin, KINESIS_HANDLER, "kinesis", endpoint),
            sources.stream,
            tracked(self._invoker("kinesis"), ledger),
            twin.kinesis_mapping(
                KINESIS_HANDLER,
                retry_backoff_s=KINESIS_BACKOFF_S,
                retry_backoff_max_s=KINESIS_BACKOFF_MAX_S,
            ),
            on_failure=(
                poller_client(twin, KINESIS_HANDLER, "sqs", endpoint, on_failure=True),
                sources.on_failure_url,
            ),
            function_name=self.rig.functions["kinesis"].name,
        )
        sp = SqsPoller(
            poller_client(twin, SQS_HANDLER, "sqs", endpoint),
            sources.queue_url,
            tracked(self._invoker("sqs"), ledger),
            twin.sqs_mapping(SQS_HANDLER),
        )
        return kp, sp

    def _wait_settled(self, kp: KinesisPoller, sp: SqsPoller, injector: threading.Thread) -> None:
        """Wait until every good event is acknowledged, or the pollers have settled."""
        from sandbox.local_aws.pollers import queue_depth

        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            settled = (
                self.produced.is_set()
                and kp.caught_up
                and queue_depth(self.sqs, self.rig.sources.queue_url) == 0
                and not injector.is_alive()
            )
            if settled and self.record.ledger.count() >= self.good:
                break
            if settled and kp.wait_caught_up(5.0, settle_s=2.0) and sp.wait_drained(5.0, 2.0):
                break
            time.sleep(0.5)

    # --- the producer -----------------------------------------------------------------------
    def _produce(self) -> None:
        from sandbox.harness.delivery import send_sqs_messages
        from sandbox.local_aws.pollers import put_records, queue_depth

        departures, sources = self.plan.departures, self.rig.sources
        stream: list[tuple[str, bytes]] = []
        chunk_counts: Counter[str] = Counter()
        chunk_no = 0
        for index in range(0, self.good, BATCH):
            batch = departures[index : index + BATCH]
            payloads = [json.dumps(d.event) for d in batch]
            to_queue = (index // BATCH) % SQS_EVERY == SQS_EVERY - 1
            if to_queue or index % KINESIS_POISON_EVERY == KINESIS_POISON_EVERY // 2:
                p = make_poison(len(self.poison), batch[0].key)
                self.poison.append(p)
                payloads.insert(len(payloads) // 2, p.payload)
            if to_queue:
                while queue_depth(self.sqs, sources.queue_url) > SQS_MAX_BACKLOG:
                    time.sleep(0.2)
                send_sqs_messages(self.sqs, sources.queue_url, payloads)
            else:
                stream.extend(
                    (event_id(p) or f"poison-{n}", p.encode()) for n, p in enumerate(payloads)
                )
                if len(stream) >= 2_000:
                    put_records(self.kinesis, sources.stream, stream)
                    stream = []
            chunk_counts.update(d.carrier for d in batch)
            if (index + BATCH) % COUNTER_CHUNK == 0 or index + BATCH >= self.good:
                with self.counter_lock:
                    for carrier, count in sorted(chunk_counts.items()):
                        self.counter_queue.append((carrier, count, f"chaos-{chunk_no}-{carrier}"))
                    self.counter_lock.notify_all()
                chunk_no += 1
                chunk_counts = Counter()
        put_records(self.kinesis, sources.stream, stream)
        self.produced.set()
        with self.counter_lock:
            self.counter_lock.notify_all()

    # --- the counter client -----------------------------------------------------------------
    def _count(self) -> None:
        from sandbox.harness.handlers import Handlers

        functions = self.rig.functions
        api = Handlers(sqs=functions["sqs"], api=functions["api"], query=functions["api"])
        while True:
            with self.counter_lock:
                while not self.counter_queue and not self.produced.is_set():
                    self.counter_lock.wait(0.5)
                if not self.counter_queue:
                    return
                carrier, by, key = self.counter_queue.pop(0)
            self._increment(api, carrier, by, key)

    def _increment(self, api: Handlers, carrier: str, by: int, key: str) -> None:
        """Send one increment; a client retries it with the same Idempotency-Key until counted."""
        from sandbox.harness.handlers import api_call

        name = CARRIER_COUNTER.format(carrier=carrier)
        deadline = time.monotonic() + 120
        while True:
            try:
                status, body = api_call(
                    api,
                    "api",
                    "POST",
                    "/counters/{name}",
                    path_parameters={"name": name},
                    body={"by": by},
                    headers={"Idempotency-Key": key},
                )
            except Exception as exc:  # the handler raised: retry like a client
                status, body = 599, repr(exc)
            if status == 200:
                self.counters_sent[carrier] += by
                return
            if status < 500 or time.monotonic() > deadline:
                self.counter_errors.append(f"{name} {key}: {status} {str(body)[:200]}")
                return
            time.sleep(0.5)

    # --- the fault injector -----------------------------------------------------------------
    def _inject(self) -> None:
        rig, ledger, faults = self.rig, self.record.ledger, self.record.faults
        pending = list(self.plan.schedule)
        while pending and not self.stop.is_set():
            share, kind, arg = pending[0]
            if ledger.count() < share * self.good:
                self.stop.wait(0.2)
                continue
            pending.pop(0)
            entry: dict[str, Any] = {"at_share": share, "fault": kind}
            if kind == "kill":
                entry |= kill_and_restart(rig.ddb, ledger, self.stop, faults)
            elif kind == "storm":
                entry |= storm(
                    rig.emulator, ledger, self.plan.keys, rig.direct, self.stop, self.started
                )
            else:
                entry |= resize(rig.direct, self.plan.keys, kind, arg)
            faults.injected[kind] += 1
            faults.log.append(entry)
