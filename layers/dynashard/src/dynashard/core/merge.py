"""Streaming k-way merge of shard streams and the opaque pagination cursor (pure).

Each shard returns its items in sort-key order; :func:`merge_page` merges them with a
heap (``heapq``) into one page in exact ascending or descending sort-key order,
collapsing identical sort keys (the same event stored under two shard counts, see
invariant 2), and says where the page ended.

The cursor carries every shard's position: because the merge is in global order, when
a page ends at sort key ``p`` every shard has had each item up to ``p`` emitted, so one
position serves all shards, and shards that ran out are listed as done. The next page
resumes every shard strictly after ``p``, those that ran out too (an item written
between pages may land on any shard): no gap, no overlap (invariant 4).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import heapq
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from dynashard.errors import CursorError

T = TypeVar("T")
F = TypeVar("F")
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
        Sort key of the last item returned; shards resume strictly after it.
    done : frozenset of int
        Shards that had no more items in the range when the page was read (the readers
        query them again: an item may have been written to one since).

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
        return encode_token(doc)

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

        def fields(doc: dict[str, Any]) -> tuple[str, list[int]]:
            position, done = doc["p"], doc["d"]
            if not isinstance(position, str) or not all(isinstance(d, int) for d in done):
                raise TypeError("bad field types")
            return position, done

        position, done = decode_token(
            text,
            expected_query,
            fields,
            version=_CURSOR_VERSION,
            origin="this API",
            query_parts="key, from, to or order",
        )
        return cls(expected_query, position, frozenset(done))


def encode_token(doc: dict[str, Any]) -> str:
    """Return a small JSON document as opaque URL-safe text (a pagination token).

    Parameters
    ----------
    doc : dict of str to Any
        JSON-serializable document; cursors carry their version in ``"v"`` and their
        query fingerprint in ``"q"`` so that :func:`decode_token` can check them.

    Returns
    -------
    str
        URL-safe base64 of the compact UTF-8 JSON, no padding.

    Examples
    --------
    >>> encode_token({"v": 1, "q": "abc"})
    'eyJ2IjoxLCJxIjoiYWJjIn0'
    """
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_token(
    text: str,
    expected_query: str,
    fields: Callable[[dict[str, Any]], F],
    *,
    version: int,
    origin: str,
    query_parts: str,
) -> F:
    """Parse a token made by :func:`encode_token` and check its version and query.

    Parameters
    ----------
    text : str
        The opaque token.
    expected_query : str
        Fingerprint of the query now being run; the token's ``"q"`` must equal it.
    fields : callable
        Takes the parsed document and returns the caller's fields; raises
        ``KeyError``, ``TypeError`` or ``ValueError`` when a field is missing or of
        the wrong type.
    version : int
        The version the token's ``"v"`` must equal.
    origin : str
        Who makes such tokens, for the error message (``"this API"``).
    query_parts : str
        What defines the query, for the error message (``"key, from, to or order"``).

    Returns
    -------
    F
        What ``fields`` returned.

    Raises
    ------
    CursorError
        If the text is not such a token (bad base64, UTF-8 or JSON, a missing field or
        one ``fields`` rejects), has another version, or belongs to another query.

    Examples
    --------
    >>> decode_token(encode_token({"v": 1, "q": "abc", "n": 5}), "abc", lambda d: d["n"],
    ...              version=1, origin="this API", query_parts="key")
    5
    >>> decode_token(encode_token({"v": 2, "q": "abc"}), "abc", lambda d: None,
    ...              version=1, origin="this API", query_parts="key")
    Traceback (most recent call last):
    ...
    dynashard.errors.CursorError: cursor: has version 2, expected 1
    """
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        doc = json.loads(raw.decode("utf-8"))
        seen_version, query = doc["v"], doc["q"]
        value = fields(doc)
    except (binascii.Error, ValueError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise CursorError(f"is not a cursor returned by {origin}") from exc
    if seen_version != version:
        raise CursorError(f"has version {seen_version}, expected {version}")
    if query != expected_query:
        raise CursorError(f"belongs to another query ({query_parts} differ)")
    return value


def query_fingerprint(*parts: object) -> str:
    """Return a short stable fingerprint of a query's defining parts.

    Parameters
    ----------
    *parts : object
        The query's defining values (key, bounds, order): JSON values, and any other
        (a ``datetime``, a ``Decimal``) as its ``str()``.

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
