"""The partition emulator's model: DynamoDB's throttling, charged request by request.

:class:`PartitionEmulator` answers every request of the DynamoDB JSON protocol
(``X-Amz-Target: DynamoDB_20120810.<Operation>``) in :meth:`PartitionEmulator.dispatch`:
its capacity units are charged to the partition key values it touches on the table and
on each GSI (:mod:`sandbox.emulator.operations`); a request over a limit is answered with
DynamoDB's own throttling error and never forwarded; the rest is forwarded verbatim (the
original bytes, headers included) to DynamoDB Local and the answer relayed. Only a partly
throttled batch is rewritten: the admitted part is forwarded and the throttled part is
returned in ``UnprocessedItems`` / ``UnprocessedKeys``.

A request it cannot parse or plan (or a PartiQL statement, which it has no plan for)
is still forwarded, so that the client gets DynamoDB Local's own answer, but never
silently: it is counted per operation (:attr:`PartitionEmulator.unparsed`, ``unparsed``
on ``GET /_emulator/metrics``, :func:`take_unparsed` for the whole process) and logged
as a warning, and the test suite fails a test that caused one.

Two transports carry requests to it, and neither is imported here: the HTTP server
(:mod:`sandbox.emulator.server`, aiohttp) and a botocore hook on a client of this
process (:mod:`sandbox.emulator.inprocess`, no second HTTP hop). Each passes a
:data:`Sender` that reaches DynamoDB Local its own way; both share one model, guarded by
:attr:`PartitionEmulator.lock`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

from multidict import CIMultiDict

from dynashard.core.capacity import query_read_units, read_units
from dynashard.core.capacity import wire_item_size as item_size
from sandbox.emulator import metrics as m
from sandbox.emulator.config import EmulatorConfig, OnDemand, Provisioned
from sandbox.emulator.errors import (
    PROVISIONED_THROUGHPUT_EXCEEDED,
    response_headers,
    throttle_message,
    throttling_error_body,
    transaction_canceled_body,
)
from sandbox.emulator.limits import (
    Charge,
    Limiter,
    LimitType,
    Operation,
    Resource,
    ResourceLimit,
    Violation,
)
from sandbox.emulator.operations import (
    ImageCache,
    WritePlan,
    plan_condition_check,
    plan_delete,
    plan_put,
    plan_update,
    query_partition_key,
    read_resource,
)
from sandbox.emulator.schema import (
    TableMeta,
    index_arn,
    key_value_text,
    table_arn,
    table_meta_from_description,
)

#: Prefix of the DynamoDB JSON protocol's ``X-Amz-Target``.
TARGET_PREFIX: Final = "DynamoDB_20120810."
#: Data-plane operations the emulator has no plan for (PartiQL): forwarded uncharged,
#: so counted as unparsed like a request it failed to parse.
UNPLANNED_DATA_OPERATIONS: Final = frozenset(
    {"ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"}
)

_log = logging.getLogger(__name__)
#: Requests every emulator of this process forwarded unparsed, by operation.
_UNPARSED: Counter[str] = Counter()
_UNPARSED_LOCK = threading.Lock()


def take_unparsed() -> dict[str, int]:
    """Return, and reset, the requests any emulator of this process forwarded unparsed.

    A request the emulator cannot parse or plan is forwarded to DynamoDB Local as it
    is: uncharged and never throttled, so a test or a benchmark that sent one measured
    less than it thinks. The test suite calls this after every test and fails one that
    leaves any (tests/conftest.py).

    Returns
    -------
    dict of str to int
        Operation (``PutItem``, ``ExecuteStatement`` ...) -> requests, since the last call.
    """
    with _UNPARSED_LOCK:
        taken = dict(_UNPARSED)
        _UNPARSED.clear()
    return taken


#: Operations after which the table metadata cache is refreshed.
_SCHEMA_CHANGES: Final = frozenset({"CreateTable", "UpdateTable", "DeleteTable"})
#: Request headers not forwarded (hop-by-hop, or recomputed by the client session).
_DROP_HEADERS: Final = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "expect",
        "accept-encoding",
    }
)
#: Response headers relayed from DynamoDB Local.
_RELAY_HEADERS: Final = ("Content-Type", "x-amzn-RequestId", "x-amz-crc32", "Content-Encoding")

Handler = Callable[["_Call", dict[str, Any]], Awaitable["Reply"]]
#: Upstream headers: case-insensitive lookups (aiohttp's ``CIMultiDictProxy``, botocore's
#: HeadersDict).
UpstreamHeaders = Mapping[str, str]
#: Sends one request (headers, body) to DynamoDB Local; returns (status, body, headers).
#: The HTTP server's sender awaits aiohttp (:mod:`sandbox.emulator.server`); the in-process
#: path's sends synchronously (:mod:`sandbox.emulator.inprocess`). Either releases
#: :attr:`PartitionEmulator.lock` while the request is on the wire.
Sender = Callable[[Mapping[str, str], bytes], Awaitable[tuple[int, bytes, UpstreamHeaders]]]


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    """The answer to one DynamoDB request: what the client receives.

    Attributes
    ----------
    status : int
        HTTP status (200, or 400 for a throttling error).
    body : bytes
        The JSON body.
    headers : dict of str to str
        ``Content-Type``, ``x-amzn-RequestId``, ``x-amz-crc32`` (and what else
        DynamoDB Local sent that is relayed).
    """

    status: int
    body: bytes
    headers: dict[str, str]


@dataclasses.dataclass(slots=True)
class _Call:
    """One DynamoDB request in flight."""

    operation: str
    body: bytes
    headers: Mapping[str, str]
    region: str
    send: Sender
    upstream: tuple[int, bytes, UpstreamHeaders] | None = None


class _Passthrough(Exception):
    """Planning could not make sense of the request: forward it untouched."""


class _NoSuchTable(_Passthrough):
    """The request names a table DynamoDB Local does not have: forward it for its error.

    Not counted as unparsed: DynamoDB answers ``ResourceNotFoundException`` and charges
    nothing, which is what the client gets.
    """


def _charges(plans: Iterable[WritePlan]) -> list[Charge]:
    return [c for p in plans for c in p.charges]


class PartitionEmulator:
    """DynamoDB's throttling in front of DynamoDB Local: the model both transports share.

    Parameters
    ----------
    upstream_url : str
        DynamoDB Local's endpoint, e.g. ``http://127.0.0.1:8000``.
    config : EmulatorConfig, optional
        Limits, scale, latency, clock.

    Examples
    --------
    >>> emulator = PartitionEmulator("http://127.0.0.1:8000", EmulatorConfig(scale=0.05))
    >>> emulator.update_limits(scale=0.1).scale
    0.1
    """

    def __init__(self, upstream_url: str, config: EmulatorConfig | None = None) -> None:
        self.upstream_url = upstream_url.rstrip("/") + "/"
        self.config = config or EmulatorConfig()
        self.limiter = Limiter(
            self.config.partition_wcu,
            self.config.partition_rcu,
            self.config.scale,
            self.config.unscaled_tables,
        )
        self.metrics = m.Metrics()
        #: Requests forwarded unparsed (uncharged, unthrottled), by operation; also on
        #: ``GET /_emulator/metrics`` as ``unparsed`` and in :func:`take_unparsed`.
        self.unparsed: Counter[str] = Counter()
        self.images = ImageCache()
        #: Guards the model (buckets, figures, item images, table metadata): held while
        #: a request is charged, released while it is on the wire. Shared by the HTTP
        #: server's event loop and the in-process path's threads.
        self.lock = threading.Lock()
        self._tables: dict[str, TableMeta] = {}
        self._handlers: dict[str, Handler] = {
            "PutItem": self._put_item,
            "UpdateItem": self._update_item,
            "DeleteItem": self._delete_item,
            "BatchWriteItem": self._batch_write_item,
            "TransactWriteItems": self._transact_write_items,
            "GetItem": self._get_item,
            "BatchGetItem": self._batch_get_item,
            "Query": self._query_or_scan,
            "Scan": self._query_or_scan,
            "TransactGetItems": self._transact_get_items,
        }

    # --- in-process API -------------------------------------------------------------
    def update_limits(self, **changes: Any) -> EmulatorConfig:
        """Change the configuration at run time (fields of :class:`EmulatorConfig`).

        Parameters
        ----------
        **changes
            E.g. ``scale=0.1`` or ``table_mode=Provisioned(rcu=50, wcu=20)``.

        Returns
        -------
        EmulatorConfig
            The new configuration. Key buckets restart full.

        Raises
        ------
        TypeError, ValueError
            For an unknown field or an invalid value.
        """
        with self.lock:
            self.config = dataclasses.replace(self.config, **changes)
            self.limiter.unscaled_tables = self.config.unscaled_tables
            self.limiter.configure(
                self.config.partition_wcu, self.config.partition_rcu, self.config.scale
            )
            for meta in self._tables.values():
                self._apply_limits(meta)
            return self.config

    def reset(self) -> None:
        """Refill every bucket, drop all figures, remembered items and table metadata."""
        with self.lock:
            self.limiter.reset()
            self.metrics.reset()
            self.unparsed.clear()
            self.images.clear()
            self._tables.clear()

    def on_demand(self, meta: TableMeta) -> bool:
        """Return whether a table is treated as on-demand.

        Parameters
        ----------
        meta : TableMeta
            The table.

        Returns
        -------
        bool
            From ``config.table_mode``, or the table's own billing mode when None.
        """
        mode = self.config.table_mode
        if mode is None:
            return meta.on_demand
        return isinstance(mode, OnDemand)

    # --- limits ---------------------------------------------------------------------
    def _apply_limits(self, meta: TableMeta) -> None:
        mode = self.config.table_mode
        account = self.config.account_table_units * self.config.scale
        owners: list[tuple[Resource, Any]] = [(Resource(meta.name), meta)]
        owners += [(Resource(meta.name, g.name), g) for g in meta.gsis]
        for resource, owner in owners:
            for op in (Operation.READ, Operation.WRITE):
                reading = op is Operation.READ
                limit: ResourceLimit | None
                if isinstance(mode, Provisioned) or (mode is None and not meta.on_demand):
                    if isinstance(mode, Provisioned):
                        units = mode.rcu if reading else mode.wcu
                    else:
                        units = owner.provisioned_rcu if reading else owner.provisioned_wcu
                    limit = (
                        ResourceLimit(LimitType.PROVISIONED, units, self.config.burst_seconds)
                        if units
                        else None
                    )
                else:
                    if isinstance(mode, OnDemand):
                        most = mode.max_rcu if reading else mode.max_wcu
                    else:
                        most = owner.max_read_units if reading else owner.max_write_units
                    if most is not None and most <= account:
                        limit = ResourceLimit(LimitType.MAX_ON_DEMAND, most)
                    else:
                        limit = ResourceLimit(LimitType.ACCOUNT, account)
                self.limiter.set_resource_limit(resource, op, limit)

    # --- upstream -------------------------------------------------------------------
    @staticmethod
    def forward_headers(headers: Mapping[str, str]) -> CIMultiDict[str]:
        """Return the headers of a client's request to forward to DynamoDB Local.

        Parameters
        ----------
        headers : mapping of str to str
            The request's headers (signature included).

        Returns
        -------
        CIMultiDict
            Without hop-by-hop headers and ``Content-Length`` (the sender sets it for
            the body it sends), with ``Accept-Encoding: identity``.
        """
        out: CIMultiDict[str] = CIMultiDict(
            (k, v) for k, v in headers.items() if k.lower() not in _DROP_HEADERS
        )
        out["Accept-Encoding"] = "identity"
        return out

    async def _forward(self, call: _Call, body: bytes | None = None) -> None:
        call.upstream = await call.send(call.headers, call.body if body is None else body)

    @staticmethod
    def _relay(call: _Call, body: bytes | None = None) -> Reply:
        assert call.upstream is not None
        status, data, headers = call.upstream
        out = {k: headers[k] for k in _RELAY_HEADERS if k in headers}
        if body is not None:
            out.update(response_headers(body, headers.get("x-amzn-RequestId")))
            data = body
        return Reply(status, data, out)

    async def _meta(self, call: _Call, table: str) -> TableMeta:
        meta = self._tables.get(table)
        if meta is not None:
            return meta
        headers = CIMultiDict(call.headers)
        headers["X-Amz-Target"] = TARGET_PREFIX + "DescribeTable"
        status, data, _ = await call.send(headers, json.dumps({"TableName": table}).encode())
        if status == 400 and b"ResourceNotFoundException" in data:
            raise _NoSuchTable(table)
        if status != 200:
            raise _Passthrough(f"DescribeTable {table}: HTTP {status}")
        meta = table_meta_from_description(json.loads(data)["Table"])
        self._tables[table] = meta
        self._apply_limits(meta)
        return meta

    def _forget(self, body: bytes) -> None:
        try:
            table = json.loads(body).get("TableName")
        except (ValueError, AttributeError):
            table = None
        if isinstance(table, str):
            self._tables.pop(table, None)
            if self.config.table_mode is None:
                self.limiter.forget_table(table)
        else:
            self._tables.clear()

    async def dispatch(
        self,
        operation: str,
        body: bytes,
        headers: Mapping[str, str],
        region: str,
        send: Sender,
    ) -> Reply:
        """Charge, throttle or forward one DynamoDB request; the core of both paths.

        The HTTP server (:class:`sandbox.emulator.server.HttpTransport`) and the
        in-process path (:class:`sandbox.emulator.inprocess.InProcessEmulator`) both
        answer every request here, so they share one model: the same limiter, metrics, item images
        and table metadata. The caller holds :attr:`lock`; ``send`` releases it while
        the request is on the wire, as the event loop interleaves requests at an
        ``await``, so figures and buckets are only touched under the lock.

        Parameters
        ----------
        operation : str
            ``PutItem``, ``Query`` ... (from ``X-Amz-Target``; "" when absent).
        body : bytes
            The request's JSON body, as sent by the client.
        headers : mapping of str to str
            Headers to forward to DynamoDB Local (signature included; hop-by-hop
            headers and ``Content-Length`` left out).
        region : str
            Region of the signature, for the ARNs in ``ThrottlingReasons``.
        send : Sender
            Sends a request to DynamoDB Local.

        Returns
        -------
        Reply
            DynamoDB Local's answer relayed, or rewritten (a partly throttled batch),
            or DynamoDB's throttling error (HTTP 400), never forwarded.
        """
        call = _Call(operation, body, headers, region, send)
        handler = self._handlers.get(operation)
        reply: Reply | None = None
        if handler is not None:
            try:
                reply = await handler(call, json.loads(body))
            except _NoSuchTable:
                reply = None
            except (
                _Passthrough,
                ValueError,
                KeyError,
                TypeError,
                AttributeError,
                StopIteration,
            ) as exc:
                self._count_unparsed(operation, f"{type(exc).__name__}: {exc}")
                reply = self._relay(call) if call.upstream is not None else None
        elif operation in UNPLANNED_DATA_OPERATIONS:
            self._count_unparsed(operation, "no plan for this operation")
        if reply is None:
            await self._forward(call)
            if operation in _SCHEMA_CHANGES:
                self._forget(body)
            reply = self._relay(call)
        return reply

    def _count_unparsed(self, operation: str, why: str) -> None:
        """Count and log a request forwarded without being charged or throttled."""
        self.unparsed[operation] += 1
        with _UNPARSED_LOCK:
            _UNPARSED[operation] += 1
        _log.warning(
            "emulator could not parse a %s request (%s): forwarded to DynamoDB Local "
            "uncharged and unthrottled",
            operation,
            why,
        )

    # --- figures --------------------------------------------------------------------
    def _record_consumed(self, op: Operation, charges: Iterable[Charge], now: float) -> None:
        metric = m.CONSUMED_WCU if op is Operation.WRITE else m.CONSUMED_RCU
        for charge in charges:
            self.metrics.add(metric, charge.resource, charge.units, now)
            if charge.key is not None:
                self.metrics.record_key(op, charge.resource, charge.key, now, units=charge.units)

    def _record_throttled(
        self, op: Operation, charges: Iterable[Charge], violations: list[Violation], now: float
    ) -> None:
        """Count one throttled item operation: events per violated resource, keys."""
        generic = m.WRITE_THROTTLE_EVENTS if op is Operation.WRITE else m.READ_THROTTLE_EVENTS
        for violation in {(v.resource, v.limit): v for v in violations}.values():
            self.metrics.add(
                m.THROTTLE_EVENT_METRICS[(op, violation.limit)], violation.resource, 1, now
            )
            self.metrics.add(generic, violation.resource, 1, now)
            self.metrics.add_throttle_reason(violation.reason)
        for charge in charges:
            if charge.key is not None:
                self.metrics.record_key(op, charge.resource, charge.key, now, throttled=True)

    def _throttle_response(self, call: _Call, violations: list[Violation]) -> Reply:
        first = violations[0]
        meta = self._tables[first.resource.table]
        on_demand = self.on_demand(meta)
        code = self.config.on_demand_error if on_demand else PROVISIONED_THROUGHPUT_EXCEEDED
        message = throttle_message(on_demand=on_demand, index=first.resource.index is not None)
        reasons: dict[tuple[str, str], None] = {}
        for v in violations:
            reasons[(v.reason, self._arn(v.resource, call.region))] = None
        self.metrics.add(m.THROTTLED_REQUESTS, Resource(first.resource.table), 1, self._now())
        body = throttling_error_body(code, message, list(reasons))
        return Reply(400, body, response_headers(body))

    def _arn(self, resource: Resource, region: str) -> str:
        if resource.index is None:
            return table_arn(resource.table, region, self.config.account_id)
        return index_arn(resource.table, resource.index, region, self.config.account_id)

    def _now(self) -> float:
        return self.config.clock()

    def _cancellation_code(self, table: str) -> str:
        meta = self._tables[table]
        return "ThrottlingError" if self.on_demand(meta) else "ProvisionedThroughputExceeded"

    async def _admit_and_forward(
        self,
        call: _Call,
        op: Operation,
        charges: list[Charge],
        transaction: list[WritePlan] | None = None,
    ) -> Reply | None:
        """Charge a whole request and forward it; return the refusal when it is throttled.

        A throttled ``transaction`` (its plans) is answered with
        ``TransactionCanceledException``, any other request with the throttling error.
        """
        now = self._now()
        violations = self.limiter.admit(op, charges, now)
        if violations:
            if transaction is not None:
                return self._transaction_canceled(op, transaction, violations, now)
            self._record_throttled(op, charges, violations, now)
            return self._throttle_response(call, violations)
        self._record_consumed(op, charges, now)
        await self._forward(call)
        return None

    # --- writes ---------------------------------------------------------------------
    async def _single_write(self, call: _Call, plan: WritePlan) -> Reply:
        refused = await self._admit_and_forward(call, Operation.WRITE, plan.charges)
        if refused is not None:
            return refused
        if call.upstream is not None and call.upstream[0] == 200:
            self.images.put(plan.cache_key, plan.image_after)
        return self._relay(call)

    async def _put_item(self, call: _Call, req: dict[str, Any]) -> Reply:
        meta = await self._meta(call, req["TableName"])
        return await self._single_write(call, plan_put(meta, req["Item"], self.images))

    async def _update_item(self, call: _Call, req: dict[str, Any]) -> Reply:
        meta = await self._meta(call, req["TableName"])
        return await self._single_write(call, plan_update(meta, req, self.images))

    async def _delete_item(self, call: _Call, req: dict[str, Any]) -> Reply:
        meta = await self._meta(call, req["TableName"])
        return await self._single_write(call, plan_delete(meta, req["Key"], self.images))

    async def _batch_write_item(self, call: _Call, req: dict[str, Any]) -> Reply:
        metas = {t: await self._meta(call, t) for t in req["RequestItems"]}
        now = self._now()
        admitted: dict[str, list[Any]] = {}
        unprocessed: dict[str, list[Any]] = {}
        plans: list[WritePlan] = []
        violations: list[Violation] = []
        for table, requests in req["RequestItems"].items():
            for item_request in requests:
                if "PutRequest" in item_request:
                    plan = plan_put(metas[table], item_request["PutRequest"]["Item"], self.images)
                else:
                    key = item_request["DeleteRequest"]["Key"]
                    plan = plan_delete(metas[table], key, self.images)
                found = self.limiter.admit(Operation.WRITE, plan.charges, now)
                if found:
                    violations += found
                    self._record_throttled(Operation.WRITE, plan.charges, found, now)
                    unprocessed.setdefault(table, []).append(item_request)
                else:
                    self._record_consumed(Operation.WRITE, plan.charges, now)
                    admitted.setdefault(table, []).append(item_request)
                    plans.append(plan)
        if not admitted and violations:
            return self._throttle_response(call, violations)
        if not unprocessed:
            await self._forward(call)
        else:
            await self._forward(call, json.dumps({**req, "RequestItems": admitted}).encode())
        assert call.upstream is not None
        if call.upstream[0] != 200:
            return self._relay(call)
        for plan in plans:
            self.images.put(plan.cache_key, plan.image_after)
        if not unprocessed:
            return self._relay(call)
        answer = json.loads(call.upstream[1])
        merged = answer.setdefault("UnprocessedItems", {})
        for table, requests in unprocessed.items():
            merged.setdefault(table, []).extend(requests)
        return self._relay(call, json.dumps(answer, separators=(",", ":")).encode())

    async def _transact_write_items(self, call: _Call, req: dict[str, Any]) -> Reply:
        plans: list[WritePlan] = []
        for action in req["TransactItems"]:
            kind, spec = next(iter(action.items()))
            meta = await self._meta(call, spec["TableName"])
            if kind == "Put":
                plans.append(plan_put(meta, spec["Item"], self.images, transactional=True))
            elif kind == "Update":
                plans.append(plan_update(meta, spec, self.images, transactional=True))
            elif kind == "Delete":
                plans.append(plan_delete(meta, spec["Key"], self.images, transactional=True))
            else:
                plans.append(plan_condition_check(meta, spec["Key"], self.images))
        refused = await self._admit_and_forward(
            call, Operation.WRITE, _charges(plans), transaction=plans
        )
        if refused is not None:
            return refused
        if call.upstream is not None and call.upstream[0] == 200:
            for plan in plans:
                if plan.changes_item:
                    self.images.put(plan.cache_key, plan.image_after)
        return self._relay(call)

    def _transaction_canceled(
        self, op: Operation, plans: list[WritePlan], violations: list[Violation], now: float
    ) -> Reply:
        codes: list[str | None] = []
        for plan in plans:
            hit = [
                v
                for v in violations
                if any(
                    c.resource == v.resource and (v.key is None or v.key == c.key)
                    for c in plan.charges
                )
            ]
            if hit:
                self._record_throttled(op, plan.charges, hit, now)
                codes.append(self._cancellation_code(plan.table))
            else:
                codes.append(None)
        first = violations[0]
        meta = self._tables[first.resource.table]
        message = throttle_message(
            on_demand=self.on_demand(meta), index=first.resource.index is not None
        )
        self.metrics.add(m.THROTTLED_REQUESTS, Resource(first.resource.table), 1, now)
        body = transaction_canceled_body(codes, message)
        return Reply(400, body, response_headers(body))

    # --- reads ----------------------------------------------------------------------
    def _settle_read(self, resource: Resource, key: str | None, units: float, now: float) -> None:
        """Charge the rest of a read once its size is known (the minimum was reserved)."""
        if units <= 0:
            return
        charge = Charge(resource, key, units)
        self.limiter.consume(Operation.READ, [charge], now)
        self.metrics.add(m.CONSUMED_RCU, resource, units, now)
        if key is not None:
            self.metrics.record_key(Operation.READ, resource, key, now, units=units, count=False)

    async def _get_item(self, call: _Call, req: dict[str, Any]) -> Reply:
        meta = await self._meta(call, req["TableName"])
        consistent = bool(req.get("ConsistentRead", False))
        resource = Resource(meta.name)
        key = key_value_text(req["Key"][meta.hash_key])
        reserved = read_units(0, consistent=consistent)
        refused = await self._admit_and_forward(
            call, Operation.READ, [Charge(resource, key, reserved)]
        )
        if refused is not None:
            return refused
        assert call.upstream is not None
        if call.upstream[0] == 200:
            item = json.loads(call.upstream[1]).get("Item")
            units = read_units(item_size(item) if item else 0, consistent=consistent)
            self._settle_read(resource, key, units - reserved, self._now())
        return self._relay(call)

    async def _batch_get_item(self, call: _Call, req: dict[str, Any]) -> Reply:
        metas = {t: await self._meta(call, t) for t in req["RequestItems"]}
        now = self._now()
        admitted: dict[str, Any] = {}
        unprocessed: dict[str, Any] = {}
        violations: list[Violation] = []
        for table, spec in req["RequestItems"].items():
            meta = metas[table]
            reserved = read_units(0, consistent=bool(spec.get("ConsistentRead", False)))
            for key in spec["Keys"]:
                charge = [Charge(Resource(table), key_value_text(key[meta.hash_key]), reserved)]
                found = self.limiter.admit(Operation.READ, charge, now)
                target = unprocessed if found else admitted
                target.setdefault(table, {**spec, "Keys": []})["Keys"].append(key)
                if found:
                    violations += found
                    self._record_throttled(Operation.READ, charge, found, now)
                else:
                    self._record_consumed(Operation.READ, charge, now)
        if not admitted and violations:
            return self._throttle_response(call, violations)
        if not unprocessed:
            await self._forward(call)
        else:
            await self._forward(call, json.dumps({**req, "RequestItems": admitted}).encode())
        assert call.upstream is not None
        if call.upstream[0] != 200:
            return self._relay(call)
        answer = json.loads(call.upstream[1])
        later = self._now()
        for table, items in (answer.get("Responses") or {}).items():
            meta = metas[table]
            consistent = bool(admitted.get(table, {}).get("ConsistentRead", False))
            reserved = read_units(0, consistent=consistent)
            for item in items:
                units = read_units(item_size(item), consistent=consistent)
                key = item.get(meta.hash_key)
                self._settle_read(
                    Resource(table), key_value_text(key) if key else None, units - reserved, later
                )
        if not unprocessed:
            return self._relay(call)
        merged = answer.setdefault("UnprocessedKeys", {})
        for table, spec in unprocessed.items():
            if table in merged:
                merged[table]["Keys"].extend(spec["Keys"])
            else:
                merged[table] = spec
        return self._relay(call, json.dumps(answer, separators=(",", ":")).encode())

    async def _query_or_scan(self, call: _Call, req: dict[str, Any]) -> Reply:
        meta = await self._meta(call, req["TableName"])
        resource, hash_key = read_resource(meta, req.get("IndexName"))
        key = query_partition_key(req, hash_key) if call.operation == "Query" else None
        consistent = bool(req.get("ConsistentRead", False)) and resource.index is None
        reserved = query_read_units(0, consistent=consistent)
        refused = await self._admit_and_forward(
            call, Operation.READ, [Charge(resource, key, reserved)]
        )
        if refused is not None:
            return refused
        assert call.upstream is not None
        if call.upstream[0] == 200:
            answer = json.loads(call.upstream[1])
            items = answer.get("Items") or []
            returned = sum(item_size(i) for i in items)
            count, scanned = int(answer.get("Count", 0)), int(answer.get("ScannedCount", 0))
            # A filter drops items after they are read: scale by ScannedCount / Count.
            read_bytes = returned * scanned // count if count and scanned > count else returned
            units = query_read_units(read_bytes, consistent=consistent)
            self._settle_read(resource, key, units - reserved, self._now())
        return self._relay(call)

    async def _transact_get_items(self, call: _Call, req: dict[str, Any]) -> Reply:
        plans: list[WritePlan] = []
        reserved = read_units(0, consistent=True, transactional=True)
        for action in req["TransactItems"]:
            spec = action["Get"]
            meta = await self._meta(call, spec["TableName"])
            charge = Charge(
                Resource(meta.name), key_value_text(spec["Key"][meta.hash_key]), reserved
            )
            plans.append(
                WritePlan(
                    meta.name, spec["Key"], [charge], ImageCache.cache_key(meta, spec["Key"]), None
                )
            )
        refused = await self._admit_and_forward(
            call, Operation.READ, _charges(plans), transaction=plans
        )
        if refused is not None:
            return refused
        assert call.upstream is not None
        if call.upstream[0] == 200:
            answer = json.loads(call.upstream[1])
            later = self._now()
            for plan, got in zip(plans, answer.get("Responses") or [], strict=False):
                item = got.get("Item")
                units = read_units(
                    item_size(item) if item else 0, consistent=True, transactional=True
                )
                charge = plan.charges[0]
                self._settle_read(charge.resource, charge.key, units - reserved, later)
        return self._relay(call)
