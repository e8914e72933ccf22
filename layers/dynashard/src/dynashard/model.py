"""The event model: what ingest accepts and what reads return.

An event is ``{"key", "id", "ts", "data"}``: the logical key it belongs to, a unique
event id (the same id always maps to the same item), the event time (ISO-8601 or epoch
milliseconds on input; fixed-width UTC ISO-8601 on output) and a JSON object payload.
"""

from __future__ import annotations

import base64
import json
import re
from datetime import datetime
from decimal import (
    Clamped,
    Context,
    Decimal,
    DecimalException,
    Inexact,
    Overflow,
    Rounded,
    Underflow,
)
from typing import Annotated, Any, Final

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
)

from dynashard.core.keys import format_ts, parse_ts, sort_key, validate_logical_key
from dynashard.errors import InvalidInputError

#: Largest number of events one ``POST /events`` request may carry.
MAX_EVENTS_PER_REQUEST = 100
#: DynamoDB's nesting limit for documents: 32 levels, the top-level attribute being level 1
#: (Developer Guide, "Quotas in Amazon DynamoDB", attributes: "nested attribute depth"),
#: so a top-level map or list holds at most 31 levels of maps and lists.
MAX_NESTING_LEVELS: Final = 32
#: Smallest magnitude of a non-zero DynamoDB number (Developer Guide, "Data types", Number).
MIN_NUMBER_MAGNITUDE: Final = Decimal("1E-130")
#: Largest magnitude of a DynamoDB number (same page).
MAX_NUMBER_MAGNITUDE: Final = Decimal("9.9999999999999999999999999999999999999E+125")
#: Significant digits a DynamoDB number holds (same page).
MAX_NUMBER_DIGITS: Final = 38
#: The context boto3's serializer converts numbers with (``boto3.dynamodb.types``): a
#: number it would round, or that overflows or underflows it, fails the write.
_DYNAMODB_CONTEXT: Final = Context(
    Emin=-128,
    Emax=126,
    prec=MAX_NUMBER_DIGITS,
    traps=[Clamped, Overflow, Inexact, Rounded, Underflow],
)
#: What :func:`dynamodb_number` says of a number DynamoDB cannot store.
NUMBER_RANGE: Final = (
    f"outside DynamoDB's number range: magnitude 1E-130 to 9.9{'9' * 36}E+125 (or 0), "
    f"at most {MAX_NUMBER_DIGITS} significant digits"
)


#: The JSON schema of ``ts`` as the API accepts it: RFC 3339 text, or epoch milliseconds
#: within the years 1..9999 (what :func:`dynashard.core.keys.parse_ts` takes; ISO-8601 text
#: that is not RFC 3339, e.g. a date alone, is accepted too but left undocumented).
TS_SCHEMA: Final[dict[str, Any]] = {
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "number", "minimum": -62_135_596_800_000, "maximum": 253_402_300_799_999},
    ],
    "description": "Event time: RFC 3339 (naive is UTC) or epoch milliseconds",
}


def _parse_ts(value: object) -> datetime:
    try:
        return parse_ts(value)
    except InvalidInputError as exc:
        # pydantic reports ValueError with the field's location; keep our wording.
        raise ValueError(exc.message.removeprefix("ts: ")) from exc


class Event(BaseModel):
    """One event to store under a logical key.

    Attributes
    ----------
    key : str
        Logical key, 1 byte or more; with the shard suffix at most 2,048 bytes.
    id : str
        Event id, unique within the key; with the timestamp the sort key is at most
        1,024 bytes.
    ts : datetime
        Event time, UTC. Accepts ISO-8601 (naive is UTC) or epoch milliseconds.
    data : dict
        Payload, a JSON object. Floats are stored as DynamoDB numbers (``Decimal``).

    Examples
    --------
    Epoch milliseconds in, fixed-width UTC ISO-8601 out; floats held as ``Decimal``:

    >>> event = Event(key="DEPARTURES#JFK", id="f1", ts=1357035300000, data={"delay": 2.5})
    >>> event.sort_key
    '2013-01-01T10:15:00.000000Z#f1'
    >>> event.data
    {'delay': Decimal('2.5')}
    >>> event.to_json()["ts"], event.to_json()["data"]
    ('2013-01-01T10:15:00.000000Z', {'delay': 2.5})
    """

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)

    key: str = Field(min_length=1)
    id: str = Field(min_length=1)
    ts: Annotated[datetime, BeforeValidator(_parse_ts), WithJsonSchema(TS_SCHEMA)]
    data: dict[str, Any] = Field(default_factory=dict)

    @field_validator("key")
    @classmethod
    def _key_fits(cls, value: str) -> str:
        try:
            validate_logical_key(value)
        except InvalidInputError as exc:
            raise ValueError(exc.message.removeprefix("key: ")) from exc
        return value

    @field_validator("data")
    @classmethod
    def _data_numbers(cls, value: dict[str, Any]) -> dict[str, Any]:
        converted: dict[str, Any] = to_dynamodb_document(value, "data")
        return converted

    @property
    def sort_key(self) -> str:
        """str: The time-series sort key ``{ts}#{id}``."""
        return sort_key(self.ts, self.id)

    def to_json(self) -> dict[str, Any]:
        """Return the event as JSON-ready data with ``ts`` in fixed-width UTC ISO-8601.

        Returns
        -------
        dict
            ``{"key", "id", "ts", "data"}``; numbers as int or float.
        """
        return {
            "key": self.key,
            "id": self.id,
            "ts": format_ts(self.ts),
            "data": from_dynamodb_numbers(self.data),
        }


def nesting_depth(value: Any) -> int:
    """Return how many maps and lists deep ``value`` goes (iteratively: no recursion).

    Parameters
    ----------
    value : Any
        JSON-like data.

    Returns
    -------
    int
        0 for a scalar, 1 for a flat map or list, 2 for a map holding a map ...

    Examples
    --------
    >>> nesting_depth(3), nesting_depth({}), nesting_depth({"a": [1, {"b": 2}]})
    (0, 1, 3)
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple | set | frozenset):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def dynamodb_number(value: int | float | Decimal, path: str = "value") -> int | Decimal:
    """Check that DynamoDB (and boto3's serializer) can store a number, and convert floats.

    Parameters
    ----------
    value : int, float or Decimal
        A number from JSON.
    path : str
        Its JSON path, for the error, e.g. ``data.x.y[1]``.

    Returns
    -------
    int or Decimal
        An int as it is; a float as ``Decimal(str(f))``.

    Raises
    ------
    ValueError
        Naming ``path``, for NaN, infinity, a magnitude outside 1E-130 ..
        9.9999999999999999999999999999999999999E+125 or more than 38 significant digits
        (Developer Guide, "Data types", Number). The value itself is not in the message:
        it is payload data, and messages are logged.

    Examples
    --------
    >>> dynamodb_number(2.5), dynamodb_number(10**37)
    (Decimal('2.5'), 10000000000000000000000000000000000000)
    >>> dynamodb_number(1e-151, "data.x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: data.x: a number outside DynamoDB's number range: magnitude 1E-130 to ...
    """
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{path}: NaN and infinity cannot be stored as DynamoDB numbers")
        number: int | Decimal = Decimal(str(value))
    else:
        number = value
    try:
        exact = _DYNAMODB_CONTEXT.create_decimal(number)
    except DecimalException:
        raise ValueError(f"{path}: a number {NUMBER_RANGE}") from None
    if exact and not MIN_NUMBER_MAGNITUDE <= abs(exact) <= MAX_NUMBER_MAGNITUDE:
        raise ValueError(f"{path}: a number {NUMBER_RANGE}")
    return number


def to_dynamodb_document(value: Any, path: str = "data") -> Any:
    """Check a payload fits DynamoDB (nesting, numbers) and convert its floats to ``Decimal``.

    Parameters
    ----------
    value : Any
        JSON-like data, the value of the top-level attribute ``path``.
    path : str
        Its name, the start of the JSON paths in errors.

    Returns
    -------
    Any
        As :func:`to_dynamodb_numbers`.

    Raises
    ------
    ValueError
        If ``value`` nests maps and lists more than 31 deep (DynamoDB's 32 levels with
        the attribute as level 1: :data:`MAX_NESTING_LEVELS`), or holds a number DynamoDB
        cannot store (:func:`dynamodb_number`, naming its JSON path).

    Examples
    --------
    >>> to_dynamodb_document({"delays": [2.5, 3]})
    {'delays': [Decimal('2.5'), 3]}
    >>> deep: Any = "leaf"
    >>> for _ in range(32):
    ...     deep = {"a": deep}
    >>> to_dynamodb_document(deep)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: data: nests maps and lists 32 deep, over DynamoDB's limit of 32 levels ...
    """
    depth = nesting_depth(value)
    if depth >= MAX_NESTING_LEVELS:
        raise ValueError(
            f"{path}: nests maps and lists {depth} deep, over DynamoDB's limit of "
            f"{MAX_NESTING_LEVELS} levels (the attribute is level 1: at most "
            f"{MAX_NESTING_LEVELS - 1} maps or lists deep)"
        )
    return to_dynamodb_numbers(value, path)


def to_dynamodb_numbers(value: Any, path: str = "value") -> Any:
    """Replace floats by ``Decimal`` throughout, as DynamoDB's serializer requires.

    Parameters
    ----------
    value : Any
        JSON-like data, nested at most a few hundred levels (recursive: check the depth
        first with :func:`nesting_depth`, as :func:`to_dynamodb_document` does).
    path : str
        JSON path of ``value``, for errors.

    Returns
    -------
    Any
        The same shape with every float as ``Decimal(str(f))``.

    Raises
    ------
    ValueError
        For NaN, infinity, or a number outside DynamoDB's range or precision
        (:func:`dynamodb_number`), or a map with an empty key, naming its JSON path.

    Examples
    --------
    >>> to_dynamodb_numbers({"delays": [2.5, 3]})
    {'delays': [Decimal('2.5'), 3]}
    >>> to_dynamodb_numbers(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: value: NaN and infinity cannot be stored as DynamoDB numbers
    """
    try:
        return _numbers(value)
    except ValueError:
        # Rare: walk again, building each value's JSON path, to name the bad one.
        return _numbers_at(value, path)


#: Ints below this magnitude are valid DynamoDB numbers as they are: at most
#: :data:`MAX_NUMBER_DIGITS` digits (Developer Guide, "Data types", Number).
MAX_EXACT_INT: Final = 10**MAX_NUMBER_DIGITS


def _numbers(value: Any) -> Any:
    """:func:`to_dynamodb_numbers` without JSON paths, JSON's exact types first.

    Every event's payload goes through it, so the common case builds no path strings;
    any other type goes through :func:`_numbers_at`. Raises ``ValueError`` exactly when
    :func:`_numbers_at` does (with a message that names no path).
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int and -MAX_EXACT_INT < value < MAX_EXACT_INT:
        return value
    if kind is dict:
        if "" in value:
            raise ValueError("an empty attribute name")
        return {k: _numbers(v) for k, v in value.items()}
    if kind is list:
        return [_numbers(v) for v in value]
    return _numbers_at(value, "value")


def _numbers_at(value: Any, path: str) -> Any:
    """:func:`to_dynamodb_numbers` building each value's JSON path for its errors."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | Decimal):
        return dynamodb_number(value, path)
    if isinstance(value, dict):
        if "" in value:  # DynamoDB: "ValidationException: Empty attribute name"
            raise ValueError(f"{path}: has an empty attribute name (DynamoDB needs 1+ characters)")
        return {k: _numbers_at(v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers_at(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def from_dynamodb_numbers(value: Any) -> Any:
    """Replace ``Decimal`` by int (integral) or float throughout, for JSON output.

    Parameters
    ----------
    value : Any
        Data as boto3's ``TypeDeserializer`` returns it.

    Returns
    -------
    Any
        The same shape, JSON-serializable (sets become sorted lists).

    Examples
    --------
    >>> from_dynamodb_numbers({"delay": Decimal("2.5"), "seats": Decimal("180")})
    {'delay': 2.5, 'seats': 180}
    >>> from_dynamodb_numbers({"b", "a"})
    ['a', 'b']
    """
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: from_dynamodb_numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [from_dynamodb_numbers(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(from_dynamodb_numbers(v) for v in value)
    return value


_INTEGER = re.compile(r"-?[0-9]+").fullmatch
_DECIMAL_FRACTION = re.compile(r"-?[0-9]*\.[0-9]*[1-9][0-9]*").fullmatch


def _json_number(text: str) -> int | float:
    if _INTEGER(text):
        return int(text)
    # No exponent and a nonzero fraction: float(text) rounds as float(Decimal(text)).
    if _DECIMAL_FRACTION(text):
        return float(text)
    number = Decimal(text)
    return int(number) if number == number.to_integral_value() else float(number)


def _binary(inner: str | bytes | bytearray) -> Any:
    """``Binary`` of a ``B`` value: bytes as botocore parses it, or the wire's base64 text."""
    from boto3.dynamodb.types import Binary

    if isinstance(inner, str):
        return Binary(base64.b64decode(inner))
    return Binary(inner)


def plain_value(value: dict[str, Any]) -> Any:
    """Turn one DynamoDB ``AttributeValue`` (typed JSON) into a JSON-ready Python value.

    The same result as boto3's ``TypeDeserializer().deserialize`` followed by
    :func:`from_dynamodb_numbers`, in one pass and without a ``Decimal`` for integers:
    the read path turns every item of a page into an event with it.

    Parameters
    ----------
    value : dict of str to Any
        One typed value as a ``Query`` returns it, e.g. ``{"N": "2.5"}`` or
        ``{"M": {"a": {"S": "x"}}}``.

    Returns
    -------
    Any
        ``S`` -> str; ``N`` -> int (integral) or float; ``BOOL`` -> bool; ``NULL`` ->
        None; ``M`` -> dict; ``L`` -> list; ``SS`` / ``NS`` -> sorted list; ``B`` ->
        ``Binary`` as ``TypeDeserializer`` returns it, whether the value is ``bytes``
        (botocore's parser) or base64 text (the wire JSON, as the library's own client
        leaves a Query's items: :mod:`dynashard.dynamodb.raw_items`); ``BS`` -> a list
        of ``Binary`` sorted by their bytes (``TypeDeserializer`` then
        :func:`from_dynamodb_numbers` raises ``TypeError`` on two or more, as ``Binary``
        does not sort).

    Raises
    ------
    TypeError
        If the type descriptor is not one of DynamoDB's ten (``TypeDeserializer``'s
        error).

    Examples
    --------
    >>> plain_value({"M": {"n": {"N": "2"}, "d": {"N": "2.50"}, "s": {"NS": ["3", "1E+1"]}}})
    {'n': 2, 'd': 2.5, 's': [3, 10]}
    >>> plain_value({"B": "AAE="}) == plain_value({"B": bytes([0, 1])})
    True
    """
    ((tag, inner),) = value.items()
    if tag == "S" or tag == "BOOL":
        return inner
    if tag == "N":
        return _json_number(inner)
    if tag == "M":
        return {k: plain_value(v) for k, v in inner.items()}
    if tag == "L":
        return [plain_value(v) for v in inner]
    if tag == "NULL":
        return None
    if tag == "SS":
        return sorted(inner)
    if tag == "NS":
        return sorted(_json_number(n) for n in inner)
    if tag == "B":
        return _binary(inner)
    if tag == "BS":
        # Binary has no order (from_dynamodb_numbers raises TypeError on a set of two):
        # sorted by its bytes, so another program's item holding one reads back
        return sorted({_binary(b) for b in inner}, key=lambda b: b.value)
    from boto3.dynamodb.types import TypeDeserializer

    return from_dynamodb_numbers(TypeDeserializer().deserialize(value))


def dumps(value: Any) -> str:
    """Serialize to compact JSON, turning ``Decimal`` into int or float.

    Parameters
    ----------
    value : Any
        JSON-like data, possibly with ``Decimal``.

    Returns
    -------
    str
        JSON text.

    Examples
    --------
    >>> dumps({"seats": Decimal("180"), "origin": "JFK"})
    '{"seats":180,"origin":"JFK"}'
    """
    return json.dumps(from_dynamodb_numbers(value), separators=(",", ":"), ensure_ascii=False)
