"""The fleet simulation: thousands of logical keys, the library's scaler, emulated time.

``python -m bench fleet`` (:func:`bench.fleet.run.main`); the model is in
:mod:`bench.fleet.sim`, what stands in for AWS in :mod:`bench.fleet.cloud`.
"""

from bench.fleet.run import main

__all__ = ["main"]
