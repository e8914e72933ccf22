"""The data table's own key schema, and how an event maps onto its items (pure).

dynashard's own table keys items by ``PK`` (the physical key ``{logical}#{shard}``) and
``SK`` (``{ts}#{id}``), with a time-bucket GSI ``GSI1`` (``GSI1PK`` / ``GSI1SK``) and the
event's fields in the attributes ``key``, ``id``, ``ts``, ``shard`` and ``data``. A table
brought by its owner ("bring your own table") names these differently and may order its
items otherwise. :class:`TableSchema` says how; :data:`DEFAULT_SCHEMA` is dynashard's own
table, and every path given it behaves exactly as before the schema existed.

A :class:`SortKeyCodec` states how the table orders its items. A sharded read merges
every shard's items in one order (:func:`dynashard.core.merge.merge_page`, which compares
strings), so each codec maps a stored sort key to an *order key*, a string, with the proof
obligation that string order of order keys equals DynamoDB's own order of the sort keys
within an item collection (Developer Guide, "Query": "Query results are always sorted by
the sort key value. If the data type of the sort key is Number, the results are returned
in numeric order; otherwise, the results are returned in order of UTF-8 bytes"). Python
compares ``str`` by code point, which is the order of their UTF-8 bytes.

Codecs (:func:`codec_named`):

``iso_time_then_id``
    ``S`` sort key ``{ts}#{id}`` with a fixed-width UTC ISO-8601 time
    (:func:`~dynashard.core.keys.sort_key`): byte order is time order, then id order.
    The order key is the sort key. The default.
``iso_ms_then_id`` and ``iso_s_then_id``
    The same with milliseconds (``2026-06-22T01:00:00.123Z#agent``, JavaScript's
    ``Date.prototype.toISOString()`` then an id) or whole seconds
    (``2026-06-22T01:00:00Z#agent``): the forms other programs commonly write. The time
    is floored to the codec's precision in the key (the ``ts`` attribute keeps it whole),
    so events of one key, precision step and id are one item, the table's own rule. A
    window's bounds are resolved to the precision as ``epoch_ms_number``'s are.
``epoch_ms_number``
    ``N`` sort key: the event time in integer milliseconds since 1970-01-01T00:00:00Z
    (floored: microseconds below a millisecond are dropped from the key, the ``ts``
    attribute keeps them). The id lives in its own attribute only, so one physical partition
    holds one item per millisecond: a second event of the same shard and millisecond would
    be the same item (the table's own rule), so the writer puts each event conditionally and
    never overwrites another event: a collision moves the event to another shard of the key,
    or fails it when every shard holds another event at that millisecond
    (:class:`~dynashard.dynamodb.writer.ShardedWriter`). Ties across shards (the same
    millisecond on two shards) are ordered by event id, ascending in UTF-8 byte order
    (descending reads reverse it); the same event stored on two shards (a resize, invariant
    2) has the same order key and is collapsed by the merge. A window's bounds are resolved
    to milliseconds: an item is in ``[start, end)`` when its millisecond is in
    ``[floor_ms(start), ceil_ms(end))``.
``plain_string``
    ``S`` sort key: the event id itself. Reads merge in id order (UTF-8 bytes) and cannot
    take a time window: the sort key holds no time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, ClassVar, Final

from dynashard import names
from dynashard.core.keys import (
    MAX_SORT_KEY_BYTES,
    SEPARATOR,
    format_ts,
    parse_ts,
    sort_key,
    utf8_len,
)
from dynashard.errors import InvalidInputError, KeyLimitExceededError

#: 1970-01-01T00:00:00Z, the origin of epoch milliseconds.
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)
#: Epoch milliseconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z, the range
#: :func:`~dynashard.core.keys.parse_ts` accepts.
MIN_EPOCH_MS: Final = -62_135_596_800_000
MAX_EPOCH_MS: Final = 253_402_300_799_999
#: Shift that makes every epoch millisecond of the range non-negative, and the width of
#: the shifted number in an order key: fixed width makes string order numeric order.
_EPOCH_SHIFT: Final = 10**16
_EPOCH_WIDTH: Final = 17


class Payload(StrEnum):
    """Where an event's ``data`` goes on its item.

    ``nested``: one map attribute (``data``, :attr:`TableSchema.data_attr`), the default.
    ``flat``: each field of ``data`` is an attribute of the item itself; a field named
    like one of the schema's own attributes is refused.
    """

    NESTED = "nested"
    FLAT = "flat"


class SortKeyCodec:
    """How a table's sort key orders its items; see the module docstring.

    Attributes
    ----------
    name : str
        The codec's name (``DYNASHARD_SORT_KEY_CODEC``).
    key_type : str
        The sort key's DynamoDB type, ``S`` or ``N``.
    exact : bool
        True when the order key *is* the sort key text, so that a read can resume a
        shard with ``ExclusiveStartKey`` at the cursor's position; False when it must
        resume at the position's sort key inclusively and skip what it has returned.
    time_ordered : bool
        True when the sort key orders items by event time first (a time window is a
        sort-key range).
    id_in_sort_key : bool
        True when the sort key holds the event id, so that two different events of one
        shard never share a primary key; False (``epoch_ms_number``) when they may, and
        the writer must not let one overwrite the other
        (:class:`~dynashard.dynamodb.writer.ShardedWriter`).
    """

    name: ClassVar[str]
    key_type: ClassVar[str]
    exact: ClassVar[bool]
    time_ordered: ClassVar[bool]
    id_in_sort_key: ClassVar[bool] = True

    def encode(self, ts: datetime, event_id: str) -> str:
        """Return the sort key value of an event, as the text of its ``S`` or ``N``.

        Parameters
        ----------
        ts : datetime
            Event time (aware; UTC or any zone).
        event_id : str
            Event id, 1+ characters.

        Returns
        -------
        str
            The sort key's attribute value text.

        Raises
        ------
        KeyLimitExceededError
            If the id is empty or the sort key is over 1,024 bytes.
        """
        raise NotImplementedError

    def order_key(self, sk: str, event_id: str) -> str:
        """Return the string the merge orders an item by.

        Parameters
        ----------
        sk : str
            The item's sort key value text (``S`` string or ``N`` digits).
        event_id : str
            The item's event id.

        Returns
        -------
        str
            A string whose order equals DynamoDB's order of ``sk`` within an item
            collection, ties broken by ``event_id``.
        """
        raise NotImplementedError

    def sort_key_of(self, order_key: str) -> str:
        """Return the sort key value text an order key was made from.

        Parameters
        ----------
        order_key : str
            A value of :meth:`order_key`.

        Returns
        -------
        str
            The sort key text.
        """
        raise NotImplementedError

    def decode(self, sk: str) -> tuple[datetime | None, str | None]:
        """Return the event time and id a sort key holds, where it holds them.

        An item another program wrote under an adopted key's bare partition key has no
        ``key``, ``id`` or ``ts`` attribute of dynashard's: its event is read from its
        sort key (:func:`dynashard.dynamodb.reader.item_to_event`).

        Parameters
        ----------
        sk : str
            The sort key value text.

        Returns
        -------
        tuple of (datetime or None, str or None)
            The time (UTC) and the id; None for a part this codec's key does not hold
            (``epoch_ms_number`` holds no id, ``plain_string`` no time).

        Raises
        ------
        InvalidInputError
            Field ``sort_key``, if the value is not in the codec's form.
        """
        raise NotImplementedError

    def window(self, start: datetime | None, end: datetime | None) -> tuple[str, str] | None:
        """Return the inclusive sort-key range of a time window, or None for no range.

        Parameters
        ----------
        start : datetime, optional
            Earliest event time, inclusive (UTC).
        end : datetime, optional
            Latest event time, exclusive (UTC).

        Returns
        -------
        tuple of (str, str) or None
            ``(lo, hi)`` for ``BETWEEN :lo AND :hi``; None when every item qualifies.

        Raises
        ------
        InvalidInputError
            If the codec cannot select a time window (``plain_string``).
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(self.name)


class IsoTimeThenId(SortKeyCodec):
    """``S`` sort key ``{ts}#{id}``, fixed-width UTC ISO-8601 then the event id.

    The time has :attr:`digits` fraction digits (6: microseconds, dynashard's own form);
    the subclasses :class:`IsoMsThenId` (3) and :class:`IsoSecondsThenId` (0) read and
    write the forms other programs commonly use. A fixed width makes byte order time
    order at the codec's precision, then id order.

    Examples
    --------
    >>> codec = IsoTimeThenId()
    >>> sk = codec.encode(datetime(2013, 1, 1, 10, 15, tzinfo=UTC), "f1")
    >>> sk, codec.order_key(sk, "f1")
    ('2013-01-01T10:15:00.000000Z#f1', '2013-01-01T10:15:00.000000Z#f1')
    >>> codec.window(None, datetime(2013, 1, 2, tzinfo=UTC))
    ('0', '2013-01-02T00:00:00.000000Z')
    >>> codec.decode(sk)
    (datetime.datetime(2013, 1, 1, 10, 15, tzinfo=datetime.timezone.utc), 'f1')
    """

    name = "iso_time_then_id"
    key_type = "S"
    exact = True
    time_ordered = True
    #: Fraction digits of the seconds: 6, 3 or 0.
    digits: ClassVar[int] = 6
    #: Bounds of an open window: sort keys start with a year, so they sort between "0"
    #: and ":" (the byte after "9"); other items of dynashard's table (counters, "#...")
    #: fall outside.
    FLOOR: ClassVar[str] = "0"
    CEILING: ClassVar[str] = ":"

    @property
    def width(self) -> int:
        """int: Characters of the time, ``Z`` included (27, 24 or 20)."""
        return 20 + (self.digits + 1 if self.digits else 0)

    def format(self, ts: datetime) -> str:
        """Return a time in this codec's form, floored to its precision.

        Parameters
        ----------
        ts : datetime
            Aware (naive is taken as UTC).

        Returns
        -------
        str
            :attr:`width` characters, e.g. ``2026-06-22T01:00:00.123Z`` for 3 digits.
        """
        text = format_ts(ts)  # 2013-01-01T10:15:00.000000Z
        if self.digits == 6:
            return text
        if self.digits == 0:
            return text[:19] + "Z"
        return text[: 20 + self.digits] + "Z"

    def _ceil(self, ts: datetime) -> datetime:
        """Return ``ts`` rounded up to the codec's precision."""
        step = 10 ** (6 - self.digits)
        extra = ts.microsecond % step
        return ts if extra == 0 else ts + timedelta(microseconds=step - extra)

    def encode(self, ts: datetime, event_id: str) -> str:  # noqa: D102
        if self.digits == 6:
            return sort_key(ts, event_id)
        if not event_id:
            raise KeyLimitExceededError("id", "must not be empty")
        sk = f"{self.format(ts)}{SEPARATOR}{event_id}"
        size = utf8_len(sk)
        if size > MAX_SORT_KEY_BYTES:
            raise KeyLimitExceededError(
                "id",
                f"makes a sort key of {size} bytes, over DynamoDB's limit of "
                f"{MAX_SORT_KEY_BYTES} bytes ({self.width + 1} bytes go to the timestamp and "
                "separator)",
            )
        return sk

    def order_key(self, sk: str, event_id: str) -> str:  # noqa: D102
        return sk

    def sort_key_of(self, order_key: str) -> str:  # noqa: D102
        return order_key

    def decode(self, sk: str) -> tuple[datetime, str]:  # noqa: D102
        width = self.width
        stamp, sep, event_id = sk[:width], sk[width : width + 1], sk[width + 1 :]
        if sep == SEPARATOR and event_id:
            try:
                ts = parse_ts(stamp, "sort_key", min_epoch_ms=None)
            except InvalidInputError:
                ts = None
            if ts is not None and self.format(ts) == stamp:
                return ts, event_id
        example = self.encode(datetime(2026, 6, 22, 1, tzinfo=UTC), "id")
        raise InvalidInputError(
            "sort_key",
            f"{sk!r} is not in the form of codec {self.name} (fixed-width UTC time, '#', an "
            f"id: e.g. {example!r})",
        )

    def window(self, start: datetime | None, end: datetime | None) -> tuple[str, str]:  # noqa: D102
        # ``hi`` is the bare time: "{end}#{id}" sorts after it, so ``end`` is exclusive.
        lo = self.format(start) if start is not None else self.FLOOR
        if end is None:
            return lo, self.CEILING
        try:
            hi = self.format(self._ceil(end))
        except OverflowError:
            # ``end`` is in the last step of year 9999: rounded up, it is past the last
            # time a datetime holds, so every sort key is before it.
            hi = self.CEILING
        return lo, hi


class IsoMsThenId(IsoTimeThenId):
    """``S`` sort key ``{ts}#{id}`` with milliseconds, ``Date.prototype.toISOString()``'s form.

    Examples
    --------
    >>> IsoMsThenId().encode(datetime(2026, 6, 22, 1, 0, 0, 123456, tzinfo=UTC), "threat_detector")
    '2026-06-22T01:00:00.123Z#threat_detector'
    >>> IsoMsThenId().window(None, datetime(2026, 6, 22, 1, 0, 0, 123456, tzinfo=UTC))
    ('0', '2026-06-22T01:00:00.124Z')
    """

    name = "iso_ms_then_id"
    digits = 3


class IsoSecondsThenId(IsoTimeThenId):
    """``S`` sort key ``{ts}#{id}`` with whole seconds (``2026-06-22T01:00:00Z#agent``).

    Examples
    --------
    >>> IsoSecondsThenId().decode("2026-06-22T01:00:00Z#threat_detector")[1]
    'threat_detector'
    """

    name = "iso_s_then_id"
    digits = 0


def epoch_ms(ts: datetime) -> int:
    """Return an event time in whole milliseconds since the epoch, floored.

    Parameters
    ----------
    ts : datetime
        Aware (naive is taken as UTC).

    Returns
    -------
    int
        Milliseconds since 1970-01-01T00:00:00Z; negative before it.

    Examples
    --------
    >>> epoch_ms(datetime(2013, 1, 1, 10, 15, 0, 999, tzinfo=UTC))
    1357035300000
    >>> epoch_ms(datetime(1969, 12, 31, 23, 59, 59, 999_500, tzinfo=UTC))
    -1
    """
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return (ts - EPOCH) // _MS


class EpochMsNumber(SortKeyCodec):
    """``N`` sort key: event time in integer epoch milliseconds; ties by event id.

    Examples
    --------
    >>> codec = EpochMsNumber()
    >>> sk = codec.encode(datetime(2013, 1, 1, 10, 15, tzinfo=UTC), "f1")
    >>> sk, codec.order_key(sk, "f1")
    ('1357035300000', '10001357035300000#f1')
    >>> codec.sort_key_of(codec.order_key("-5", "x"))
    '-5'
    >>> codec.window(datetime(2013, 1, 1, tzinfo=UTC), datetime(2013, 1, 2, tzinfo=UTC))
    ('1356998400000', '1357084799999')
    """

    name = "epoch_ms_number"
    key_type = "N"
    exact = False
    time_ordered = True
    id_in_sort_key = False

    def encode(self, ts: datetime, event_id: str) -> str:  # noqa: D102
        if not event_id:
            raise KeyLimitExceededError("id", "must not be empty")
        return str(epoch_ms(ts))

    def order_key(self, sk: str, event_id: str) -> str:  # noqa: D102
        try:
            millis = int(sk)
        except ValueError:
            # DynamoDB may return an integral number in another spelling ("1E+3").
            from decimal import Decimal, InvalidOperation

            try:
                number = Decimal(sk)
            except InvalidOperation:
                number = Decimal("NaN")
            if not number.is_finite() or number != number.to_integral_value():
                raise InvalidInputError(
                    "sort_key",
                    f"{sk!r} is not whole epoch milliseconds (codec {self.name})",
                ) from None
            millis = int(number)
        return f"{millis + _EPOCH_SHIFT:0{_EPOCH_WIDTH}d}{SEPARATOR}{event_id}"

    def sort_key_of(self, order_key: str) -> str:  # noqa: D102
        return str(int(order_key[:_EPOCH_WIDTH]) - _EPOCH_SHIFT)

    def decode(self, sk: str) -> tuple[datetime, None]:  # noqa: D102
        millis = int(self.sort_key_of(self.order_key(sk, "")))
        if not MIN_EPOCH_MS <= millis <= MAX_EPOCH_MS:
            raise InvalidInputError(
                "sort_key", f"{sk!r} is outside the years 1..9999 (codec {self.name})"
            )
        return EPOCH + millis * _MS, None

    def window(self, start: datetime | None, end: datetime | None) -> tuple[str, str]:  # noqa: D102
        lo = epoch_ms(start) if start is not None else MIN_EPOCH_MS
        # ceil_ms(end) - 1: the last millisecond wholly or partly before ``end``.
        hi = -((EPOCH - end) // _MS) - 1 if end is not None else MAX_EPOCH_MS
        # An end at the first millisecond (0001-01-01T00:00:00Z) without a start leaves
        # nothing before it: the millisecond before year 1, which no event has, keeps the
        # range empty and valid (BETWEEN refuses a lower bound above the upper one).
        return str(min(lo, hi)), str(hi)

    def time_of(self, order_key: str) -> datetime:
        """Return the millisecond an order key stands for.

        Parameters
        ----------
        order_key : str
            A value of :meth:`order_key`.

        Returns
        -------
        datetime
            UTC.
        """
        return EPOCH + int(self.sort_key_of(order_key)) * _MS


class PlainString(SortKeyCodec):
    """``S`` sort key: the event id; reads merge in id order and take no time window.

    Examples
    --------
    >>> PlainString().encode(datetime(2013, 1, 1, tzinfo=UTC), "N101UA")
    'N101UA'
    """

    name = "plain_string"
    key_type = "S"
    exact = True
    time_ordered = False

    def encode(self, ts: datetime, event_id: str) -> str:  # noqa: D102
        if not event_id:
            raise KeyLimitExceededError("id", "must not be empty")
        size = utf8_len(event_id)
        if size > MAX_SORT_KEY_BYTES:
            raise KeyLimitExceededError(
                "id",
                f"is the sort key (codec {self.name}) and is {size} bytes, over DynamoDB's "
                f"limit of {MAX_SORT_KEY_BYTES} bytes",
            )
        return event_id

    def order_key(self, sk: str, event_id: str) -> str:  # noqa: D102
        return sk

    def sort_key_of(self, order_key: str) -> str:  # noqa: D102
        return order_key

    def decode(self, sk: str) -> tuple[None, str]:  # noqa: D102
        return None, sk

    def window(self, start: datetime | None, end: datetime | None) -> None:  # noqa: D102
        if start is not None or end is not None:
            raise InvalidInputError(
                "from" if start is not None else "to",
                f"the table's sort key (codec {self.name}) holds the event id, not its time, "
                "so no time window can be read from it; read without from and to",
            )
        return None


ISO_TIME_THEN_ID: Final = IsoTimeThenId()
ISO_MS_THEN_ID: Final = IsoMsThenId()
ISO_S_THEN_ID: Final = IsoSecondsThenId()
EPOCH_MS_NUMBER: Final = EpochMsNumber()
PLAIN_STRING: Final = PlainString()
#: Every codec by name.
CODECS: Final[dict[str, SortKeyCodec]] = {
    c.name: c
    for c in (ISO_TIME_THEN_ID, ISO_MS_THEN_ID, ISO_S_THEN_ID, EPOCH_MS_NUMBER, PLAIN_STRING)
}


def codec_named(name: str) -> SortKeyCodec:
    """Return the codec of a name.

    Parameters
    ----------
    name : str
        ``iso_time_then_id``, ``iso_ms_then_id``, ``iso_s_then_id``, ``epoch_ms_number``
        or ``plain_string``.

    Returns
    -------
    SortKeyCodec
        The codec.

    Raises
    ------
    InvalidInputError
        Naming the known codecs, for any other name (field ``sort_key_codec``).

    Examples
    --------
    >>> codec_named("epoch_ms_number").key_type
    'N'
    """
    try:
        return CODECS[name.strip()]
    except KeyError:
        raise InvalidInputError(
            "sort_key_codec", f"unknown codec {name!r}; one of {', '.join(CODECS)}"
        ) from None


@dataclass(frozen=True)
class TableSchema:
    """The data table's key schema and the attributes an event's item uses.

    Attributes
    ----------
    partition_key : str
        Partition key attribute (type ``S``): the physical key ``{logical}#{shard}``.
    sort_key : str
        Sort key attribute; its type is the codec's (:attr:`sort_key_type`).
    sort_key_codec : SortKeyCodec
        How the sort key orders items (module docstring).
    gsi_name : str or None
        The time-bucket GSI; None when the table has none (GSI reads are then refused,
        and items carry no GSI keys).
    gsi_partition_key, gsi_sort_key : str
        The GSI's key attributes: partition key ``{logical}#{bucket}#{shard}`` (``S``),
        sort key the item's sort key value (the codec's type).
    key_attr, id_attr, ts_attr, shard_attr : str
        Attributes of the event's logical key (``S``), id (``S``), time (``S``,
        fixed-width UTC ISO-8601) and shard (``N``).
    data_attr : str
        The payload's map attribute when :attr:`payload` is ``nested``; unused when
        ``flat``.
    payload : Payload
        ``nested`` (the default) or ``flat``.

    Raises
    ------
    InvalidInputError
        If a name is empty or two roles share an attribute name (field ``schema``).

    Examples
    --------
    >>> DEFAULT_SCHEMA.is_default, DEFAULT_SCHEMA.sort_key_type
    (True, 'S')
    >>> mine = TableSchema(partition_key="pk", sort_key="at", sort_key_codec=EPOCH_MS_NUMBER,
    ...                    gsi_name=None, payload=Payload.FLAT)
    >>> mine.is_default, mine.sort_key_type, sorted(mine.reserved)
    (False, 'N', ['at', 'id', 'key', 'pk', 'shard', 'ts'])
    """

    partition_key: str = names.ATTR_PK
    sort_key: str = names.ATTR_SK
    sort_key_codec: SortKeyCodec = field(default=ISO_TIME_THEN_ID)
    gsi_name: str | None = names.GSI1_NAME
    gsi_partition_key: str = names.ATTR_GSI1PK
    gsi_sort_key: str = names.ATTR_GSI1SK
    key_attr: str = names.ATTR_KEY
    id_attr: str = names.ATTR_ID
    ts_attr: str = names.ATTR_TS
    shard_attr: str = names.ATTR_SHARD
    data_attr: str = names.ATTR_DATA
    payload: Payload = Payload.NESTED

    def __post_init__(self) -> None:
        object.__setattr__(self, "payload", Payload(self.payload))
        if self.gsi_name == "":
            object.__setattr__(self, "gsi_name", None)
        roles = {
            "partition_key": self.partition_key,
            "sort_key": self.sort_key,
            "key_attr": self.key_attr,
            "id_attr": self.id_attr,
            "ts_attr": self.ts_attr,
            "shard_attr": self.shard_attr,
        }
        if self.gsi_name is not None:
            roles["gsi_partition_key"] = self.gsi_partition_key
            roles["gsi_sort_key"] = self.gsi_sort_key
        if self.payload is Payload.NESTED:
            roles["data_attr"] = self.data_attr
        seen: dict[str, str] = {}
        for role, name in roles.items():
            if not name:
                raise InvalidInputError("schema", f"{role} must name an attribute, got ''")
            if name in seen:
                raise InvalidInputError(
                    "schema",
                    f"{seen[name]} and {role} are both {name!r}: each role needs its own attribute",
                )
            seen[name] = role

    @property
    def sort_key_type(self) -> str:
        """The sort key's (and the GSI sort key's) DynamoDB type, ``S`` or ``N``."""
        return self.sort_key_codec.key_type

    @property
    def is_default(self) -> bool:
        """bool: True for dynashard's own table layout (:data:`DEFAULT_SCHEMA`)."""
        return self == DEFAULT_SCHEMA

    @property
    def reserved(self) -> frozenset[str]:
        """Attribute names an item uses for the schema's own roles.

        A ``flat`` payload may not use them; a ``flat`` read returns every other
        attribute of an item as its ``data``.
        """
        used = {
            self.partition_key,
            self.sort_key,
            self.key_attr,
            self.id_attr,
            self.ts_attr,
            self.shard_attr,
        }
        if self.gsi_name is not None:
            used |= {self.gsi_partition_key, self.gsi_sort_key}
        if self.payload is Payload.NESTED:
            used.add(self.data_attr)
        return frozenset(used)

    def gsi_unavailable(self) -> str:
        """Say why the time-bucket GSI cannot serve a read, or ``""`` when it can.

        Returns
        -------
        str
            Empty, or the reason (no GSI configured; a codec other than
            ``iso_time_then_id``, which GSI reads do not cover yet).
        """
        if self.gsi_name is None:
            return "the table has no GSI configured"
        if self.sort_key_codec != ISO_TIME_THEN_ID:
            return (
                f"GSI reads cover the iso_time_then_id codec only, the table's sort key "
                f"uses {self.sort_key_codec.name}"
            )
        return ""

    def require_default(self, what: str) -> None:
        """Refuse a path that only knows dynashard's own table layout.

        Parameters
        ----------
        what : str
            The path, e.g. ``counters``.

        Raises
        ------
        InvalidInputError
            Field ``schema``, naming ``what``, when this schema is not the default.
        """
        if not self.is_default:
            raise InvalidInputError(
                "schema",
                f"{what} supports dynashard's own table layout only (PK/SK, "
                f"{names.GSI1_NAME}, iso_time_then_id, nested data); this table's schema "
                "differs",
            )

    def key_condition_names(self) -> dict[str, str]:
        """Return ``{"#pk": partition_key, "#sk": sort_key}`` for a Query's names."""
        return {"#pk": self.partition_key, "#sk": self.sort_key}

    def sort_value(self, text: str) -> dict[str, Any]:
        """Return a sort key value as a typed attribute value (``{"S": ...}`` / ``{"N": ...}``)."""
        return {self.sort_key_type: text}


#: dynashard's own table: ``PK`` / ``SK`` (``{ts}#{id}``), ``GSI1`` (``GSI1PK`` /
#: ``GSI1SK``), attributes ``key``, ``id``, ``ts``, ``shard`` and a nested ``data``.
DEFAULT_SCHEMA: Final = TableSchema()


def schema_mismatches(table: dict[str, Any], schema: TableSchema) -> list[str]:
    """Compare a table's description with a schema; return each mismatch in words.

    Parameters
    ----------
    table : dict
        The ``Table`` of a ``DescribeTable`` response (``KeySchema``,
        ``AttributeDefinitions``, ``GlobalSecondaryIndexes``).
    schema : TableSchema
        What dynashard is configured to use.

    Returns
    -------
    list of str
        Empty when the table fits; else one sentence per mismatch: a key attribute's
        name or type, the sort key missing or extra, the GSI missing, its key
        attributes or types, or its projection not ``ALL`` (reads return the whole
        event from the index).

    Examples
    --------
    >>> table = {"TableName": "t",
    ...          "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    ...          "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]}
    >>> for line in schema_mismatches(table, DEFAULT_SCHEMA):
    ...     print(line)
    table 't': partition key is 'pk' (S), the schema says 'PK' (S)
    table 't': has no sort key, the schema says 'SK' (S)
    table 't': has no GSI 'GSI1'
    """
    name = table.get("TableName", "?")
    types = {a["AttributeName"]: a["AttributeType"] for a in table.get("AttributeDefinitions", [])}
    found: list[str] = []

    def keys_of(key_schema: list[dict[str, str]]) -> tuple[str | None, str | None]:
        hash_key = next((k["AttributeName"] for k in key_schema if k["KeyType"] == "HASH"), None)
        range_key = next((k["AttributeName"] for k in key_schema if k["KeyType"] == "RANGE"), None)
        return hash_key, range_key

    def check(where: str, role: str, actual: str | None, wanted: str, wanted_type: str) -> None:
        if actual is None:
            found.append(f"{where}: has no {role}, the schema says {wanted!r} ({wanted_type})")
        elif actual != wanted or types.get(actual) != wanted_type:
            found.append(
                f"{where}: {role} is {actual!r} ({types.get(actual, '?')}), the schema says "
                f"{wanted!r} ({wanted_type})"
            )

    where = f"table {name!r}"
    pk, sk = keys_of(table.get("KeySchema", []))
    check(where, "partition key", pk, schema.partition_key, "S")
    check(where, "sort key", sk, schema.sort_key, schema.sort_key_type)
    if schema.gsi_name is not None:
        indexes = {i["IndexName"]: i for i in table.get("GlobalSecondaryIndexes", [])}
        index = indexes.get(schema.gsi_name)
        if index is None:
            found.append(f"{where}: has no GSI {schema.gsi_name!r}")
        else:
            at = f"{where} GSI {schema.gsi_name!r}"
            gpk, gsk = keys_of(index.get("KeySchema", []))
            check(at, "partition key", gpk, schema.gsi_partition_key, "S")
            check(at, "sort key", gsk, schema.gsi_sort_key, schema.sort_key_type)
            projection = index.get("Projection", {}).get("ProjectionType")
            if projection is not None and projection != "ALL":
                found.append(
                    f"{at}: projects {projection}, reads need ALL (they return whole events)"
                )
    return found
