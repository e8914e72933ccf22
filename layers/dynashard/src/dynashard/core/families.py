"""Time-bucketed key families: which logical keys are bucketed, and their bucket keys (pure).

A key family such as ``OPS_LOG`` or ``THREAT#{brand}`` that only ever grows (an
append-only log) is configured as bucketed by ``hour``, ``day`` or ``month``
(:func:`parse_bucketed_keys`, ``DYNASHARD_BUCKETED_KEYS="OPS_LOG=day,THREAT#=month"``).
A write of an event under the family goes to the logical key of its event time's bucket,
``{family}#{label}`` (:func:`write_key`: ``OPS_LOG#2026-06-22``,
``THREAT#brand-abc#2026-06``), so the per-partition write ceiling applies per bucket,
not per all time (after the daily bucketed keys of "Sharding Hot Partitions in
DynamoDB", dev.to, 2026). A read of a window lists the window's bucket keys
(:func:`window_bucket_keys`) and reads them in order
(:class:`dynashard.dynamodb.bucketed_reader.BucketedReader`).

Family matching (:func:`family_of`): a configured name ending in ``#`` (``THREAT#``) is a
prefix and matches every longer key that starts with it (``THREAT#brand-abc``); any
other name (``OPS_LOG``) matches that exact key only (``OPS_LOG#x`` is not in the
family). The exact name wins over a prefix, then the longest prefix. Keys that match
no family are not bucketed. A family key must be written and read as the family (not
as a bucket key): ``THREAT#brand-abc#2026-06`` matches ``THREAT#`` and would be bucketed
once more.

The unit passed to these functions must be the family's stored unit, not merely the
configured one: the facade stores the configured unit with the family key at its first
write (metadata attribute ``bucket_unit``, :mod:`dynashard.dynamodb.family_units`), reads
with the stored unit, and refuses a write whose configured unit differs (events of one
family are never split over two bucket layouts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final

from dynashard.core.buckets import TimeBucket, parse_time_buckets, time_bucket, window_buckets
from dynashard.core.keys import SEPARATOR, format_ts
from dynashard.core.times import as_utc
from dynashard.errors import InvalidInputError

if TYPE_CHECKING:
    pass


#: Most buckets one window may span. A page reads its buckets one after another and an
#: empty bucket still costs a metadata GetItem and a Query per shard, so a window is
#: bounded (a dynashard choice: 1,000 days is about 2.7 years, 1,000 hours about 41
#: days, 1,000 months about 83 years).
MAX_WINDOW_BUCKETS: Final = 1000


@dataclass(frozen=True)
class BucketFamily:
    """A configured family of time-bucketed logical keys.

    Attributes
    ----------
    name : str
        The configured name: ``OPS_LOG`` (exact key) or ``THREAT#`` (prefix).
    unit : TimeBucket
        Bucket size.
    """

    name: str
    unit: TimeBucket

    @property
    def is_prefix(self) -> bool:
        """bool: Whether the name is a prefix (ends with ``#``) rather than one key."""
        return self.name.endswith(SEPARATOR)

    def matches(self, key: str) -> bool:
        """Tell whether a logical key belongs to the family.

        Parameters
        ----------
        key : str
            Logical key.

        Returns
        -------
        bool
            ``key == name`` for an exact name; ``key`` starts with ``name`` and is
            longer for a prefix.

        Examples
        --------
        >>> BucketFamily("THREAT#", TimeBucket.MONTH).matches("THREAT#brand-abc")
        True
        >>> BucketFamily("OPS_LOG", TimeBucket.DAY).matches("OPS_LOG#2026-06-22")
        False
        """
        if self.is_prefix:
            return len(key) > len(self.name) and key.startswith(self.name)
        return key == self.name


def parse_bucketed_keys(text: str) -> tuple[BucketFamily, ...]:
    """Parse the bucketed key families, ``NAME=unit,NAME=unit`` (``DYNASHARD_BUCKETED_KEYS``).

    Parameters
    ----------
    text : str
        Comma-separated ``name=unit`` pairs, unit ``hour``, ``day`` or ``month``; a
        name ending in ``#`` is a prefix, any other an exact key. Empty for none.

    Returns
    -------
    tuple of BucketFamily
        Longest name first.

    Raises
    ------
    InvalidInputError
        Field ``bucketed_keys``: a pair without ``=``, an empty name, a name that is
        only ``#``, an unknown unit, or a name given twice.

    Examples
    --------
    >>> [(f.name, f.unit.value) for f in parse_bucketed_keys("OPS_LOG=day, THREAT#=month")]
    [('OPS_LOG', 'day'), ('THREAT#', 'month')]
    """
    try:
        pairs = parse_time_buckets(text)
    except InvalidInputError as exc:
        raise InvalidInputError(
            "bucketed_keys", exc.message.removeprefix(f"{exc.field}: ")
        ) from exc
    for name, _ in pairs:
        if not name.strip(SEPARATOR) or name != name.strip():
            raise InvalidInputError("bucketed_keys", f"{name!r} is not a key family name")
    return tuple(BucketFamily(name, unit) for name, unit in pairs)


def family_of(key: str, families: Sequence[BucketFamily]) -> BucketFamily | None:
    """Return the family a logical key belongs to, if any.

    Parameters
    ----------
    key : str
        Logical key.
    families : sequence of BucketFamily
        From :func:`parse_bucketed_keys`.

    Returns
    -------
    BucketFamily or None
        The exact-name family, else the longest matching prefix family; None when the
        key is not bucketed.

    Examples
    --------
    >>> families = parse_bucketed_keys("OPS_LOG=day,THREAT#=month,THREAT#vip=hour")
    >>> [getattr(family_of(k, families), "name", None)
    ...  for k in ("OPS_LOG", "OPS_LOG#2026-06-22", "THREAT#abc", "THREAT#vip", "THREAT#")]
    ['OPS_LOG', None, 'THREAT#', 'THREAT#vip', None]
    """
    exact = [f for f in families if not f.is_prefix and f.matches(key)]
    if exact:
        return exact[0]
    prefixes = sorted((f for f in families if f.is_prefix and f.matches(key)), key=_longest)
    return prefixes[0] if prefixes else None


def _longest(family: BucketFamily) -> int:
    return -len(family.name)


def bucket_key(key: str, ts: datetime, unit: TimeBucket) -> str:
    """Return the logical key of the bucket an event time falls in: ``{key}#{label}``.

    Labels (:func:`~dynashard.core.buckets.time_bucket`) are fixed-width ISO-8601
    truncations in UTC, so the bucket keys of one family sort in time order.

    Parameters
    ----------
    key : str
        The family key the event was written under.
    ts : datetime
        Event time (naive is UTC).
    unit : TimeBucket
        Bucket size.

    Returns
    -------
    str
        The bucket key.

    Examples
    --------
    >>> from datetime import UTC
    >>> ts = datetime(2026, 6, 22, 1, 0, tzinfo=UTC)
    >>> bucket_key("OPS_LOG", ts, TimeBucket.DAY), bucket_key("THREAT#abc", ts, TimeBucket.MONTH)
    ('OPS_LOG#2026-06-22', 'THREAT#abc#2026-06')
    """
    return f"{key}{SEPARATOR}{time_bucket(ts, unit)}"


def write_key(key: str, ts: datetime, families: Sequence[BucketFamily]) -> str:
    """Return the logical key an event of ``key`` at ``ts`` is written under.

    Parameters
    ----------
    key : str
        The event's key.
    ts : datetime
        Its event time.
    families : sequence of BucketFamily
        The configured families.

    Returns
    -------
    str
        Its bucket key (:func:`bucket_key`) when ``key`` is in a family, else ``key``.

    Examples
    --------
    >>> from datetime import UTC
    >>> ts = datetime(2026, 6, 22, 1, tzinfo=UTC)
    >>> families = parse_bucketed_keys("OPS_LOG=day")
    >>> write_key("OPS_LOG", ts, families), write_key("DEPARTURES#JFK", ts, families)
    ('OPS_LOG#2026-06-22', 'DEPARTURES#JFK')
    """
    family = family_of(key, families)
    return key if family is None else bucket_key(key, ts, family.unit)


def window_bucket_keys(
    key: str,
    unit: TimeBucket,
    start: datetime | None,
    end: datetime | None,
    limit: int = MAX_WINDOW_BUCKETS,
) -> list[str]:
    """Return the bucket keys covering a window ``[start, end)``, oldest first.

    Parameters
    ----------
    key : str
        Family key.
    unit : TimeBucket
        Bucket size.
    start, end : datetime or None
        Window, start inclusive, end exclusive. Both are required: a bucketed family
        has no "all time" (its buckets are not listed anywhere).
    limit : int
        Most buckets (:data:`MAX_WINDOW_BUCKETS`).

    Returns
    -------
    list of str
        ``{key}#{label}`` of every bucket the window overlaps.

    Raises
    ------
    InvalidInputError
        Field ``from`` (missing, or not before ``to``) or ``to`` (missing, or the window
        spans more than ``limit`` buckets).

    Examples
    --------
    >>> from datetime import UTC
    >>> t = datetime(2026, 6, 22, 23, tzinfo=UTC)
    >>> window_bucket_keys("OPS_LOG", TimeBucket.DAY, t, t.replace(day=24, hour=1))
    ['OPS_LOG#2026-06-22', 'OPS_LOG#2026-06-23', 'OPS_LOG#2026-06-24']
    """
    if start is None:
        raise InvalidInputError("from", f"required: {key!r} is time-bucketed by {unit}")
    if end is None:
        raise InvalidInputError("to", f"required: {key!r} is time-bucketed by {unit}")
    start, end = as_utc(start, "from"), as_utc(end, "to")  # naive means UTC
    if start >= end:
        raise InvalidInputError("from", f"must be earlier than to ({format_ts(start)})")
    labels = window_buckets(start, end, unit, limit=limit)
    if labels is None:
        raise InvalidInputError(
            "to", f"the window spans more than {limit} {unit} buckets of {key!r}; narrow from/to"
        )
    return [f"{key}{SEPARATOR}{label}" for label in labels]
