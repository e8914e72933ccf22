"""Lambda execution environments, emulated in this process.

Lambda runs one invocation at a time in an execution environment, and serves
concurrent invocations from more environments, each with module globals of its own
(AWS Lambda Developer Guide, "Understanding Lambda function scaling" and "Lambda
execution environment lifecycle"). The functions rely on that: Powertools'
``APIGatewayRestResolver`` keeps the event it resolves on the resolver (on its class,
see below), and ``BatchProcessor`` keeps a batch's records, successes and failures on
the module-level ``processor``. Calling one imported handler from several threads at once
lets one invocation read another's event (a request's path parameters with another's
body) and report another batch's failures, which no deployed function can do.

:class:`LocalFunction` gives each concurrent invocation an environment of its own: a
pool of separately executed copies of the handler's module, created on demand (a cold
start) and reused when idle (a warm start). The library and every other module are
shared, as a layer's code is shared by the environments of one machine.

Two pieces of state a module copy cannot isolate, because they live on classes of the
shared Powertools package: the REST resolver's current event and the metric set of
``Metrics`` (``metrics.py``: ``_metrics`` and ``_metadata`` are class attributes). The
sandbox turns metrics off (``POWERTOOLS_METRICS_DISABLED``), so nothing flushes them
concurrently; the resolver is handled below.

Powertools' REST resolver stores the event it resolves on its base *class*
(``BaseRouter.current_event = ...`` in ``aws_lambda_powertools/event_handler/
api_gateway.py``, 3.x), shared by every resolver of the process. Invocations of API
handlers therefore run one at a time
(:data:`API_RESOLVER_LOCK`, :func:`api_function`); SQS and Kinesis handlers, whose
state is on their module's own ``BatchProcessor``, run concurrently.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandbox.local_aws.aws_events import LambdaContext
    from sandbox.twin.iam import RolePolicy

_log = logging.getLogger(__name__)

Handler = Callable[..., Any]

#: Numbers the module copies of all pools, so that their names never collide.
_COPY_NUMBERS = itertools.count(1)

#: Held by every invocation of a Powertools REST-resolver handler in this process: the
#: resolver keeps the current event on a class attribute (see the module docstring).
API_RESOLVER_LOCK = threading.Lock()

#: Held while a module copy executes with its function's own variables in ``os.environ``
#: (Powertools' Logger, Tracer and Metrics read ``POWERTOOLS_SERVICE_NAME`` at import).
_MODULE_ENV_LOCK = threading.Lock()


@contextlib.contextmanager
def _module_environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set ``values`` in ``os.environ`` while a module copy executes, then restore."""
    if not values:
        yield
        return
    from sandbox.env_vars import environ_set

    with _MODULE_ENV_LOCK, environ_set(values):
        yield


def load_module_copy(module_name: str) -> ModuleType:
    """Execute a fresh copy of a module, with globals of its own.

    The copy is named ``{module_name}__env{n}`` and registered in ``sys.modules`` (the
    functions' pydantic models resolve their annotations there), in the same package,
    so its relative imports resolve to the shared sibling modules.

    Parameters
    ----------
    module_name : str
        Dotted module name, e.g. ``functions.ingest.app``.

    Returns
    -------
    types.ModuleType
        The new module, executed.

    Raises
    ------
    ModuleNotFoundError
        If the module cannot be found or has no source file.
    """
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"no module named {module_name!r}", name=module_name)
    copy_name = f"{module_name}__env{next(_COPY_NUMBERS)}"
    copy_spec = importlib.util.spec_from_file_location(copy_name, spec.origin)
    if copy_spec is None or copy_spec.loader is None:
        raise ModuleNotFoundError(f"cannot load {spec.origin!r}", name=module_name)
    module = importlib.util.module_from_spec(copy_spec)
    sys.modules[copy_name] = module
    try:
        copy_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[copy_name]
        raise
    return module


class LocalFunction:
    """One Lambda function: invocations served by a pool of execution environments.

    Parameters
    ----------
    ref : str
        The handler, ``module:attribute`` (e.g. ``functions.ingest.app:sqs_handler``).
    serialize_with : threading.Lock, optional
        Held around each invocation, for handlers whose framework keeps process-wide
        state (:data:`API_RESOLVER_LOCK`); None lets invocations overlap.
    name : str
        The function's name (its context's ``function_name``).
    timeout_s : float
        The configured timeout, seconds: the context's remaining time counts down from
        it, and an invocation that outlasts it is counted in :attr:`timeouts` and
        logged (not cut short: a thread cannot be stopped, and this machine is slower
        than Lambda's).
    memory_mb : int
        The configured memory, MB (the context's ``memory_limit_in_mb``; not enforced).
    environment : mapping of str to str, optional
        Variables of this function alone (``POWERTOOLS_SERVICE_NAME``), set while each
        execution environment's module copy executes.
    role : RolePolicy, optional
        Its execution role: clients created while an environment initialises (its
        module's import) and during its invocations are checked against it
        (:mod:`sandbox.twin.iam`); None leaves them unchecked.

    Attributes
    ----------
    timeouts : int
        Invocations that took longer than ``timeout_s``.

    Raises
    ------
    ValueError
        If ``ref`` is not ``module:attribute``.

    Examples
    --------
    >>> fn = LocalFunction("functions.query.app:handler")  # doctest: +SKIP
    >>> fn(event, context)  # doctest: +SKIP
    """

    def __init__(
        self,
        ref: str,
        serialize_with: threading.Lock | None = None,
        *,
        name: str = "dynashard-local",
        timeout_s: float = 30.0,
        memory_mb: int = 512,
        environment: Mapping[str, str] | None = None,
        role: RolePolicy | None = None,
    ) -> None:
        module, sep, attr = ref.partition(":")
        if not sep or not module or not attr:
            raise ValueError(f"handler reference {ref!r} is not of the form module:attribute")
        self.ref = ref
        self._module = module
        self._attr = attr
        self._idle: list[Handler] = []
        self._lock = threading.Lock()
        self._cold_starts = 0
        self._serialize_with = serialize_with
        self.name = name
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.environment = dict(environment or {})
        self.role = role
        self.timeouts = 0

    def context(self) -> LambdaContext:
        """Return a fresh Lambda context for one invocation of this function.

        Returns
        -------
        LambdaContext
            Its name, memory, timeout and log group.
        """
        from sandbox.local_aws.aws_events import LambdaContext

        return LambdaContext(
            function_name=self.name,
            memory_limit_in_mb=self.memory_mb,
            timeout_s=self.timeout_s,
            log_group_name=f"/aws/lambda/{self.name}",
        )

    def _load(self) -> Handler:
        # Lambda's Init phase runs with the execution role too: the clients a module
        # builds at import (kit.warm) are checked against it, as an invocation's are.
        from sandbox.twin.iam import role_scope

        with _module_environment(self.environment), role_scope(self.role):
            handler: Handler = getattr(load_module_copy(self._module), self._attr)
        return handler

    @property
    def cold_starts(self) -> int:
        """int: Environments created so far: the most invocations in flight at once."""
        with self._lock:
            return self._cold_starts

    def provision(self, count: int) -> int:
        """Create idle execution environments ahead of the invocations that need them.

        Lambda's provisioned concurrency does the same: environments initialized before
        the load arrives, so that a burst of first invocations pays no cold start.

        Parameters
        ----------
        count : int
            Environments the pool should hold at least.

        Returns
        -------
        int
            Environments created now.
        """
        with self._lock:
            missing = max(0, count - len(self._idle))
        created = [self._load() for _ in range(missing)]
        with self._lock:
            self._idle.extend(created)
            self._cold_starts += len(created)
        return len(created)

    def _acquire(self) -> Handler:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        handler = self._load()
        with self._lock:
            self._cold_starts += 1
        return handler

    def __call__(self, event: Any, context: Any = None, **inject: Any) -> Any:
        """Invoke the handler in an idle environment, or in a new one when all are busy.

        Parameters
        ----------
        event : Any
            The Lambda event.
        context : Any, optional
            The Lambda context; default :meth:`context`.
        **inject
            Keyword arguments for handlers that take their ports as parameters (the
            scaler's local CloudWatch stand-ins).

        Returns
        -------
        Any
            What the handler returned; what it raised propagates, and the environment
            stays in the pool, as Lambda keeps an environment after a function error.
        """
        from sandbox.twin.iam import role_scope

        handler = self._acquire()
        with contextlib.ExitStack() as serialized:
            if self._serialize_with is not None:
                # waiting for the process-wide lock is not the function's time
                serialized.enter_context(self._serialize_with)
            started = time.monotonic()
            try:
                with role_scope(self.role):
                    context = context if context is not None else self.context()
                    return handler(event, context, **inject)
            finally:
                elapsed = time.monotonic() - started
                with self._lock:
                    self._idle.append(handler)
                    if elapsed > self.timeout_s:
                        self.timeouts += 1
                if elapsed > self.timeout_s:
                    _log.warning(
                        "%s: invocation took %.2f s, past its %.0f s timeout (Lambda would "
                        "have stopped it: Task timed out)",
                        self.name,
                        elapsed,
                        self.timeout_s,
                    )


def api_function(ref: str) -> LocalFunction:
    """Return a :class:`LocalFunction` for an API Gateway handler built on Powertools' resolver.

    Parameters
    ----------
    ref : str
        The handler, ``module:attribute``.

    Returns
    -------
    LocalFunction
        Invocations serialized on :data:`API_RESOLVER_LOCK`.
    """
    return LocalFunction(ref, serialize_with=API_RESOLVER_LOCK)
