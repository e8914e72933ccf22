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

import importlib.util
import itertools
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

Handler = Callable[..., Any]

#: Numbers the module copies of all pools, so that their names never collide.
_COPY_NUMBERS = itertools.count(1)

#: Held by every invocation of a Powertools REST-resolver handler in this process: the
#: resolver keeps the current event on a class attribute (see the module docstring).
API_RESOLVER_LOCK = threading.Lock()


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

    Raises
    ------
    ValueError
        If ``ref`` is not ``module:attribute``.

    Examples
    --------
    >>> fn = LocalFunction("functions.query.app:handler")  # doctest: +SKIP
    >>> fn(event, context)  # doctest: +SKIP
    """

    def __init__(self, ref: str, serialize_with: threading.Lock | None = None) -> None:
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
        created = [getattr(load_module_copy(self._module), self._attr) for _ in range(missing)]
        with self._lock:
            self._idle.extend(created)
            self._cold_starts += len(created)
        return len(created)

    def _acquire(self) -> Handler:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        handler: Handler = getattr(load_module_copy(self._module), self._attr)
        with self._lock:
            self._cold_starts += 1
        return handler

    def __call__(self, event: Any, context: Any) -> Any:
        """Invoke the handler in an idle environment, or in a new one when all are busy.

        Parameters
        ----------
        event : Any
            The Lambda event.
        context : Any
            The Lambda context.

        Returns
        -------
        Any
            What the handler returned; what it raised propagates, and the environment
            stays in the pool, as Lambda keeps an environment after a function error.
        """
        handler = self._acquire()
        try:
            if self._serialize_with is None:
                return handler(event, context)
            with self._serialize_with:
                return handler(event, context)
        finally:
            with self._lock:
                self._idle.append(handler)


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
