"""Time buckets: the truncations of event time (``hour``, ``day``, ``month``) and their windows.

A time bucket labels the GSI1 partition keys of a logical key
(``{logical}#{bucket}#{g}``, :func:`dynashard.core.keys.gsi1_partition_key`) and the
logical keys of a time-bucketed family (``{family}#{label}``,
:mod:`dynashard.core.families`). Labels are UTC and fixed width, so their byte order is
time order: ``2013-01-01T05`` (hour), ``2013-01-01`` (day), ``2013-01`` (month).

:func:`time_bucket` labels one time; :func:`bucket_start` and :func:`next_bucket` walk
bucket boundaries; :func:`window_buckets` lists the buckets a read window ``[start,
end)`` overlaps, up to a limit the caller gives (the read planner's
``MAX_GSI1_REQUESTS``, the bucketed reader's ``MAX_WINDOW_BUCKETS``);
:func:`parse_time_buckets` and :func:`bucket_for` read the per-key unit configuration
(``DYNASHARD_TIME_BUCKETS``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import StrEnum

from dynashard.core.times import as_utc
from dynashard.errors import InvalidInputError


class TimeBucket(StrEnum):
    """Truncation of an event time used in GSI keys and time-bucketed logical keys."""

    HOUR = "hour"
    DAY = "day"
    MONTH = "month"


def time_bucket(ts: datetime, bucket: TimeBucket | str) -> str:
    """Truncate a time to its bucket label, in UTC.

    Parameters
    ----------
    ts : datetime
        Event time (aware; naive is taken as UTC).
    bucket : TimeBucket or str
        ``hour``, ``day`` or ``month``.

    Returns
    -------
    str
        ``2013-01-01T10`` (hour), ``2013-01-01`` (day) or ``2013-01`` (month); the year
        always 4 digits (``0999-12``), so a label is a prefix of the sort keys
        (:func:`dynashard.core.keys.format_ts`) of its bucket's items and byte order is
        time order from year 1 to 9999.

    Raises
    ------
    InvalidInputError
        If ``bucket`` is not one of the three.

    Examples
    --------
    >>> ts = datetime(2013, 1, 1, 10, 15, tzinfo=UTC)
    >>> time_bucket(ts, "hour"), time_bucket(ts, TimeBucket.DAY), time_bucket(ts, "month")
    ('2013-01-01T10', '2013-01-01', '2013-01')
    >>> time_bucket(datetime(999, 12, 31, 23, tzinfo=UTC), "hour")
    '0999-12-31T23'
    >>> time_bucket(ts, "week")
    Traceback (most recent call last):
    ...
    dynashard.errors.InvalidInputError: time bucket: must be hour, day or month, got 'week'
    """
    try:
        unit = TimeBucket(bucket)
    except ValueError as exc:
        raise InvalidInputError(
            "time bucket", f"must be hour, day or month, got {bucket!r}"
        ) from exc
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    ts = ts.astimezone(UTC)
    # Formatted by hand: strftime's %Y gives "999", not "0999", below year 1000, and the
    # label must be the sort key's own prefix (format_ts pads the year to 4 digits).
    month = f"{ts.year:04d}-{ts.month:02d}"
    if unit is TimeBucket.HOUR:
        return f"{month}-{ts.day:02d}T{ts.hour:02d}"
    if unit is TimeBucket.DAY:
        return f"{month}-{ts.day:02d}"
    return month


def unit_of_label(label: str) -> TimeBucket | None:
    """Return the unit a bucket label was made with, by its fixed width.

    Parameters
    ----------
    label : str
        A label of :func:`time_bucket`.

    Returns
    -------
    TimeBucket or None
        ``hour`` (13 characters), ``day`` (10) or ``month`` (7); None for any other width.

    Examples
    --------
    >>> [unit_of_label(x) for x in ("2013-01-01T10", "2013-01-01", "2013-01", "x")]
    [<TimeBucket.HOUR: 'hour'>, <TimeBucket.DAY: 'day'>, <TimeBucket.MONTH: 'month'>, None]
    """
    return _UNIT_BY_WIDTH.get(len(label))


_UNIT_BY_WIDTH = {13: TimeBucket.HOUR, 10: TimeBucket.DAY, 7: TimeBucket.MONTH}


def parse_time_buckets(text: str) -> tuple[tuple[str, TimeBucket], ...]:
    """Parse a key-prefix -> time-bucket mapping, ``PREFIX=unit,PREFIX=unit``.

    Parameters
    ----------
    text : str
        Comma-separated ``prefix=unit`` pairs (unit ``hour``, ``day`` or ``month``);
        empty for none.

    Returns
    -------
    tuple of (str, TimeBucket)
        The pairs, longest prefix first (the order :func:`bucket_for` matches in).

    Raises
    ------
    InvalidInputError
        If a pair has no ``=``, an empty prefix, a unit that is not one of the three,
        or a prefix appears twice (field ``time_buckets``).

    Examples
    --------
    >>> parse_time_buckets("DEPARTURES#=hour, DEPARTURES#JFK=month")
    (('DEPARTURES#JFK', <TimeBucket.MONTH: 'month'>), ('DEPARTURES#', <TimeBucket.HOUR: 'hour'>))
    """
    pairs: dict[str, TimeBucket] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        prefix, sep, unit = part.rpartition("=")
        if not sep or not prefix:
            raise InvalidInputError("time_buckets", f"{part!r} is not PREFIX=hour|day|month")
        if prefix in pairs:
            raise InvalidInputError("time_buckets", f"prefix {prefix!r} appears twice")
        try:
            pairs[prefix] = TimeBucket(unit.strip())
        except ValueError as exc:
            raise InvalidInputError(
                "time_buckets", f"{part!r}: the unit must be hour, day or month"
            ) from exc
    return tuple(sorted(pairs.items(), key=lambda kv: (-len(kv[0]), kv[0])))


def bucket_for(
    key: str, prefixes: tuple[tuple[str, TimeBucket], ...], default: TimeBucket
) -> TimeBucket:
    """Return the time bucket of a logical key's GSI1 keys: its longest matching prefix's.

    Parameters
    ----------
    key : str
        Logical key.
    prefixes : tuple of (str, TimeBucket)
        From :func:`parse_time_buckets` (longest first).
    default : TimeBucket
        The unit of keys no prefix matches.

    Returns
    -------
    TimeBucket
        The unit.

    Examples
    --------
    >>> families = parse_time_buckets("DEPARTURES#=hour,DEPARTURES#JFK=month")
    >>> [bucket_for(k, families, TimeBucket.DAY).value
    ...  for k in ("DEPARTURES#JFK", "DEPARTURES#LGA", "COUNTER#x")]
    ['month', 'hour', 'day']
    """
    for prefix, unit in prefixes:
        if key.startswith(prefix):
            return unit
    return default


_STEP = {TimeBucket.HOUR: timedelta(hours=1), TimeBucket.DAY: timedelta(days=1)}


def bucket_start(ts: datetime, unit: TimeBucket) -> datetime:
    """Return the start of the time bucket holding ``ts``, UTC.

    Parameters
    ----------
    ts : datetime
        Aware time (naive is taken as UTC).
    unit : TimeBucket
        Bucket unit.

    Returns
    -------
    datetime
        The first instant of the bucket.

    Examples
    --------
    >>> bucket_start(datetime(2013, 1, 31, 10, 15, tzinfo=UTC), TimeBucket.MONTH).isoformat()
    '2013-01-01T00:00:00+00:00'
    """
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    ts = ts.astimezone(UTC)
    if unit is TimeBucket.HOUR:
        return ts.replace(minute=0, second=0, microsecond=0)
    if unit is TimeBucket.DAY:
        return ts.replace(hour=0, minute=0, second=0, microsecond=0)
    return ts.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_bucket(start: datetime, unit: TimeBucket) -> datetime | None:
    """Return the start of the bucket after the one starting at ``start``.

    Parameters
    ----------
    start : datetime
        A bucket start (:func:`bucket_start`).
    unit : TimeBucket
        Bucket unit.

    Returns
    -------
    datetime or None
        The next bucket's start; None after the last bucket of year 9999 (``datetime``
        holds no later time, so that bucket is the last one any window can reach).

    Examples
    --------
    >>> next_bucket(datetime(2013, 12, 1, tzinfo=UTC), TimeBucket.MONTH).date()
    datetime.date(2014, 1, 1)
    >>> next_bucket(datetime(9999, 12, 31, 23, tzinfo=UTC), TimeBucket.HOUR) is None
    True
    """
    if unit is TimeBucket.MONTH:
        year, month = divmod(start.month, 12)
        if start.year + year > datetime.max.year:
            return None
        return start.replace(year=start.year + year, month=month + 1)
    try:
        return start + _STEP[unit]
    except OverflowError:  # past 9999-12-31T23:59:59.999999
        return None


def window_buckets(
    start: datetime, end: datetime, unit: TimeBucket, limit: int
) -> list[str] | None:
    """Return the labels of the time buckets a window ``[start, end)`` overlaps.

    Parameters
    ----------
    start, end : datetime
        Window, start inclusive, end exclusive.
    unit : TimeBucket
        Bucket unit.
    limit : int
        Most buckets to list.

    Returns
    -------
    list of str or None
        Labels (:func:`~dynashard.core.buckets.time_bucket`), oldest first; None when the
        window overlaps more than ``limit`` buckets.

    Raises
    ------
    InvalidInputError
        If ``start >= end`` (field ``from``).

    Examples
    --------
    >>> t = datetime(2013, 1, 1, 22, 30, tzinfo=UTC)
    >>> window_buckets(t, t + timedelta(hours=3), TimeBucket.DAY, limit=10)
    ['2013-01-01', '2013-01-02']
    >>> window_buckets(t, t + timedelta(days=3), TimeBucket.HOUR, limit=10) is None
    True
    >>> window_buckets(datetime(9999, 12, 31, 22, tzinfo=UTC), datetime.max.replace(tzinfo=UTC),
    ...                TimeBucket.DAY, limit=10)
    ['9999-12-31']
    """
    start, end = as_utc(start, "from"), as_utc(end, "to")  # naive means UTC
    if start >= end:
        raise InvalidInputError("from", "must be earlier than to")
    labels: list[str] = []
    cursor: datetime | None = bucket_start(start, unit)
    while cursor is not None and cursor < end:
        if len(labels) == limit:
            return None
        labels.append(time_bucket(cursor, unit))
        cursor = next_bucket(cursor, unit)
    return labels
