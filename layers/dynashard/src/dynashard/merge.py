"""Streaming k-way merge of shard streams and the opaque pagination cursor (pure).

Each shard returns its items in sort-key order; :func:`merge_page` merges them with a
heap (``heapq``) into one page in exact ascending or descending sort-key order,
collapsing identical sort keys (the same event stored under two shard counts, see
invariant 2), and says where the page ended.

The cursor carries every shard's position: because the merge is in global order, when
a page ends at sort key ``p`` every live shard has had each item up to ``p`` emitted, so
one position serves all live shards, and shards that ran out are listed as done. The
next page resumes every live shard strictly after ``p``: no gap, no overlap (invariant 4).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import heapq
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from dynashard.errors import CursorError

T = TypeVar("T")
_CURSOR_VERSION = 1


class _Desc:
    """Inverts string order so that ``heapq`` (a min-heap) pops the largest first."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __lt__(self, other: _Desc) -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)


@dataclass
class MergedPage(Generic[T]):
    """A merged page.

    Attributes
    ----------
    items : list
        At most ``limit`` items in sort-key order, identical sort keys collapsed.
    last_sort_key : str or None
        Sort key of the last item emitted.
    exhausted : set of int
        Indexes of the streams that ran out (every item of theirs was consumed).
    duplicates : int
        Items dropped because their sort key equalled the previous one.
    """

    items: list[T] = field(default_factory=list)
    last_sort_key: str | None = None
    exhausted: set[int] = field(default_factory=set)
    duplicates: int = 0


def merge_page(
    streams: list[Iterator[tuple[str, T]]], limit: int, descending: bool = False
) -> MergedPage[T]:
    """Merge sorted streams of ``(sort_key, item)`` into one page of at most ``limit``.

    Parameters
    ----------
    streams : list of iterator of (str, T)
        One iterator per shard, each in the requested order. Iterators are consumed
        lazily: at most one item beyond the page is drawn from each.
    limit : int
        Page size, ``limit >= 1``.
    descending : bool
        Largest sort key first when True.

    Returns
    -------
    MergedPage
        The page, where it ended, and which streams ran out.

    Examples
    --------
    Two shards, one event stored on both (sort key ``c``): the page is in order and
    holds ``c`` once.

    >>> shard_0 = iter([("a", "A"), ("c", "C"), ("e", "E")])
    >>> shard_1 = iter([("b", "B"), ("c", "C"), ("d", "D")])
    >>> page = merge_page([shard_0, shard_1], limit=3)
    >>> page.items, page.last_sort_key, page.duplicates
    (['A', 'B', 'C'], 'c', 1)

    Descending, each stream newest first; both run out before the limit:

    >>> page = merge_page([iter([("e", "E"), ("a", "A")]), iter([("d", "D")])], 10, True)
    >>> page.items, sorted(page.exhausted)
    (['E', 'D', 'A'], [0, 1])
    """
    page: MergedPage[T] = MergedPage()
    heap: list[tuple[Any, int, T]] = []
    wrap: Any = _Desc if descending else str

    def advance(index: int) -> None:
        try:
            sk, item = next(streams[index])
        except StopIteration:
            page.exhausted.add(index)
            return
        heapq.heappush(heap, (wrap(sk), index, item))

    for index in range(len(streams)):
        advance(index)
    while heap and len(page.items) < limit:
        key, index, item = heapq.heappop(heap)
        sk = key.value if descending else key
        if sk == page.last_sort_key:
            page.duplicates += 1
        else:
            page.items.append(item)
            page.last_sort_key = sk
        advance(index)
    # Identical sort keys still at the head of other streams are duplicates of the last
    # item emitted; consume them so the next page does not start with them.
    while heap and (heap[0][0].value if descending else heap[0][0]) == page.last_sort_key:
        _, index, _ = heapq.heappop(heap)
        page.duplicates += 1
        advance(index)
    return page


@dataclass(frozen=True)
class Cursor:
    """Where the next page of a scatter-gather read starts.

    Attributes
    ----------
    query : str
        Fingerprint of the query (key, range, order) the cursor belongs to.
    position : str
        Sort key of the last item returned; live shards resume strictly after it.
    done : frozenset of int
        Shards that had no more items in the range.

    Examples
    --------
    A cursor survives the round trip only for the query it was made for:

    >>> query = query_fingerprint("DEPARTURES#JFK", None, None, "asc")
    >>> cursor = Cursor(query, "2013-01-01T10:15:00.000000Z#f1", frozenset({2}))
    >>> Cursor.decode(cursor.encode(), query) == cursor
    True
    >>> Cursor.decode(cursor.encode(), query_fingerprint("DEPARTURES#LGA"))
    Traceback (most recent call last):
    ...
    dynashard.errors.CursorError: cursor: belongs to another query (key, from, to or order differ)
    """

    query: str
    position: str
    done: frozenset[int] = frozenset()

    def encode(self) -> str:
        """Return the cursor as opaque URL-safe text.

        Returns
        -------
        str
            URL-safe base64 of a small JSON document, no padding.
        """
        doc = {"v": _CURSOR_VERSION, "q": self.query, "p": self.position, "d": sorted(self.done)}
        raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")

    @classmethod
    def decode(cls, text: str, expected_query: str) -> Cursor:
        """Parse a cursor made by :meth:`encode` for the same query.

        Parameters
        ----------
        text : str
            The opaque cursor.
        expected_query : str
            Fingerprint of the query now being run.

        Returns
        -------
        Cursor
            The parsed cursor.

        Raises
        ------
        CursorError
            If the text is not a cursor, is of another version, or belongs to another
            query (another key, range or order).
        """
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            doc = json.loads(raw.decode("utf-8"))
            version, query, position, done = doc["v"], doc["q"], doc["p"], doc["d"]
            if not isinstance(position, str) or not all(isinstance(d, int) for d in done):
                raise TypeError("bad field types")
        except (binascii.Error, ValueError, UnicodeDecodeError, KeyError, TypeError) as exc:
            raise CursorError("is not a cursor returned by this API") from exc
        if version != _CURSOR_VERSION:
            raise CursorError(f"has version {version}, expected {_CURSOR_VERSION}")
        if query != expected_query:
            raise CursorError("belongs to another query (key, from, to or order differ)")
        return cls(query, position, frozenset(done))


def query_fingerprint(*parts: object) -> str:
    """Return a short stable fingerprint of a query's defining parts.

    Parameters
    ----------
    *parts : object
        JSON-serializable values (key, bounds, order).

    Returns
    -------
    str
        16 hex characters of SHA-256.

    Examples
    --------
    >>> query_fingerprint("DEPARTURES#JFK", None, None, "asc")
    'bf7d9ac26f047d4c'
    """
    raw = json.dumps(parts, separators=(",", ":"), default=str).encode("utf-8")
    return hashlib.sha256(raw).hexdigest()[:16]
