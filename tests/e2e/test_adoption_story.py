"""Issue 27 end to end: a small service's throttling log key is adopted in place and grown.

The story of the daily-bucketed-keys article (PK ``OPS_LOG``, SK ``{toISOString()}#{agent}``),
played on DynamoDB Local through the partition emulator (in process, scale 0.01: 10 WCU/s
per partition key):

1. The service (``examples/ops_log``) has a history under its one key and, as its load
   rises, writes until the key throttles; its writer counts every refusal.
2. dynashard is configured for the service's own table (``PK`` / ``SK``, the
   ``iso_ms_then_id`` codec, no GSI of its own, a flat payload) and adopts the key
   without copying an item, after surveying what the bare key holds.
3. New events go through dynashard, whose writer grows the key in-band on key-range
   throttling, while the old service keeps writing the bare key in its own shape.
4. Every read, during the cut-over and after it, is checked against this test's own
   record of what was acknowledged (not against library code): each item once, nothing
   acknowledged missing, in the table's order (UTF-8 bytes of the SK strings, both
   writers using ``{ms ISO}#{id}``), each with the data its writer wrote.

The figures (items, throttles, shard counts, reads) are printed in one line and written
to ``adoption-story.json`` in the test's temporary directory.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from dynashard import Dynashard, DynashardConfig, Event
from dynashard.core.keys import format_ts
from dynashard.core.retry import Backoff
from dynashard.core.schema import ISO_MS_THEN_ID, Payload, TableSchema
from examples.ops_log.service import AGENTS, OPS_LOG, SEVERITIES, OpsLog, create_table, fill
from infra.table_specs import METADATA_TABLE
from sandbox.emulator import EmulatorConfig, InProcessEmulator
from sandbox.emulator.limits import ACCOUNT_TABLE_UNITS, PARTITION_RCU, Operation, Resource
from sandbox.engines.dynamodb_local import DynamoDBLocal
from sandbox.tables import create_tables, delete_tables

pytestmark = pytest.mark.e2e

#: 1,000 WCU/s per partition key -> 10 WCU/s: the service's burst reaches it at once.
SCALE = 0.01
#: Reads keep DynamoDB's real 3,000 RCU/s per key (and the table its real account quota):
#: this test's audit reads the whole history dozens of times, far more than the service's
#: dashboard would; the story is the write ceiling.
READ_CEILING = PARTITION_RCU / SCALE
#: The service's table schema as dynashard is told it: its GSI1 is the service's own.
SCHEMA = TableSchema(
    partition_key="PK",
    sort_key="SK",
    sort_key_codec=ISO_MS_THEN_ID,
    gsi_name=None,
    payload=Payload.FLAT,
)
HISTORY_START = datetime(2026, 6, 22, tzinfo=UTC)
#: Event time of the cut-over's first second; the story clock runs at wall speed from it.
CUTOVER_START = datetime(2026, 6, 22, 1, tzinfo=UTC)
HISTORY_ENTRIES = 400
BURST_ENTRIES = 45
#: The old writer's attempts per entry (its own retry loop, pausing RETRY_PAUSE_S x n).
OLD_ATTEMPTS = 6
RETRY_PAUSE_S = 0.05
#: During the cut-over: the old service's rate, and one rewrite of an entry it had
#: written (same time and agent, so the same SK) every REWRITE_EVERY entries.
OLD_RATE = 6.0
REWRITE_EVERY = 12
#: dynashard's ingest: INGEST_BATCH events every INGEST_TICK_S (40 events/s, 4 x a key).
INGEST_BATCH = 8
INGEST_TICK_S = 0.2
#: How late an ingested event may arrive (its time is up to this far behind the clock).
LATE_S = 2.0
COOLDOWN_S = 2.0
MAX_SHARDS = 16
#: The cut-over runs at least MIN_CUTOVER_S, until the key has grown to GROWN_TO and
#: READS_DURING reads were taken, and at most MAX_CUTOVER_S.
MIN_CUTOVER_S = 8.0
MAX_CUTOVER_S = 25.0
GROWN_TO = 4
READS_DURING = 6
THROTTLED = "ProvisionedThroughputExceededException"


def sk_of(event: dict[str, Any]) -> str:
    """Return the table's sort key of an event a read returned, from its time and id.

    Parameters
    ----------
    event : dict
        ``{"key", "id", "ts", "data"}``; ``ts`` fixed-width UTC ISO-8601 (microseconds).

    Returns
    -------
    str
        ``{ts to milliseconds}Z#{id}``, the form both writers store.
    """
    ts: str = event["ts"]
    return f"{ts[:23]}Z#{event['id']}"


@dataclass(frozen=True)
class Version:
    """One acknowledged write of a sort key: what a read must return for it.

    Attributes
    ----------
    id : str
        The event id a read gives (the service's agent, or dynashard's event id).
    ts : str
        Fixed-width UTC ISO-8601 time a read gives.
    data : dict
        The item's own attributes (the payload).
    origin : str
        ``legacy`` (the service's PutItem) or ``dynashard``.
    """

    id: str
    ts: str
    data: dict[str, Any]
    origin: str

    def as_read(self) -> tuple[str, str, str]:
        """Return ``(id, ts, data as canonical JSON)``, comparable with a read's item."""
        return self.id, self.ts, json.dumps(self.data, sort_keys=True)


@dataclass
class Model:
    """What was acknowledged, by sort key: the test's own record, shared by the threads.

    A later acknowledged put of a sort key replaces the earlier one (the table's rule);
    ``versions`` keeps every acknowledged version, for reads taken while a rewrite ran.
    """

    lock: threading.Lock = field(default_factory=threading.Lock)
    latest: dict[str, Version] = field(default_factory=dict)
    versions: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)

    def ack(self, sk: str, version: Version) -> None:
        """Record one acknowledged write of ``sk``.

        Parameters
        ----------
        sk : str
            The sort key written.
        version : Version
            What was written.
        """
        with self.lock:
            self.latest[sk] = version
            self.versions.setdefault(sk, set()).add(version.as_read())

    def ack_service_item(self, item: dict[str, Any]) -> None:
        """Record an item the service's PutItem wrote (typed JSON, as ``OpsLog.log`` returns).

        Parameters
        ----------
        item : dict
            ``PK``, ``SK``, ``agent``, ``latencyMs``, ``aiSeverity``.
        """
        sk = item["SK"]["S"]
        stamp, agent = sk.split("#", 1)
        data = {
            "agent": item["agent"]["S"],
            "latencyMs": int(item["latencyMs"]["N"]),
            "aiSeverity": item["aiSeverity"]["S"],
        }
        # A read gives the time the SK holds, to the millisecond, at dynashard's width.
        self.ack(sk, Version(agent, f"{stamp[:-1]}000Z", data, "legacy"))

    def ack_event(self, event: Event) -> None:
        """Record an event dynashard acknowledged.

        Parameters
        ----------
        event : Event
            The event written; its SK is its time to the millisecond, ``#``, its id.
        """
        ts = format_ts(event.ts)
        data = {k: int(v) if k == "latencyMs" else v for k, v in event.data.items()}
        self.ack(f"{ts[:23]}Z#{event.id}", Version(event.id, ts, data, "dynashard"))

    def snapshot(self) -> dict[str, tuple[str, str, str]]:
        """Return each SK acknowledged so far, its latest version (what a read begun now holds)."""
        with self.lock:
            return {sk: v.as_read() for sk, v in self.latest.items()}

    def count(self, origin: str) -> int:
        """Return how many sort keys hold an item of ``origin`` (latest version)."""
        with self.lock:
            return sum(1 for v in self.latest.values() if v.origin == origin)


@dataclass(frozen=True)
class ReadSpec:
    """One read of the key: direction, page size and an optional time window.

    Attributes
    ----------
    name : str
        What it stands for.
    limit : int
        Page size (small, so the cursor carries the read across many pages).
    descending : bool
        Newest first.
    start, end : datetime or None
        Window: start inclusive, end exclusive, whole milliseconds (the SK's precision:
        the codec reads a finer bound as the millisecond that holds it).
    """

    name: str
    limit: int
    descending: bool = False
    start: datetime | None = None
    end: datetime | None = None

    def __post_init__(self) -> None:
        for bound in (self.start, self.end):
            assert bound is None or bound.microsecond % 1000 == 0, bound

    def holds(self, sk: str) -> bool:
        """Return whether an item of sort key ``sk`` is in the window (SK string bounds).

        ``{t}#{id}`` is in ``[start, end)`` exactly when ``iso(start) <= sk < iso(end)``:
        ``{end}#{id}`` sorts after ``{end}``.
        """
        if self.start is not None and sk < iso_ms(self.start):
            return False
        return self.end is None or sk < iso_ms(self.end)


@dataclass
class ReadRecord:
    """One read as taken: what it had to hold when it began, and what it returned."""

    spec: ReadSpec
    during_cutover: bool
    shards_at_start: int
    must_hold: dict[str, tuple[str, str, str]]
    seen: list[tuple[str, tuple[str, str, str]]]
    pages: int


def iso_ms(at: datetime) -> str:
    """Return ``at`` as ``toISOString()`` does (UTC, milliseconds, ``Z``).

    Parameters
    ----------
    at : datetime
        Aware.

    Returns
    -------
    str
        E.g. ``2026-06-22T01:00:00.123Z``.
    """
    return format_ts(at)[:23] + "Z"


def take_read(ds: Dynashard, spec: ReadSpec, model: Model, during: bool) -> ReadRecord:
    """Read the key page by page with ``spec``, cursor to cursor, and record what came back.

    Parameters
    ----------
    ds : Dynashard
        The reader.
    spec : ReadSpec
        The read.
    model : Model
        Snapshotted before the first page: what the read must hold.
    during : bool
        Whether the writers were running.

    Returns
    -------
    ReadRecord
        The read, for :func:`check_read`.
    """
    must = model.snapshot()
    shards = ds.shard_info(OPS_LOG).number_of_shards
    seen: list[tuple[str, tuple[str, str, str]]] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = ds.query_events(
            OPS_LOG,
            limit=spec.limit,
            descending=spec.descending,
            start=spec.start,
            end=spec.end,
            cursor=cursor,
        )
        pages += 1
        for event in page.items:
            assert event["key"] == OPS_LOG, event
            seen.append(
                (
                    sk_of(event),
                    (event["id"], event["ts"], json.dumps(event["data"], sort_keys=True)),
                )
            )
        cursor = page.cursor
        if cursor is None:
            return ReadRecord(spec, during, shards, must, seen, pages)
        assert pages < 5000, "the read did not end"


def check_read(read: ReadRecord, model: Model) -> dict[str, list[str]]:
    """Compare one read with the record of what was acknowledged; return the differences.

    A read taken with the writers stopped must equal the record's window exactly: every
    SK once, in the table's order (UTF-8 order of the SK strings, ascending or
    descending), each with its latest acknowledged id, time and data. A read taken while
    they wrote must be strictly in order, hold every SK acknowledged before it began and
    in its window, hold nothing never acknowledged (by the end of the run), and give
    each item as one acknowledged write of its SK left it.

    Parameters
    ----------
    read : ReadRecord
        The read.
    model : Model
        The record at the end of the run (every write acknowledged by then).

    Returns
    -------
    dict of str to list of str
        ``lost``, ``duplicated``, ``out_of_order``, ``unknown`` and ``wrong_data``: the
        SKs concerned; all empty when the read is exact.
    """
    sks = [sk for sk, _ in read.seen]
    descending = read.spec.descending
    counts = Counter(sks)
    duplicated = sorted(sk for sk, n in counts.items() if n > 1)
    out_of_order = [b for a, b in itertools.pairwise(sks) if (a < b if descending else a > b)]
    must = {sk: v for sk, v in read.must_hold.items() if read.spec.holds(sk)}
    lost = sorted(set(must) - set(counts))
    if read.during_cutover:
        unknown = sorted(sk for sk in counts if sk not in model.latest or not read.spec.holds(sk))
        wrong = [sk for sk, v in read.seen if sk in model.latest and v not in model.versions[sk]]
    else:
        unknown = sorted(set(counts) - set(must))
        wrong = [sk for sk, v in read.seen if sk in must and v != must[sk]]
    return {
        "lost": lost,
        "duplicated": duplicated,
        "out_of_order": out_of_order,
        "unknown": unknown,
        "wrong_data": wrong,
    }


@dataclass
class OldService:
    """The service's writer as it runs in production: ``OpsLog.log``, retried on a throttle.

    A throttled PutItem is retried with the same time and agent (the same SK), pausing a
    little longer each time, and dropped after ``OLD_ATTEMPTS`` (the article's "then as
    dropped writes"). Every refusal it sees is counted.
    """

    log: OpsLog
    model: Model
    rng: random.Random
    throttles: int = 0
    dropped: int = 0
    written: int = 0
    rewrites: int = 0
    acked: list[tuple[datetime, str]] = field(default_factory=list)

    def write(self, at: datetime, agent: str | None = None, rewrite: bool = False) -> bool:
        """Write one entry at ``at`` (a new one, or a rewrite of ``agent``'s at ``at``).

        Parameters
        ----------
        at : datetime
            The entry's time.
        agent : str, optional
            The agent; random when omitted.
        rewrite : bool
            Whether this rewrites an entry already acknowledged (same SK, new latency).

        Returns
        -------
        bool
            True when acknowledged, False when dropped after its attempts.
        """
        agent = agent or self.rng.choice(AGENTS)
        latency, severity = self.rng.randint(40, 900), self.rng.choice(SEVERITIES)
        for attempt in range(OLD_ATTEMPTS):
            try:
                item = self.log.log(agent, latency, severity, at)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != THROTTLED:
                    raise
                self.throttles += 1
                time.sleep(RETRY_PAUSE_S * (attempt + 1))
                continue
            self.model.ack_service_item(item)
            self.written += 1
            self.rewrites += rewrite
            if not rewrite:
                self.acked.append((at, agent))
            return True
        self.dropped += 1
        return False


@dataclass
class Ingest:
    """dynashard's writer loop: batches of new events, failed ones offered again."""

    ds: Dynashard
    model: Model
    rng: random.Random
    clock: Callable[[], datetime]
    offered: int = 0
    acknowledged: int = 0
    not_acknowledged_first: int = 0
    physical_keys: set[str] = field(default_factory=set)

    def new_event(self) -> Event:
        """Return a new event stamped by the story clock, up to ``LATE_S`` late."""
        agent = self.rng.choice(AGENTS)
        self.offered += 1
        return Event(
            key=OPS_LOG,
            id=f"{agent}#{self.offered:05d}",
            ts=self.clock() - timedelta(seconds=self.rng.uniform(0, LATE_S)),
            data={
                "agent": agent,
                "latencyMs": self.rng.randint(40, 900),
                "aiSeverity": self.rng.choice(SEVERITIES),
            },
        )

    def put(self, events: list[Event]) -> list[Event]:
        """Write events; record the acknowledged; return the others (to offer again)."""
        again = []
        for event, outcome in zip(events, self.ds.put_events(events), strict=True):
            if outcome.ok:
                self.model.ack_event(event)
                self.acknowledged += 1
                self.physical_keys.add(outcome.physical_key or "")
            else:
                assert not outcome.permanent, outcome.error
                again.append(event)
        return again

    def run(self, stop: threading.Event) -> None:
        """Offer ``INGEST_BATCH`` events every ``INGEST_TICK_S`` until ``stop``, then drain."""
        pending: list[Event] = []
        while not stop.is_set():
            tick = time.monotonic()
            pending = self.put(pending + [self.new_event() for _ in range(INGEST_BATCH)])
            self.not_acknowledged_first += len(pending)
            stop.wait(max(0.0, tick + INGEST_TICK_S - time.monotonic()))
        for _ in range(20):  # a queue redelivers until acknowledged
            if not pending:
                return
            pending = self.put(pending)
        raise AssertionError(f"{len(pending)} events never acknowledged")


@pytest.fixture
def service_tables(dynamodb_local: DynamoDBLocal) -> Iterator[tuple[str, str]]:
    """The service's own table (its single-table layout, GSI1) and dynashard's metadata table."""
    client = dynamodb_local.client()
    suffix = uuid.uuid4().hex[:8]
    table = f"ops-service-{suffix}"
    create_table(client, table)
    meta = create_tables(client, suffix=f"-story{suffix}", specs=[METADATA_TABLE], exist_ok=False)
    yield table, meta[METADATA_TABLE.logical_id]
    delete_tables(client, [table, *meta.values()])


def throttles_by_key(emulator: InProcessEmulator, table: str) -> dict[str, int]:
    """Return the write throttle events the emulator counted per partition key so far."""
    rows = emulator.emulator.metrics.key_figures(
        Operation.WRITE, Resource(table), 0.0, time.time() + 120
    )
    return {row.key: row.throttled_events for row in rows if row.throttled_events}


def test_a_throttling_service_key_is_adopted_in_place_and_grown_while_it_keeps_writing(
    dynamodb_local: DynamoDBLocal, service_tables: tuple[str, str], tmp_path: Path
) -> None:
    table, meta = service_tables
    emulator = InProcessEmulator(
        dynamodb_local.endpoint_url,
        EmulatorConfig(
            scale=SCALE,
            partition_rcu=READ_CEILING,
            account_table_units=ACCOUNT_TABLE_UNITS / SCALE,
            unscaled_tables=frozenset({meta}),
        ),
    )
    rng = random.Random(27)
    model = Model()
    wall0 = time.monotonic()

    # Given the service's log: its history under its one key (written a few entries a
    # minute, long before the story: straight to the table)...
    history = fill(OpsLog(dynamodb_local.client(), table), HISTORY_ENTRIES, HISTORY_START)
    for item in history:
        model.ack_service_item(item)
    # ...and its writer, through the emulator, every refusal seen (no botocore retries)
    old = OldService(OpsLog(emulator.client(total_max_attempts=1), table), model, rng)

    # When its load rises: a burst of entries as fast as its writer goes
    at = datetime.fromisoformat(history[-1]["SK"]["S"].split("#")[0])
    burst_t0 = time.monotonic()
    for _ in range(BURST_ENTRIES):
        at += timedelta(milliseconds=rng.randint(1, 50))
        old.write(at)
    burst_s = time.monotonic() - burst_t0
    before = throttles_by_key(emulator, table)

    # Then the one key throttles: the writer saw each refusal the emulator counted
    assert old.throttles > 0
    assert before == {OPS_LOG: old.throttles}
    items_before = model.count("legacy")
    throttles_before, dropped_before, written_before = old.throttles, old.dropped, old.written

    # Given dynashard configured for the service's own table, its writer growing keys
    # in-band on key-range throttling (the default), reads of the service's schema
    def facade() -> Dynashard:
        config = DynashardConfig(
            table,
            meta,
            schema=SCHEMA,
            check_schema=True,  # DescribeTable: the table has the schema's keys
            endpoint_url=emulator.endpoint_url,
            cooldown_s=COOLDOWN_S,
            metadata_cache_ttl_s=1.0,
            max_shards=MAX_SHARDS,
            partition_wcu=1000.0 * SCALE,
            write_backoff=Backoff(base_s=0.02, cap_s=0.5, max_attempts=8),
        )
        return Dynashard(
            config,
            client=emulator.client(max_pool_connections=32),
            write_client=emulator.client(total_max_attempts=1, max_pool_connections=32),
        )

    ingest_ds, reader = facade(), facade()

    # When the key is adopted: the bare key is surveyed first, nothing is copied
    survey = reader.survey_bare_key(OPS_LOG)
    info = reader.adopt(OPS_LOG, survey=True)

    # Then the survey saw the service's items, all readable, and its time span
    assert (survey.foreign_items, survey.dynashard_items, survey.unreadable_items) == (
        items_before,
        0,
        0,
    )
    assert survey.first_ts == min(v.ts for v in model.latest.values())
    assert survey.last_ts == max(v.ts for v in model.latest.values())
    assert (info.adopted, info.number_of_shards) == (True, 1)
    # And a read of the adopted key is the service's log exactly, in its own shape
    reads: list[ReadRecord] = [
        take_read(reader, ReadSpec("adopted, ascending", limit=9), model, during=False),
        take_read(reader, ReadSpec("adopted, descending", 13, descending=True), model, False),
    ]

    # When new events go through dynashard (4 x a key's limit) while the old service
    # keeps writing the bare key in its own shape, and readers read, all at once
    cutover_t0 = time.monotonic()

    def story_now() -> datetime:
        return CUTOVER_START + timedelta(seconds=time.monotonic() - cutover_t0)

    ingest = Ingest(ingest_ds, model, random.Random(2027), story_now)
    stop = threading.Event()
    shard_counts: list[tuple[float, int]] = [(0.0, 1)]
    reads_lock = threading.Lock()

    def old_service() -> None:
        n = 0
        while not stop.is_set():
            tick = time.monotonic()
            n += 1
            if n % REWRITE_EVERY == 0 and old.acked:
                was, agent = old.acked[rng.randrange(max(0, len(old.acked) - 30), len(old.acked))]
                old.write(was, agent, rewrite=True)
            else:
                old.write(story_now())
            stop.wait(max(0.0, tick + 1.0 / OLD_RATE - time.monotonic()))

    def dashboard() -> None:
        n = 0
        while not stop.is_set():
            clock = story_now()
            now = clock.replace(microsecond=clock.microsecond // 1000 * 1000)
            specs = [
                ReadSpec("whole log, ascending", 50),
                ReadSpec("last 3 s, newest first", 5, True, now - timedelta(seconds=3), now),
                ReadSpec("whole log, newest first", 50, descending=True),
                ReadSpec(
                    "history's end to now",
                    7,
                    start=datetime.fromisoformat(history[-40]["SK"]["S"].split("#")[0]),
                    end=now + timedelta(seconds=1),
                ),
            ]
            record = take_read(reader, specs[n % len(specs)], model, during=True)
            n += 1
            with reads_lock:
                reads.append(record)

    def watch_shards() -> None:
        while not stop.wait(0.1):
            count = reader.shard_info(OPS_LOG).number_of_shards
            if count != shard_counts[-1][1]:
                shard_counts.append((round(time.monotonic() - cutover_t0, 2), count))

    def reads_during() -> tuple[int, int]:
        """Return the reads taken during the cut-over, and the shard counts they began at."""
        with reads_lock:
            during = [r for r in reads if r.during_cutover]
        return len(during), len({r.shards_at_start for r in during})

    with ThreadPoolExecutor(4) as pool:
        running = [pool.submit(f) for f in (old_service, dashboard, watch_shards)]
        running.append(pool.submit(ingest.run, stop))
        try:
            while True:
                elapsed = time.monotonic() - cutover_t0
                taken, counts_seen = reads_during()
                done = (
                    elapsed >= MIN_CUTOVER_S
                    and shard_counts[-1][1] >= GROWN_TO
                    and taken >= READS_DURING
                    and counts_seen >= 2  # reads interleaved with a growth
                )
                if done or elapsed >= MAX_CUTOVER_S or any(f.done() for f in running):
                    break
                time.sleep(0.1)
        finally:
            stop.set()
        for f in running:
            f.result()  # a thread's failure fails the test here
    cutover_s = time.monotonic() - cutover_t0
    after = throttles_by_key(emulator, table)

    # Then the key grew from 1 shard, and dynashard wrote its shards only
    final_info = reader.shard_info(OPS_LOG)
    assert final_info.number_of_shards > 1, shard_counts
    assert OPS_LOG not in ingest.physical_keys
    assert ingest.physical_keys <= {f"{OPS_LOG}#{s}" for s in range(MAX_SHARDS)}
    dynashard_throttles = sum(n for k, n in after.items() if k.startswith(f"{OPS_LOG}#"))
    assert dynashard_throttles > 0  # it did grow on key-range throttling
    assert after.get(OPS_LOG, 0) == old.throttles  # the bare key: the old writer's alone

    # And once both have stopped, reads of the whole log and of windows are exact
    straddle = datetime.fromisoformat(history[-25]["SK"]["S"].split("#")[0])
    middle = CUTOVER_START + timedelta(milliseconds=round(cutover_s * 500))
    for spec in (
        ReadSpec("final, ascending", 25),
        ReadSpec("final, newest first", 25, descending=True),
        ReadSpec("final, one page", 1000),
        ReadSpec("history only", 6, start=HISTORY_START, end=CUTOVER_START),
        ReadSpec("across the adoption", 4, True, straddle, CUTOVER_START + timedelta(seconds=2)),
        ReadSpec("cut-over's middle second", 3, False, middle, middle + timedelta(seconds=1)),
        ReadSpec("an empty hour", 10, False, HISTORY_START - timedelta(hours=1), HISTORY_START),
    ):
        reads.append(take_read(reader, spec, model, during=False))
    ingest_ds.close()
    reader.close()
    # (the table itself, read without dynashard: the bare key holds the service's items
    # only, the shards dynashard's only, and no item carries a GSI key)
    raw = dynamodb_local.client().get_paginator("scan").paginate(TableName=table)
    items = [i for page in raw for i in page["Items"]]
    bare = {i["SK"]["S"] for i in items if i["PK"]["S"] == OPS_LOG}
    shards = {i["SK"]["S"] for i in items if i["PK"]["S"].startswith(f"{OPS_LOG}#")}
    assert bare == {sk for sk, v in model.latest.items() if v.origin == "legacy"}
    assert shards == {sk for sk, v in model.latest.items() if v.origin == "dynashard"}
    assert len(items) == len(model.latest)
    assert not any("GSI1PK" in i or "GSI1SK" in i for i in items)

    # Then no read lost, duplicated, disordered or altered anything
    checked = [check_read(r, model) for r in reads]
    problems = {
        f"{i}: {r.spec.name} ({'during' if r.during_cutover else 'quiet'})": {
            kind: sks[:5] for kind, sks in p.items() if sks
        }
        for i, (r, p) in enumerate(zip(reads, checked, strict=True))
        if any(p.values())
    }
    during = [r for r in reads if r.during_cutover]
    figures: dict[str, Any] = {
        "scale": SCALE,
        "partition_wcu_per_key": 1000.0 * SCALE,
        "items_before_adoption": items_before,
        "survey": survey.to_json(),
        "old_writer_before_adoption": {
            "burst_entries": BURST_ENTRIES,
            "burst_s": round(burst_s, 2),
            "throttles": throttles_before,
            "dropped": dropped_before,
        },
        "old_writer_during_cutover": {
            "written": old.written - written_before,
            "rewrites": old.rewrites,
            "throttles": old.throttles - throttles_before,
            "dropped": old.dropped - dropped_before,
        },
        "dynashard_ingest": {
            "offered": ingest.offered,
            "acknowledged": ingest.acknowledged,
            "offered_again_after_a_failed_write": ingest.not_acknowledged_first,
            "throttled_item_writes_on_shards": dynashard_throttles,
            "shards_written": len(ingest.physical_keys),
        },
        "emulator_write_throttles_by_key": after,
        "items_after": {
            "legacy": model.count("legacy"),
            "new": model.count("dynashard"),
            "total": len(model.latest),
        },
        "shard_counts": [{"s": t, "shards": n} for t, n in shard_counts],
        "shard_history": [{"since": s, "count": c} for s, c in final_info.history],
        "cutover_s": round(cutover_s, 1),
        "reads_checked": len(reads),
        "reads_during_cutover": len(during),
        "events_compared": sum(len(r.seen) for r in reads),
        "pages_read": sum(r.pages for r in reads),
        "lost": sum(len(p["lost"]) for p in checked),
        "duplicated": sum(len(p["duplicated"]) for p in checked),
        "out_of_order": sum(len(p["out_of_order"]) for p in checked),
        "wrong_data": sum(len(p["wrong_data"]) for p in checked),
        "unknown": sum(len(p["unknown"]) for p in checked),
        "wall_s": round(time.monotonic() - wall0, 1),
        "reads": [
            {
                **asdict(r.spec),
                "during": r.during_cutover,
                "shards": r.shards_at_start,
                "items": len(r.seen),
                "pages": r.pages,
            }
            for r in reads
        ],
    }
    report = tmp_path / "adoption-story.json"
    report.write_text(json.dumps(figures, indent=2, default=str))
    print(
        f"\nadoption story: {items_before} items under {OPS_LOG} before adoption "
        f"(survey: {survey.foreign_items} foreign, {survey.first_ts} .. {survey.last_ts}); "
        f"old writer throttled {throttles_before} x in a {BURST_ENTRIES}-entry burst; "
        f"after: {len(model.latest)} items ({model.count('legacy')} legacy, "
        f"{model.count('dynashard')} new); dynashard throttled {dynashard_throttles} item writes; "
        f"shards {' -> '.join(str(n) for _, n in shard_counts)}; "
        f"{len(reads)} reads checked ({figures['reads_during_cutover']} during the cut-over), "
        f"{figures['events_compared']} events compared; lost {figures['lost']}, duplicated "
        f"{figures['duplicated']}, out of order {figures['out_of_order']}, wrong data "
        f"{figures['wrong_data']}, unknown {figures['unknown']}; "
        f"{figures['wall_s']} s; {report}"
    )
    assert not problems, json.dumps(problems, indent=1)
    assert len(during) >= READS_DURING
    assert len({r.shards_at_start for r in during}) >= 2  # reads interleaved with a growth
    assert shard_counts[0][1] == 1 and shard_counts[-1][1] > 1
    assert old.rewrites > 0 and model.count("dynashard") == ingest.offered
