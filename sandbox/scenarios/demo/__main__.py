"""``python -m sandbox.scenarios.demo``: run the demo (:func:`sandbox.scenarios.demo.cli.main`)."""

from __future__ import annotations

import sys

from sandbox.scenarios.demo.cli import main

if __name__ == "__main__":
    sys.exit(main())
