"""Exponential back-off with full jitter, for the retries botocore does not do itself.

``UnprocessedItems`` and ``UnprocessedKeys`` come back inside a successful response,
so botocore never retries them; AWS "strongly recommend[s] that you use an exponential
backoff algorithm" for them (BatchWriteItem API reference). Full jitter is from the AWS
Architecture Blog, "Exponential Backoff And Jitter": sleep
``uniform(0, min(cap, base * 2**attempt))``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from dynashard import defaults
from dynashard.core.entropy import SYSTEM_RANDOM

#: Error codes that mean "try again later" (throttling and transient server errors).
RETRYABLE_ERROR_CODES: Final = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionInProgressException",
    }
)


#: botocore attempts per call of the client for reads, counters and metadata (``standard``
#: mode's default, the first attempt included; botocore "Retries" guide).
CLIENT_MAX_ATTEMPTS: Final = 4


@dataclass(frozen=True)
class Backoff:
    """Exponential back-off with full jitter.

    Parameters
    ----------
    base_s : float
        Delay scale of the first retry, seconds.
    cap_s : float
        Largest delay, seconds.
    max_attempts : int
        Attempts in all, the first included.

    Examples
    --------
    The ceiling doubles with each attempt until it reaches ``cap_s``; the delay is
    drawn below it:

    >>> backoff = Backoff(base_s=0.05, cap_s=5.0)
    >>> all(0.0 <= backoff.delay(n) <= min(5.0, 0.05 * 2**n) for n in range(12))
    True
    """

    base_s: float = 0.05
    cap_s: float = 5.0
    max_attempts: int = defaults.WRITE_MAX_ATTEMPTS.default

    def delay(self, attempt: int) -> float:
        """Return the delay before retry number ``attempt`` (0-based), seconds.

        Parameters
        ----------
        attempt : int
            How many attempts have failed so far, minus one.

        Returns
        -------
        float
            ``uniform(0, min(cap_s, base_s * 2**attempt))``.
        """
        # The system's generator, so environments restored from one snapshot do not
        # retry in step (core.entropy).
        return SYSTEM_RANDOM.uniform(0.0, min(self.cap_s, self.base_s * (2**attempt)))
