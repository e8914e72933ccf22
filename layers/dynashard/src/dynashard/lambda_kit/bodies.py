"""The bodies of the dynashard HTTP API: what the ingest and query functions accept and answer.

One REST API, served by two functions (ingest: ``POST /events``, ``POST /counters/{name}``,
``PUT /index/{key}/layout``, ``POST /index/{key}``; query: ``GET /events``,
``GET /counters/{name}``, ``GET /shards/{key}``, ``GET /index/{key}``). Their
Powertools resolvers validate requests with these models and document responses with
them; ``functions/openapi.py`` merges both documents. The error body of every route is
:class:`dynashard.lambda_kit.rest.ErrorResponse`.

The bodies of the ordered-index routes are parsed here (:func:`parse_body`), not by
Powertools, so that bad input is a 400 naming the field (``items[3].value``), as every
other broken dynashard rule is; :data:`REQUEST_MODELS` lets the OpenAPI document
describe them all the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    StrictStr,
    Tag,
    ValidationError,
    field_validator,
)

from dynashard.core.keys import MAX_SHARD_COUNT
from dynashard.dynamodb.counters import MAX_COUNTER_VALUE
from dynashard.errors import InvalidInputError
from dynashard.model import MAX_EVENTS_PER_REQUEST, Event, loads, to_dynamodb_document

if TYPE_CHECKING:
    from dynashard.core.ordered import OrderedLayout
    from dynashard.dynamodb.ordered_index import OrderedIndex, OrderedItem, OrderedPage
    from dynashard.dynamodb.reader import Page
    from dynashard.lambda_kit.ingest import OutcomeLike

M = TypeVar("M", bound=BaseModel)

# Every model here is built with ``defer_build=True``: pydantic makes its validator and
# serializer on first use, not at import, so a function builds only the models its
# requests use (the ingest function's SQS and Kinesis handlers none; the query
# function's ``GET /events`` two of the eighteen). Validation is the same.

#: Most entries of one ``POST /index/{key}`` (as ``POST /events``).
MAX_ORDERED_ITEMS_PER_REQUEST: Final = MAX_EVENTS_PER_REQUEST
#: Most values of one layout sample: 100,000 tail-number-sized values stay well under
#: Lambda's 6 MB synchronous request payload (Lambda quotas).
MAX_SAMPLE_VALUES: Final = 100_000


# --- ingest: requests -----------------------------------------------------------------------
class EventBatch(BaseModel):
    """Body of ``POST /events`` carrying several events.

    Attributes
    ----------
    events : list of Event
        1 to ``MAX_EVENTS_PER_REQUEST`` (100) events.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    events: list[Event] = Field(min_length=1, max_length=MAX_EVENTS_PER_REQUEST)


def _body_kind(value: Any) -> str:
    # A body with "events" is a batch; anything else is validated as one event, so a
    # validation error names the fields of the shape the client meant.
    return "batch" if isinstance(value, Mapping) and "events" in value else "event"


#: Body of ``POST /events``: one :class:`~dynashard.Event`, or an :class:`EventBatch`.
EventsBody = Annotated[
    Annotated[Event, Tag("event")] | Annotated[EventBatch, Tag("batch")],
    Discriminator(_body_kind),
]


def integral_number(value: Any) -> Any:
    """Return an integral JSON number (``250.0``, ``2.5E+2``) as an int; anything else as is.

    JSON Schema's ``integer`` takes a number with a zero fraction. Bodies are parsed
    with ``parse_float=Decimal`` (:func:`dynashard.model.loads`), so such a number
    arrives as an exact ``Decimal`` (any size); a float (a Python caller's) holds
    integers exactly up to 2**53 only.

    Examples
    --------
    >>> from decimal import Decimal
    >>> integral_number(Decimal("2.5E+2")), integral_number(Decimal("2.5")), integral_number(4.0)
    (250, Decimal('2.5'), 4)
    """
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    return value


class CounterIncrement(BaseModel):
    """Body of ``POST /counters/{name}``.

    Attributes
    ----------
    by : int
        Amount to add; negative subtracts; never 0 (JSON integers only); at most 38
        digits (the precision of a DynamoDB number).
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    @field_validator("by", mode="before")
    @classmethod
    def _integral(cls, value: Any) -> Any:
        # JSON Schema's integer takes 250.0 too.
        return integral_number(value)

    # Bounds as exclusive 10**38 (the same integers): JSON tools compare numbers as
    # floats, and 10**38 - 1 as a float is 1e38.
    by: StrictInt = Field(
        gt=-(MAX_COUNTER_VALUE + 1),
        lt=MAX_COUNTER_VALUE + 1,
        description="Not 0; at most 38 digits, the precision of a DynamoDB number",
        json_schema_extra={"not": {"const": 0}},
    )

    @field_validator("by")
    @classmethod
    def _not_zero(cls, value: int) -> int:
        if value == 0:
            raise ValueError("must not be 0")
        return value


# --- ingest: responses ----------------------------------------------------------------------
class EventResult(BaseModel):
    """Outcome of one event of ``POST /events``."""

    model_config = ConfigDict(defer_build=True)

    id: str
    key: str
    ok: bool
    error: str | None = None


class FailedEvent(BaseModel):
    """An event that was not written: send it again (``failed``) or fix it (``rejected``)."""

    model_config = ConfigDict(defer_build=True)

    id: str
    key: str
    error: str


class PostEventsResponse(BaseModel):
    """Body of a ``POST /events`` answer (200, 400 and 503 alike).

    Attributes
    ----------
    written : int
        Events durable in the table.
    failed : list of FailedEvent
        Events not written for now (throttling, an outage): send them again.
    rejected : list of FailedEvent
        Events that can never be written as they are (over DynamoDB's 400 KB item
        limit, without their ``calculated`` attribute ...): do not send them again.
    results : list of EventResult
        One per event of the request, in order.
    message : str or None
        What was wrong with the first rejected event, naming its field (``events[3].data:
        ... 400 KB``); None when nothing was rejected.
    field : str or None
        That event's offending field, as the client sent it, e.g. ``events[3].data``.
    """

    model_config = ConfigDict(defer_build=True)

    written: int
    failed: list[FailedEvent]
    rejected: list[FailedEvent] = Field(
        default_factory=list, description="Events that can never be written as they are"
    )
    results: list[EventResult]
    message: str | None = Field(None, description="What was wrong with the first rejected event")
    field: str | None = Field(None, description="The first rejected event's offending field")

    @classmethod
    def from_outcomes(
        cls, outcomes: Iterable[OutcomeLike], *, batch: bool = False
    ) -> PostEventsResponse:
        """Build the answer from the bulk write's outcomes.

        Parameters
        ----------
        outcomes : iterable of OutcomeLike
            One :class:`~dynashard.WriteOutcome` per event of the request, same order.
        batch : bool
            Whether the request was ``{"events": [...]}``: fields are then named
            ``events[i].<field>``.

        Returns
        -------
        PostEventsResponse
            ``results`` one per event (``error`` only when not written), ``failed`` the
            events to send again (``error`` defaults to ``not written``), ``rejected``
            the events refused for good, ``written`` the count of the others, and
            ``message``/``field`` naming the first rejected event's fault.
        """
        outcomes = list(outcomes)
        results = [
            EventResult(id=o.event_id, key=o.key, ok=o.ok, error=None if o.ok else o.error)
            for o in outcomes
        ]
        failed: list[FailedEvent] = []
        rejected: list[FailedEvent] = []
        message = field = None
        for index, o in enumerate(outcomes):
            if o.ok:
                continue
            entry = FailedEvent(id=o.event_id, key=o.key, error=o.error or "not written")
            if not o.permanent:
                failed.append(entry)
                continue
            rejected.append(entry)
            if message is None:
                field, message = _rejection(o.field, o.error, f"events[{index}]" if batch else "")
        written = len(results) - len(failed) - len(rejected)
        return cls(
            written=written,
            failed=failed,
            rejected=rejected,
            results=results,
            message=message,
            field=field,
        )


def _rejection(field: str | None, error: str | None, prefix: str) -> tuple[str, str]:
    """Name a rejected event's field as the client sent it, and say what was wrong."""
    detail = (error or "refused").split(": ", 1)[-1]  # drop the exception's name
    if field and detail.startswith(f"{field}: "):
        detail = detail.removeprefix(f"{field}: ")
    name = ".".join(part for part in (prefix, field or "") if part) or "body"
    return name, f"{name}: {detail}"


class CounterResponse(BaseModel):
    """Body of a ``POST /counters/{name}`` answer.

    Attributes
    ----------
    name : str
        The counter, decoded.
    by : int
        The increment asked for.
    applied : bool
        True when this request added ``by``; False when its ``Idempotency-Key`` had
        already been applied (a retry), so nothing was added this time.
    """

    model_config = ConfigDict(defer_build=True)

    name: str
    by: int
    applied: bool = Field(description="False when the Idempotency-Key was already applied")


# --- query: responses -----------------------------------------------------------------------
class ReadPlanBody(BaseModel):
    """The read plan of ``GET /events`` (:class:`dynashard.planning.reads.ReadPlan`)."""

    model_config = ConfigDict(defer_build=True)

    path: Literal["base", "gsi1"] = Field(
        description="base: one strongly consistent query per shard; gsi1: one eventually "
        "consistent query per time bucket and GSI1 shard"
    )
    requests: int = Field(description="Query requests planned for the page (first round)")
    expected_rcu: float = Field(description="Read capacity expected for the page, RCU")
    reason: str = Field(description="Why this path, with the cost of the other")


class EventItem(BaseModel):
    """One event of a page of ``GET /events``, as it was written."""

    model_config = ConfigDict(defer_build=True, extra="allow")

    key: str = Field(description="The logical key (a family's bucket key for a bucketed family)")
    id: str = Field(description="The event's id, unique within the key")
    ts: datetime = Field(
        description="Event time, UTC, fixed-width ISO-8601 with microseconds "
        "(2013-01-01T10:15:00.000000Z)"
    )
    data: dict[str, Any] = Field(
        description="The payload as written; numbers exact (integral as integers)"
    )


class OrderedEntry(BaseModel):
    """One entry of a page of ``GET /index/{key}``."""

    model_config = ConfigDict(defer_build=True)

    id: str = Field(description="Unique within the key")
    value: str = Field(description="The value the index orders by (compared normalised)")
    shard: int = Field(description="The range shard that holds it")
    data: dict[str, Any] = Field(description="The entry's payload ({} when none)")


class EventsPage(BaseModel):
    """Body of ``GET /events``."""

    model_config = ConfigDict(defer_build=True, extra="allow")

    items: list[EventItem] = Field(description="Events in sort-key order")
    cursor: str | None = Field(
        description="Pass back as `cursor` for the next page; null at the end"
    )
    shards_queried: int = Field(
        description="Shards (physical keys) this page queried: every shard the key has "
        "had for a full read, one per shard count at most for a targeted read (attr)"
    )
    missing_shards: list[str] | None = Field(
        None, description="Only with partial=true: physical keys whose query failed"
    )
    plan: ReadPlanBody | None = Field(
        None, description="The path the read took (base table or GSI1) and why"
    )


#: Descriptions of ``GET /events``'s parameters in the OpenAPI document.
KEY_DOC: Final = (
    "Logical key, e.g. DEPARTURES#JFK. A time-bucketed key family (DYNASHARD_BUCKETED_KEYS, "
    "e.g. OPS_LOG by day) is read across the buckets of [from, to), both required, at most "
    "1000 buckets; its items carry the family key"
)
ATTR_DOC: Final = (
    "Targeted read of a calculated key: only the events whose shard attribute (e.g. "
    "data.carrier) has this value, from one shard per shard count the key has had"
)
CONSISTENT_DOC: Final = (
    "Strongly consistent read from the base table (default). false lets the planner read "
    "GSI1 when cheaper: eventually consistent, an event written a moment ago may be "
    "missing for a fraction of a second"
)
PATH_DOC: Final = (
    "auto: the planner picks the cheaper of the base table (one query per shard) and GSI1 "
    "(one query per time bucket and GSI1 shard); base or gsi1 force one (gsi1 needs from, "
    "to and consistent=false)"
)


def events_body(page: Page, *, partial: bool) -> dict[str, Any]:
    """Return the body of ``GET /events`` for a page (the shape of :class:`EventsPage`).

    Parameters
    ----------
    page : Page
        The page read.
    partial : bool
        Whether the caller asked for partial results: only then is ``missing_shards``
        in the body (possibly empty).

    Returns
    -------
    dict
        ``{"items", "cursor", "shards_queried", "plan"}`` plus ``missing_shards`` when
        ``partial``.

    Examples
    --------
    >>> from dynashard.dynamodb.reader import Page
    >>> events_body(Page(items=[], cursor=None), partial=True)
    {'items': [], 'cursor': None, 'shards_queried': 0, 'plan': None, 'missing_shards': []}
    """
    body: dict[str, Any] = {
        "items": page.items,
        "cursor": page.cursor,
        "shards_queried": page.shards_queried,
        "plan": None if page.plan is None else page.plan.to_json(),
    }
    if partial:
        body["missing_shards"] = list(page.missing_shards)
    return body


class CounterBody(BaseModel):
    """Body of ``GET /counters/{name}``."""

    model_config = ConfigDict(defer_build=True)

    name: str
    value: int
    shards: int


class ShardHistoryEntry(BaseModel):
    """One shard count that was in force."""

    model_config = ConfigDict(defer_build=True)

    since: int = Field(description="Epoch seconds")
    count: int


class ShardsBody(BaseModel):
    """Body of ``GET /shards/{key}``."""

    model_config = ConfigDict(defer_build=True)

    key: str
    number_of_shards: int
    last_updated: int = Field(description="Epoch seconds of the last change")
    shard_history: list[ShardHistoryEntry] = Field(
        description="Every shard count in force, oldest first (the table's shard_history)"
    )
    strategy: str = Field(description="How writers pick a shard: random, calculated or ordered")
    shard_attribute: str | None = Field(
        default=None, description="The data attribute a calculated key shards by"
    )
    adopted: bool = Field(
        default=False,
        description="True when items under the bare partition key are read too (adoption)",
    )
    max_shards: int | None = Field(
        default=None,
        description="The key's own cap on number_of_shards; null: only the stack's max_shards",
    )


# --- shard administration (ingest: PUT /shards/{key}/...) -----------------------------------
class StrategyBody(BaseModel):
    """Body of ``PUT /shards/{key}/strategy``.

    Attributes
    ----------
    strategy : {"random", "calculated"}
        How writers pick the key's shard.
    attribute : str or None
        For ``calculated``: the ``data`` attribute to shard by (e.g. ``carrier``),
        1 to 255 characters; omitted for ``random``.
    force : bool
        Change a key that already has another strategy (its data stays where the old
        strategy put it; targeted reads will miss it).
    initial_shards : int or None
        N of the key if this request creates it, 1..1000; a stored key keeps its N.
    """

    # The schema says what the library checks: an attribute with calculated, none (absent
    # or null) with random (a schema-valid body is never refused for its shape, and a
    # refused one never schema-valid: schemathesis found {"attribute": null} with random
    # accepted while the schema refused it, issue 39).
    model_config = ConfigDict(
        defer_build=True,
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {
                    "properties": {
                        "strategy": {"const": "random"},
                        "attribute": {"type": "null"},
                    },
                },
                {
                    "properties": {
                        "strategy": {"const": "calculated"},
                        "attribute": {"type": "string"},
                    },
                    "required": ["attribute"],
                },
            ]
        },
    )

    strategy: Literal["random", "calculated"]
    attribute: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="calculated only: the data attribute to shard by, e.g. carrier",
    )
    force: bool = Field(
        default=False, description="Change a key that already has another strategy (409 without)"
    )
    initial_shards: int | None = Field(
        default=None, ge=1, le=MAX_SHARD_COUNT, description="N if this request creates the key"
    )


class MaxShardsBody(BaseModel):
    """Body of ``PUT /shards/{key}/max-shards``.

    Attributes
    ----------
    max_shards : int or None
        The key's own cap on N, 1..1000 and not below its N in force; null removes it.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    @field_validator("max_shards", mode="before")
    @classmethod
    def _integral(cls, value: Any) -> Any:
        # JSON Schema's integer takes 4.0 too (as IncrementBody's ``by``).
        return integral_number(value)

    max_shards: StrictInt | None = Field(
        ge=1, le=MAX_SHARD_COUNT, description="1..1000, not below the key's N; null removes it"
    )


# --- ordered index (range shards) --------------------------------------------------------
def parse_body(model: type[M], raw: str | bytes | None) -> M:
    """Parse a JSON request body into ``model``; bad input is an ``InvalidInputError``.

    Parameters
    ----------
    model : type of BaseModel
        The body model, e.g. :class:`OrderedPutBody`.
    raw : str, bytes or None
        The request body as sent.

    Returns
    -------
    BaseModel
        The validated body.

    Raises
    ------
    InvalidInputError
        Field ``body`` when the body is missing or not JSON; else the first offending
        field as the client spelt it, e.g. ``items[3].value`` (an HTTP 400). Numbers
        with a fraction or exponent are parsed as ``Decimal`` (:func:`dynashard.model.loads`):
        one DynamoDB cannot keep exactly is refused naming its path.

    Examples
    --------
    >>> parse_body(OrderedPutBody, '{"items": [{"id": "a"}]}')
    Traceback (most recent call last):
    ...
    dynashard.errors.InvalidInputError: items[0].value: Field required
    """
    if raw is None or not raw.strip():
        raise InvalidInputError("body", "a JSON object is required")
    try:
        parsed = loads(raw)
    except ValueError as exc:
        raise InvalidInputError("body", f"not JSON: {exc}") from exc
    try:
        return model.model_validate(parsed)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        raise InvalidInputError(field_name(first["loc"]), message) from exc


class OrderedLayoutBody(BaseModel):
    """Body of ``PUT /index/{key}/layout``: a sample and N, or the boundaries themselves.

    Attributes
    ----------
    shards : int, optional
        N, ``1..1000`` range shards (:data:`~dynashard.core.keys.MAX_SHARD_COUNT`); with
        ``sample``.
    sample : list of str, optional
        Raw values the boundaries are cut from (equal counts per range shard), at least
        N distinct after normalisation, at most 100,000; hot values get sub-shards.
    boundaries : list of str, optional
        N - 1 normalised, strictly increasing boundaries; one physical key per range
        shard. Excludes ``shards`` and ``sample``.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    shards: StrictInt | None = Field(None, ge=1, le=MAX_SHARD_COUNT, description="N, with sample")
    sample: list[StrictStr] | None = Field(
        None,
        min_length=1,
        max_length=MAX_SAMPLE_VALUES,
        description="Raw values to cut N equal-count ranges from",
    )
    boundaries: list[StrictStr] | None = Field(
        None,
        max_length=MAX_SHARD_COUNT - 1,
        description="N - 1 normalised, strictly increasing boundaries (without shards/sample)",
    )

    def to_layout(self) -> OrderedLayout:
        """Return the layout this body asks for.

        Returns
        -------
        OrderedLayout
            From the sample (:meth:`OrderedLayout.from_sample`) or the boundaries
            (:meth:`OrderedLayout.uniform`).

        Raises
        ------
        InvalidInputError
            Naming ``boundaries``, ``shards`` or ``sample``: both forms or neither, a
            sample with fewer than N distinct values, invalid boundaries.
        """
        from dynashard.core.ordered import OrderedLayout

        if self.boundaries is not None:
            if self.shards is not None or self.sample is not None:
                raise InvalidInputError("boundaries", "give boundaries, or shards and sample")
            return OrderedLayout.uniform(self.boundaries)
        if self.sample is None:
            raise InvalidInputError("sample", "required with shards (or give boundaries)")
        if self.shards is None:
            raise InvalidInputError("shards", "required with sample")
        try:
            return OrderedLayout.from_sample(self.sample, self.shards)
        except InvalidInputError as exc:
            if exc.field != "values":
                raise
            raise InvalidInputError("sample", exc.message.removeprefix("values: ")) from exc


class OrderedLayoutResponse(BaseModel):
    """Body of a ``PUT /index/{key}/layout`` answer: the layout in force."""

    model_config = ConfigDict(defer_build=True)

    key: str
    shards: int = Field(description="N, range shards")
    boundaries: list[str] = Field(description="Range shard i holds boundaries[i-1] <= v < [i]")
    sub_shards: list[int] = Field(description="Physical keys per range shard")

    @classmethod
    def of(cls, key: str, layout: OrderedLayout) -> OrderedLayoutResponse:
        """Describe ``layout`` of ``key``.

        Parameters
        ----------
        key : str
            Logical key.
        layout : OrderedLayout
            Its layout.

        Returns
        -------
        OrderedLayoutResponse
            ``{"key", "shards", "boundaries", "sub_shards"}``.
        """
        return cls(
            key=key,
            shards=layout.shard_count,
            boundaries=list(layout.boundaries),
            sub_shards=list(layout.sub_shards),
        )


class OrderedItemBody(BaseModel):
    """One entry of ``POST /index/{key}``.

    Attributes
    ----------
    id : str
        Unique within the key; the same id and value again overwrites.
    value : str
        The value the index orders by (compared normalised: case- and accent-folded).
    data : dict
        Payload (JSON object).
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    id: StrictStr = Field(min_length=1)
    value: StrictStr = Field(min_length=1)
    data: dict[str, Any] = Field(default_factory=dict)

    @field_validator("data")
    @classmethod
    def _data_fits(cls, value: dict[str, Any]) -> dict[str, Any]:
        # DynamoDB's nesting and number limits, naming the path (a 400, not a 500).
        to_dynamodb_document(value, "data")
        return value


class OrderedPutBody(BaseModel):
    """Body of ``POST /index/{key}``: 1 to 100 entries with distinct ids."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    items: list[OrderedItemBody] = Field(min_length=1, max_length=MAX_ORDERED_ITEMS_PER_REQUEST)

    def to_items(self) -> list[OrderedItem]:
        """Return the entries as :class:`~dynashard.dynamodb.ordered_index.OrderedItem`.

        Returns
        -------
        list of OrderedItem
            In request order.

        Raises
        ------
        InvalidInputError
            Field ``items[i].id`` when an id repeats an earlier one.
        """
        from dynashard.dynamodb.ordered_index import OrderedItem

        seen: set[str] = set()
        for index, item in enumerate(self.items):
            if item.id in seen:
                raise InvalidInputError(f"items[{index}].id", f"{item.id!r} repeats an earlier id")
            seen.add(item.id)
        return [OrderedItem(item.id, item.value, item.data) for item in self.items]


class OrderedWritten(BaseModel):
    """One entry written by ``POST /index/{key}``."""

    model_config = ConfigDict(defer_build=True)

    id: str
    value: str
    shard: int = Field(description="Range shard the entry went to")


class OrderedPutResponse(BaseModel):
    """Body of a ``POST /index/{key}`` answer: every entry is durable."""

    model_config = ConfigDict(defer_build=True)

    key: str
    written: int
    items: list[OrderedWritten]


def write_ordered(index: OrderedIndex, body: OrderedPutBody) -> OrderedPutResponse:
    """Write the entries of a ``POST /index/{key}`` through ``index`` and describe them.

    Every entry is checked (key and item limits) before anything is written, so a bad
    entry writes nothing. Writing the same ids and values again is idempotent.

    Parameters
    ----------
    index : OrderedIndex
        The key's index.
    body : OrderedPutBody
        The parsed body.

    Returns
    -------
    OrderedPutResponse
        ``{"key", "written", "items": [{"id", "value", "shard"}]}``.

    Raises
    ------
    InvalidInputError
        Field ``key`` when the key has no layout; ``items[i].id`` for a repeated id;
        ``items[i].<field>`` for an entry over a DynamoDB limit (1,024-byte sort key,
        400 KB item).
    WriteFailedError
        If a batch could not be written after the retries (some earlier batches may
        be; sending the request again is safe).
    """
    items = body.to_items()
    layout = index.layout()
    for position, item in enumerate(items):
        try:
            index.build_item(item)
        except InvalidInputError as exc:
            detail = exc.message.removeprefix(f"{exc.field}: ")
            raise InvalidInputError(f"items[{position}].{exc.field}", detail) from exc
    written = index.put(items)
    return OrderedPutResponse(
        key=index.key,
        written=written,
        items=[
            OrderedWritten(id=i.id, value=i.value, shard=layout.shard_of(i.value)) for i in items
        ],
    )


class OrderedPageBody(BaseModel):
    """Body of ``GET /index/{key}``: one page in normalised-value order."""

    model_config = ConfigDict(defer_build=True)

    key: str
    items: list[OrderedEntry] = Field(description="Entries in value order (ties by id)")
    cursor: str | None = Field(
        description="Pass back as `cursor` (same prefix/from/to) for the next page; null at the end"
    )
    shards_in_range: list[int] = Field(
        description="Range shards whose ranges intersect the query (all N for a full listing)"
    )
    shards_queried: list[int] = Field(description="Range shards this page read")
    queries: int = Field(description="DynamoDB Query calls this page made")

    @classmethod
    def of(cls, key: str, page: OrderedPage) -> OrderedPageBody:
        """Describe one :class:`~dynashard.dynamodb.ordered_index.OrderedPage` of ``key``.

        Parameters
        ----------
        key : str
            Logical key.
        page : OrderedPage
            The page.

        Returns
        -------
        OrderedPageBody
            The page with its key.
        """
        return cls(
            key=key,
            items=[OrderedEntry.model_validate(item) for item in page.items],
            cursor=page.cursor,
            shards_in_range=page.shards_in_range,
            shards_queried=page.shards_queried,
            queries=page.queries,
        )


#: Request bodies parsed by :func:`parse_body`, for the OpenAPI document's components.
REQUEST_MODELS: Final[tuple[type[BaseModel], ...]] = (OrderedLayoutBody, OrderedPutBody)


def request_body_doc(model: type[BaseModel]) -> dict[str, Any]:
    """Return an OpenAPI ``requestBody`` naming ``model`` (one of :data:`REQUEST_MODELS`).

    Parameters
    ----------
    model : type of BaseModel
        The body model.

    Returns
    -------
    dict
        ``{"requestBody": {...}}``, for a route's ``openapi_extensions``.
    """
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}


def request_schemas() -> dict[str, Any]:
    """Return the JSON schemas of :data:`REQUEST_MODELS` (and their parts) as components.

    Returns
    -------
    dict
        Schema name -> JSON schema, refs under ``#/components/schemas/``.
    """
    schemas: dict[str, Any] = {}
    for model in REQUEST_MODELS:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    return schemas


__all__ = [
    "MAX_ORDERED_ITEMS_PER_REQUEST",
    "MAX_SAMPLE_VALUES",
    "REQUEST_MODELS",
    "CounterBody",
    "CounterIncrement",
    "CounterResponse",
    "EventBatch",
    "EventResult",
    "EventsBody",
    "EventsPage",
    "FailedEvent",
    "OrderedItemBody",
    "OrderedLayoutBody",
    "OrderedLayoutResponse",
    "OrderedPageBody",
    "OrderedPutBody",
    "OrderedPutResponse",
    "OrderedWritten",
    "PostEventsResponse",
    "ReadPlanBody",
    "ShardHistoryEntry",
    "ShardsBody",
    "parse_body",
    "request_body_doc",
    "request_schemas",
    "write_ordered",
]


_SOURCES = ("body", "query", "path", "header", "cookie")


def field_name(loc: Sequence[Any], kind: str | None = None, fallback: str = "body") -> str:
    """Turn a pydantic error location into the field name a client sent.

    Parameters
    ----------
    loc : sequence
        E.g. ``("body", "batch", "events", 3, "ts")`` or ``("query", "limit")``.
    kind : str, optional
        The pydantic error type; ``json_invalid`` names the whole body.
    fallback : str
        Name when the location names nothing more specific.

    Returns
    -------
    str
        E.g. ``events[3].ts`` or ``limit``.
    """
    parts = list(loc)
    if parts and parts[0] in _SOURCES:
        source = parts.pop(0)
        if source == "body" and (kind == "json_invalid" or not parts):
            return "body"
    if parts and parts[0] in ("event", "batch"):  # tags of a discriminated body union
        parts.pop(0)
    name = ""
    for part in parts:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or fallback
