"""What each DynamoDB request charges, worked out from its JSON body (pure).

Writes are charged before they are forwarded (a throttled write is never forwarded);
reads reserve their minimum before and are charged in full after the answer (bytes
read). The charging rules are the library's, :mod:`dynashard.core.capacity`; this module finds the
partition key values a request touches, on the table and on each GSI.

GSI writes ("Global secondary indexes: provisioned throughput"): a write that puts an
item into an index costs one index write of the projected size; one that changes the
index key costs two (delete the old entry, put the new one); one that removes the item
or the index key costs one. The old image of an item is known from
:class:`ImageCache` (what the emulator saw last written through it); an item it has
never seen counts as absent, so the first update or delete of a pre-existing item
charges no old index entry. Update sizes are estimated as the larger of the cached
size and the key plus the assigned values (DynamoDB charges the larger of the item
before and after the update).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from dynashard.core.capacity import AttributeValue, Item, write_units
from dynashard.core.capacity import wire_attribute_value_size as attribute_value_size
from dynashard.core.capacity import wire_item_size as item_size
from sandbox.emulator.limits import Charge, Resource
from sandbox.emulator.schema import IndexMeta, TableMeta, key_value_text

_CLAUSE_RE: Final = re.compile(r"\b(SET|REMOVE|ADD|DELETE)\b", re.IGNORECASE)
_IF_NOT_EXISTS_RE: Final = re.compile(r"^if_not_exists\s*\(.*,\s*(:[\w]+)\s*\)$", re.IGNORECASE)
_EQ_RE: Final = re.compile(r"([#\w.\[\]]+)\s*=\s*(:[\w]+)")
_EQ_REVERSED_RE: Final = re.compile(r"(:[\w]+)\s*=\s*([#\w.\[\]]+)")


@dataclass(frozen=True, slots=True)
class ItemImage:
    """What the emulator remembers of an item: its size and its GSI partition keys.

    Parameters
    ----------
    size : int
        Item size, bytes.
    gsi_keys : mapping of str to str
        Index name -> partition key value, for the GSIs the item is in.
    """

    size: int
    gsi_keys: Mapping[str, str] = field(default_factory=dict)


class ImageCache:
    """Last known image of the items written through the emulator (bounded).

    Parameters
    ----------
    max_items : int
        When exceeded, the oldest half is dropped.
    """

    def __init__(self, max_items: int = 500_000) -> None:
        self.max_items = max_items
        self._items: dict[tuple[str, tuple[str, ...]], ItemImage] = {}

    @staticmethod
    def cache_key(meta: TableMeta, key: Item) -> tuple[str, tuple[str, ...]]:
        """Return the cache key of an item.

        Parameters
        ----------
        meta : TableMeta
            Its table.
        key : mapping
            Item or key in DynamoDB JSON (only the key attributes are read).

        Returns
        -------
        tuple
            ``(table, (hash text, range text))``.
        """
        return meta.name, tuple(key_value_text(key.get(a, {})) for a in meta.key_attributes)

    def get(self, meta: TableMeta, key: Item) -> ItemImage | None:
        """Return the remembered image of an item, if any.

        Parameters
        ----------
        meta : TableMeta
            Its table.
        key : mapping
            Item or key.

        Returns
        -------
        ItemImage or None
            None for an item never seen (or deleted).
        """
        return self._items.get(self.cache_key(meta, key))

    def put(self, ck: tuple[str, tuple[str, ...]], image: ItemImage | None) -> None:
        """Remember (or with None forget) an item's image.

        Parameters
        ----------
        ck : tuple
            :meth:`cache_key` of the item.
        image : ItemImage or None
            New image; None after a delete.
        """
        if image is None:
            self._items.pop(ck, None)
            return
        self._items[ck] = image
        if len(self._items) > self.max_items:
            for old in list(self._items)[: self.max_items // 2]:
                del self._items[old]

    def forget_table(self, table: str) -> None:
        """Forget every item of a table.

        Parameters
        ----------
        table : str
            Table name.
        """
        for ck in [ck for ck in self._items if ck[0] == table]:
            del self._items[ck]

    def clear(self) -> None:
        """Forget everything."""
        self._items.clear()


@dataclass(slots=True)
class WritePlan:
    """The charges of one item write, and the image to remember once it succeeds.

    Parameters
    ----------
    table : str
        Table name.
    key : mapping
        The item's key (or whole item), DynamoDB JSON.
    charges : list of Charge
        WCU per (resource, partition key value): the table first, then GSIs.
    cache_key : tuple
        :meth:`ImageCache.cache_key` of the item.
    image_after : ItemImage or None
        Image after the write (None: deleted, or unchanged for a condition check).
    changes_item : bool
        False for a ``ConditionCheck``.
    """

    table: str
    key: Item
    charges: list[Charge]
    cache_key: tuple[str, tuple[str, ...]]
    image_after: ItemImage | None
    changes_item: bool = True


def _projected_size(index: IndexMeta, meta: TableMeta, item: Item | None, size: int) -> int:
    if index.projection == "ALL" or item is None:
        return size
    names = set(meta.key_attributes) | {index.hash_key}
    if index.range_key:
        names.add(index.range_key)
    if index.projection == "INCLUDE":
        names.update(index.non_key_attributes)
    return item_size({k: v for k, v in item.items() if k in names})


def _gsi_keys(meta: TableMeta, item: Item) -> dict[str, str]:
    keys = {}
    for index in meta.gsis:
        value = item.get(index.hash_key)
        if value is None or (index.range_key and index.range_key not in item):
            continue
        keys[index.name] = key_value_text(value)
    return keys


def _gsi_charges(
    meta: TableMeta,
    old: ItemImage | None,
    new_keys: Mapping[str, str],
    sizes: Mapping[str, int],
    touched: set[str] | None,
    transactional: bool,
) -> list[Charge]:
    """Index writes: old entry deleted, new entry put, or entry updated in place."""
    charges = []
    old_keys = old.gsi_keys if old is not None else {}
    for index in meta.gsis:
        resource = Resource(meta.name, index.name)
        before, after = old_keys.get(index.name), new_keys.get(index.name)
        units = write_units(sizes.get(index.name, 0), transactional=transactional)
        if before is not None and before != after:
            charges.append(Charge(resource, before, units))
        if after is not None and (
            before != after or touched is None or _projects_any(index, meta, touched)
        ):
            charges.append(Charge(resource, after, units))
    return charges


def _projects_any(index: IndexMeta, meta: TableMeta, names: set[str]) -> bool:
    if index.projection == "ALL":
        return True
    keys = set(meta.key_attributes) | {index.hash_key, index.range_key or ""}
    if index.projection == "INCLUDE":
        keys.update(index.non_key_attributes)
    return bool(names & keys)


def plan_put(
    meta: TableMeta, item: Item, cache: ImageCache, *, transactional: bool = False
) -> WritePlan:
    """Plan a PutItem (or a put of BatchWriteItem / TransactWriteItems).

    Parameters
    ----------
    meta : TableMeta
        The table.
    item : mapping
        The item, DynamoDB JSON.
    cache : ImageCache
        Old images.
    transactional : bool
        True inside TransactWriteItems (double units).

    Returns
    -------
    WritePlan
        Table charge of ``max(new, old size)`` and the GSI entries the put changes.
    """
    old = cache.get(meta, item)
    size = item_size(item)
    charged = max(size, old.size if old else 0)
    new_keys = _gsi_keys(meta, item)
    sizes = {g.name: _projected_size(g, meta, item, size) for g in meta.gsis}
    charges = [
        Charge(
            Resource(meta.name),
            key_value_text(item.get(meta.hash_key, {})),
            write_units(charged, transactional=transactional),
        )
    ]
    charges += _gsi_charges(meta, old, new_keys, sizes, None, transactional)
    return WritePlan(
        meta.name, item, charges, ImageCache.cache_key(meta, item), ItemImage(size, new_keys)
    )


def plan_delete(
    meta: TableMeta, key: Item, cache: ImageCache, *, transactional: bool = False
) -> WritePlan:
    """Plan a DeleteItem (or a delete of BatchWriteItem / TransactWriteItems).

    Parameters
    ----------
    meta : TableMeta
        The table.
    key : mapping
        The primary key, DynamoDB JSON.
    cache : ImageCache
        Old images (the deleted item's size and index entries).
    transactional : bool
        True inside TransactWriteItems.

    Returns
    -------
    WritePlan
        Table charge of the old size (at least 1 WCU) and one write per old GSI entry.
    """
    old = cache.get(meta, key)
    size = old.size if old else item_size(key)
    sizes = {g.name: size for g in meta.gsis}
    charges = [
        Charge(
            Resource(meta.name),
            key_value_text(key.get(meta.hash_key, {})),
            write_units(size, transactional=transactional),
        )
    ]
    charges += _gsi_charges(meta, old, {}, sizes, None, transactional)
    return WritePlan(meta.name, key, charges, ImageCache.cache_key(meta, key), None)


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _resolve(path: str, names: Mapping[str, str]) -> str:
    top = re.split(r"[.\[]", path.strip(), maxsplit=1)[0]
    return names.get(top, top)


@dataclass(frozen=True, slots=True)
class UpdateEffects:
    """What an update expression does to top-level attributes.

    Parameters
    ----------
    assigned : dict of str to AttributeValue or None
        ``SET a = :v`` (or ``if_not_exists(a, :v)``): attribute -> new value; None when
        the value is computed (``a + :n``, ``list_append``).
    removed : set of str
        ``REMOVE`` targets.
    added : dict of str to AttributeValue or None
        ``ADD`` / ``DELETE`` targets -> operand.
    """

    assigned: dict[str, AttributeValue | None]
    removed: set[str]
    added: dict[str, AttributeValue | None]

    @property
    def touched(self) -> set[str]:
        """Set of str: every top-level attribute the update writes."""
        return set(self.assigned) | self.removed | set(self.added)


def parse_update_expression(
    expression: str,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, AttributeValue] | None = None,
) -> UpdateEffects:
    """Parse an ``UpdateExpression`` into its effects on top-level attributes.

    Parameters
    ----------
    expression : str
        E.g. ``SET #c = #c + :one, GSI1PK = :g REMOVE old``.
    names : mapping, optional
        ``ExpressionAttributeNames``.
    values : mapping, optional
        ``ExpressionAttributeValues``.

    Returns
    -------
    UpdateEffects
        Only top-level attribute names are tracked (``a.b[1]`` touches ``a``).
    """
    names = names or {}
    values = values or {}
    assigned: dict[str, AttributeValue | None] = {}
    removed: set[str] = set()
    added: dict[str, AttributeValue | None] = {}
    pieces = _CLAUSE_RE.split(expression)
    for i in range(1, len(pieces) - 1, 2):
        clause, body = pieces[i].upper(), pieces[i + 1]
        for action in _split_top_level(body):
            if clause == "SET":
                path, _, value = action.partition("=")
                value = value.strip()
                direct = value if value.startswith(":") and value[1:].isidentifier() else None
                if direct is None and (m := _IF_NOT_EXISTS_RE.match(value)):
                    direct = m.group(1)
                top = _resolve(path, names)
                nested = bool(re.search(r"[.\[]", path.strip()))
                assigned[top] = values.get(direct) if direct and not nested else None
            elif clause == "REMOVE":
                removed.add(_resolve(action, names))
            else:
                path, _, operand = action.strip().partition(" ")
                added[_resolve(path, names)] = values.get(operand.strip())
    return UpdateEffects(assigned, removed, added)


def plan_update(
    meta: TableMeta, request: Mapping[str, Any], cache: ImageCache, *, transactional: bool = False
) -> WritePlan:
    """Plan an UpdateItem (or an update of TransactWriteItems).

    Parameters
    ----------
    meta : TableMeta
        The table.
    request : mapping
        ``Key``, ``UpdateExpression`` (or legacy ``AttributeUpdates``),
        ``ExpressionAttributeNames``, ``ExpressionAttributeValues``.
    cache : ImageCache
        Old images.
    transactional : bool
        True inside TransactWriteItems.

    Returns
    -------
    WritePlan
        Table charge of ``max(old size, key + assigned values)``; GSI entries whose key
        the update sets, removes or (for projected attributes) rewrites.
    """
    key: Item = request.get("Key") or {}
    names = request.get("ExpressionAttributeNames") or {}
    values = request.get("ExpressionAttributeValues") or {}
    if "UpdateExpression" in request:
        effects = parse_update_expression(request["UpdateExpression"], names, values)
    else:
        legacy = request.get("AttributeUpdates") or {}
        effects = UpdateEffects(
            {a: u.get("Value") for a, u in legacy.items() if u.get("Action", "PUT") == "PUT"},
            {a for a, u in legacy.items() if u.get("Action") == "DELETE" and "Value" not in u},
            {a: u.get("Value") for a, u in legacy.items() if u.get("Action") == "ADD"},
        )
    old = cache.get(meta, key)
    written = item_size(key) + sum(
        len(a.encode("utf-8")) + (attribute_value_size(v) if v is not None else 1)
        for a, v in (effects.assigned | effects.added).items()
    )
    size = max(written, old.size if old else 0)
    new_keys = dict(old.gsi_keys) if old else {}
    for index in meta.gsis:
        if index.hash_key in effects.removed or (index.range_key or "") in effects.removed:
            new_keys.pop(index.name, None)
        elif index.hash_key in effects.assigned:
            value = effects.assigned[index.hash_key]
            if value is not None:
                new_keys[index.name] = key_value_text(value)
    sizes = {g.name: _projected_size(g, meta, None, size) for g in meta.gsis}
    charges = [
        Charge(
            Resource(meta.name),
            key_value_text(key.get(meta.hash_key, {})),
            write_units(size, transactional=transactional),
        )
    ]
    charges += _gsi_charges(meta, old, new_keys, sizes, effects.touched, transactional)
    return WritePlan(
        meta.name, key, charges, ImageCache.cache_key(meta, key), ItemImage(size, new_keys)
    )


def plan_condition_check(meta: TableMeta, key: Item, cache: ImageCache) -> WritePlan:
    """Plan a ``ConditionCheck`` of TransactWriteItems.

    Charged as a transactional write of the item (2 WCU per KB) to the table only; the
    item does not change. The Developer Guide does not spell out the unit of a
    condition check, so this is the emulator's assumption.

    Parameters
    ----------
    meta : TableMeta
        The table.
    key : mapping
        The primary key.
    cache : ImageCache
        Old images (the item's size).

    Returns
    -------
    WritePlan
        With ``changes_item=False``.
    """
    old = cache.get(meta, key)
    size = old.size if old else item_size(key)
    charge = Charge(
        Resource(meta.name),
        key_value_text(key.get(meta.hash_key, {})),
        write_units(size, transactional=True),
    )
    return WritePlan(
        meta.name, key, [charge], ImageCache.cache_key(meta, key), old, changes_item=False
    )


def query_partition_key(request: Mapping[str, Any], hash_key: str) -> str | None:
    """Return the partition key value a Query reads.

    Parameters
    ----------
    request : mapping
        The Query request: ``KeyConditionExpression`` with
        ``ExpressionAttributeNames``/``Values``, or legacy ``KeyConditions``.
    hash_key : str
        Partition key attribute of the table or index queried.

    Returns
    -------
    str or None
        Text of the value compared with ``=`` to the partition key; None if not found.
    """
    names = request.get("ExpressionAttributeNames") or {}
    values = request.get("ExpressionAttributeValues") or {}
    expression = request.get("KeyConditionExpression")
    if expression:
        for path, placeholder in _EQ_RE.findall(expression):
            if _resolve(path, names) == hash_key and placeholder in values:
                return key_value_text(values[placeholder])
        for placeholder, path in _EQ_REVERSED_RE.findall(expression):
            if _resolve(path, names) == hash_key and placeholder in values:
                return key_value_text(values[placeholder])
        return None
    condition = (request.get("KeyConditions") or {}).get(hash_key) or {}
    operands = condition.get("AttributeValueList") or []
    return key_value_text(operands[0]) if operands else None


def read_resource(meta: TableMeta, index_name: str | None) -> tuple[Resource, str]:
    """Return the resource a Query or Scan reads and its partition key attribute.

    Parameters
    ----------
    meta : TableMeta
        The table.
    index_name : str or None
        ``IndexName`` of the request.

    Returns
    -------
    tuple of (Resource, str)
        A local secondary index (not in ``meta.gsis``) reads the table's partitions.
    """
    index = meta.gsi(index_name) if index_name else None
    if index is None:
        return Resource(meta.name), meta.hash_key
    return Resource(meta.name, index.name), index.hash_key
