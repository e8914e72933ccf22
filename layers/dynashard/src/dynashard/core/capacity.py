"""Capacity units and shard counts: DynamoDB's charging rules, in one place (pure).

Everything that turns an item into bytes, bytes into capacity units, or a load into
a shard count lives here; the writer, the planner, the ``dynashard`` command and the
sandbox's partition emulator all use these functions. Sources, all from the Amazon
DynamoDB Developer Guide:

- "Item sizes and formats" (``CapacityUnitCalculations.html``): strings are UTF-8
  bytes; numbers about 1 byte per two significant digits plus 1 byte; binary its raw
  length; null and Boolean 1 byte; a list or map 3 bytes plus 1 byte per element plus
  its contents; a set the sum of its members; every attribute also counts its name.
- "DynamoDB read and write operations" (``read-write-operations.html``) and
  "Read/write capacity mode" (``HowItWorks.ReadWriteCapacityMode.html``): 1 WCU writes
  up to 1 KB, rounded up per item; 1 RCU reads up to 4 KB strongly consistent (SC),
  rounded up per item; an eventually consistent (EC) read costs half; transactional
  reads and writes cost double; BatchGetItem and BatchWriteItem round every item
  separately; Query and Scan round up the *sum* of the bytes read once per request; a
  read or write of a missing item still costs the minimum unit.
- "Best practices for designing and using partition keys effectively"
  (``bp-partition-key-design.html``): one partition key value never gets more than
  3,000 RCU/s and 1,000 WCU/s, on provisioned and on-demand tables alike; spread over
  N shards that hash to different partitions, a key takes about N times that.

Item sizes come in two spellings: Python values as boto3's ``TypeSerializer`` takes them
(:func:`item_size`, what the library writes) and DynamoDB JSON on the wire
(:func:`wire_item_size`, what the emulator sees). Both count by the same rules.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from dynashard import defaults

#: Bytes per write capacity unit (1 KB).
WRITE_UNIT_BYTES: Final = 1024
#: Bytes per read capacity unit (4 KB).
READ_UNIT_BYTES: Final = 4096
#: Overhead of a list or map value, bytes ("Item sizes and formats").
CONTAINER_OVERHEAD_BYTES: Final = 3
#: Multiplier of transactional reads and writes.
TRANSACTIONAL_FACTOR: Final = 2
#: Multiplier of eventually consistent reads.
EVENTUALLY_CONSISTENT_FACTOR: Final = 0.5
#: Per-partition write ceiling, WCU/s ("Best practices for designing and using
#: partition keys effectively"; kept in :mod:`dynashard.defaults`, the table of defaults
#: and caps).
PARTITION_WCU_LIMIT: Final = defaults.PARTITION_WCU_LIMIT
#: Per-partition read ceiling, RCU/s (same source).
PARTITION_RCU_LIMIT: Final = defaults.PARTITION_RCU_LIMIT

#: An attribute value in DynamoDB JSON, e.g. ``{"S": "DEPARTURES#JFK#3"}``.
AttributeValue = Mapping[str, Any]
#: An item in DynamoDB JSON: attribute name -> attribute value.
Item = Mapping[str, AttributeValue]
#: The type descriptors of DynamoDB JSON.
WIRE_TYPES: Final = frozenset({"S", "N", "B", "BOOL", "NULL", "SS", "NS", "BS", "L", "M"})


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


# --- sizes -----------------------------------------------------------------------------
def number_size(text: str) -> int:
    """Return the stored size of a DynamoDB number, bytes.

    Parameters
    ----------
    text : str
        The number as text (``"12.50"``, ``"-3e5"``, ``"1E+5"``).

    Returns
    -------
    int
        ``ceil(significant digits / 2) + 1``; leading and trailing zeros are not
        significant ("Item sizes and formats": "approximately ... 1 byte per two
        significant digits ... + 1 byte").

    Examples
    --------
    >>> number_size("12.50"), number_size("100"), number_size("-3e5")
    (3, 2, 2)
    """
    mantissa = text.strip().lstrip("+-").split("e")[0].split("E")[0]
    digits = mantissa.replace(".", "").strip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


def _binary_size(value: str) -> int:
    try:
        return len(base64.b64decode(value, validate=False))
    except (binascii.Error, ValueError):
        return len(value)


def _python_number_size(value: int | float | Decimal) -> int:
    try:
        return number_size(str(Decimal(str(value))))
    except InvalidOperation:  # nan / inf: DynamoDB refuses them anyway
        return number_size(str(value))


def attribute_value_size(value: Any) -> int:
    """Return the stored size of one attribute value given as a Python value, bytes.

    Parameters
    ----------
    value : Any
        A Python value as boto3's ``TypeSerializer`` accepts it (str, int, Decimal,
        bytes, bool, None, dict, list, set).

    Returns
    -------
    int
        Bytes, by the rules of "Item sizes and formats" (module docstring).

    Examples
    --------
    A string is its UTF-8 length, 5 significant digits take 4 bytes, and a map of one
    number 3 + 1 + 9 (its name) + 2 bytes:

    >>> attribute_value_size("JFK"), attribute_value_size(Decimal("1234.5"))
    (3, 4)
    >>> attribute_value_size({"dep_delay": 2})
    15
    """
    # Exact types first (what an event's data holds after JSON validation): the writer
    # sizes every value of every event, and a chain of isinstance checks against unions
    # cost as much as the rest of the sizing. Anything else (subclasses included) takes
    # the general path below, which gives the same sizes.
    kind = type(value)
    if kind is str:
        return len(value) if value.isascii() else _utf8(value)
    if kind is int:
        # number_size(str(Decimal(str(value)))): an int's text has no sign past the
        # first character, no point and no exponent.
        digits = len(str(value).lstrip("-").strip("0")) or 1
        return (digits + 1) // 2 + 1
    if kind is dict:
        return CONTAINER_OVERHEAD_BYTES + sum(
            1
            + (len(k) if type(k) is str and k.isascii() else _utf8(str(k)))
            + attribute_value_size(v)
            for k, v in value.items()
        )
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return _utf8(value)
    if isinstance(value, int | Decimal | float):
        return _python_number_size(value)
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, dict):
        return CONTAINER_OVERHEAD_BYTES + sum(
            1 + _utf8(str(k)) + attribute_value_size(v) for k, v in value.items()
        )
    if isinstance(value, list | tuple):
        return CONTAINER_OVERHEAD_BYTES + sum(1 + attribute_value_size(v) for v in value)
    if isinstance(value, set | frozenset):
        return sum(attribute_value_size(v) for v in value)
    return _utf8(str(value))


def item_size(item: Mapping[str, Any]) -> int:
    """Return an item's size as DynamoDB counts it (Python values): names plus values, bytes.

    Parameters
    ----------
    item : mapping
        Attribute name -> Python value.

    Returns
    -------
    int
        Bytes ("Item sizes and formats").

    Examples
    --------
    >>> item_size({"PK": "DEPARTURES#JFK#3", "data": {"dep_delay": 2}})
    37
    """
    return sum(_utf8(name) + attribute_value_size(v) for name, v in item.items())


def wire_attribute_value_size(value: AttributeValue) -> int:
    """Return the stored size of one attribute value in DynamoDB JSON, bytes.

    Parameters
    ----------
    value : mapping
        One-key mapping of type descriptor to value: ``S``, ``N``, ``B`` (base64),
        ``BOOL``, ``NULL``, ``SS``, ``NS``, ``BS``, ``L`` or ``M``.

    Returns
    -------
    int
        Bytes, by the rules of "Item sizes and formats" (module docstring). An unknown
        type descriptor counts as the UTF-8 length of its text.

    Examples
    --------
    >>> wire_attribute_value_size({"L": [{"S": "ab"}, {"N": "1"}]})
    9
    """
    for kind, raw in value.items():
        if kind == "S":
            return _utf8(raw)
        if kind == "N":
            return number_size(raw)
        if kind == "B":
            return _binary_size(raw)
        if kind in ("BOOL", "NULL"):
            return 1
        if kind == "SS":
            return sum(_utf8(v) for v in raw)
        if kind == "NS":
            return sum(number_size(v) for v in raw)
        if kind == "BS":
            return sum(_binary_size(v) for v in raw)
        if kind == "L":
            return CONTAINER_OVERHEAD_BYTES + sum(1 + wire_attribute_value_size(v) for v in raw)
        if kind == "M":
            return CONTAINER_OVERHEAD_BYTES + sum(
                1 + _utf8(k) + wire_attribute_value_size(v) for k, v in raw.items()
            )
        return _utf8(str(raw))
    return 0


def wire_item_size(item: Item) -> int:
    """Return an item's size as DynamoDB counts it (DynamoDB JSON): names plus values, bytes.

    Parameters
    ----------
    item : mapping
        Attribute name -> attribute value in DynamoDB JSON.

    Returns
    -------
    int
        Bytes ("Item sizes and formats").

    Examples
    --------
    >>> wire_item_size({"PK": {"S": "abc"}, "n": {"N": "123"}})
    9
    """
    return sum(_utf8(name) + wire_attribute_value_size(v) for name, v in item.items())


def is_wire_item(item: Mapping[str, Any]) -> bool:
    """Tell whether an item is in DynamoDB JSON (every value a one-key typed mapping).

    Parameters
    ----------
    item : mapping
        An item, either spelling.

    Returns
    -------
    bool
        True when every value is ``{"S": ...}``, ``{"N": ...}``, ... (and there is one).

    Examples
    --------
    >>> is_wire_item({"PK": {"S": "a"}}), is_wire_item({"PK": "a"}), is_wire_item({})
    (True, False, False)
    """
    return bool(item) and all(
        isinstance(v, Mapping) and len(v) == 1 and next(iter(v)) in WIRE_TYPES
        for v in item.values()
    )


def any_item_size(item: Mapping[str, Any]) -> int:
    """Return an item's size, bytes, whichever spelling it is in.

    Parameters
    ----------
    item : mapping
        An item in DynamoDB JSON or as Python values (:func:`is_wire_item` tells).

    Returns
    -------
    int
        :func:`wire_item_size` or :func:`item_size`.
    """
    return wire_item_size(item) if is_wire_item(item) else item_size(item)


# --- capacity units ------------------------------------------------------------------------
def write_units(size_bytes: int, *, transactional: bool = False) -> int:
    """Return the write capacity units of writing one item.

    Parameters
    ----------
    size_bytes : int
        Item size, bytes (for an update, the larger of the item before and after).
    transactional : bool
        True for an action of ``TransactWriteItems`` (costs double).

    Returns
    -------
    int
        WCU: ``max(1, ceil(size / 1 KB))``, times 2 when transactional (Developer
        Guide, "DynamoDB read and write operations": one WCU per started KB).

    Examples
    --------
    >>> write_units(400), write_units(1024), write_units(1025)
    (1, 1, 2)
    >>> write_units(1536, transactional=True)
    4
    """
    units = max(1, math.ceil(size_bytes / WRITE_UNIT_BYTES))
    return units * TRANSACTIONAL_FACTOR if transactional else units


def read_units(size_bytes: int, *, consistent: bool, transactional: bool = False) -> float:
    """Return the read capacity units of reading one item (GetItem, BatchGetItem).

    Parameters
    ----------
    size_bytes : int
        Item size, bytes (0 for a missing item, which still costs the minimum).
    consistent : bool
        True for a strongly consistent read; False for eventually consistent (half).
    transactional : bool
        True for an item of ``TransactGetItems`` (double; always consistent).

    Returns
    -------
    float
        RCU: ``max(1, ceil(size / 4 KB))``, times 0.5 for EC or 2 for transactional
        (Developer Guide, "DynamoDB read and write operations").

    Examples
    --------
    A 4.5 KB item: 2 RCU strongly consistent, 1 eventually consistent, 4 in a transaction.

    >>> [read_units(4608, consistent=c) for c in (True, False)]
    [2.0, 1.0]
    >>> read_units(4608, consistent=True, transactional=True)
    4.0
    """
    units = float(max(1, math.ceil(size_bytes / READ_UNIT_BYTES)))
    if transactional:
        return units * TRANSACTIONAL_FACTOR
    return units if consistent else units * EVENTUALLY_CONSISTENT_FACTOR


def query_read_units(total_bytes: float, *, consistent: bool) -> float:
    """Return the read capacity units of one Query or Scan page.

    Parameters
    ----------
    total_bytes : float
        Sum of the sizes of all items read (before any filter), bytes; an expected
        size (a planner's estimate) may be fractional.
    consistent : bool
        True for a strongly consistent read; False for eventually consistent (half).

    Returns
    -------
    float
        RCU: ``max(1, ceil(total / 4 KB))``, halved for EC. The sum is rounded up once
        per request, not per item (Developer Guide, "Query operations": "the sum of
        the total size of all items returned ... rounded up to the next 4 KB").

    Examples
    --------
    100 items of 300 bytes read in one Query: 30,000 bytes, 8 RCU SC, 4 EC (not 100
    rounded items):

    >>> query_read_units(100 * 300, consistent=True), query_read_units(30_000, consistent=False)
    (8.0, 4.0)
    """
    units = float(max(1, math.ceil(total_bytes / READ_UNIT_BYTES)))
    return units if consistent else units * EVENTUALLY_CONSISTENT_FACTOR


def batch_read_units(sizes: list[int], *, consistent: bool) -> float:
    """Return the RCU of a BatchGetItem: every item rounded up separately.

    Parameters
    ----------
    sizes : list of int
        Item sizes, bytes.
    consistent : bool
        True for strongly consistent reads.

    Returns
    -------
    float
        Sum of :func:`read_units` per item.

    Examples
    --------
    1.5 KB + 6.5 KB is billed as 12 KB, i.e. 3 RCU strongly consistent, not 2
    (Developer Guide, "DynamoDB read and write operations"):

    >>> batch_read_units([1536, 6656], consistent=True)
    3.0
    """
    return sum(read_units(s, consistent=consistent) for s in sizes)


# --- shard counts ------------------------------------------------------------------------
def shards_needed(
    units_per_s: float,
    partition_limit: float = PARTITION_WCU_LIMIT,
    target_utilization: float = defaults.TARGET_UTILIZATION.default,
) -> int:
    """Return the shard count that keeps each shard at ``target_utilization`` of its limit.

    ``N = ceil(peak units / (partition limit x target utilization))``, at least 1: the
    formula of the AWS Database Blog post "Choosing the right number of shards for your
    large-scale Amazon DynamoDB table", with the per-partition ceilings of the
    Developer Guide (1,000 WCU/s, 3,000 RCU/s).

    Parameters
    ----------
    units_per_s : float
        Peak load of the logical key, WCU/s or RCU/s, finite and ``>= 0``.
    partition_limit : float
        Ceiling of one partition key value, units/s, ``> 0``.
    target_utilization : float
        Headroom, ``0 < u <= 1``.

    Returns
    -------
    int
        N, ``>= 1`` (uncapped; callers cap at their ``max_shards``).

    Raises
    ------
    ValueError
        If an argument is out of range (the planner maps it to
        :class:`~dynashard.errors.InvalidInputError`).

    Examples
    --------
    5,000 WCU/s at 80 % of 1,000 WCU/s per shard: ``ceil(5000 / 800) = 7``.

    >>> shards_needed(5000.0), shards_needed(0.0), shards_needed(9000.0, PARTITION_RCU_LIMIT)
    (7, 1, 4)
    """
    if units_per_s < 0 or not math.isfinite(units_per_s):
        raise ValueError(f"units_per_s must be finite and >= 0, got {units_per_s}")
    if partition_limit <= 0:
        raise ValueError(f"partition_limit must be > 0, got {partition_limit}")
    if not 0 < target_utilization <= 1:
        raise ValueError(f"target_utilization must be in (0, 1], got {target_utilization}")
    return max(1, math.ceil(units_per_s / (partition_limit * target_utilization)))
