"""Delivery: events and counter increments sent to the ingest handlers, as AWS would.

The replay goes through real event sources on moto's server (:mod:`sandbox.engines.moto_server`)
and Lambda's pollers (:mod:`sandbox.local_aws.pollers`): batches of 100 departures, most put on a
Kinesis stream (``PutRecords``, 500 per call) that :class:`~sandbox.local_aws.pollers.KinesisPoller`
hands to ``kinesis_handler``, one in :data:`SQS_EVERY` sent to an SQS queue (with a
dead-letter queue) that :class:`~sandbox.local_aws.pollers.SqsPoller` hands to ``sqs_handler``, and
one in :data:`API_EVERY` posted as ``POST /events`` ``{"events": [...]}`` to
``api_handler`` (a 503's failed events are sent again, as a client would). Redelivery,
retries, the DLQ and the on-failure destination are the pollers' and the queue's, not
the demo's. Counters: departures per carrier, aggregated client-side per chunk of the
replay and sent as ``POST /counters/CARRIER#XX {"by": n}`` with an ``Idempotency-Key``.

Kinesis carries the bulk because moto's SQS costs about 7 ms of its CPU per message
(send, receive, delete) against about 0.1 ms per Kinesis record (measured on the
sandbox machine), and a Kinesis batch of 500 is one invocation.

:func:`replay` sends as fast as the handlers acknowledge (the first act); the second
act's open-loop schedule is :mod:`sandbox.scenarios.demo.openloop`. :class:`IngestStats` counts
both.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from sandbox.harness.dataset import CARRIER_COUNTER, Departure
from sandbox.harness.handlers import Handlers, api_call
from sandbox.tally import Tally

#: Events per batch of the replay and per ``POST /events`` (the API's maximum).
BATCH_SIZE = 100
#: One batch in this many goes through the API (5 %).
API_EVERY = 20
#: One batch in this many goes through the SQS queue (2 %); the rest through Kinesis.
SQS_EVERY = 50
#: Attempts of a ``POST /events`` or a counter increment by a client (the queue's own
#: ``maxReceiveCount`` is the template's).
MAX_RECEIVES = 5
#: Departures per chunk that a client aggregates into one increment per carrier.
COUNTER_CHUNK = 5_000


@dataclass
class IngestStats(Tally):
    """Counts of the replay (thread-safe through :meth:`add`).

    ``offered`` counts events once; ``delivered`` counts every delivery of a record to
    an ingest handler (redeliveries included), and ``written`` grows as records are
    acknowledged, so both can be sampled while the replay runs.
    """

    offered: int = 0
    delivered: int = 0
    written: int = 0
    failed: int = 0
    redelivered: int = 0
    via_sqs: int = 0
    via_kinesis: int = 0
    via_api: int = 0
    counter_increments: int = 0
    counter_deduplicated: int = 0
    counter_failures: int = 0
    errors: list[str] = field(default_factory=list)
    pollers: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def send_api_batch(handlers: Handlers, events: Sequence[dict[str, Any]], stats: IngestStats) -> int:
    """POST events to ``/events`` as ``{"events": [...]}``, resending a 503's failed ones.

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    events : sequence of dict
        At most 100 events.
    stats : IngestStats
        Updated with written, failed and redelivered counts.

    Returns
    -------
    int
        Events acknowledged.
    """
    pending = list(events)
    written = 0
    for _attempt in range(MAX_RECEIVES):
        stats.add(delivered=len(pending))
        status, body = api_call(handlers, "api", "POST", "/events", body={"events": pending})
        if status == 200:
            written += len(pending)
            stats.add(written=len(pending))
            pending = []
            break
        if status == 503 and isinstance(body, dict) and "failed" in body:
            failed_ids = {f["id"] for f in body["failed"]}
            written += len(pending) - len(failed_ids)
            stats.add(written=len(pending) - len(failed_ids))
            pending = [e for e in pending if e["id"] in failed_ids]
            stats.add(redelivered=len(pending))
            continue
        stats.error(f"POST /events answered {status}: {str(body)[:300]}")
        break
    stats.add(failed=len(pending), via_api=len(events))
    return written


def send_counter(
    handlers: Handlers, carrier: str, by: int, idempotency_key: str, stats: IngestStats
) -> bool:
    """Add a client-aggregated count to a carrier's counter (retried, idempotent).

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    carrier : str
        Carrier code.
    by : int
        Departures aggregated by the client.
    idempotency_key : str
        ``Idempotency-Key`` header, the same across retries.
    stats : IngestStats
        Updated with the increment or the failure.

    Returns
    -------
    bool
        Whether the increment was acknowledged.
    """
    name = CARRIER_COUNTER.format(carrier=carrier)
    status, body = 0, None
    for attempt in range(MAX_RECEIVES):
        if attempt:  # a client backs off before it tries a failed increment again
            time.sleep(min(2.0, 0.25 * 2 ** (attempt - 1)))
        status, body = api_call(
            handlers,
            "api",
            "POST",
            "/counters/{name}",
            path_parameters={"name": name},
            body={"by": by},
            headers={"Idempotency-Key": idempotency_key},
        )
        if status == 200:
            # applied is False when an earlier attempt with this key already counted.
            deduplicated = isinstance(body, dict) and body.get("applied") is False
            stats.add(counter_increments=1, counter_deduplicated=int(deduplicated))
            return True
        if status < 500:
            stats.error(f"POST /counters/{name} answered {status}: {str(body)[:300]}")
            break
    else:
        stats.error(
            f"POST /counters/{name} still answered {status} after {MAX_RECEIVES} attempts: "
            f"{str(body)[:300]}"
        )
    stats.add(counter_failures=1)
    return False


def _batches(departures: Sequence[Departure], size: int) -> Iterator[list[Departure]]:
    for start in range(0, len(departures), size):
        yield list(departures[start : start + size])


def send_sqs_messages(sqs: Any, queue_url: str, bodies: Sequence[str]) -> None:
    """Send message bodies to a queue, 10 per ``SendMessageBatch``, resending refused ones.

    Parameters
    ----------
    sqs : botocore client
        The SQS client.
    queue_url : str
        The queue.
    bodies : sequence of str
        Message bodies.

    Raises
    ------
    RuntimeError
        When SQS still refuses an entry after 10 calls.
    """
    for start in range(0, len(bodies), 10):
        entries = [
            {"Id": str(i), "MessageBody": body} for i, body in enumerate(bodies[start : start + 10])
        ]
        for attempt in range(10):
            failed = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries).get("Failed", [])
            refused = {f["Id"] for f in failed}
            entries = [e for e in entries if e["Id"] in refused]
            if not entries:
                break
            time.sleep(0.05 * 2**attempt)
        if entries:
            raise RuntimeError(f"SendMessageBatch refused {len(entries)} messages 10 times")


def replay(
    handlers: Handlers,
    departures: Sequence[Departure],
    workers: int,
    on_progress: Callable[[int], None] | None = None,
    stats: IngestStats | None = None,
    *,
    moto_endpoint: str | None = None,
    timeout_s: float = 3600.0,
) -> IngestStats:
    """Replay the departures through Kinesis, SQS and the API, as AWS would deliver them.

    Parameters
    ----------
    handlers : Handlers
        The handlers (``kinesis``, ``sqs``, ``api``).
    departures : sequence of Departure
        In replay order.
    workers : int
        Kinesis shards (one invocation in flight each) and client threads of the API
        share and the counters.
    on_progress : callable, optional
        Called with the number of events newly acknowledged (deleted from the queue,
        checkpointed on the stream, or answered 200 by the API).
    stats : IngestStats, optional
        Where to count (so a caller can sample it while the replay runs); default a
        new one with ``offered`` set.
    moto_endpoint : str, optional
        A running moto server; None starts one for the replay.
    timeout_s : float
        Seconds to wait for the pollers to settle every record.

    Returns
    -------
    IngestStats
        What was offered, written, failed (in the DLQ or the on-failure destination)
        and redelivered; ``pollers`` holds each poller's own counts.
    """
    from sandbox.engines.moto_server import MotoServer, aws_client
    from sandbox.env_vars import environ_twin
    from sandbox.local_aws.pollers import KinesisPoller, SqsPoller, put_records, queue_depth
    from sandbox.twin.sources import KINESIS_HANDLER, SQS_HANDLER, create_sources, poller_client

    stats = stats if stats is not None else IngestStats(offered=len(departures))
    with contextlib.ExitStack() as stack:
        endpoint = moto_endpoint or stack.enter_context(MotoServer()).endpoint_url
        sqs = aws_client("sqs", endpoint, max_pool_connections=workers + 4)
        kinesis = aws_client("kinesis", endpoint, max_pool_connections=workers + 4)
        # The template's queues, stream and event source mappings; the stream gets one
        # shard per worker (an on-demand stream's shards follow its write load).
        twin = handlers.twin or environ_twin()
        sources = create_sources(twin, sqs, kinesis, shards=max(1, workers))
        kinesis_mapping = twin.kinesis_mapping(KINESIS_HANDLER)
        sqs_mapping = twin.sqs_mapping(SQS_HANDLER)
        # The pollers read and report failures with the functions' roles, as Lambda does.
        pool_size = workers + 4

        def role_client(handler: str, service: str, on_failure: bool = False) -> Any:
            return poller_client(
                twin,
                handler,
                service,
                endpoint,
                on_failure=on_failure,
                max_pool_connections=pool_size,
            )

        kp = KinesisPoller(
            role_client(KINESIS_HANDLER, "kinesis"),
            sources.stream,
            lambda event: handlers.invoke("kinesis", event),
            kinesis_mapping,
            on_failure=(role_client(KINESIS_HANDLER, "sqs", True), sources.on_failure_url),
        )
        sp = SqsPoller(
            role_client(SQS_HANDLER, "sqs"),
            sources.queue_url,
            lambda event: handlers.invoke("sqs", event),
            sqs_mapping,
        )
        stack.enter_context(kp)
        stack.enter_context(sp)
        via_kinesis = via_sqs = 0
        acked = {"api": 0, "pollers": 0}
        lock = threading.Lock()

        def progress() -> None:
            now = kp.stats.records_acknowledged + sp.stats.records_acknowledged
            with lock:
                delta, acked["pollers"] = now - acked["pollers"], now
            if delta:
                stats.add(written=delta)
                if on_progress is not None:
                    on_progress(delta)

        def api_batch(events: list[dict[str, Any]]) -> None:
            written = send_api_batch(handlers, events, stats)
            with lock:
                acked["api"] += written
            if on_progress is not None and written:
                on_progress(written)

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ingest") as pool:
            futures: list[Future[Any]] = []
            stream_records: list[tuple[str, bytes]] = []
            for index, batch in enumerate(_batches(departures, BATCH_SIZE)):
                events = [d.event for d in batch]
                if index % API_EVERY == 0:
                    futures.append(pool.submit(api_batch, events))
                elif index % SQS_EVERY == 1:
                    bodies = [json.dumps(e) for e in events]
                    futures.append(pool.submit(send_sqs_messages, sqs, sources.queue_url, bodies))
                    via_sqs += len(events)
                else:
                    stream_records.extend((e["id"], json.dumps(e).encode()) for e in events)
                    via_kinesis += len(events)
                if len(stream_records) >= 5_000:
                    put_records(kinesis, sources.stream, stream_records)
                    stream_records = []
                progress()
            put_records(kinesis, sources.stream, stream_records)
            for chunk_no, chunk in enumerate(_batches(departures, COUNTER_CHUNK)):
                for carrier, count in sorted(Counter(d.carrier for d in chunk).items()):
                    key = f"demo-{chunk_no}-{carrier}"
                    futures.append(pool.submit(send_counter, handlers, carrier, count, key, stats))
            deadline = time.monotonic() + timeout_s
            expected = via_kinesis + via_sqs
            while time.monotonic() < deadline:
                progress()
                settled = acked["pollers"] + kp.stats.records_to_on_failure
                if settled >= expected and queue_depth(sqs, sources.queue_url) == 0:
                    break
                time.sleep(0.2)
            else:
                stats.error(f"the pollers did not settle every record within {timeout_s:.0f} s")
            for future in as_completed(futures):
                try:
                    future.result()
                except Exception as exc:
                    stats.error(f"ingest task raised {exc!r}")
        progress()
        dead = queue_depth(sqs, sources.dlq_url)
        failed = dead + kp.stats.records_to_on_failure
        if failed:
            stats.error(
                f"{dead} SQS messages in the DLQ, {kp.stats.records_to_on_failure} Kinesis "
                "records sent to the on-failure destination"
            )
        delivered = kp.stats.records_delivered + sp.stats.records_delivered
        stats.add(
            failed=failed,
            via_sqs=via_sqs,
            via_kinesis=via_kinesis,
            delivered=delivered,
            redelivered=max(0, delivered - via_kinesis - via_sqs),
        )
        stats.pollers = {"kinesis": kp.stats.to_json(), "sqs": sp.stats.to_json()}
        for name, poller_stats in stats.pollers.items():
            for message in poller_stats["errors"][:5]:
                stats.error(f"{name} poller: {message}")
    return stats
