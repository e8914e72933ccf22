"""Reads of a time-bucketed key family: the window's bucket keys, one after another, in order.

A family's events are written under the logical key of their time bucket
(:mod:`dynashard.core.families`). A read of a window ``[from, to)`` of the family reads
the window's bucket keys one after another in the page's order: the buckets partition
event time and the sort key starts with the event time, so the window's order is the
buckets' order, and inside a bucket the scatter-gather over its shards
(:meth:`dynashard.dynamodb.reader.ShardedReader.query`) puts the items in exact order. A
page reads its first bucket alone and, while buckets come up short (sparse ones), the
next few in parallel; it uses them in order and stops in the bucket that fills it. The
cursor (:class:`BucketCursor`) carries that bucket and the bucket reader's own cursor,
also when the page filled exactly at the bucket's end: the next page queries the rest of
that bucket after the cursor before it moves on (an event written there between pages,
just past the cursor, is read; at worst one empty Query a shard).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

from dynashard.core.buckets import TimeBucket
from dynashard.core.families import (
    MAX_WINDOW_BUCKETS,
    BucketFamily,
    bucket_key,
    family_of,
    parse_bucketed_keys,
    window_bucket_keys,
    write_key,
)
from dynashard.core.keys import format_ts
from dynashard.core.merge import decode_token, encode_token, query_fingerprint
from dynashard.core.times import as_utc
from dynashard.dynamodb.reader import Page
from dynashard.errors import CursorError, InvalidInputError
from dynashard.planning.reads import DEFAULT_ITEM_BYTES, MAX_PAGE_LIMIT, ReadPath, plan_read

if TYPE_CHECKING:
    from typing import Unpack

    from dynashard.dynamodb.reader import QueryOptions

#: Most buckets read at once when buckets come up short of the page (sparse buckets):
#: after the first bucket, a page reads the next 2, then 4, then 8 buckets in parallel.
MAX_PARALLEL_BUCKETS: Final = 8
#: Tag of bucketed-read cursors in the query fingerprint.
BUCKETED_TAG: Final = "bucketed"
_CURSOR_VERSION: Final = 1
#: Why a bucketed family is never read from GSI1 (said in ``page.plan``).
GSI1_UNAVAILABLE: Final = "a time-bucketed key family is read bucket by bucket from the base table"


@dataclass(frozen=True)
class BucketCursor:
    """Where the next page of a bucketed read starts.

    Attributes
    ----------
    query : str
        Fingerprint of the query (:func:`bucketed_fingerprint`).
    bucket : int
        Index of the bucket to read next, in the window's buckets oldest first.
    inner : str or None
        That bucket's own reader cursor; None to start the bucket from its beginning.

    Examples
    --------
    >>> cursor = BucketCursor("q", 2, "abc")
    >>> BucketCursor.decode(cursor.encode(), "q") == cursor
    True
    """

    query: str
    bucket: int
    inner: str | None = None

    def encode(self) -> str:
        """Return the cursor as opaque URL-safe text (base64 of JSON, no padding).

        Returns
        -------
        str
            The cursor.
        """
        return encode_token(
            {"v": _CURSOR_VERSION, "q": self.query, "b": self.bucket, "c": self.inner}
        )

    @classmethod
    def decode(cls, text: str, expected_query: str) -> BucketCursor:
        """Parse a cursor made by :meth:`encode` for the same query.

        Parameters
        ----------
        text : str
            The opaque cursor.
        expected_query : str
            Fingerprint of the query now being run.

        Returns
        -------
        BucketCursor
            The parsed cursor.

        Raises
        ------
        CursorError
            If the text is not such a cursor, or belongs to another query.
        """

        def fields(doc: dict[str, Any]) -> tuple[int, str | None]:
            bucket, inner = doc["b"], doc["c"]
            if not isinstance(bucket, int) or bucket < 0:
                raise TypeError("bad bucket")
            if inner is not None and not isinstance(inner, str):
                raise TypeError("bad inner cursor")
            return bucket, inner

        bucket, inner = decode_token(
            text,
            expected_query,
            fields,
            version=_CURSOR_VERSION,
            origin="this API",
            query_parts="key, from, to or order",
        )
        return cls(expected_query, bucket, inner)


def bucketed_fingerprint(
    key: str,
    unit: TimeBucket,
    start: datetime,
    end: datetime,
    descending: bool,
    attribute_value: str | int | None = None,
) -> str:
    """Return the query fingerprint of a bucketed read; its cursors carry it.

    Parameters
    ----------
    key : str
        Family key.
    unit : TimeBucket
        Bucket size (a cursor made under another unit is refused).
    start, end : datetime
        Window.
    descending : bool
        Newest first when True.
    attribute_value : str or int, optional
        A targeted read's value.

    Returns
    -------
    str
        16 hex characters.
    """
    return query_fingerprint(
        key,
        format_ts(start),
        format_ts(end),
        descending,
        BUCKETED_TAG,
        unit.value,
        None if attribute_value is None else str(attribute_value),
    )


class BucketPageReader(Protocol):
    """Port: reads one page of one logical key (:meth:`ShardedReader.query` is one).

    A page with items gives ``resume``, a cursor after its last item even when the key
    ran out: a page that fills exactly at a bucket's end resumes that bucket there.
    """

    def query(self, key: str, **options: Unpack[QueryOptions]) -> Page:
        """Read one page of a logical key's events; see :meth:`ShardedReader.query`."""
        ...


class BucketedReader:
    """Reads a window of a time-bucketed family, bucket by bucket, with one cursor.

    Parameters
    ----------
    reader : BucketPageReader
        Reads one bucket key (a :class:`~dynashard.dynamodb.reader.ShardedReader`: metadata
        fresh, every shard of the bucket's history in parallel, merged in order).
    """

    def __init__(self, reader: BucketPageReader) -> None:
        self.reader = reader

    def query(
        self,
        key: str,
        unit: TimeBucket,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        limit: int = 100,
        descending: bool = False,
        cursor: str | None = None,
        allow_partial: bool = False,
        attribute_value: str | int | None = None,
        consistent: bool = True,
        path: str = ReadPath.AUTO.value,
    ) -> Page:
        """Read one page of a bucketed family's events in ``[start, end)``.

        The window's buckets are read in the page's order (oldest first, or newest
        first when ``descending``), each with the page's remaining limit; a bucket that
        runs out hands over to the next, and the page stops in the bucket that fills
        it. Buckets are disjoint in event time, so the concatenation is in exact order.

        The first bucket is read alone (a page of a busy bucket reads nothing else).
        While buckets come up short of the page (sparse or empty buckets), the next 2,
        then 4, then up to :data:`MAX_PARALLEL_BUCKETS` buckets are read in parallel,
        each with the limit left when the batch started, and used in order: a bucket
        that returned more than the room left is read again with that room (so its
        cursor is exact), and buckets after the one that fills the page are dropped
        (their Queries are counted in ``queries``; a failure in one is not the page's).
        A window of 1,000 empty buckets takes 128 rounds instead of 1,000.

        Parameters
        ----------
        key : str
            Family key (``OPS_LOG``, ``THREAT#brand-abc``).
        unit : TimeBucket
            The family's bucket size: the unit stored at its first write
            (:mod:`dynashard.dynamodb.family_units`), which its bucket keys carry.
        start, end : datetime
            Window, both required (UTC), at most :data:`MAX_WINDOW_BUCKETS` buckets.
        limit : int
            Page size, 1..1000.
        descending : bool
            Newest first when True.
        cursor : str, optional
            The previous page's cursor (of this same read).
        allow_partial : bool
            Serve what healthy shards hold; ``missing_shards`` names the physical keys
            (``OPS_LOG#2026-06-22#3``) whose query failed, as the bucket's reader
            does: a bucket whose reader still gives a cursor (its failed shards not
            done) ends the page there, so the next page asks them again; a bucket
            without one is passed.
        attribute_value : str or int, optional
            Targeted read of each bucket (bucket keys whose strategy is ``calculated``).
        consistent : bool
            Accepted for the facade's signature; bucket reads are strongly consistent.
        path : str
            ``auto`` or ``base``; ``gsi1`` is refused (field ``path``).

        Returns
        -------
        Page
            Items in exact sort-key order, each with ``key`` the family key (not the
            bucket key); ``shards_queried`` and ``queries`` summed over the buckets
            read; ``plan`` the base table.

        Raises
        ------
        InvalidInputError
            A missing or bad window (fields ``from``/``to``), ``limit`` out of range,
            or ``path="gsi1"``.
        CursorError
            If ``cursor`` is malformed or belongs to another read.
        ShardQueryError
            If a shard query failed and ``allow_partial`` is False (names the shard).
        MetadataError
            If a bucket's shard metadata cannot be read.
        """
        if not 1 <= limit <= MAX_PAGE_LIMIT:
            raise InvalidInputError("limit", f"must be within 1..{MAX_PAGE_LIMIT}, got {limit}")
        start, end = as_utc(start, "from"), as_utc(end, "to")  # naive means UTC
        buckets = window_bucket_keys(key, unit, start, end)
        # B101: narrows the types for mypy only; window_bucket_keys raised above when either
        # bound was None, so the code is correct with assertions stripped (python -O).
        assert start is not None and end is not None  # nosec B101
        plan_read(
            base_shards=1,
            buckets=None,
            consistent=consistent,
            path=path,
            gsi1_unavailable=GSI1_UNAVAILABLE,
        )
        fingerprint = bucketed_fingerprint(key, unit, start, end, descending, attribute_value)
        position = BucketCursor.decode(cursor, fingerprint) if cursor else None
        if position is not None and position.bucket >= len(buckets):
            raise CursorError("points past the window's last bucket")
        order = list(range(len(buckets)))
        if descending:
            order.reverse()
        if position is not None:
            order = order[order.index(position.bucket) :]
        inner = position.inner if position is not None else None

        def read(b: int, cursor: str | None, size: int) -> Page:
            return self.reader.query(
                buckets[b],
                start=start,
                end=end,
                limit=size,
                descending=descending,
                cursor=cursor,
                allow_partial=allow_partial,
                attribute_value=attribute_value,
            )

        items: list[dict[str, Any]] = []
        missing: list[str] = []
        stats = [0, 0]  # shards queried, queries sent

        def count(page: Page) -> None:
            stats[0] += page.shards_queried
            stats[1] += page.queries

        next_cursor: str | None = None
        pos, width = 0, 1
        pool: ThreadPoolExecutor | None = None
        spare: list[Future[Page]] = []
        try:
            while pos < len(order):
                batch = order[pos : pos + width]
                remaining = limit - len(items)
                if len(batch) == 1:
                    futures: list[Future[Page]] = [_done(read(batch[0], inner, remaining))]
                else:
                    if pool is None:
                        pool = ThreadPoolExecutor(MAX_PARALLEL_BUCKETS, "dynashard-buckets")
                    futures = [pool.submit(read, b, None, remaining) for b in batch]
                inner = None
                stop = False
                for k, (b, future) in enumerate(zip(batch, futures, strict=True)):
                    page = future.result()  # a bucket the page needs: its failure fails it
                    count(page)
                    room = limit - len(items)
                    if len(page.items) > room:  # read ahead with more room than is left
                        page = read(b, None, room)
                        count(page)
                    items.extend({**item, "key": key} for item in page.items)
                    missing.extend(page.missing_shards)
                    if page.cursor is not None:  # the page filled (or a shard failed) here
                        next_cursor = BucketCursor(fingerprint, b, page.cursor).encode()
                    elif len(items) >= limit and pos + k + 1 < len(order):
                        # Filled exactly at this bucket's end: resume this bucket after its
                        # last item, not the next bucket from its start (an event written
                        # between pages just past the cursor, in this bucket, must be
                        # read). A reader giving no resume position leaves the old way.
                        next_cursor = (
                            BucketCursor(fingerprint, b, page.resume).encode()
                            if page.resume is not None
                            else BucketCursor(fingerprint, order[pos + k + 1]).encode()
                        )
                    if page.cursor is not None or len(items) >= limit:
                        spare = futures[k + 1 :]
                        stop = True
                        break
                if stop:
                    break
                pos += len(batch)
                width = min(2 * width, MAX_PARALLEL_BUCKETS)
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        for future in spare:  # read ahead, not needed: its Queries were sent all the same
            if not future.cancelled() and future.exception() is None:
                count(future.result())
        shards, queries = stats
        result = Page(
            items=items,
            cursor=next_cursor,
            missing_shards=sorted(missing),
            shards_queried=shards,
            queries=queries,
        )
        result.plan = plan_read(
            base_shards=max(1, shards),
            buckets=None,
            consistent=consistent,
            path=ReadPath.BASE,
            expected_bytes=limit * DEFAULT_ITEM_BYTES,
            gsi1_unavailable=GSI1_UNAVAILABLE,
        )
        return result


def _done(page: Page) -> Future[Page]:
    """Wrap ``page`` in a finished future (the first bucket is read in the caller's thread)."""
    future: Future[Page] = Future()
    future.set_result(page)
    return future


__all__ = [
    "BUCKETED_TAG",
    "MAX_PARALLEL_BUCKETS",
    "MAX_WINDOW_BUCKETS",
    "BucketCursor",
    "BucketFamily",
    "BucketPageReader",
    "BucketedReader",
    "bucket_key",
    "bucketed_fingerprint",
    "family_of",
    "parse_bucketed_keys",
    "window_bucket_keys",
    "write_key",
]
