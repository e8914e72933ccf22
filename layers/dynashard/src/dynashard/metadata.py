"""The shard metadata table: how many shards each logical key has, and had.

After the AWS Database Blog post "Choosing the right number of shards for your
large-scale Amazon DynamoDB table": one item per logical key with
``number_of_shards``, ``last_updated`` (epoch seconds; the optimistic lock and the
cooldown clock) and ``shard_history`` (string set of ``"{epoch}:{count}"``).

Invariant 3 (a read never misses an acknowledged write) is kept this way:

- writers use a per-container cache whose entries live at most ``ttl_s`` seconds;
- readers read the item fresh (strongly consistent ``GetItem``) and query every shard
  of every count in ``shard_history`` (the union is ``0..max(count)-1``), so a writer
  still using an older count, larger or smaller, always writes to a shard the reader
  queries. Event time is not write time (events may be replayed or arrive late), so the
  union is taken over the whole history, not over the counts in force during the
  read's event-time window.

Adoption without migration: a key whose items already sit under its bare partition key
(``PK = {logical}``, written before the application used dynashard) is adopted with
:meth:`ShardMetadata.adopt`, which sets ``adopted`` on its metadata item (a conditional
write, like every change here). Readers, who read the item fresh anyway, then query the
bare key as one more stream; writers never write to it, so the bare key only shrinks in
relative weight as the key grows. Keys never adopted pay nothing: no extra Query, and
no probe of the bare key to find out.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from dynashard import names
from dynashard.errors import InvalidInputError, MetadataError, StrategyConflictError
from dynashard.keys import MAX_SHARD_COUNT
from dynashard.ordered import ORDERED_STRATEGY, OrderedLayout
from dynashard.strategies import MAX_SHARD_ATTRIBUTE_LENGTH, Strategy

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

R = TypeVar("R")


@dataclass(frozen=True)
class ShardInfo:
    """The shard metadata of one logical key.

    Attributes
    ----------
    key : str
        Logical key.
    number_of_shards : int
        N in force for writers.
    last_updated : int
        Epoch seconds of the last change (0 for a key never stored).
    history : tuple of (int, int)
        ``(since_epoch_s, count)`` for every count ever in force, oldest first.
    stored : bool
        False when the key has no metadata item yet (N is the default).
    strategy : Strategy
        How writers pick a shard (attribute ``strategy``; ``random`` when absent).
    shard_attribute : str or None
        The ``data`` attribute a ``calculated`` key shards by (attribute
        ``shard_attribute``); None for other strategies.
    adopted : bool
        True when the key was adopted with items under its bare partition key
        (:meth:`ShardMetadata.adopt`): readers query that key too.
    gsi1_shards : tuple of (str, int)
        ``(bucket, count)``: the largest shard count writers used for each time bucket
        they recorded (attributes ``gsi1_shards#{bucket}``, :mod:`dynashard.gsi_buckets`).

    Examples
    --------
    A key that grew from 1 to 8 shards and shrank to 2: readers still query 8 shards.

    >>> history = ((1_357_000_000, 1), (1_357_050_000, 8), (1_357_100_000, 2))
    >>> info = ShardInfo("DEPARTURES#JFK", 2, 1_357_100_000, history)
    >>> sorted(info.counts), info.max_count
    ([1, 2, 8], 8)
    """

    key: str
    number_of_shards: int
    last_updated: int
    history: tuple[tuple[int, int], ...]
    stored: bool = True
    strategy: Strategy = Strategy.RANDOM
    shard_attribute: str | None = None
    adopted: bool = False
    gsi1_shards: tuple[tuple[str, int], ...] = ()

    @property
    def counts(self) -> frozenset[int]:
        """Frozenset of int: Every shard count in ``history`` and the current one."""
        return frozenset(c for _, c in self.history) | {self.number_of_shards}

    @property
    def max_count(self) -> int:
        """int: The largest count ever in force; readers query shards ``0..max_count-1``."""
        return max(self.counts)

    @property
    def strategy_label(self) -> str:
        """str: ``random``, or ``calculated({shard_attribute})``, for messages."""
        if self.shard_attribute is None:
            return self.strategy.value
        return f"{self.strategy.value}({self.shard_attribute})"

    def to_json(self) -> dict[str, Any]:
        """Return the key's metadata as JSON (the body of ``GET /shards/{key}``).

        Returns
        -------
        dict
            ``{"key", "number_of_shards", "last_updated", "shard_history", "strategy",
            "shard_attribute", "adopted"}``; ``shard_history`` (the metadata table's
            attribute name) is a list of ``{"since": epoch_s, "count": n}``, oldest
            first; ``shard_attribute`` is None unless the strategy is ``calculated``.
        """
        return {
            "key": self.key,
            "number_of_shards": self.number_of_shards,
            "last_updated": self.last_updated,
            "shard_history": [{"since": since, "count": count} for since, count in self.history],
            "strategy": self.strategy.value,
            "shard_attribute": self.shard_attribute,
            "adopted": self.adopted,
        }


@dataclass(frozen=True)
class GrowthResult:
    """What a shard-count change did.

    Attributes
    ----------
    key : str
        Logical key.
    previous : int
        N before.
    current : int
        N after (equal to ``previous`` when nothing changed).
    changed : bool
        True when this call changed N.
    reason : str
        ``grown``, ``shrunk``, ``set``, ``already_sufficient``, ``already_smaller`` (a
        shrink to a count N is already at or below), ``not_stored`` (a shrink of a key
        never stored), ``cooldown`` (changed less than ``cooldown_s`` ago, by this or
        another grower), ``capped`` (at ``max_shards``) or ``ordered`` (an ordered
        index keeps the count of its range layout).
    """

    key: str
    previous: int
    current: int
    changed: bool
    reason: str


def parse_history(entries: set[str] | list[str] | tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    """Parse ``shard_history`` strings ``"{epoch}:{count}"``, oldest first.

    Parameters
    ----------
    entries : iterable of str
        The string set as stored.

    Returns
    -------
    tuple of (int, int)
        Sorted ``(epoch_s, count)`` pairs.

    Raises
    ------
    MetadataError
        If an entry is not of the form ``"{int}:{int}"``.

    Examples
    --------
    >>> parse_history({"1357050000:8", "1357000000:1"})
    ((1357000000, 1), (1357050000, 8))
    """
    parsed = []
    for entry in entries:
        since, sep, count = entry.partition(":")
        if not sep or not since.isdigit() or not count.isdigit():
            raise MetadataError(f"shard_history entry {entry!r} is not '{{epoch}}:{{count}}'")
        parsed.append((int(since), int(count)))
    return tuple(sorted(parsed))


class MetadataStore(Protocol):
    """Port: where shard metadata lives."""

    def get(self, key: str) -> ShardInfo | None:
        """Read a key's metadata, strongly consistent; None when never stored."""
        ...

    def create(self, key: str, count: int, now: int) -> ShardInfo | None:
        """Store a new key with N = ``count``; None when another writer created it first."""
        ...

    def update(
        self, key: str, count: int, expected_last_updated: int, now: int
    ) -> ShardInfo | None:
        """Set N when ``last_updated`` still equals the expected value; None when it does not."""
        ...

    def put_strategy(
        self,
        key: str,
        strategy: Strategy,
        attribute: str | None,
        *,
        expected: ShardInfo | None,
        count: int,
        now: int,
    ) -> ShardInfo | None:
        """Create the key with a strategy (``expected`` None) or change it; None on a lost race."""
        ...

    def adopt(self, key: str, count: int, now: int) -> ShardInfo | None:
        """Mark a key adopted, creating it with N = ``count`` if new; None on a lost race."""
        ...

    def scan_sharded(self, min_count: int) -> list[ShardInfo]:
        """Return every key whose N is above ``min_count`` (a full read of the table)."""
        ...


class DynamoDBMetadataStore:
    """The metadata table on DynamoDB (adapter of :class:`MetadataStore`).

    Parameters
    ----------
    table_name : str
        The metadata table (partition key ``key``).
    client : DynamoDBClient, optional
        A boto3 DynamoDB client; created on first use when omitted.
    """

    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self._client = client

    @property
    def client(self) -> DynamoDBClient:
        """DynamoDBClient: The client, created on first use."""
        if self._client is None:
            import boto3

            self._client = boto3.client("dynamodb")
        return self._client

    def get(self, key: str) -> ShardInfo | None:
        """Read a key's metadata with a strongly consistent ``GetItem``.

        Parameters
        ----------
        key : str
            Logical key.

        Returns
        -------
        ShardInfo or None
            None when the key has no item.

        Raises
        ------
        MetadataError
            If DynamoDB fails the read or the item is malformed.
        """
        try:
            response = self.client.get_item(
                TableName=self.table_name,
                Key={names.ATTR_META_KEY: {"S": key}},
                ConsistentRead=True,
            )
        except (ClientError, BotoCoreError) as exc:
            raise MetadataError(f"reading shard metadata of {key!r} failed: {exc}") from exc
        item = response.get("Item")
        return None if item is None else _from_item(key, item)

    def create(self, key: str, count: int, now: int) -> ShardInfo | None:
        """Store a new key, conditional on it not existing yet.

        Parameters
        ----------
        key : str
            Logical key.
        count : int
            Initial N.
        now : int
            Epoch seconds.

        Returns
        -------
        ShardInfo or None
            The stored metadata, or None if another writer created the key first.

        Raises
        ------
        MetadataError
            On any other DynamoDB error.
        """
        item = _new_item(key, count, now)
        if _conditional(f"creating shard metadata of {key!r}", lambda: self._put_new(item)) is None:
            return None
        return ShardInfo(key, count, now, ((now, count),))

    def update(
        self, key: str, count: int, expected_last_updated: int, now: int
    ) -> ShardInfo | None:
        """Set N with a conditional ``UpdateItem`` on ``last_updated`` (optimistic lock).

        Parameters
        ----------
        key : str
            Logical key.
        count : int
            New N.
        expected_last_updated : int
            The ``last_updated`` this change was computed from.
        now : int
            Epoch seconds; becomes ``last_updated`` and a ``shard_history`` entry.

        Returns
        -------
        ShardInfo or None
            The new metadata, or None when another writer changed the key first.

        Raises
        ------
        MetadataError
            On any other DynamoDB error.
        """
        response = _conditional(
            f"updating shard metadata of {key!r}",
            lambda: self.client.update_item(
                TableName=self.table_name,
                Key={names.ATTR_META_KEY: {"S": key}},
                UpdateExpression="SET #n = :n, #u = :now ADD #h :entry",
                ConditionExpression="#u = :expected",
                ExpressionAttributeNames={
                    "#n": names.ATTR_NUMBER_OF_SHARDS,
                    "#u": names.ATTR_LAST_UPDATED,
                    "#h": names.ATTR_SHARD_HISTORY,
                },
                ExpressionAttributeValues={
                    ":n": {"N": str(count)},
                    ":now": {"N": str(now)},
                    ":expected": {"N": str(expected_last_updated)},
                    ":entry": {"SS": [f"{now}:{count}"]},
                },
                ReturnValues="ALL_NEW",
            ),
        )
        return None if response is None else _from_item(key, response["Attributes"])

    def put_strategy(
        self,
        key: str,
        strategy: Strategy,
        attribute: str | None,
        *,
        expected: ShardInfo | None,
        count: int,
        now: int,
    ) -> ShardInfo | None:
        """Store a key's strategy, compare-and-set on the strategy read before.

        With ``expected=None`` the key is created (N = ``count``, ``shard_history``
        started at ``now``) conditional on it not existing. Otherwise an ``UpdateItem``
        sets ``strategy`` and ``shard_attribute`` conditional on the item existing and
        still holding ``expected``'s strategy and attribute (an absent ``strategy`` is
        ``random``). ``number_of_shards``, ``last_updated`` and ``shard_history`` are
        not touched: a strategy is not a change of N, so it neither starts the cooldown
        nor races the growers' lock on ``last_updated``.

        Parameters
        ----------
        key : str
            Logical key.
        strategy : Strategy
            The new strategy.
        attribute : str or None
            The shard attribute (``calculated``), else None (the attribute is removed).
        expected : ShardInfo or None
            The metadata the change was decided on; None to create the key.
        count : int
            N of a created key.
        now : int
            Epoch seconds; ``last_updated`` of a created key.

        Returns
        -------
        ShardInfo or None
            The stored metadata, or None when the condition failed (another writer
            created the key, or changed its strategy, first).

        Raises
        ------
        MetadataError
            On any other DynamoDB error.
        """
        what = f"setting the strategy of {key!r}"
        if expected is None:
            item = _new_item(key, count, now)
            item[names.ATTR_STRATEGY] = {"S": strategy.value}
            if attribute is not None:
                item[names.ATTR_SHARD_ATTRIBUTE] = {"S": attribute}
            if _conditional(what, lambda: self._put_new(item)) is None:
                return None
            return _from_item(key, item)
        response = _conditional(
            what,
            lambda: self.client.update_item(
                TableName=self.table_name,
                Key={names.ATTR_META_KEY: {"S": key}},
                ReturnValues="ALL_NEW",
                **_strategy_update(strategy, attribute, expected),
            ),
        )
        return None if response is None else _from_item(key, response["Attributes"])

    def adopt(self, key: str, count: int, now: int) -> ShardInfo | None:
        """Set ``adopted`` on a key's item, or create the item adopted with N = ``count``.

        An existing item is updated on condition that it exists (an ``UpdateItem`` on a
        missing key would create an item without ``number_of_shards``); a missing one
        is created on condition that it still does not exist. N, ``last_updated`` (the
        cooldown clock) and ``shard_history`` are left as they are.

        Parameters
        ----------
        key : str
            Logical key.
        count : int
            N of the item if it has to be created.
        now : int
            Epoch seconds, the ``last_updated`` of a created item.

        Returns
        -------
        ShardInfo or None
            The adopted metadata, or None when the item appeared or vanished between
            the two conditional writes (the caller retries).

        Raises
        ------
        MetadataError
            On any other DynamoDB error.
        """
        what = f"adopting {key!r}"
        response = _conditional(
            what,
            lambda: self.client.update_item(
                TableName=self.table_name,
                Key={names.ATTR_META_KEY: {"S": key}},
                UpdateExpression="SET #a = :true",
                ConditionExpression="attribute_exists(#k)",
                ExpressionAttributeNames={"#a": names.ATTR_ADOPTED, "#k": names.ATTR_META_KEY},
                ExpressionAttributeValues={":true": {"BOOL": True}},
                ReturnValues="ALL_NEW",
            ),
        )
        if response is not None:
            return _from_item(key, response["Attributes"])
        item = _new_item(key, count, now)
        item[names.ATTR_ADOPTED] = {"BOOL": True}
        if _conditional(what, lambda: self._put_new(item)) is None:
            return None
        return ShardInfo(key, count, now, ((now, count),), adopted=True)

    def get_layout(self, key: str) -> tuple[OrderedLayout | None, int | None]:
        """Read an ordered key's range boundaries, strongly consistent.

        Parameters
        ----------
        key : str
            Logical key.

        Returns
        -------
        tuple of (OrderedLayout or None, int or None)
            The layout (None when the key is not ``ordered``) and ``last_updated``
            (None when the key has no item).

        Raises
        ------
        MetadataError
            If DynamoDB fails the read or the stored layout is malformed.
        """
        try:
            response = self.client.get_item(
                TableName=self.table_name,
                Key={names.ATTR_META_KEY: {"S": key}},
                ConsistentRead=True,
            )
        except (ClientError, BotoCoreError) as exc:
            raise MetadataError(f"reading the layout of {key!r} failed: {exc}") from exc
        item = response.get("Item")
        if item is None:
            return None, None
        try:
            last_updated = int(item[names.ATTR_LAST_UPDATED]["N"])
            if item.get(names.ATTR_STRATEGY, {}).get("S") != ORDERED_STRATEGY:
                return None, last_updated
            boundaries = tuple(b["S"] for b in item[names.ATTR_BOUNDARIES]["L"])
            subs = tuple(int(n["N"]) for n in item[names.ATTR_SUB_SHARDS]["L"])
            return OrderedLayout(boundaries, subs), last_updated
        except (KeyError, ValueError) as exc:
            raise MetadataError(f"the layout of {key!r} is malformed: {exc}") from exc

    def put_layout(
        self, key: str, layout: OrderedLayout, expected_last_updated: int | None, now: int
    ) -> bool:
        """Make a key ``ordered`` with this layout: a conditional write, like every change.

        Sets ``strategy``, ``boundaries``, ``sub_shards`` and ``number_of_shards`` (N)
        and adds N to ``shard_history``, conditional on ``last_updated`` (or on the item
        not existing when ``expected_last_updated`` is None).

        Parameters
        ----------
        key : str
            Logical key.
        layout : OrderedLayout
            Boundaries and sub-shard counts.
        expected_last_updated : int or None
            The ``last_updated`` read before; None for a key never stored.
        now : int
            Epoch seconds; the new ``last_updated``.

        Returns
        -------
        bool
            False when another writer changed the key first.

        Raises
        ------
        MetadataError
            On any other DynamoDB error.
        """
        values: dict[str, Any] = {
            ":s": {"S": ORDERED_STRATEGY},
            ":b": {"L": [{"S": b} for b in layout.boundaries]},
            ":sub": {"L": [{"N": str(n)} for n in layout.sub_shards]},
            ":n": {"N": str(layout.shard_count)},
            ":now": {"N": str(now)},
            ":entry": {"SS": [f"{now}:{layout.shard_count}"]},
        }
        attribute_names = {
            "#s": names.ATTR_STRATEGY,
            "#b": names.ATTR_BOUNDARIES,
            "#sub": names.ATTR_SUB_SHARDS,
            "#n": names.ATTR_NUMBER_OF_SHARDS,
            "#u": names.ATTR_LAST_UPDATED,
            "#h": names.ATTR_SHARD_HISTORY,
        }
        if expected_last_updated is None:
            condition = "attribute_not_exists(#k)"
            attribute_names["#k"] = names.ATTR_META_KEY
        else:
            condition = "#u = :expected"
            values[":expected"] = {"N": str(expected_last_updated)}
        response = _conditional(
            f"storing the layout of {key!r}",
            lambda: self.client.update_item(
                TableName=self.table_name,
                Key={names.ATTR_META_KEY: {"S": key}},
                UpdateExpression=(
                    "SET #s = :s, #b = :b, #sub = :sub, #n = :n, #u = :now ADD #h :entry"
                ),
                ConditionExpression=condition,
                ExpressionAttributeNames=attribute_names,
                ExpressionAttributeValues=values,
            ),
        )
        return response is not None

    def _put_new(self, item: dict[str, Any]) -> Any:
        """``PutItem`` of ``item`` conditional on its key having no item yet."""
        return self.client.put_item(
            TableName=self.table_name,
            Item=item,
            ConditionExpression="attribute_not_exists(#k)",
            ExpressionAttributeNames={"#k": names.ATTR_META_KEY},
        )

    def scan_sharded(self, min_count: int) -> list[ShardInfo]:
        """Return every key whose N is above ``min_count``: a paginated, filtered ``Scan``.

        The scaler's shrink sweep asks this for the keys above the default count. The
        metadata table is small (one item per logical key, about 100 to 300 bytes with
        its history), so reading it whole once a sweep is cheap; a sparse GSI of the
        sharded keys would be the next step for millions of keys.

        Cost: a ``Scan`` is billed for every item it reads, before the
        ``FilterExpression`` drops any and whatever the ``ProjectionExpression``
        returns; eventually consistent reads cost 0.5 RCU per 4 KB, so about one read
        unit per 8 KB of table, e.g. ~250 read units for 10,000 keys, and one call
        returns at most 1 MB (Developer Guide, "Scanning tables in DynamoDB": filter
        expressions, read consumption, pagination). Eventually consistent is enough:
        a shrink re-reads its key with a strongly consistent ``GetItem`` and changes it
        with the conditional update on ``last_updated``.

        Parameters
        ----------
        min_count : int
            Keys with ``number_of_shards > min_count`` are returned.

        Returns
        -------
        list of ShardInfo
            In the table's scan order.

        Raises
        ------
        MetadataError
            If DynamoDB fails a page, or an item is malformed.
        """
        # No projection: the Scan is billed on whole items anyway, and a projection
        # cannot name the ``gsi1_shards#{bucket}`` records a ShardInfo carries.
        found: list[ShardInfo] = []
        try:
            pages = self.client.get_paginator("scan").paginate(
                TableName=self.table_name,
                FilterExpression="#n > :min",
                ExpressionAttributeNames={"#n": names.ATTR_NUMBER_OF_SHARDS},
                ExpressionAttributeValues={":min": {"N": str(min_count)}},
            )
            for page in pages:
                for item in page.get("Items", []):
                    key = item[names.ATTR_META_KEY]["S"]
                    found.append(_from_item(key, dict(item)))
        except (ClientError, BotoCoreError) as exc:
            raise MetadataError(f"scanning the shard metadata failed: {exc}") from exc
        return found


def _conditional(what: str, write: Callable[[], R]) -> R | None:
    """Run one conditional write; None when its condition failed.

    Parameters
    ----------
    what : str
        What the write does, for the error message (``"adopting 'K'"``).
    write : callable
        Makes the DynamoDB call and returns its response (boto3 returns a dict, never
        None).

    Returns
    -------
    R or None
        The response, or None on ``ConditionalCheckFailedException`` (another writer
        got there first; the caller re-reads or retries).

    Raises
    ------
    MetadataError
        On any other ``ClientError`` or ``BotoCoreError``: ``"{what} failed: ..."``.
    """
    try:
        return write()
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return None
        raise MetadataError(f"{what} failed: {exc}") from exc
    except BotoCoreError as exc:
        raise MetadataError(f"{what} failed: {exc}") from exc


def _new_item(key: str, count: int, now: int) -> dict[str, Any]:
    """Return the metadata item of a key created now with N = ``count`` (history started)."""
    return {
        names.ATTR_META_KEY: {"S": key},
        names.ATTR_NUMBER_OF_SHARDS: {"N": str(count)},
        names.ATTR_LAST_UPDATED: {"N": str(now)},
        names.ATTR_SHARD_HISTORY: {"SS": [f"{now}:{count}"]},
    }


def _strategy_update(
    strategy: Strategy, attribute: str | None, expected: ShardInfo
) -> dict[str, Any]:
    """UpdateItem arguments of a strategy change: SET/REMOVE and its compare-and-set."""
    attr_names = {
        "#k": names.ATTR_META_KEY,
        "#s": names.ATTR_STRATEGY,
        "#a": names.ATTR_SHARD_ATTRIBUTE,
    }
    values: dict[str, Any] = {":s": {"S": strategy.value}, ":old": {"S": expected.strategy.value}}
    update = "SET #s = :s, #a = :a" if attribute is not None else "SET #s = :s REMOVE #a"
    if attribute is not None:
        values[":a"] = {"S": attribute}
    condition = "attribute_exists(#k) AND "
    if expected.strategy is Strategy.RANDOM:
        condition += "(attribute_not_exists(#s) OR #s = :old)"
    else:
        condition += "#s = :old"
    if expected.shard_attribute is None:
        condition += " AND attribute_not_exists(#a)"
    else:
        condition += " AND #a = :olda"
        values[":olda"] = {"S": expected.shard_attribute}
    return {
        "UpdateExpression": update,
        "ConditionExpression": condition,
        "ExpressionAttributeNames": attr_names,
        "ExpressionAttributeValues": values,
    }


def _from_item(key: str, item: dict[str, Any]) -> ShardInfo:
    try:
        count = int(item[names.ATTR_NUMBER_OF_SHARDS]["N"])
        last_updated = int(item[names.ATTR_LAST_UPDATED]["N"])
        history = parse_history(item.get(names.ATTR_SHARD_HISTORY, {}).get("SS", []))
        strategy = Strategy(item.get(names.ATTR_STRATEGY, {}).get("S", Strategy.RANDOM.value))
        attribute = item.get(names.ATTR_SHARD_ATTRIBUTE, {}).get("S")
        adopted = item.get(names.ATTR_ADOPTED, {}).get("BOOL", False) is True
        prefix = names.ATTR_GSI1_SHARDS_PREFIX
        gsi1 = tuple(
            sorted((n[len(prefix) :], int(v["N"])) for n, v in item.items() if n.startswith(prefix))
        )
    except (KeyError, ValueError) as exc:
        raise MetadataError(f"shard metadata item of {key!r} is malformed: {exc}") from exc
    return ShardInfo(
        key,
        count,
        last_updated,
        history or ((last_updated, count),),
        strategy=strategy,
        shard_attribute=attribute,
        adopted=adopted,
        gsi1_shards=gsi1,
    )


@dataclass
class _CacheEntry:
    info: ShardInfo
    expires_at: float


@dataclass
class ShardMetadata:
    """Shard counts for writers (cached) and readers (fresh), and shard-count changes.

    Parameters
    ----------
    store : MetadataStore
        Where metadata lives.
    default_shards : int
        N of a key never seen (stored on a writer's first use).
    max_shards : int
        Upper bound of any key's N (at most 1,000).
    cooldown_s : float
        Minimum seconds between two changes of one key's N.
    cache_ttl_s : float
        Lifetime of a writer's cached entry, seconds. Readers never use the cache.
    clock : callable
        Returns epoch seconds (float); injectable for tests.
    sleep : callable
        Sleeps for the random back-off between racing growers; injectable for tests.

    Examples
    --------
    Against moto's in-process DynamoDB (no network), with a clock the example moves
    by hand: a key is created with one shard on first write, grows at once (its
    creation is not a change), then not again within the cooldown.

    >>> import boto3
    >>> from moto import mock_aws
    >>> with mock_aws():
    ...     client = boto3.client("dynamodb", region_name="us-east-1")
    ...     _ = client.create_table(
    ...         TableName="shards",
    ...         AttributeDefinitions=[{"AttributeName": "key", "AttributeType": "S"}],
    ...         KeySchema=[{"AttributeName": "key", "KeyType": "HASH"}],
    ...         BillingMode="PAY_PER_REQUEST",
    ...     )
    ...     now = [1_357_000_000.0]
    ...     store = DynamoDBMetadataStore("shards", client)
    ...     meta = ShardMetadata(store, cooldown_s=60.0, clock=lambda: now[0])
    ...     first = meta.for_writer("DEPARTURES#JFK")
    ...     grown = meta.grow("DEPARTURES#JFK", 4)
    ...     too_soon = meta.grow("DEPARTURES#JFK", 8)
    ...     now[0] += 120
    ...     later = meta.grow("DEPARTURES#JFK", 8)
    ...     fresh = meta.for_reader("DEPARTURES#JFK")
    >>> first.number_of_shards, grown.reason, too_soon.reason, later.current
    (1, 'grown', 'cooldown', 8)
    >>> sorted(fresh.counts)
    [1, 4, 8]
    """

    store: MetadataStore
    default_shards: int = 1
    max_shards: int = MAX_SHARD_COUNT
    cooldown_s: float = 60.0
    cache_ttl_s: float = 30.0
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    _cache: dict[str, _CacheEntry] = field(default_factory=dict, init=False, repr=False)
    _growth_requested: dict[str, float] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= self.default_shards <= self.max_shards <= MAX_SHARD_COUNT:
            raise InvalidInputError(
                "shard counts",
                f"need 1 <= default_shards ({self.default_shards}) <= max_shards "
                f"({self.max_shards}) <= {MAX_SHARD_COUNT}",
            )

    def for_reader(self, key: str) -> ShardInfo:
        """Return a key's metadata read fresh, without creating it (readers only read).

        Parameters
        ----------
        key : str
            Logical key.

        Returns
        -------
        ShardInfo
            With ``stored=False`` and N = ``default_shards`` for a key never seen.

        Raises
        ------
        MetadataError
            If the metadata table cannot be read.
        """
        info = self.store.get(key)
        if info is None:
            return ShardInfo(key, self.default_shards, 0, ((0, self.default_shards),), stored=False)
        return info

    def for_writer(self, key: str) -> ShardInfo:
        """Return a key's metadata for a writer: cached up to ``cache_ttl_s`` seconds.

        A key never seen is created with N = ``default_shards`` (get-or-create).

        Parameters
        ----------
        key : str
            Logical key.

        Returns
        -------
        ShardInfo
            The metadata in force, at most ``cache_ttl_s`` old.

        Raises
        ------
        MetadataError
            If the metadata table cannot be read or written.
        """
        now = self.clock()
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None and entry.expires_at > now:
                return entry.info
        info = self.store.get(key)
        if info is None:
            info = self.store.create(key, self.default_shards, int(now)) or self.store.get(key)
            if info is None:
                raise MetadataError(f"shard metadata of {key!r} vanished while being created")
        self._remember(info, now)
        return info

    def _remember(self, info: ShardInfo, now: float) -> None:
        with self._lock:
            self._cache[info.key] = _CacheEntry(info, now + self.cache_ttl_s)

    def invalidate(self, key: str) -> None:
        """Drop a key from the writer cache so the next write reads it fresh.

        Parameters
        ----------
        key : str
            Logical key.
        """
        with self._lock:
            self._cache.pop(key, None)

    def grow(self, key: str, target: int, max_attempts: int = 5) -> GrowthResult:
        """Raise a key's N to ``target`` (never lowers it), honouring the cooldown.

        The change is a conditional ``UpdateItem`` on ``last_updated``; a grower that
        loses the race re-reads after a random back-off and stops if the key changed
        within the cooldown, so racing growers make one change per cooldown window.

        Parameters
        ----------
        key : str
            Logical key.
        target : int
            Wanted N; capped at ``max_shards``.
        max_attempts : int
            Conditional-update attempts before giving up.

        Returns
        -------
        GrowthResult
            What happened; ``reason`` says why nothing changed when ``changed`` is False.

        Raises
        ------
        InvalidInputError
            If ``target < 1``.
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        if target < 1:
            raise InvalidInputError("target", f"must be >= 1, got {target}")
        return self._change(
            key, min(target, self.max_shards), grow_only=True, max_attempts=max_attempts
        )

    def request_growth(self, key: str, factor: int = 2) -> GrowthResult | None:
        """Ask in-band for more shards after key-range throttling on ``key``.

        Doubles N (by default) through :meth:`grow`, so the same conditional update
        and cooldown apply as for the scaler. A container asks at most once per
        cooldown per key: later requests in the window return None without I/O.

        Parameters
        ----------
        key : str
            Logical key whose writes met ``...KeyRangeThroughputExceeded``.
        factor : int
            Growth factor, ``>= 2``.

        Returns
        -------
        GrowthResult or None
            None when this container already asked within the cooldown.

        Raises
        ------
        MetadataError
            If the metadata table fails.
        """
        now = self.clock()
        with self._lock:
            last = self._growth_requested.get(key)
            if last is not None and now - last < self.cooldown_s:
                return None
            self._growth_requested[key] = now
        current = self.for_writer(key).number_of_shards
        result = self.grow(key, max(current + 1, current * factor))
        if result.changed:
            self.invalidate(key)
        return result

    def adopt(self, key: str, max_attempts: int = 5) -> ShardInfo:
        """Adopt a key whose items already sit under its bare partition key.

        An application that used DynamoDB before dynashard has items under
        ``PK = {key}`` itself. Adoption keeps them where they are: it sets ``adopted``
        in the key's metadata (conditional writes; a key never seen is created with
        N = ``default_shards``), after which every read also queries the bare key
        (:func:`dynashard.reader.physical_keys_to_query`) and every counter read adds
        its bare item; writers keep writing to shards ``0..N-1`` only, and N grows from
        there as for any key. Idempotent; adoption is never undone.

        Stop the application's own writes to the bare key before adopting: a read
        paging with a cursor made before adoption resumes the bare key after the
        cursor's position, as it does every shard.

        Parameters
        ----------
        key : str
            Logical key (the bare partition key of the existing items).
        max_attempts : int
            Conditional-write attempts before giving up.

        Returns
        -------
        ShardInfo
            The metadata, ``adopted`` True.

        Raises
        ------
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        for attempt in range(max_attempts):
            now = self.clock()
            info = self.store.adopt(key, self.default_shards, int(now))
            if info is not None:
                self._remember(info, now)
                return info
            self.sleep(random.uniform(0.0, 0.1 * (2**attempt)))
        raise MetadataError(f"adopting {key!r} lost {max_attempts} races in a row")

    def set_count(
        self,
        key: str,
        count: int,
        max_attempts: int = 5,
        *,
        honour_cooldown: bool = False,
    ) -> GrowthResult:
        """Set a key's N (operator path; may shrink), with the same conditional update.

        Data written under a larger N stays where it is; readers keep querying every
        shard in ``shard_history``. By default the cooldown does not apply to an
        operator's set; with ``honour_cooldown`` it does, as for the scaler's growth
        (it runs from the key's last change of N, not from its creation).

        Parameters
        ----------
        key : str
            Logical key.
        count : int
            New N, ``1 <= count <= max_shards``.
        max_attempts : int
            Conditional-update attempts before giving up.
        honour_cooldown : bool
            Refuse (reason ``cooldown``) within ``cooldown_s`` of the key's last change.

        Returns
        -------
        GrowthResult
            ``reason`` is ``set`` when changed, ``already_sufficient`` when N already was
            ``count``, ``cooldown`` when refused by the cooldown, ``ordered`` for an
            ordered key (its N is its range layout's).

        Raises
        ------
        InvalidInputError
            If ``count`` is out of range.
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        if not 1 <= count <= self.max_shards:
            raise InvalidInputError("count", f"must be within 1..{self.max_shards}, got {count}")
        return self._change(
            key,
            count,
            grow_only=False,
            max_attempts=max_attempts,
            honour_cooldown=honour_cooldown,
        )

    def shrink(self, key: str, target: int, max_attempts: int = 5) -> GrowthResult:
        """Lower a key's N to ``target`` (never raises it), honouring the cooldown.

        The scaler's shrink sweep calls this (:mod:`dynashard.shrinking`). The same
        conditional ``UpdateItem`` on ``last_updated`` as :meth:`grow`, and the new
        count joins ``shard_history``, so readers keep querying every shard any count
        in force could have used; data written under the larger N stays where it is.
        Unlike a growth, a shrink is refused within ``cooldown_s`` of the key's
        creation too.

        Parameters
        ----------
        key : str
            Logical key.
        target : int
            Wanted N; raised to ``default_shards`` when below it.
        max_attempts : int
            Conditional-update attempts before giving up.

        Returns
        -------
        GrowthResult
            ``reason`` is ``shrunk`` when changed, else ``already_smaller``,
            ``cooldown`` or ``not_stored``.

        Raises
        ------
        InvalidInputError
            If ``target < 1``.
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        if target < 1:
            raise InvalidInputError("target", f"must be >= 1, got {target}")
        target = max(target, self.default_shards)
        return self._change(
            key, target, grow_only=False, max_attempts=max_attempts, shrink_only=True
        )

    def sharded_keys(self) -> list[ShardInfo]:
        """Return every key whose N is above ``default_shards`` (a Scan of the table).

        Returns
        -------
        list of ShardInfo
            See :meth:`DynamoDBMetadataStore.scan_sharded` for the cost.

        Raises
        ------
        MetadataError
            If the metadata table cannot be scanned.
        """
        return self.store.scan_sharded(self.default_shards)

    def set_strategy(
        self,
        key: str,
        strategy: Strategy | str,
        attribute: str | None = None,
        *,
        force: bool = False,
        initial_shards: int | None = None,
        max_attempts: int = 5,
    ) -> ShardInfo:
        """Set how writers pick a key's shard: ``random``, or ``calculated`` by an attribute.

        A key never seen is created with the strategy and N = ``initial_shards``
        (default ``default_shards``), so that its ``shard_history`` starts there. A key
        that already has the same strategy (and attribute) is left alone. A key that
        has a different one, including a stored key without a ``strategy`` attribute,
        which is ``random`` and may hold data written so, is **refused** with
        :class:`~dynashard.errors.StrategyConflictError` unless ``force`` is True:
        events already written stay on the shards their strategy chose, so a targeted
        read after a silent change would miss them. Set the strategy before the key's
        first write (or its first :meth:`set_count`).

        The change is a compare-and-set on the strategy read (conditional
        ``PutItem``/``UpdateItem``, re-read after a random back-off on a lost race), like
        the shard-count changes; it leaves ``number_of_shards``, ``last_updated`` (the
        cooldown clock) and ``shard_history`` as they are. This container's writer cache
        takes the new strategy at once; other writers within ``cache_ttl_s`` seconds.

        Parameters
        ----------
        key : str
            Logical key.
        strategy : Strategy or str
            ``random`` or ``calculated``.
        attribute : str, optional
            The ``data`` attribute a ``calculated`` key shards by (e.g. ``carrier``),
            1 to 255 characters; must be omitted for ``random``.
        force : bool
            Change a key that already has a different strategy.
        initial_shards : int, optional
            N of the key when this call creates it, ``1..max_shards``; a stored key
            keeps its N (change it with :meth:`set_count`).
        max_attempts : int
            Conditional-write attempts before giving up.

        Returns
        -------
        ShardInfo
            The key's metadata with the strategy in force.

        Raises
        ------
        InvalidInputError
            If the strategy is not ``random`` or ``calculated`` (field ``strategy``), or
            the attribute is missing, too long or given for ``random`` (``attribute``),
            or ``initial_shards`` is out of range.
        StrategyConflictError
            If the key has a different strategy and ``force`` is False.
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        wanted, attribute = _check_strategy(strategy, attribute)
        count = self.default_shards if initial_shards is None else initial_shards
        if not 1 <= count <= self.max_shards:
            raise InvalidInputError(
                "initial_shards", f"must be within 1..{self.max_shards}, got {count}"
            )
        for attempt in range(max_attempts):
            now = self.clock()
            info = self.store.get(key)
            if info is not None and (info.strategy, info.shard_attribute) == (wanted, attribute):
                self._remember(info, now)
                return info
            if info is not None and not force:
                label = wanted.value if attribute is None else f"{wanted.value}({attribute})"
                raise StrategyConflictError(key, info.strategy_label, label)
            stored = self.store.put_strategy(
                key, wanted, attribute, expected=info, count=count, now=int(now)
            )
            if stored is not None:
                self._remember(stored, now)
                return stored
            self.sleep(random.uniform(0.0, 0.1 * (2**attempt)))
        raise MetadataError(f"strategy of {key!r} kept changing under {max_attempts} attempts")

    def _change(
        self,
        key: str,
        target: int,
        *,
        grow_only: bool,
        max_attempts: int,
        shrink_only: bool = False,
        honour_cooldown: bool = False,
    ) -> GrowthResult:
        first: int | None = None
        done = "grown" if grow_only else "shrunk" if shrink_only else "set"
        for attempt in range(max_attempts):
            now = self.clock()
            info = self.store.get(key)
            if info is None and shrink_only:
                return GrowthResult(
                    key, self.default_shards, self.default_shards, False, "not_stored"
                )
            if info is None:
                created = self.store.create(key, target, int(now))
                if created is not None:
                    self._remember(created, now)
                    return GrowthResult(key, self.default_shards, target, True, done)
                continue
            if first is None:
                first = info.number_of_shards
            if info.strategy is Strategy.ORDERED:  # N is its range layout's, not load's
                self._remember(info, now)
                return GrowthResult(key, first, info.number_of_shards, False, "ordered")
            if shrink_only and info.number_of_shards <= target:
                self._remember(info, now)
                return GrowthResult(key, first, info.number_of_shards, False, "already_smaller")
            if info.number_of_shards == target or (grow_only and info.number_of_shards > target):
                self._remember(info, now)
                reason = (
                    "capped" if grow_only and target == self.max_shards else "already_sufficient"
                )
                return GrowthResult(key, first, info.number_of_shards, False, reason)
            # The cooldown runs from the last change of N; a key's creation is not one,
            # so a key that is hot from its first write can grow at once.
            # last_updated may run up to a second ahead of the clock (two changes within
            # one second get distinct epochs), so a zero cooldown must not compare it.
            changed_before = len(info.history) > 1
            in_cooldown = self.cooldown_s > 0 and now - info.last_updated < self.cooldown_s
            if ((grow_only or honour_cooldown) and changed_before and in_cooldown) or (
                shrink_only and in_cooldown
            ):
                self._remember(info, now)
                return GrowthResult(key, first, info.number_of_shards, False, "cooldown")
            updated = self.store.update(
                key, target, info.last_updated, max(int(now), info.last_updated + 1)
            )
            if updated is not None:
                self._remember(updated, now)
                return GrowthResult(key, first, target, True, done)
            # Lost the race: back off a random fraction of a second, then re-read.
            self.sleep(random.uniform(0.0, 0.1 * (2**attempt)))
        raise MetadataError(f"shard count of {key!r} kept changing under {max_attempts} attempts")


def _check_strategy(strategy: Strategy | str, attribute: str | None) -> tuple[Strategy, str | None]:
    """Validate a strategy and its attribute; return them normalized."""
    try:
        wanted = Strategy(strategy)
    except ValueError as exc:
        raise InvalidInputError(
            "strategy", f"must be random or calculated, got {strategy!r}"
        ) from exc
    if wanted is Strategy.RANDOM:
        if attribute is not None:
            raise InvalidInputError("attribute", "only the calculated strategy takes one")
        return wanted, None
    if wanted is not Strategy.CALCULATED:
        raise InvalidInputError("strategy", f"must be random or calculated, got {strategy!r}")
    if not attribute or len(attribute) > MAX_SHARD_ATTRIBUTE_LENGTH:
        raise InvalidInputError(
            "attribute",
            f"the calculated strategy needs a data attribute name of 1 to "
            f"{MAX_SHARD_ATTRIBUTE_LENGTH} characters, got {attribute!r}",
        )
    return wanted, attribute
