"""The sandbox's clock: emulated time that runs faster than wall time.

:class:`AcceleratedClock` lets a whole CloudWatch minute pass in a few seconds of wall
time when the partition emulator (token buckets, per-minute figures), the local alarms
(:mod:`sandbox.local_aws.alarms`) and the shard metadata (cooldown, cache lifetime) all share it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class AcceleratedClock:
    """A clock that runs ``speed`` times faster than wall time.

    Share it between the emulator (token buckets, per-minute figures), the alarm and
    the shard metadata (cooldown, cache lifetime) so a CloudWatch minute passes in
    ``60 / speed`` wall seconds. Every rate is then per emulated second: a limit of
    ``L`` units per emulated second admits ``L * speed`` units per wall second.

    Parameters
    ----------
    speed : float
        Emulated seconds per wall second, ``> 0``.
    start : float
        Emulated epoch seconds at creation; default the wall clock rounded down to a
        minute, so figures start at a period boundary.
    monotonic : callable
        Wall-time source (seconds); injectable for tests.

    Raises
    ------
    ValueError
        If ``speed`` is not positive.
    """

    speed: float = 1.0
    start: float = field(default_factory=lambda: float(int(time.time()) // 60 * 60))
    monotonic: Callable[[], float] = time.monotonic
    _origin: float = field(init=False, repr=False, default=0.0)

    def __post_init__(self) -> None:
        if self.speed <= 0:
            raise ValueError(f"speed must be > 0, got {self.speed}")
        self._origin = self.monotonic()

    @property
    def origin(self) -> float:
        """float: The wall time (``monotonic``) at which the clock read ``start``."""
        return self._origin

    def __call__(self) -> float:
        """Return the emulated time, epoch seconds."""
        return self.start + (self.monotonic() - self._origin) * self.speed

    def wall_seconds(self, emulated_s: float) -> float:
        """Convert an emulated duration to wall seconds.

        Parameters
        ----------
        emulated_s : float
            Emulated seconds.

        Returns
        -------
        float
            ``emulated_s / speed``.
        """
        return emulated_s / self.speed
