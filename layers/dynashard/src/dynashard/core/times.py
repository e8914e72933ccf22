"""Datetimes as the library takes them: naive means UTC, everywhere.

Pure: no I/O. Every public entry point that takes a ``datetime`` (the ``start`` and
``end`` of a read, a bucketed window, a CloudWatch window) passes it through
:func:`as_utc` first, so a naive and an aware datetime in one call compare as the
instants they name instead of raising Python's bare ``TypeError`` ("can't compare
offset-naive and offset-aware datetimes").
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload

from dynashard.errors import InvalidInputError


@overload
def as_utc(value: datetime, field: str) -> datetime: ...


@overload
def as_utc(value: None, field: str) -> None: ...


def as_utc(value: datetime | None, field: str) -> datetime | None:
    """Return a datetime as an aware datetime in UTC; a naive one is taken as UTC.

    Parameters
    ----------
    value : datetime or None
        Aware (any zone) or naive (taken as UTC, as :func:`~dynashard.core.keys.parse_ts`
        takes naive ISO-8601 text); None passes through (an open bound).
    field : str
        Name to report in the error (the caller's parameter, e.g. ``from``).

    Returns
    -------
    datetime or None
        The same instant with ``tzinfo=UTC``, or None.

    Raises
    ------
    InvalidInputError
        Naming ``field``, if the value is not a datetime, or its instant is outside the
        years 1..9999 in UTC (e.g. ``0001-01-01T00:00+01:00``).

    Examples
    --------
    >>> from datetime import timedelta, timezone
    >>> as_utc(datetime(2013, 1, 1, 10, 15), "from").isoformat()
    '2013-01-01T10:15:00+00:00'
    >>> as_utc(datetime(2013, 1, 1, 5, 15, tzinfo=timezone(timedelta(hours=-5))), "to")
    datetime.datetime(2013, 1, 1, 10, 15, tzinfo=datetime.timezone.utc)
    >>> as_utc("2013-01-01", "from")
    Traceback (most recent call last):
    ...
    dynashard.errors.InvalidInputError: from: must be a datetime, got str
    """
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(field, f"must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:
        raise InvalidInputError(field, f"is outside the years 1..9999 in UTC, got {value}") from exc


__all__ = ["as_utc"]
