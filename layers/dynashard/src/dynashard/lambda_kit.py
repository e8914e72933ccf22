"""The handler kit: what every dynashard Lambda function needs around its domain call.

One place for the pieces each function used to copy:

- per-container caches (:func:`container_cache`) that register themselves, so the
  sandbox and the tests start every function cold again with one call
  (:func:`reset_all`);
- the Powertools singletons, Logger, Tracer and Metrics (:func:`powertools`), and the
  three decorators of an entry point (:meth:`FunctionKit.entry_point`);
- the settings and the :class:`~dynashard.Dynashard` facade of a function, each built
  once per execution environment (:func:`function_kit`);
- optional dependencies a handler takes for tests (:class:`Dependency`);
- the JSON error body of the HTTP APIs (:class:`ErrorResponse`) and path decoding
  (:func:`path_value`);
- partial batch responses for SQS, Kinesis and DynamoDB streams from fates decided
  up front (:func:`partial_batch_response`).

Lambda keeps module globals between invocations of one execution environment and
starts another environment with fresh ones ("Lambda execution environment lifecycle",
AWS Lambda Developer Guide). A cache made by :func:`container_cache` in a function's
module lives exactly that long; the sandbox, which runs each environment as a copy of
the module (``sandbox.lambda_runtime``), gets one cache per copy.

Powertools is imported when a function asks for it, not with this module, so the
registry can be used (by the sandbox, by tests) without loading it.
"""

from __future__ import annotations

import base64
import functools
import json
import threading
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast
from urllib.parse import quote, unquote

from pydantic import BaseModel, Field

from dynashard import names

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger, Metrics, Tracer
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
    from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
    from aws_lambda_powertools.utilities.batch import EventType
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from dynashard.facade import Dynashard
    from dynashard.settings import FunctionSettings

T = TypeVar("T")
S = TypeVar("S", bound="FunctionSettings")
F = TypeVar("F", bound=Callable[..., Any])
P_contra = TypeVar("P_contra", contravariant=True)
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
M = TypeVar("M", bound=BaseModel)

#: The libraries the functions' Tracer patches: botocore carries every AWS call they
#: make (DynamoDB, CloudWatch). Powertools' default, ``patch_all``, also patches
#: requests, sqlite3 and other libraries the functions never use, importing each one
#: that is installed at cold start (the X-Ray SDK's ``patcher.NO_DOUBLE_PATCH``).
TRACED_MODULES: tuple[str, ...] = ("botocore",)

#: Correlation id of a REST API (v1) proxy event, for :meth:`FunctionKit.entry_point`.
API_GATEWAY_REST_REQUEST_ID = "requestContext.requestId"


# --- per-container caches ------------------------------------------------------------------
class ContainerCache(Generic[T]):
    """A zero-argument getter whose value is built once per execution environment.

    Made by :func:`container_cache`, which registers it; :func:`reset_all` resets every
    registered cache. Thread-safe: concurrent first calls build the value once.

    Parameters
    ----------
    build : callable
        Builds the value; called on the first call after creation or a reset. What it
        raises propagates and nothing is cached.
    name : str
        Dotted name the registry reports, e.g. ``functions.ingest.app.get_settings``.

    Attributes
    ----------
    name : str
        As given.
    """

    def __init__(self, build: Callable[[], T], name: str) -> None:
        self._build = build
        self.name = name
        self._lock = threading.RLock()
        self._value: T | None = None
        self._cached = False
        functools.update_wrapper(self, build)

    def __call__(self) -> T:
        """Return the cached value, building it on the first call.

        Returns
        -------
        T
            The value of this execution environment.
        """
        with self._lock:
            if not self._cached:
                self._value = self._build()
                self._cached = True
            return cast("T", self._value)

    @property
    def cached(self) -> bool:
        """bool: Whether a value is held (the next call does not build)."""
        return self._cached

    def reset(self) -> bool:
        """Drop the value, so that the next call builds it again (a cold start).

        Returns
        -------
        bool
            True if a value was held.
        """
        with self._lock:
            held = self._cached
            self._value = None
            self._cached = False
            return held

    def cache_clear(self) -> None:
        """Drop the value: :meth:`reset` under ``functools.cache``'s name."""
        self.reset()

    def __repr__(self) -> str:
        return f"ContainerCache({self.name!r}, cached={self._cached})"


#: Every live cache, in registration order. Weak: a module copy the sandbox drops takes
#: its caches with it.
_REGISTRY: list[weakref.ref[ContainerCache[Any]]] = []
_REGISTRY_LOCK = threading.Lock()


def register(cache: ContainerCache[T]) -> ContainerCache[T]:
    """Add a cache to the registry that :func:`reset_all` resets.

    Parameters
    ----------
    cache : ContainerCache
        The cache; registering it twice is harmless.

    Returns
    -------
    ContainerCache
        The same cache.
    """
    with _REGISTRY_LOCK:
        if all(ref() is not cache for ref in _REGISTRY):
            _REGISTRY.append(weakref.ref(cache))
    return cache


def container_cache(build: Callable[[], T], *, name: str | None = None) -> ContainerCache[T]:
    """Cache a zero-argument getter per execution environment, and register it.

    Use it as a decorator on a module-level function of a Lambda function.

    Parameters
    ----------
    build : callable
        Builds the value (settings, a facade, an adapter with its boto3 client).
    name : str, optional
        Name reported by :func:`reset_all`; default ``{module}.{qualname}`` of ``build``.

    Returns
    -------
    ContainerCache
        The registered getter.

    Examples
    --------
    >>> @container_cache
    ... def get_answer() -> int:
    ...     return 42
    >>> get_answer(), get_answer.cached
    (42, True)
    >>> get_answer.name.endswith(".get_answer"), get_answer.name in reset_all()
    (True, True)
    """
    label = name or f"{getattr(build, '__module__', '?')}.{getattr(build, '__qualname__', '?')}"
    return register(ContainerCache(build, label))


def registered_caches() -> list[ContainerCache[Any]]:
    """List the live registered caches, in registration order.

    Returns
    -------
    list of ContainerCache
        Caches whose owner (usually a module) still exists.
    """
    with _REGISTRY_LOCK:
        _REGISTRY[:] = [ref for ref in _REGISTRY if ref() is not None]
        live = [ref() for ref in _REGISTRY]
    return [cache for cache in live if cache is not None]


def reset_all() -> list[str]:
    """Reset every registered cache: each function starts cold on its next invocation.

    Returns
    -------
    list of str
        Names of the caches that held a value, in registration order.
    """
    return [cache.name for cache in registered_caches() if cache.reset()]


# --- Powertools ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Powertools:
    """A function's Powertools singletons.

    Attributes
    ----------
    logger : Logger
        Structured JSON logger; its service name (``POWERTOOLS_SERVICE_NAME``) is the
        standard-library logger it writes through.
    tracer : Tracer
        X-Ray tracer (``POWERTOOLS_TRACE_DISABLED`` turns it off); it patches
        :data:`TRACED_MODULES` only.
    metrics : Metrics
        CloudWatch EMF metrics in :data:`dynashard.names.METRICS_NAMESPACE`.
    """

    logger: Logger
    tracer: Tracer
    metrics: Metrics


def powertools(namespace: str = names.METRICS_NAMESPACE) -> Powertools:
    """Create a function's Logger, Tracer and Metrics.

    The service name comes from ``POWERTOOLS_SERVICE_NAME``, read by Powertools when the
    objects are created (a function's module import, as Powertools recommends).

    Parameters
    ----------
    namespace : str
        CloudWatch namespace of the metrics.

    Returns
    -------
    Powertools
        The three singletons.
    """
    from aws_lambda_powertools import Logger, Metrics, Tracer

    return Powertools(Logger(), Tracer(patch_modules=TRACED_MODULES), Metrics(namespace=namespace))


@dataclass(frozen=True)
class FunctionKit(Generic[S]):
    """What a dynashard function's module holds: Powertools and its per-container getters.

    Made by :func:`function_kit`.

    Attributes
    ----------
    logger, tracer, metrics : Logger, Tracer, Metrics
        The function's Powertools singletons.
    get_settings : ContainerCache of settings
        The function's settings, validated on first use (not at import) and cached;
        raises ``pydantic.ValidationError`` if a variable is missing or invalid.
    get_facade : ContainerCache of Dynashard
        The facade over the configured tables (its boto3 client is created lazily).
    module : str
        The function module's ``__name__``: the module of the handlers the kit makes.
    """

    logger: Logger
    tracer: Tracer
    metrics: Metrics
    get_settings: ContainerCache[S]
    get_facade: ContainerCache[Dynashard]
    module: str = __name__

    def entry_point(self, *, correlation_id_path: str | None = None) -> Callable[[F], F]:
        """Decorate a handler with Powertools' logger context, tracing and metrics flush.

        The same as stacking ``@logger.inject_lambda_context(correlation_id_path=...)``,
        ``@tracer.capture_lambda_handler`` and ``@metrics.log_metrics``, in that order.
        Extra keyword arguments (injected dependencies) pass through to the handler.

        Parameters
        ----------
        correlation_id_path : str, optional
            JMESPath of the correlation id in the event, e.g.
            :data:`API_GATEWAY_REST_REQUEST_ID`.

        Returns
        -------
        callable
            The decorator.
        """

        def decorate(handler: F) -> F:
            wrapped = self.tracer.capture_lambda_handler(self.metrics.log_metrics(handler))
            return cast(
                "F",
                self.logger.inject_lambda_context(wrapped, correlation_id_path=correlation_id_path),
            )

        return decorate

    def handler(
        self, facade_of: Dependency[P_contra], *, correlation_id_path: str | None = None
    ) -> Callable[[Callable[[dict[str, Any], LambdaContext], R]], Handler[P_contra, R]]:
        """Make ``fn(event, context)`` an entry point that takes an injected facade.

        The decorated handler is ``handler(event, context, facade=None)``: it binds
        ``facade`` to ``facade_of`` for the invocation (None: the container's) and calls
        ``fn``, under :meth:`entry_point`'s logger context, tracing and metrics flush.
        ``fn`` reaches the facade by calling ``facade_of()``.

        Parameters
        ----------
        facade_of : Dependency
            The function's facade dependency, e.g. ``Dependency("facade", get_facade)``.
        correlation_id_path : str, optional
            As for :meth:`entry_point`.

        Returns
        -------
        callable
            The decorator; the handler keeps ``fn``'s name, module and docstring.

        Examples
        --------
        >>> facade_of = Dependency("facade", kit.get_facade)  # doctest: +SKIP
        >>> @kit.handler(facade_of)  # doctest: +SKIP
        ... def handler(event, context):
        ...     return app.resolve(event, context)
        """

        def decorate(fn: Callable[[dict[str, Any], LambdaContext], R]) -> Handler[P_contra, R]:
            @functools.wraps(fn)
            def handler(
                event: dict[str, Any], context: LambdaContext, facade: P_contra | None = None
            ) -> R:
                with facade_of.injected(facade):
                    return fn(event, context)

            return self.entry_point(correlation_id_path=correlation_id_path)(handler)

        return decorate

    def rest_api_handler(
        self,
        app: APIGatewayRestResolver,
        facade_of: Dependency[P_contra],
        *,
        name: str = "handler",
        fallback_field: str = "body",
    ) -> Handler[P_contra, dict[str, Any]]:
        """Map the dynashard errors on ``app`` and make the function's REST API entry point.

        The errors are mapped by :func:`dynashard.http.register_error_handlers`; the entry
        point is ``handler(event, context, facade=None)`` (see :meth:`handler`), with the
        REST API request id as correlation id, and answers with ``app.resolve``.

        Parameters
        ----------
        app : APIGatewayRestResolver
            The function's resolver, its routes declared.
        facade_of : Dependency
            The facade dependency the routes call.
        name : str
            The handler's name in the function's module (what the deployed handler
            string names), e.g. ``api_handler``.
        fallback_field : str
            Field named when a validation error has no location.

        Returns
        -------
        Handler
            Takes an API Gateway REST API (v1) proxy event and the Lambda context (tests
            also pass ``facade=``), returns the API Gateway proxy response.
        """
        from dynashard.http import register_error_handlers

        register_error_handlers(app, self.logger, fallback_field)

        def resolve(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
            refused = not_json(event)
            return refused if refused is not None else app.resolve(routable(event), context)

        resolve.__name__ = resolve.__qualname__ = name
        resolve.__module__ = self.module
        resolve.__doc__ = f"Handle a REST API proxy event with ``{self.module}.app``."
        return self.handler(facade_of, correlation_id_path=API_GATEWAY_REST_REQUEST_ID)(resolve)


class Handler(Protocol[P_contra, R_co]):
    """A Lambda entry point made by :meth:`FunctionKit.handler`."""

    def __call__(
        self, event: dict[str, Any], context: LambdaContext, facade: P_contra | None = None
    ) -> R_co:
        """Handle ``event``, with ``facade`` (tests) or the container's own."""
        ...


def function_kit(
    module: str,
    settings_model: type[S],
    *,
    namespace: str = names.METRICS_NAMESPACE,
) -> FunctionKit[S]:
    """Build a function's kit: Powertools singletons, settings and facade getters.

    Call it once, at the top of the function's module, with the module's ``__name__``.

    Parameters
    ----------
    module : str
        The function module's ``__name__``; the getters register as
        ``{module}.get_settings`` and ``{module}.get_facade``.
    settings_model : type
        :class:`~dynashard.settings.FunctionSettings` or a subclass (a function with
        settings of its own adds fields); instantiated with no arguments, so its values
        come from the environment.
    namespace : str
        CloudWatch namespace of the metrics.

    Returns
    -------
    FunctionKit
        The kit.

    Examples
    --------
    >>> kit = function_kit(__name__, FunctionSettings)  # doctest: +SKIP
    >>> logger, tracer, metrics = kit.logger, kit.tracer, kit.metrics  # doctest: +SKIP
    """

    def build_settings() -> S:
        return settings_model()  # type: ignore[call-arg]  # values come from the environment

    settings = container_cache(build_settings, name=f"{module}.get_settings")

    def build_facade() -> Dynashard:
        from dynashard.facade import Dynashard

        return Dynashard(settings().to_config())

    facade = container_cache(build_facade, name=f"{module}.get_facade")
    tools = powertools(namespace)
    return FunctionKit(tools.logger, tools.tracer, tools.metrics, settings, facade, module)


# --- injected dependencies ----------------------------------------------------------------
class Dependency(Generic[T]):
    """A dependency a handler takes as an optional argument (tests), else a default.

    The handler binds what it was given for the length of the invocation
    (:meth:`injected`); the code that needs it calls the dependency. The binding is a
    context variable, so concurrent invocations in threads do not see each other's.

    Parameters
    ----------
    name : str
        What it is, e.g. ``facade`` (for messages only).
    default : callable
        Returns the execution environment's own, e.g. a :func:`container_cache` getter.

    Examples
    --------
    >>> store = Dependency("store", lambda: "the container's")
    >>> with store.injected("a fake"):
    ...     store()
    'a fake'
    >>> store()
    "the container's"
    """

    def __init__(self, name: str, default: Callable[[], T]) -> None:
        self.name = name
        self._default = default
        self._current: ContextVar[T | None] = ContextVar(f"dynashard.{name}", default=None)

    def __call__(self) -> T:
        """Return the injected value of this invocation, else the default.

        Returns
        -------
        T
            The dependency.
        """
        value = self._current.get()
        return self._default() if value is None else value

    @contextmanager
    def injected(self, value: T | None) -> Iterator[None]:
        """Bind ``value`` for the ``with`` block (None binds nothing: the default serves).

        Parameters
        ----------
        value : T or None
            What the handler was given.

        Yields
        ------
        None
            Inside the block, calling the dependency returns ``value``.
        """
        token = self._current.set(value)
        try:
            yield
        finally:
            self._current.reset(token)


# --- HTTP ----------------------------------------------------------------------------------
class ErrorResponse(BaseModel):
    """Body of a 4xx/5xx answer: what was wrong, and where."""

    # The docstring is the schema's description in the OpenAPI document: ``message``
    # says what was wrong; ``field`` names the offending field (``events[3].ts``);
    # ``errors`` (422) has one entry per offending field; ``shards`` (503 of a read)
    # the physical keys whose query failed.

    message: str
    field: str | None = None
    errors: list[dict[str, Any]] | None = None
    shards: list[str] | None = Field(None, description="503 only: physical keys that failed")


#: OpenAPI content of every 4xx/5xx answer (``responses={400: {..., "content": ...}}``).
ERROR_CONTENT: dict[str, Any] = {"application/json": {"model": ErrorResponse}}
#: What each error status of :func:`dynashard.http.register_error_handlers` means.
ERROR_DESCRIPTIONS: dict[int, str] = {
    400: "Bad input: `field` names it",
    404: "No such resource (e.g. a key without an ordered layout): `field` names it",
    409: "Conflicts with what is stored: `field` names it",
    500: "A dynashard error, e.g. a write that failed after its retries",
    503: "A shard query failed; `shards` names the physical keys",
}


def json_response(status: int, body: M, headers: Mapping[str, str] | None = None) -> Response[M]:
    """Return a Powertools REST response with a JSON body.

    Parameters
    ----------
    status : int
        HTTP status code.
    body : pydantic model
        The body (serialized by the resolver's serializer).
    headers : mapping of str to str, optional
        Extra headers, e.g. ``Retry-After``.

    Returns
    -------
    Response
        ``Content-Type: application/json``.
    """
    from aws_lambda_powertools.event_handler import Response, content_types

    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body,
        headers=dict(headers or {}),
    )


def openapi_responses(ok: str, *errors: int) -> dict[int, OpenAPIResponse]:
    """Return a route's OpenAPI ``responses``: 200 and the error statuses it answers.

    Parameters
    ----------
    ok : str
        Description of the 200 answer (its body is the route's return model).
    *errors : int
        Error statuses, keys of :data:`ERROR_DESCRIPTIONS`; their body is
        :class:`ErrorResponse`.

    Returns
    -------
    dict
        Status -> OpenAPI response, for the resolver's ``responses=``.

    Raises
    ------
    KeyError
        If a status has no description.
    """
    answers: dict[int, OpenAPIResponse] = {200: {"description": ok}}
    for status in errors:
        answers[status] = {"description": ERROR_DESCRIPTIONS[status], "content": ERROR_CONTENT}
    return answers


#: The only request body type the APIs take.
JSON_CONTENT_TYPE = "application/json"


def not_json(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Answer 415 to a request whose body is declared as something else than JSON.

    Powertools parses form and multipart bodies itself, and a multipart type without
    its boundary raised ``ValueError`` out of the handler (a 502): the APIs take JSON
    only, so any other declared type is refused before routing.

    Parameters
    ----------
    event : mapping
        A REST API proxy event.

    Returns
    -------
    dict or None
        The proxy response ``{"statusCode": 415, ...}`` with a JSON error naming
        ``Content-Type``; None when the request has no body or declares JSON (or
        nothing).

    Examples
    --------
    >>> not_json({"body": "{}", "headers": {"Content-Type": "application/json"}}) is None
    True
    >>> not_json({"body": "a=1", "headers": {"content-type": "multipart/form-data"}})["statusCode"]
    415
    """
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    declared = headers.get("content-type", "").strip()
    if not event.get("body") or not declared or declared.lower().startswith(JSON_CONTENT_TYPE):
        return None
    body = {
        "message": f"Content-Type: {declared!r} is not supported; send {JSON_CONTENT_TYPE}",
        "field": "Content-Type",
    }
    return {
        "statusCode": 415,
        "headers": {"Content-Type": JSON_CONTENT_TYPE},
        "multiValueHeaders": {"Content-Type": [JSON_CONTENT_TYPE]},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def routable(event: dict[str, Any]) -> dict[str, Any]:
    """Percent-encode every character of the path that Powertools' router would not match.

    API Gateway matches ``{name}`` to any one path segment, but Powertools' resolver
    matches a dynamic segment only on word characters and a fixed set of others, so a
    name with ``"``, a backtick or a backslash, sent unencoded, answered Powertools'
    404 although API Gateway had routed it. Each segment is decoded and encoded again
    (nothing left as it is but unreserved characters), which :func:`path_value`
    decodes back to the same name.

    Parameters
    ----------
    event : dict
        A REST API proxy event.

    Returns
    -------
    dict
        The event with ``path`` re-encoded (a copy; the same event when it has no path).

    Examples
    --------
    >>> routable({"path": '/counters/a"b%23c'})["path"]
    '/counters/a%22b%23c'
    """
    path = event.get("path")
    if not isinstance(path, str):
        return event
    encoded = "/".join(quote(unquote(segment), safe="") for segment in path.split("/"))
    return event if encoded == path else {**event, "path": encoded}


def path_value(raw: str) -> str:
    """Decode a path parameter of a REST API event.

    REST APIs pass the path still percent-encoded (a key like ``CARRIER#UA`` arrives as
    ``CARRIER%23UA``), and Powertools matches routes on that path.

    Parameters
    ----------
    raw : str
        The parameter as routed.

    Returns
    -------
    str
        The decoded value.
    """
    return unquote(raw)


# --- batches -------------------------------------------------------------------------------
class RecordRejectedError(Exception):
    """A batch record that is reported back as a batch item failure.

    Parameters
    ----------
    item_id : str
        SQS message id, or Kinesis / DynamoDB stream sequence number.
    reason : str
        Why: the validation error, or the write error of its event.
    """

    def __init__(self, item_id: str, reason: str) -> None:
        self.item_id = item_id
        self.reason = reason
        super().__init__(f"{item_id}: {reason}")


def _kinesis_data(data: str) -> bytes:
    return base64.b64decode(data, validate=True)


def batch_payloads(
    event: Mapping[str, Any], event_type: EventType
) -> tuple[list[tuple[str, Callable[[], str | bytes]]], set[str]]:
    """Take the payloads out of an SQS or Kinesis event, each decoded when asked for.

    Parameters
    ----------
    event : mapping
        The Lambda event (``Records``).
    event_type : EventType
        Powertools' event type: ``SQS`` or ``KinesisDataStreams``.

    Returns
    -------
    items : list of (str, callable)
        Per record, in batch order: its item identifier (SQS ``messageId``, Kinesis
        ``sequenceNumber``) and a function returning its payload (the SQS body; the
        Kinesis data, base64-decoded: the function raises ``binascii.Error`` when the
        data is not base64, so that one record fails, not the batch).
    redelivered : set of str
        Item identifiers of records delivered before (SQS ``ApproximateReceiveCount``
        above 1); always empty for Kinesis, which does not say.

    Raises
    ------
    ValueError
        If ``event_type`` is another.
    """
    records = event.get("Records") or []
    if event_type.value == "SQS":
        items = [(r["messageId"], functools.partial(str, r.get("body", ""))) for r in records]
        redelivered = {
            r["messageId"]
            for r in records
            if int((r.get("attributes") or {}).get("ApproximateReceiveCount") or 1) > 1
        }
        return list(items), redelivered
    if event_type.value == "KinesisDataStreams":
        return [
            (
                r["kinesis"]["sequenceNumber"],
                functools.partial(_kinesis_data, r["kinesis"].get("data", "")),
            )
            for r in records
        ], set()
    raise ValueError(f"no payloads for {event_type}: expected SQS or KinesisDataStreams")


def is_fifo_batch(event: Mapping[str, Any], event_type: EventType) -> bool:
    """Tell whether a batch comes from an SQS FIFO queue (its ARN ends in ``.fifo``).

    Parameters
    ----------
    event : mapping
        The Lambda event (``Records``).
    event_type : EventType
        Powertools' event type of the source.

    Returns
    -------
    bool
        True for an SQS batch whose records' ``eventSourceARN`` names a FIFO queue.

    Examples
    --------
    >>> from aws_lambda_powertools.utilities.batch import EventType
    >>> arn = "arn:aws:sqs:us-east-1:123456789012:q.fifo"
    >>> is_fifo_batch({"Records": [{"eventSourceARN": arn}]}, EventType.SQS)
    True
    >>> is_fifo_batch({"Records": []}, EventType.SQS)
    False
    """
    records = event.get("Records") or []
    return (
        event_type.value == "SQS"
        and bool(records)
        and str(records[0].get("eventSourceARN", "")).endswith(".fifo")
    )


#: Reason of a record the fates do not name.
NOT_SEEN = "record not seen by the bulk write"


def _item_id(record: Any) -> str:
    # Powertools' record classes: SQSRecord, KinesisStreamRecord, DynamoDBRecord.
    if hasattr(record, "message_id"):
        return str(record.message_id)
    if hasattr(record, "kinesis"):
        return str(record.kinesis.sequence_number)
    return str(record.dynamodb.sequence_number)


def partial_batch_response(
    event: dict[str, Any],
    context: LambdaContext,
    event_type: EventType,
    fates: Mapping[str, str | None],
    logger: Logger,
    permanent: Collection[str] = (),
) -> PartialItemFailureResponse:
    """Answer a batch from each record's fate, decided before (e.g. by one bulk write).

    Each record whose fate is a reason (or that the fates do not name) is logged as
    ``record rejected`` (warning, with ``item_id``, ``reason`` and ``permanent``) and
    reported as a batch item failure. An all-failed batch is still a partial response
    listing every record, so each one is retried, and reaches its DLQ, on its own. A
    permanent failure is reported the same way (a partial batch response can only say
    "failed"): redrive moves it to the DLQ after ``maxReceiveCount``, and this log line,
    ``permanent: true`` with the message id, says why it is there. A FIFO queue's batch
    (:func:`is_fifo_batch`) stops each message group at its first failure, as Powertools'
    ``SqsFifoPartialProcessor(skip_group_on_error=True)`` does: the group's later
    messages are reported failed too, so that none of them is done before the one that
    failed.

    Parameters
    ----------
    event : dict
        The SQS, Kinesis or DynamoDB stream event.
    context : LambdaContext
        Lambda context.
    event_type : EventType
        Powertools' event type of the source.
    fates : mapping of str to (str or None)
        Item identifier (message id or sequence number) -> None if the record is done,
        else why it is not.
    logger : Logger
        The function's logger.
    permanent : collection of str
        Item identifiers whose failure is permanent (an invalid event, one DynamoDB can
        never store): logged with ``permanent: true``.

    Returns
    -------
    dict
        ``{"batchItemFailures": [{"itemIdentifier": ...}, ...]}``, in batch order.
    """
    from aws_lambda_powertools.utilities.batch import (
        BatchProcessor,
        SqsFifoPartialProcessor,
        process_partial_response,
    )

    def record_handler(record: Any) -> None:
        item_id = _item_id(record)
        reason = fates.get(item_id, NOT_SEEN)
        if reason is not None:
            fields = {"item_id": item_id, "reason": reason, "permanent": item_id in permanent}
            logger.warning("record rejected", extra=fields)
            raise RecordRejectedError(item_id, reason)

    processor: BatchProcessor
    if is_fifo_batch(event, event_type):
        # A group stops at its first failure: its later messages are reported too, so
        # SQS hands them out again after it, in order (the other groups go on).
        processor = SqsFifoPartialProcessor(skip_group_on_error=True)
        processor.raise_on_entire_batch_failure = False
    else:
        processor = BatchProcessor(event_type=event_type, raise_on_entire_batch_failure=False)
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )


__all__ = [
    "API_GATEWAY_REST_REQUEST_ID",
    "ERROR_CONTENT",
    "ERROR_DESCRIPTIONS",
    "ContainerCache",
    "Dependency",
    "ErrorResponse",
    "FunctionKit",
    "Handler",
    "Powertools",
    "RecordRejectedError",
    "batch_payloads",
    "container_cache",
    "function_kit",
    "is_fifo_batch",
    "not_json",
    "openapi_responses",
    "partial_batch_response",
    "path_value",
    "powertools",
    "register",
    "registered_caches",
    "reset_all",
    "routable",
]
