"""Per-container caches that register themselves, so every function can be started cold again.

Lambda keeps module globals between invocations of one execution environment and
starts another environment with fresh ones ("Lambda execution environment lifecycle",
AWS Lambda Developer Guide). A cache made by :func:`container_cache` in a function's
module lives exactly that long; the sandbox, which runs each environment as a copy of
the module, gets one cache per copy. :func:`reset_all` empties every live cache (the
sandbox and the tests start a function cold with it). Loads no Powertools.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

if TYPE_CHECKING:
    pass


T = TypeVar("T")


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
