"""Delivery: events and counter increments sent to the ingest handlers, as a client would.

SQS-shaped batches of 100 records go to ``sqs_handler``, one batch in 20 (5 %) as
``POST /events`` ``{"events": [...]}`` to ``api_handler``. Records reported in
``batchItemFailures`` are redelivered as SQS would (bounded receives, then counted as
failed); a 503's failed events are sent again likewise. Counters: departures per
carrier, aggregated client-side per chunk of the replay and sent as
``POST /counters/CARRIER#XX {"by": n}`` with an ``Idempotency-Key``.

:func:`replay` sends as fast as the handlers acknowledge (the first act); the second
act's open-loop schedule is :mod:`sandbox.demo.openloop`. :class:`IngestStats` counts
both.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from sandbox.aws_events import batch_item_failures, sqs_event, sqs_record
from sandbox.demo.dataset import CARRIER_COUNTER, Departure
from sandbox.demo.handlers import Handlers, api_call

#: Records per SQS batch and events per ``POST /events`` (the API's maximum).
BATCH_SIZE = 100
#: One batch in this many goes through the API instead of SQS (5 %).
API_EVERY = 20
#: Deliveries of a record before it would go to the DLQ (SQS ``maxReceiveCount``).
MAX_RECEIVES = 5
#: Departures per chunk that a client aggregates into one increment per carrier.
COUNTER_CHUNK = 5_000


@dataclass
class IngestStats:
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
    via_api: int = 0
    counter_increments: int = 0
    counter_deduplicated: int = 0
    counter_failures: int = 0
    errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **deltas: int) -> None:
        """Add to counts atomically.

        Parameters
        ----------
        **deltas : int
            Field name to increment.
        """
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def error(self, message: str) -> None:
        """Record an error (the first 50 are kept).

        Parameters
        ----------
        message : str
            What went wrong.
        """
        with self._lock:
            if len(self.errors) < 50:
                self.errors.append(message)


def send_sqs_batch(handlers: Handlers, events: Sequence[dict[str, Any]], stats: IngestStats) -> int:
    """Deliver events as one SQS batch, redelivering reported failures like SQS would.

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    events : sequence of dict
        Events, one per message.
    stats : IngestStats
        Updated with written, failed and redelivered counts.

    Returns
    -------
    int
        Events acknowledged (not reported as failed).
    """
    pending = {f"{e['id']}@{i}": json.dumps(e) for i, e in enumerate(events)}
    written = 0
    for receive in range(1, MAX_RECEIVES + 1):
        records = [
            sqs_record(body, message_id=mid, receive_count=receive) for mid, body in pending.items()
        ]
        stats.add(delivered=len(records))
        try:
            failed = batch_item_failures(handlers.invoke("sqs", sqs_event(records)))
        except Exception as exc:  # the whole batch returns to the queue
            stats.error(f"sqs_handler raised {exc!r}")
            failed = set(pending)
        unknown = failed - set(pending)
        if unknown:
            stats.error(f"batchItemFailures named unknown message ids {sorted(unknown)[:3]}")
        acknowledged = len(pending) - len(failed & set(pending))
        written += acknowledged
        stats.add(written=acknowledged)
        pending = {mid: body for mid, body in pending.items() if mid in failed}
        if not pending:
            break
        stats.add(redelivered=len(pending))
    if pending:
        stats.error(f"{len(pending)} SQS records still failing after {MAX_RECEIVES} receives")
    stats.add(failed=len(pending), via_sqs=len(events))
    return written


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


def replay(
    handlers: Handlers,
    departures: Sequence[Departure],
    workers: int,
    on_progress: Callable[[int], None] | None = None,
    stats: IngestStats | None = None,
) -> IngestStats:
    """Replay the departures through the ingest handlers from a thread pool.

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    departures : sequence of Departure
        In replay order.
    workers : int
        Concurrent invocations.
    on_progress : callable, optional
        Called with the number of events of each finished batch.
    stats : IngestStats, optional
        Where to count (so a caller can sample it while the replay runs); default a
        new one with ``offered`` set.

    Returns
    -------
    IngestStats
        What was offered, written, failed and redelivered.
    """
    stats = stats if stats is not None else IngestStats(offered=len(departures))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ingest") as pool:
        futures: dict[Future[Any], int] = {}
        for index, batch in enumerate(_batches(departures, BATCH_SIZE)):
            events = [d.event for d in batch]
            send = send_api_batch if index % API_EVERY == 0 else send_sqs_batch
            futures[pool.submit(send, handlers, events, stats)] = len(events)
        for chunk_no, chunk in enumerate(_batches(departures, COUNTER_CHUNK)):
            for carrier, count in sorted(Counter(d.carrier for d in chunk).items()):
                key = f"demo-{chunk_no}-{carrier}"
                futures[pool.submit(send_counter, handlers, carrier, count, key, stats)] = 0
        for future in as_completed(futures):
            try:
                future.result()
            except Exception as exc:
                stats.error(f"ingest task raised {exc!r}")
            if on_progress is not None and futures[future]:
                on_progress(futures[future])
    return stats
