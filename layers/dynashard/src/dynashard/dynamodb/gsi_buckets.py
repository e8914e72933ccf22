"""Per-bucket GSI1 shard counts: writers record, per time bucket, the shard count they used.

A GSI1 partition key is ``{logical}#{bucket}#{shard}`` with the item's own base shard
(:func:`dynashard.core.keys.gsi1_partition_key`), so a GSI1 read of one bucket must query
every shard any writer of that bucket used. The key's ``shard_history`` cannot tell
which: it is kept in wall-clock time, buckets are in event time, and events arrive
late or are replayed. So before a writer puts items of a bucket it records, in the
key's metadata item, ``gsi1_shards#{bucket}`` = the largest shard count used for that
bucket (a conditional ``UpdateItem`` that only ever raises the value), and a GSI1
reader queries ``0..G-1`` for a recorded bucket, and the key's largest count for a
bucket without a record (:func:`dynashard.planning.reads.gsi1_shard_count`).

That is what lets GSI1 win reads: a bucket written while the key was cool has G = 1
even when the key has since had 32 shards, so a window inside it takes one GSI1 Query
instead of 32 base-table Queries. Each container records a ``(key, bucket)`` once per
count (cached), so the cost is one small conditional write per key, bucket and
container.

The records live on the key's metadata item, which every read and write fetches and
which DynamoDB caps at 400 KB (Developer Guide, "Service, account, and table quotas":
item size). An hour bucket adds about 30 bytes a record, 8,760 a year, so the records
are bounded: when a key holds more than :data:`MAX_RECORDS`, the write that records a
new bucket also removes the oldest (bucket labels sort in time order) and raises the
key's ``gsi1_pruned`` watermark to the newest label it removed, in the same atomic
``UpdateItem``.

A removed record must never come back smaller. After the key shrinks, a late or
redelivered event of a pruned bucket would otherwise record the bucket anew with the
smaller count, and GSI1 reads of that bucket would query too few shards, missing the
items written under the larger one. So, with the watermark:

- a bucket at or before ``gsi1_pruned`` is never recorded again (the record's condition
  says ``gsi1_pruned < :bucket``; the writer skips it outright when it already knows);
- a reader trusts only the records of labels after ``gsi1_pruned`` and reads any other
  bucket over every shard the key ever had (``max_count``,
  :func:`dynashard.planning.reads.gsi1_shard_counts`);
- the watermark only rises (its condition says ``gsi1_pruned < :newest``; a prune that
  would lower it is dropped and the bucket recorded without it).

Before the first record of a key under a time-bucket unit, the recorder also adds the
unit to the key's ``gsi1_units`` string set (:meth:`Gsi1BucketRecorder.ensure_unit`),
so readers build GSI1 keys with the unit the data was written with, not the one
configured now, and refuse GSI1 for a key written under several
(:func:`dynashard.planning.reads.gsi1_unit`).

A recorder's cache (a count it knows is recorded) may outlive the record: that is safe,
for a pruned bucket is read over every shard whatever it holds. Keys pruned by a version
without the watermark have none: records re-created there before the upgrade are trusted.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from dynashard import names
from dynashard.errors import MetadataError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: Entries the recorder's cache holds before it starts afresh (bounds a container's memory).
CACHE_LIMIT: Final = 100_000
#: Most ``gsi1_shards#{bucket}`` records a key keeps (about 15 KB of its metadata item).
MAX_RECORDS: Final = 500
#: Most records one update removes (keeps the UpdateExpression far below its 4 KB limit).
PRUNE_BATCH: Final = 100


def records_to_prune(recorded: Sequence[str], keep: str, limit: int = MAX_RECORDS) -> list[str]:
    """Return the oldest bucket records to remove so that a key keeps at most ``limit``.

    Parameters
    ----------
    recorded : sequence of str
        Bucket labels recorded on the key (any order); labels sort in time order.
    keep : str
        The bucket being recorded now. It is pruned with the others (and then not
        recorded) only when it is older than every record kept: a late event of an old
        bucket does not push out a newer record.
    limit : int
        Records a key keeps, the new one included.

    Returns
    -------
    list of str
        The oldest labels of ``recorded`` and ``keep`` past the limit, at most
        :data:`PRUNE_BATCH`, oldest first.

    Examples
    --------
    >>> records_to_prune(["2013-01-03", "2013-01-01", "2013-01-02"], "2013-01-04", limit=2)
    ['2013-01-01', '2013-01-02']
    >>> records_to_prune(["2013-01-01"], "2013-01-02", limit=2)
    []
    >>> records_to_prune(["2013-01-03", "2013-01-04"], "2013-01-01", limit=2)
    ['2013-01-01']
    """
    labels = sorted(set(recorded) | {keep})
    excess = len(labels) - limit
    return labels[: min(max(excess, 0), PRUNE_BATCH)]


class Gsi1BucketRecorder:
    """Records the GSI1 shard count of each ``(logical key, bucket)`` a writer writes.

    Parameters
    ----------
    client : DynamoDBClient
        A boto3 DynamoDB client.
    table_name : str
        The metadata table (partition key ``key``).
    """

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table_name = table_name
        self._known: dict[tuple[str, str], int] = {}
        self._units: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def ensure_unit(self, key: str, unit: str) -> None:
        """Make sure ``unit`` is in the key's ``gsi1_units`` (an ``ADD`` to a string set).

        Call it before writing the key's items under that unit, so a reader that sees an
        item also sees its unit. Cached per container (a unit is never removed).

        Parameters
        ----------
        key : str
            Logical key (its metadata item exists: writers create it first).
        unit : str
            ``hour``, ``day`` or ``month``.

        Raises
        ------
        MetadataError
            If DynamoDB fails the update (the caller fails those items' writes).
        """
        with self._lock:
            if (key, unit) in self._units:
                return
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={names.ATTR_META_KEY: {"S": key}},
                UpdateExpression="ADD #u :u",
                ConditionExpression="attribute_exists(#k)",  # never create an item
                ExpressionAttributeNames={"#k": names.ATTR_META_KEY, "#u": names.ATTR_GSI1_UNITS},
                ExpressionAttributeValues={":u": {"SS": [unit]}},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise MetadataError(
                    f"recording the GSI1 time-bucket unit of {key!r} failed: {exc}"
                ) from exc
        except BotoCoreError as exc:
            raise MetadataError(
                f"recording the GSI1 time-bucket unit of {key!r} failed: {exc}"
            ) from exc
        with self._lock:
            if len(self._units) >= CACHE_LIMIT:
                self._units.clear()
            self._units.add((key, unit))

    def ensure(self, key: str, bucket: str, count: int, prune: Sequence[str] = ()) -> None:
        """Make sure ``gsi1_shards#{bucket}`` of ``key`` is at least ``count``, or untrusted.

        Call it before writing items of the bucket, so a reader that sees an item also
        sees the count that covers it. A write that records also removes the ``prune``
        records (see :func:`records_to_prune`) and raises ``gsi1_pruned`` to the newest
        of them. When ``bucket`` is itself in ``prune`` it is not recorded: the update
        only prunes, and the watermark then covers the bucket (read over every shard).
        A bucket at or before the stored watermark is never recorded again (the
        condition refuses it, and a refused condition is not an error).

        Parameters
        ----------
        key : str
            Logical key (its metadata item exists: writers create it first).
        bucket : str
            Time-bucket label, e.g. ``2013-01-01``.
        count : int
            The shard count the writer uses, >= 1.
        prune : sequence of str
            Bucket labels whose records to remove in the same update.

        Raises
        ------
        MetadataError
            If DynamoDB fails an update (the caller fails those items' writes).
        """
        with self._lock:
            if self._known.get((key, bucket), 0) >= count:
                return
        prune = sorted(set(prune))
        if prune and not self._update(key, bucket, count, prune):
            # The prune lost to another one that went further (or a record's own
            # condition failed): record the bucket without pruning.
            if bucket not in prune:
                self._update(key, bucket, count, ())
        elif not prune:
            self._update(key, bucket, count, ())
        with self._lock:
            if len(self._known) >= CACHE_LIMIT:
                self._known.clear()
            self._known[(key, bucket)] = max(count, self._known.get((key, bucket), 0))

    def _update(self, key: str, bucket: str, count: int, prune: Sequence[str]) -> bool:
        """One conditional UpdateItem: record (unless pruned) and prune; False if refused."""
        attribute = f"{names.ATTR_GSI1_SHARDS_PREFIX}{bucket}"
        removed = {f"#p{i}": f"{names.ATTR_GSI1_SHARDS_PREFIX}{old}" for i, old in enumerate(prune)}
        attr_names = {"#k": names.ATTR_META_KEY, "#w": names.ATTR_GSI1_PRUNED, **removed}
        values: dict[str, Any] = {}
        sets: list[str] = []
        # Never create an item: a key without one has no record, which readers take as
        # "any shard the key ever had" (safe).
        condition = "attribute_exists(#k)"
        if bucket not in prune:
            attr_names["#g"] = attribute
            values[":g"] = {"N": str(count)}
            values[":b"] = {"S": bucket}
            sets.append("#g = :g")
            condition += (
                " AND (attribute_not_exists(#w) OR #w < :b)"
                " AND (attribute_not_exists(#g) OR #g < :g)"
            )
        if prune:
            values[":w"] = {"S": prune[-1]}
            sets.append("#w = :w")
            condition += " AND (attribute_not_exists(#w) OR #w < :w)"
        update = "SET " + ", ".join(sets) + (f" REMOVE {', '.join(removed)}" if removed else "")
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={names.ATTR_META_KEY: {"S": key}},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=attr_names,
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise MetadataError(
                    f"recording the GSI1 shard count of {key!r} bucket {bucket} failed: {exc}"
                ) from exc
            # Already at least this count (another writer recorded it), a bucket already
            # pruned, a watermark already past this prune, or no item.
            return False
        except BotoCoreError as exc:
            raise MetadataError(
                f"recording the GSI1 shard count of {key!r} bucket {bucket} failed: {exc}"
            ) from exc
        return True
