"""An open-loop replay: events offered on a stated schedule, whatever the writes answer.

A producer that sends as fast as it is acknowledged saturates whatever capacity it is
given, so under it "throughput recovered" means nothing and the load a key needs is
unknown. Here each logical key is offered its events, in their real order, at a stated
rate (events per emulated second), from the act's start, independent of how fast the
machine is: the count each key needs is then known in advance,
``N* = ceil(offered WCU/s / (partition limit x target utilization))``.

Deliveries go as SQS batches to the ingest function's SQS handler, one batch in
``api_every`` as ``POST /events`` to its API handler. The records a delivery reports as
failed (``batchItemFailures``, or a 503's ``failed`` list) come back after the queue's
visibility timeout, as SQS redelivers them, on top of the schedule, not instead of it;
after ``max_receives`` deliveries a record counts as failed (it would be in the DLQ).

The replay measures how late each scheduled batch started. When the machine cannot keep
to the schedule (a batch starts more than ``max_lag_s`` emulated seconds late), the act
says so as a failure of its own: this machine could not offer the load.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sandbox.harness.handlers import Handlers, api_call
from sandbox.local_aws.aws_events import batch_item_failures, sqs_event, sqs_record

if TYPE_CHECKING:
    from sandbox.harness.dataset import Departure
    from sandbox.harness.delivery import IngestStats


@dataclass(frozen=True)
class OfferSchedule:
    """Offered load per logical key: a constant rate from the act's start.

    Parameters
    ----------
    rates : mapping of str to float
        Logical key -> events per emulated second, ``> 0``.

    Raises
    ------
    ValueError
        If a rate is not positive.

    Examples
    --------
    >>> OfferSchedule({"K": 4.0}).due_s("K", 2)
    0.5
    """

    rates: Mapping[str, float]

    def __post_init__(self) -> None:
        bad = {k: r for k, r in self.rates.items() if not r > 0}
        if bad:
            raise ValueError(f"rates must be > 0 events/s, got {bad}")

    def due_s(self, key: str, index: int) -> float:
        """Return when the ``index``-th event (0-based) of a key is due.

        Parameters
        ----------
        key : str
            Logical key.
        index : int
            The event's position among the key's events, ``>= 0``.

        Returns
        -------
        float
            Emulated seconds after the act's start.
        """
        return index / self.rates[key]

    def dues(self, departures: Sequence[Departure]) -> list[float]:
        """Return each departure's due time, its key's events taken in replay order.

        Parameters
        ----------
        departures : sequence of Departure
            In replay order.

        Returns
        -------
        list of float
            Emulated seconds after the act's start, one per departure.
        """
        position: Counter[str] = Counter()
        dues = []
        for d in departures:
            dues.append(self.due_s(d.key, position[d.key]))
            position[d.key] += 1
        return dues


def target_shards(offered_wcu_per_s: float, partition_wcu: float, target_utilization: float) -> int:
    """Return ``N*``, the shard count a key offered a load needs.

    Parameters
    ----------
    offered_wcu_per_s : float
        Offered write load, WCU per emulated second.
    partition_wcu : float
        Key-range write limit of one partition key value, WCU per emulated second.
    target_utilization : float
        Share of the limit each shard is planned to carry, in (0, 1].

    Returns
    -------
    int
        ``ceil(offered / (limit x utilization))``, at least 1 (the planner's formula,
        :func:`dynashard.planning.shards.plan_shard_count`).

    Examples
    --------
    >>> target_shards(300.0, 100.0, 0.5)
    6
    """
    return max(1, math.ceil(offered_wcu_per_s / (partition_wcu * target_utilization) - 1e-9))


@dataclass
class Delivery:
    """One delivery of records to an ingest handler.

    Attributes
    ----------
    due_wall : float
        Monotonic wall time it is due.
    events : list of dict
        The events, one per record.
    via : str
        ``sqs`` or ``api``.
    receive : int
        The records' delivery number, 1 for the first.
    scheduled : bool
        Whether it is a first delivery of the schedule (its lateness is measured).
    """

    due_wall: float
    events: list[dict[str, Any]]
    via: str
    receive: int = 1
    scheduled: bool = True


@dataclass
class OpenLoopStats:
    """Per-key counts and the schedule's lateness (thread-safe through its lock).

    Attributes
    ----------
    offered_by_key : Counter
        Events offered (first deliveries started) per logical key.
    written_by_key : Counter
        Events acknowledged per logical key.
    max_lag_s : float
        Largest lateness of a scheduled delivery, emulated seconds.
    late_deliveries : int
        Scheduled deliveries that started more than the margin late.
    late_by_via : Counter
        Those late deliveries by path (``sqs``, ``api``).
    scheduled_deliveries : int
        Scheduled deliveries started.
    """

    offered_by_key: Counter[str] = field(default_factory=Counter)
    written_by_key: Counter[str] = field(default_factory=Counter)
    max_lag_s: float = 0.0
    late_deliveries: int = 0
    late_by_via: Counter[str] = field(default_factory=Counter)
    scheduled_deliveries: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def offered(self) -> int:
        """Return the events offered so far, all keys.

        Returns
        -------
        int
            First deliveries started.
        """
        with self._lock:
            return sum(self.offered_by_key.values())

    def key_counts(self) -> dict[str, tuple[int, int]]:
        """Return ``{key: (offered, written)}`` so far.

        Returns
        -------
        dict of str to tuple of (int, int)
            Cumulative events per logical key.
        """
        with self._lock:
            keys = sorted(set(self.offered_by_key) | set(self.written_by_key))
            return {k: (self.offered_by_key[k], self.written_by_key[k]) for k in keys}


def plan_deliveries(
    departures: Sequence[Departure],
    schedule: OfferSchedule,
    start_wall: float,
    speed: float,
    batch_size: int,
    api_every: int,
    window_s: float = 1.0,
) -> list[Delivery]:
    """Cut the replay into deliveries due on the schedule.

    Each key's events keep their order and are due at the key's rate; all keys' events
    are merged by due time and cut into batches as Lambda's poller fills them: a batch
    closes at ``batch_size`` records or when its first record has waited ``window_s``
    (``MaximumBatchingWindowInSeconds``), and is due when its last record is. One batch
    in ``api_every`` goes to the API.

    Parameters
    ----------
    departures : sequence of Departure
        In replay order.
    schedule : OfferSchedule
        The rates.
    start_wall : float
        Monotonic wall time of the act's start (emulated second 0).
    speed : float
        Emulated seconds per wall second.
    batch_size : int
        Records per delivery.
    api_every : int
        One delivery in this many goes through ``POST /events``; 0: none.
    window_s : float
        Batching window, emulated seconds.

    Returns
    -------
    list of Delivery
        In due order.
    """
    timed = [
        (due, order, d.event)
        for order, (d, due) in enumerate(zip(departures, schedule.dues(departures), strict=True))
    ]
    timed.sort(key=lambda t: (t[0], t[1]))
    batches: list[list[tuple[float, int, dict[str, Any]]]] = []
    for entry in timed:
        if batches and len(batches[-1]) < batch_size and entry[0] - batches[-1][0][0] < window_s:
            batches[-1].append(entry)
        else:
            batches.append([entry])
    deliveries = [
        Delivery(
            due_wall=start_wall + chunk[-1][0] / speed,
            events=[e for _, _, e in chunk],
            via="api" if api_every and n % api_every == 0 else "sqs",
        )
        for n, chunk in enumerate(batches)
    ]
    return deliveries


class OpenLoopReplay:
    """Offer deliveries at their due times from worker pools; redeliver what failed.

    Parameters
    ----------
    handlers : Handlers
        The real handlers.
    stats : IngestStats
        The act's counts (``offered`` is set by the caller; ``delivered``, ``written``,
        ``failed``, ``redelivered``, ``via_sqs``, ``via_api`` are added here).
    speed : float
        Emulated seconds per wall second.
    visibility_timeout_s : float
        Emulated seconds before a failed record is delivered again.
    max_receives : int
        Deliveries of a record before it counts as failed (``maxReceiveCount``).
    max_lag_s : float
        Emulated seconds a scheduled delivery may start late before the machine is
        judged unable to offer the load.
    workers : int
        Concurrent SQS invocations (Lambda scales them; threads here).
    api_workers : int
        Concurrent API clients.
    """

    def __init__(
        self,
        handlers: Handlers,
        stats: IngestStats,
        *,
        speed: float,
        visibility_timeout_s: float,
        max_receives: int,
        max_lag_s: float,
        workers: int = 48,
        api_workers: int = 8,
    ) -> None:
        self.handlers = handlers
        self.stats = stats
        self.speed = speed
        self.visibility_timeout_s = visibility_timeout_s
        self.max_receives = max_receives
        self.max_lag_s = max_lag_s
        self.workers = workers
        self.api_workers = api_workers
        self.loop_stats = OpenLoopStats()
        self._redeliveries: list[tuple[float, int, Delivery]] = []
        self._lock = threading.Lock()
        self._ticket = itertools.count()
        self._in_flight = 0

    # --- one delivery ---------------------------------------------------------------
    def _deliver(self, delivery: Delivery, on_progress: Callable[[int], None] | None) -> None:
        now = time.monotonic()
        if delivery.scheduled:
            lag = max(0.0, (now - delivery.due_wall) * self.speed)
            with self.loop_stats._lock:
                ls = self.loop_stats
                ls.scheduled_deliveries += 1
                ls.max_lag_s = max(ls.max_lag_s, lag)
                if lag > self.max_lag_s:
                    ls.late_deliveries += 1
                    ls.late_by_via[delivery.via] += 1
                ls.offered_by_key.update(e["key"] for e in delivery.events)
            self.stats.add(**{f"via_{delivery.via}": len(delivery.events)})
        self.stats.add(delivered=len(delivery.events))
        try:
            failed_ids = (
                self._send_sqs(delivery) if delivery.via == "sqs" else self._send_api(delivery)
            )
        except Exception as exc:  # the whole delivery returns to the queue
            self.stats.error(f"{delivery.via} delivery raised {exc!r}")
            failed_ids = {e["id"] for e in delivery.events}
        written = [e for e in delivery.events if e["id"] not in failed_ids]
        failed = [e for e in delivery.events if e["id"] in failed_ids]
        with self.loop_stats._lock:
            self.loop_stats.written_by_key.update(e["key"] for e in written)
        self.stats.add(written=len(written))
        if on_progress is not None and delivery.scheduled:
            on_progress(len(delivery.events))
        if not failed:
            return
        if delivery.receive >= self.max_receives:
            self.stats.add(failed=len(failed))
            self.stats.error(
                f"{len(failed)} records still failing after {self.max_receives} receives"
            )
            return
        self.stats.add(redelivered=len(failed))
        again = Delivery(
            due_wall=time.monotonic() + self.visibility_timeout_s / self.speed,
            events=failed,
            via=delivery.via,
            receive=delivery.receive + 1,
            scheduled=False,
        )
        with self._lock:
            heapq.heappush(self._redeliveries, (again.due_wall, next(self._ticket), again))

    def _send_sqs(self, delivery: Delivery) -> set[str]:
        records = [
            sqs_record(json.dumps(e), message_id=e["id"], receive_count=delivery.receive)
            for e in delivery.events
        ]
        failed = batch_item_failures(self.handlers.invoke("sqs", sqs_event(records)))
        unknown = failed - {e["id"] for e in delivery.events}
        if unknown:
            self.stats.error(f"batchItemFailures named unknown message ids {sorted(unknown)[:3]}")
        return failed

    def _send_api(self, delivery: Delivery) -> set[str]:
        status, body = api_call(
            self.handlers, "api", "POST", "/events", body={"events": delivery.events}
        )
        if status == 200:
            return set()
        if status == 503 and isinstance(body, dict) and "failed" in body:
            return {f["id"] for f in body["failed"]}
        self.stats.error(f"POST /events answered {status}: {str(body)[:300]}")
        return {e["id"] for e in delivery.events}

    # --- the loop ---------------------------------------------------------------------
    def run(
        self,
        deliveries: Sequence[Delivery],
        extra: Sequence[tuple[float, Callable[[], Any]]] = (),
        on_progress: Callable[[int], None] | None = None,
    ) -> OpenLoopStats:
        """Offer every delivery at its due time, then wait for the redeliveries.

        Parameters
        ----------
        deliveries : sequence of Delivery
            In due order (:func:`plan_deliveries`).
        extra : sequence of (float, callable)
            Other calls due at a monotonic wall time (the counter increments), run on
            the API pool.
        on_progress : callable, optional
            Called with the number of events of each finished scheduled delivery.

        Returns
        -------
        OpenLoopStats
            Per-key counts and the schedule's lateness.
        """
        timed: list[tuple[float, int, Callable[[], Any], str]] = [
            (d.due_wall, n, self._task(d, on_progress), d.via) for n, d in enumerate(deliveries)
        ]
        timed += [(due, len(timed) + n, fn, "api") for n, (due, fn) in enumerate(extra)]
        timed.sort(key=lambda t: (t[0], t[1]))
        futures: list[Future[Any]] = []
        with (
            ThreadPoolExecutor(self.workers, thread_name_prefix="sqs") as sqs_pool,
            ThreadPoolExecutor(self.api_workers, thread_name_prefix="api") as api_pool,
        ):
            pools = {"sqs": sqs_pool, "api": api_pool}
            index = 0
            while True:
                now = time.monotonic()
                while index < len(timed) and timed[index][0] <= now:
                    _, _, fn, via = timed[index]
                    futures.append(pools[via].submit(fn))
                    index += 1
                for again in self._due_redeliveries(now):
                    futures.append(pools[again.via].submit(self._task(again, on_progress)))
                futures = [f for f in futures if not f.done() or self._check(f)]
                pending = bool(self._redeliveries) or bool(futures)
                if index >= len(timed) and not pending:
                    break
                next_due = timed[index][0] if index < len(timed) else now + 0.05
                with self._lock:
                    if self._redeliveries:
                        next_due = min(next_due, self._redeliveries[0][0])
                time.sleep(min(0.05, max(0.0, next_due - time.monotonic())))
        return self.loop_stats

    def _task(
        self, delivery: Delivery, on_progress: Callable[[int], None] | None
    ) -> Callable[[], None]:
        return lambda: self._deliver(delivery, on_progress)

    def _due_redeliveries(self, now: float) -> list[Delivery]:
        due = []
        with self._lock:
            while self._redeliveries and self._redeliveries[0][0] <= now:
                due.append(heapq.heappop(self._redeliveries)[2])
        return due

    def _check(self, future: Future[Any]) -> bool:
        """Record the error of a finished task (counted, never dropped); drop it."""
        exc = future.exception()
        if exc is not None:
            self.stats.error(f"ingest task raised {exc!r}")
        return False
