"""Shard strategies: how a write picks its shard (time buckets are :mod:`dynashard.core.buckets`).

- ``random``: uniform over ``0..N-1``; by default derived from the event id, so a
  retried or redelivered event lands on the same item.
- ``calculated``: derived from a named attribute, so a reader who knows the attribute
  queries one shard per shard count in force.

Both map a 64-bit hash to a shard with the jump consistent hash (Lamping and Veach,
"A Fast, Minimal Memory, Consistent Hash Algorithm", 2014): growing N from ``n`` to
``m`` moves only about ``1 - n/m`` of the keys, so few events change shard across a
resize and targeted reads stay cheap.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

from dynashard.core.entropy import SYSTEM_RANDOM
from dynashard.errors import InvalidInputError

_JUMP_MULTIPLIER: Final = 2862933555777941757
_MASK64: Final = (1 << 64) - 1
#: Longest name of a ``calculated`` key's shard attribute, characters (a dynashard choice;
#: DynamoDB allows attribute names up to 64 KB, Developer Guide, "Quotas in Amazon
#: DynamoDB", attributes).
MAX_SHARD_ATTRIBUTE_LENGTH: Final = 255


class Strategy(StrEnum):
    """How a write picks its shard."""

    RANDOM = "random"
    CALCULATED = "calculated"
    #: Range boundaries + bisect (:mod:`dynashard.core.ordered`); written through
    #: :class:`dynashard.dynamodb.ordered_index.OrderedIndex`, not through the event writer.
    ORDERED = "ordered"


def hash64(value: str) -> int:
    """Return a stable 64-bit hash of ``value`` (BLAKE2b, first 8 bytes, big-endian).

    Parameters
    ----------
    value : str
        Any string; UTF-8 encoded.

    Returns
    -------
    int
        ``0 <= h < 2**64``, the same in every process and Python version.

    Examples
    --------
    Unlike the built-in ``hash``, the value does not change between processes:

    >>> hash64("DEPARTURES#JFK")
    14186616560132891430
    """
    return int.from_bytes(hashlib.blake2b(value.encode("utf-8"), digest_size=8).digest(), "big")


def jump_hash(key: int, buckets: int) -> int:
    """Map a 64-bit key to a bucket with the jump consistent hash.

    Parameters
    ----------
    key : int
        A 64-bit unsigned integer.
    buckets : int
        Number of buckets N, ``N >= 1``.

    Returns
    -------
    int
        Bucket in ``0..N-1``.

    Raises
    ------
    InvalidInputError
        If ``buckets < 1``.

    Notes
    -----
    Lamping and Veach, 2014, algorithm in figure 1.

    Examples
    --------
    Growing N moves a key only to a new bucket, never between old ones:

    >>> [jump_hash(hash64("f1"), n) for n in (1, 2, 4, 8)]
    [0, 1, 2, 6]
    >>> jump_hash(1, 0)
    Traceback (most recent call last):
    ...
    dynashard.errors.InvalidInputError: shard count: must be >= 1, got 0
    """
    if buckets < 1:
        raise InvalidInputError("shard count", f"must be >= 1, got {buckets}")
    key &= _MASK64
    b, j = -1, 0
    while j < buckets:
        b = j
        key = (key * _JUMP_MULTIPLIER + 1) & _MASK64
        j = int((b + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return b


def shard_for(value: str, shard_count: int) -> int:
    """Pick the shard of ``value`` among ``shard_count`` shards (jump hash of hash64).

    Parameters
    ----------
    value : str
        An event id (``random`` strategy) or the named attribute's value
        (``calculated`` strategy).
    shard_count : int
        N, ``N >= 1``.

    Returns
    -------
    int
        Shard in ``0..N-1``.

    Examples
    --------
    The same value keeps its shard while N grows from 3 to 6:

    >>> [shard_for("f1", n) for n in range(1, 9)]
    [0, 1, 2, 2, 2, 2, 6, 6]
    """
    return jump_hash(hash64(value), shard_count)


def random_shard(shard_count: int, event_id: str | None = None) -> int:
    """Pick a shard for the ``random`` strategy.

    Parameters
    ----------
    shard_count : int
        N, ``N >= 1``.
    event_id : str, optional
        When given (the default path), the shard is derived from it, so that a retry
        of the same event lands on the same item. Without it, a uniform random shard.

    Returns
    -------
    int
        Shard in ``0..N-1``.

    Examples
    --------
    A retried event lands on the same shard, hence on the same item:

    >>> random_shard(4, "f1") == random_shard(4, "f1") == shard_for("f1", 4)
    True
    >>> 0 <= random_shard(4) < 4
    True
    """
    if event_id is not None:
        return shard_for(event_id, shard_count)
    if shard_count < 1:
        raise InvalidInputError("shard count", f"must be >= 1, got {shard_count}")
    # The system's generator: no state a SnapStart snapshot could copy (core.entropy).
    return SYSTEM_RANDOM.randrange(shard_count)


def calculated_shards(value: str, shard_counts: set[int] | frozenset[int]) -> set[int]:
    """Return the shards that may hold items of ``value`` under any of ``shard_counts``.

    A targeted reader of a ``calculated`` key queries one shard per shard count that
    was in force; with the jump hash these are few and often the same shard.

    Parameters
    ----------
    value : str
        The named attribute's value.
    shard_counts : set of int
        Every shard count in force over the read window (from ``shard_history``).

    Returns
    -------
    set of int
        Shard numbers.

    Examples
    --------
    A tail number written while N was 1, 2, 4 and 8 is on at most four shards, and
    on one while N stayed 4:

    >>> sorted(calculated_shards("N12345", {1, 2, 4, 8}))
    [0, 1, 3, 5]
    >>> calculated_shards("N12345", {4})
    {3}
    """
    return {shard_for(value, n) for n in shard_counts}


def shard_attribute_value(data: Mapping[str, Any], attribute: str) -> str:
    """Return the value a ``calculated`` key shards by: ``data[attribute]`` as text.

    Strings are taken as they are; integers (not booleans) as their decimal digits, so
    that a reader who passes the value as query-string text reaches the same shard.

    Parameters
    ----------
    data : mapping
        The event's ``data`` payload.
    attribute : str
        The key's shard attribute (``shard_attribute`` in the metadata table).

    Returns
    -------
    str
        The non-empty text hashed into the shard.

    Raises
    ------
    InvalidInputError
        Naming the field ``data.{attribute}``, if it is missing, empty, or neither a
        string nor an integer: such an event has no shard under this strategy, and a
        random one would hide it from targeted reads.

    Examples
    --------
    >>> shard_attribute_value({"carrier": "UA", "flight": 1545}, "carrier")
    'UA'
    >>> shard_attribute_value({"flight": 1545}, "flight")
    '1545'
    >>> shard_attribute_value({"flight": 1545}, "carrier")
    Traceback (most recent call last):
    ...
    dynashard.errors.InvalidInputError: data.carrier: required by the calculated strategy, missing
    """
    field = f"data.{attribute}"
    if attribute not in data or data[attribute] is None:
        raise InvalidInputError(field, "required by the calculated strategy, missing")
    value = data[attribute]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidInputError(
            field, f"must be a string or an integer to shard by, got {type(value).__name__}"
        )
    text = str(value)
    if not text:
        raise InvalidInputError(field, "must not be empty to shard by")
    return text


def choose_shard(
    strategy: Strategy,
    shard_count: int,
    event_id: str,
    data: Mapping[str, Any],
    attribute: str | None = None,
) -> int:
    """Pick an event's shard under its key's strategy.

    Parameters
    ----------
    strategy : Strategy
        The key's strategy (metadata attribute ``strategy``).
    shard_count : int
        N in force for the writer, ``N >= 1``.
    event_id : str
        The event's id (``random``: a retry lands on the same item).
    data : mapping
        The event's payload (``calculated``: ``data[attribute]`` picks the shard).
    attribute : str, optional
        The shard attribute; required for ``calculated``.

    Returns
    -------
    int
        Shard in ``0..N-1``: ``shard_for(event_id, N)`` or ``shard_for(value, N)``.

    Raises
    ------
    InvalidInputError
        If the event lacks a usable ``data.{attribute}`` (see
        :func:`shard_attribute_value`), if ``calculated`` comes without an attribute,
        or if the strategy is not one a writer picks shards by.

    Examples
    --------
    Every event of one carrier goes to the same shard:

    >>> choose_shard(Strategy.CALCULATED, 8, "f1", {"carrier": "UA"}, "carrier") == (
    ...     choose_shard(Strategy.CALCULATED, 8, "f2", {"carrier": "UA"}, "carrier")
    ... ) == shard_for("UA", 8)
    True
    >>> choose_shard(Strategy.RANDOM, 8, "f1", {}) == shard_for("f1", 8)
    True
    """
    if strategy is Strategy.CALCULATED:
        if not attribute:
            raise InvalidInputError("shard_attribute", "the calculated strategy needs one")
        return shard_for(shard_attribute_value(data, attribute), shard_count)
    if strategy is Strategy.RANDOM:
        return random_shard(shard_count, event_id)
    raise InvalidInputError("strategy", f"a writer cannot pick shards by {strategy.value!r}")
