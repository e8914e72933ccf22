"""Hedged shard queries: a Query still unanswered after the recent p95 is sent again.

A scatter-gather page waits for its slowest shard: with N Queries in parallel the
page's latency is the maximum of N draws, so its p99 grows with N even when the
median does not. Dean and Barroso's remedy ("The Tail at Scale", Communications of
the ACM 56(2), 2013, "hedged requests") is to send a second copy of a request that has
been outstanding for longer than the 95th percentile of its kind, use whichever answer
comes first and cancel the other: the tail is cut for a few per cent more load.

A shard Query is idempotent (a read, with the same ``ExclusiveStartKey`` in both
copies), so both copies answer the same request and a page is the same whichever wins
(invariants 4 and 5 are unchanged). :class:`QueryHedger` keeps, per table:

- the recent latency of its Queries (:class:`LatencyWindow`: the last ``window``
  successful Queries, timed in the worker thread from the moment the call starts, so
  time queued in the executor does not count), and hedges nothing before
  ``min_samples`` of them;
- a budget (:class:`HedgeBudget`, a token bucket): each Query earns ``budget`` of a
  hedge, up to ``burst``; a hedge spends one. Over any stretch of ``q`` Queries at
  most ``budget * q + burst`` hedges are sent, so the read units spent on hedges stay
  about ``budget`` of the Queries' (a hedge reads what its Query reads);
- figures (:class:`HedgeStats`): Queries, hedges sent, won, denied by the budget,
  and the read units the hedges consumed.

Hedges are fired by whichever thread waits for a Query's answer (the merging thread
of a read): while it waits it wakes at the next hedge deadline of any outstanding
Query of the table and sends the hedges that are due, so no timer thread is needed and
a read's stragglers are hedged on time even while it waits on another shard.

Hedging needs idle worker threads: a hedge is sent only while no Query of the hedger
waits in the executor's queue (a hedge queued behind other Queries would not cut the
tail, and would slow them). Size the executor (``max_workers``) to the fan-out plus a
few, and the client's ``max_pool_connections`` to the workers
(:func:`dynashard.facade.make_client` does).

Error semantics, decided here: a copy's error never wins while the other copy may
still answer. A failed first copy with a hedge in flight waits for the hedge; a failed
(throttled, say) hedge is ignored while the first copy runs; only when every copy sent
has failed does the Query fail, with the first copy's error (the one the read would
have raised without hedging). A first copy that fails before any hedge was sent fails
at once: hedging is not a retry (botocore's retry policy already ran inside the call).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from dynashard.core.capacity import query_read_units, wire_item_size
from dynashard.errors import InvalidInputError

#: Successful Queries between two recomputations of the window's quantile (a sort of
#: ``window`` floats): the threshold moves slowly, and a read of 64 shards would
#: otherwise sort it 64 times.
_REFRESH_EVERY: Final = 16


@dataclass(frozen=True)
class HedgePolicy:
    """When a shard Query is hedged, and how many hedges a table may send.

    Parameters
    ----------
    quantile : float
        The latency quantile after which a Query still unanswered is sent again, in
        (0, 1); 0.95 as in "The Tail at Scale" (Dean and Barroso, CACM 2013).
    window : int
        Successful Queries the latency estimate covers (the most recent ones).
    min_samples : int
        Queries timed before the first hedge: no hedging on a cold estimate.
    budget : float
        Hedges earned per Query sent, in [0, 1]: the long-run bound on hedges (and so
        on the read units they cost) as a fraction of the Queries.
    burst : float or None
        Hedges that may be banked, at least 1; ``budget * window`` when None.
    min_delay_s : float
        Smallest hedge delay, seconds, whatever the estimate.

    Raises
    ------
    InvalidInputError
        If a value is out of range (field ``hedging``).
    """

    quantile: float = 0.95
    window: int = 256
    min_samples: int = 32
    budget: float = 0.05
    burst: float | None = None
    min_delay_s: float = 0.0

    def __post_init__(self) -> None:
        problems = [
            (not 0.0 < self.quantile < 1.0, f"quantile must be in (0, 1), got {self.quantile}"),
            (self.window < 1, f"window must be >= 1, got {self.window}"),
            (
                not 1 <= self.min_samples <= self.window,
                f"min_samples must be within 1..window, got {self.min_samples}",
            ),
            (not 0.0 <= self.budget <= 1.0, f"budget must be in [0, 1], got {self.budget}"),
            (
                self.burst is not None and self.burst < 1.0,
                f"burst must be >= 1, got {self.burst}",
            ),
            (self.min_delay_s < 0.0, f"min_delay_s must be >= 0, got {self.min_delay_s}"),
        ]
        for bad, message in problems:
            if bad:
                raise InvalidInputError("hedging", message)

    @property
    def bucket_size(self) -> float:
        """float: The hedges the budget may bank (``burst``, or ``budget * window``)."""
        if self.burst is not None:
            return self.burst
        return max(1.0, self.budget * self.window)


@dataclass(frozen=True)
class HedgeStats:
    """What a :class:`QueryHedger` has done so far (cumulative).

    Attributes
    ----------
    queries : int
        Queries sent through the hedger (first copies).
    hedges : int
        Second copies sent.
    hedges_won : int
        Hedges whose answer was used (they answered first, or the first copy failed).
    hedges_denied : int
        Queries past their deadline that the budget refused to hedge.
    hedge_read_units : float
        RCU the hedges consumed: each answered hedge's ``ConsumedCapacity`` when the
        request asked for it, else DynamoDB's Query charge for the items it returned
        (:func:`~dynashard.core.capacity.query_read_units`); a hedge that failed or was
        never sent costs nothing.
    threshold_ms : float or None
        The current hedge delay (the window's quantile), milliseconds; None before
        ``min_samples`` Queries were timed.
    """

    queries: int = 0
    hedges: int = 0
    hedges_won: int = 0
    hedges_denied: int = 0
    hedge_read_units: float = 0.0
    threshold_ms: float | None = None


class LatencyWindow:
    """The latency of a table's recent Queries: a bounded window and its quantile.

    Parameters
    ----------
    size : int
        Samples kept (the most recent).
    min_samples : int
        Samples needed before :meth:`quantile` answers.

    Examples
    --------
    >>> w = LatencyWindow(size=100, min_samples=10)
    >>> w.quantile(0.95) is None
    True
    >>> for ms in range(1, 101):
    ...     w.record(ms / 1000)
    >>> round(w.quantile(0.95) * 1000)
    95
    """

    def __init__(self, size: int, min_samples: int) -> None:
        self.samples: deque[float] = deque(maxlen=size)
        self.min_samples = min_samples
        self._lock = threading.Lock()
        self._cached: dict[float, float] = {}
        self._since = 0

    def record(self, seconds: float) -> None:
        """Add one Query's latency, seconds (thread-safe)."""
        with self._lock:
            self.samples.append(seconds)
            self._since += 1
            if self._since >= _REFRESH_EVERY or len(self.samples) <= self.min_samples:
                self._cached.clear()
                self._since = 0

    def quantile(self, q: float) -> float | None:
        """Return the ``q`` quantile of the window (nearest rank), seconds; None if cold.

        Recomputed every few samples, not on each one.
        """
        with self._lock:
            if len(self.samples) < self.min_samples:
                return None
            value = self._cached.get(q)
            if value is None:
                ordered = sorted(self.samples)
                value = ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]
                self._cached[q] = value
            return value


class HedgeBudget:
    """A token bucket of hedges: ``rate`` earned per Query, at most ``capacity`` banked.

    Not thread-safe by itself: :class:`QueryHedger` calls it under its lock.

    Examples
    --------
    >>> b = HedgeBudget(rate=0.5, capacity=1.0)
    >>> b.spend()
    False
    >>> b.earn(); b.earn(); b.earn()
    >>> b.spend(), b.spend()
    (True, False)
    """

    def __init__(self, rate: float, capacity: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self.tokens = 0.0

    def earn(self) -> None:
        """Credit one Query's share of a hedge."""
        self.tokens = min(self.capacity, self.tokens + self.rate)

    def spend(self) -> bool:
        """Take one hedge if the bucket holds one."""
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


def response_read_units(response: dict[str, Any], request: dict[str, Any]) -> float:
    """Return the RCU a Query's answer cost: its ``ConsumedCapacity``, else the rule's.

    Parameters
    ----------
    response : dict
        The Query's response.
    request : dict
        Its request (``ConsistentRead`` decides the rate, Developer Guide "Read
        consumption for Query").

    Returns
    -------
    float
        Read capacity units.
    """
    consumed = response.get("ConsumedCapacity")
    if isinstance(consumed, dict) and "CapacityUnits" in consumed:
        return float(consumed["CapacityUnits"])
    size = sum(wire_item_size(item) for item in response.get("Items", []))
    return query_read_units(size, consistent=bool(request.get("ConsistentRead")))


class HedgedQuery:
    """One shard Query and, when it runs late, its hedge: the first answer wins.

    Made by :meth:`QueryHedger.submit`; :meth:`result` and :meth:`cancel` are what the
    reader uses of a ``Future``. The copy that loses is cancelled if it has not started;
    a running boto3 call cannot be interrupted, so its answer is ignored when it comes
    (its read units are still spent, and a hedge's are counted).
    """

    def __init__(self, hedger: QueryHedger, run: Callable[[bool], dict[str, Any]]) -> None:
        self._hedger = hedger
        self._run = run
        #: When the first copy started in a worker (perf_counter), None while queued.
        self.started: float | None = None
        self.primary: Future[dict[str, Any]] | None = None
        self.hedge: Future[dict[str, Any]] | None = None
        #: The copy that answered successfully first, set by its done callback.
        self._first_ok: Future[dict[str, Any]] | None = None
        #: Set when a copy completes or a hedge is sent: the waiter looks again.
        self._changed = threading.Event()

    @property
    def hedged(self) -> bool:
        """bool: Whether a second copy was sent."""
        return self.hedge is not None

    def _copies(self) -> list[Future[dict[str, Any]]]:
        copies = [self.primary, self.hedge]  # the primary is set by submit, before any use
        return [copy for copy in copies if copy is not None]

    def _decided(self) -> Future[dict[str, Any]] | None:
        """Return the copy whose outcome is the Query's, or None while undecided."""
        if self._first_ok is not None:
            return self._first_ok
        copies = self._copies()
        for copy in copies:  # answered, its done callback not run yet
            if copy.done() and not copy.cancelled() and copy.exception() is None:
                return copy
        if all(f.done() for f in copies):
            return copies[0]  # every copy failed: the first copy's error
        return None

    def result(self) -> dict[str, Any]:
        """Wait for the first successful answer (sending due hedges meanwhile).

        Returns
        -------
        dict
            The Query's response, from whichever copy answered first.

        Raises
        ------
        Exception
            The first copy's error, once every copy sent has failed.
        """
        hedger = self._hedger
        while True:
            with hedger.lock:
                winner = self._decided()
                if winner is None:
                    self._changed.clear()
                else:  # answered: never hedge it from now on, even before its callback ran
                    hedger._open.pop(id(self), None)
            if winner is not None:
                break
            self._changed.wait(hedger.wake_in())
            hedger.fire_due()
        for loser in self._copies():
            if loser is not winner:
                loser.cancel()  # not started: never sent; running: its answer is ignored
        if winner is self.hedge and not winner.cancelled() and winner.exception() is None:
            hedger.count_won()
        return winner.result()

    def cancel(self) -> bool:
        """Drop the Query; True if no copy of it was sent (every copy cancelled unstarted)."""
        never_sent = all([f.cancel() for f in self._copies()])
        self._hedger.forget(self)
        return never_sent


class QueryHedger:
    """Per-table hedging of shard Queries: latency estimate, budget, figures.

    Share one per table across the readers of a process (the facade keeps one), so the
    estimate and the budget cover every read.

    Parameters
    ----------
    policy : HedgePolicy
        Quantile, window, budget.
    clock : callable
        Monotonic seconds (``time.perf_counter``); inject one in tests.
    """

    def __init__(
        self, policy: HedgePolicy | None = None, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.policy = policy if policy is not None else HedgePolicy()
        self.clock = clock
        self.latency = LatencyWindow(self.policy.window, self.policy.min_samples)
        self.lock = threading.Lock()
        self._budget = HedgeBudget(self.policy.budget, self.policy.bucket_size)
        #: Queries that may still be hedged: first copy sent, not answered, not hedged.
        self._open: dict[int, tuple[HedgedQuery, Executor]] = {}
        #: Copies submitted to an executor and not started (the pool is saturated).
        self._queued = 0
        self._queries = 0
        self._hedges = 0
        self._won = 0
        self._denied = 0
        self._hedge_units = 0.0

    def submit(
        self,
        executor: Executor,
        query: Callable[[dict[str, Any]], dict[str, Any]],
        request: dict[str, Any],
    ) -> HedgedQuery:
        """Send a Query on ``executor``; it is hedged if still unanswered past the delay.

        Parameters
        ----------
        executor : Executor
            The reader's worker pool; a hedge runs there too.
        query : callable
            Runs one Query (request -> response) in a worker thread; it must be
            idempotent (a read).
        request : dict
            The Query's arguments; both copies send it unchanged.

        Returns
        -------
        HedgedQuery
            Its ``result()`` is the first successful answer.
        """
        call: HedgedQuery

        def run(is_hedge: bool) -> dict[str, Any]:
            t0 = self.clock()
            with self.lock:
                self._queued -= 1
                if not is_hedge:
                    call.started = t0
            response = query(request)
            self.latency.record(self.clock() - t0)
            if is_hedge:
                units = response_read_units(response, request)
                with self.lock:
                    self._hedge_units += units
            return response

        call = HedgedQuery(self, run)
        with self.lock:
            self._queries += 1
            self._budget.earn()
            self._queued += 1
            call.primary = executor.submit(run, False)
            self._open[id(call)] = (call, executor)
        primary = call.primary
        primary.add_done_callback(partial(self._settled, call))
        return call

    def _settled(self, call: HedgedQuery, future: Future[dict[str, Any]]) -> None:
        """Done callback of a copy: note the first success; an answered Query is not hedged."""
        with self.lock:
            if future.cancelled():
                self._queued -= 1
            elif future.exception() is None and call._first_ok is None:
                call._first_ok = future
            if future is call.primary:
                self._open.pop(id(call), None)
            call._changed.set()

    def forget(self, call: HedgedQuery) -> None:
        """Stop considering ``call`` for a hedge (it was cancelled)."""
        with self.lock:
            self._open.pop(id(call), None)

    def count_won(self) -> None:
        """Count a hedge whose answer was used."""
        with self.lock:
            self._won += 1

    def _delay(self) -> float | None:
        threshold = self.latency.quantile(self.policy.quantile)
        return None if threshold is None else max(threshold, self.policy.min_delay_s)

    def wake_in(self) -> float | None:
        """Seconds until the next hedge of an open Query may be due; None: none will be."""
        delay = self._delay()
        if delay is None:
            return None
        now = self.clock()
        with self.lock:
            if not self._open:
                return None
            due = [
                delay if call.started is None else call.started + delay - now
                for call, _ in self._open.values()
            ]
        return max(0.0, min(due))

    def fire_due(self) -> None:
        """Send the hedges that are due, within the budget, while no copy is queued."""
        delay = self._delay()
        if delay is None:
            return
        now = self.clock()
        sent: list[tuple[HedgedQuery, Future[dict[str, Any]]]] = []
        with self.lock:
            for key, (call, executor) in list(self._open.items()):
                if call.primary is not None and call.primary.done():
                    del self._open[key]  # answered; its done callback has not run yet
                    continue
                if call.started is None or now < call.started + delay:
                    continue
                if self._queued > 0:  # the pool is saturated: a hedge would only queue
                    break
                del self._open[key]
                if not self._budget.spend():
                    self._denied += 1
                    continue
                self._hedges += 1
                self._queued += 1
                call.hedge = executor.submit(call._run, True)
                sent.append((call, call.hedge))
        for call, hedge in sent:  # outside the lock: a done future runs its callback at once
            hedge.add_done_callback(partial(self._settled, call))
            call._changed.set()

    def stats(self) -> HedgeStats:
        """Return the figures so far (see :class:`HedgeStats`)."""
        delay = self._delay()
        with self.lock:
            return HedgeStats(
                queries=self._queries,
                hedges=self._hedges,
                hedges_won=self._won,
                hedges_denied=self._denied,
                hedge_read_units=round(self._hedge_units, 3),
                threshold_ms=None if delay is None else round(delay * 1000.0, 3),
            )
