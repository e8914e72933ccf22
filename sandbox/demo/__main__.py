"""``python -m sandbox.demo``: run the demo (:func:`sandbox.demo.cli.main`)."""

from __future__ import annotations

import sys

from sandbox.demo.cli import main

if __name__ == "__main__":
    sys.exit(main())
