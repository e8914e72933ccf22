"""What the sandbox's long-running pieces share: start/stop as a context, and Ctrl-C.

:class:`StartStop` turns a ``start()`` / ``stop()`` pair into a context manager
(DynamoDB Local, the emulator's server thread); :func:`wait_for_stop_signal` is how
the command-line servers (``python -m sandbox.serve``, ``python -m sandbox.emulator``)
wait until SIGINT or SIGTERM; :func:`exit_on_sigterm` makes the batch commands (the
demo, the chaos run, the benchmarks) stop their engines on SIGTERM as on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Self

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
