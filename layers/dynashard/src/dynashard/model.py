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
from typing import TYPE_CHECKING, Annotated, Any, Final, TypeAlias

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
)

from dynashard.core.keys import (
    MIN_EPOCH_MS_MAGNITUDE,
    format_ts,
    parse_ts,
    sort_key,
    validate_logical_key,
)
from dynashard.errors import InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Mapping

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
    f"at most {MAX_NUMBER_DIGITS} significant digits, none finer than 1E-165 (boto3's "
    "number context)"
)


#: The JSON schema of ``ts`` as the API accepts it: RFC 3339 text, or epoch milliseconds
#: within the years 1..9999 and of magnitude 10**11 or more, not epoch seconds (what
#: :func:`dynashard.core.keys.parse_ts` takes; ISO-8601 text that is not RFC 3339, e.g. a
#: date alone, is accepted too but left undocumented).
TS_SCHEMA: Final[dict[str, Any]] = {
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "number", "minimum": MIN_EPOCH_MS_MAGNITUDE, "maximum": 253_402_300_799_999},
        {"type": "number", "minimum": -62_135_596_800_000, "maximum": -MIN_EPOCH_MS_MAGNITUDE},
    ],
    "description": "Event time: RFC 3339 (naive is UTC) or epoch milliseconds; a number "
    "below 10**11 in magnitude (1973-03-03T09:46:40Z) is refused as epoch seconds",
}


#: What an event time may be given as (:func:`dynashard.core.keys.parse_ts`): ISO-8601
#: text, a datetime, or epoch milliseconds (an int, a float, a ``Decimal``, or a string of
#: digits). :class:`Event` stores it as an aware UTC ``datetime``.
TimeInput: TypeAlias = str | datetime | int | float | Decimal


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
        Event time, an aware UTC datetime. Given as :data:`TimeInput`: ISO-8601 text
        (naive is UTC), a datetime, or epoch milliseconds of magnitude 10**11 or more (a
        smaller number is what epoch seconds look like, and is refused:
        :data:`~dynashard.core.keys.MIN_EPOCH_MS_MAGNITUDE`).
    data : dict
        Payload, a JSON object. Numbers are stored exactly as DynamoDB numbers (up to
        38 significant digits): a ``Decimal`` as it is, a float as ``Decimal(repr(f))``;
        what DynamoDB cannot keep exactly is refused naming its path
        (:func:`dynamodb_number`).

    Examples
    --------
    Epoch milliseconds in, fixed-width UTC ISO-8601 out; floats held as ``Decimal``:

    >>> event = Event(key="DEPARTURES#JFK", id="f1", ts=1357035300000, data={"delay": 2.5})
    >>> event.sort_key
    '2013-01-01T10:15:00.000000Z#f1'
    >>> event.data
    {'delay': Decimal('2.5')}
    >>> event.to_json()["ts"], event.to_json()["data"]
    ('2013-01-01T10:15:00.000000Z', {'delay': Decimal('2.5')})
    """

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)

    if TYPE_CHECKING:
        # The constructor as type checkers see it: ``ts`` takes every form the validator
        # parses (TimeInput), while the attribute stays the normalised ``datetime``
        # (without this, a type checker reads the field's type as the input's, and the
        # README's ``Event(ts="2013-01-01T00:00:00Z")`` fails mypy). pydantic's own
        # ``__init__`` runs: this exists only for type checking.
        def __init__(
            self, *, key: str, id: str, ts: TimeInput, data: Mapping[str, Any] = ...
        ) -> None: ...

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
            ``{"key", "id", "ts", "data"}``; numbers as int (integral) or ``Decimal``
            (exact): :func:`dumps` writes them as exact JSON numbers.
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
    """Check that DynamoDB (and boto3's serializer) can store a number exactly.

    Parameters
    ----------
    value : int, float or Decimal
        A number from JSON (parsed with ``parse_float=Decimal``) or from a Python caller.
    path : str
        Its JSON path, for the error, e.g. ``data.x.y[1]``.

    Returns
    -------
    int or Decimal
        An int or a ``Decimal`` as it is; a float as ``Decimal(repr(f))``, the shortest
        decimal that reads back as that float (what its caller wrote, ``0.1`` for
        ``0.1``, not the binary expansion ``0.1000000000000000055511...``). A value with
        more than 38 digits of which the extra ones are trailing zeros
        (``1.5000...0``, ``10**40``) comes back without them, as a ``Decimal``: it is
        the same number, and DynamoDB keeps it exactly.

    Raises
    ------
    ValueError
        Naming ``path``, for NaN, infinity, a magnitude outside 1E-130 ..
        9.9999999999999999999999999999999999999E+125 or more than 38 significant digits
        (Developer Guide, "Data types", Number), or a digit finer than 1E-165 (boto3's
        serializer, ``boto3.dynamodb.types.DYNAMODB_CONTEXT``, cannot send 38 digits at
        1E-130 though DynamoDB holds them): such a number cannot be kept exactly, and it
        is refused rather than rounded. The value itself is not in the message:
        it is payload data, and messages are logged.

    Examples
    --------
    >>> dynamodb_number(2.5), dynamodb_number(10**37), dynamodb_number(Decimal("0.10"))
    (Decimal('2.5'), 10000000000000000000000000000000000000, Decimal('0.10'))
    >>> dynamodb_number(10**40)
    Decimal('1E+40')
    >>> dynamodb_number(Decimal("1.000000000000000000000000000000000000001"), "data.x")
    Traceback (most recent call last):
    ...
    ValueError: data.x: a number outside DynamoDB's number range: magnitude 1E-130 to ...
    """
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{path}: NaN and infinity cannot be stored as DynamoDB numbers")
        number: int | Decimal = Decimal(repr(value))
    elif isinstance(value, Decimal) and not value.is_finite():
        raise ValueError(f"{path}: NaN and infinity cannot be stored as DynamoDB numbers")
    else:
        number = value
    try:
        exact = _DYNAMODB_CONTEXT.create_decimal(number)
    except DecimalException:
        # Trailing zeros count as digits for boto3's serializer: drop them (exactly).
        number = _without_trailing_zeros(Decimal(number))
        try:
            exact = _DYNAMODB_CONTEXT.create_decimal(number)
        except DecimalException:
            raise ValueError(f"{path}: a number {NUMBER_RANGE}") from None
    # copy_abs, not abs(): abs() rounds to the default context's 28 digits.
    if exact and not MIN_NUMBER_MAGNITUDE <= exact.copy_abs() <= MAX_NUMBER_MAGNITUDE:
        raise ValueError(f"{path}: a number {NUMBER_RANGE}")
    return number


def _without_trailing_zeros(number: Decimal) -> Decimal:
    """Return the same finite number without the trailing zeros of its coefficient (exact).

    >>> _without_trailing_zeros(Decimal("1.500")), _without_trailing_zeros(Decimal(1000))
    (Decimal('1.5'), Decimal('1E+3'))
    """
    sign, digits, exponent = number.as_tuple()
    if not isinstance(exponent, int):  # "n", "N" or "F": the caller passes finite ones only
        raise ValueError(f"not a finite number: {number}")
    kept = len(digits)
    while kept > 1 and digits[kept - 1] == 0:
        kept -= 1
    return Decimal((sign, digits[:kept], exponent + len(digits) - kept))


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
        The same shape with every float as ``Decimal(repr(f))`` (:func:`dynamodb_number`).

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
    """Replace integral ``Decimal`` by int throughout; keep the others exact.

    Parameters
    ----------
    value : Any
        Data as boto3's ``TypeDeserializer`` returns it.

    Returns
    -------
    Any
        The same shape, ready for :func:`dumps` (sets become sorted lists): integral
        numbers as int, the others as the ``Decimal`` DynamoDB holds, never a float
        (a float would round 12345678901234567.89 to 12345678901234568).

    Examples
    --------
    >>> from_dynamodb_numbers({"delay": Decimal("2.5"), "seats": Decimal("180")})
    {'delay': Decimal('2.5'), 'seats': 180}
    >>> from_dynamodb_numbers({"b", "a"})
    ['a', 'b']
    """
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else value
    if isinstance(value, dict):
        return {k: from_dynamodb_numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [from_dynamodb_numbers(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(from_dynamodb_numbers(v) for v in value)
    return value


_INTEGER = re.compile(r"-?[0-9]+").fullmatch
_DECIMAL_FRACTION = re.compile(r"-?[0-9]*\.[0-9]*[1-9][0-9]*").fullmatch


def _number(text: str) -> int | Decimal:
    """Return a DynamoDB ``N`` as an int when integral, else as the exact ``Decimal``."""
    if _INTEGER(text):
        return int(text)
    number = Decimal(text)
    # No exponent and a nonzero fraction: not integral, no need to compare.
    if _DECIMAL_FRACTION(text) or number != number.to_integral_value():
        return number
    return int(number)


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
        ``S`` -> str; ``N`` -> int (integral) or ``Decimal`` (exact); ``BOOL`` -> bool; ``NULL`` ->
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
    {'n': 2, 'd': Decimal('2.50'), 's': [3, 10]}
    >>> plain_value({"B": "AAE="}) == plain_value({"B": bytes([0, 1])})
    True
    """
    ((tag, inner),) = value.items()
    if tag == "S" or tag == "BOOL":
        return inner
    if tag == "N":
        return _number(inner)
    if tag == "M":
        return {k: plain_value(v) for k, v in inner.items()}
    if tag == "L":
        return [plain_value(v) for v in inner]
    if tag == "NULL":
        return None
    if tag == "SS":
        return sorted(inner)
    if tag == "NS":
        return sorted(_number(n) for n in inner)
    if tag == "B":
        return _binary(inner)
    if tag == "BS":
        # Binary has no order (from_dynamodb_numbers raises TypeError on a set of two):
        # sorted by its bytes, so another program's item holding one reads back
        return sorted({_binary(b) for b in inner}, key=lambda b: b.value)
    from boto3.dynamodb.types import TypeDeserializer

    return from_dynamodb_numbers(TypeDeserializer().deserialize(value))


def loads(text: str | bytes | bytearray) -> Any:
    """Parse JSON keeping every digit: numbers with a fraction or exponent as ``Decimal``.

    What the ingest paths parse request bodies and queue and stream records with
    (``json.loads(text, parse_float=Decimal)``): a float would round
    ``12345678901234567.89`` to ``12345678901234568`` before anything could check it.
    Integers stay int; ``NaN`` and ``Infinity`` are parsed as floats and refused by
    the payload's check (:func:`dynamodb_number`), naming their path.

    Parameters
    ----------
    text : str, bytes or bytearray
        JSON text (UTF-8, -16 or -32 when bytes, as ``json.loads`` takes it).

    Returns
    -------
    Any
        The parsed value.

    Raises
    ------
    json.JSONDecodeError
        A ``ValueError``: if the text is not JSON.
    RecursionError
        If it nests deeper than the parser can follow (as ``json.loads``): far past
        DynamoDB's 32 levels, which callers report (:data:`MAX_NESTING_LEVELS`).

    Examples
    --------
    >>> loads('{"price": 12345678901234567.89, "n": 3}')
    {'price': Decimal('12345678901234567.89'), 'n': 3}
    """
    return json.loads(text, parse_float=Decimal)


def dumps(value: Any, *, indent: int | None = None, default: Any = None) -> str:
    """Serialize to JSON, every ``Decimal`` as an exact JSON number.

    Parameters
    ----------
    value : Any
        JSON-like data, possibly with ``Decimal`` (as reads return numbers).
    indent : int, optional
        Indent of pretty-printed JSON; compact (no spaces) when None.
    default : callable, optional
        As ``json.dumps``'s: what to make of any other type.

    Returns
    -------
    str
        JSON text. An integral number is written as an integer, any other ``Decimal``
        with its own digits (``12345678901234567.89``, ``1E-130``): a JSON parser that
        keeps decimals (``json.loads(text, parse_float=Decimal)``) gets the number back
        exactly. Neither a string nor a float's 17 digits.

    Examples
    --------
    >>> dumps({"seats": Decimal("180"), "origin": "JFK"})
    '{"seats":180,"origin":"JFK"}'
    >>> dumps([Decimal("12345678901234567.89"), Decimal("-2.5E-7")])
    '[12345678901234567.89,-2.5E-7]'
    """
    plain, exact = _json_ready(value)
    separators = (",", ":") if indent is None else (",", ": ")
    if not exact:
        return json.dumps(
            plain, separators=separators, ensure_ascii=False, indent=indent, default=default
        )
    encoder = _ExactEncoder(
        separators=separators, ensure_ascii=False, indent=indent, default=default
    )
    return "".join(encoder.iterencode(plain))


class _JsonNumber(float):
    """A non-integral ``Decimal`` on its way to JSON: written as its own digits."""

    text: str

    def __new__(cls, number: Decimal) -> _JsonNumber:
        made = super().__new__(cls, number)
        made.text = str(number)
        return made


def _json_ready(value: Any) -> tuple[Any, bool]:
    """:func:`from_dynamodb_numbers` with each non-integral ``Decimal`` as a ``_JsonNumber``.

    Returns the data and whether any ``_JsonNumber`` is in it (only then does
    :func:`dumps` need its exact encoder; the other data goes through the C one).
    """
    found = False

    def walk(item: Any) -> Any:
        nonlocal found
        if isinstance(item, Decimal):
            if item.is_finite() and item != item.to_integral_value():
                found = True
                return _JsonNumber(item)
            return int(item) if item.is_finite() else float(item)
        if isinstance(item, dict):
            return {k: walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        if isinstance(item, set | frozenset):
            return [walk(v) for v in sorted(item)]
        return item

    return walk(value), found


class _ExactEncoder(json.JSONEncoder):
    """``json.JSONEncoder`` writing a ``_JsonNumber`` as its own digits.

    The C encoder formats every float subclass with ``float.__repr__``: this one runs
    the standard library's pure-Python encoder (``json.encoder._make_iterencode``) with
    a float formatter that knows ``_JsonNumber``.
    """

    def iterencode(self, o: Any, _one_shot: bool = False) -> Any:
        from json import encoder as std

        def floatstr(number: float) -> str:
            if type(number) is _JsonNumber:
                return number.text
            if number != number:
                text = "NaN"
            elif number in (float("inf"), float("-inf")):
                text = "Infinity" if number > 0 else "-Infinity"
            else:
                return float.__repr__(number)
            if not self.allow_nan:
                raise ValueError(f"Out of range float values are not JSON compliant: {text}")
            return text

        markers: dict[int, Any] | None = {} if self.check_circular else None
        string = std.encode_basestring_ascii if self.ensure_ascii else std.encode_basestring
        iterencode = std._make_iterencode(  # type: ignore[attr-defined]
            markers,
            self.default,
            string,
            self.indent,
            floatstr,
            self.key_separator,
            self.item_separator,
            self.sort_keys,
            self.skipkeys,
            _one_shot,
        )
        return iterencode(o, 0)
