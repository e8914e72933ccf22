"""What the sandbox's long-running pieces share: start/stop as a context, and Ctrl-C.

:class:`StartStop` turns a ``start()`` / ``stop()`` pair into a context manager
(DynamoDB Local, the emulator's server thread); :func:`wait_for_stop_signal` is how
the command-line servers (``python -m sandbox.serve``, ``python -m sandbox.emulator``)
wait until SIGINT or SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from types import TracebackType


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
