"""Fixtures of the Lambda function tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

# Powertools reads these when the function modules are imported (module-level Logger,
# Tracer, Metrics), so they are set before any test module imports a function.
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "1")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "dynashard-test")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "dynashard")

import boto3
from moto import mock_aws

from dynashard import Dynashard, DynashardConfig, names

# Imported here, at collection, while sockets are still allowed: Powertools' Tracer
# builds the X-Ray recorder on import, and the recorder opens a UDP socket (no traffic).
from functions.ingest import app as ingest  # noqa: F401
from functions.query import app as query  # noqa: F401
from functions.scaler import app as scaler  # noqa: F401
from infra.table_specs import ALL_TABLES, DATA_TABLE, METADATA_TABLE, create_table_request
from sandbox.env_vars import reset_function_caches

from .support import LambdaContext

#: The query function's cursor key in these tests (the stack generates 64 characters).
CURSOR_KEY = "test-cursor-key-" + "k" * 48


@pytest.fixture(autouse=True)
def _function_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Give every test a valid function environment and cold caches."""
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    monkeypatch.setenv(names.ENV_DATA_TABLE, names.DEFAULT_DATA_TABLE)
    monkeypatch.setenv(names.ENV_METADATA_TABLE, names.DEFAULT_METADATA_TABLE)
    monkeypatch.setenv(names.ENV_CURSOR_KEY, CURSOR_KEY)
    reset_function_caches()
    yield
    reset_function_caches()


@pytest.fixture
def context() -> LambdaContext:
    return LambdaContext()


@pytest.fixture
def facade(atomic_calls: Callable[[Any], Any]) -> Iterator[Dynashard]:
    """A real Dynashard over moto tables created from the infra specs (no cooldown).

    Each moto call is atomic (``atomic_calls``): the facade calls from its threads.
    """
    with mock_aws():
        client = atomic_calls(boto3.client("dynamodb", region_name="us-east-1"))
        for spec in ALL_TABLES:
            client.create_table(**create_table_request(spec))
        ds = Dynashard(
            DynashardConfig(
                DATA_TABLE.default_name, METADATA_TABLE.default_name, cooldown_s=0.0, max_workers=4
            ),
            client=client,
        )
        yield ds
        ds.close()
