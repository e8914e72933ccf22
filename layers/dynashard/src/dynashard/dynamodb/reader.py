"""The scatter-gather reader: query every shard in parallel, merge, page with a cursor.

For a logical key the reader reads the shard metadata fresh, queries every shard that
any count in ``shard_history`` may have used (invariant 3) in parallel with the page
limit pushed down to each shard, merges the streams in exact sort-key order
(:mod:`dynashard.core.merge`) and returns a page with an opaque cursor (invariant 4). A
shard whose first page may not carry it far enough has its next page fetched ahead,
in parallel with the other shards', so the merge waits on futures rather than on one
Query after another (at most one page ahead per shard, and only when the items already
fetched cannot fill the page: see :class:`_ReadAhead`). A key adopted with items under
its bare partition key is read from that key too (:func:`physical_keys_to_query`): every
item there is the key's, dynashard's own (:func:`is_dynashard_item`) or another program's
(:func:`foreign_event`), and the bare key is queried past the codec's range on a
window's open side, so that an item the codec cannot read fails the read with
``TableSchemaError`` instead of being skipped. A
failed shard query fails the read with an error naming the shard, unless partial
results were asked for, which then list the missing shards (invariant 5).

A process's reads remember each key's shard set and item size (:class:`ReadMemory`):
the next read of the key starts querying the shards it had while the metadata is read
fresh (one round trip instead of two; the fresh metadata still decides which shards
are read), and sizes each shard's ``Limit`` to the read units its share is billed for
(:func:`shard_page_limit`).

A targeted read of a ``calculated`` key (``attribute_value``) queries only the shards
the value hashed to under each count in ``shard_history``
(:func:`~dynashard.core.strategies.calculated_shards`), one per distinct count at most, and
filters them to the value's items.

Base-table queries are strongly consistent (``ConsistentRead``), so an acknowledged
write is never missed for replication lag; GSI reads cannot be (Developer Guide,
"Read consistency").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Final, Protocol, TypedDict

from botocore.exceptions import BotoCoreError, ClientError

from dynashard import names
from dynashard.core.capacity import wire_item_size
from dynashard.core.keys import format_ts, parse_ts, physical_key
from dynashard.core.merge import Cursor, merge_page, query_fingerprint
from dynashard.core.schema import DEFAULT_SCHEMA, Payload, TableSchema
from dynashard.core.shard_info import ShardInfo
from dynashard.core.strategies import Strategy, calculated_shards
from dynashard.core.times import as_utc
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.errors import (
    InvalidInputError,
    ShardQueryError,
    StateConflictError,
    TableSchemaError,
)
from dynashard.model import plain_value
from dynashard.planning.reads import MAX_PAGE_LIMIT, _fill_read_units, shard_page_limit

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from dynashard.dynamodb.hedging import QueryHedger
    from dynashard.planning.reads import ReadPlan

#: Sort-key bounds of time-series items: SKs start with a year, so they sort between "0"
#: and ":" (the byte after "9"); other items of the table (counters, "#...") fall outside.
_SK_FLOOR: Final = "0"
_SK_CEILING: Final = ":"

#: Item size a reader assumes for a key before it has read any of its items, bytes.
DEFAULT_ITEM_BYTES: Final = 1024.0
#: Logical keys a :class:`ReadMemory` remembers (bounds a container's memory).
READ_MEMORY_LIMIT: Final = 10_000


@dataclass
class Page:
    """One page of a scatter-gather read.

    Attributes
    ----------
    items : list of dict
        JSON-ready events ``{"key", "id", "ts", "data"}`` in the requested order.
    cursor : str or None
        Opaque cursor of the next page; None after the last page.
    missing_shards : list of str
        Physical keys whose query failed (only with ``allow_partial=True``).
    shards_queried : int
        Shards (physical keys) queried for this page: every shard the key's history
        can have used for a scatter-gather, one per distinct shard count at most for a
        targeted read (plus the bare key of an adopted key).
    queries : int
        Query calls sent for this page: first pages, further pages and read-aheads (a
        shard that runs short, or whose items are filtered out, is queried again; a
        read-ahead the page turned out not to need is counted when it was already
        sent), ``>= shards_queried``. Hedges are not among them.
    hedges : int
        Second copies of those Queries sent because the first ran late
        (:mod:`dynashard.dynamodb.hedging`); 0 without hedging.
    plan : ReadPlan or None
        The path the read took (base table or GSI1) and why, when it was planned
        (:mod:`dynashard.planning.reads`).
    resume : str or None
        A cursor strictly after this page's last item, given even when the read ran out
        (``cursor`` None); None when the page is empty or the reader gives none. A
        reader that goes on past this key (a bucketed family's next bucket,
        :mod:`dynashard.dynamodb.bucketed_reader`) resumes the key there, so an event
        written between pages just after that item is read, not skipped.
    """

    items: list[dict[str, Any]]
    cursor: str | None
    missing_shards: list[str] = field(default_factory=list)
    shards_queried: int = 0
    queries: int = 0
    plan: ReadPlan | None = None
    hedges: int = 0
    resume: str | None = None


class _PendingPage(Protocol):
    """A Query in flight: a ``Future``, or a :class:`~dynashard.dynamodb.hedging.HedgedQuery`."""

    def result(self) -> dict[str, Any]: ...

    def cancel(self) -> bool: ...


class _ShardStream:
    """Lazy iterator over one shard's items in sort-key order, page by page.

    Pages are fetched through the reader's executor: :meth:`submit` starts the next
    Query (at most one in flight, since each resumes from the previous page's
    ``LastEvaluatedKey``) and the merge, when the buffer runs dry, waits on that future
    instead of calling DynamoDB itself. All state is touched by the merging thread only;
    the worker thread runs the Query and returns its response.
    """

    def __init__(
        self, reader: ShardedReader, pk: str, request: dict[str, Any], owner: str | None = None
    ) -> None:
        self.reader = reader
        self.pk = pk
        self.request = request
        #: The logical key whose items this stream yields (:func:`owns_item`); None: any.
        self.owner = owner
        self.buffer: list[dict[str, Any]] = []
        self.start_key: dict[str, Any] | None = request.get("ExclusiveStartKey")
        self.finished = False
        self.queries = 0
        self.tolerate_failure = False
        self.failure: dict[str, str] = {}
        #: Order keys of every item fetched for this page of the read, in stream order.
        self.fetched: list[str] = []
        #: The item -> order key of the merge (the sort key itself in dynashard's table).
        self.order_of = reader.order_of
        #: A resumed stream of an inexact codec drops what is not past this order key.
        self.after: str | None = None
        self.pending: _PendingPage | None = None
        #: Hedges sent for this stream's Queries (with the reader's hedger).
        self.hedges = 0
        #: Called after each page arrives during the merge (read-ahead policy).
        self.on_page: Callable[[_ShardStream], None] | None = None
        #: Items of the bare key read in another program's shape, by ``id()`` (the
        #: item is kept, so that its ``id`` is not reused while the page is built).
        self.foreign: dict[int, dict[str, Any]] = {}
        #: A targeted read's test of an event's ``data`` (bare key only: its items are
        #: filtered here, not by a FilterExpression, since their shape varies).
        self.match: Callable[[dict[str, Any]], bool] | None = None

    def submit(self, limit: int | None = None) -> None:
        """Start the next page's Query on the executor, unless one is in flight.

        ``limit``, when given, is that page's ``Limit`` (and the later pages').
        """
        if self.pending is None and not self.finished:
            if limit is not None:
                self.request["Limit"] = limit
            request = dict(self.request)
            if self.start_key is not None:
                request["ExclusiveStartKey"] = self.start_key
            self.queries += 1
            hedger = self.reader.hedger
            if hedger is None:
                self.pending = self.reader.executor.submit(self._query, request)
            else:
                self.pending = hedger.submit(self.reader.executor, self._query, request)

    def _query(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one Query (in a worker thread); raise ShardQueryError naming the shard."""
        return run_query(self.reader.client, request, self.pk)

    def receive(self) -> None:
        """Wait for the page in flight (starting it if none is) and buffer its items.

        Raises
        ------
        ShardQueryError
            If the Query failed; the shard is named.
        """
        self.submit()
        pending, self.pending = self.pending, None
        if pending is None:  # finished: nothing more to read
            return
        try:
            response = pending.result()
        finally:
            self.hedges += _hedged(pending)
        items = response.get("Items", [])
        bare = self.owner is not None and self.pk == self.owner
        if bare:
            # The bare key of an adopted key: every item is the key's, dynashard's own
            # or another program's; one it cannot read (its sort key outside the codec's
            # range too) raises TableSchemaError here, before its sort key is ordered.
            schema = self.reader.schema
            for item in items:
                if not is_dynashard_item(item, self.pk, schema):
                    check_foreign(item, schema)
                    self.foreign[id(item)] = item
        order_of = self.order_of
        if self.after is not None:
            after, descending = self.after, not self.request["ScanIndexForward"]
            items = [
                i for i in items if (order_of(i) < after if descending else order_of(i) > after)
            ]
        fetched = items
        if self.owner is None:
            self.buffer.extend(items)
        elif bare:
            if self.match is not None:
                match, foreign, schema = self.match, self.foreign, self.reader.schema
                items = [
                    i
                    for i in items
                    if match(item_to_event(i, schema, foreign=id(i) in foreign)["data"])
                ]
            self.buffer.extend(items)
        else:
            key_attr = self.reader.schema.key_attr
            self.buffer.extend(i for i in items if owns_item(i, self.owner, key_attr=key_attr))
        self.fetched.extend(order_of(item) for item in fetched)
        self.start_key = response.get("LastEvaluatedKey")
        self.finished = self.start_key is None

    def cancel(self) -> None:
        """Drop a read-ahead the page turned out not to need (cancelled if not started)."""
        if self.pending is not None:
            if self.pending.cancel():
                self.queries -= 1  # never sent
            self.hedges += _hedged(self.pending)
            self.pending = None

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        while True:
            order_of = self.order_of
            for item in self.buffer:
                yield order_of(item), item
            self.buffer = []
            if self.finished:
                return
            try:
                self.receive()
            except ShardQueryError as exc:
                if not self.tolerate_failure:
                    raise
                self.failure = exc.failures
                return
            if self.on_page is not None:
                self.on_page(self)


def _hedged(pending: _PendingPage) -> int:
    """1 if a hedge of ``pending`` was sent, else 0."""
    return int(bool(getattr(pending, "hedged", False)))


class QueryOptions(TypedDict, total=False):
    """The options of a read, each optional: keywords of :meth:`ShardedReader.query`.

    The facade and the ports pass them on as ``**options: Unpack[QueryOptions]``, so the
    read's signature is written once, here and in :meth:`ShardedReader.query`.

    Attributes
    ----------
    start, end : datetime or None
        Event-time range, start inclusive, end exclusive (UTC).
    limit : int
        Page size, 1..1000.
    descending : bool
        Newest first when True.
    cursor : str or None
        The previous page's cursor.
    allow_partial : bool
        Serve what healthy shards hold, naming the missing ones.
    attribute_value : str or int or None
        Targeted read of a ``calculated`` key: only the events whose shard attribute
        has this value.
    """

    start: datetime | None
    end: datetime | None
    limit: int
    descending: bool
    cursor: str | None
    allow_partial: bool
    attribute_value: str | int | None


@dataclass
class ReadMemory:
    """What a process's reads remember of each logical key, to make the next read cheaper.

    Nothing here decides what a read returns: the shard set comes from the metadata read
    fresh on every page (invariant 3), and the item size only sizes each shard's
    ``Limit``.

    Attributes
    ----------
    item_bytes : dict of str to float
        Logical key -> the size of one of its items read last, bytes
        (:func:`shard_page_limit`).
    shard_info : dict of str to ShardInfo
        Logical key -> its metadata as the last read saw it: the next read starts
        querying those shards while it reads the metadata fresh, instead of after.
    """

    item_bytes: dict[str, float] = field(default_factory=dict)
    shard_info: dict[str, ShardInfo] = field(default_factory=dict)

    def remember(
        self, key: str, *, info: ShardInfo | None = None, size: float | None = None
    ) -> None:
        """Record ``key``'s metadata and/or the size of one of its items.

        Each map keeps at most :data:`READ_MEMORY_LIMIT` keys and starts afresh past it.

        Parameters
        ----------
        key : str
            Logical key.
        info : ShardInfo, optional
            Its metadata as a read just saw it (fresh).
        size : float, optional
            The size of one of its items, bytes (DynamoDB's item-size rules).
        """
        if info is not None:
            _bounded_set(self.shard_info, key, info)
        if size is not None:
            _bounded_set(self.item_bytes, key, size)


def _bounded_set(table: dict[str, Any], key: str, value: Any) -> None:
    """Set ``table[key]``, starting afresh when a new key would pass the bound."""
    if key not in table and len(table) >= READ_MEMORY_LIMIT:
        table.clear()
    table[key] = value


class ShardedReader:
    """Scatter-gather reads of a sharded logical key.

    Parameters
    ----------
    client : DynamoDBClient
        A boto3 DynamoDB client shared by the worker threads; its
        ``max_pool_connections`` should cover the executor's workers.
    table_name : str
        The data table.
    metadata : ShardMetadata
        Shard metadata (read fresh here, never from the writer cache).
    executor : Executor
        Runs the shard queries in parallel.
    memory : ReadMemory, optional
        What earlier reads learned of each key; pass the same one to every reader of a
        process (the facade does) so later reads use it. A new one when None.
    schema : TableSchema
        The table's key schema and attribute names (:mod:`dynashard.core.schema`);
        dynashard's own by default. Its sort-key codec orders the merge; a codec whose
        sort key holds no time (``plain_string``) refuses a time window.
    hedger : QueryHedger, optional
        Hedges the shard Queries that run late (:mod:`dynashard.dynamodb.hedging`):
        share one per table across a process's readers; None sends each Query once.
        A hedge needs an idle worker: size ``executor`` to the fan-out plus a few.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        metadata: ShardMetadata,
        executor: Executor,
        memory: ReadMemory | None = None,
        schema: TableSchema = DEFAULT_SCHEMA,
        hedger: QueryHedger | None = None,
    ) -> None:
        self.client = client
        self.table_name = table_name
        self.metadata = metadata
        self.executor = executor
        self.hedger = hedger
        self.memory = memory if memory is not None else ReadMemory()
        self.schema = schema
        self.order_of: Callable[[dict[str, Any]], str] = order_function(schema)

    def query(
        self,
        key: str,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        limit: int = 100,
        descending: bool = False,
        cursor: str | None = None,
        allow_partial: bool = False,
        attribute_value: str | int | None = None,
        info: ShardInfo | None = None,
    ) -> Page:
        """Read one page of a logical key's events, merged across its shards.

        Parameters
        ----------
        key : str
            Logical key.
        start : datetime, optional
            Earliest event time, inclusive (UTC).
        end : datetime, optional
            Latest event time, exclusive (UTC).
        limit : int
            Page size, 1..1000; pushed down to every shard query (see
            :func:`shard_page_limit`).
        descending : bool
            Newest first when True.
        cursor : str, optional
            The ``cursor`` of the previous page of the same query.
        allow_partial : bool
            Return what the healthy shards hold, listing failed shards in
            ``missing_shards``, instead of failing.
        info : ShardInfo, optional
            The key's metadata when the caller has just read it fresh (a planner);
            read here with a strongly consistent GetItem when None.
        attribute_value : str or int, optional
            Targeted read of a ``calculated`` key: only the events whose shard
            attribute (``data.{shard_attribute}``) equals this value (an integer and
            its decimal text are the same value). It queries one shard per distinct
            count in ``shard_history`` (the shard the value hashed to under that
            count), never the full fan-out, with a ``FilterExpression`` on
            ``data.{shard_attribute}``. DynamoDB charges read capacity for every item
            a Query reads *before* the filter (Developer Guide, "Filter expressions
            for Query"), so the cost is the item collection of those shards in the
            window, shared with the other values that hash there; what it saves is
            the other ``max_count - 1`` shards. An adopted key's bare-key items, whose
            shape varies (another program's hold the attribute at the top level), are
            tested on their event's ``data`` instead: the plain read's items, filtered.

        Returns
        -------
        Page
            Items in exact sort-key order and the next page's cursor.

        Raises
        ------
        InvalidInputError
            If ``limit`` is out of range, ``start >= end``, or ``attribute_value`` is
            given for a key whose strategy is not ``calculated`` or is empty (field
            ``attr``, the HTTP API's parameter).
        StateConflictError
            Naming ``key``, if the key is an ordered index (its items are index
            entries, not events: read them with
            :class:`~dynashard.dynamodb.ordered_index.OrderedIndex`).
        CursorError
            If ``cursor`` is malformed or belongs to another query.
        ShardQueryError
            If a shard query failed and ``allow_partial`` is False.
        MetadataError
            If the shard metadata cannot be read.
        """
        if not 1 <= limit <= MAX_PAGE_LIMIT:
            raise InvalidInputError("limit", f"must be within 1..{MAX_PAGE_LIMIT}, got {limit}")
        start, end = as_utc(start, "from"), as_utc(end, "to")  # naive means UTC
        lo = format_ts(start) if start is not None else _SK_FLOOR
        hi = format_ts(end) if end is not None else _SK_CEILING
        if start is not None and end is not None and lo >= hi:
            raise InvalidInputError("from", f"must be earlier than to ({lo} >= {hi})")
        window: tuple[str, str] | None = (lo, hi)
        if self.schema is not DEFAULT_SCHEMA and not self.schema.is_default:
            window = self.schema.sort_key_codec.window(start, end)
            lo, hi = window if window is not None else ("", "")
        value = None if attribute_value is None else _attribute_text(attribute_value)
        target = () if value is None else ("attr", value)
        fingerprint = query_fingerprint(key, lo, hi, descending, *target)
        position = Cursor.decode(cursor, fingerprint) if cursor else None
        # Every page queries every stream from the position, those a cursor lists as done
        # (they ran out on an earlier page) too: a write between pages may land on any of
        # them after the position (a shard, or the bare key another program still writes
        # during an adoption's cut-over), and the next page must hold it.

        item_bytes = self.memory.item_bytes.get(key, DEFAULT_ITEM_BYTES)
        streams: dict[int, _ShardStream] = {}

        def open_streams(keys: dict[int, str], filter_by: str | None = None) -> None:
            per_shard = shard_page_limit(limit, len(keys), item_bytes)
            for s, pk in keys.items():
                if s in streams:
                    continue
                if s == BARE_KEY_STREAM:
                    # The bare key is read past the codec's range on a window's open
                    # side, so that an item there fails the read instead of being
                    # skipped; its items' shapes vary, so a targeted read tests each
                    # item's event (the plain read's, filtered), not a FilterExpression.
                    open_sides = (start is None, end is None)
                    stream = self._stream(pk, window, per_shard, descending, position, key,
                                          open_sides=open_sides)  # fmt: skip
                    if value is not None:
                        stream.match = _attribute_matcher(filter_by or "", value)
                else:
                    stream = self._stream(pk, window, per_shard, descending, position, key)
                    if value is not None:
                        _filter_by(stream.request, filter_by or "", value, self.schema)
                streams[s] = stream
                stream.submit()

        # Start the shards the key had at its last read while its metadata is read
        # fresh: the fresh view still decides the shard set (invariant 3), and a Query
        # started after the read began sees every write acknowledged before it began.
        guess = self.memory.shard_info.get(key) if info is None and value is None else None
        if guess is not None:
            open_streams(physical_keys_to_query(guess))
        try:
            info = info if info is not None else self.metadata.for_reader(key)
            if info.strategy is Strategy.ORDERED:  # its entries lack ts and id (a KeyError)
                raise StateConflictError(
                    "key", f"{key!r} is an ordered index: read it with GET /index/{{key}}"
                )
        except BaseException:
            for stream in streams.values():
                stream.cancel()
            raise
        self.memory.remember(key, info=info)
        every = physical_keys_to_query(info, self._candidate_shards(info, value))
        keys = every
        for s in [s for s in streams if s not in keys]:  # the guess had a shard too many
            streams.pop(s).cancel()
        open_streams(keys, info.shard_attribute)
        failures = self._prefetch(streams)
        if failures and not allow_partial:
            raise ShardQueryError(failures)
        live = [s for s in keys if streams[s].pk not in failures]
        ahead = _ReadAhead([streams[s] for s in live], limit, descending, item_bytes)
        for s in live:
            streams[s].tolerate_failure = allow_partial
            streams[s].on_page = ahead.consider
            ahead.consider(streams[s])
        try:
            merged = merge_page([iter(streams[s]) for s in live], limit, descending)
        finally:
            # A read-ahead the page did not need is dropped: its items are after the page
            # (the cursor resumes there), so neither its items nor its failure belong here.
            for stream in streams.values():
                stream.cancel()
        for s in live:
            failures.update(streams[s].failure)
        if merged.items:  # one item a page: a key's items vary little in size
            self.memory.remember(key, size=float(wire_item_size(merged.items[0])))
        # A stream that stopped because its query failed is missing, not done.
        done = {live[i] for i in merged.exhausted if not streams[live[i]].failure}
        resume = None
        if merged.last_sort_key is not None:
            resume = Cursor(fingerprint, merged.last_sort_key, frozenset(done)).encode()
        next_cursor = resume if len(done & every.keys()) < len(every) else None
        foreign = {i for stream in streams.values() for i in stream.foreign}
        return Page(
            items=[
                item_to_event(item, self.schema, foreign=id(item) in foreign)
                for item in merged.items
            ],
            cursor=next_cursor,
            missing_shards=sorted(failures),
            shards_queried=sum(1 for stream in streams.values() if stream.queries),
            queries=sum(stream.queries for stream in streams.values()),
            hedges=sum(stream.hedges for stream in streams.values()),
            resume=resume,
        )

    @staticmethod
    def _candidate_shards(info: ShardInfo, value: str | None) -> list[int]:
        """Shards a read must query: all the history used, or a targeted read's few."""
        if value is None:
            return list(range(info.max_count))
        if info.strategy is not Strategy.CALCULATED or not info.shard_attribute:
            raise InvalidInputError(
                "attr",
                f"targets a calculated key; {info.key!r} has strategy {info.strategy_label}",
            )
        return sorted(calculated_shards(value, info.counts))

    def _stream(
        self,
        pk: str,
        window: tuple[str, str] | None,
        limit: int,
        descending: bool,
        position: Cursor | None,
        owner: str | None = None,
        open_sides: tuple[bool, bool] = (False, False),
    ) -> _ShardStream:
        """Build one physical key's Query stream.

        ``open_sides`` (lower, upper): a side of the window to leave unbounded (an
        adopted key's bare key on the side the read leaves open, so that what another
        program wrote outside the codec's range is seen, and fails the read).
        """
        schema = self.schema
        codec, kind = schema.sort_key_codec, schema.sort_key_type
        lo, hi = (None, None) if window is None else window
        lo = None if open_sides[0] else lo
        hi = None if open_sides[1] else hi
        after = None
        if position is not None and not codec.exact:
            # The order key holds more than the sort key (epoch_ms_number: the id breaks
            # ties across shards): resume at the position's sort key inclusively and
            # drop what is not past the position, not with ExclusiveStartKey, which
            # would skip a same-millisecond item of this shard the page has not had.
            after = position.position
            at = codec.sort_key_of(after)
            if descending:
                hi = at
            else:
                lo = at
        values: dict[str, Any] = {":pk": {"S": pk}}
        if lo is not None:
            values[":lo"] = {kind: lo}
        if hi is not None:
            values[":hi"] = {kind: hi}
        condition = {
            (True, True): "#pk = :pk AND #sk BETWEEN :lo AND :hi",
            (True, False): "#pk = :pk AND #sk >= :lo",
            (False, True): "#pk = :pk AND #sk <= :hi",
            (False, False): "#pk = :pk",
        }[lo is not None, hi is not None]
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": condition,
            # DynamoDB refuses a name no expression uses: "#sk" only with a range.
            "ExpressionAttributeNames": (
                schema.key_condition_names()
                if lo is not None or hi is not None
                else {"#pk": schema.partition_key}
            ),
            "ExpressionAttributeValues": values,
            "ScanIndexForward": not descending,
            "Limit": limit,
            "ConsistentRead": True,
        }
        if position is not None and after is None:
            request["ExclusiveStartKey"] = {
                schema.partition_key: {"S": pk},
                schema.sort_key: {kind: position.position},
            }
        stream = _ShardStream(self, pk, request, owner)
        stream.after = after
        return stream

    def _prefetch(self, streams: dict[int, _ShardStream]) -> dict[str, str]:
        """Run every shard's first Query in parallel; return the failures by physical key."""
        for stream in streams.values():
            stream.submit()
        failures: dict[str, str] = {}
        for stream in streams.values():
            try:
                stream.receive()
            except ShardQueryError as exc:
                failures.update(exc.failures)
        return failures


#: Stream number of an adopted key's bare partition key in :func:`physical_keys_to_query`
#: and in the cursor's set of exhausted streams (shards are ``0..N-1``).
BARE_KEY_STREAM: Final = -1


def owns_item(
    item: dict[str, Any], key: str, *, bare: bool = False, key_attr: str = names.ATTR_KEY
) -> bool:
    """Tell whether a stored item is one of a logical key's events.

    Physical keys are ``{logical}#{shard}`` (:func:`~dynashard.core.keys.physical_key`),
    so a partition key such as ``L#7`` may also hold items that are not ``L``'s: the
    bare-key items of a key ``L#7`` that another program wrote (adoption of such a key
    is refused while it could alias, :meth:`ShardMetadata.adopt`, but nothing stops
    another program writing it). Every item dynashard writes carries its logical key in
    the ``key`` attribute, so of a shard's items the reader keeps only those whose
    ``key`` is the one read. Under an adopted key's bare partition key every item is the
    key's: dynashard writes none there for another key (the alias refusal above), so an
    item there is dynashard's own (:func:`is_dynashard_item`) or another program's, read
    in its own shape whatever attributes it has, one named ``key`` included.

    Parameters
    ----------
    item : dict
        The item in DynamoDB's typed JSON, as a Query returns it.
    key : str
        The logical key read.
    bare : bool
        Whether the item was read under ``key``'s bare partition key.
    key_attr : str
        The attribute holding an item's logical key (:attr:`TableSchema.key_attr`).

    Returns
    -------
    bool
        True when the item belongs to ``key``.

    Examples
    --------
    >>> owns_item({"key": {"S": "L"}}, "L"), owns_item({"key": {"S": "L#7"}}, "L")
    (True, False)
    >>> owns_item({}, "L", bare=True), owns_item({}, "L")
    (True, False)
    >>> owns_item({"key": {"S": "ELSEWHERE"}}, "L", bare=True)
    True
    """
    if bare:
        return True
    stored = item.get(key_attr)
    return stored is not None and bool(stored.get("S") == key)


def is_dynashard_item(item: dict[str, Any], key: str, schema: TableSchema = DEFAULT_SCHEMA) -> bool:
    """Tell whether an item under ``key``'s bare partition key has dynashard's full shape.

    dynashard's own shape: the schema's ``key`` attribute is the string ``key``, ``id``
    a non-empty string, ``ts`` a string holding a time, and the item's sort key exactly
    the one the table's codec gives that time and id
    (:meth:`~dynashard.core.schema.SortKeyCodec.encode`). Anything else under the bare
    key was written by another program and is read in its own shape
    (:func:`foreign_event`), an attribute named like the schema's ``key`` included (it
    is then part of the event's ``data``): it is never taken for another key's item,
    nor half-read as dynashard's.

    Parameters
    ----------
    item : dict of str to Any
        The item in DynamoDB's typed JSON.
    key : str
        The logical key, the item's partition key.
    schema : TableSchema
        The table's key schema.

    Returns
    -------
    bool
        True for dynashard's shape.

    Examples
    --------
    >>> shaped = {"SK": {"S": "2013-01-01T00:00:00.000000Z#e1"}, "key": {"S": "K"},
    ...           "id": {"S": "e1"}, "ts": {"S": "2013-01-01T00:00:00.000000Z"}}
    >>> is_dynashard_item(shaped, "K"), is_dynashard_item({**shaped, "id": {"S": "e2"}}, "K")
    (True, False)
    >>> is_dynashard_item({"SK": shaped["SK"], "key": {"S": "K"}}, "K")
    False
    """
    if item.get(schema.key_attr) != {"S": key}:
        return False
    stored_id, stored_ts = item.get(schema.id_attr), item.get(schema.ts_attr)
    if not (isinstance(stored_id, dict) and isinstance(stored_id.get("S"), str)):
        return False
    if not (isinstance(stored_ts, dict) and isinstance(stored_ts.get("S"), str)):
        return False
    try:
        ts = parse_ts(stored_ts["S"], schema.ts_attr, min_epoch_ms=None)
        expected = schema.sort_key_codec.encode(ts, stored_id["S"])
    except (InvalidInputError, OverflowError):
        return False
    stored_sk = item.get(schema.sort_key, {}).get(schema.sort_key_type)
    if schema.sort_key_type == "N":
        try:
            return stored_sk is not None and Decimal(stored_sk) == Decimal(expected)
        except InvalidOperation:
            return False
    return bool(stored_sk == expected)


def check_foreign(item: dict[str, Any], schema: TableSchema = DEFAULT_SCHEMA) -> None:
    """Refuse an item of another program's that cannot be read as an event.

    Parameters
    ----------
    item : dict of str to Any
        An item under an adopted key's bare partition key, not in dynashard's shape.
    schema : TableSchema
        The table's key schema.

    Raises
    ------
    TableSchemaError
        Naming the item's partition and sort key, when its sort key is not in the
        codec's form (outside the codec's range, e.g. ``ALERT#...`` under the ISO codecs
        or epoch microseconds under ``epoch_ms_number``, included) or no time can be
        found for it: a read fails rather than skip an item of its key.
    """
    try:
        foreign_identity(item, schema)
    except InvalidInputError as exc:
        raise _unreadable(item, schema, exc) from exc


def _unreadable(
    item: dict[str, Any], schema: TableSchema, exc: InvalidInputError
) -> TableSchemaError:
    """Return the TableSchemaError of a bare-key item that cannot be read as an event."""
    pk = item.get(schema.partition_key, {}).get("S")
    sk = next(iter(item.get(schema.sort_key, {"?": "?"}).values()))
    return TableSchemaError(
        [
            f"the item {schema.partition_key}={pk!r} {schema.sort_key}={sk!r} under an "
            f"adopted key's bare partition key cannot be read as an event: {exc.message}"
        ]
    )


def _attribute_matcher(attribute: str, value: str) -> Callable[[dict[str, Any]], bool]:
    """Return the test a targeted read applies to a bare-key event's ``data``.

    The same values as the shards' FilterExpression (:func:`_filter_by`) keeps: the
    string ``value``, or, when ``value`` is an integer's canonical text, that number
    (a boolean is not a number here, as DynamoDB's ``BOOL`` is not an ``N``).
    """
    number = int(value) if value.lstrip("-").isdigit() and str(int(value)) == value else None

    def match(data: dict[str, Any]) -> bool:
        stored = data.get(attribute)
        if isinstance(stored, str):
            return stored == value
        if number is None or isinstance(stored, bool):
            return False
        return isinstance(stored, int | float | Decimal) and stored == number

    return match


def physical_keys_to_query(info: ShardInfo, shards: Iterable[int] | None = None) -> dict[int, str]:
    """Return every physical key a read of a logical key must query, by stream number.

    Shards ``0..max_count-1`` (every count in ``shard_history``, invariant 3), or the
    given ``shards`` (a targeted read's few), and, for a
    key adopted with items under its bare partition key (:meth:`ShardMetadata.adopt`),
    the bare key itself as stream :data:`BARE_KEY_STREAM`. Keys never adopted pay
    nothing for adoption: the flag is in the metadata item the reader reads anyway.

    Parameters
    ----------
    info : ShardInfo
        The key's metadata, read fresh.
    shards : iterable of int, optional
        The shards to query; every shard of the key's history when None.

    Returns
    -------
    dict of int to str
        Stream number -> physical partition key, bare key first when present.

    Examples
    --------
    >>> history = ((1_357_000_000, 2),)
    >>> physical_keys_to_query(ShardInfo("K", 2, 1_357_000_000, history))
    {0: 'K#0', 1: 'K#1'}
    >>> physical_keys_to_query(ShardInfo("K", 2, 1_357_000_000, history, adopted=True))
    {-1: 'K', 0: 'K#0', 1: 'K#1'}
    """
    keys = {BARE_KEY_STREAM: info.key} if info.adopted else {}
    chosen = range(info.max_count) if shards is None else sorted(shards)
    keys.update((s, physical_key(info.key, s)) for s in chosen)
    return keys


class _ReadAhead:
    """When to fetch a shard's next page ahead, and how much, so the merge waits on futures.

    A stream's next page is needed by this page of the read only if the page does not
    fill before the merge passes the stream's last fetched item (its frontier). The
    items already fetched from all streams up to that frontier are a lower bound on what
    the merge emits before passing it: when they number ``limit`` or more the page
    surely ends first, and the next page is not fetched (read amplification stays as
    :func:`shard_page_limit` sets it); otherwise it is started at once, in parallel
    with every other stream's. At most one page per stream is ahead, since each Query
    resumes from the previous page's ``LastEvaluatedKey``. As the merge emits items the
    count and the page's remainder shrink together, so the test is run when a page
    arrives, not per item.

    The next page asks for the remainder the page can still need past the frontier,
    ``limit - known``, shared among the streams not yet exhausted (plus one, rounded up
    to fill its read units): a shard that holds most of the window (written before the
    key grew) is read in one or two Queries, not one share at a time, and evenly spread
    shards each read about their part of the remainder.
    """

    def __init__(
        self, streams: list[_ShardStream], limit: int, descending: bool, item_bytes: float
    ) -> None:
        self.streams = streams
        self.limit = limit
        self.descending = descending
        self.item_bytes = item_bytes

    def consider(self, stream: _ShardStream) -> None:
        """Start ``stream``'s next page now if this page may need it."""
        if stream.finished or stream.pending is not None:
            return
        if not stream.fetched:  # nothing to go on: an empty page with a LastEvaluatedKey
            stream.submit()
            return
        frontier = stream.fetched[-1]
        known = sum(_count_through(t.fetched, frontier, self.descending) for t in self.streams)
        if known < self.limit:
            remainder = self.limit - known
            active = max(1, sum(1 for t in self.streams if not t.finished))
            share = math.ceil(remainder / active) + 1
            stream.submit(_fill_read_units(share, remainder + 1, self.item_bytes, True))


def _count_through(sort_keys: list[str], frontier: str, descending: bool) -> int:
    """Count the leading ``sort_keys`` (in stream order) not beyond ``frontier``."""
    lo, hi = 0, len(sort_keys)
    while lo < hi:
        mid = (lo + hi) // 2
        sk = sort_keys[mid]
        if (sk >= frontier) if descending else (sk <= frontier):
            lo = mid + 1
        else:
            hi = mid
    return lo


def _attribute_text(value: str | int) -> str:
    """Return the text a targeted read hashes, as the writer's ``shard_attribute_value``."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidInputError("attr", f"must be a string or an integer, got {value!r}")
    text = str(value)
    if not text:
        raise InvalidInputError("attr", "must not be empty")
    return text


def _filter_by(
    request: dict[str, Any], attribute: str, value: str, schema: TableSchema = DEFAULT_SCHEMA
) -> None:
    """Add ``data.{attribute} = value`` as the Query's FilterExpression (in place).

    A value that is an integer's canonical text matches the number too, as the writer
    hashed both to the same shard. With a ``flat`` payload the attribute is the item's own.
    """
    if schema.payload is Payload.FLAT:
        request["ExpressionAttributeNames"]["#a"] = attribute
        path = "#a"
    else:
        request["ExpressionAttributeNames"].update({"#d": schema.data_attr, "#a": attribute})
        path = "#d.#a"
    request["ExpressionAttributeValues"][":v"] = {"S": value}
    request["FilterExpression"] = f"{path} = :v"
    if value.lstrip("-").isdigit() and str(int(value)) == value:
        request["ExpressionAttributeValues"][":vn"] = {"N": value}
        request["FilterExpression"] = f"{path} IN (:v, :vn)"


def run_query(client: DynamoDBClient, request: dict[str, Any], label: str) -> dict[str, Any]:
    """Run one DynamoDB ``Query`` page; a failure names the partition it was for.

    Every sharded read path (base table, GSI1 buckets, ordered range shards) queries
    one physical partition key at a time through this.

    Parameters
    ----------
    client : DynamoDBClient
        boto3 DynamoDB client.
    request : dict of str to Any
        The ``Query`` arguments (table, key condition, ``ExclusiveStartKey`` ...).
    label : str
        What the query reads, e.g. the physical key ``K#3`` or ``GSI1:K#2013-01-01#0``.

    Returns
    -------
    dict of str to Any
        The response (``Items``, ``LastEvaluatedKey`` ...).

    Raises
    ------
    ShardQueryError
        On any ``ClientError`` (``{label: "Code: Message"}``) or ``BotoCoreError``
        (``{label: "ExceptionType: text"}``).
    """
    try:
        return dict(client.query(**request))
    except ClientError as exc:
        error = exc.response["Error"]
        raise ShardQueryError({label: f"{error['Code']}: {error.get('Message', '')}"}) from exc
    except BotoCoreError as exc:
        raise ShardQueryError({label: f"{type(exc).__name__}: {exc}"}) from exc


def order_function(schema: TableSchema = DEFAULT_SCHEMA) -> Callable[[dict[str, Any]], str]:
    """Return the function that gives a stored item's merge order key under a schema.

    Parameters
    ----------
    schema : TableSchema
        The table's key schema; its codec's :meth:`~dynashard.core.schema.SortKeyCodec.order_key`.

    Returns
    -------
    callable
        Item (DynamoDB typed JSON) -> order key: the sort key itself for an exact codec
        (dynashard's own ``SK``), else the codec's order key of the sort key and the id.

    The function raises :class:`~dynashard.errors.TableSchemaError`, naming the item, for
    a sort key the codec cannot order (another program's item under an adopted key's
    bare partition key, say), as :func:`foreign_event` does for one it cannot read.

    Examples
    --------
    >>> order_function()({"SK": {"S": "2013-01-01T10:15:00.000000Z#f1"}})
    '2013-01-01T10:15:00.000000Z#f1'
    """
    sk, kind, codec = schema.sort_key, schema.sort_key_type, schema.sort_key_codec
    if codec.exact:

        def exact(item: dict[str, Any]) -> str:
            text: str = item[sk][kind]
            return text

        return exact
    id_attr = schema.id_attr

    def order_of(item: dict[str, Any]) -> str:
        stored = item.get(id_attr)
        # An item another program wrote (adopted bare key) without an id: its sort key
        # is its identity, as foreign_event reads it; with an id of another type (a
        # number), its text, as foreign_identity reads it.
        if stored is None:
            event_id = item[sk][kind]
        else:
            event_id = stored["S"] if "S" in stored else str(plain_value(stored))
        try:
            return codec.order_key(item[sk][kind], event_id)
        except InvalidInputError as exc:
            # A sort key the codec cannot order (e.g. not whole milliseconds): the table
            # does not hold what the schema says, as foreign_event reports it; not bad input.
            pk = item.get(schema.partition_key, {}).get("S")
            raise TableSchemaError(
                [
                    f"the item {schema.partition_key}={pk!r} {sk}={item[sk][kind]!r} cannot "
                    f"be ordered under codec {codec.name}: {exc.message}"  # names its field
                ]
            ) from exc

    return order_of


def foreign_identity(
    item: dict[str, Any], schema: TableSchema = DEFAULT_SCHEMA
) -> tuple[datetime, str]:
    """Return the time and id of an item another program wrote (see :func:`foreign_event`).

    Parameters
    ----------
    item : dict of str to Any
        The item in DynamoDB's typed JSON; its sort key, and its ``id`` / ``ts``
        attributes where the codec's key lacks one.
    schema : TableSchema
        The table's key schema.

    Returns
    -------
    tuple of (datetime, str)
        The event time (UTC) and id.

    Raises
    ------
    InvalidInputError
        Field ``sort_key`` if the sort key is not in the codec's form, or the ``ts``
        attribute's name if no time can be found.
    """
    sk = item[schema.sort_key][schema.sort_key_type]
    codec = schema.sort_key_codec
    ts, event_id = codec.decode(sk)
    if event_id is None:
        stored_id = item.get(schema.id_attr)
        event_id = str(plain_value(stored_id)) if stored_id is not None else sk
    if ts is None:
        stored_ts = item.get(schema.ts_attr)
        if stored_ts is None:
            raise InvalidInputError(
                schema.ts_attr, f"is missing, and the sort key (codec {codec.name}) holds no time"
            )
        ts = parse_ts(plain_value(stored_ts), schema.ts_attr, min_epoch_ms=None)
    return ts, event_id


def foreign_event(item: dict[str, Any], schema: TableSchema = DEFAULT_SCHEMA) -> dict[str, Any]:
    """Return the event of an item another program wrote under an adopted key's bare key.

    Such an item has the table's primary key but none of dynashard's own attributes
    (no ``key``, :attr:`TableSchema.key_attr`): its logical key is its partition key,
    its time and id come from its sort key through the table's codec
    (:meth:`~dynashard.core.schema.SortKeyCodec.decode`), falling back to the schema's
    ``ts`` / ``id`` attributes where the codec's key does not hold them
    (``epoch_ms_number`` holds no id: the sort key's digits stand in; ``plain_string``
    holds no time: the item needs a ``ts``), and its ``data`` is every attribute other
    than the table's and the GSI's key attributes: the item's own shape, unchanged.

    Parameters
    ----------
    item : dict of str to Any
        The item in DynamoDB's typed JSON.
    schema : TableSchema
        The table's key schema.

    Returns
    -------
    dict of str to Any
        ``{"key", "id", "ts", "data"}``, ``ts`` in dynashard's fixed-width UTC ISO-8601.

    Raises
    ------
    TableSchemaError
        If the item's sort key is not in the codec's form, or no time can be found for
        it: the table does not hold what the schema says, and a read must not guess.

    Examples
    --------
    >>> from dynashard.core.schema import ISO_MS_THEN_ID, TableSchema
    >>> mine = TableSchema(sort_key_codec=ISO_MS_THEN_ID, gsi_name=None)
    >>> foreign_event({"PK": {"S": "OPS_LOG"},
    ...                "SK": {"S": "2026-06-22T01:00:00.123Z#threat_detector"},
    ...                "latencyMs": {"N": "340"}}, mine)["data"]
    {'latencyMs': 340}
    """
    pk = item[schema.partition_key]["S"]
    try:
        ts, event_id = foreign_identity(item, schema)
    except InvalidInputError as exc:
        raise _unreadable(item, schema, exc) from exc
    keys = {schema.partition_key, schema.sort_key}
    if schema.gsi_name is not None:
        keys |= {schema.gsi_partition_key, schema.gsi_sort_key}
    return {
        "key": pk,
        "id": event_id,
        "ts": format_ts(ts),
        "data": {k: plain_value(v) for k, v in item.items() if k not in keys},
    }


def item_to_event(
    item: dict[str, Any], schema: TableSchema = DEFAULT_SCHEMA, *, foreign: bool = False
) -> dict[str, Any]:
    """Return the event a stored data item (or its GSI1 projection) stands for.

    Both read paths, the base-table fan-out (:class:`ShardedReader`) and the GSI1
    bucket fan-out (:mod:`dynashard.dynamodb.gsi_reader`), return their items through this.

    Parameters
    ----------
    item : dict of str to Any
        The item in DynamoDB's typed JSON (``{"key": {"S": ...}, ...}``) as a Query
        returns it; it must hold the key, id and timestamp attributes.
    schema : TableSchema
        Its table's schema: the attribute names, and whether the payload is the
        ``data`` map (``nested``) or every attribute not of the schema's own (``flat``).
    foreign : bool
        The item was written by another program under an adopted key's bare partition
        key (:func:`is_dynashard_item` said no): read in its own shape
        (:func:`foreign_event`) even when it has an attribute named like ``key``.

    Returns
    -------
    dict of str to Any
        ``{"key", "id", "ts", "data"}``; numbers in ``data`` become ``int`` or
        ``float`` (:func:`dynashard.model.plain_value`), a missing ``data`` becomes
        ``{}``. Other attributes (shard key, sort key, GSI1 keys) are not decoded.

    An item without the key attribute was written by another program under an adopted
    key's bare partition key (only such items pass :func:`owns_item` without it): it is
    read by :func:`foreign_event`, as is every item passed with ``foreign``.

    Raises
    ------
    KeyError
        If an item with the key attribute lacks the id or timestamp attribute.
    TableSchemaError
        If a foreign item cannot be read under the schema (:func:`foreign_event`).

    Examples
    --------
    >>> item_to_event({"key": {"S": "K"}, "id": {"S": "e1"}, "ts": {"S": "t"},
    ...                "data": {"M": {"n": {"N": "2"}}}})
    {'key': 'K', 'id': 'e1', 'ts': 't', 'data': {'n': 2}}
    """
    if foreign or schema.key_attr not in item:
        return foreign_event(item, schema)
    if schema is not DEFAULT_SCHEMA and not schema.is_default:
        if schema.payload is Payload.FLAT:
            reserved = schema.reserved
            payload = {k: plain_value(v) for k, v in item.items() if k not in reserved}
        else:
            nested = item.get(schema.data_attr)
            payload = {} if nested is None else plain_value(nested)
        return {
            "key": plain_value(item[schema.key_attr]),
            "id": plain_value(item[schema.id_attr]),
            "ts": plain_value(item[schema.ts_attr]),
            "data": payload,
        }
    data = item.get(names.ATTR_DATA)
    return {
        "key": plain_value(item[names.ATTR_KEY]),
        "id": plain_value(item[names.ATTR_ID]),
        "ts": plain_value(item[names.ATTR_TS]),
        "data": {} if data is None else plain_value(data),
    }
