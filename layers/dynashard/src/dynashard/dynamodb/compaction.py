"""Exact event counts and compaction of copies a resize left behind (issue 26).

The writer puts an event on ``shard_for(event_id, N)`` (:mod:`dynashard.core.strategies`),
so a retry lands on the item it overwrites, except across a resize: when N changes
(4 -> 8, say) the jump hash sends about half the ids to another shard, and an event
redelivered after the resize is stored a second time, under another physical key with
the same sort key. Reads collapse the copy (identical sort keys are adjacent in the
merge, invariant 2), but a ``Scan`` or a ``Query`` with ``Select=COUNT`` counts it.
Preventing it is not sound (replayed or backfilled events predate any history, writers
with stale cached counts disagree, recording each event's shard doubles the cost of
ingest), so operators get:

- :func:`count_events`: the exact number of distinct events of a logical key (optionally
  in a window), with how many items are stored and how many are extra copies;
- :func:`compact`: for every sort key stored under more than one physical key, keep one
  copy and delete the others, each delete conditional on the copy and the kept copy
  still being there and identical, so it never deletes the last copy; ``dry_run``
  reports what it would delete and deletes nothing.

Both read every physical key a read of the key queries
(:func:`dynashard.dynamodb.reader.physical_keys_to_query`: shards ``0..max_count-1`` of
the whole ``shard_history``, and an adopted key's bare partition key), projecting only
the sort key and the ``key`` attribute, keep the key's own items as reads do
(:func:`dynashard.dynamodb.reader.owns_item`: a partition key ``L#7`` is also shard 7 of
``L``), and merge the shards' sort keys in order (memory: a page per shard, not the
key's events). A failed Query fails the call with a
:class:`~dynashard.errors.ShardQueryError` naming the shard, before anything is
deleted; a failed delete raises :class:`CompactionError`, which lists what was already
deleted. Nothing is reported that was not done.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from dynashard import names
from dynashard.core.keys import format_ts
from dynashard.core.shard_info import ShardInfo
from dynashard.core.strategies import Strategy, choose_shard
from dynashard.core.times import as_utc
from dynashard.dynamodb.reader import (
    _SK_CEILING,
    _SK_FLOOR,
    BARE_KEY_STREAM,
    owns_item,
    physical_keys_to_query,
    run_query,
)
from dynashard.errors import DynashardError, InvalidInputError, ShardQueryError, StateConflictError
from dynashard.model import plain_value

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: The attributes two copies of an event must share to be the same event: a copy that
#: differs in one of them is left alone (reported), never deleted.
COMPARED_ATTRIBUTES: Final = (names.ATTR_KEY, names.ATTR_ID, names.ATTR_TS, names.ATTR_DATA)


class CompactionError(DynashardError):
    """A compaction stopped: a read of a copy or a delete failed.

    Parameters
    ----------
    message : str
        What failed, naming the physical key, the sort key and the AWS error code.
    deleted : list of dict
        The copies deleted before it stopped (``{"sort_key", "physical_key", "kept"}``);
        they are gone, and running the compaction again finishes the work.
    """

    default_message = "compaction failed"

    def __init__(self, message: str, deleted: list[dict[str, str]]) -> None:
        self.deleted = list(deleted)
        super().__init__(f"{message}; {len(self.deleted)} extra cop(y/ies) deleted before it")


@dataclass(frozen=True)
class EventCount:
    """The exact count of a logical key's events.

    Attributes
    ----------
    key : str
        Logical key.
    distinct : int
        Distinct events (distinct sort keys over every physical key read): what a read
        of every page returns.
    stored : int
        Items stored (what a ``Scan`` or ``Select=COUNT`` counts), ``>= distinct``.
    shards_read : int
        Physical keys queried: shards ``0..max_count-1``, plus the bare key of an
        adopted key.
    """

    key: str
    distinct: int
    stored: int
    shards_read: int

    @property
    def duplicates(self) -> int:
        """int: Extra copies, ``stored - distinct``."""
        return self.stored - self.distinct

    def to_json(self) -> dict[str, Any]:
        """Return ``{"key", "distinct", "stored", "duplicates", "shards_read"}``."""
        return {
            "key": self.key,
            "distinct": self.distinct,
            "stored": self.stored,
            "duplicates": self.duplicates,
            "shards_read": self.shards_read,
        }


@dataclass
class CompactionResult:
    """What a compaction found and did.

    Attributes
    ----------
    key : str
        Logical key.
    dry_run : bool
        True when nothing was deleted on purpose.
    count : EventCount
        The count before the compaction (``duplicates`` extra copies found).
    deleted : list of dict
        Copies deleted, ``{"sort_key", "physical_key", "kept"}`` (``kept``: the physical
        key of the copy kept); empty in a dry run.
    would_delete : list of dict
        In a dry run, the copies a compaction would delete now (same fields).
    skipped : list of dict
        Extra copies left in place, with a ``reason``: the copy differs from the kept one
        (``differs in data``, say), or it or the kept copy changed or vanished between
        the read and the delete (the conditional delete refused, ``ConditionalCheckFailed``).
    """

    key: str
    dry_run: bool
    count: EventCount
    deleted: list[dict[str, str]] = field(default_factory=list)
    would_delete: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Return the result as JSON (what ``dynashard compact --json`` prints)."""
        return {
            **self.count.to_json(),
            "dry_run": self.dry_run,
            "deleted": self.deleted,
            "would_delete": self.would_delete,
            "skipped": self.skipped,
        }


def count_events(
    client: DynamoDBClient,
    table_name: str,
    info: ShardInfo,
    executor: Executor,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
) -> EventCount:
    """Count a logical key's distinct events exactly, and the extra copies stored.

    Every physical key a read of the key queries is read
    (:func:`~dynashard.dynamodb.reader.physical_keys_to_query`), strongly consistent,
    with ``ProjectionExpression`` on the sort key and the ``key`` attribute only (the
    latter so that, as reads, only the key's own items count:
    :func:`~dynashard.dynamodb.reader.owns_item`); the shards' sort keys are merged in
    order and identical sort keys counted once. The shards' first pages are
    read in parallel and each shard's next page is fetched ahead on ``executor``.

    Cost: a Query is charged on the total size of the items it reads, rounded up to
    the next 4 KB, 1 RCU per 4 KB strongly consistent ("DynamoDB read and write
    operations", Developer Guide), and a projection does not reduce it: "Projection
    expression has no effect on provisioned throughput consumption. DynamoDB determines
    capacity units consumed based on item size, instead of the amount of data that is
    returned to an application" ("Using projection expressions in DynamoDB", Developer
    Guide). So a count costs about ``sum over shards of ceil(bytes stored in the window
    / 4 KB)`` RCU, at least 1 per Query page (a page stops at 1 MB): the same read units
    as reading every event once, with less sent over the network.

    Parameters
    ----------
    client : DynamoDBClient
        boto3 DynamoDB client.
    table_name : str
        The data table.
    info : ShardInfo
        The key's metadata, read fresh (``ShardMetadata.for_reader``).
    executor : Executor
        Runs the shard Queries in parallel.
    start : datetime, optional
        Earliest event time, inclusive (UTC; naive means UTC).
    end : datetime, optional
        Latest event time, exclusive.

    Returns
    -------
    EventCount
        ``distinct``, ``stored``, ``duplicates`` and ``shards_read``.

    Raises
    ------
    InvalidInputError
        If ``start >= end`` (field ``from``), or the key is a time-bucketed family key
        (field ``key``: its events are under its bucket keys; count those).
    StateConflictError
        If the key is an ordered index (its items are index entries, not events).
    ShardQueryError
        If a shard's Query failed, naming the physical key and the AWS error code.
    """
    _check_countable(info)
    lo, hi = _window(start, end)
    keys = physical_keys_to_query(info)
    distinct = stored = 0
    for _sk, holders in _grouped_sort_keys(client, table_name, info.key, keys, lo, hi, executor):
        distinct += 1
        stored += len(holders)
    return EventCount(info.key, distinct, stored, len(keys))


def compact(
    client: DynamoDBClient,
    table_name: str,
    info: ShardInfo,
    executor: Executor,
    *,
    dry_run: bool = False,
) -> CompactionResult:
    """Delete the extra copies of a logical key's events, keeping exactly one of each.

    First every physical key of the key is read as :func:`count_events` reads it, and
    the sort keys stored on more than one physical key are collected (a failed Query
    fails the compaction here, before anything is deleted). Then, for each such sort
    key, every copy is read again (a strongly consistent ``GetItem``), one is kept and
    each other copy is deleted:

    - the copy kept is the one on the shard the key's current N would choose
      (:func:`~dynashard.core.strategies.choose_shard`: the hash of the event id for
      ``random``, of the shard attribute for ``calculated``), where a redelivery would
      land now; if no copy is there, the copy on the lowest shard number; an adopted
      key's bare-key copy only when no shard holds one;
    - a copy that differs from the kept one in ``key``, ``id``, ``ts`` or ``data`` is
      not deleted (reported in ``skipped``, for an operator to look at);
    - each delete is a ``TransactWriteItems`` of a ``ConditionCheck`` on the kept copy
      and a conditional ``Delete`` of the extra one, both on ``attribute_exists(PK)``
      and equality of ``key``, ``id``, ``ts`` and ``data`` to what was read. The
      transaction commits only if both conditions hold at once, so a delete never
      removes the last copy: not if a writer re-put either copy with other data, and
      not if the kept copy was deleted meanwhile (say by a concurrent compaction that
      chose the other copy after N changed). A refused condition leaves the copy,
      reported in ``skipped`` with ``ConditionalCheckFailed``; a writer re-putting the
      same event meanwhile changes nothing.

    Cost: the reads of :func:`count_events`, plus per extra copy one ``GetItem`` per copy
    (1 RCU per 4 KB) and a transaction of two items (2 WCU per 1 KB of each item, the
    ``ConditionCheck`` included: "Capacity unit consumption for transactions",
    Developer Guide). A dry run makes the reads only.

    Parameters
    ----------
    client : DynamoDBClient
        boto3 DynamoDB client.
    table_name : str
        The data table.
    info : ShardInfo
        The key's metadata, read fresh.
    executor : Executor
        Runs the shard Queries in parallel.
    dry_run : bool
        Report in ``would_delete`` what would be deleted, and delete nothing.

    Returns
    -------
    CompactionResult
        The count before, and the copies deleted (or that would be), and skipped.

    Raises
    ------
    InvalidInputError
        If the key is a time-bucketed family key (compact its bucket keys).
    StateConflictError
        If the key is an ordered index.
    ShardQueryError
        If a shard's Query failed (nothing was deleted).
    CompactionError
        If a ``GetItem`` or a delete failed for another reason than its condition
        (throttling, access denied, a transaction conflict ...): the message names the
        physical key, the sort key and the AWS error code, and ``deleted`` lists what
        was deleted before it.
    """
    _check_countable(info)
    keys = physical_keys_to_query(info)
    distinct = stored = 0
    groups: list[tuple[str, list[int]]] = []
    for sk, holders in _grouped_sort_keys(
        client, table_name, info.key, keys, _SK_FLOOR, _SK_CEILING, executor
    ):
        distinct += 1
        stored += len(holders)
        if len(holders) > 1:
            groups.append((sk, holders))
    result = CompactionResult(info.key, dry_run, EventCount(info.key, distinct, stored, len(keys)))
    for sk, holders in groups:
        _compact_one(client, table_name, info, keys, sk, holders, result)
    return result


# --- reading -----------------------------------------------------------------------------
def _check_countable(info: ShardInfo) -> None:
    """Refuse keys whose items are not events of that key."""
    if info.strategy is Strategy.ORDERED:
        raise StateConflictError(
            "key", f"{info.key!r} is an ordered index: its items are index entries, not events"
        )
    if info.bucket_unit is not None:
        raise InvalidInputError(
            "key",
            f"{info.key!r} is a time-bucketed family: its events are stored under its bucket "
            f"keys ({info.key}#<{info.bucket_unit} label>); count or compact those",
        )


def _window(start: datetime | None, end: datetime | None) -> tuple[str, str]:
    """Return the sort-key bounds of a read window, as the reader builds them."""
    start, end = as_utc(start, "from"), as_utc(end, "to")
    lo = format_ts(start) if start is not None else _SK_FLOOR
    hi = format_ts(end) if end is not None else _SK_CEILING
    if start is not None and end is not None and lo >= hi:
        raise InvalidInputError("from", f"must be earlier than to ({lo} >= {hi})")
    return lo, hi


class _SortKeys:
    """One physical key's sort keys in order; each next page is fetched ahead on the executor.

    The first page's Query starts when the stream is made, so every shard's first page
    is read in parallel.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        request: dict[str, Any],
        pk: str,
        owner: str,
        executor: Executor,
    ) -> None:
        self.client = client
        self.request = request
        self.pk = pk
        self.owner = owner
        self.executor = executor
        self.first: Future[dict[str, Any]] = self._submit(None)

    def _submit(self, start_key: dict[str, Any] | None) -> Future[dict[str, Any]]:
        request = dict(self.request)
        if start_key is not None:
            request["ExclusiveStartKey"] = start_key
        return self.executor.submit(run_query, self.client, request, self.pk)

    def __iter__(self) -> Iterator[str]:
        pending: Future[dict[str, Any]] | None = self.first
        while pending is not None:
            response = pending.result()  # ShardQueryError names the physical key
            start_key = response.get("LastEvaluatedKey")
            pending = self._submit(start_key) if start_key is not None else None
            bare = self.pk == self.owner
            for item in response.get("Items", []):
                if owns_item(item, self.owner, bare=bare):  # as reads keep them
                    yield item[names.ATTR_SK]["S"]


def _tagged(stream: _SortKeys, number: int) -> Iterator[tuple[str, int]]:
    for sk in stream:
        yield sk, number


def _grouped_sort_keys(
    client: DynamoDBClient,
    table_name: str,
    key: str,
    keys: dict[int, str],
    lo: str,
    hi: str,
    executor: Executor,
) -> Iterator[tuple[str, list[int]]]:
    """Yield each distinct sort key in order with the stream numbers that store it.

    Raises ShardQueryError naming every shard whose first page failed, or the shard
    whose later page failed.
    """
    streams: dict[int, _SortKeys] = {}
    for number, pk in keys.items():
        request = {
            "TableName": table_name,
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :lo AND :hi",
            "ProjectionExpression": "#sk, #key",
            "ExpressionAttributeNames": {
                "#pk": names.ATTR_PK,
                "#sk": names.ATTR_SK,
                "#key": names.ATTR_KEY,
            },
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":lo": {"S": lo}, ":hi": {"S": hi}},
            "ConsistentRead": True,
        }
        streams[number] = _SortKeys(client, request, pk, key, executor)
    failures: dict[str, str] = {}
    for stream in streams.values():
        try:
            stream.first.result()
        except ShardQueryError as exc:
            failures.update(exc.failures)
    if failures:
        raise ShardQueryError(failures)
    merged = heapq.merge(*(_tagged(stream, n) for n, stream in streams.items()))
    current: str | None = None
    holders: list[int] = []
    for sk, number in merged:
        if sk == current:
            holders.append(number)
            continue
        if current is not None:
            yield current, holders
        current, holders = sk, [number]
    if current is not None:
        yield current, holders


# --- deleting ----------------------------------------------------------------------------
def _compact_one(
    client: DynamoDBClient,
    table_name: str,
    info: ShardInfo,
    keys: dict[int, str],
    sk: str,
    holders: list[int],
    result: CompactionResult,
) -> None:
    """Keep one copy of ``sk`` and delete (or list) the others; record it in ``result``."""
    copies: dict[int, dict[str, Any]] = {}
    for number in holders:
        item = _get(client, table_name, keys[number], sk, result)
        if item is not None:
            copies[number] = item
    if len(copies) < 2:
        return  # another compaction or a delete got there first: nothing extra now
    kept = keeper(info, copies)
    for number in sorted(n for n in copies if n != kept):
        entry = {"sort_key": sk, "physical_key": keys[number], "kept": keys[kept]}
        differing = [
            a for a in COMPARED_ATTRIBUTES if not _equal(copies[kept].get(a), copies[number].get(a))
        ]
        if differing:
            result.skipped.append({**entry, "reason": f"differs in {', '.join(differing)}"})
        elif result.dry_run:
            result.would_delete.append(entry)
        else:
            refused = _delete_copy(client, table_name, copies[kept], copies[number], entry, result)
            if refused is None:
                result.deleted.append(entry)
            else:
                result.skipped.append({**entry, "reason": refused})


def keeper(info: ShardInfo, copies: dict[int, dict[str, Any]]) -> int:
    """Return the stream number of the copy a compaction keeps.

    Parameters
    ----------
    info : ShardInfo
        The key's metadata (its strategy, shard attribute and current N).
    copies : dict of int to dict
        Stream number (shard, or ``BARE_KEY_STREAM`` for an adopted key's bare key) ->
        the copy as ``GetItem`` returned it (DynamoDB JSON); at least one.

    Returns
    -------
    int
        The shard the current N's strategy would choose for the event if it holds a
        copy; else the lowest shard number holding one; the bare key only when no
        shard holds a copy.

    Examples
    --------
    Event ``f1`` is stored on shard 2 under N = 4 and on shard 6 under N = 8:

    >>> info = ShardInfo("K", 8, 0, ((0, 4), (1, 8)))
    >>> copy = {"id": {"S": "f1"}, "data": {"M": {}}}
    >>> keeper(info, {2: copy, 6: copy})  # where N = 8 puts it
    6
    >>> keeper(info, {-1: copy, 3: copy, 2: copy})  # not on 6: the lowest shard
    2
    >>> keeper(info, {-1: copy})
    -1
    """
    preferred = _preferred_shard(info, next(iter(copies.values())))
    if preferred is not None and preferred in copies:
        return preferred
    shards = [n for n in copies if n != BARE_KEY_STREAM]
    return min(shards) if shards else BARE_KEY_STREAM


def _preferred_shard(info: ShardInfo, item: dict[str, Any]) -> int | None:
    """Return the shard the current N would choose for the item's event, or None."""
    try:
        event_id = plain_value(item[names.ATTR_ID])
        data = plain_value(item[names.ATTR_DATA]) if names.ATTR_DATA in item else {}
        if not isinstance(event_id, str) or not isinstance(data, dict):
            return None
        return choose_shard(
            info.strategy, info.number_of_shards, event_id, data, info.shard_attribute
        )
    except (KeyError, InvalidInputError):
        return None


def _equal(a: Any, b: Any) -> bool:
    """Compare two DynamoDB JSON values as DynamoDB does (sets in any order)."""
    return bool(_normal(a) == _normal(b))


def _normal(value: Any) -> Any:
    if not isinstance(value, dict) or len(value) != 1:
        return value
    ((kind, inner),) = value.items()
    if kind in ("SS", "NS", "BS"):
        return kind, frozenset(inner)
    if kind == "M":
        return kind, {k: _normal(v) for k, v in inner.items()}
    if kind == "L":
        return kind, [_normal(v) for v in inner]
    return kind, inner


def _get(
    client: DynamoDBClient, table_name: str, pk: str, sk: str, result: CompactionResult
) -> dict[str, Any] | None:
    """Read one copy, strongly consistent; CompactionError on a failure."""
    try:
        response = client.get_item(
            TableName=table_name,
            Key={names.ATTR_PK: {"S": pk}, names.ATTR_SK: {"S": sk}},
            ConsistentRead=True,
        )
    except ClientError as exc:
        error = exc.response["Error"]
        raise CompactionError(
            f"compaction of {result.key!r}: reading the copy of {sk!r} on {pk} failed: "
            f"{error['Code']}: {error.get('Message', '')}",
            result.deleted,
        ) from exc
    except BotoCoreError as exc:
        raise CompactionError(
            f"compaction of {result.key!r}: reading the copy of {sk!r} on {pk} failed: "
            f"{type(exc).__name__}: {exc}",
            result.deleted,
        ) from exc
    item = response.get("Item")
    return dict(item) if item is not None else None


def _unchanged(item: dict[str, Any]) -> dict[str, Any]:
    """Condition: the item exists and its compared attributes are as ``item`` has them."""
    parts = ["attribute_exists(#pk)"]
    attribute_names = {"#pk": names.ATTR_PK}
    values: dict[str, Any] = {}
    for i, attribute in enumerate(COMPARED_ATTRIBUTES):
        attribute_names[f"#a{i}"] = attribute
        if attribute in item:
            parts.append(f"#a{i} = :v{i}")
            values[f":v{i}"] = item[attribute]
        else:
            parts.append(f"attribute_not_exists(#a{i})")
    condition: dict[str, Any] = {
        "ConditionExpression": " AND ".join(parts),
        "ExpressionAttributeNames": attribute_names,
    }
    if values:
        condition["ExpressionAttributeValues"] = values
    return condition


def _delete_copy(
    client: DynamoDBClient,
    table_name: str,
    kept: dict[str, Any],
    extra: dict[str, Any],
    entry: dict[str, str],
    result: CompactionResult,
) -> str | None:
    """Delete ``extra`` if it and ``kept`` are unchanged; return why not, or None if deleted.

    Raises CompactionError on any failure other than a refused condition.
    """

    def key_of(item: dict[str, Any]) -> dict[str, Any]:
        return {names.ATTR_PK: item[names.ATTR_PK], names.ATTR_SK: item[names.ATTR_SK]}

    try:
        items: list[Any] = [
            {"ConditionCheck": {"TableName": table_name, "Key": key_of(kept), **_unchanged(kept)}},
            {"Delete": {"TableName": table_name, "Key": key_of(extra), **_unchanged(extra)}},
        ]
        client.transact_write_items(
            TransactItems=items,
            # One token per delete: botocore's retries of this call are idempotent, and a
            # later compaction is a new request (a reused token would be answered from the
            # first one's outcome for 10 minutes without deleting anything).
            ClientRequestToken=uuid.uuid4().hex,
        )
    except ClientError as exc:
        error = exc.response["Error"]
        reasons = [r.get("Code", "None") for r in exc.response.get("CancellationReasons", [])]
        failed = {code for code in reasons if code != "None"}
        if error["Code"] == "TransactionCanceledException" and failed == {"ConditionalCheckFailed"}:
            which = [
                w
                for w, code in zip(("the kept copy", "this copy"), reasons, strict=False)
                if code != "None"
            ]
            return f"ConditionalCheckFailed: {' and '.join(which)} changed or vanished since read"
        detail = f" ({', '.join(reasons)})" if reasons else ""
        raise CompactionError(
            f"compaction of {result.key!r}: deleting the copy of {entry['sort_key']!r} on "
            f"{entry['physical_key']} (kept on {entry['kept']}) failed: "
            f"{error['Code']}: {error.get('Message', '')}{detail}",
            result.deleted,
        ) from exc
    except BotoCoreError as exc:
        raise CompactionError(
            f"compaction of {result.key!r}: deleting the copy of {entry['sort_key']!r} on "
            f"{entry['physical_key']} failed: {type(exc).__name__}: {exc}",
            result.deleted,
        ) from exc
    return None
