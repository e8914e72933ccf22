"""Thread-safe counts of a run (the demo's replay, a poller), shared by their stats classes."""

from __future__ import annotations

import threading
from typing import Final

#: Error messages a tally keeps; later ones are dropped (the counts stay exact).
MAX_ERRORS: Final = 50


class Tally:
    """Mixin of a ``@dataclass`` of int counts with ``errors: list[str]`` and ``_lock``.

    The dataclass declares its counts, ``errors`` and a ``_lock`` field
    (``field(default_factory=threading.Lock, repr=False)``); this adds the two ways
    worker threads change them.
    """

    errors: list[str]
    _lock: threading.Lock

    def add(self, **deltas: int) -> None:
        """Add to counts atomically.

        Parameters
        ----------
        **deltas : int
            Field name to increment.
        """
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def error(self, message: str) -> None:
        """Keep an error message (the first :data:`MAX_ERRORS`).

        Parameters
        ----------
        message : str
            What went wrong.
        """
        with self._lock:
            if len(self.errors) < MAX_ERRORS:
                self.errors.append(message)
