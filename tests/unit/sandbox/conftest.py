"""Fixtures of the sandbox unit tests."""

from __future__ import annotations

import os

# Powertools reads these when the scaler module is imported (module-level Logger,
# Tracer, Metrics); its Tracer opens a UDP socket on import, so the scaler is imported
# here, at collection, while sockets are still allowed.
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "1")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "dynashard-test")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "dynashard")

from functions.scaler import app as _scaler  # noqa: F401
