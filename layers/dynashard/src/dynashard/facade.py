"""The facade: one object that wires the metadata store, writer, reader and counters.

Handlers and other Python services build one :class:`Dynashard` per container (or process)
and reuse it: it owns its boto3 clients (one for reads, counters and metadata, one
without botocore retries for the writer, which retries on its own), whose connection
pools cover the worker threads, and one thread pool shared by writes and
scatter-gather reads.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from dynashard import defaults, names
from dynashard.core.buckets import TimeBucket, bucket_for
from dynashard.core.families import BucketFamily, family_of
from dynashard.core.retry import CLIENT_MAX_ATTEMPTS, Backoff
from dynashard.core.schema import DEFAULT_SCHEMA, TableSchema
from dynashard.core.shard_info import GrowthReason, GrowthResult, ShardInfo
from dynashard.core.strategies import Strategy
from dynashard.dynamodb.bucketed_family import BucketedFamilies, FamilyUnitCache
from dynashard.dynamodb.counters import CounterValue, ShardedCounter, counter_key
from dynashard.dynamodb.family_units import ADOPTED_FAMILY, DynamoDBFamilyUnits
from dynashard.dynamodb.gsi_buckets import Gsi1BucketRecorder
from dynashard.dynamodb.gsi_reader import GsiBucketReader
from dynashard.dynamodb.hedging import HedgePolicy, QueryHedger
from dynashard.dynamodb.metadata_store import DynamoDBMetadataStore
from dynashard.dynamodb.planned_reader import PlannedReader
from dynashard.dynamodb.reader import Page, ReadMemory, ShardedReader
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.errors import InvalidInputError
from dynashard.model import Event

if TYPE_CHECKING:
    from typing import Unpack

    from mypy_boto3_dynamodb import DynamoDBClient

    from dynashard.dynamodb.adoption import BareKeySurvey
    from dynashard.dynamodb.compaction import CompactionResult, EventCount
    from dynashard.dynamodb.ordered_index import OrderedIndex
    from dynashard.dynamodb.planned_reader import ReadOptions
    from dynashard.dynamodb.writer import ShardedWriter, WriteOutcome


@dataclass(frozen=True)
class DynashardConfig:
    """Configuration of a :class:`Dynashard`, built in code.

    A Lambda function builds it from its environment through
    :meth:`~dynashard.lambda_kit.settings.FunctionSettings.to_config`.

    Attributes
    ----------
    data_table : str
        The sharded data table.
    metadata_table : str
        The shard metadata table.
    default_shards : int
        N of a key never seen.
    max_shards : int
        Upper bound of any key's N (at most 1,000).
    cooldown_s : float
        Minimum seconds between two growths of one key.
    metadata_cache_ttl_s : float
        Lifetime of a writer's cached shard count, seconds.
    time_bucket : TimeBucket
        Bucket of GSI1 partition keys of a key no ``time_buckets`` prefix matches.
    time_buckets : tuple of (str, TimeBucket)
        Per key family: logical-key prefix -> bucket, longest prefix first
        (:func:`~dynashard.core.buckets.parse_time_buckets`); see :meth:`bucket_of`.
    bucketed_keys : tuple of BucketFamily
        Time-bucketed key families (:func:`~dynashard.core.families.parse_bucketed_keys`,
        e.g. ``OPS_LOG=day,THREAT#=month``): an event under one is written to the
        logical key of its time bucket, and a read of the family reads a window's
        buckets; see :meth:`bucketed_family` and :mod:`dynashard.dynamodb.bucketed_reader`.
    max_workers : int
        Threads for parallel BatchWriteItem calls and shard queries.
    endpoint_url : str or None
        DynamoDB endpoint of the clients the library makes (DynamoDB Local or the
        partition emulator). None (the default) leaves it to boto3, which reads it as
        every AWS SDK does: ``AWS_ENDPOINT_URL_DYNAMODB``, then ``AWS_ENDPOINT_URL``, then
        the config file's ``services`` section (boto3 1.28 and later; "Service-specific
        endpoints", AWS SDKs and Tools Reference Guide), else AWS.
    partition_wcu : float
        Per-partition write ceiling used for planning, WCU/s.
    partition_rcu : float
        Per-partition read ceiling used for planning, RCU/s.
    target_utilization : float
        Planned fraction of the partition ceiling per shard, in (0, 1].
    in_band_growth : bool
        Whether a writer throttled by key range (``TableWriteKeyRangeThroughputExceeded``
        or ``IndexWriteKeyRangeThroughputExceeded``) asks for more shards itself
        (doubling, honouring the cooldown) besides backing off. False leaves growth to
        the alarm-driven scaler alone.
    write_backoff : Backoff
        Retry budget of a write: full-jitter back-off between attempts on throttled
        or unprocessed items; default 8 attempts, 50 ms base, 5 s cap.
    schema : TableSchema
        The data table's key schema, its GSI, and how an event maps onto an item
        (:mod:`dynashard.core.schema`); dynashard's own table by default. Writes, the
        base-table reads (plain, targeted, time-bucketed families) and the GSI reads
        (``iso_time_then_id`` only) follow it; counters, the ordered index, event
        counts and compaction need the default and refuse another
        (``InvalidInputError``, field ``schema``).
    check_schema : bool
        Whether the facade checks the table against ``schema`` with ``DescribeTable``
        before its first write or read (:meth:`Dynashard.check`). Off by default:
        dynashard's own stack creates its table with the default schema.
    hedging : HedgePolicy or None
        Hedged shard Queries of the base-table reads (:mod:`dynashard.dynamodb.hedging`,
        after Dean and Barroso, "The Tail at Scale", CACM 2013): a shard Query still
        unanswered after the recent p95 of the table's Query latency is sent again,
        the first answer wins, hedges bounded by the policy's budget (5 % of the
        Queries by default). None (the default) sends each Query once. Hedges need
        idle workers: make ``max_workers`` cover the largest fan-out plus a few.
    """

    data_table: str
    metadata_table: str
    default_shards: int = defaults.DEFAULT_SHARDS.default
    max_shards: int = defaults.MAX_SHARDS.default
    cooldown_s: float = defaults.COOLDOWN_S.default
    metadata_cache_ttl_s: float = defaults.METADATA_CACHE_TTL_S.default
    time_bucket: TimeBucket = TimeBucket.DAY
    time_buckets: tuple[tuple[str, TimeBucket], ...] = ()
    bucketed_keys: tuple[BucketFamily, ...] = ()
    max_workers: int = defaults.MAX_WORKERS.default
    endpoint_url: str | None = None
    partition_wcu: float = defaults.PARTITION_WCU.default
    partition_rcu: float = defaults.PARTITION_RCU.default
    target_utilization: float = defaults.TARGET_UTILIZATION.default
    in_band_growth: bool = defaults.IN_BAND_GROWTH.default
    write_backoff: Backoff = field(default_factory=Backoff)
    schema: TableSchema = DEFAULT_SCHEMA
    check_schema: bool = False
    hedging: HedgePolicy | None = None

    def __post_init__(self) -> None:
        if self.max_workers < 1:
            raise InvalidInputError("max_workers", f"must be >= 1, got {self.max_workers}")

    def bucket_of(self, key: str) -> TimeBucket:
        """Return the time bucket of a logical key's GSI1 partition keys.

        Parameters
        ----------
        key : str
            Logical key.

        Returns
        -------
        TimeBucket
            The unit of its longest matching ``time_buckets`` prefix, else ``time_bucket``.
        """
        return bucket_for(key, self.time_buckets, self.time_bucket)

    def bucketed_family(self, key: str) -> BucketFamily | None:
        """Return the time-bucketed family of a logical key, if it is in one.

        Parameters
        ----------
        key : str
            Logical key.

        Returns
        -------
        BucketFamily or None
            The family (:func:`~dynashard.core.families.family_of`); None for a plain key.
        """
        return family_of(key, self.bucketed_keys)


def make_client(
    config: DynashardConfig,
    *,
    total_max_attempts: int = CLIENT_MAX_ATTEMPTS,
    parameter_validation: bool = True,
) -> DynamoDBClient:
    """Create a DynamoDB client whose connection pool covers the worker threads.

    botocore's default pool is 10 connections; threads beyond it open and discard
    extra connections (botocore ``config.py`` and PR #1026), so the pool is sized to
    ``max_workers``. Retries use botocore's ``standard`` mode.

    Parameters
    ----------
    config : DynashardConfig
        Endpoint and worker count. Without an endpoint none is passed to boto3, so the
        SDK's own variables (``AWS_ENDPOINT_URL_DYNAMODB``, ``AWS_ENDPOINT_URL``) apply.
    total_max_attempts : int
        botocore's attempts per call, the first included (``standard`` mode); 1 turns
        botocore's retries off, for a caller that retries on its own.
    parameter_validation : bool
        botocore's client-side check of every request against the API model. The
        writer's client turns it off: it sends only items
        :func:`dynashard.dynamodb.writer.build_item` built, and botocore's walk of their
        attribute values cost about 90 ms per 1,000 items (half the ingest path's CPU,
        ``bench/ingest.py``). DynamoDB validates every request itself, and the writer
        reports an item it refuses (``ValidationException``) as a permanent failure of
        that item alone.

    Returns
    -------
    DynamoDBClient
        A thread-safe low-level client of the process's
        :func:`~dynashard.dynamodb.raw_items.raw_items_session`: a Query's ``Items`` come
        back as DynamoDB sent them (``B`` values as base64 text), parsed once by
        :func:`dynashard.model.plain_value` instead of twice; every other response, and
        every error, is botocore's own.
    """
    from botocore.config import Config

    from dynashard.dynamodb.raw_items import raw_items_session

    client: DynamoDBClient = raw_items_session().client(
        "dynamodb",
        endpoint_url=config.endpoint_url,
        config=Config(
            max_pool_connections=max(10, config.max_workers + 2),
            retries={"mode": "standard", "total_max_attempts": total_max_attempts},
            parameter_validation=parameter_validation,
        ),
    )
    return client


class Dynashard:
    """Sharded writes, scatter-gather reads, sharded counters and shard counts.

    Parameters
    ----------
    config : DynashardConfig
        Tables and tuning.
    client : DynamoDBClient, optional
        A boto3 DynamoDB client for reads, counters and metadata; one from
        :func:`make_client` is created when omitted (build the facade on first use, not
        at import time).
    write_client : DynamoDBClient, optional
        The client of the writer's BatchWriteItem calls. When omitted it is ``client``
        if one was given, else one made on the first write (:attr:`write_client`) with
        botocore's retries and parameter validation off: the writer retries
        throttled and unprocessed items itself (``config.write_backoff``), reading the
        ``ThrottlingReasons`` of every attempt, so its budget is the whole budget and
        the scaler can tell retries from demand
        (:attr:`FunctionSettings.write_max_attempts`). botocore would otherwise retry
        a wholly throttled batch up to 4 times unseen, per writer attempt.

    Examples
    --------
    >>> ds = Dynashard(DynashardConfig("dynashard-data", "dynashard-shards"))  # doctest: +SKIP
    >>> event = Event(key="DEPARTURES#JFK", id="f1", ts="2013-01-01T10:00:00Z")  # doctest: +SKIP
    >>> ds.put_events([event])  # doctest: +SKIP
    """

    def __init__(
        self,
        config: DynashardConfig,
        client: DynamoDBClient | None = None,
        write_client: DynamoDBClient | None = None,
    ) -> None:
        self.config = config
        self.client: DynamoDBClient = client if client is not None else make_client(config)
        # Built on first write (write_client): a reader (the query and scaler functions)
        # never pays for a second client. A given client is also the writer's.
        self._write_client: DynamoDBClient | None = (
            write_client if write_client is not None else client
        )
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self.gsi1_recorder = Gsi1BucketRecorder(self.client, config.metadata_table)
        self._family_units = FamilyUnitCache()
        self._checked = not config.check_schema
        #: What reads learned of each key (item size, last shard set): makes later reads cheaper.
        self.read_memory = ReadMemory()
        #: The data table's hedging of shard Queries (latency, budget, figures); None: off.
        self.hedger = QueryHedger(config.hedging) if config.hedging is not None else None
        self.metadata = ShardMetadata(
            store=DynamoDBMetadataStore(config.metadata_table, self.client),
            default_shards=config.default_shards,
            max_shards=config.max_shards,
            cooldown_s=config.cooldown_s,
            cache_ttl_s=config.metadata_cache_ttl_s,
        )

    @property
    def write_client(self) -> DynamoDBClient:
        """DynamoDBClient: The writer's client; without one given, made on first use.

        The default is a client with botocore's retries and parameter validation off
        (:func:`make_client` with ``total_max_attempts=1, parameter_validation=False``:
        DynamoDB validates every request itself), created by the first write, not by the facade, so
        that a facade that only reads builds one client.
        """
        with self._lock:
            if self._write_client is None:
                self._write_client = make_client(
                    self.config, total_max_attempts=1, parameter_validation=False
                )
            return self._write_client

    @property
    def executor(self) -> ThreadPoolExecutor:
        """ThreadPoolExecutor: The shared worker pool, created on first use."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    self.config.max_workers, thread_name_prefix="dynashard"
                )
            return self._executor

    def check(self) -> None:
        """Check the data table has the configured key schema (``DescribeTable``).

        With ``config.check_schema`` the first write or read calls it; a passing check
        is not repeated.

        Raises
        ------
        TableSchemaError
            Naming each mismatch: the table missing, a key attribute's name or type, the
            GSI missing or its keys (:func:`dynashard.dynamodb.table_check.check_table_schema`).
        """
        from dynashard.dynamodb.table_check import check_table_schema

        check_table_schema(self.client, self.config.data_table, self.config.schema)
        self._checked = True

    def _ensure_checked(self) -> None:
        if not self._checked:
            self.check()

    def _default_schema_only(self, what: str) -> None:
        self.config.schema.require_default(what)

    def _writer(self) -> ShardedWriter:
        # Imported on first write: a facade that only reads does not load the write path.
        from dynashard.dynamodb.writer import ShardedWriter

        self._ensure_checked()
        return ShardedWriter(
            self.write_client,
            self.config.data_table,
            self.metadata,
            self.executor,
            self.config.bucket_of,
            backoff=self.config.write_backoff,
            grow_on_key_range_throttle=self.config.in_band_growth,
            gsi1_recorder=self.gsi1_recorder,
            schema=self.config.schema,
        )

    def put_events(self, events: Sequence[Event]) -> list[WriteOutcome]:
        """Write events to their shards; see :meth:`ShardedWriter.write`.

        An event whose ``key`` is a time-bucketed family (``config.bucketed_keys``) is
        written under the logical key of its event time's bucket,
        ``{key}#{label}`` (:func:`~dynashard.core.families.bucket_key`), sharded like any
        key: the stored item's ``key`` attribute and its physical key
        (``OPS_LOG#2026-06-22#0``) carry the bucket key. Reads of the family give the
        family key back (:meth:`query_events`).

        A family's unit is stored with the family key at its first write
        (:func:`~dynashard.dynamodb.family_units.pin_bucket_unit`) and reads use the
        stored unit. A later write whose configured unit differs is refused, not split
        over a second bucket layout: its outcome fails ``permanent`` with
        ``InvalidInputError`` (field ``bucketed_keys``) naming both units; restore the
        configured unit, or write the events under a new family name.

        Parameters
        ----------
        events : sequence of Event
            Validated events.

        Returns
        -------
        list of WriteOutcome
            One per event, in input order; ``key`` is the logical key written (the
            bucket key for a family), ``physical_key`` that key's shard. A family whose
            unit cannot be read or stored (``MetadataError``) fails its events
            (not permanent: send them again).
        """
        return self._families().put_events(events, lambda batch: self._writer().write(batch))

    def write_key(self, event: Event) -> str:
        """Return the logical key an event is written under: its bucket key, or its own.

        Parameters
        ----------
        event : Event
            An event.

        Returns
        -------
        str
            ``{key}#{label}`` for a time-bucketed family, the label in the family's
            stored unit (stored now at the family's first use), else ``event.key``.

        Raises
        ------
        InvalidInputError
            If the family was first written under another unit than the configured one
            (field ``bucketed_keys``).
        MetadataError
            If the family's unit cannot be read or stored.
        """
        return self._families().write_key(event)

    def _families(self) -> BucketedFamilies:
        """Return the families' writes and reads over this facade's client and metadata."""
        units = DynamoDBFamilyUnits(self.metadata, self.client, self.config.metadata_table)
        return BucketedFamilies(self.config.bucketed_keys, units, self._family_units)

    def read_unit(self, key: str, family: BucketFamily) -> TimeBucket:
        """Return the unit a family's reads use: the one stored at its first write.

        Parameters
        ----------
        key : str
            Family key.
        family : BucketFamily
            Its configured family.

        Returns
        -------
        TimeBucket
            The stored ``bucket_unit`` (read fresh), else the configured unit (a family
            never written).

        Raises
        ------
        InvalidInputError
            Field ``bucketed_keys``, if the family key is adopted (its bare-key items
            are in no bucket key, so no family read would return them).
        MetadataError
            If the metadata cannot be read or holds an unknown unit.
        """
        return self._families().read_unit(key, family)

    def query_events(self, key: str, **options: Unpack[ReadOptions]) -> Page:
        """Read one page of a logical key's events; see :meth:`PlannedReader.query`.

        A time-bucketed family (``config.bucketed_keys``) needs both ``start`` and
        ``end``; its window's bucket keys are read one after another in the page's
        order (:class:`~dynashard.dynamodb.bucketed_reader.BucketedReader`), from the base
        table, and its items carry the family key.

        Parameters
        ----------
        key : str
            Logical key.
        **options : ReadOptions
            ``start``, ``end``, ``limit``, ``descending``, ``cursor``, ``allow_partial``,
            ``attribute_value`` (a targeted read of a ``calculated`` key), as
            :meth:`ShardedReader.query` takes them; ``consistent`` (default True: base
            table, strongly consistent) and ``path`` (``auto``, ``base``, ``gsi1``).

        Returns
        -------
        Page
            Items in exact sort-key order, the next cursor, missing shards, and the
            ``plan`` (base table or GSI1, and why).

        Raises
        ------
        InvalidInputError
            If ``limit`` is out of range, ``start >= end``, ``attr`` targets a key that is
            not ``calculated``, a bucketed family's window is open or too long, or
            ``path`` cannot serve the read.
        CursorError
            If ``cursor`` is malformed or belongs to another query.
        ShardQueryError
            If a shard (or GSI1) query failed and ``allow_partial`` is False.
        MetadataError
            If the shard metadata cannot be read.
        """
        self._ensure_checked()
        schema = self.config.schema
        reader = ShardedReader(
            self.client,
            self.config.data_table,
            self.metadata,
            self.executor,
            self.read_memory,
            schema=schema,
            hedger=self.hedger,
        )
        family = self.config.bucketed_family(key)
        if family is not None:
            return self._families().query(key, family, reader, **options)
        gsi = GsiBucketReader(self.client, self.config.data_table, self.executor, schema=schema)
        planned = PlannedReader(reader, gsi, self.metadata, self.config.bucket_of, schema)
        return planned.query(key, **options)

    def count_events(
        self, key: str, *, start: datetime | None = None, end: datetime | None = None
    ) -> EventCount:
        """Count a logical key's distinct events exactly, and the extra copies stored.

        An event redelivered across a resize can be stored on two shards (invariant 2):
        reads collapse the copy, a ``Scan`` or ``Select=COUNT`` counts it. This reads
        every physical key a read of the key queries (metadata read fresh; shards of
        the whole ``shard_history`` and an adopted key's bare key), projecting the sort
        key and the ``key`` attribute only, keeps the key's own items as reads do, and
        counts distinct sort keys; see
        :func:`dynashard.dynamodb.compaction.count_events`.

        Parameters
        ----------
        key : str
            Logical key (for a time-bucketed family, one of its bucket keys).
        start : datetime, optional
            Earliest event time, inclusive (UTC; naive means UTC).
        end : datetime, optional
            Latest event time, exclusive.

        Returns
        -------
        EventCount
            ``distinct`` events, ``stored`` items, ``duplicates`` (``stored - distinct``)
            and ``shards_read`` (physical keys queried); ``to_json()`` for a document.
            Cost: about ``ceil(bytes stored in the window / 4 KB)`` RCU per shard, the
            same as reading the events (a projection does not reduce read units).

        Raises
        ------
        InvalidInputError
            If ``start >= end``, or ``key`` is a time-bucketed family key.
        StateConflictError
            If ``key`` is an ordered index.
        ShardQueryError
            If a shard's Query failed (the physical key and AWS error code named).
        MetadataError
            If the shard metadata cannot be read.
        """
        from dynashard.dynamodb.compaction import count_events

        self._default_schema_only("counting events")
        info = self.metadata.for_reader(key)
        return count_events(
            self.client, self.config.data_table, info, self.executor, start=start, end=end
        )

    def compact(self, key: str, *, dry_run: bool = False) -> CompactionResult:
        """Delete the extra copies a resize left of a key's events, keeping one of each.

        For every sort key stored under more than one physical key, the copy on the
        shard the current N would choose is kept (else the lowest shard number; an
        adopted key's bare-key copy last) and each other copy is deleted in a
        transaction that checks the kept copy still exists and both are unchanged, so
        the last copy is never deleted; a copy that differs from the kept one, or that
        changed meanwhile, is left and reported. See
        :func:`dynashard.dynamodb.compaction.compact`.

        Parameters
        ----------
        key : str
            Logical key (for a time-bucketed family, one of its bucket keys).
        dry_run : bool
            Report what would be deleted (``would_delete``) and delete nothing.

        Returns
        -------
        CompactionResult
            ``count`` before, ``deleted`` / ``would_delete`` / ``skipped`` copies
            (``{"sort_key", "physical_key", "kept"}``, plus ``reason`` when skipped).

        Raises
        ------
        InvalidInputError
            If ``key`` is a time-bucketed family key.
        StateConflictError
            If ``key`` is an ordered index.
        ShardQueryError
            If a shard's Query failed; nothing was deleted.
        CompactionError
            If reading or deleting a copy failed (AWS error code named); its
            ``deleted`` lists the copies deleted before.
        MetadataError
            If the shard metadata cannot be read.
        """
        from dynashard.dynamodb.compaction import compact

        self._default_schema_only("compaction")
        info = self.metadata.for_reader(key)
        return compact(self.client, self.config.data_table, info, self.executor, dry_run=dry_run)

    def _counters(self) -> ShardedCounter:
        self._default_schema_only("sharded counters")
        return ShardedCounter(self.client, self.config.data_table, self.metadata)

    def increment_counter(self, name: str, by: int = 1, idempotency_key: str | None = None) -> bool:
        """Add ``by`` to a sharded counter; see :meth:`ShardedCounter.increment`.

        Parameters
        ----------
        name : str
            Counter name.
        by : int
            Non-zero integer.
        idempotency_key : str, optional
            Apply at most once per key.

        Returns
        -------
        bool
            False when ``idempotency_key`` had already been applied (with this ``by``).

        Raises
        ------
        IdempotentParameterMismatchError
            Naming ``idempotency_key``, if it was applied with another ``by``.
        """
        return self._counters().increment(name, by, idempotency_key)

    def get_counter(self, name: str) -> CounterValue:
        """Read a sharded counter; see :meth:`ShardedCounter.get`.

        Parameters
        ----------
        name : str
            Counter name.

        Returns
        -------
        CounterValue
            Sum over every shard.
        """
        return self._counters().get(name)

    def shard_info(self, key: str) -> ShardInfo:
        """Read a key's shard metadata fresh, without creating it.

        Parameters
        ----------
        key : str
            Logical key (a counter's is ``COUNTER#{name}``, see :func:`counter_key`).

        Returns
        -------
        ShardInfo
            Current count and history.

        Raises
        ------
        MetadataError
            If the metadata table fails, or every conditional write lost its race.
        """
        return self.metadata.for_reader(key)

    def grow(self, key: str, target: int, *, reason: GrowthReason | None = None) -> GrowthResult:
        """Raise a key's shard count to ``target``, honouring the cooldown.

        Parameters
        ----------
        key : str
            Logical key.
        target : int
            Wanted N (capped at ``max_shards``, and at the key's own cap,
            :meth:`set_max_shards`).
        reason : {"read", "write", "write-load"}, optional
            The throttling the growth is for, recorded in the key's ``grown_for``
            (:meth:`ShardMetadata.grow`); the scaler passes its alarm's kind, or
            ``write-load`` for a write growth sized on the write-load report.

        Returns
        -------
        GrowthResult
            What changed (``reason`` ``capped`` when the key is at its cap).

        Raises
        ------
        MetadataError
            If the metadata table fails, or every conditional write lost its race.
        """
        return self.metadata.grow(key, target, reason=reason)

    def survey_bare_key(self, key: str) -> BareKeySurvey:
        """Read what a key's bare partition key holds, as a read of it adopted would.

        See :func:`dynashard.dynamodb.adoption.survey_bare_key`: every item is classified
        (dynashard's full shape, another program's shape read through the table's codec,
        those with an attribute named like the schema's ``key`` counted apart, or
        unreadable), with the foreign items' time span and the read units the survey
        consumed.

        Parameters
        ----------
        key : str
            Logical key, the bare partition key.

        Returns
        -------
        BareKeySurvey
            The counts and up to five unreadable sort keys.

        Raises
        ------
        ShardQueryError
            If a Query of the bare key fails.
        """
        from dynashard.dynamodb.adoption import survey_bare_key

        self._ensure_checked()
        return survey_bare_key(self.client, self.config.data_table, key, self.config.schema)

    def adopt(self, key: str, *, survey: bool | BareKeySurvey = True) -> ShardInfo:
        """Adopt a key whose items already sit under its bare partition key.

        See :meth:`ShardMetadata.adopt`: the items stay where they are, every read
        includes them, writes go to the shards, and N grows from there. Items another
        program wrote in its own shape are read as events through the table's codec
        (:func:`dynashard.dynamodb.reader.foreign_event`); that program may go on writing
        the bare key during a cut-over, and reads include what it writes.

        Parameters
        ----------
        key : str
            Logical key, the bare partition key of the existing items (a counter's is
            ``COUNTER#{name}``).
        survey : bool or BareKeySurvey
            True: read every sort key under the bare key first (:meth:`survey_bare_key`)
            and refuse the adoption if the codec cannot read one; a counter's key
            (``COUNTER#...``) is never surveyed (its bare item is a counter, not events).
            A survey the caller has just made is checked instead of making another;
            False skips the check.

        Returns
        -------
        ShardInfo
            The metadata, ``adopted`` True.

        Raises
        ------
        InvalidInputError
            Field ``key``: the survey found items the codec cannot read (the message
            names up to five), the bare key is or may become another key's shard, or
            the key is a time-bucketed family (``config.bucketed_keys``: its reads read
            the bucket keys ``{key}#{label}`` only, never the bare key).
        ShardQueryError
            If the survey's Query fails.
        MetadataError
            If the metadata table fails, or every conditional write lost its race.
        """
        if self.config.bucketed_family(key) is not None:
            raise InvalidInputError("key", ADOPTED_FAMILY.format(key=key))
        found = survey if not isinstance(survey, bool) else None
        if survey is True and not key.startswith(names.COUNTER_PREFIX):
            found = self.survey_bare_key(key)
        if found is not None and not found.readable:
            codec = self.config.schema.sort_key_codec.name
            raise InvalidInputError("key", found.refusal(codec))
        return self.metadata.adopt(key)

    def shrink(self, key: str, target: int) -> GrowthResult:
        """Lower a key's shard count to ``target`` (not below the default); honours the cooldown.

        Parameters
        ----------
        key : str
            Logical key.
        target : int
            Wanted N.

        Returns
        -------
        GrowthResult
            What changed (:meth:`ShardMetadata.shrink`).

        Raises
        ------
        MetadataError
            If the metadata table fails, or every conditional write lost its race.
        """
        return self.metadata.shrink(key, target)

    def sharded_keys(self) -> list[ShardInfo]:
        """Return the keys whose shard count is above the default (a Scan of the metadata).

        Returns
        -------
        list of ShardInfo
            Their metadata (:meth:`ShardMetadata.sharded_keys`).
        """
        return self.metadata.sharded_keys()

    def set_shard_count(
        self, key: str, count: int, *, honour_cooldown: bool = False, force: bool = False
    ) -> GrowthResult:
        """Set a key's shard count (operator path; may shrink).

        Parameters
        ----------
        key : str
            Logical key.
        count : int
            New N.
        honour_cooldown : bool
            Refuse within the cooldown of the key's last change, as the scaler does
            (``reason`` ``cooldown``); the ``dynashard resize`` command sets it unless
            told ``--force``.
        force : bool
            Set a count above the key's own ``max_shards`` (:meth:`set_max_shards`).

        Returns
        -------
        GrowthResult
            What changed (:meth:`ShardMetadata.set_count`).

        Raises
        ------
        InvalidInputError
            If ``count`` is out of range, or above the key's own ``max_shards`` without
            ``force`` (the message names the cap).
        MetadataError
            If the metadata table fails, or every conditional write lost its race.
        """
        return self.metadata.set_count(key, count, honour_cooldown=honour_cooldown, force=force)

    def set_max_shards(self, key: str, cap: int | None) -> ShardInfo:
        """Set a key's own cap on its shard count (metadata attribute ``max_shards``).

        Growth stops at the cap on every path: :meth:`grow`, the scaler's plan, a
        writer's in-band growth, and :meth:`set_shard_count` unless forced. See
        :meth:`ShardMetadata.set_max_shards`.

        Parameters
        ----------
        key : str
            Logical key.
        cap : int or None
            ``1..config.max_shards``, not below the key's N in force; None removes it.

        Returns
        -------
        ShardInfo
            The key's metadata, ``max_shards`` in force.

        Raises
        ------
        InvalidInputError
            If ``cap`` is out of range or below the key's N.
        MetadataError
            If the metadata table fails, or every conditional write lost its race.

        Examples
        --------
        >>> ds.set_max_shards("DEPARTURES#JFK", 2).max_shards  # doctest: +SKIP
        2
        >>> ds.grow("DEPARTURES#JFK", 8).current  # doctest: +SKIP
        2
        """
        return self.metadata.set_max_shards(key, cap)

    def set_strategy(
        self,
        key: str,
        strategy: Strategy | str,
        *,
        attribute: str | None = None,
        force: bool = False,
        initial_shards: int | None = None,
    ) -> ShardInfo:
        """Set how writers pick a key's shard; see :meth:`ShardMetadata.set_strategy`.

        Set it before the key's first write: a key that already has a different
        strategy (a stored key without one is ``random``) is refused unless ``force``
        is True, because events written under the old strategy stay where it put them
        and targeted reads would miss them.

        Parameters
        ----------
        key : str
            Logical key.
        strategy : Strategy or str
            ``random`` or ``calculated``.
        attribute : str, optional
            For ``calculated``: the ``data`` attribute to shard by, e.g. ``carrier``.
        force : bool
            Change a key that already has a different strategy.
        initial_shards : int, optional
            N of the key if this call creates it (default ``config.default_shards``);
            a stored key keeps its N.

        Returns
        -------
        ShardInfo
            The key's metadata, ``strategy`` and ``shard_attribute`` in force.

        Raises
        ------
        InvalidInputError
            If the strategy or attribute is invalid.
        StrategyConflictError
            If the key has a different strategy and ``force`` is False.
        MetadataError
            If the metadata table fails.

        Examples
        --------
        >>> key = "DEPARTURES#JFK"
        >>> info = ds.set_strategy(  # doctest: +SKIP
        ...     key, Strategy.CALCULATED, attribute="carrier", initial_shards=4
        ... )
        >>> ds.query_events(key, attribute_value="UA")  # doctest: +SKIP
        """
        return self.metadata.set_strategy(
            key, strategy, attribute, force=force, initial_shards=initial_shards
        )

    def ordered_index(self, key: str) -> OrderedIndex:
        """Return the ordered index (range shards) of a logical key (see ``core.ordered``).

        Parameters
        ----------
        key : str
            Logical key of the index.

        Returns
        -------
        OrderedIndex
            Sharing this facade's client and tables.
        """
        from dynashard.dynamodb.ordered_index import OrderedIndex

        self._default_schema_only("the ordered index")
        return OrderedIndex(
            key,
            self.config.data_table,
            self.config.metadata_table,
            self.client,
            backoff=self.config.write_backoff,
        )

    def close(self) -> None:
        """Shut the worker pool down (waits for running calls)."""
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None


__all__ = ["Dynashard", "DynashardConfig", "counter_key", "make_client"]
