"""The event model: what ingest accepts and what reads return.

An event is ``{"key", "id", "ts", "data"}``: the logical key it belongs to, a unique
event id (the same id always maps to the same item), the event time (ISO-8601 or epoch
milliseconds on input; fixed-width UTC ISO-8601 on output) and a JSON object payload.
"""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from dynashard.errors import InvalidInputError
from dynashard.keys import format_ts, parse_ts, sort_key, validate_logical_key

#: Largest number of events one ``POST /events`` request may carry.
MAX_EVENTS_PER_REQUEST = 100


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
    ts: Annotated[datetime, BeforeValidator(_parse_ts)]
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
        converted: dict[str, Any] = to_dynamodb_numbers(value)
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


def to_dynamodb_numbers(value: Any) -> Any:
    """Replace floats by ``Decimal`` throughout, as DynamoDB's serializer requires.

    Parameters
    ----------
    value : Any
        JSON-like data.

    Returns
    -------
    Any
        The same shape with every float as ``Decimal(str(f))``.

    Raises
    ------
    ValueError
        For NaN or infinity, which DynamoDB numbers cannot hold.

    Examples
    --------
    >>> to_dynamodb_numbers({"delays": [2.5, 3]})
    {'delays': [Decimal('2.5'), 3]}
    >>> to_dynamodb_numbers(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: NaN and infinity cannot be stored as DynamoDB numbers
    """
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("NaN and infinity cannot be stored as DynamoDB numbers")
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: to_dynamodb_numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_dynamodb_numbers(v) for v in value]
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
