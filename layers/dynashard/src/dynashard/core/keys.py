"""Key formats and DynamoDB's key and item limits.

Physical key ``{logical}#{shard}``, time-series sort key ``{ts}#{event_id}`` with a
fixed-width UTC ISO-8601 timestamp (``2013-01-01T10:15:00.000000Z``: microseconds and
``Z``), so that byte order of the sort key is time order.

Limits are those of the DynamoDB Developer Guide, "Quotas in Amazon DynamoDB"
(partition key 1..2,048 bytes, sort key 1..1,024 bytes, item 400 KB) and "Item sizes
and formats" (how an item's size is counted).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from typing import Any, Final

from dynashard import defaults, names
from dynashard.core.buckets import TimeBucket, time_bucket
from dynashard.core.capacity import item_size
from dynashard.errors import InvalidInputError, KeyLimitExceededError

#: Maximum partition key value, bytes of UTF-8 (DynamoDB quota).
MAX_PARTITION_KEY_BYTES: Final = 2048
#: Maximum sort key value, bytes of UTF-8 (DynamoDB quota).
MAX_SORT_KEY_BYTES: Final = 1024
#: Maximum item size, bytes, attribute names included (DynamoDB quota: 400 KB).
MAX_ITEM_BYTES: Final = 400 * 1024
#: Separator between logical key and shard, and between timestamp and event id.
SEPARATOR: Final = "#"
#: Width of :func:`format_ts` output, characters.
TS_WIDTH: Final = len("2013-01-01T10:15:00.000000Z")
#: Largest shard count any key may have (:data:`dynashard.defaults.MAX_SHARD_COUNT`, the
#: table of defaults and caps); keeps the physical-key suffix at most 4 digits.
MAX_SHARD_COUNT: Final = defaults.MAX_SHARD_COUNT


def utf8_len(value: str) -> int:
    """Return the UTF-8 length of ``value`` in bytes.

    Parameters
    ----------
    value : str
        Any string.

    Returns
    -------
    int
        Bytes, as DynamoDB counts key and attribute sizes.

    Examples
    --------
    >>> utf8_len("JFK"), utf8_len("Zürich")
    (3, 7)
    """
    return len(value.encode("utf-8"))


def validate_logical_key(logical: str, field: str = "key") -> None:
    """Check a logical key leaves room for the largest shard suffix.

    Parameters
    ----------
    logical : str
        The logical key, e.g. ``DEPARTURES#JFK``.
    field : str
        Name to report in the error.

    Raises
    ------
    KeyLimitExceededError
        If the key is empty, or ``{logical}#{MAX_SHARD_COUNT - 1}`` would be over the
        2,048-byte partition key limit.

    Examples
    --------
    >>> validate_logical_key("DEPARTURES#JFK")
    >>> validate_logical_key("K" * 2046)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dynashard.errors.KeyLimitExceededError: key: is 2046 bytes; ... limit of 2048 bytes
    """
    if not logical:
        raise KeyLimitExceededError(field, "must not be empty (DynamoDB key values are 1+ bytes)")
    size = utf8_len(physical_key(logical, MAX_SHARD_COUNT - 1))
    if size > MAX_PARTITION_KEY_BYTES:
        raise KeyLimitExceededError(
            field,
            f"is {utf8_len(logical)} bytes; with the shard suffix the partition key would be "
            f"{size} bytes, over DynamoDB's limit of {MAX_PARTITION_KEY_BYTES} bytes",
        )


def physical_key(logical: str, shard: int) -> str:
    """Return the physical partition key of one shard: ``{logical}#{shard}``.

    Parameters
    ----------
    logical : str
        The logical key.
    shard : int
        Shard number, ``0 <= shard < N``.

    Returns
    -------
    str
        The physical key, e.g. ``DEPARTURES#JFK#3``.

    Raises
    ------
    InvalidInputError
        If ``shard`` is negative.

    Examples
    --------
    >>> physical_key("DEPARTURES#JFK", 3)
    'DEPARTURES#JFK#3'
    """
    if shard < 0:
        raise InvalidInputError("shard", f"must be >= 0, got {shard}")
    return f"{logical}{SEPARATOR}{shard}"


def split_physical_key(pk: str) -> tuple[str, int]:
    """Split a physical key into logical key and shard number.

    Parameters
    ----------
    pk : str
        A physical key made by :func:`physical_key`.

    Returns
    -------
    tuple of (str, int)
        The logical key and the shard.

    Raises
    ------
    InvalidInputError
        If ``pk`` has no numeric shard suffix.

    Examples
    --------
    The logical key may itself contain the separator:

    >>> split_physical_key("DEPARTURES#JFK#3")
    ('DEPARTURES#JFK', 3)
    >>> split_physical_key("DEPARTURES#JFK")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dynashard.errors.InvalidInputError: PK: 'DEPARTURES#JFK' is not a physical key of ...
    """
    logical, sep, shard = pk.rpartition(SEPARATOR)
    # isascii: str.isdigit also accepts digits such as "²" that int() refuses.
    if not sep or not logical or not (shard.isascii() and shard.isdigit()):
        raise InvalidInputError(
            "PK", f"{pk!r} is not a physical key of the form {{logical}}#{{shard}}"
        )
    return logical, int(shard)


#: Smallest magnitude of epoch milliseconds taken as a time given as input, 10**11 ms
#: (1973-03-03T09:46:40Z, and -10**11 ms, 1966-10-31T14:13:20Z). Every epoch *seconds*
#: value of the years 1..5138 is below it (2013-01-01 is 1,357,000,000 s), so a
#: number below it is refused instead of stored in 1970; epoch milliseconds of a time
#: between those two instants are the only times it refuses, and are sent as ISO-8601.
#: The lowest bound that still refuses every plausible epoch-seconds value (a bound at
#: 2000-01-01, 946,684,800,000 ms, would also refuse 27 years of real milliseconds).
MIN_EPOCH_MS_MAGNITUDE: Final = 10**11


def parse_ts(
    value: object, field: str = "ts", *, min_epoch_ms: int | None = MIN_EPOCH_MS_MAGNITUDE
) -> datetime:
    """Parse an event time: ISO-8601 text or epoch milliseconds.

    Parameters
    ----------
    value : str or int or float or Decimal or datetime
        ISO-8601 with an offset or ``Z`` (a naive one is taken as UTC), or epoch
        milliseconds (int, ``Decimal``, float, or a string of digits). Milliseconds are
        converted in integers, never through a float of seconds: every millisecond of
        the years 1..9999 is exact, and a fraction is kept to the microsecond (rounded
        half to even; a float as its ``repr``).
    field : str
        Name to report in the error.
    min_epoch_ms : int or None
        Epoch milliseconds whose magnitude is below it are refused (default
        :data:`MIN_EPOCH_MS_MAGNITUDE`, 10**11: what epoch seconds look like); None
        takes any, for a time already stored (another program's epoch attribute).

    Returns
    -------
    datetime
        An aware datetime in UTC.

    Raises
    ------
    InvalidInputError
        If the value is neither (a value of another type is named: ``list is not a
        time``), is outside the years 1..9999 in UTC (``is outside the years 1..9999
        in UTC``), or is a number of magnitude below ``min_epoch_ms``.

    Examples
    --------
    The same instant, written three ways:

    >>> parse_ts("2013-01-01T10:15:00Z") == parse_ts(1357035300000)
    True
    >>> parse_ts("2013-01-01T05:15:00-05:00").isoformat()
    '2013-01-01T10:15:00+00:00'

    Epoch seconds are refused, not stored in 1970:

    >>> parse_ts(1357035300)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dynashard.errors.InvalidInputError: ts: 1357035300 is below 10**11 epoch milliseconds ...
    """
    epoch = False
    try:
        if isinstance(value, datetime):
            parsed = value
        elif isinstance(value, bool):
            raise TypeError("bool is not a time")
        elif isinstance(value, int | float | Decimal) or (
            isinstance(value, str) and value.strip().lstrip("-").isdigit()
        ):
            parsed = _from_epoch_ms(value)
            epoch = True
        elif isinstance(value, str):
            text = value.strip()
            if text.endswith(("Z", "z")):
                text = text[:-1] + "+00:00"
            parsed = datetime.fromisoformat(text)
        else:
            raise TypeError(f"{type(value).__name__} is not a time")
    except OverflowError as exc:  # epoch milliseconds past the years 1..9999
        raise InvalidInputError(field, f"is {exc} in UTC, got {value!r}") from exc
    except (ValueError, TypeError, OSError) as exc:
        why = f" ({exc})" if isinstance(exc, TypeError) else ""
        raise InvalidInputError(
            field,
            "must be ISO-8601 (e.g. 2013-01-01T10:15:00Z) or epoch milliseconds, "
            f"got {value!r}{why}",
        ) from exc
    if (
        epoch
        and min_epoch_ms is not None
        and abs(parsed - _EPOCH) < timedelta(milliseconds=min_epoch_ms)
    ):
        raise InvalidInputError(
            field,
            f"{value!r} is below {_power_of_ten(min_epoch_ms)} epoch milliseconds in "
            f"magnitude, what epoch seconds look like (it would be {format_ts(parsed)}): "
            "send epoch milliseconds, or ISO-8601 (e.g. 2013-01-01T10:15:00Z) for a time "
            "that close to 1970",
        )
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError as exc:  # e.g. 0001-01-01T00:04:00+01:00 is in year 0 in UTC
        raise InvalidInputError(
            field, f"is outside the years 1..9999 in UTC, got {value!r}"
        ) from exc


def _power_of_ten(n: int) -> str:
    """``10**11`` for 10**11, else the number with thousands separators."""
    exponent = len(str(n)) - 1
    return f"10**{exponent}" if n == 10**exponent else f"{n:,}"


#: 1970-01-01T00:00:00Z, the origin of epoch milliseconds.
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
#: Magnitude past which epoch milliseconds are outside the years 1..9999 whatever they
#: are (the range is about -6.2E13..2.5E14): refused before any arithmetic on them.
_MAX_EPOCH_MS_MAGNITUDE: Final = 10**15


def _from_epoch_ms(value: int | float | Decimal | str) -> datetime:
    """Return the instant of epoch milliseconds, in integer microseconds (no float).

    Raises ``ValueError`` for a value that is not finite, ``OverflowError`` outside
    the years 1..9999 (both caught by :func:`parse_ts`).
    """
    if isinstance(value, int):
        if abs(value) > _MAX_EPOCH_MS_MAGNITUDE:
            raise OverflowError("outside the years 1..9999")
        return _EPOCH + timedelta(milliseconds=value)
    # A float as its repr (the digits its caller wrote), not its binary expansion.
    millis = Decimal(str(value).strip())
    if not millis.is_finite():
        raise ValueError("not finite")
    if millis.copy_abs() > _MAX_EPOCH_MS_MAGNITUDE:
        raise OverflowError("outside the years 1..9999")
    with localcontext() as exact:
        # Enough digits for the product to be exact: it is rounded once, below.
        exact.prec = len(millis.as_tuple().digits) + 4
        micros = (millis * 1000).to_integral_value(rounding=ROUND_HALF_EVEN)
    return _EPOCH + timedelta(microseconds=int(micros))


def format_ts(ts: datetime) -> str:
    """Format a time as fixed-width UTC ISO-8601 with microseconds and ``Z``.

    Parameters
    ----------
    ts : datetime
        Aware (any zone) or naive (taken as UTC).

    Returns
    -------
    str
        27 characters, e.g. ``2013-01-01T10:15:00.000000Z``; byte order is time order.

    Examples
    --------
    >>> format_ts(parse_ts("2013-01-01T05:15:00-05:00"))
    '2013-01-01T10:15:00.000000Z'
    >>> format_ts(datetime(5, 1, 1, tzinfo=UTC))
    '0005-01-01T00:00:00.000000Z'
    """
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    # The year padded by hand: strftime's %Y gives "5", not "0005", for years below 1000.
    utc = ts.astimezone(UTC)
    return f"{utc.year:04d}-" + utc.strftime("%m-%dT%H:%M:%S.%fZ")


def sort_key(ts: datetime, event_id: str) -> str:
    """Return the time-series sort key ``{ts}#{event_id}``.

    Parameters
    ----------
    ts : datetime
        Event time.
    event_id : str
        Unique event id; makes the sort key unique and a retried write idempotent.

    Returns
    -------
    str
        The sort key.

    Raises
    ------
    KeyLimitExceededError
        If ``event_id`` is empty or the sort key is over 1,024 bytes.

    Examples
    --------
    >>> sort_key(datetime(2013, 1, 1, 10, 15, tzinfo=UTC), "f1")
    '2013-01-01T10:15:00.000000Z#f1'
    """
    if not event_id:
        raise KeyLimitExceededError("id", "must not be empty")
    sk = f"{format_ts(ts)}{SEPARATOR}{event_id}"
    size = utf8_len(sk)
    if size > MAX_SORT_KEY_BYTES:
        raise KeyLimitExceededError(
            "id",
            f"makes a sort key of {size} bytes, over DynamoDB's limit of {MAX_SORT_KEY_BYTES} "
            f"bytes ({TS_WIDTH + 1} bytes go to the timestamp and separator)",
        )
    return sk


def validate_item_size(item: dict[str, Any], field: str = "data") -> int:
    """Check an item is within DynamoDB's 400 KB item limit.

    Parameters
    ----------
    item : dict
        Attribute name -> Python value.
    field : str
        Name to report in the error.

    Returns
    -------
    int
        The item's size, bytes.

    Raises
    ------
    KeyLimitExceededError
        If the item is over 409,600 bytes.

    Examples
    --------
    >>> validate_item_size({"PK": "K#0"})
    5
    >>> validate_item_size({"data": "x" * 409_600})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dynashard.errors.KeyLimitExceededError: data: makes an item of 409604 bytes, ...
    """
    return check_item_size(item_size(item), field)


def check_item_size(size: int, field: str = "data") -> int:
    """Check an item size is within DynamoDB's 400 KB item limit.

    The check of :func:`validate_item_size`, for a caller that measured the item itself
    (the writer sums its attributes without building a second copy of the item).

    Parameters
    ----------
    size : int
        The item's size as DynamoDB counts it (:func:`dynashard.core.capacity.item_size`), bytes.
    field : str
        Name to report in the error.

    Returns
    -------
    int
        ``size``.

    Raises
    ------
    KeyLimitExceededError
        If ``size`` is over 409,600 bytes (Developer Guide, "Quotas in Amazon DynamoDB":
        items, 400 KB).

    Examples
    --------
    >>> check_item_size(409_600)
    409600
    """
    if size > MAX_ITEM_BYTES:
        raise KeyLimitExceededError(
            field,
            f"makes an item of {size} bytes, over DynamoDB's limit of "
            f"{MAX_ITEM_BYTES} bytes (400 KB): Item size has exceeded the maximum allowed size",
        )
    return size


def gsi1_partition_key(logical: str, ts: datetime, bucket: TimeBucket, shard: int) -> str:
    """Return the GSI1 partition key ``{logical}#{bucket}#{shard}``.

    A time-bucket GSI key concentrates every current write of a logical key on one GSI
    partition, and a throttled GSI throttles the base-table write
    (``IndexWriteKeyRangeThroughputExceeded``; Developer Guide, "GSI write throttling
    and back-pressure"). So the GSI key is sharded with the item's own shard: growing
    a key's shard count spreads its GSI writes too, and a GSI read of one bucket fans
    out over the key's shards.

    Parameters
    ----------
    logical : str
        Logical key.
    ts : datetime
        Event time.
    bucket : TimeBucket
        Bucket unit.
    shard : int
        The item's shard.

    Returns
    -------
    str
        E.g. ``DEPARTURES#JFK#2013-01-01#3``.

    Examples
    --------
    >>> ts = datetime(2013, 1, 1, 10, 15, tzinfo=UTC)
    >>> gsi1_partition_key("DEPARTURES#JFK", ts, TimeBucket.DAY, 3)
    'DEPARTURES#JFK#2013-01-01#3'
    """
    return bucket_partition_key(logical, time_bucket(ts, bucket), shard)


def bucket_partition_key(logical: str, label: str, shard: int) -> str:
    """Return the GSI1 partition key ``{logical}#{label}#{shard}`` of a bucket label.

    :func:`gsi1_partition_key` for a caller that has the bucket's label already (the
    writer computes it once per event); :func:`split_gsi1_partition_key` reverses it.

    Parameters
    ----------
    logical : str
        Logical key.
    label : str
        Time bucket label (:func:`dynashard.core.buckets.time_bucket`), e.g. ``2013-01-01``.
    shard : int
        The item's shard.

    Returns
    -------
    str
        E.g. ``DEPARTURES#JFK#2013-01-01#3``.

    Examples
    --------
    >>> bucket_partition_key("DEPARTURES#JFK", "2013-01-01", 3)
    'DEPARTURES#JFK#2013-01-01#3'
    """
    return f"{logical}#{label}#{shard}"


_BUCKET_LABEL = re.compile(r"^\d{4}-\d{2}(-\d{2}(T\d{2})?)?$")


def split_gsi1_partition_key(gsi1_pk: str) -> tuple[str, str, int]:
    """Split a GSI1 partition key ``{logical}#{bucket}#{shard}`` into its parts.

    The inverse of :func:`gsi1_partition_key`: what the scaler needs to map a hot GSI1
    key, as Contributor Insights reports it for the index, back to its logical key.

    Parameters
    ----------
    gsi1_pk : str
        A GSI1 partition key, e.g. ``DEPARTURES#JFK#2013-01-01#3``.

    Returns
    -------
    tuple of (str, str, int)
        Logical key, time-bucket label and shard, e.g.
        ``("DEPARTURES#JFK", "2013-01-01", 3)``.

    Raises
    ------
    InvalidInputError
        If the value does not end in ``#{bucket}#{shard}`` with an ``hour``, ``day``
        or ``month`` label (:func:`~dynashard.core.buckets.time_bucket`).

    Examples
    --------
    >>> split_gsi1_partition_key("DEPARTURES#JFK#2013-01-01T10#3")
    ('DEPARTURES#JFK', '2013-01-01T10', 3)
    >>> split_gsi1_partition_key("DEPARTURES#JFK#3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dynashard.errors.InvalidInputError: GSI1PK: 'DEPARTURES#JFK#3' is not a GSI1 partition key ...
    """
    error = InvalidInputError(
        names.ATTR_GSI1PK,
        f"{gsi1_pk!r} is not a GSI1 partition key of the form {{logical}}#{{bucket}}#{{shard}}",
    )
    try:
        rest, shard = split_physical_key(gsi1_pk)
    except InvalidInputError:
        raise error from None
    logical, sep, bucket = rest.rpartition(SEPARATOR)
    if not sep or not logical or not _BUCKET_LABEL.match(bucket):
        raise error
    return logical, bucket, shard
