"""Unit tests run with sockets off: nothing here may reach a network, not even loopback."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_socket import disable_socket, enable_socket


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    disable_socket(allow_unix_socket=True)
    yield
    enable_socket()


def _atomic_calls(client: Any) -> Any:
    """Make each call of a moto-backed client atomic; return the client.

    moto's in-process backends are not thread-safe (getmoto/moto#372): two UpdateItems
    of one item from the library's worker threads can fail inside moto ("dictionary
    changed size during iteration" while it copies the item), which DynamoDB never does.
    The library still issues its calls from its threads; moto serves them one at a time,
    each whole, as DynamoDB applies a single-item write. (botocore has no public hook
    around a whole call, hence its ``_make_api_call``.)
    """
    lock = threading.Lock()
    call = client._make_api_call

    def atomic(operation_name: str, api_params: dict[str, Any]) -> Any:
        with lock:
            return call(operation_name, api_params)

    client._make_api_call = atomic
    return client


@pytest.fixture
def atomic_calls() -> Callable[[Any], Any]:
    """:func:`_atomic_calls`, for the fixtures that build a moto client the library shares
    between threads."""
    return _atomic_calls
