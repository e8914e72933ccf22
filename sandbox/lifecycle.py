"""What the sandbox's long-running pieces share: start/stop as a context, and Ctrl-C.

:class:`StartStop` turns a ``start()`` / ``stop()`` pair into a context manager
(DynamoDB Local, moto's server); :class:`BackgroundServer` is one for an aiohttp
application served from a thread of its own (the emulator's and the gateway's servers),
over :func:`serve_app`; :func:`wait_for_stop_signal` is how
the command-line servers (``python -m sandbox.serve``, ``python -m sandbox.emulator``)
wait until SIGINT or SIGTERM; :func:`exit_on_sigterm` makes the batch commands (the
demo, the chaos run, the benchmarks) stop their engines on SIGTERM as on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Self

from aiohttp import web

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType, TracebackType

#: Exit status of a command stopped by SIGTERM (128 + the signal number, as shells report).
SIGTERM_EXIT_STATUS = 128 + signal.SIGTERM


class StartStop(ABC):
    """A resource that runs between :meth:`start` and :meth:`stop`; a context manager.

    ``with resource:`` starts it and stops it on the way out, also after an error.
    """

    @abstractmethod
    def start(self) -> object:
        """Start the resource (what it returns is ignored by the context manager)."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the resource; a no-op when it is not running."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


async def serve_app(
    app: web.Application, host: str, port: int, *, access_log: bool = True
) -> tuple[web.AppRunner, str]:
    """Serve an aiohttp application on ``host:port`` from the running event loop.

    Parameters
    ----------
    app : aiohttp.web.Application
        What to serve.
    host : str
        Interface.
    port : int
        TCP port, 0 for any free one.
    access_log : bool
        Keep aiohttp's access log (``aiohttp.access``, INFO); off for the emulator,
        whose every DynamoDB request would be a line.

    Returns
    -------
    tuple of (aiohttp.web.AppRunner, str)
        The runner (``await runner.cleanup()`` stops serving) and the URL,
        ``http://host:port`` with the port bound.
    """
    runner = web.AppRunner(app) if access_log else web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    bound_host, bound_port = runner.addresses[0][:2]
    return runner, f"http://{bound_host}:{bound_port}"


class BackgroundServer(StartStop):
    """An aiohttp application served from an event loop of its own, in a daemon thread.

    For synchronous callers (tests, the demo, the benchmarks, fuzzers): :meth:`start`
    returns once the server listens, and HTTP clients talk to :attr:`url`. A subclass
    says what to serve (:meth:`make_app`).

    Parameters
    ----------
    host : str
        Interface (loopback by default).
    port : int
        Port, 0 for a free one.
    name : str
        What it is, for the thread's name and the error before :meth:`start`.
    access_log : bool
        Keep aiohttp's access log (see :func:`serve_app`).
    """

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, *, name: str, access_log: bool = True
    ) -> None:
        self.host, self.port = host, port
        self.name = name
        self.access_log = access_log
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._url: str | None = None

    @abstractmethod
    def make_app(self) -> web.Application:
        """Build the application to serve (called once per :meth:`start`, on the loop)."""

    @property
    def url(self) -> str:
        """str: ``http://host:port`` (after :meth:`start`)."""
        if self._url is None:
            raise RuntimeError(f"the {self.name} is not started")
        return self._url

    async def _serve(self) -> str:
        self._runner, url = await serve_app(
            self.make_app(), self.host, self.port, access_log=self.access_log
        )
        return url

    def start(self, timeout_s: float = 10.0) -> str:
        """Start the loop thread and the server.

        Parameters
        ----------
        timeout_s : float
            Seconds to wait for the server to listen.

        Returns
        -------
        str
            The URL.
        """
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(
            target=loop.run_forever, name=self.name.replace(" ", "-"), daemon=True
        )
        self._thread.start()
        self._url = asyncio.run_coroutine_threadsafe(self._serve(), loop).result(timeout_s)
        return self._url

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server and the loop thread; a no-op when it is not running.

        Parameters
        ----------
        timeout_s : float
            Seconds to wait for each step.
        """
        loop, thread, runner = self._loop, self._thread, self._runner
        if loop is None or thread is None:
            return
        if runner is not None:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout_s)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout_s)
        loop.close()
        self._loop = self._thread = self._runner = None
        self._url = None


async def wait_for_stop_signal(banner: str | None = None) -> None:
    """Wait until the process receives SIGINT or SIGTERM.

    Parameters
    ----------
    banner : str, optional
        Printed (and flushed) once the signal handlers are installed, so whoever reads
        it can use the server and stop it at once.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows
            loop.add_signal_handler(sig, stop.set)
    if banner is not None:
        print(banner, flush=True)
    await stop.wait()


@contextlib.contextmanager
def exit_on_sigterm() -> Iterator[None]:
    """Turn SIGTERM into ``SystemExit(143)`` inside the block, so ``with`` blocks unwind.

    Python's default for SIGTERM ends the process at once: no ``finally`` and no
    ``__exit__`` run, so DynamoDB Local's java process, moto's server and the emulator
    outlive a demo or benchmark stopped by ``timeout``, ``kill`` or a CI cancel. Inside
    this block the signal raises :class:`SystemExit` in the main thread instead, as
    Ctrl-C raises :class:`KeyboardInterrupt`, and every engine started in a ``with``
    block is stopped on the way out. The previous handler is restored afterwards.

    Yields
    ------
    None
        Run the command inside the block, in the main thread.
    """

    def stop(signum: int, frame: FrameType | None) -> None:
        sys.exit(SIGTERM_EXIT_STATUS)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
