"""The library's one source of randomness: the operating system's generator.

Every random draw dynashard makes (a ``random`` key's shard without an event id, a
counter increment's shard, the full-jitter back-off of the writer and of the metadata
updates) comes from :data:`SYSTEM_RANDOM`, a :class:`random.SystemRandom`: each draw
reads ``os.urandom``, so the generator holds no state that a process image could copy.

That matters under Lambda SnapStart, which resumes many execution environments from one
snapshot of an initialised one ("Handling uniqueness with Lambda SnapStart", AWS Lambda
Developer Guide): a Mersenne Twister seeded during initialisation would be restored with
the same state everywhere, and every restored environment would pick the same shard
sequence and back off in step with its twins. The system generator needs no hook to be
reseeded, leaves no window between restore and reseed, and works the same outside
Lambda; a draw costs one ``getrandom`` call, microseconds beside the DynamoDB call it
chooses for.

Code dynashard does not own still uses the ``random`` module's shared generator
(botocore's retry jitter does); :func:`reseed_shared_random` reseeds it from the
system, and the Lambda kit registers it as an after-restore hook where the runtime has
them (:func:`dynashard.lambda_kit.kit.register_after_restore`).
"""

from __future__ import annotations

import os
import random
from typing import Final

#: The generator of every dynashard draw (B311 does not apply: it is the system's CSPRNG).
SYSTEM_RANDOM: Final = random.SystemRandom()


def reseed_shared_random() -> None:
    """Reseed the ``random`` module's shared generator from ``os.urandom``.

    For the libraries that draw from it (botocore's retry jitter): after a SnapStart
    restore, every environment resumed from one snapshot would otherwise draw the same
    numbers.
    """
    random.seed(os.urandom(32))
