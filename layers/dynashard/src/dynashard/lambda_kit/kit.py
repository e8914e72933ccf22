"""The handler kit: the Powertools singletons, an entry point's decorators, a function's state.

- the Powertools singletons, Logger, Tracer and Metrics (:func:`powertools`), and the
  three decorators of an entry point (:meth:`FunctionKit.entry_point`);
- the settings and the :class:`~dynashard.Dynashard` facade of a function, each built
  once per execution environment in a registered container cache (:func:`function_kit`,
  :mod:`dynashard.lambda_kit.cache`);
- optional dependencies a handler takes for tests (:class:`Dependency`).

Powertools is imported when a function asks for it, not with this module, so the
registry can be used (by the sandbox, by tests) without loading it; the HTTP plumbing
(:mod:`dynashard.lambda_kit.rest`, the API models) only by a REST API entry point.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel

from dynashard import names
from dynashard.errors import DynashardError
from dynashard.lambda_kit.cache import ContainerCache, container_cache

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger, Metrics, Tracer
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from dynashard.errors import ConfigurationError
    from dynashard.facade import Dynashard
    from dynashard.lambda_kit.settings import FunctionSettings

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

#: What :meth:`FunctionKit.warm` defers to the first invocation instead of failing init:
#: invalid settings (pydantic's ``ValidationError`` is a ``ValueError``), a configuration
#: the library refuses (``DynashardError``), and botocore's own errors (no region, a
#: malformed endpoint, a schema check that cannot reach the table). Anything else is a
#: bug, and fails the import.
INIT_ERRORS: tuple[type[Exception], ...] = (ValueError, DynashardError, BotoCoreError, ClientError)

#: Correlation id of a REST API (v1) proxy event, for :meth:`FunctionKit.entry_point`.
API_GATEWAY_REST_REQUEST_ID = "requestContext.requestId"


# --- SnapStart ------------------------------------------------------------------------------
#: The module of Lambda's runtime hooks (Python 3.12+ managed runtimes).
RUNTIME_HOOKS_MODULE = "snapshot_restore_py"
_HOOKS_LOCK = threading.Lock()
_hooks_registered = False


def register_after_restore() -> bool:
    """Register dynashard's after-restore hook, where Lambda's runtime offers hooks.

    dynashard's own draws hold no state to reseed (:mod:`dynashard.core.entropy`); the
    hook reseeds the ``random`` module's shared generator, which other libraries draw
    from (botocore's retry jitter), so that environments resumed from one SnapStart
    snapshot do not draw the same numbers. Called by :func:`function_kit`; registers once
    per process. Outside Lambda (no ``snapshot_restore_py``) it does nothing.

    Returns
    -------
    bool
        Whether the hook is registered (now or before).
    """
    global _hooks_registered
    from dynashard.core.entropy import reseed_shared_random

    with _HOOKS_LOCK:
        if not _hooks_registered:
            try:
                hooks = importlib.import_module(RUNTIME_HOOKS_MODULE)
            except ImportError:  # not Lambda's Python runtime
                return False
            hooks.register_after_restore(reseed_shared_random)
            _hooks_registered = True
        return True


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
        The function's settings, validated on first use (a function's module asks for
        it at import, :meth:`warm`) and cached; raises
        :class:`~dynashard.errors.ConfigurationError` (its cause the
        ``pydantic.ValidationError``) if a variable is missing or invalid
        (:func:`misconfiguration_reported`).
    get_facade : ContainerCache of Dynashard
        The facade over the configured tables (its boto3 client is created lazily);
        raises :class:`~dynashard.errors.ConfigurationError` if the settings make no
        facade (``default_shards`` above ``max_shards``).
    module : str
        The function module's ``__name__``: the module of the handlers the kit makes.
    """

    logger: Logger
    tracer: Tracer
    metrics: Metrics
    get_settings: ContainerCache[S]
    get_facade: ContainerCache[Dynashard]
    module: str = __name__

    def warm(self, *builders: Callable[[], object]) -> bool:
        """Build now, in Lambda's Init phase, what the first invocation would otherwise build.

        Call it at the end of the function's module, with the container-cached getters
        (and other builders) every invocation needs: the settings, the facade and its
        boto3 clients. Built at init, they belong to a SnapStart snapshot and to a
        provisioned-concurrency environment, as the Lambda Developer Guide recommends
        ("Maximize Lambda SnapStart performance": initialise the resources that
        contribute to startup latency in the initialization code, not in the handler).
        Nothing here calls AWS (a connection opened at init would be a stale one in a
        restored snapshot), except :meth:`~dynashard.Dynashard.check` when
        ``config.check_schema`` is set.

        A build that fails with a configuration or SDK error (:data:`INIT_ERRORS`) does
        not fail the import: it is logged as a warning and the remaining builders are
        skipped, and since a failed container-cache build caches nothing, the first
        invocation builds again and raises the same error through the handler's own
        error path (a misconfigured function answers its callers, it does not crash
        its init).

        Parameters
        ----------
        *builders : callable
            Called in order, their results dropped (a getter caches its own).

        Returns
        -------
        bool
            True when every builder ran, False when one failed (logged).
        """
        for build in builders:
            try:
                build()
            except INIT_ERRORS as exc:
                self.logger.warning(
                    "init: build deferred to the first invocation",
                    extra={
                        "builder": getattr(build, "name", None) or getattr(build, "__name__", ""),
                        "error_type": type(exc).__name__,
                        "error": str(exc),
                    },
                )
                return False
        return True

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

        The errors are mapped by :func:`~dynashard.lambda_kit.rest.register_error_handlers`; the
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
        # Imported here: a queue or stream function loads no HTTP plumbing (nor the API
        # models it names).
        from dynashard.lambda_kit.rest import not_json, register_error_handlers, routable

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
        :class:`~dynashard.lambda_kit.settings.FunctionSettings` or a subclass (a function with
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
    tools = powertools(namespace)

    def build_settings() -> S:
        with misconfiguration_reported(tools):
            return settings_model()  # type: ignore[call-arg]  # values come from the environment

    settings = container_cache(build_settings, name=f"{module}.get_settings")

    def build_facade() -> Dynashard:
        from dynashard.facade import Dynashard

        function_settings = settings()
        with misconfiguration_reported(tools):
            config = function_settings.to_config()
            facade = Dynashard(config)
        if config.check_schema:  # a table brought by its owner: checked at cold start
            facade.check()
        return facade

    facade = container_cache(build_facade, name=f"{module}.get_facade")
    register_after_restore()  # SnapStart: see core.entropy
    return FunctionKit(tools.logger, tools.tracer, tools.metrics, settings, facade, module)


@contextmanager
def misconfiguration_reported(tools: Powertools) -> Iterator[None]:
    """Turn a settings or facade build that fails on the environment into a ConfigurationError.

    The function's settings (``pydantic.ValidationError``, located at the variable) and
    the facade they configure (``InvalidInputError``, e.g. ``default_shards`` above
    ``max_shards``) are built from what the stack set, never from a request: their
    failure is the operator's, so it is raised again as
    :class:`~dynashard.errors.ConfigurationError` (an HTTP API's 500, not a 400), logged
    at error level (``function misconfigured``, with the settings named) and counted
    (the metric :data:`~dynashard.names.METRIC_FUNCTION_MISCONFIGURED`, which the stack
    alarms on; flushed by :meth:`FunctionKit.entry_point`'s metrics decorator).

    Parameters
    ----------
    tools : Powertools
        The function's logger and metrics.

    Yields
    ------
    None
        The block builds the settings or the facade.

    Raises
    ------
    ConfigurationError
        From the block's ``pydantic.ValidationError`` or ``InvalidInputError``, chained.
    """
    from pydantic import ValidationError

    from dynashard.errors import ConfigurationError, InvalidInputError

    try:
        yield
    except ValidationError as exc:
        problems = [
            (".".join(str(p) for p in e["loc"]) or "settings", e["msg"]) for e in exc.errors()
        ]
        error = ConfigurationError(
            [where for where, _ in problems], "; ".join(f"{w}: {m}" for w, m in problems)
        )
        _report(tools, error)
        raise error from exc
    except InvalidInputError as exc:
        error = ConfigurationError([exc.field], exc.message)
        _report(tools, error)
        raise error from exc


def _report(tools: Powertools, error: ConfigurationError) -> None:
    """Log and count a function's misconfiguration (see :func:`misconfiguration_reported`)."""
    from aws_lambda_powertools.metrics import MetricUnit

    tools.logger.error(
        "function misconfigured", extra={"settings": error.settings, "error": error.message}
    )
    tools.metrics.add_metric(
        name=names.METRIC_FUNCTION_MISCONFIGURED, unit=MetricUnit.Count, value=1
    )


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
