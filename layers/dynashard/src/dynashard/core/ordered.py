"""Ordered range shards: a sorted index spread over N keys so that shard 0..N-1 is sorted.

Pure: no I/O. After the article "Ordered key sharding in DynamoDB" (the idea of N
equal-count ranges cut from a sample of real values, found by bisect); the I/O is in
:mod:`dynashard.dynamodb.ordered_index`.

A hash suffix spreads load but loses order between shards; the ``ordered`` strategy
cuts the space of *normalised* values into N contiguous ranges instead, with N - 1
boundaries computed from a sample of real values so that each range holds about the
same number of items. A value goes to the range shard ``bisect_right(boundaries,
normalise(value))``; listing shards 0..N-1 in turn, each in sort-key order, is the
whole index in order, with no merge between range shards. A prefix or ``[lo, hi)``
query touches only the range shards whose ranges intersect it.

Item shape (data table)
-----------------------
========  ==================================================================
``PK``    physical key of the item's range shard, :func:`range_physical_key`:
          ``{logical}#{shard}``, or ``{logical}#{shard}.{k}`` for sub-shard
          ``k >= 1`` of a range shard with several sub-shards (see below)
``SK``    :func:`ordered_sort_key`: ``{normalised value}`` + :data:`SK_SEPARATOR`
          + ``{item id}``
``key``   the logical key
``id``    the item id (unique within the logical key)
``value`` the value as given (before normalisation)
``shard`` range shard, ``sub`` sub-shard, ``data`` the payload map
========  ==================================================================

An entry's key depends on its value, so a re-put of an id with another value cannot
overwrite the old entry in place; each id has a pointer item instead
(:func:`id_pointer_key`: partition key ``#ORDERED#{32 hex of SHA-256 over logical key
and id}``, sort key :data:`POINTER_SORT_KEY`) that holds its entry's ``PK``/``SK``.
A write replaces through it (the I/O, a conditional transaction, is in
:mod:`dynashard.dynamodb.ordered_index`), so an id is listed once, at its latest value.

Why the separator is U+001F and not ``#``: DynamoDB orders string sort keys by their
UTF-8 bytes, which is code-point order, so ``{value}{sep}{id}`` sorts by value first
only if ``sep`` is below every character a value can hold. ``#`` (U+0023) is not:
spaces, ``!`` and ``"`` are below it, and ``"la"`` < ``"la guardia"`` while
``"la#x"`` > ``"la guardia#y"``. :func:`normalise` drops control characters
(category ``Cc``), so U+001F (the ASCII unit separator) is below every character of a
normalised value, and ``SK >= lo`` / ``SK < hi`` on sort keys are exactly
``value >= lo`` / ``value < hi`` on normalised values.

Hot values: sub-shards
----------------------
Boundaries cannot split one value: if thousands of items hold the same value (the
article's "Greatest Hits"), its range shard holds several shards' worth. Such a range
shard is spread over ``S`` physical keys (sub-shards) chosen by a hash of the item id,
``{logical}#{shard}`` for ``k = 0`` and ``{logical}#{shard}.{k}`` for ``k >= 1``
(:func:`sub_shards_from_sample` picks ``S = round(share / fair share)`` from the same
sample, so every physical key holds about one fair share). Order survives: every
sub-shard of range shard ``i`` lies inside range ``i``, so reading range shard ``i``
merges its ``S`` sub-shards by sort key (a ``heapq`` merge of a few sorted streams),
and range shards still follow one another without a merge. Boundaries and sub-shard
counts are fixed when a key is configured: changing them would move stored items.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dynashard.core.keys import MAX_SHARD_COUNT, MAX_SORT_KEY_BYTES, SEPARATOR, utf8_len
from dynashard.core.merge import decode_token, encode_token, query_fingerprint
from dynashard.core.strategies import Strategy, hash64
from dynashard.errors import InvalidInputError, KeyLimitExceededError

#: Separator between the normalised value and the item id in the sort key (U+001F).
SK_SEPARATOR: Final = "\x1f"
#: Separator between a range shard and its sub-shard in the physical key.
SUB_SHARD_SEPARATOR: Final = "."
#: Largest number of sub-shards of one range shard: a read of the range shard merges
#: that many sorted streams.
MAX_SUB_SHARDS: Final = 64
#: Name of the strategy in the metadata table (``strategy`` attribute).
ORDERED_STRATEGY: Final = Strategy.ORDERED.value
#: Partition-key prefix of the per-id pointer items (:func:`id_pointer_key`).
POINTER_PREFIX: Final = "#ORDERED#"
#: Sort key of a pointer item.
POINTER_SORT_KEY: Final = "#ORDERED"
_CURSOR_VERSION: Final = 1
_MAX_CODE_POINT: Final = 0x10FFFF


def normalise(value: str) -> str:
    """Return the normalised form of a value, whose code-point order is the index order.

    Unicode NFKD, combining marks dropped (``unicodedata.combining``), lower-cased and
    case-folded, control characters (category ``Cc``) dropped; repeated until stable,
    since case folding can produce characters that decompose again.

    Parameters
    ----------
    value : str
        Any text.

    Returns
    -------
    str
        The normalised text; ``normalise(normalise(v)) == normalise(v)``.

    Examples
    --------
    >>> normalise("Zürich Flughafen"), normalise("\uff2a\uff26\uff2b"), normalise("Straße")
    ('zurich flughafen', 'jfk', 'strasse')
    """
    current = value
    for _ in range(4):
        decomposed = unicodedata.normalize("NFKD", current)
        stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
        folded = stripped.lower().casefold()
        cleaned = "".join(c for c in folded if unicodedata.category(c) != "Cc")
        if cleaned == current:
            break
        current = cleaned
    return current


def _shortest_separator(below: str, above: str) -> str:
    """Return the shortest prefix ``x`` of ``above`` with ``below < x <= above``."""
    common = 0
    for a, b in zip(below, above, strict=False):
        if a != b:
            break
        common += 1
    return above[: common + 1]


def boundaries_from_sample(values: Iterable[str], shards: int) -> list[str]:
    """Compute the ``shards - 1`` boundaries of N equal-count ranges from a sample.

    The sample is normalised and sorted; cut ``i`` goes between the two distinct values
    nearest to the sample's ``i / N`` quantile (cuts never split a run of equal values,
    and stay strictly increasing), and each boundary is shortened to the shortest prefix
    of the value above the cut that is still greater than the value below it. Range
    shard ``i`` holds the normalised values ``boundaries[i-1] <= v < boundaries[i]``.

    Parameters
    ----------
    values : iterable of str
        A sample of real values (raw; normalised here), e.g. 10 % of the rows.
    shards : int
        N, ``1 <= N <= 1000`` (:data:`~dynashard.core.keys.MAX_SHARD_COUNT`).

    Returns
    -------
    list of str
        ``N - 1`` strictly increasing normalised strings (empty for N = 1).

    Raises
    ------
    InvalidInputError
        If N is out of range, or the sample holds fewer than N distinct normalised
        values (N ranges need N - 1 distinct cuts).

    Examples
    --------
    >>> boundaries_from_sample(["N101", "n102", "N2", "N3", "N301", "N4"], 3)
    ['n2', 'n30']
    """
    if not 1 <= shards <= MAX_SHARD_COUNT:
        raise InvalidInputError("shards", f"must be within 1..{MAX_SHARD_COUNT}, got {shards}")
    counts = Counter(normalise(v) for v in values)
    distinct = sorted(counts)
    if len(distinct) < shards:
        raise InvalidInputError(
            "values",
            f"hold {len(distinct)} distinct normalised values; {shards} ranges need {shards}",
        )
    if shards == 1:
        return []
    # cumulative[j] = sample values strictly below distinct[j]; a cut "at j" puts
    # distinct[j] first in the upper range, for j in 1..K-1.
    cumulative = [0]
    for value in distinct:
        cumulative.append(cumulative[-1] + counts[value])
    total = cumulative[-1]
    cuts: list[int] = []
    for i in range(1, shards):
        target = total * i / shards
        j = bisect.bisect_left(cumulative, target, 1, len(distinct))
        if j > 1 and target - cumulative[j - 1] <= cumulative[j] - target:
            j -= 1
        lowest = cuts[-1] + 1 if cuts else 1
        highest = len(distinct) - (shards - i)
        cuts.append(min(max(j, lowest), highest))
    return [_shortest_separator(distinct[j - 1], distinct[j]) for j in cuts]


def validate_boundaries(boundaries: Sequence[str], field: str = "boundaries") -> None:
    """Check boundaries are normalised, non-empty, strictly increasing and at most 999.

    Parameters
    ----------
    boundaries : sequence of str
        N - 1 boundaries.
    field : str
        Name to report in the error.

    Raises
    ------
    InvalidInputError
        If a boundary is empty or not normalised, they are not strictly increasing, or
        there are more than ``MAX_SHARD_COUNT - 1``.

    Examples
    --------
    >>> validate_boundaries(["b", "a"])
    Traceback (most recent call last):
    ...
    dynashard.errors.InvalidInputError: boundaries: must be strictly increasing; 'a' follows 'b'
    """
    if len(boundaries) > MAX_SHARD_COUNT - 1:
        raise InvalidInputError(field, f"at most {MAX_SHARD_COUNT - 1}, got {len(boundaries)}")
    for index, boundary in enumerate(boundaries):
        if not boundary or normalise(boundary) != boundary:
            raise InvalidInputError(field, f"[{index}] {boundary!r} is empty or not normalised")
        if index and boundaries[index - 1] >= boundary:
            raise InvalidInputError(
                field,
                f"must be strictly increasing; {boundary!r} follows {boundaries[index - 1]!r}",
            )


def range_shard(boundaries: Sequence[str], value: str) -> int:
    """Return the range shard of a value: ``bisect_right(boundaries, normalise(value))``.

    Parameters
    ----------
    boundaries : sequence of str
        Strictly increasing normalised boundaries (N - 1 of them).
    value : str
        A raw value.

    Returns
    -------
    int
        ``0 <= shard < len(boundaries) + 1``; monotone: ``normalise(a) <= normalise(b)``
        implies ``range_shard(a) <= range_shard(b)``.

    Examples
    --------
    >>> [range_shard(["n2", "n4"], value) for value in ("N101", "n2", "Z")]
    [0, 1, 2]
    """
    return bisect.bisect_right(boundaries, normalise(value))


def prefix_successor(prefix: str) -> str | None:
    """Return the least string greater than every string that starts with ``prefix``.

    Parameters
    ----------
    prefix : str
        A (normalised) prefix.

    Returns
    -------
    str or None
        The exclusive upper bound of the prefix's range; None when there is none (the
        prefix is empty or all U+10FFFF).

    Examples
    --------
    >>> prefix_successor("n1"), prefix_successor("")
    ('n2', None)
    """
    trimmed = prefix.rstrip(chr(_MAX_CODE_POINT))
    if not trimmed:
        return None
    last = ord(trimmed[-1]) + 1
    if 0xD800 <= last <= 0xDFFF:  # skip the surrogates, which UTF-8 cannot encode
        last = 0xE000
    return trimmed[:-1] + chr(last)


def shards_for_range(boundaries: Sequence[str], lo: str | None, hi: str | None) -> range:
    """Return the range shards whose ranges intersect the normalised values ``[lo, hi)``.

    Parameters
    ----------
    boundaries : sequence of str
        Strictly increasing normalised boundaries.
    lo : str or None
        Inclusive lower bound, normalised; None for no bound.
    hi : str or None
        Exclusive upper bound, normalised; None for no bound.

    Returns
    -------
    range
        Consecutive shard indexes, empty when ``lo >= hi``.

    Examples
    --------
    >>> list(shards_for_range(["c", "f", "k"], "d", "g")), list(shards_for_range(["c"], "x", "a"))
    ([1, 2], [])
    """
    first = 0 if lo is None else bisect.bisect_right(boundaries, lo)
    last = len(boundaries) if hi is None else bisect.bisect_left(boundaries, hi)
    if hi == "" or (lo is not None and hi is not None and lo >= hi):
        return range(0)  # nothing is below "", nor in [lo, hi) when lo >= hi
    return range(first, last + 1)


def value_bounds(
    prefix: str | None = None, start: str | None = None, end: str | None = None
) -> tuple[str | None, str | None]:
    """Turn a prefix or a raw ``[start, end)`` into normalised ``[lo, hi)`` bounds.

    Parameters
    ----------
    prefix : str, optional
        Values starting with it (after normalisation); excludes ``start``/``end``.
    start : str, optional
        Inclusive lower bound (raw).
    end : str, optional
        Exclusive upper bound (raw).

    Returns
    -------
    tuple of (str or None, str or None)
        ``(lo, hi)``; None where unbounded.

    Raises
    ------
    InvalidInputError
        If ``prefix`` is given with ``start`` or ``end`` (field ``prefix``); or a bound
        is given but normalises to ``""`` (a lone combining mark, control characters),
        naming it: ``from`` for ``start``, ``to`` for ``end`` (the HTTP API's names),
        ``prefix``. Such a bound names no value of the index (every stored value
        normalises to at least one character), and DynamoDB refuses an empty key
        value; taking it as an open bound would answer another question than the one
        asked. Only ``prefix=""`` (empty as given) keeps meaning "every value".

    Examples
    --------
    >>> value_bounds(prefix="N1"), value_bounds(start="A", end="Ç")
    (('n1', 'n2'), ('a', 'c'))
    >>> value_bounds(start="\u0301")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dynashard.errors.InvalidInputError: from: '\u0301' normalises to "" (...), which orders no value
    """
    if prefix is not None:
        if start is not None or end is not None:
            raise InvalidInputError("prefix", "cannot be combined with from/to")
        lo = _normalised_bound(prefix, "prefix") if prefix else ""
        return (lo or None), prefix_successor(lo)
    return (
        None if start is None else _normalised_bound(start, "from"),
        None if end is None else _normalised_bound(end, "to"),
    )


def _normalised_bound(raw: str, field: str) -> str:
    """Return ``normalise(raw)``; refuse one that normalises to ``""`` (:func:`value_bounds`)."""
    bound = normalise(raw)
    if not bound:
        raise InvalidInputError(field, f"{_erased(raw)}, which orders no value")
    return bound


def _erased(raw: str) -> str:
    return f'{raw!r} normalises to "" (only combining marks or control characters)'


def sub_shards_from_sample(
    values: Iterable[str], boundaries: Sequence[str], max_sub_shards: int = MAX_SUB_SHARDS
) -> list[int]:
    """Sub-shard count of each range shard: ``share * N`` rounded, at least 1.

    ``share`` is the range shard's fraction of the sample; a balanced shard has 1/N
    and gets one physical key (so does one up to 1.5x its fair share, the sampling
    noise of equal-count ranges), a range shard holding a hot value (say 3 shards'
    worth of "Greatest Hits") gets 3, so each physical key holds about one fair share.

    Parameters
    ----------
    values : iterable of str
        The sample (raw values), typically the one the boundaries came from.
    boundaries : sequence of str
        The key's boundaries.
    max_sub_shards : int
        Cap per range shard (default 64: a range-shard read merges that many streams).

    Returns
    -------
    list of int
        One count per range shard, ``len(boundaries) + 1`` of them.

    Raises
    ------
    InvalidInputError
        If the sample is empty or ``max_sub_shards < 1``.

    Examples
    --------
    >>> sub_shards_from_sample(["a"] * 6 + ["b", "c"], ["b", "c"])
    [2, 1, 1]
    """
    if max_sub_shards < 1:
        raise InvalidInputError("max_sub_shards", f"must be >= 1, got {max_sub_shards}")
    sizes = [0] * (len(boundaries) + 1)
    for value in values:
        sizes[range_shard(boundaries, value)] += 1
    total = sum(sizes)
    if total == 0:
        raise InvalidInputError("values", "the sample is empty")
    return [
        min(max_sub_shards, max(1, math.floor(size * len(sizes) / total + 0.5))) for size in sizes
    ]


def sub_shard(item_id: str, sub_shards: int) -> int:
    """Return the sub-shard of an item: ``hash64(item_id) % sub_shards``.

    Parameters
    ----------
    item_id : str
        The item id; the same id always lands on the same physical key (idempotent).
    sub_shards : int
        ``S >= 1``.

    Returns
    -------
    int
        ``0 <= k < S``.

    Examples
    --------
    >>> sub_shard("N101UW", 1)
    0
    """
    return hash64(item_id) % sub_shards


def range_physical_key(logical: str, shard: int, sub: int = 0) -> str:
    """Return the physical key of range shard ``shard``, sub-shard ``sub``.

    Parameters
    ----------
    logical : str
        Logical key.
    shard : int
        Range shard, ``>= 0``.
    sub : int
        Sub-shard, ``>= 0``; 0 is the range shard's own key.

    Returns
    -------
    str
        ``{logical}#{shard}`` for ``sub = 0``, else ``{logical}#{shard}.{sub}``.

    Examples
    --------
    >>> range_physical_key("TAILNUM", 3), range_physical_key("TAILNUM", 3, 2)
    ('TAILNUM#3', 'TAILNUM#3.2')
    """
    base = f"{logical}{SEPARATOR}{shard}"
    return base if sub == 0 else f"{base}{SUB_SHARD_SEPARATOR}{sub}"


def ordered_sort_key(value: str, item_id: str) -> str:
    r"""Return the sort key ``{normalise(value)}\x1f{item_id}``: byte order is value order.

    Parameters
    ----------
    value : str
        The raw value.
    item_id : str
        Item id, non-empty.

    Returns
    -------
    str
        The sort key.

    Raises
    ------
    InvalidInputError
        Naming ``value``, if it normalises to ``""`` (empty, or only combining marks or
        control characters): it has no place in the order (see :func:`value_bounds`).
    KeyLimitExceededError
        If ``item_id`` is empty, or the sort key is over 1,024 bytes (DynamoDB quota)
        or not encodable as UTF-8.

    Examples
    --------
    >>> ordered_sort_key("N101UW", "f1")
    'n101uw\x1ff1'
    """
    if not item_id:
        raise KeyLimitExceededError("id", "must not be empty")
    normalised = normalise(value)
    if not normalised:
        raise InvalidInputError("value", f"{_erased(value)}, so it has no place in the order")
    sk = f"{normalised}{SK_SEPARATOR}{item_id}"
    try:
        size = utf8_len(sk)
    except UnicodeEncodeError as exc:
        raise KeyLimitExceededError("value", "is not encodable as UTF-8") from exc
    if size > MAX_SORT_KEY_BYTES:
        raise KeyLimitExceededError(
            "value", f"makes a sort key of {size} bytes, over DynamoDB's {MAX_SORT_KEY_BYTES}"
        )
    return sk


def id_pointer_key(logical: str, item_id: str) -> str:
    """Return the partition key of an id's pointer item (where its entry is stored).

    Parameters
    ----------
    logical : str
        The index's logical key.
    item_id : str
        The entry's id.

    Returns
    -------
    str
        ``#ORDERED#`` and 32 hex digits of SHA-256 over both: 41 bytes whatever their
        length (within the 2,048-byte partition key limit), one partition key per id, so
        pointers spread over partitions as evenly as ids do, and never share a key with
        an entry (range-shard keys end in ``#{digits}``).

    Examples
    --------
    >>> id_pointer_key("TAILNUM", "f1") == id_pointer_key("TAILNUM", "f1")
    True
    >>> id_pointer_key("TAILNUM", "f1") != id_pointer_key("CARRIER", "f1")
    True
    >>> len(id_pointer_key("TAILNUM", "f1"))
    41
    """
    digest = hashlib.sha256(f"{logical}\n{item_id}".encode()).hexdigest()[:32]
    return f"{POINTER_PREFIX}{digest}"


@dataclass(frozen=True)
class OrderedLayout:
    """The range shards of one ordered logical key: boundaries and sub-shard counts.

    Attributes
    ----------
    boundaries : tuple of str
        N - 1 strictly increasing normalised boundaries.
    sub_shards : tuple of int
        Physical keys per range shard (N of them, each ``1..MAX_SUB_SHARDS``).

    Raises
    ------
    InvalidInputError
        If the boundaries are invalid or ``sub_shards`` does not have N counts in range.

    Examples
    --------
    >>> layout = OrderedLayout(("n2", "n4"), (1, 3, 1))
    >>> layout.shard_count, layout.physical_keys("T", 1)
    (3, ['T#1', 'T#1.1', 'T#1.2'])
    """

    boundaries: tuple[str, ...]
    sub_shards: tuple[int, ...]

    def __post_init__(self) -> None:
        validate_boundaries(self.boundaries)
        if len(self.sub_shards) != len(self.boundaries) + 1 or not all(
            1 <= s <= MAX_SUB_SHARDS for s in self.sub_shards
        ):
            raise InvalidInputError(
                "sub_shards",
                f"need {len(self.boundaries) + 1} counts within 1..{MAX_SUB_SHARDS}, "
                f"got {list(self.sub_shards)}",
            )

    @classmethod
    def uniform(cls, boundaries: Sequence[str]) -> OrderedLayout:
        """Return a layout with one physical key per range shard.

        Parameters
        ----------
        boundaries : sequence of str
            The boundaries.

        Returns
        -------
        OrderedLayout
            ``sub_shards`` all 1.
        """
        return cls(tuple(boundaries), (1,) * (len(boundaries) + 1))

    @classmethod
    def from_sample(cls, values: Sequence[str], shards: int) -> OrderedLayout:
        """Compute boundaries and sub-shard counts from one sample.

        Parameters
        ----------
        values : sequence of str
            Sample of raw values.
        shards : int
            N.

        Returns
        -------
        OrderedLayout
            See :func:`boundaries_from_sample` and :func:`sub_shards_from_sample`.
        """
        boundaries = boundaries_from_sample(values, shards)
        return cls(tuple(boundaries), tuple(sub_shards_from_sample(values, boundaries)))

    @property
    def shard_count(self) -> int:
        """int: N, the number of range shards."""
        return len(self.boundaries) + 1

    def shard_of(self, value: str) -> int:
        """Return a value's range shard (:func:`range_shard`)."""
        return range_shard(self.boundaries, value)

    def physical_key_of(self, logical: str, value: str, item_id: str) -> tuple[int, int, str]:
        """Return ``(shard, sub, physical key)`` of an item.

        Parameters
        ----------
        logical : str
            Logical key.
        value : str
            The raw value.
        item_id : str
            The item id (picks the sub-shard).

        Returns
        -------
        tuple of (int, int, str)
            Range shard, sub-shard and physical partition key.
        """
        shard = self.shard_of(value)
        sub = sub_shard(item_id, self.sub_shards[shard])
        return shard, sub, range_physical_key(logical, shard, sub)

    def physical_keys(self, logical: str, shard: int) -> list[str]:
        """Return every physical key of one range shard, sub-shard 0 first."""
        return [range_physical_key(logical, shard, k) for k in range(self.sub_shards[shard])]

    def fingerprint(self) -> str:
        """str: 16 hex characters identifying the layout (cursors carry it)."""
        return query_fingerprint(list(self.boundaries), list(self.sub_shards))


@dataclass(frozen=True)
class OrderedCursor:
    r"""Where the next page of an ordered listing starts: one range shard, one position.

    Attributes
    ----------
    query : str
        Fingerprint of the query (key, bounds, layout).
    shard : int
        Range shard to resume in.
    position : str or None
        Sort key of the last item returned from that shard; None to start it afresh.

    Examples
    --------
    >>> cursor = OrderedCursor("q", 3, "n1\x1ff1")
    >>> OrderedCursor.decode(cursor.encode(), "q") == cursor
    True
    """

    query: str
    shard: int
    position: str | None = None

    def encode(self) -> str:
        """Return the cursor as opaque URL-safe text (base64 of small JSON, no padding)."""
        doc = {"v": _CURSOR_VERSION, "q": self.query, "s": self.shard, "p": self.position}
        return encode_token(doc)

    @classmethod
    def decode(cls, text: str, expected_query: str) -> OrderedCursor:
        """Parse a cursor made by :meth:`encode` for the same query.

        Parameters
        ----------
        text : str
            The opaque cursor.
        expected_query : str
            Fingerprint of the query now being run.

        Returns
        -------
        OrderedCursor
            The parsed cursor.

        Raises
        ------
        CursorError
            If the text is not a cursor, has another version, or belongs to another
            query or another layout of the key.
        """

        def fields(doc: dict[str, Any]) -> tuple[int, str | None]:
            shard, position = doc["s"], doc["p"]
            if not isinstance(shard, int) or shard < 0:
                raise TypeError("shard")
            if position is not None and not isinstance(position, str):
                raise TypeError("position")
            return shard, position

        shard, position = decode_token(
            text,
            expected_query,
            fields,
            version=_CURSOR_VERSION,
            origin="this index",
            query_parts="key, prefix, from or to",
        )
        return cls(expected_query, shard, position)


__all__ = [
    "MAX_SUB_SHARDS",
    "ORDERED_STRATEGY",
    "POINTER_PREFIX",
    "POINTER_SORT_KEY",
    "SK_SEPARATOR",
    "OrderedCursor",
    "OrderedLayout",
    "boundaries_from_sample",
    "id_pointer_key",
    "normalise",
    "ordered_sort_key",
    "prefix_successor",
    "range_physical_key",
    "range_shard",
    "shards_for_range",
    "sub_shard",
    "sub_shards_from_sample",
    "validate_boundaries",
    "value_bounds",
]
