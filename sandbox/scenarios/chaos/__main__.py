"""``python -m sandbox.scenarios.chaos``: the chaos run (its :func:`cli.main`)."""

from __future__ import annotations

import sys

from sandbox.scenarios.chaos.cli import main

if __name__ == "__main__":
    sys.exit(main())
