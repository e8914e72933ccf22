"""The unit of a time-bucketed key family, stored with the family key at its first write.

A family's unit decides its bucket keys (``OPS_LOG#2026-06-22`` by day,
``OPS_LOG#2026-06-22T10`` by hour, :mod:`dynashard.core.families`), so a unit taken from
the configuration alone would make a configuration change hide every event written
before it. The first write of a family stores the configured unit on the family key's
metadata item (attribute ``bucket_unit``, a conditional ``SET ... if_not_exists``, so
racing first writers agree on one); reads build the window's bucket keys with the stored
unit, and a write under another unit is refused
(:meth:`dynashard.dynamodb.bucketed_family.BucketedFamilies.put_events`): events of one
family are never split over two bucket layouts that no single read could put back in
order. :class:`DynamoDBFamilyUnits` is the adapter of
:class:`~dynashard.dynamodb.bucketed_family.FamilyUnitStore`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from dynashard import names
from dynashard.core.buckets import TimeBucket
from dynashard.errors import InvalidInputError, MetadataError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from dynashard.core.shard_info import ShardInfo
    from dynashard.dynamodb.shard_metadata import ShardMetadata


#: Why a time-bucketed family and an adopted key exclude each other (issue 38).
ADOPTED_FAMILY = (
    "{key!r} is a time-bucketed family (bucketed_keys) and an adopted key: a family's "
    "reads read its bucket keys {key}#<label> only, never the bare partition key {key!r} "
    "that adoption reads, so the bare key's items would be left out; read the items as a "
    "plain adopted key, or bucket them under a family of another name"
)


def refuse_adopted_family(info: ShardInfo) -> None:
    """Refuse a time-bucketed family whose key is adopted.

    Parameters
    ----------
    info : ShardInfo
        The family key's metadata.

    Raises
    ------
    InvalidInputError
        Field ``bucketed_keys``, when ``info.adopted``: a family's reads never read the
        bare partition key that adoption reads.
    """
    if info.adopted:
        raise InvalidInputError("bucketed_keys", ADOPTED_FAMILY.format(key=info.key))


class DynamoDBFamilyUnits:
    """Adapter: a family's unit on its family key's metadata item.

    Parameters
    ----------
    metadata : ShardMetadata
        The metadata service (reads fresh for readers; get-or-create for writers).
    client : DynamoDBClient
        A boto3 DynamoDB client (the conditional update of :func:`pin_bucket_unit`).
    table_name : str
        The metadata table.
    """

    def __init__(self, metadata: ShardMetadata, client: DynamoDBClient, table_name: str) -> None:
        self.metadata = metadata
        self.client = client
        self.table_name = table_name

    def stored(self, key: str) -> str | None:
        """Return the family's ``bucket_unit``, read fresh; None when none is stored.

        Raises
        ------
        MetadataError
            If the metadata cannot be read.
        """
        info = self.metadata.for_reader(key)
        refuse_adopted_family(info)
        return info.bucket_unit

    def pin(self, key: str, unit: TimeBucket) -> str:
        """Return the family's stored unit, storing ``unit`` at its first write.

        The family key's item is read (or created) as a writer reads it; when it holds
        no ``bucket_unit`` yet, :func:`pin_bucket_unit` stores ``unit`` unless a racing
        writer stored one first.

        Raises
        ------
        MetadataError
            If the item cannot be read, created or updated.
        """
        info = self.metadata.for_writer(key)  # creates the family key's item
        refuse_adopted_family(info)
        if info.bucket_unit is not None:
            return info.bucket_unit
        return pin_bucket_unit(self.client, self.table_name, key, unit).value


def pin_bucket_unit(
    client: DynamoDBClient, table_name: str, key: str, unit: TimeBucket
) -> TimeBucket:
    """Store ``unit`` as the family's ``bucket_unit`` unless it has one; return the stored one.

    Parameters
    ----------
    client : DynamoDBClient
        A boto3 DynamoDB client.
    table_name : str
        The metadata table (partition key ``key``).
    key : str
        The family key (``OPS_LOG``, ``THREAT#brand-abc``); its metadata item exists
        (created first by :meth:`~dynashard.dynamodb.shard_metadata.ShardMetadata.for_writer`).
    unit : TimeBucket
        The unit configured now.

    Returns
    -------
    TimeBucket
        The unit stored on the item: ``unit``, or the one an earlier write stored.

    Raises
    ------
    MetadataError
        If DynamoDB fails the update, the item does not exist, or the stored unit is not
        ``hour``, ``day`` or ``month``.
    """
    what = f"storing the time-bucket unit of family {key!r}"
    try:
        response = client.update_item(
            TableName=table_name,
            Key={names.ATTR_META_KEY: {"S": key}},
            UpdateExpression="SET #u = if_not_exists(#u, :u)",
            ConditionExpression="attribute_exists(#k)",
            ExpressionAttributeNames={"#k": names.ATTR_META_KEY, "#u": names.ATTR_BUCKET_UNIT},
            ExpressionAttributeValues={":u": {"S": unit.value}},
            ReturnValues="UPDATED_NEW",
        )
        stored = response["Attributes"][names.ATTR_BUCKET_UNIT]["S"]
        return TimeBucket(stored)
    except ClientError as exc:
        raise MetadataError(f"{what} failed: {exc}") from exc
    except (BotoCoreError, KeyError, ValueError) as exc:
        raise MetadataError(f"{what} failed: {exc!r}") from exc
