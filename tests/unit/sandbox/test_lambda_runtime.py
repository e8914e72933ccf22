"""Execution environments: concurrent invocations never share a module's globals."""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from sandbox.local_aws.lambda_runtime import LocalFunction, load_module_copy

# A handler that keeps the current event in a module global, as Powertools' resolver
# keeps it on the module-level app: it stores the event, waits until every concurrent
# invocation has stored its own, then answers from the global.
HANDLER_SOURCE = """
import threading
import time

current = None
barrier = None


def handler(event, context):
    global current
    current = event
    if barrier is not None:
        barrier.wait(timeout=5)
    return current
"""


@pytest.fixture
def stateful_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"stateful_handler_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(HANDLER_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[module]


def _invoke_concurrently(handler: Callable[..., Any], n: int) -> list[Any]:
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(lambda i: handler({"id": i}, None), range(n)))


def test_one_shared_module_mixes_up_concurrent_events(
    stateful_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hazard the module copies exist for: a LocalFunction whose environments all
    # share one imported module (as calling one imported handler from threads does)
    module = importlib.import_module(stateful_module)
    module.barrier = threading.Barrier(4)
    monkeypatch.setattr("sandbox.local_aws.lambda_runtime.load_module_copy", lambda name: module)
    fn = LocalFunction(f"{stateful_module}:handler")
    answers = _invoke_concurrently(fn, 4)
    # every invocation answers with the event stored last, not its own
    assert len({a["id"] for a in answers}) == 1


def test_each_concurrent_invocation_runs_in_its_own_environment(
    stateful_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a function whose environments all wait for each other (so 4 run at once)
    barrier = threading.Barrier(4)
    real_copy = load_module_copy

    def copy_with_barrier(name: str) -> Any:
        module = real_copy(name)
        module.barrier = barrier
        return module

    monkeypatch.setattr("sandbox.local_aws.lambda_runtime.load_module_copy", copy_with_barrier)
    fn = LocalFunction(f"{stateful_module}:handler")
    # When 4 invocations run concurrently
    answers = _invoke_concurrently(fn, 4)
    # Then each answers with its own event, from one of 4 cold-started environments
    assert [a["id"] for a in answers] == [0, 1, 2, 3]
    assert fn.cold_starts == 4


def test_an_idle_environment_is_reused(stateful_module: str) -> None:
    fn = LocalFunction(f"{stateful_module}:handler")
    assert [fn({"id": i}, None)["id"] for i in range(3)] == [0, 1, 2]
    assert fn.cold_starts == 1


def test_provisioned_environments_serve_the_first_invocations_warm(
    stateful_module: str,
) -> None:
    # Given a function with 3 environments provisioned ahead
    fn = LocalFunction(f"{stateful_module}:handler")
    assert fn.provision(3) == 3 and fn.cold_starts == 3
    # When 3 invocations run, and the pool is provisioned again to the same size
    assert [fn({"id": i}, None)["id"] for i in range(3)] == [0, 1, 2]
    assert fn.provision(3) == 0
    # Then none of them paid a cold start
    assert fn.cold_starts == 3


def test_module_copies_have_their_own_globals(stateful_module: str) -> None:
    first, second = load_module_copy(stateful_module), load_module_copy(stateful_module)
    first.handler({"id": "a"}, None)
    assert first.current == {"id": "a"} and second.current is None
    assert first.__name__ != second.__name__ and first.__name__ in sys.modules


@pytest.mark.parametrize("ref", ["no_colon", ":handler", "module:"])
def test_a_bad_reference_is_refused(ref: str) -> None:
    with pytest.raises(ValueError, match="module:attribute"):
        LocalFunction(ref)


def test_an_unknown_module_is_named() -> None:
    with pytest.raises(ModuleNotFoundError, match="no_such_module_here"):
        load_module_copy("no_such_module_here")


def test_powertools_resolvers_share_the_current_event_across_instances() -> None:
    # Why API handlers are serialized: two resolvers (two modules, two functions) see
    # one current event, so no module copy can isolate concurrent API invocations.
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver

    from sandbox.local_aws.aws_events import LambdaContext, api_gateway_event

    first, second = APIGatewayRestResolver(), APIGatewayRestResolver()
    seen: list[str] = []

    @first.get("/first")
    def route() -> dict[str, str]:
        seen.append(second.current_event.path)
        return {}

    first.resolve(api_gateway_event("GET", "/first"), LambdaContext(function_name="f"))
    assert seen == ["/first"]


def test_serialized_invocations_never_overlap(stateful_module: str) -> None:
    # Given a function serialized on a lock, and invocations that record how many run
    running, most = 0, 0
    guard = threading.Lock()
    fn = LocalFunction(f"{stateful_module}:handler", serialize_with=threading.Lock())
    real_call = fn._acquire

    def counting_acquire() -> Callable[..., Any]:
        handler = real_call()

        def wrapped(event: Any, context: Any) -> Any:
            nonlocal running, most
            with guard:
                running += 1
                most = max(most, running)
            time.sleep(0.01)
            with guard:
                running -= 1
            return handler(event, context)

        return wrapped

    fn._acquire = counting_acquire  # type: ignore[method-assign]
    # When 6 invocations are sent at once
    answers = _invoke_concurrently(fn, 6)
    # Then each got its own event, and never two ran at the same time
    assert [a["id"] for a in answers] == list(range(6))
    assert most == 1


def test_a_timeout_counts_the_function_own_time_not_its_wait_for_the_lock(
    stateful_module: str,
) -> None:
    # Given an API-like function whose invocations are serialized on a lock, with a
    # 0.2 s timeout, and the lock held by another invocation for 0.5 s
    lock = threading.Lock()
    fn = LocalFunction(f"{stateful_module}:handler", serialize_with=lock, timeout_s=0.2)
    holder = threading.Thread(target=lambda: (lock.acquire(), time.sleep(0.5), lock.release()))
    holder.start()
    time.sleep(0.05)
    # When a quick invocation waits for it
    assert fn({"id": 1}) == {"id": 1}
    holder.join()
    # Then no timeout is counted: the wait was the lock's, not the function's
    assert fn.timeouts == 0
    # and an invocation that itself outlasts its timeout is counted
    slow = LocalFunction(f"{stateful_module}:handler", timeout_s=0.0)
    slow({"id": 2})
    assert slow.timeouts == 1
