"""``python -m sandbox.scenarios.chaos``: the chaos run (:func:`sandbox.scenarios.chaos.main`)."""

from __future__ import annotations

import sys

from sandbox.scenarios.chaos import main

if __name__ == "__main__":
    sys.exit(main())
