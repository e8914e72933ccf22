"""The planned reader: a time-window read served by the base table or by GSI1, whichever is cheaper.

:class:`PlannedReader` asks :func:`dynashard.planning.reads.plan_read` which path a page
takes (``consistent=True`` always takes the base table: only base-table Queries are
strongly consistent), then reads it with
:class:`~dynashard.dynamodb.reader.ShardedReader` (one Query per shard) or
:class:`~dynashard.dynamodb.gsi_reader.GsiBucketReader` (one Query per time bucket and
GSI1 shard), and keeps a cursor on the path it started: a GSI1 cursor is resumed on
GSI1, a base-table one on the base table. :class:`ReadOptions` are the options of one
page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from dynashard.core.buckets import TimeBucket, window_buckets
from dynashard.core.schema import DEFAULT_SCHEMA, TableSchema
from dynashard.core.times import as_utc
from dynashard.dynamodb.gsi_reader import GsiBucketReader, is_gsi1_cursor
from dynashard.dynamodb.reader import (
    Page,
    QueryOptions,
    ShardedReader,
)
from dynashard.planning.reads import (
    DEFAULT_ITEM_BYTES,
    MAX_GSI1_REQUESTS,
    ReadPath,
    gsi1_shard_counts,
    gsi1_unit,
    plan_read,
)

if TYPE_CHECKING:
    from typing import Unpack

    from dynashard.core.shard_info import ShardInfo
    from dynashard.dynamodb.shard_metadata import ShardMetadata

#: Why an adopted key is never read from GSI1 (said in ``page.plan`` and in the refusal
#: of ``path="gsi1"``).
ADOPTED_UNAVAILABLE: Final = (
    "the key is adopted: its items under the bare partition key are not in GSI1, "
    "so only the base table reads them all"
)


class ReadOptions(QueryOptions, total=False):
    """The options of a planned read: :class:`~dynashard.dynamodb.reader.QueryOptions` and two more.

    Attributes
    ----------
    consistent : bool
        Strongly consistent read (base table only; default True: invariant 3, a read
        never misses an acknowledged write).
    path : str
        ``auto`` (plan the cheaper path), ``base`` or ``gsi1`` (force one).
    """

    consistent: bool
    path: str


class PlannedReader:
    """Plans each read (:func:`dynashard.planning.reads.plan_read`) and serves it on that path.

    Parameters
    ----------
    base : ShardedReader
        The base-table scatter-gather reader.
    gsi : GsiBucketReader
        The GSI1 bucket fan-out reader.
    metadata : ShardMetadata
        Shard metadata, read fresh for planning.
    bucket_of : callable
        Logical key -> the configured bucket unit of its GSI1 partition keys, used only
        for a key with no unit stored (:func:`~dynashard.planning.reads.gsi1_unit`).
    schema : TableSchema
        The table's key schema: where it rules the GSI out
        (:meth:`~dynashard.core.schema.TableSchema.gsi_unavailable`), every read is
        served by the base table and ``path="gsi1"`` is refused, saying why.
    """

    def __init__(
        self,
        base: ShardedReader,
        gsi: GsiBucketReader,
        metadata: ShardMetadata,
        bucket_of: Callable[[str], TimeBucket],
        schema: TableSchema = DEFAULT_SCHEMA,
    ) -> None:
        self.base = base
        self.gsi = gsi
        self.metadata = metadata
        self.bucket_of = bucket_of
        self.gsi_unavailable = schema.gsi_unavailable()

    def query(
        self,
        key: str,
        *,
        consistent: bool = True,
        path: str = ReadPath.AUTO.value,
        **options: Unpack[QueryOptions],
    ) -> Page:
        """Read one page of a key's events on the planned path; ``page.plan`` says which.

        The base table serves every read that asks for ``consistent``, that has no
        bounded window (``start`` and ``end``), that targets a ``calculated`` key's
        value (``attribute_value``), that reads an adopted key (its items under the bare
        partition key are not in GSI1, :data:`ADOPTED_UNAVAILABLE`), that reads a key
        whose GSI1 keys were written under more than one time-bucket unit
        (:func:`~dynashard.planning.reads.gsi1_unit`), or that continues a base-table
        cursor. GSI1 keys are built with the unit stored with the key (``gsi1_units``),
        not the one configured now, so a configuration change never hides data. GSI1 serves
        a read whose plan finds it cheaper (or ``path="gsi1"``), and every page after a
        GSI1 page (its cursor says so), so a read never changes path mid-way.

        Parameters
        ----------
        key : str
            Logical key.
        consistent : bool
            Strongly consistent (base table) when True, the default.
        path : str
            ``auto``, ``base`` or ``gsi1``.
        **options : QueryOptions
            As :meth:`ShardedReader.query` takes them.

        Returns
        -------
        Page
            The page, with ``plan`` set.

        Raises
        ------
        InvalidInputError
            As :meth:`ShardedReader.query`, and for a ``path`` GSI1 cannot serve (field
            ``path``, saying why: e.g. ``path="gsi1"`` on an adopted key) or
            ``path="gsi1"`` with ``consistent`` (:func:`~dynashard.planning.reads.plan_read`).
        CursorError, ShardQueryError, MetadataError
            As the reader of the chosen path raises them.
        """
        # Naive means UTC (dynashard.core.times): normalised once, for the plan and the
        # reader of the chosen path alike.
        start, end = as_utc(options.get("start"), "from"), as_utc(options.get("end"), "to")
        options = {**options, "start": start, "end": end}
        limit = options.get("limit", 100)
        expected = limit * DEFAULT_ITEM_BYTES
        cursor = options.get("cursor")
        descending = options.get("descending", False)
        unavailable = self.gsi_unavailable
        if unavailable:
            pass
        elif start is None or end is None:
            unavailable = "it needs a bounded window (from and to)"
        elif options.get("attribute_value") is not None:
            unavailable = "a targeted read (attr) is served by the base table"
        elif start >= end:
            unavailable = "the window is empty"
        if unavailable or consistent or path == ReadPath.BASE:
            # Validate before reading; the plan's counts come from the page afterwards.
            plan_read(
                base_shards=1,
                buckets=None if unavailable else [],
                consistent=consistent,
                path=path,
                gsi1_unavailable=unavailable,
            )
            return self._base(key, None, consistent, unavailable or f"path={path}", options)
        # B101: narrows the types for mypy only; `unavailable` above returned when either
        # bound was None, so the code is correct with assertions stripped (python -O).
        assert start is not None and end is not None  # nosec B101
        info = self.metadata.for_reader(key)
        # The unit the key's GSI1 keys were written with, not the one configured now.
        stored, mixed = gsi1_unit(info, self.bucket_of(key))
        unit = stored or self.bucket_of(key)
        if info.adopted:
            # Items under the bare partition key carry no GSI1 key of this library:
            # GSI1 would silently leave them out.
            unavailable = ADOPTED_UNAVAILABLE
        elif mixed:
            unavailable = mixed
        elif cursor:
            if is_gsi1_cursor(cursor, key, start, end, descending, unit):
                path = ReadPath.GSI1.value
            else:
                unavailable = "the cursor continues a base-table read"
        buckets = None
        counts: list[int] = []
        if not unavailable:
            buckets = window_buckets(start, end, unit, limit=MAX_GSI1_REQUESTS)
            if buckets is None:
                unavailable = f"the window spans more than {MAX_GSI1_REQUESTS} {unit} buckets"
            else:
                counts = gsi1_shard_counts(info, buckets)
            if sum(counts) > MAX_GSI1_REQUESTS:
                buckets, counts = None, []
                unavailable = f"it would make more than {MAX_GSI1_REQUESTS} GSI1 queries"
        plan = plan_read(
            base_shards=info.max_count,
            buckets=buckets,
            gsi1_shards=counts,
            consistent=False,
            path=path,
            expected_bytes=expected,
            gsi1_unavailable=unavailable,
            descending=descending,
        )
        if plan.path is ReadPath.BASE:
            if unavailable:  # planned from the page's own shard count, as above
                return self._base(key, info, consistent, unavailable, options)
            page = self.base.query(key, info=info, **options)  # one metadata read, not two
        else:
            page = self.gsi.query(
                key,
                start=start,
                end=end,
                unit=unit,
                buckets=plan.buckets,
                gsi1_shards=plan.gsi1_shards,
                limit=limit,
                descending=descending,
                cursor=cursor,
                allow_partial=options.get("allow_partial", False),
            )
        page.plan = plan
        return page

    def _base(
        self,
        key: str,
        info: ShardInfo | None,
        consistent: bool,
        why: str,
        options: QueryOptions,
    ) -> Page:
        """Read a page from the base table; its plan counts the shards the page queried."""
        page = (
            self.base.query(key, **options)
            if info is None
            else self.base.query(key, info=info, **options)
        )
        page.plan = plan_read(
            base_shards=max(1, page.shards_queried),
            buckets=None,
            consistent=consistent,
            path=ReadPath.BASE,
            expected_bytes=options.get("limit", 100) * DEFAULT_ITEM_BYTES,
            gsi1_unavailable=why,
        )
        return page
