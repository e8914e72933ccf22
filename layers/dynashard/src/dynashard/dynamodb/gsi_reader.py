"""The GSI1 bucket fan-out reader: one Query per time bucket and GSI1 shard, merged in order.

GSI1 holds every time-series item under ``GSI1PK = {logical}#{bucket}#{g}`` with
``GSI1SK`` = the item's sort key (:func:`dynashard.core.keys.gsi1_partition_key`). A window
``[from, to)`` is read bucket by bucket, in the page's order: the buckets partition
event time and the sort key starts with the event time, so the window's order is the
buckets' order and, inside a bucket, the k-way merge (:func:`dynashard.core.merge.merge_page`)
of its ``G(bucket)`` GSI1 shards, queried in parallel. A page that fills inside a bucket
queries no later bucket; one that runs past the end of a bucket goes on to the next.

The cursor (:class:`dynashard.core.merge.Cursor`) carries the sort key of the last item
returned, which every stream of the bucket resumes strictly after (those that ran out
on an earlier page too: a write between pages may land on any), and the streams of
that bucket that ran out. A stream is numbered ``bucket_index * MAX_SHARD_COUNT + g``
(``bucket_index`` counted from the window's first bucket, which the cursor's query
fingerprint pins), so a bucket whose ``G`` grew between two pages is read on its new
shards from the same position.

GSI Queries cannot be strongly consistent ("Queries on global secondary indexes
support eventual consistency only": DynamoDB Developer Guide, "Using Global Secondary
Indexes in DynamoDB", "Read consistency"); an item acknowledged a moment ago may not
be in the index yet (typically a fraction of a second). Reads that need every
acknowledged write use the base table (:class:`dynashard.dynamodb.reader.ShardedReader`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from dynashard import names
from dynashard.core.buckets import TimeBucket
from dynashard.core.keys import MAX_SHARD_COUNT, SEPARATOR, format_ts
from dynashard.core.merge import Cursor, merge_page, query_fingerprint
from dynashard.core.schema import DEFAULT_SCHEMA, TableSchema
from dynashard.core.times import as_utc
from dynashard.dynamodb.reader import (
    Page,
    item_to_event,
    run_query,
)
from dynashard.errors import CursorError, InvalidInputError, ShardQueryError
from dynashard.planning.reads import (
    MAX_PAGE_LIMIT,
    shard_page_limit,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


#: Tag of GSI1 cursors in the query fingerprint (a base-table cursor never matches).
GSI1_TAG: Final = "gsi1"


def gsi1_fingerprint(
    key: str, start: datetime, end: datetime, descending: bool, unit: TimeBucket
) -> str:
    """Return the query fingerprint of a GSI1 read; cursors carry it.

    Parameters
    ----------
    key : str
        Logical key.
    start, end : datetime
        Window, start inclusive, end exclusive.
    descending : bool
        Newest first when True.
    unit : TimeBucket
        Bucket unit of the key's GSI1 partition keys.

    Returns
    -------
    str
        16 hex characters (:func:`~dynashard.core.merge.query_fingerprint`).
    """
    return query_fingerprint(
        key, format_ts(start), format_ts(end), descending, GSI1_TAG, unit.value
    )


def is_gsi1_cursor(
    cursor: str, key: str, start: datetime, end: datetime, descending: bool, unit: TimeBucket
) -> bool:
    """Tell whether ``cursor`` continues a GSI1 read of this very query.

    Parameters
    ----------
    cursor : str
        An opaque cursor.
    key, start, end, descending, unit
        The query, as :func:`gsi1_fingerprint` takes it.

    Returns
    -------
    bool
        True for a GSI1 cursor of this query; False for anything else (a base-table
        cursor, or a malformed one, which the base reader then refuses).
    """
    try:
        Cursor.decode(cursor, gsi1_fingerprint(key, start, end, descending, unit))
    except CursorError:
        return False
    return True


@dataclass(frozen=True)
class _StreamId:
    bucket_index: int
    bucket: str
    shard: int

    @property
    def number(self) -> int:
        return self.bucket_index * MAX_SHARD_COUNT + self.shard


class _GsiStream:
    """Lazy iterator over one GSI1 partition's items in the window, page by page."""

    def __init__(self, client: DynamoDBClient, pk: str, request: dict[str, Any], skip: str | None):
        self.client = client
        self.pk = pk
        self.label = f"{names.GSI1_NAME}:{pk}"
        self.sort_attr = names.ATTR_GSI1SK
        self.request = request
        self.skip = skip
        self.buffer: list[dict[str, Any]] = []
        self.start_key: dict[str, Any] | None = None
        self.finished = False
        self.queries = 0
        self.tolerate_failure = False
        self.failure: dict[str, str] = {}

    def fetch(self) -> None:
        """Run one Query; raise ShardQueryError naming the GSI1 key on failure."""
        request = dict(self.request)
        if self.start_key is not None:
            request["ExclusiveStartKey"] = self.start_key
        self.queries += 1
        label = self.label
        response = run_query(self.client, request, label)
        self.buffer.extend(response.get("Items", []))
        self.start_key = response.get("LastEvaluatedKey")
        self.finished = self.start_key is None

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        while True:
            for item in self.buffer:
                sk = item[self.sort_attr]["S"]
                if sk != self.skip:  # the resume bound is inclusive: drop the last item
                    yield sk, item
            self.buffer = []
            if self.finished:
                return
            try:
                self.fetch()
            except ShardQueryError as exc:
                if not self.tolerate_failure:
                    raise
                self.failure = exc.failures
                return


class GsiBucketReader:
    """Reads a logical key's time window from GSI1, bucket by bucket.

    Parameters
    ----------
    client : DynamoDBClient
        A boto3 DynamoDB client shared by the worker threads.
    table_name : str
        The data table (GSI1 is its index).
    executor : Executor
        Runs the GSI1 shard queries of a bucket in parallel.
    index_name : str, optional
        The index; the schema's GSI (``GSI1``) when omitted.
    schema : TableSchema
        The table's key schema (:mod:`dynashard.core.schema`): the GSI's key attributes
        and the item attributes. GSI reads cover the ``iso_time_then_id`` codec only
        (:meth:`~dynashard.core.schema.TableSchema.gsi_unavailable`); the planner never
        sends another schema's reads here, and :meth:`query` refuses them.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        executor: Executor,
        index_name: str | None = None,
        schema: TableSchema = DEFAULT_SCHEMA,
    ) -> None:
        self.client = client
        self.table_name = table_name
        self.executor = executor
        self.index_name = index_name or schema.gsi_name or names.GSI1_NAME
        self.schema = schema

    def query(
        self,
        key: str,
        *,
        start: datetime,
        end: datetime,
        unit: TimeBucket,
        buckets: Sequence[str],
        gsi1_shards: Sequence[int],
        limit: int = 100,
        descending: bool = False,
        cursor: str | None = None,
        allow_partial: bool = False,
    ) -> Page:
        """Read one page of a key's events in ``[start, end)`` from GSI1.

        Parameters
        ----------
        key : str
            Logical key.
        start, end : datetime
            Window, start inclusive, end exclusive (UTC).
        unit : TimeBucket
            Bucket unit of the key's GSI1 partition keys.
        buckets : sequence of str
            The window's bucket labels, oldest first
            (:func:`dynashard.core.buckets.window_buckets`).
        gsi1_shards : sequence of int
            ``G(bucket)`` of each bucket: its GSI1 shards ``0..G-1`` are queried.
        limit : int
            Page size, 1..1000; each GSI1 shard of a bucket is asked for its share
            (:func:`dynashard.planning.reads.shard_page_limit`) and read further if it runs short.
        descending : bool
            Newest first when True.
        cursor : str, optional
            The previous page's cursor (of this same GSI1 query).
        allow_partial : bool
            Serve what the healthy GSI1 partitions hold, naming the failed ones
            (``GSI1:{GSI1PK}``) in ``missing_shards``, instead of failing.

        Returns
        -------
        Page
            Items in exact sort-key order (identical sort keys collapsed), the next
            cursor; ``shards_queried`` counts GSI1 partitions queried, ``queries`` the
            Query calls.

        Raises
        ------
        InvalidInputError
            If ``limit`` is out of range, ``start >= end``, or ``gsi1_shards`` does not
            match ``buckets``.
        CursorError
            If ``cursor`` is malformed or belongs to another query.
        ShardQueryError
            If a GSI1 query failed and ``allow_partial`` is False; it names the GSI1
            partition key.
        """
        if not 1 <= limit <= MAX_PAGE_LIMIT:
            raise InvalidInputError("limit", f"must be within 1..{MAX_PAGE_LIMIT}, got {limit}")
        unavailable = self.schema.gsi_unavailable()
        if unavailable:
            raise InvalidInputError("path", f"GSI reads cannot serve this table: {unavailable}")
        start, end = as_utc(start, "from"), as_utc(end, "to")  # naive means UTC
        lo, hi = format_ts(start), format_ts(end)
        if lo >= hi:
            raise InvalidInputError("from", f"must be earlier than to ({lo} >= {hi})")
        if len(gsi1_shards) != len(buckets) or any(g < 1 for g in gsi1_shards):
            raise InvalidInputError("gsi1_shards", "needs one count >= 1 per bucket")
        fingerprint = gsi1_fingerprint(key, start, end, descending, unit)
        position = Cursor.decode(cursor, fingerprint) if cursor else None
        # Every stream of a bucket is queried from the position, those the cursor lists
        # as done too: a write between pages may land on any of them after the position.
        done: set[int] = set()

        order = list(range(len(buckets)))
        if descending:
            order.reverse()
        if position is not None:
            resume_bucket = position.position[: len(buckets[0])]
            order = [
                b
                for b in order
                if (buckets[b] <= resume_bucket if descending else buckets[b] >= resume_bucket)
            ]

        items: list[dict[str, Any]] = []
        failures: dict[str, str] = {}
        last = position.position if position else None
        streams_used: list[_GsiStream] = []
        finished = True
        for b in order:
            ids = self._ids(b, buckets[b], gsi1_shards[b])
            remaining = limit - len(items)
            per_shard = shard_page_limit(remaining, len(ids), consistent=False)
            streams = [self._stream(key, i, lo, hi, per_shard, descending, last) for i in ids]
            streams_used.extend(streams)
            failed = self._prefetch(streams)
            if failed and not allow_partial:
                raise ShardQueryError(failed)
            live = [k for k, s in enumerate(streams) if s.label not in failed]
            for k in live:
                streams[k].tolerate_failure = allow_partial
            merged = merge_page([iter(streams[k]) for k in live], remaining, descending)
            for k in live:
                failed.update(streams[k].failure)
            failures.update(failed)
            items.extend(merged.items)
            if merged.last_sort_key is not None:
                last = merged.last_sort_key
            exhausted = {
                ids[live[k]].number for k in merged.exhausted if not streams[live[k]].failure
            }
            done = exhausted  # of the bucket the position is in
            complete = len(exhausted) == len(live) and not failed
            if not complete or len(items) >= limit:
                finished = complete and b == order[-1]
                break
        next_cursor = None
        if not finished and last is not None:
            next_cursor = Cursor(fingerprint, last, frozenset(done)).encode()
        return Page(
            items=[item_to_event(item, self.schema) for item in items],
            cursor=next_cursor,
            missing_shards=sorted(failures),
            shards_queried=sum(1 for s in streams_used if s.queries),
            queries=sum(s.queries for s in streams_used),
        )

    @staticmethod
    def _ids(bucket_index: int, bucket: str, count: int) -> list[_StreamId]:
        return [_StreamId(bucket_index, bucket, g) for g in range(count)]

    def _stream(
        self,
        key: str,
        sid: _StreamId,
        lo: str,
        hi: str,
        limit: int,
        descending: bool,
        last: str | None,
    ) -> _GsiStream:
        pk = f"{key}{SEPARATOR}{sid.bucket}{SEPARATOR}{sid.shard}"
        if last is not None:  # resume at the last item returned (inclusive; skipped)
            lo, hi = (lo, min(hi, last)) if descending else (max(lo, last), hi)
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": self.index_name,
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :lo AND :hi",
            "ExpressionAttributeNames": {
                "#pk": self.schema.gsi_partition_key,
                "#sk": self.schema.gsi_sort_key,
            },
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":lo": {"S": lo}, ":hi": {"S": hi}},
            "ScanIndexForward": not descending,
            "Limit": limit,
        }
        stream = _GsiStream(self.client, pk, request, last)
        stream.sort_attr = self.schema.gsi_sort_key
        stream.label = f"{self.index_name}:{pk}"
        return stream

    def _prefetch(self, streams: list[_GsiStream]) -> dict[str, str]:
        """Run every stream's first Query in parallel; return the failures by GSI1 key."""
        futures = [self.executor.submit(s.fetch) for s in streams]
        failures: dict[str, str] = {}
        for future in futures:
            try:
                future.result()
            except ShardQueryError as exc:
                failures.update(exc.failures)
        return failures
