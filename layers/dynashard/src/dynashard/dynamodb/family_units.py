"""The unit of a time-bucketed key family, stored with the family key at its first write.

A family's unit decides its bucket keys (``OPS_LOG#2026-06-22`` by day,
``OPS_LOG#2026-06-22T10`` by hour, :mod:`dynashard.core.families`), so a unit taken from
the configuration alone would make a configuration change hide every event written
before it. The first write of a family stores the configured unit on the family key's
metadata item (attribute ``bucket_unit``, a conditional ``SET ... if_not_exists``, so
racing first writers agree on one); reads build the window's bucket keys with the stored
unit, and a write under another unit is refused
(:meth:`dynashard.facade.Dynashard.put_events`): events of one family are never split
over two bucket layouts that no single read could put back in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from dynashard import names
from dynashard.core.buckets import TimeBucket
from dynashard.errors import MetadataError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


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
