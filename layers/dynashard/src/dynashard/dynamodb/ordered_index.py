"""An ordered index on DynamoDB: writes routed by bisect, reads shard 0..N-1 in turn.

The I/O around :mod:`dynashard.core.ordered` (item shape documented there). One
:class:`OrderedIndex` serves one logical key; its layout (boundaries and sub-shard
counts) lives in the metadata table (``strategy = ordered``, ``boundaries``,
``sub_shards``), written once with a conditional update and read fresh by readers.

Reads: a full listing queries range shard 0, then 1, ... N-1, each in sort-key order,
and concatenates them, with no merge between range shards; a range shard with several
sub-shards is the ``heapq`` merge of its few sub-shard streams. A prefix or
``[from, to)`` query visits only the range shards whose ranges intersect it
(:func:`~dynashard.core.ordered.shards_for_range`) and says which. A page ends inside one
range shard, so one cursor (range shard, last sort key) resumes it: every sub-shard
restarts strictly after that sort key (``ExclusiveStartKey``).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from boto3.dynamodb.types import TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from dynashard import names
from dynashard.core.keys import validate_item_size, validate_logical_key
from dynashard.core.merge import query_fingerprint
from dynashard.core.ordered import (
    POINTER_SORT_KEY,
    OrderedCursor,
    OrderedLayout,
    id_pointer_key,
    ordered_sort_key,
    shards_for_range,
    value_bounds,
)
from dynashard.core.retry import RETRYABLE_ERROR_CODES, Backoff
from dynashard.dynamodb.metadata_store import DynamoDBMetadataStore
from dynashard.dynamodb.reader import run_query
from dynashard.errors import (
    InvalidInputError,
    LayoutConflictError,
    MetadataError,
    NotAnIndexError,
    WriteFailedError,
)
from dynashard.model import plain_value, to_dynamodb_numbers

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: Largest page of an ordered read, items.
MAX_ORDERED_PAGE: Final = 1000
#: Ids per TransactWriteItems call: three actions each (pointer, entry, old entry's
#: Delete) within the 100 actions a transaction takes (DynamoDB quota); 10 entries of
#: the 400 KB maximum stay within its 4 MB aggregate too.
TRANSACT_MAX_IDS: Final = 10
#: Pointer attributes: the ``PK`` and ``SK`` of the id's entry.
ATTR_ENTRY_PK: Final = "entry_pk"
ATTR_ENTRY_SK: Final = "entry_sk"
#: Item attribute holding the value as given, before normalisation.
ATTR_VALUE: Final = "value"
#: Item attribute holding the sub-shard.
ATTR_SUB: Final = "sub"

_serializer = TypeSerializer()


@dataclass(frozen=True)
class OrderedItem:
    """One entry of an ordered index.

    Attributes
    ----------
    id : str
        Unique within the logical key; writing the same id again replaces its entry
        (with its new value, at the new value's position).
    value : str
        The value the index orders by (raw; normalised for the sort key).
    data : dict
        Payload map (JSON-like; floats are stored as DynamoDB numbers).
    """

    id: str
    value: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class OrderedPage:
    """One page of an ordered read.

    Attributes
    ----------
    items : list of dict
        ``{"id", "value", "shard", "data"}`` in normalised-value order (ties by id).
    cursor : str or None
        Opaque cursor of the next page; None when the read is complete.
    shards_in_range : list of int
        Range shards whose ranges intersect the query (all N for a full listing).
    shards_queried : list of int
        Range shards this page queried.
    queries : int
        DynamoDB Query calls this page made (sub-shards and follow-up pages counted).
    """

    items: list[dict[str, Any]]
    cursor: str | None
    shards_in_range: list[int]
    shards_queried: list[int]
    queries: int = 0


class OrderedIndex:
    """A sorted index of one logical key, spread over range shards.

    Parameters
    ----------
    key : str
        Logical key of the index, e.g. ``TAILNUM``.
    table_name : str
        The data table (``PK``/``SK`` strings).
    metadata_table : str
        The metadata table (partition key ``key``).
    client : DynamoDBClient, optional
        A boto3 DynamoDB client; created on first use when omitted.
    backoff : Backoff, optional
        Retries of ``UnprocessedItems`` and throttled batch writes.
    clock : callable
        Epoch seconds; injectable for tests.
    sleep : callable
        Sleeps between retries; injectable for tests.

    Raises
    ------
    KeyLimitExceededError
        If ``key`` is empty or too long for a partition key.

    Examples
    --------
    >>> index = OrderedIndex("TAILNUM", "dynashard-data", "dynashard-shards")  # doctest: +SKIP
    >>> index.configure_from_sample(["N101UW", "N14228", "N24211"], shards=2)  # doctest: +SKIP
    >>> index.put([OrderedItem("f1", "N14228")])  # doctest: +SKIP
    >>> index.query(prefix="n1").items  # doctest: +SKIP
    """

    def __init__(
        self,
        key: str,
        table_name: str,
        metadata_table: str,
        client: DynamoDBClient | None = None,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        validate_logical_key(key)
        self.key = key
        self.table_name = table_name
        self._store = DynamoDBMetadataStore(metadata_table, client)
        self.backoff = backoff or Backoff()
        self.clock = clock
        self.sleep = sleep
        self._layout: OrderedLayout | None = None

    @property
    def client(self) -> DynamoDBClient:
        """DynamoDBClient: The client (the metadata store's), created on first use."""
        return self._store.client

    # --- layout ---------------------------------------------------------------------

    def configure(self, layout: OrderedLayout, max_attempts: int = 5) -> OrderedLayout:
        """Store the key's layout (once): a conditional write on ``last_updated``.

        Boundaries are fixed once items are written under them (moving items between
        range shards is not supported), so a key that already has another layout is
        refused; storing the same layout again is a no-op.

        Parameters
        ----------
        layout : OrderedLayout
            Boundaries and sub-shard counts.
        max_attempts : int
            Conditional-write attempts before giving up.

        Returns
        -------
        OrderedLayout
            The layout in force.

        Raises
        ------
        LayoutConflictError
            If the key already has another layout (an ``InvalidInputError``, field
            ``boundaries``).
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        for _ in range(max_attempts):
            stored, last_updated = self._store.get_layout(self.key)
            if stored is not None:
                if stored != layout:
                    raise LayoutConflictError(
                        "boundaries",
                        f"{self.key!r} already has {stored.shard_count} range shards with "
                        "other boundaries; an ordered index keeps its boundaries",
                    )
                self._layout = stored
                return stored
            if last_updated is not None:
                # The key has metadata under another strategy: its items (if any) sit at
                # the same physical keys with another shape, which an ordered read cannot
                # parse. An ordered index starts on a key of its own.
                raise LayoutConflictError(
                    "key", f"{self.key!r} already has shard metadata with another strategy"
                )
            now = int(self.clock())
            if self._store.put_layout(self.key, layout, last_updated, now):
                self._layout = layout
                return layout
        raise MetadataError(f"layout of {self.key!r} kept changing under {max_attempts} attempts")

    def configure_from_sample(self, values: Sequence[str], shards: int) -> OrderedLayout:
        """Compute a layout from a sample (:meth:`OrderedLayout.from_sample`) and store it.

        Parameters
        ----------
        values : sequence of str
            Sample of raw values.
        shards : int
            N.

        Returns
        -------
        OrderedLayout
            The layout in force.

        Raises
        ------
        InvalidInputError
            If the sample has fewer than N distinct values, or another layout is stored.
        MetadataError
            If the metadata table fails.
        """
        return self.configure(OrderedLayout.from_sample(values, shards))

    def layout(self, fresh: bool = False) -> OrderedLayout:
        """Return the key's layout; cached after the first read (it never changes).

        Parameters
        ----------
        fresh : bool
            Read the metadata table even when cached.

        Returns
        -------
        OrderedLayout
            Boundaries and sub-shard counts.

        Raises
        ------
        NotAnIndexError
            If the key is not an ordered index (field ``key``; an ``InvalidInputError``).
        MetadataError
            If the metadata table fails.
        """
        if self._layout is None or fresh:
            stored, _ = self._store.get_layout(self.key)
            if stored is None:
                raise NotAnIndexError(
                    "key", f"{self.key!r} is not an ordered index (no boundaries stored)"
                )
            self._layout = stored
        return self._layout

    # --- writes -------------------------------------------------------------------------

    def build_item(self, item: OrderedItem) -> dict[str, Any]:
        """Return the data-table item of an entry, in DynamoDB's wire format.

        Parameters
        ----------
        item : OrderedItem
            The entry.

        Returns
        -------
        dict
            ``PK``, ``SK``, ``key``, ``id``, ``value``, ``shard``, ``sub``, ``data``.

        Raises
        ------
        KeyLimitExceededError
            If the sort key or the item is over a DynamoDB limit.
        InvalidInputError
            If the key is not an ordered index.
        """
        shard, sub, pk = self.layout().physical_key_of(self.key, item.value, item.id)
        plain: dict[str, Any] = {
            names.ATTR_PK: pk,
            names.ATTR_SK: ordered_sort_key(item.value, item.id),
            names.ATTR_KEY: self.key,
            names.ATTR_ID: item.id,
            ATTR_VALUE: item.value,
            names.ATTR_SHARD: shard,
            ATTR_SUB: sub,
            names.ATTR_DATA: to_dynamodb_numbers(item.data),
        }
        validate_item_size(plain)
        return {name: _serializer.serialize(value) for name, value in plain.items()}

    def put(self, items: Sequence[OrderedItem]) -> int:
        """Write entries to their range shards; a re-put of an id replaces its entry.

        An entry's key holds its value, so an id re-put with another value would leave
        its old entry behind (listed twice). Each id has a pointer item
        (:func:`~dynashard.core.ordered.id_pointer_key`) naming its entry's ``PK``/``SK``;
        a write reads the pointers (BatchGetItem, strongly consistent), then writes,
        per id in one TransactWriteItems call: the new entry, the pointer (condition:
        it still names the entry read, or is absent if none was), and a Delete of the
        old entry when the key moved. A concurrent re-put of the same id fails the
        condition; the call then reads the pointers again and retries, so the id ends
        listed once, at the value of the write that committed last.

        Cost (Developer Guide, "Managing complex workflows with DynamoDB transactions":
        a transactional write costs two WCU per 1 KB): a first put of an entry of up
        to 1 KB costs 4 WCU (entry and pointer) and 1 RCU (the pointer read), against
        1 WCU for a plain BatchWriteItem; a re-put that moves the entry costs 2 WCU
        more (the Delete). Up to :data:`TRANSACT_MAX_IDS` ids share one call.

        Parameters
        ----------
        items : sequence of OrderedItem
            Entries; ids must be unique within one call.

        Returns
        -------
        int
            Items written.

        Raises
        ------
        InvalidInputError
            If an entry breaks a key limit, ids repeat, a value normalises to ``""``
            (field ``value``), or the key is not ordered.
        WriteFailedError
            If a transaction still fails after the retries allowed (throttled, or lost
            to concurrent writers of the same ids every time); the ids of earlier
            transactions are written, sending the call again is safe.
        """
        built = [self.build_item(item) for item in items]
        if len({item.id for item in items}) != len(items):
            raise InvalidInputError("items", "ids must be unique within one write")
        for start in range(0, len(built), TRANSACT_MAX_IDS):
            self._replace(built[start : start + TRANSACT_MAX_IDS])
        return len(built)

    def delete(self, ids: Sequence[str]) -> int:
        """Remove entries by id (the entry and its pointer, in one transaction per call).

        Parameters
        ----------
        ids : sequence of str
            Ids to remove; unknown ids are skipped; at most 100 distinct ids a call
            are read at a time (the transaction takes :data:`TRANSACT_MAX_IDS` ids).

        Returns
        -------
        int
            Entries removed (ids that had one).

        Raises
        ------
        WriteFailedError
            If a transaction still fails after the retries allowed.
        """
        unique = list(dict.fromkeys(ids))
        removed = 0
        for start in range(0, len(unique), TRANSACT_MAX_IDS):
            removed += self._replace([], deleted=unique[start : start + TRANSACT_MAX_IDS])
        return removed

    def _pointer_key(self, item_id: str) -> dict[str, Any]:
        return {
            names.ATTR_PK: {"S": id_pointer_key(self.key, item_id)},
            names.ATTR_SK: {"S": POINTER_SORT_KEY},
        }

    def _read_pointers(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Return id -> (PK, SK) of its stored entry, for the ids that have one."""
        keys: list[Any] = [self._pointer_key(i) for i in ids]
        found: dict[str, tuple[str, str]] = {}
        for attempt in range(self.backoff.max_attempts):
            if attempt:
                self.sleep(self.backoff.delay(attempt - 1))
            try:
                response = self.client.batch_get_item(
                    RequestItems={self.table_name: {"Keys": keys, "ConsistentRead": True}}
                )
            except ClientError as exc:
                if exc.response["Error"]["Code"] in RETRYABLE_ERROR_CODES:
                    continue
                raise WriteFailedError(f"ordered index {self.key!r}: {exc}") from exc
            except BotoCoreError:
                continue
            for pointer in response.get("Responses", {}).get(self.table_name, []):
                entry = (pointer[ATTR_ENTRY_PK]["S"], pointer[ATTR_ENTRY_SK]["S"])
                found[pointer[names.ATTR_ID]["S"]] = entry
            unprocessed: dict[str, Any] = dict(response.get("UnprocessedKeys", {}))
            keys = list(unprocessed.get(self.table_name, {}).get("Keys", []))
            if not keys:
                return found
        raise WriteFailedError(f"ordered index {self.key!r}: pointers stayed unread")

    def _replace(self, batch: list[dict[str, Any]], deleted: Sequence[str] = ()) -> int:
        """Write ``batch`` and remove ``deleted`` ids through their pointers (see put)."""
        ids = [item[names.ATTR_ID]["S"] for item in batch] + list(deleted)
        reason = "every attempt lost to a concurrent write of the same ids"
        for attempt in range(self.backoff.max_attempts):
            if attempt:
                self.sleep(self.backoff.delay(attempt - 1))
            current = self._read_pointers(ids)
            actions: list[Any] = []
            for item in batch:
                item_id = item[names.ATTR_ID]["S"]
                new = (item[names.ATTR_PK]["S"], item[names.ATTR_SK]["S"])
                old = current.get(item_id)
                pointer = {
                    **self._pointer_key(item_id),
                    names.ATTR_KEY: {"S": self.key},
                    names.ATTR_ID: {"S": item_id},
                    ATTR_ENTRY_PK: {"S": new[0]},
                    ATTR_ENTRY_SK: {"S": new[1]},
                }
                actions.append(
                    {"Put": {"TableName": self.table_name, "Item": pointer, **self._unchanged(old)}}
                )
                if old is not None and old != new:
                    actions.append({"Delete": {"TableName": self.table_name, "Key": _key(*old)}})
                actions.append({"Put": {"TableName": self.table_name, "Item": item}})
            removed = 0
            for item_id in deleted:
                old = current.get(item_id)
                if old is None:
                    continue
                removed += 1
                actions.append(
                    {
                        "Delete": {
                            "TableName": self.table_name,
                            "Key": self._pointer_key(item_id),
                            **self._unchanged(old),
                        }
                    }
                )
                actions.append({"Delete": {"TableName": self.table_name, "Key": _key(*old)}})
            if not actions:
                return 0
            try:
                self.client.transact_write_items(TransactItems=actions)
                return removed
            except ClientError as exc:
                error = exc.response["Error"]
                reason = f"{error['Code']}: {error.get('Message', '')}"
                codes = {r.get("Code") for r in exc.response.get("CancellationReasons", [])}
                retry = codes & {
                    "ConditionalCheckFailed",
                    "TransactionConflict",
                    "ThrottlingError",
                    "ProvisionedThroughputExceeded",
                }
                if error["Code"] in RETRYABLE_ERROR_CODES or (
                    error["Code"] == "TransactionCanceledException" and retry
                ):
                    continue
                raise WriteFailedError(f"ordered index {self.key!r}: {reason}") from exc
            except BotoCoreError as exc:
                reason = f"{type(exc).__name__}: {exc}"
                continue
        raise WriteFailedError(
            f"ordered index {self.key!r}: {len(ids)} id(s) not written: {reason}"
        )

    @staticmethod
    def _unchanged(old: tuple[str, str] | None) -> dict[str, Any]:
        """Return the condition that a pointer still names ``old`` (absent, for None)."""
        if old is None:
            return {
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": names.ATTR_PK},
            }
        return {
            "ConditionExpression": "#epk = :epk AND #esk = :esk",
            "ExpressionAttributeNames": {"#epk": ATTR_ENTRY_PK, "#esk": ATTR_ENTRY_SK},
            "ExpressionAttributeValues": {":epk": {"S": old[0]}, ":esk": {"S": old[1]}},
        }

    # --- reads --------------------------------------------------------------------------

    def query(
        self,
        prefix: str | None = None,
        start: str | None = None,
        end: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> OrderedPage:
        """Read one page of the index in order: all of it, a prefix, or ``[start, end)``.

        Parameters
        ----------
        prefix : str, optional
            Values that start with it (compared normalised); excludes start/end.
        start : str, optional
            Inclusive lower bound (raw value, normalised here).
        end : str, optional
            Exclusive upper bound (raw value, normalised here).
        limit : int
            Items per page, ``1..1000``.
        cursor : str, optional
            The previous page's cursor.

        Returns
        -------
        OrderedPage
            Items in normalised-value order, the next cursor, and the range shards in
            range and queried.

        Raises
        ------
        InvalidInputError
            If ``limit`` is out of range, ``prefix`` is combined with start/end, a bound
            normalises to ``""`` (field ``from``, ``to`` or ``prefix``:
            :func:`~dynashard.core.ordered.value_bounds`), or the key is not ordered.
        CursorError
            If the cursor is malformed or belongs to another query or layout.
        ShardQueryError
            If a shard's Query fails (naming the physical key).
        """
        if not 1 <= limit <= MAX_ORDERED_PAGE:
            raise InvalidInputError("limit", f"must be within 1..{MAX_ORDERED_PAGE}, got {limit}")
        lo, hi = value_bounds(prefix, start, end)
        layout = self.layout()  # stored once, never changed (configure refuses another)
        in_range = list(shards_for_range(layout.boundaries, lo, hi))
        fingerprint = query_fingerprint(self.key, lo, hi, layout.fingerprint())
        position: str | None = None
        remaining = in_range
        if cursor is not None:
            parsed = OrderedCursor.decode(cursor, fingerprint)
            if parsed.shard not in in_range:
                raise InvalidInputError("cursor", f"names range shard {parsed.shard}, not in range")
            remaining = in_range[in_range.index(parsed.shard) :]
            position = parsed.position
        page = OrderedPage([], None, in_range, [])
        for index, shard in enumerate(remaining):
            page.shards_queried.append(shard)
            streams = [
                self._stream(pk, lo, hi, position, limit - len(page.items) + 1, page)
                for pk in layout.physical_keys(self.key, shard)
            ]
            merged = heapq.merge(*streams, key=lambda item: item[names.ATTR_SK]["S"])
            last_sk: str | None = None
            for item in merged:
                if len(page.items) == limit:
                    # The shard has more: resume it after the last item returned.
                    page.cursor = OrderedCursor(fingerprint, shard, last_sk).encode()
                    return page
                page.items.append(_to_entry(item))
                last_sk = item[names.ATTR_SK]["S"]
            position = None
            if len(page.items) == limit and index + 1 < len(remaining):
                # Resume this shard after its last item, not the next shard from its start:
                # an entry put (or moved by a re-put) into this shard after that item
                # before the next page must not be skipped. At worst one empty Query.
                page.cursor = OrderedCursor(fingerprint, shard, last_sk).encode()
                return page
        return page

    def _stream(
        self,
        pk: str,
        lo: str | None,
        hi: str | None,
        after: str | None,
        page_limit: int,
        page: OrderedPage,
    ) -> Iterator[dict[str, Any]]:
        """Yield one physical key's items in sort-key order within ``[lo, hi)``."""
        condition = "#pk = :pk"
        values: dict[str, Any] = {":pk": {"S": pk}}
        # SK >= lo  <=>  value >= lo, and SK < hi  <=>  value < hi (see dynashard.core.ordered);
        # no sort key equals hi (it holds the separator), so BETWEEN is [lo, hi).
        if lo is not None and hi is not None:
            condition += " AND #sk BETWEEN :lo AND :hi"
            values.update({":lo": {"S": lo}, ":hi": {"S": hi}})
        elif lo is not None:
            condition += " AND #sk >= :lo"
            values[":lo"] = {"S": lo}
        elif hi is not None:
            condition += " AND #sk < :hi"
            values[":hi"] = {"S": hi}
        attribute_names = {"#pk": names.ATTR_PK}
        if lo is not None or hi is not None:
            attribute_names["#sk"] = names.ATTR_SK
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": attribute_names,
            "ExpressionAttributeValues": values,
            "Limit": max(1, page_limit),
            # Strongly consistent, as every base-table read of the library: an entry put
            # (or moved by a re-put) before the read began is never missed for replication
            # lag (Developer Guide, "Read consistency"); it costs 1 RCU per 4 KB, twice an
            # eventually consistent Query.
            "ConsistentRead": True,
        }
        if after is not None:
            request["ExclusiveStartKey"] = {names.ATTR_PK: {"S": pk}, names.ATTR_SK: {"S": after}}
        while True:
            page.queries += 1
            response = run_query(self.client, request, pk)
            yield from response.get("Items", [])
            last = response.get("LastEvaluatedKey")
            if last is None:
                return
            request["ExclusiveStartKey"] = last


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {names.ATTR_PK: {"S": pk}, names.ATTR_SK: {"S": sk}}


def _to_entry(item: dict[str, Any]) -> dict[str, Any]:
    # plain_value, not TypeDeserializer: a Query's items come as the wire has them
    # (dynashard.dynamodb.raw_items), binary values as base64 text.
    data = item.get(names.ATTR_DATA)
    return {
        "id": plain_value(item[names.ATTR_ID]),
        "value": plain_value(item[ATTR_VALUE]),
        "shard": int(plain_value(item[names.ATTR_SHARD])),
        "data": {} if data is None else plain_value(data),
    }


__all__ = ["MAX_ORDERED_PAGE", "OrderedIndex", "OrderedItem", "OrderedPage"]
