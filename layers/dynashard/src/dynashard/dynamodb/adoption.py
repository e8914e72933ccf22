"""What a key's bare partition key holds, read before it is adopted.

Adoption (:meth:`dynashard.dynamodb.shard_metadata.ShardMetadata.adopt`) copies nothing:
every read of an adopted key also queries its bare partition key and reads each item
there as an event, either one dynashard wrote (its full shape:
:func:`dynashard.dynamodb.reader.is_dynashard_item`) or one another program wrote in its
own shape (:func:`dynashard.dynamodb.reader.foreign_event`, which takes the event's time
and id from the sort key through the table's codec), whatever its attributes are named,
one named like the schema's ``key`` included. A sort key the codec cannot read, in its
range or outside it (a prefix such as ``ALERT#...``), makes every read of the key fail
naming it (``TableSchemaError``), so :func:`survey_bare_key` reads every sort key of the
bare partition key first and says which it cannot read; the facade refuses the adoption
while any is found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from dynashard.core.keys import format_ts
from dynashard.core.schema import DEFAULT_SCHEMA, TableSchema
from dynashard.dynamodb.reader import foreign_identity, is_dynashard_item
from dynashard.errors import InvalidInputError, ShardQueryError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: Sort keys quoted in a survey's ``unreadable`` (the count covers all of them).
MAX_EXAMPLES: Final = 5


@dataclass(frozen=True)
class BareKeySurvey:
    """Every item under a key's bare partition key, as a read of the adopted key will see it.

    Attributes
    ----------
    key : str
        The logical key (its bare partition key).
    dynashard_items : int
        Items in dynashard's full shape (:func:`dynashard.dynamodb.reader.is_dynashard_item`:
        ``key`` equal to ``key``, string ``id`` and ``ts``, the sort key the codec gives them).
    foreign_items : int
        Other items whose sort key the codec reads: another program's items, read as
        events in their own shape.
    key_attribute_items : int
        Of the foreign and unreadable items, those with an attribute named like the
        schema's ``key`` (another value or type, or not dynashard's full shape): read
        in their own shape, that attribute part of their ``data``, never left out.
    unreadable_items : int
        Other items whose sort key the codec cannot read (outside its range included).
    unreadable : tuple of str
        Up to :data:`MAX_EXAMPLES` of those, each ``"{sort key}: {why}"``.
    first_ts, last_ts : str or None
        The earliest and latest event time of the foreign items whose sort key holds a
        time (fixed-width UTC ISO-8601), None when there is none.
    read_units : float
        Read capacity units the survey's Queries consumed (eventually consistent).
    shard_items : int
        Items in dynashard's full shape of another logical key ``K`` whose shard this
        bare key is (``key == f"{K}#{n}"``): ``K``'s events, read by ``K``'s reads, not
        this key's (and ``adopt`` refuses a bare key that is another key's shard).
    """

    key: str
    dynashard_items: int
    foreign_items: int
    key_attribute_items: int
    unreadable_items: int
    unreadable: tuple[str, ...]
    first_ts: str | None
    last_ts: str | None
    read_units: float
    shard_items: int = 0

    @property
    def readable(self) -> bool:
        """bool: True when every item a read of the adopted key will meet can be read."""
        return self.unreadable_items == 0

    def refusal(self, codec: str) -> str:
        """Return why adopting the key is refused (for an ``InvalidInputError``).

        Parameters
        ----------
        codec : str
            The table's sort-key codec's name.

        Returns
        -------
        str
            A sentence naming the count, the codec and up to five sort keys.
        """
        return (
            f"{self.unreadable_items} item(s) under the bare partition key {self.key!r} have "
            f"sort keys the table's codec {codec} cannot read as an event, e.g. "
            f"{'; '.join(self.unreadable)}. Configure the codec that matches them "
            "(DYNASHARD_SORT_KEY_CODEC), or move them out of the key, before adopting it"
        )

    def to_json(self) -> dict[str, Any]:
        """Return the survey as JSON-ready data (the CLI's ``--json``)."""
        return {
            "key": self.key,
            "dynashard_items": self.dynashard_items,
            "foreign_items": self.foreign_items,
            "key_attribute_items": self.key_attribute_items,
            "unreadable_items": self.unreadable_items,
            "unreadable": list(self.unreadable),
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "read_units": self.read_units,
            "shard_items": self.shard_items,
        }


def survey_bare_key(
    client: DynamoDBClient, table: str, key: str, schema: TableSchema = DEFAULT_SCHEMA
) -> BareKeySurvey:
    """Read every sort key under ``key``'s bare partition key and classify its items.

    One paginated Query of the whole item collection, no sort-key condition (so a sort
    key outside the codec's range is seen too), projecting the sort key and the schema's
    ``key``, ``id`` and ``ts`` attributes, eventually consistent. A projection does not
    lower the cost: a Query consumes read units for the items' whole size (Developer
    Guide, "Read consumption for Query": one unit per 4 KB, half for eventually
    consistent reads), so a survey of a large key costs about what one full read of it
    costs, once.

    Parameters
    ----------
    client : DynamoDBClient
        A low-level client.
    table : str
        The data table.
    key : str
        The logical key, its bare partition key.
    schema : TableSchema
        The table's key schema and codec.

    Returns
    -------
    BareKeySurvey
        The counts, up to five unreadable sort keys and the foreign items' time span.

    Raises
    ------
    ShardQueryError
        If a Query fails (named by the bare key).
    """
    names = {"#pk": schema.partition_key, "#sk": schema.sort_key, "#key": schema.key_attr,
             "#id": schema.id_attr, "#ts": schema.ts_attr}  # fmt: skip
    request: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": {":pk": {"S": key}},
        "ProjectionExpression": "#sk, #key, #id, #ts",
        "ReturnConsumedCapacity": "TOTAL",
    }
    counts = {"dynashard": 0, "foreign": 0, "key_attribute": 0, "unreadable": 0, "shard": 0}
    examples: list[str] = []
    first: str | None = None
    last: str | None = None
    units = 0.0
    while True:
        try:
            response = client.query(**request)
        except ClientError as exc:
            error = exc.response["Error"]
            raise ShardQueryError({key: f"{error['Code']}: {error.get('Message', '')}"}) from exc
        except BotoCoreError as exc:
            raise ShardQueryError({key: f"{type(exc).__name__}: {exc}"}) from exc
        units += float(response.get("ConsumedCapacity", {}).get("CapacityUnits", 0.0))
        for raw in response.get("Items", []):
            item: dict[str, Any] = dict(raw)
            if is_dynashard_item(item, key, schema):
                counts["dynashard"] += 1
                continue
            if _is_shard_item_of_another_key(item, key, schema):
                counts["shard"] += 1
                continue
            counts["key_attribute"] += schema.key_attr in item
            try:
                ts = format_ts(foreign_identity(item, schema)[0])
            except InvalidInputError as exc:
                counts["unreadable"] += 1
                if len(examples) < MAX_EXAMPLES:
                    sk = item[schema.sort_key][schema.sort_key_type]
                    examples.append(f"{sk!r}: {exc.message}")  # the message names its field
                continue
            counts["foreign"] += 1
            first = ts if first is None or ts < first else first
            last = ts if last is None or ts > last else last
        start = response.get("LastEvaluatedKey")
        if start is None:
            break
        request["ExclusiveStartKey"] = start
    return BareKeySurvey(
        key=key,
        dynashard_items=counts["dynashard"],
        foreign_items=counts["foreign"],
        key_attribute_items=counts["key_attribute"],
        unreadable_items=counts["unreadable"],
        unreadable=tuple(examples),
        shard_items=counts["shard"],
        first_ts=first,
        last_ts=last,
        read_units=units,
    )


def _is_shard_item_of_another_key(item: dict[str, Any], key: str, schema: TableSchema) -> bool:
    """Tell whether ``item`` is dynashard's item of a key ``K`` whose shard ``key`` is.

    ``key`` is then ``f"{K}#{n}"`` (:func:`dynashard.core.keys.physical_key`) and the item
    is in dynashard's full shape for ``K``: an event of ``K``, which ``K``'s reads return.
    """
    owner = item.get(schema.key_attr)
    if not isinstance(owner, dict) or not isinstance(owner.get("S"), str):
        return False
    prefix, sep, shard = key.rpartition("#")
    return (
        bool(sep)
        and prefix == owner["S"]
        and shard.isdigit()
        and is_dynashard_item(item, prefix, schema)
    )
