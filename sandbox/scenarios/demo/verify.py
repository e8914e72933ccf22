"""Verification: read everything back through the query handler and compare with the source.

Page by page with cursors: for every origin the whole year and a sample of single days
(the DST change days included), ascending and descending (:func:`plan_reads`). Every
read must equal the source exactly: same events, same order, no duplicates, nothing
missing (:func:`compare`). Every carrier counter must equal the source total
(:func:`check_counters`); :func:`shard_counts` reads each key's shard count.
"""

from __future__ import annotations

import os
import random
import sys
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from dynashard.core.keys import format_ts
from sandbox.harness.dataset import (
    CARRIER_COUNTER,
    DST_DAYS,
    Departure,
    iso_seconds,
    local_day_window,
)
from sandbox.harness.delivery import MAX_RECEIVES
from sandbox.harness.handlers import Handlers, api_call

#: Page size of the year reads (the API's maximum), and the largest of the single-day reads.
PAGE_LIMIT = 1000
DAY_PAGE_LIMIT = 50
#: Single days read per origin (plus the two DST change days when present).
DAYS_PER_ORIGIN = 4


@dataclass(frozen=True)
class ReadSpec:
    """One read: a key, a window ``[start, end)`` (UTC) and an order."""

    key: str
    label: str
    start: datetime
    end: datetime
    descending: bool
    limit: int


@dataclass
class ReadResult:
    """The outcome of one read compared with the source."""

    spec: ReadSpec
    items: int = 0
    pages: int = 0
    expected: int = 0
    missing: int = 0
    unexpected: int = 0
    different: int = 0
    misordered: int = 0
    duplicates: int = 0
    error: str | None = None

    @property
    def mismatches(self) -> int:
        """int: Missing + unexpected + different + misordered items (+1 on error)."""
        return (
            self.missing
            + self.unexpected
            + self.different
            + self.misordered
            + (1 if self.error else 0)
        )


def read_all(
    handlers: Handlers,
    spec: ReadSpec,
    on_page: Callable[[int], None] | None = None,
) -> tuple[list[dict[str, Any]], int, str | None]:
    """Read a window page by page through the query handler, following cursors.

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    spec : ReadSpec
        What to read.
    on_page : callable, optional
        Called with the number of items of each page read (the progress bar's step:
        once per page, not per item).

    Returns
    -------
    tuple of (list of dict, int, str or None)
        Items in the order returned, pages read, and an error (non-200 answer, or a 503
        still answered after ``MAX_RECEIVES`` tries with back-off) or None.
    """
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    pages = 0
    while True:
        query = {
            "key": spec.key,
            "from": iso_seconds(spec.start),
            "to": iso_seconds(spec.end),
            "limit": str(spec.limit),
            "order": "desc" if spec.descending else "asc",
        }
        if cursor:
            query["cursor"] = cursor
        status, body = api_call(handlers, "query", "GET", "/events", query=query)
        for attempt in range(1, MAX_RECEIVES):
            if status != 503:
                break
            # A throttled read (503, Retry-After) is asked again after a back-off, as a
            # client does; the same page, with the same cursor.
            time.sleep(min(2.0, 0.25 * 2 ** (attempt - 1)))
            status, body = api_call(handlers, "query", "GET", "/events", query=query)
        pages += 1
        if status != 200 or not isinstance(body, dict):
            return items, pages, f"GET /events page {pages} answered {status}: {str(body)[:300]}"
        page = body.get("items") or []
        items.extend(page)
        if on_page is not None:
            on_page(len(page))
        cursor = body.get("cursor")
        if not cursor:
            return items, pages, None
        if pages > 10_000:
            return items, pages, "more than 10,000 pages: the cursor does not advance"


def compare(
    spec: ReadSpec, got: list[dict[str, Any]], expected: list[dict[str, Any]]
) -> ReadResult:
    """Compare a read with the expected events.

    Parameters
    ----------
    spec : ReadSpec
        The read.
    got : list of dict
        Items returned, in order.
    expected : list of dict
        Source events in the order the read must return them.

    Returns
    -------
    ReadResult
        Counts of missing, unexpected, different (same id, other content), misordered
        (positions where the common items' order differs) and duplicate items.
    """
    result = ReadResult(spec=spec, items=len(got), expected=len(expected))
    if got == expected:
        return result
    got_ids = [str(item.get("id")) for item in got]
    exp_by_id = {str(e["id"]): e for e in expected}
    seen: set[str] = set()
    unique_got: list[dict[str, Any]] = []
    for event_id, item in zip(got_ids, got, strict=True):
        if event_id in seen:
            result.duplicates += 1
            continue
        seen.add(event_id)
        unique_got.append(item)
    result.missing = sum(1 for event_id in exp_by_id if event_id not in seen)
    result.unexpected = sum(1 for event_id in seen if event_id not in exp_by_id)
    result.different = sum(
        1
        for item in unique_got
        if str(item.get("id")) in exp_by_id and item != exp_by_id[str(item.get("id"))]
    )
    common_got = [str(i.get("id")) for i in unique_got if str(i.get("id")) in exp_by_id]
    common_exp = [str(e["id"]) for e in expected if str(e["id"]) in seen]
    result.misordered = sum(1 for a, b in zip(common_got, common_exp, strict=True) if a != b)
    return result


def plan_reads(departures: Sequence[Departure], seed: int = 2013) -> list[ReadSpec]:
    """Plan the read-back: per origin the whole year and sampled days, both orders.

    Parameters
    ----------
    departures : sequence of Departure
        The source.
    seed : int
        Seed of the day sample.

    Returns
    -------
    list of ReadSpec
        Year reads (limit 1,000) and day reads (limit at most 50 and about a third of
        the day's flights, so that a day takes several pages), ascending and descending.
    """
    rng = random.Random(seed)
    year_start, _ = local_day_window(date(2013, 1, 1))
    _, year_end = local_day_window(date(2013, 12, 31))
    specs: list[ReadSpec] = []
    days_by_key: dict[str, set[date]] = {}
    day_counts: Counter[tuple[str, date]] = Counter()
    for d in departures:
        days_by_key.setdefault(d.key, set()).add(d.local_day)
        day_counts[(d.key, d.local_day)] += 1
    for key in sorted(days_by_key):
        for descending in (False, True):
            specs.append(ReadSpec(key, "year", year_start, year_end, descending, PAGE_LIMIT))
        days = sorted(days_by_key[key])
        chosen = set(rng.sample(days, min(DAYS_PER_ORIGIN, len(days))))
        chosen.update(day for day in DST_DAYS if day in days_by_key[key])
        for day in sorted(chosen):
            start, end = local_day_window(day)
            # Small pages, so that every day read crosses page boundaries (a sample has
            # few flights a day).
            limit = max(2, min(DAY_PAGE_LIMIT, day_counts[(key, day)] // 3))
            for descending in (False, True):
                specs.append(ReadSpec(key, day.isoformat(), start, end, descending, limit))
    return specs


def expected_for(spec: ReadSpec, by_key: dict[str, list[Departure]]) -> list[dict[str, Any]]:
    """Return the source events a read must return, in its order.

    Parameters
    ----------
    spec : ReadSpec
        The read.
    by_key : dict of str to list of Departure
        Source departures per key, sorted by ``(ts, id)``.

    Returns
    -------
    list of dict
        Events with ``start <= ts < end``, ascending or descending.
    """
    lo, hi = format_ts(spec.start), format_ts(spec.end)
    deps = by_key.get(spec.key, [])
    # Sorted by (ts, id), so the events with lo <= ts < hi are one run of the list: two
    # binary searches instead of a scan of the key's every departure per read (3.8 s of
    # the full data set's read-back, before the first read).
    first = bisect_left(deps, lo, key=_ts_of)
    last = bisect_left(deps, hi, lo=first, key=_ts_of)
    events = [d.event for d in deps[first:last]]
    return events[::-1] if spec.descending else events


def _ts_of(departure: Departure) -> str:
    return str(departure.event["ts"])


def read_back(
    handlers: Handlers,
    departures: Sequence[Departure],
    workers: int,
    on_done: Callable[[ReadResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_page: Callable[[int], None] | None = None,
    processes: int = 0,
) -> list[ReadResult]:
    """Run every planned read in parallel and compare each with the source.

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    departures : sequence of Departure
        The source.
    workers : int
        Concurrent reads (threads of this process; with ``processes``, unused).
    on_done : callable, optional
        Called with each read's result as it finishes (the progress line).
    on_start : callable, optional
        Called once, before the first read, with the number of items the reads must
        return in all (the progress bar's total).
    on_page : callable, optional
        Called with the item count of every page read, from the reading threads (with
        ``processes``: once per read, with its item count).
    processes : int
        0: read in threads of this process. Else read in that many processes, each
        with the query function's own execution environments (:func:`read_in_processes`):
        this process serializes API invocations (``sandbox.local_aws.lambda_runtime``) and holds
        one GIL, whereas Lambda runs concurrent invocations in environments of their
        own. The processes inherit the environment (the functions' settings), so they
        read the same tables through the same endpoint; their invocations are added to
        ``handlers.invocations``.

    Returns
    -------
    list of ReadResult
        One per read, in plan order.
    """
    by_key: dict[str, list[Departure]] = {}
    for d in departures:
        by_key.setdefault(d.key, []).append(d)
    for deps in by_key.values():
        deps.sort(key=lambda d: d.order_key)
    specs = plan_reads(departures)
    # The expected events of every read, worked out before the reads (not after each):
    # the same work, and their count is the progress bar's total.
    expected = [expected_for(spec, by_key) for spec in specs]
    if on_start is not None:
        on_start(sum(len(e) for e in expected))

    if processes > 0:
        results = read_in_processes(list(zip(specs, expected, strict=True)), processes)
        for result, invocations in results:
            handlers.count("query", invocations)
            if on_page is not None:
                on_page(result.items)
            if on_done is not None:
                on_done(result)
        return [result for result, _ in results]

    def run(job: tuple[ReadSpec, list[dict[str, Any]]]) -> ReadResult:
        result = read_and_compare(handlers, job, on_page)
        if on_done is not None:
            on_done(result)
        return result

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="read") as pool:
        return list(pool.map(run, zip(specs, expected, strict=True)))


#: The query function's handlers of a reading process (:func:`read_in_processes`).
_PROCESS_HANDLERS: list[Handlers] = []


def _start_reading_process(log_path: str | None) -> None:
    """Initialize a reading process: its function output to the demo's log, its handlers."""
    import warnings

    if log_path is not None:
        sys.stdout = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    _PROCESS_HANDLERS.append(Handlers.load())


def read_and_compare(
    handlers: Handlers,
    job: tuple[ReadSpec, list[dict[str, Any]]],
    on_page: Callable[[int], None] | None = None,
) -> ReadResult:
    """Run one read through the query handler, page by page, and check it.

    Parameters
    ----------
    handlers : Handlers
        The functions' handlers (the query handler serves every page).
    job : tuple of (ReadSpec, list of dict)
        The read and the events it must return, in order.
    on_page : callable, optional
        Called as :func:`read_all` calls it, once per page.

    Returns
    -------
    ReadResult
        :func:`compare`'s verdict, with the pages read and the error that ended the
        read, if any.
    """
    spec, wanted = job
    got, pages, error = read_all(handlers, spec, on_page)
    result = compare(spec, got, wanted)
    result.pages, result.error = pages, error
    return result


def _read_in_this_process(job: tuple[ReadSpec, list[dict[str, Any]]]) -> tuple[ReadResult, int]:
    handlers = _PROCESS_HANDLERS[0]
    before = handlers.invocations["query"]
    result = read_and_compare(handlers, job)
    return result, handlers.invocations["query"] - before


def read_in_processes(
    jobs: Sequence[tuple[ReadSpec, list[dict[str, Any]]]], processes: int
) -> list[tuple[ReadResult, int]]:
    """Run reads in ``processes`` fresh processes (spawned), largest first.

    Each process loads the handlers (:meth:`Handlers.load`) with the environment it
    inherits, reads through the query handler and compares with the expected events it
    is sent; only the small :class:`ReadResult` comes back.

    Parameters
    ----------
    jobs : sequence of (ReadSpec, list of dict)
        Each read and the events it must return, in its order.
    processes : int
        Reading processes, >= 1.

    Returns
    -------
    list of (ReadResult, int)
        Per job, in the order given: the result and the query invocations it took.

    Raises
    ------
    concurrent.futures.process.BrokenProcessPool
        If a reading process died (the act fails with it, never with a short read).
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    log_path = getattr(sys.stdout, "name", None)
    if not isinstance(log_path, str) or not os.path.isfile(log_path):
        log_path = None
    order = sorted(range(len(jobs)), key=lambda i: -len(jobs[i][1]))
    with ProcessPoolExecutor(
        max_workers=processes,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_reading_process,
        initargs=(log_path,),
    ) as pool:
        futures = {i: pool.submit(_read_in_this_process, jobs[i]) for i in order}
        return [futures[i].result() for i in range(len(jobs))]


def check_counters(
    handlers: Handlers, departures: Sequence[Departure]
) -> dict[str, dict[str, int]]:
    """Read every carrier counter and compare with the source totals.

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    departures : sequence of Departure
        The source.

    Returns
    -------
    dict
        Counter name -> ``{"expected", "value", "shards"}`` (``value`` -1 on a failed read).
    """
    totals = Counter(d.carrier for d in departures)
    out: dict[str, dict[str, int]] = {}
    for carrier, expected in sorted(totals.items()):
        name = CARRIER_COUNTER.format(carrier=carrier)
        status, body = api_call(
            handlers, "query", "GET", "/counters/{name}", path_parameters={"name": name}
        )
        ok = status == 200 and isinstance(body, dict)
        out[name] = {
            "expected": expected,
            "value": int(body["value"]) if ok else -1,
            "shards": int(body.get("shards", 0)) if ok else 0,
        }
    return out


def shard_counts(handlers: Handlers, keys: Sequence[str]) -> dict[str, int]:
    """Read each key's shard count through ``GET /shards/{key}``.

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    keys : sequence of str
        Logical keys.

    Returns
    -------
    dict of str to int
        Key -> ``number_of_shards`` (-1 when the read failed).
    """
    out: dict[str, int] = {}
    for key in keys:
        status, body = api_call(
            handlers, "query", "GET", "/shards/{key}", path_parameters={"key": key}
        )
        ok = status == 200 and isinstance(body, dict)
        out[key] = int(body["number_of_shards"]) if ok else -1
    return out
