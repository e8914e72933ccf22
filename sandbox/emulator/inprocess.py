"""The partition emulator in process: boto3 clients of this process throttled without a hop.

The HTTP emulator (:mod:`sandbox.emulator.server`) puts a second HTTP server between a
client and DynamoDB Local, which about doubles the latency of a small request on a
loopback. A client in the same process as the emulator does not need it: botocore
emits ``before-send.dynamodb.<Operation>`` once a request is serialized and signed,
and a handler may answer it with an ``AWSResponse`` instead of letting botocore send it
("Botocore Events", ``before-send``: "allows a response to be returned that fulfills
the request"). :class:`InProcessEmulator` registers such a handler on a client: it
hands the signed request to :meth:`PartitionEmulator.dispatch` -- the very code the
HTTP server runs, so the charge, the throttling error (status, body, headers), a
partly throttled batch's ``UnprocessedItems`` and every figure are the same -- and
that sends the admitted request to DynamoDB Local over a connection pool of its own.

botocore parses the answer and applies its retry policy to it as it would to one that
came over the wire: a throttled request is retried (or not) exactly as against the HTTP
emulator, and each attempt is charged again.

One model for both paths: an :class:`InProcessEmulator` built on an existing
:class:`~sandbox.emulator.core.PartitionEmulator` (``EmulatorServer.in_process()``)
shares its buckets, figures and admin routes with the HTTP server, so clients of this
process and of others hit the same partition limits and show in the same metrics and
Contributor Insights views.
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.httpsession import URLLib3Session

from sandbox.emulator.config import EmulatorConfig
from sandbox.emulator.core import TARGET_PREFIX, PartitionEmulator, Reply, UpstreamHeaders
from sandbox.emulator.schema import LOCAL_REGION, region_from_authorization

if TYPE_CHECKING:
    from botocore.session import Session as BotocoreSession
    from mypy_boto3_dynamodb import DynamoDBClient

#: botocore event the handler is registered for (every DynamoDB operation).
BEFORE_SEND: Final = "before-send.dynamodb"

_T = TypeVar("_T")


def run_to_completion(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine that never suspends, in the calling thread, without an event loop.

    :meth:`PartitionEmulator.dispatch` awaits only its sender; the in-process sender
    is synchronous (it returns without awaiting), so the whole call completes on the
    first step.

    Parameters
    ----------
    coro : coroutine
        A coroutine whose awaits all complete without suspending.

    Returns
    -------
    object
        The coroutine's result.

    Raises
    ------
    RuntimeError
        When the coroutine suspends (it awaited a real future); it is closed first.
    """
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("an in-process emulator call suspended: it awaited an event loop")


class _Body:
    """The ``raw`` of an ``AWSResponse`` built from bytes (botocore reads ``stream()``)."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_kwargs: Any) -> list[bytes]:
        return [self._data]


class _BeforeSend:
    """The ``before-send`` handler: every request of one client (or session) dispatched."""

    def __init__(self, owner: InProcessEmulator, http: URLLib3Session) -> None:
        self.owner = owner
        self.http = http
        self.upstream = owner.emulator.upstream_url

    def __call__(self, request: AWSPreparedRequest, **_kwargs: Any) -> AWSResponse | None:
        if not request.url.startswith(self.upstream):
            return None  # another endpoint: botocore sends it as usual
        emulator = self.owner.emulator
        headers = request.headers
        target = _text(headers.get("X-Amz-Target"))
        operation = target[len(TARGET_PREFIX) :] if target.startswith(TARGET_PREFIX) else ""
        region = region_from_authorization(_text(headers.get("Authorization"))) or LOCAL_REGION
        body = request.body
        data = body.encode() if isinstance(body, str) else bytes(body or b"")
        forward = emulator.forward_headers({k: _text(v) for k, v in headers.items()})
        with emulator.lock:
            reply: Reply = run_to_completion(
                emulator.dispatch(operation, data, forward, region, self._send)
            )
            latency = emulator.config.latency
            delay = latency.sample(self.owner.rng) if latency is not None else 0.0
        if delay > 0:
            time.sleep(delay)
        return AWSResponse(request.url, reply.status, reply.headers, _Body(reply.body))

    async def _send(
        self, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, UpstreamHeaders]:
        """Send to DynamoDB Local, blocking, the lock released (the in-process sender)."""
        out = dict(headers)
        out["Content-Length"] = str(len(body))
        request = AWSPreparedRequest("POST", self.upstream, out, body, stream_output=False)
        lock = self.owner.emulator.lock
        lock.release()
        try:
            response = self.http.send(request)
        finally:
            lock.acquire()
        return response.status_code, response.content, response.headers


def _http_session(
    max_pool_connections: int, timeout: tuple[float, float] | None = None
) -> URLLib3Session:
    """Return the emulator's pool of connections to DynamoDB Local (botocore's own class).

    ``TCP_NODELAY`` as botocore sets it for its clients (``ClientArgsCreator.
    _compute_socket_options``); without it a small request waits for the peer's
    delayed ACK (about 40 ms on Linux) before its body leaves.
    """
    return URLLib3Session(
        timeout=timeout,
        max_pool_connections=max_pool_connections,
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
    )


def _text(value: str | bytes | None) -> str:
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else value


class InProcessEmulator:
    """The partition emulator for boto3 clients of this process, without the HTTP hop.

    Clients talk to DynamoDB Local's own endpoint; a botocore ``before-send`` handler
    charges, throttles and forwards each request through
    :meth:`PartitionEmulator.dispatch`, the code the HTTP emulator runs, so a request
    is charged, refused and counted exactly as through the HTTP endpoint.

    Parameters
    ----------
    upstream_url : str, optional
        DynamoDB Local's endpoint, e.g. ``http://127.0.0.1:8000``; not needed with
        ``emulator``.
    config : EmulatorConfig, optional
        Limits, scale, latency, clock (for a new emulator).
    emulator : PartitionEmulator, optional
        An existing emulator to share (e.g. an :class:`EmulatorServer`'s): one set of
        buckets and figures for the HTTP and the in-process path.

    Raises
    ------
    ValueError
        With neither ``upstream_url`` nor ``emulator``, or ``config`` with ``emulator``.

    Examples
    --------
    >>> emulator = InProcessEmulator(ddb.endpoint_url, EmulatorConfig(scale=0.05))  # doctest: +SKIP
    >>> client = emulator.client(total_max_attempts=1)  # doctest: +SKIP
    >>> emulator.emulator.metrics.throttle_reasons()  # doctest: +SKIP
    {}
    """

    def __init__(
        self,
        upstream_url: str | None = None,
        config: EmulatorConfig | None = None,
        *,
        emulator: PartitionEmulator | None = None,
    ) -> None:
        if emulator is None:
            if upstream_url is None:
                raise ValueError("give DynamoDB Local's upstream_url or an emulator to share")
            emulator = PartitionEmulator(upstream_url, config)
        elif config is not None:
            raise ValueError("config belongs to the shared emulator: update_limits() it")
        self.emulator = emulator
        #: Draws of the added latency (``config.latency``), taken under the lock.
        self.rng = random.Random(emulator.config.seed)

    @property
    def endpoint_url(self) -> str:
        """str: The endpoint clients are bound to: DynamoDB Local's own (no trailing /)."""
        return self.emulator.upstream_url.rstrip("/")

    def _unique_id(self) -> str:
        return f"partition-emulator-{id(self)}"

    def attach(self, client: DynamoDBClient) -> DynamoDBClient:
        """Route a DynamoDB client's requests through the emulator, in process.

        Parameters
        ----------
        client : DynamoDBClient
            A boto3 DynamoDB client bound to :attr:`endpoint_url` (DynamoDB Local).
            Its connection pool size and timeouts are used for the emulator's own
            connection pool to DynamoDB Local. Attaching twice is a no-op.

        Returns
        -------
        DynamoDBClient
            The same client.

        Raises
        ------
        ValueError
            When the client is not a DynamoDB client of :attr:`endpoint_url` (through
            another endpoint, e.g. the HTTP emulator, a request would be charged twice
            or not at all).
        """
        meta = client.meta
        if meta.service_model.service_name != "dynamodb":
            raise ValueError(f"not a DynamoDB client: {meta.service_model.service_name}")
        if meta.endpoint_url.rstrip("/") != self.endpoint_url:
            raise ValueError(
                f"the client is bound to {meta.endpoint_url}, the emulator forwards to "
                f"{self.endpoint_url}: build it with InProcessEmulator.client()"
            )
        cfg = meta.config
        http = _http_session(
            cfg.max_pool_connections, timeout=(cfg.connect_timeout, cfg.read_timeout)
        )
        meta.events.register(BEFORE_SEND, _BeforeSend(self, http), unique_id=self._unique_id())
        return client

    def detach(self, client: DynamoDBClient) -> None:
        """Stop routing a client's requests through the emulator (it talks to DynamoDB Local).

        Parameters
        ----------
        client : DynamoDBClient
            A client given to :meth:`attach`.
        """
        client.meta.events.unregister(BEFORE_SEND, unique_id=self._unique_id())

    def install(self, session: BotocoreSession, max_pool_connections: int = 32) -> None:
        """Route every DynamoDB client a botocore session creates from now on.

        For code that builds its own clients (the sandbox's functions): clients copy
        their session's event handlers when they are created. Requests to other
        endpoints than :attr:`endpoint_url` are left alone.

        Parameters
        ----------
        session : botocore.session.Session
            E.g. ``boto3.DEFAULT_SESSION._session`` or ``boto3.Session()._session``.
        max_pool_connections : int
            Size of the emulator's connection pool to DynamoDB Local, shared by the
            session's clients.
        """
        http = _http_session(max_pool_connections)
        session.register(BEFORE_SEND, _BeforeSend(self, http), unique_id=self._unique_id())

    def uninstall(self, session: BotocoreSession) -> None:
        """Stop wiring the DynamoDB clients a session creates (see :meth:`install`).

        Clients created while it was installed keep the handler; :meth:`detach` them.

        Parameters
        ----------
        session : botocore.session.Session
            The session given to :meth:`install`.
        """
        session.unregister(BEFORE_SEND, unique_id=self._unique_id())

    def client(self, **options: Any) -> DynamoDBClient:
        """Return a new DynamoDB client of DynamoDB Local, attached to the emulator.

        Parameters
        ----------
        **options
            Passed to :func:`sandbox.engines.dynamodb_local.local_client`
            (``total_max_attempts``, ``retry_mode``, ``max_pool_connections``,
            ``region_name`` ...).

        Returns
        -------
        DynamoDBClient
            A client whose requests are charged and throttled in this process.
        """
        from sandbox.engines.dynamodb_local import local_client

        return self.attach(local_client(self.endpoint_url, **options))
