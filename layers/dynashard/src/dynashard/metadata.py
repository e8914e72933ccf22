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
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from dynashard import names
from dynashard.errors import InvalidInputError, MetadataError, StrategyConflictError
from dynashard.keys import MAX_SHARD_COUNT
from dynashard.strategies import MAX_SHARD_ATTRIBUTE_LENGTH, Strategy

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


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
        """Return ``{"key", "number_of_shards", "last_updated", "shard_history"}`` for JSON.

        Returns
        -------
        dict
            ``shard_history`` (the metadata table's attribute name) is a list of
            ``{"since": epoch_s, "count": n}``, oldest first.
        """
        return {
            "key": self.key,
            "number_of_shards": self.number_of_shards,
            "last_updated": self.last_updated,
            "shard_history": [{"since": since, "count": count} for since, count in self.history],
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
        ``grown``, ``set``, ``already_sufficient``, ``cooldown`` (changed less than
        ``cooldown_s`` ago, by this or another grower) or ``capped`` (at ``max_shards``).
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
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item={
                    names.ATTR_META_KEY: {"S": key},
                    names.ATTR_NUMBER_OF_SHARDS: {"N": str(count)},
                    names.ATTR_LAST_UPDATED: {"N": str(now)},
                    names.ATTR_SHARD_HISTORY: {"SS": [f"{now}:{count}"]},
                },
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": names.ATTR_META_KEY},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return None
            raise MetadataError(f"creating shard metadata of {key!r} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise MetadataError(f"creating shard metadata of {key!r} failed: {exc}") from exc
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
        try:
            response = self.client.update_item(
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
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return None
            raise MetadataError(f"updating shard metadata of {key!r} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise MetadataError(f"updating shard metadata of {key!r} failed: {exc}") from exc
        return _from_item(key, response["Attributes"])

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
        try:
            if expected is None:
                item = {
                    names.ATTR_META_KEY: {"S": key},
                    names.ATTR_NUMBER_OF_SHARDS: {"N": str(count)},
                    names.ATTR_LAST_UPDATED: {"N": str(now)},
                    names.ATTR_SHARD_HISTORY: {"SS": [f"{now}:{count}"]},
                    names.ATTR_STRATEGY: {"S": strategy.value},
                }
                if attribute is not None:
                    item[names.ATTR_SHARD_ATTRIBUTE] = {"S": attribute}
                self.client.put_item(
                    TableName=self.table_name,
                    Item=item,  # type: ignore[arg-type]
                    ConditionExpression="attribute_not_exists(#k)",
                    ExpressionAttributeNames={"#k": names.ATTR_META_KEY},
                )
                return _from_item(key, item)
            response = self.client.update_item(
                TableName=self.table_name,
                Key={names.ATTR_META_KEY: {"S": key}},
                ReturnValues="ALL_NEW",
                **_strategy_update(strategy, attribute, expected),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return None
            raise MetadataError(f"setting the strategy of {key!r} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise MetadataError(f"setting the strategy of {key!r} failed: {exc}") from exc
        return _from_item(key, response["Attributes"])


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

    def set_count(self, key: str, count: int, max_attempts: int = 5) -> GrowthResult:
        """Set a key's N (operator path; may shrink), with the same conditional update.

        Data written under a larger N stays where it is; readers keep querying every
        shard in ``shard_history``. The cooldown does not apply to an operator's set.

        Parameters
        ----------
        key : str
            Logical key.
        count : int
            New N, ``1 <= count <= max_shards``.
        max_attempts : int
            Conditional-update attempts before giving up.

        Returns
        -------
        GrowthResult
            ``reason`` is ``set`` when changed, ``already_sufficient`` when N already was ``count``.

        Raises
        ------
        InvalidInputError
            If ``count`` is out of range.
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        if not 1 <= count <= self.max_shards:
            raise InvalidInputError("count", f"must be within 1..{self.max_shards}, got {count}")
        return self._change(key, count, grow_only=False, max_attempts=max_attempts)

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

    def _change(self, key: str, target: int, *, grow_only: bool, max_attempts: int) -> GrowthResult:
        first: int | None = None
        for attempt in range(max_attempts):
            now = self.clock()
            info = self.store.get(key)
            if info is None:
                created = self.store.create(key, target, int(now))
                if created is not None:
                    self._remember(created, now)
                    return GrowthResult(
                        key, self.default_shards, target, True, "grown" if grow_only else "set"
                    )
                continue
            if first is None:
                first = info.number_of_shards
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
            if grow_only and changed_before and in_cooldown:
                self._remember(info, now)
                return GrowthResult(key, first, info.number_of_shards, False, "cooldown")
            updated = self.store.update(
                key, target, info.last_updated, max(int(now), info.last_updated + 1)
            )
            if updated is not None:
                self._remember(updated, now)
                return GrowthResult(key, first, target, True, "grown" if grow_only else "set")
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
