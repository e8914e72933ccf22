"""The partition emulator over HTTP: a DynamoDB-compatible endpoint in front of DynamoDB Local.

Built on aiohttp (``aiohttp.web`` server, one ``ClientSession`` with a keep-alive
connector to DynamoDB Local). :class:`HttpTransport` hands every request of the DynamoDB
JSON protocol (``POST /``, ``X-Amz-Target: DynamoDB_20120810.<Operation>``) to
:meth:`PartitionEmulator.dispatch <sandbox.emulator.core.PartitionEmulator.dispatch>`,
the model shared with the in-process path (:mod:`sandbox.emulator.inprocess`), with a
sender that reaches DynamoDB Local over aiohttp; :class:`EmulatorServer` serves it from
a background thread (:class:`sandbox.lifecycle.BackgroundServer`), and
``python -m sandbox.emulator`` in the foreground.

Admin routes, off the DynamoDB path: ``GET /_emulator/health``, ``GET /_emulator/metrics``,
``GET /_emulator/contributors``, ``POST /_emulator/limits``, ``POST /_emulator/reset``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Mapping
from typing import Any, Final

import aiohttp
from aiohttp import web

from sandbox.emulator.config import EmulatorConfig, LognormalLatency, OnDemand, Provisioned
from sandbox.emulator.core import TARGET_PREFIX, PartitionEmulator, UpstreamHeaders
from sandbox.emulator.inprocess import InProcessEmulator
from sandbox.emulator.limits import Operation, Resource
from sandbox.emulator.schema import LOCAL_REGION, region_from_authorization
from sandbox.lifecycle import BackgroundServer

#: Largest request body accepted (BatchWriteItem: 16 MB).
_MAX_BODY: Final = 17 * 1024 * 1024


class HttpTransport:
    """The aiohttp application that carries DynamoDB requests to a :class:`PartitionEmulator`.

    Parameters
    ----------
    emulator : PartitionEmulator
        The model; its buckets, figures and admin views are the ones served.

    Examples
    --------
    >>> app = HttpTransport(emulator).make_app()
    >>> runner, url = await serve_app(app, "127.0.0.1", 0)  # doctest: +SKIP
    """

    def __init__(self, emulator: PartitionEmulator) -> None:
        self.emulator = emulator
        #: Draws of the added latency (``config.latency``), taken on the event loop.
        self._rng = random.Random(emulator.config.seed)
        self._session: aiohttp.ClientSession | None = None

    def make_app(self) -> web.Application:
        """Build the aiohttp application (DynamoDB path and admin routes).

        Returns
        -------
        aiohttp.web.Application
            Opens the client session to DynamoDB Local on startup, closes it on cleanup.
        """
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_post("/", self._handle)
        app.router.add_get("/_emulator/health", self._admin_health)
        app.router.add_get("/_emulator/metrics", self._admin_metrics)
        app.router.add_get("/_emulator/contributors", self._admin_contributors)
        app.router.add_post("/_emulator/limits", self._admin_limits)
        app.router.add_post("/_emulator/reset", self._admin_reset)
        app.on_startup.append(self._open_session)
        app.on_cleanup.append(self._close_session)
        return app

    async def _open_session(self, _app: web.Application) -> None:
        connector = aiohttp.TCPConnector(limit=256, keepalive_timeout=30.0)
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=60.0),
            skip_auto_headers=("User-Agent",),
        )

    async def _close_session(self, _app: web.Application) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _http_send(
        self, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, UpstreamHeaders]:
        """Send to DynamoDB Local with aiohttp, the lock released (the server's sender)."""
        if self._session is None:
            raise RuntimeError("the emulator is not started")
        self.emulator.lock.release()
        try:
            async with self._session.post(
                self.emulator.upstream_url, data=body, headers=headers
            ) as resp:
                return resp.status, await resp.read(), resp.headers
        finally:
            self.emulator.lock.acquire()

    # --- request entry --------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        target = request.headers.get("X-Amz-Target", "")
        operation = target[len(TARGET_PREFIX) :] if target.startswith(TARGET_PREFIX) else ""
        region = region_from_authorization(request.headers.get("Authorization")) or LOCAL_REGION
        headers = self.emulator.forward_headers(request.headers)
        with self.emulator.lock:
            reply = await self.emulator.dispatch(operation, body, headers, region, self._http_send)
        latency = self.emulator.config.latency
        if latency is not None:
            await asyncio.sleep(latency.sample(self._rng))
        return web.Response(status=reply.status, body=reply.body, headers=reply.headers)

    # --- admin routes ---------------------------------------------------------------
    async def _admin_health(self, _request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "upstream": self.emulator.upstream_url})

    def _window(self, request: web.Request) -> tuple[float, float]:
        minutes = float(request.query.get("minutes", "5"))
        end = self.emulator.config.clock() + 60.0
        return end - 60.0 - minutes * 60.0, end

    async def _admin_metrics(self, request: web.Request) -> web.Response:
        table = request.query.get("table")
        rows = [r for r in self.emulator.metrics.snapshot() if table is None or r["table"] == table]
        with self.emulator.lock:
            unparsed = dict(self.emulator.unparsed)
        return web.json_response({"metrics": rows, "unparsed": unparsed})

    async def _admin_contributors(self, request: web.Request) -> web.Response:
        q = request.query
        try:
            mode = q.get("mode", "ACCESSED_AND_THROTTLED_KEYS")
            if mode not in ("ACCESSED_AND_THROTTLED_KEYS", "THROTTLED_KEYS"):
                raise ValueError(f"unknown mode {mode!r}")
            op = Operation(q.get("operation", "Write"))
            resource = Resource(q["table"], q.get("index") or None)
            start, end = self._window(request)
            views = self.emulator.metrics.contributors(
                mode,  # type: ignore[arg-type]
                op,
                resource,
                start,
                end,
                n=int(q.get("n", "10")),
            )
        except (KeyError, ValueError) as exc:
            return web.json_response({"error": f"bad query: {exc}"}, status=400)
        return web.json_response(
            {
                "mode": mode,
                "operation": op.value,
                **{name: [dataclasses.asdict(r) for r in rows] for name, rows in views.items()},
            }
        )

    async def _admin_limits(self, request: web.Request) -> web.Response:
        try:
            changes = dict(await request.json())
            if "table_mode" in changes:
                changes["table_mode"] = _table_mode_from_json(changes["table_mode"])
            if changes.get("latency") is not None:
                changes["latency"] = LognormalLatency(**changes["latency"])
            config = self.emulator.update_limits(**changes)
        except (TypeError, ValueError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(config_to_json(config))

    async def _admin_reset(self, _request: web.Request) -> web.Response:
        self.emulator.reset()
        return web.json_response({"ok": True})


def _table_mode_from_json(value: Any) -> Provisioned | OnDemand | None:
    if value is None:
        return None
    if "provisioned" in value:
        return Provisioned(**value["provisioned"])
    if "on_demand" in value:
        return OnDemand(**(value["on_demand"] or {}))
    raise ValueError("table_mode must be null, {'provisioned': {...}} or {'on_demand': {...}}")


def config_to_json(config: EmulatorConfig) -> dict[str, Any]:
    """Return the JSON view of a configuration (the clock left out).

    Parameters
    ----------
    config : EmulatorConfig
        The configuration.

    Returns
    -------
    dict
        Field name -> value; ``table_mode`` as ``{"provisioned": {...}}`` or
        ``{"on_demand": {...}}`` or None.
    """
    mode = config.table_mode
    table_mode: dict[str, Any] | None = None
    if isinstance(mode, Provisioned):
        table_mode = {"provisioned": dataclasses.asdict(mode)}
    elif isinstance(mode, OnDemand):
        table_mode = {"on_demand": dataclasses.asdict(mode)}
    return {
        "partition_wcu": config.partition_wcu,
        "partition_rcu": config.partition_rcu,
        "scale": config.scale,
        "table_mode": table_mode,
        "account_table_units": config.account_table_units,
        "burst_seconds": config.burst_seconds,
        "latency": dataclasses.asdict(config.latency) if config.latency else None,
        "on_demand_error": config.on_demand_error,
        "account_id": config.account_id,
    }


class EmulatorServer(BackgroundServer):
    """Serve a :class:`PartitionEmulator` over HTTP from a background thread.

    For synchronous callers (tests, the sandbox, the demo): boto3 talks to
    :attr:`endpoint_url` while figures are read from :attr:`emulator`.

    Parameters
    ----------
    upstream_url : str
        DynamoDB Local's endpoint.
    config : EmulatorConfig, optional
        Emulator configuration.
    host : str
        Interface (loopback by default).
    port : int
        Port, 0 for a free one.

    Examples
    --------
    >>> config = EmulatorConfig(scale=0.05)
    >>> with EmulatorServer(ddb.endpoint_url, config) as server:  # doctest: +SKIP
    ...     client = boto3.client("dynamodb", endpoint_url=server.endpoint_url)
    """

    def __init__(
        self,
        upstream_url: str,
        config: EmulatorConfig | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(host, port, name="partition emulator", access_log=False)
        self.emulator = PartitionEmulator(upstream_url, config)

    def make_app(self) -> web.Application:
        """Build the HTTP transport's application on :attr:`emulator` (see :class:`HttpTransport`).

        Returns
        -------
        aiohttp.web.Application
            The DynamoDB path and the admin routes.
        """
        return HttpTransport(self.emulator).make_app()

    def in_process(self) -> InProcessEmulator:
        """Return the in-process path to this server's emulator (one model for both).

        Returns
        -------
        InProcessEmulator
            Attaches boto3 clients of this process to :attr:`emulator` without the
            HTTP hop; their requests share its buckets, figures and admin routes.
        """
        return InProcessEmulator(emulator=self.emulator)

    @property
    def endpoint_url(self) -> str:
        """str: The emulator's URL (after :meth:`start`)."""
        return self.url
