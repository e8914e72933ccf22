"""Fixtures of the integration tests that need moto's server (SQS, Kinesis).

moto's server is an engine like DynamoDB Local: when it cannot start, the tests that
need it fail (``MotoServerStartError`` names what is missing); they never skip.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox.engines.moto_server import MotoServer


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    """moto's server (SQS, Kinesis) on a free port, for the whole session."""
    with MotoServer() as server:
        yield server
