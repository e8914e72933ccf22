"""The shard-metadata table: its port (:class:`MetadataStore`) and DynamoDB adapter.

The values it holds are :mod:`dynashard.core.shard_info`'s; the caching and cooldown
service over it is :mod:`dynashard.dynamodb.shard_metadata`.

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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from dynashard import names
from dynashard.core.ordered import ORDERED_STRATEGY, OrderedLayout
from dynashard.core.shard_info import ShardInfo, parse_history
from dynashard.core.strategies import Strategy
from dynashard.errors import MetadataError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import UpdateItemOutputTypeDef

R = TypeVar("R")


class MetadataStore(Protocol):
    """Port: where shard metadata lives."""

    def get(self, key: str) -> ShardInfo | None:
        """Read a key's metadata, strongly consistent; None when never stored."""
        ...

    def create(
        self, key: str, count: int, now: int, *, gsi1: tuple[str, str] | None = None
    ) -> ShardInfo | None:
        """Store a new key with N = ``count``; None when another writer created it first.

        ``gsi1`` = ``(unit, bucket)``: the new item also holds the key's GSI1 unit and the
        bucket's record (``gsi1_shards#{bucket}`` = ``count``), as the writer of the key's
        first items would record them next (:mod:`dynashard.dynamodb.gsi_buckets`).
        """
        ...

    def update(
        self,
        key: str,
        count: int,
        expected_last_updated: int,
        now: int,
        *,
        grown_for: str | None = None,
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

    def put_max_shards(
        self, key: str, cap: int | None, expected: ShardInfo | None, count: int, now: int
    ) -> ShardInfo | None:
        """Set or remove a key's own cap on N, compare-and-set; None on a lost race."""
        ...

    def adopted_keys(self, keys: Sequence[str]) -> set[str]:
        """Return the keys among ``keys`` that are adopted (strongly consistent)."""
        ...


class DynamoDBMetadataStore:
    """The metadata table on DynamoDB (adapter of :class:`MetadataStore`).

    Parameters
    ----------
    table_name : str
        The metadata table (partition key ``key``).
    client : DynamoDBClient, optional
        A boto3 DynamoDB client; created on first use when omitted, from the process's one
        session (:func:`~dynashard.dynamodb.raw_items.raw_items_session`).
    """

    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self._client = client

    @property
    def client(self) -> DynamoDBClient:
        """DynamoDBClient: The client, created on first use."""
        if self._client is None:
            from dynashard.dynamodb.raw_items import raw_items_session

            self._client = raw_items_session().client("dynamodb")
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
        item = self._get_item(key, f"reading shard metadata of {key!r}")
        return None if item is None else _from_item(key, item)

    def create(
        self, key: str, count: int, now: int, *, gsi1: tuple[str, str] | None = None
    ) -> ShardInfo | None:
        """Store a new key, conditional on it not existing yet.

        Parameters
        ----------
        key : str
            Logical key.
        count : int
            Initial N.
        now : int
            Epoch seconds.
        gsi1 : tuple of (str, str), optional
            ``(unit, bucket)`` of the writer's first item of the key: the item is
            created with ``gsi1_units`` = ``{unit}`` and ``gsi1_shards#{bucket}`` =
            ``count``, the two records the writer would otherwise add by two
            ``UpdateItem`` calls before its first items (the unit before any record, the
            record before its items: both hold, atomically, in the one ``PutItem``).

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
        if gsi1 is not None:
            unit, bucket = gsi1
            item[names.ATTR_GSI1_UNITS] = {"SS": [unit]}
            item[f"{names.ATTR_GSI1_SHARDS_PREFIX}{bucket}"] = {"N": str(count)}
        if not self._put_new(f"creating shard metadata of {key!r}", item):
            return None
        if gsi1 is None:
            return ShardInfo(key, count, now, ((now, count),))
        return ShardInfo(
            key,
            count,
            now,
            ((now, count),),
            gsi1_shards=((gsi1[1], count),),
            gsi1_units=frozenset((gsi1[0],)),
        )

    def update(
        self,
        key: str,
        count: int,
        expected_last_updated: int,
        now: int,
        *,
        grown_for: str | None = None,
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
        grown_for : str, optional
            ``read``, ``write`` or ``write-load``: the throttling a scaler's growth is
            for (:data:`~dynashard.core.shard_info.GrowthReason`), added to the string
            set ``grown_for``.

        Returns
        -------
        ShardInfo or None
            The new metadata, or None when another writer changed the key first.

        Raises
        ------
        MetadataError
            On any other DynamoDB error.
        """
        attribute_names = {
            "#n": names.ATTR_NUMBER_OF_SHARDS,
            "#u": names.ATTR_LAST_UPDATED,
            "#h": names.ATTR_SHARD_HISTORY,
        }
        values: dict[str, Any] = {
            ":n": {"N": str(count)},
            ":now": {"N": str(now)},
            ":expected": {"N": str(expected_last_updated)},
            ":entry": {"SS": [f"{now}:{count}"]},
        }
        update = "SET #n = :n, #u = :now ADD #h :entry"
        if grown_for is not None:
            update += ", #g :g"
            attribute_names["#g"] = names.ATTR_GROWN_FOR
            values[":g"] = {"SS": [grown_for]}
        return self._update_info(
            key,
            f"updating shard metadata of {key!r}",
            UpdateExpression=update,
            ConditionExpression="#u = :expected",
            ExpressionAttributeNames=attribute_names,
            ExpressionAttributeValues=values,
        )

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
            return _from_item(key, item) if self._put_new(what, item) else None
        return self._update_info(key, what, **_strategy_update(strategy, attribute, expected))

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
        info = self._update_info(
            key,
            what,
            UpdateExpression="SET #a = :true",
            ConditionExpression="attribute_exists(#k)",
            ExpressionAttributeNames={"#a": names.ATTR_ADOPTED, "#k": names.ATTR_META_KEY},
            ExpressionAttributeValues={":true": {"BOOL": True}},
        )
        if info is not None:
            return info
        item = _new_item(key, count, now)
        item[names.ATTR_ADOPTED] = {"BOOL": True}
        if not self._put_new(what, item):
            return None
        return ShardInfo(key, count, now, ((now, count),), adopted=True)

    def put_max_shards(
        self, key: str, cap: int | None, expected: ShardInfo | None, count: int, now: int
    ) -> ShardInfo | None:
        """Set (or, with ``cap`` None, remove) a key's own cap on N (attribute ``max_shards``).

        With ``expected`` None the key is created (N = ``count``, history started at
        ``now``) conditional on it not existing. Otherwise an ``UpdateItem``
        conditional on ``number_of_shards`` still being ``expected``'s, so a cap is
        never set below a count another grower raised in between. N,
        ``last_updated`` (the cooldown clock) and ``shard_history`` are not touched.

        Parameters
        ----------
        key : str
            Logical key.
        cap : int or None
            The key's cap, or None to remove it.
        expected : ShardInfo or None
            The metadata the change was decided on; None to create the key.
        count : int
            N of a created key.
        now : int
            Epoch seconds; ``last_updated`` of a created key.

        Returns
        -------
        ShardInfo or None
            The stored metadata, or None when the condition failed.

        Raises
        ------
        MetadataError
            On any other DynamoDB error.
        """
        what = f"setting max_shards of {key!r}"
        if expected is None:
            item = _new_item(key, count, now)
            if cap is not None:
                item[names.ATTR_MAX_SHARDS] = {"N": str(cap)}
            return _from_item(key, item) if self._put_new(what, item) else None
        values: dict[str, Any] = {":n": {"N": str(expected.number_of_shards)}}
        if cap is None:
            update = "REMOVE #m"
        else:
            update = "SET #m = :m"
            values[":m"] = {"N": str(cap)}
        return self._update_info(
            key,
            what,
            UpdateExpression=update,
            ConditionExpression="#n = :n",
            ExpressionAttributeNames={
                "#m": names.ATTR_MAX_SHARDS,
                "#n": names.ATTR_NUMBER_OF_SHARDS,
            },
            ExpressionAttributeValues=values,
        )

    def adopted_keys(self, keys: Sequence[str]) -> set[str]:
        """Return the keys among ``keys`` whose item says ``adopted``: ``BatchGetItem``.

        Asked 100 keys a call (BatchGetItem's limit, API reference), strongly
        consistent, projected to the key and ``adopted``; ``UnprocessedKeys`` are
        asked again, up to 8 rounds.

        Parameters
        ----------
        keys : sequence of str
            Logical keys.

        Returns
        -------
        set of str
            Those adopted.

        Raises
        ------
        MetadataError
            If DynamoDB fails, or keys stay unprocessed after every round.
        """
        found: set[str] = set()
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 100):
            request: dict[str, Any] = {
                self.table_name: {
                    "Keys": [{names.ATTR_META_KEY: {"S": k}} for k in unique[start : start + 100]],
                    "ConsistentRead": True,
                    "ProjectionExpression": "#k, #a",
                    "ExpressionAttributeNames": {
                        "#k": names.ATTR_META_KEY,
                        "#a": names.ATTR_ADOPTED,
                    },
                }
            }
            for _ in range(8):
                try:
                    response = self.client.batch_get_item(RequestItems=request)
                except (ClientError, BotoCoreError) as exc:
                    raise MetadataError(f"reading which keys are adopted failed: {exc}") from exc
                for item in response.get("Responses", {}).get(self.table_name, []):
                    if item.get(names.ATTR_ADOPTED, {}).get("BOOL") is True:
                        found.add(item[names.ATTR_META_KEY]["S"])
                request = dict(response.get("UnprocessedKeys") or {})
                if not request:
                    break
            else:
                raise MetadataError("reading which keys are adopted: keys stayed unprocessed")
        return found

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
        item = self._get_item(key, f"reading the layout of {key!r}")
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
        response = self._update(
            key,
            f"storing the layout of {key!r}",
            UpdateExpression="SET #s = :s, #b = :b, #sub = :sub, #n = :n, #u = :now ADD #h :entry",
            ConditionExpression=condition,
            ExpressionAttributeNames=attribute_names,
            ExpressionAttributeValues=values,
        )
        return response is not None

    def _get_item(self, key: str, what: str) -> dict[str, Any] | None:
        """Strongly consistent ``GetItem`` of a key's item; None when it has none."""
        try:
            response = self.client.get_item(
                TableName=self.table_name,
                Key={names.ATTR_META_KEY: {"S": key}},
                ConsistentRead=True,
            )
        except (ClientError, BotoCoreError) as exc:
            raise MetadataError(f"{what} failed: {exc}") from exc
        return response.get("Item")

    def _put_new(self, what: str, item: dict[str, Any]) -> bool:
        """``PutItem`` of ``item`` conditional on its key having no item yet; False if it has."""
        response = _conditional(
            what,
            lambda: self.client.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": names.ATTR_META_KEY},
            ),
        )
        return response is not None

    def _update(self, key: str, what: str, **request: Any) -> UpdateItemOutputTypeDef | None:
        """Conditional ``UpdateItem`` of a key's item; None when its condition failed."""
        return _conditional(
            what,
            lambda: self.client.update_item(
                TableName=self.table_name, Key={names.ATTR_META_KEY: {"S": key}}, **request
            ),
        )

    def _update_info(self, key: str, what: str, **request: Any) -> ShardInfo | None:
        """:meth:`_update` returning the item's new metadata; None when its condition failed."""
        response = self._update(key, what, ReturnValues="ALL_NEW", **request)
        return None if response is None else _from_item(key, response["Attributes"])

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
        cap = item.get(names.ATTR_MAX_SHARDS, {}).get("N")
        grown_for = frozenset(item.get(names.ATTR_GROWN_FOR, {}).get("SS", []))
        prefix = names.ATTR_GSI1_SHARDS_PREFIX
        gsi1 = tuple(
            sorted((n[len(prefix) :], int(v["N"])) for n, v in item.items() if n.startswith(prefix))
        )
        pruned = item.get(names.ATTR_GSI1_PRUNED, {}).get("S")
        units = frozenset(item.get(names.ATTR_GSI1_UNITS, {}).get("SS", ()))
        bucket_unit = item.get(names.ATTR_BUCKET_UNIT, {}).get("S")
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
        gsi1_pruned=pruned,
        gsi1_units=units,
        bucket_unit=bucket_unit,
        max_shards=None if cap is None else int(cap),
        grown_for=grown_for,
    )
