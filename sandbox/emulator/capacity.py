"""Capacity-unit charging rules of DynamoDB, on the wire format of attribute values.

Everything here is pure: it takes DynamoDB JSON (``{"S": "x"}``, ``{"N": "12"}``, ...)
and returns bytes or capacity units. Sources, all from the Amazon DynamoDB Developer
Guide:

- "Item sizes and formats" (``CapacityUnitCalculations``): strings are UTF-8 bytes;
  numbers about 1 byte per two significant digits plus 1 byte; binary its raw length;
  null and Boolean 1 byte; a list or map 3 bytes plus 1 byte per element plus its
  contents; a set the sum of its members; every attribute also counts its name.
- "Read/write capacity mode" and "DynamoDB read and write operations": 1 WCU writes up
  to 1 KB, rounded up per item; 1 RCU reads up to 4 KB strongly consistent (SC),
  rounded up per item; an eventually consistent (EC) read costs half; transactional
  reads and writes cost double; BatchGetItem and BatchWriteItem round every item
  separately; Query and Scan round up the *sum* of the bytes read once per request;
  a read or write of a missing item still costs the minimum unit.
- "Global secondary indexes: provisioned throughput": a write that adds or removes an
  index entry costs one index write of the projected item's size, a write that changes
  the index key costs two (delete the old entry, put the new one).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping
from typing import Any, Final

#: Bytes per write capacity unit (1 KB).
WRITE_UNIT_BYTES: Final = 1024
#: Bytes per read capacity unit (4 KB).
READ_UNIT_BYTES: Final = 4096
#: Overhead of a list or map value, bytes ("Item sizes and formats").
CONTAINER_OVERHEAD_BYTES: Final = 3
#: Multiplier of transactional reads and writes.
TRANSACTIONAL_FACTOR: Final = 2.0
#: Multiplier of eventually consistent reads.
EVENTUALLY_CONSISTENT_FACTOR: Final = 0.5

#: An attribute value in DynamoDB JSON, e.g. ``{"S": "DEPARTURES#JFK#3"}``.
AttributeValue = Mapping[str, Any]
#: An item in DynamoDB JSON: attribute name -> attribute value.
Item = Mapping[str, AttributeValue]


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def number_size(text: str) -> int:
    """Return the stored size of a DynamoDB number, bytes.

    Parameters
    ----------
    text : str
        The number as DynamoDB JSON carries it (``"12.50"``, ``"-3e5"``).

    Returns
    -------
    int
        ``ceil(significant digits / 2) + 1``; leading and trailing zeros are not
        significant ("Item sizes and formats": "approximately ... 1 byte per two
        significant digits ... + 1 byte").
    """
    mantissa = text.strip().lstrip("+-").split("e")[0].split("E")[0]
    digits = mantissa.replace(".", "").strip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


def _binary_size(value: str) -> int:
    try:
        return len(base64.b64decode(value, validate=False))
    except (binascii.Error, ValueError):
        return len(value)


def attribute_value_size(value: AttributeValue) -> int:
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
            return CONTAINER_OVERHEAD_BYTES + sum(1 + attribute_value_size(v) for v in raw)
        if kind == "M":
            return CONTAINER_OVERHEAD_BYTES + sum(
                1 + _utf8(k) + attribute_value_size(v) for k, v in raw.items()
            )
        return _utf8(str(raw))
    return 0


def item_size(item: Item) -> int:
    """Return an item's size as DynamoDB counts it: attribute names plus values, bytes.

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
    >>> item_size({"PK": {"S": "abc"}, "n": {"N": "123"}})
    9
    """
    return sum(_utf8(name) + attribute_value_size(v) for name, v in item.items())


def write_units(size_bytes: int, *, transactional: bool = False) -> float:
    """Return the write capacity units of writing one item.

    Parameters
    ----------
    size_bytes : int
        Item size, bytes (for an update, the larger of the item before and after).
    transactional : bool
        True for an action of ``TransactWriteItems`` (costs double).

    Returns
    -------
    float
        WCU: ``max(1, ceil(size / 1 KB))``, times 2 when transactional (Developer
        Guide, "DynamoDB read and write operations"; a 1.5 KB item costs 2 WCU).
    """
    units = float(max(1, math.ceil(size_bytes / WRITE_UNIT_BYTES)))
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
        (Developer Guide, "DynamoDB read and write operations"; a 4.5 KB SC read costs
        2 RCU, EC 1 RCU).
    """
    units = float(max(1, math.ceil(size_bytes / READ_UNIT_BYTES)))
    if transactional:
        return units * TRANSACTIONAL_FACTOR
    return units if consistent else units * EVENTUALLY_CONSISTENT_FACTOR


def query_read_units(total_bytes: int, *, consistent: bool) -> float:
    """Return the read capacity units of one Query or Scan page.

    Parameters
    ----------
    total_bytes : int
        Sum of the sizes of all items read (before any filter), bytes.
    consistent : bool
        True for a strongly consistent read; False for eventually consistent (half).

    Returns
    -------
    float
        RCU: ``max(1, ceil(total / 4 KB))``, halved for EC. The sum is rounded up once
        per request, not per item (Developer Guide, "Query operations": "the sum of
        the total size of all items returned ... rounded up to the next 4 KB").
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
        Sum of :func:`read_units` per item (FACTS: 1.5 KB + 6.5 KB is billed as 12 KB,
        i.e. 3 RCU SC, not 2).
    """
    return sum(read_units(s, consistent=consistent) for s in sizes)


def key_value_text(value: AttributeValue) -> str:
    """Return the text of a key attribute value (``S``, ``N`` or ``B``).

    Parameters
    ----------
    value : mapping
        A key attribute value in DynamoDB JSON.

    Returns
    -------
    str
        The scalar as text: what the emulator uses to name a partition.
    """
    for raw in value.values():
        return raw if isinstance(raw, str) else str(raw)
    return ""
