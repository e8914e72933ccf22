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
count (cached), and a batch records all of a key's new buckets in one conditional
write (:meth:`Gsi1BucketRecorder.ensure_buckets`); a bucket the key's metadata already
holds, or that a refused write showed another container recorded, costs none.

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
(:func:`dynashard.planning.reads.gsi1_unit`). A key the writer creates is created with
both, its unit and its first item's bucket record, in the one conditional ``PutItem``
of :meth:`~dynashard.dynamodb.metadata_store.DynamoDBMetadataStore.create`: the writer
finds them in the metadata it got back and records neither again.

A recorder's cache (a count it knows is recorded) may outlive the record: that is safe,
for a pruned bucket is read over every shard whatever it holds. Keys pruned by a version
without the watermark have none: records re-created there before the upgrade are trusted.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
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
#: Most buckets one update records. Each adds about 60 characters to the
#: ConditionExpression, which DynamoDB caps at 4 KB (Developer Guide, "Service, account,
#: and table quotas": expression parameters), so 25 stay near 1.5 KB.
BUCKETS_PER_UPDATE: Final = 25


def records_to_prune(
    recorded: Sequence[str], keep: str | Collection[str], limit: int | None = None
) -> list[str]:
    """Return the oldest bucket records to remove so that a key keeps at most ``limit``.

    Parameters
    ----------
    recorded : sequence of str
        Bucket labels recorded on the key (any order); labels sort in time order.
    keep : str or collection of str
        The bucket (or buckets) being recorded now. One is pruned with the others (and
        then not recorded) only when it is older than every record kept: a late event
        of an old bucket does not push out a newer record.
    limit : int, optional
        Records a key keeps, the new ones included; :data:`MAX_RECORDS` when omitted
        (read at each call).

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
    >>> records_to_prune(["2013-01-02"], ["2013-01-01", "2013-01-03"], limit=2)
    ['2013-01-01']
    """
    labels = sorted(set(recorded) | ({keep} if isinstance(keep, str) else set(keep)))
    excess = len(labels) - (MAX_RECORDS if limit is None else limit)
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
        record = {} if bucket in prune else {bucket: count}
        if prune and self._update(key, record, prune) is not None:
            # The prune lost to another one that went further (or a record's own
            # condition failed): record the bucket without pruning.
            if record:
                self._update(key, record, ())
        elif not prune:
            self._update(key, record, ())
        self._remember(key, {bucket: count})

    def ensure_buckets(
        self,
        key: str,
        counts: Mapping[str, int],
        recorded: Mapping[str, int],
        watermark: str | None,
    ) -> None:
        """Record several buckets of one key, in one conditional UpdateItem where it can.

        What :meth:`ensure` does for each bucket, in one request per
        :data:`BUCKETS_PER_UPDATE` buckets instead of one per bucket: a batch of a
        key's events that spans several buckets (hour buckets, a backfill) costs one
        round trip, and a bucket the key's metadata already records at the count costs
        none. The update sets every bucket's count on condition that each is lower (or
        absent) and that the key's watermark is before the oldest of them, and prunes
        what :func:`records_to_prune` names for them together. When DynamoDB refuses it
        (another container recorded one of them, or pruned past it), the refusal
        carries the item as it is (``ReturnValuesOnConditionCheckFailure=ALL_OLD``):
        the buckets still lower are tried once more together, then each on its own by
        :meth:`ensure`.

        Parameters
        ----------
        key : str
            Logical key (its metadata item exists: writers create it first).
        counts : mapping of str to int
            Time-bucket label to the shard count the writer uses there (>= 1).
        recorded : mapping of str to int
            The key's records when its metadata was read, label to count. Records only
            rise or are pruned (then the watermark covers them), so one at least the
            count needs no write.
        watermark : str or None
            The key's ``gsi1_pruned`` when its metadata was read: a bucket at or before
            it is not recorded (readers read it over every shard the key ever had).

        Raises
        ------
        MetadataError
            If DynamoDB fails an update (the caller fails those buckets' writes).
        """
        with self._lock:
            todo = sorted(
                bucket
                for bucket, count in counts.items()
                if (watermark is None or bucket > watermark)
                and recorded.get(bucket, 0) < count
                and self._known.get((key, bucket), 0) < count
            )
        for start in range(0, len(todo), BUCKETS_PER_UPDATE):
            chunk = {b: counts[b] for b in todo[start : start + BUCKETS_PER_UPDATE]}
            self._ensure_together(key, chunk, recorded, watermark)

    def _ensure_together(
        self, key: str, counts: dict[str, int], recorded: Mapping[str, int], watermark: str | None
    ) -> None:
        """Record ``counts`` in one update, again with what a refusal shows, then one by one."""
        pending = counts
        for _ in range(2):
            if len(pending) < 2:
                break
            prune = records_to_prune(list(recorded), list(pending))
            refusal = self._update(key, {b: c for b, c in pending.items() if b not in prune}, prune)
            if refusal is None or refusal.item is None:
                # Recorded (or no metadata item: readers then read every shard).
                self._remember(key, pending)
                return
            recorded, watermark = refusal.records, refusal.watermark
            still = {
                b: c
                for b, c in pending.items()
                if (watermark is None or b > watermark) and recorded.get(b, 0) < c
            }
            self._remember(key, {b: c for b, c in pending.items() if b not in still})
            pending = still
        for bucket, count in pending.items():
            self.ensure(key, bucket, count, records_to_prune(list(recorded), bucket))

    def _remember(self, key: str, counts: Mapping[str, int]) -> None:
        """Cache that each bucket of ``counts`` is recorded at least at its count."""
        with self._lock:
            if len(self._known) + len(counts) > CACHE_LIMIT:
                self._known.clear()
            for bucket, count in counts.items():
                self._known[(key, bucket)] = max(count, self._known.get((key, bucket), 0))

    def _update(self, key: str, record: Mapping[str, int], prune: Sequence[str]) -> _Refusal | None:
        """One conditional UpdateItem: record ``record``'s counts and prune.

        Returns None when it was applied, else the refusal with the item as it is (whose
        records are then cached: what another container recorded needs no write here).
        """
        removed = {f"#p{i}": f"{names.ATTR_GSI1_SHARDS_PREFIX}{old}" for i, old in enumerate(prune)}
        attr_names = {"#k": names.ATTR_META_KEY, "#w": names.ATTR_GSI1_PRUNED, **removed}
        values: dict[str, Any] = {}
        sets: list[str] = []
        # Never create an item: a key without one has no record, which readers take as
        # "any shard the key ever had" (safe).
        condition = "attribute_exists(#k)"
        if record:
            # No bucket is recorded at or before the watermark: the oldest must be after.
            values[":b"] = {"S": min(record)}
            condition += " AND (attribute_not_exists(#w) OR #w < :b)"
        for i, (bucket, count) in enumerate(sorted(record.items())):
            attr_names[f"#g{i}"] = f"{names.ATTR_GSI1_SHARDS_PREFIX}{bucket}"
            values[f":g{i}"] = {"N": str(count)}
            sets.append(f"#g{i} = :g{i}")
            condition += f" AND (attribute_not_exists(#g{i}) OR #g{i} < :g{i})"
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
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise MetadataError(
                    f"recording the GSI1 shard count of {key!r} bucket {_labels(record, prune)} "
                    f"failed: {exc}"
                ) from exc
            # Already at least this count (another writer recorded it), a bucket already
            # pruned, a watermark already past this prune, or no item.
            refusal = _Refusal.of(exc.response.get("Item"))
            self._remember(
                key,
                {
                    b: c
                    for b, c in refusal.records.items()
                    if refusal.watermark is None or b > refusal.watermark
                },
            )
            return refusal
        except BotoCoreError as exc:
            raise MetadataError(
                f"recording the GSI1 shard count of {key!r} bucket {_labels(record, prune)} "
                f"failed: {exc}"
            ) from exc
        return None


@dataclass(frozen=True, slots=True)
class _Refusal:
    """A refused record update: the key's metadata item as DynamoDB returned it."""

    item: Mapping[str, Any] | None
    records: dict[str, int]
    watermark: str | None

    @classmethod
    def of(cls, item: Mapping[str, Any] | None) -> _Refusal:
        """Read the records and the watermark of a returned item (None: no item)."""
        if item is None:
            return cls(None, {}, None)
        prefix = names.ATTR_GSI1_SHARDS_PREFIX
        records = {
            name[len(prefix) :]: int(value["N"])
            for name, value in item.items()
            if name.startswith(prefix) and "N" in value
        }
        watermark = item.get(names.ATTR_GSI1_PRUNED, {}).get("S")
        return cls(item, records, watermark)


def _labels(record: Mapping[str, int], prune: Sequence[str]) -> str:
    """Name the buckets an update records (or, when it only prunes, the newest pruned)."""
    if not record:
        return prune[-1]
    return ", ".join(sorted(record))
