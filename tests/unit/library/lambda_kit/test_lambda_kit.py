"""dynashard.lambda_kit: the per-container cache registry and the handler kit."""

from __future__ import annotations

import base64
import binascii
import gc
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

# Powertools reads these when the kit creates its singletons; the Tracer builds the X-Ray
# recorder on import, which opens a UDP socket: import it at collection, sockets allowed.
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "1")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "dynashard-test")

from aws_lambda_powertools import Tracer  # noqa: F401
from aws_lambda_powertools.utilities.batch import EventType

from dynashard import lambda_kit, names
from dynashard.errors import ConfigurationError
from dynashard.lambda_kit.cache import (
    ContainerCache,
    container_cache,
    registered_caches,
    reset_all,
)
from dynashard.lambda_kit.kit import Dependency, function_kit
from dynashard.lambda_kit.settings import FunctionSettings
from tests.unit.functions.support import LambdaContext


class ScalerLikeSettings(FunctionSettings):
    """A function's settings with a field of its own."""

    extra_field: str = "default"


# Kits are made at collection, as a function module makes its own at import: Powertools'
# Tracer may open its UDP socket when created, and the tests run with sockets off.
KIT = function_kit("tests.fake_function", FunctionSettings)
SCALER_LIKE_KIT = function_kit("tests.scaler_like", ScalerLikeSettings)


@pytest.fixture(autouse=True)
def _cold() -> Iterator[None]:
    """Every test starts and ends with every registered cache cold."""
    reset_all()
    yield
    reset_all()


# --- the registry -----------------------------------------------------------------------------
def test_a_registered_getter_is_cached_then_reset_by_reset_all() -> None:
    # Given a getter registered with the kit
    builds: list[int] = []

    @container_cache
    def get_thing() -> list[int]:
        builds.append(1)
        return [len(builds)]

    # When it is called twice
    first = get_thing()
    # Then it built once, and the registry knows it
    assert get_thing() is first and builds == [1]
    assert get_thing.cached
    assert get_thing in registered_caches()
    assert get_thing.name.startswith(f"{__name__}.") and get_thing.name.endswith(".get_thing")
    # When every cache is reset
    cleared = reset_all()
    # Then it is named among the cleared, is cold, and builds again on the next call
    assert get_thing.name in cleared
    assert not get_thing.cached
    assert get_thing() == [2]
    # and a cold cache is not reported again
    assert get_thing.name in reset_all()
    assert get_thing.name not in reset_all()


def test_a_failing_build_caches_nothing() -> None:
    attempts: list[int] = []

    @container_cache
    def get_flaky() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("cold start failed")
        return "ok"

    with pytest.raises(RuntimeError):
        get_flaky()
    assert not get_flaky.cached
    assert get_flaky() == "ok"


def test_cache_clear_is_the_functools_spelling_of_reset() -> None:
    cache = container_cache(lambda: object(), name="tests.cache_clear")
    first = cache()
    cache.cache_clear()
    assert cache() is not first


def test_the_registry_forgets_a_cache_nobody_holds() -> None:
    # Given a cache whose owner (say a module copy of the sandbox) is gone
    cache = container_cache(lambda: 1, name="tests.dropped")
    assert cache in registered_caches()
    del cache
    gc.collect()
    # Then the registry no longer lists it
    assert "tests.dropped" not in [c.name for c in registered_caches()]


def test_registering_twice_lists_once() -> None:
    cache = ContainerCache(lambda: 1, "tests.twice")
    lambda_kit.register(cache)
    lambda_kit.register(cache)
    assert [c for c in registered_caches() if c is cache] == [cache]


def test_concurrent_first_calls_build_once() -> None:
    builds: list[int] = []
    gate = threading.Barrier(8)

    def build() -> int:
        builds.append(1)
        return 7

    cache = container_cache(build, name="tests.concurrent")

    def call() -> None:
        gate.wait()
        cache()

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == [1]


# --- function_kit -------------------------------------------------------------------------------
def test_function_kit_registers_settings_and_facade_under_the_module_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a function module's kit and its environment
    monkeypatch.setenv(names.ENV_DATA_TABLE, "data-a")
    monkeypatch.setenv(names.ENV_METADATA_TABLE, "meta-a")
    kit = KIT
    # When its getters are called
    settings = kit.get_settings()
    facade = kit.get_facade()
    # Then they are built once, from the environment, and registered under the module
    assert kit.get_settings() is settings and kit.get_facade() is facade
    assert facade.config.metadata_table == settings.metadata_table == "meta-a"
    assert facade.config.data_table == "data-a"
    assert kit.get_settings.name == "tests.fake_function.get_settings"
    assert kit.get_facade.name == "tests.fake_function.get_facade"
    # When the environment changes and every cache is reset (a new container)
    monkeypatch.setenv(names.ENV_DATA_TABLE, "data-b")
    cleared = reset_all()
    # Then both start cold and see the new environment
    assert {"tests.fake_function.get_settings", "tests.fake_function.get_facade"} <= set(cleared)
    assert kit.get_facade().config.data_table == "data-b"
    assert kit.logger.service == "dynashard-test"
    assert kit.metrics.namespace == names.METRICS_NAMESPACE
    facade.close()
    kit.get_facade().close()


def test_a_settings_subclass_keeps_its_own_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.ENV_DATA_TABLE, "data-a")
    monkeypatch.setenv(names.ENV_METADATA_TABLE, "meta-a")
    monkeypatch.delenv("extra_field", raising=False)
    reset_all()
    settings = SCALER_LIKE_KIT.get_settings()
    assert isinstance(settings, ScalerLikeSettings)
    assert settings.extra_field == "default"


def test_missing_settings_fail_loudly_at_first_use_not_at_kit_creation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pydantic

    monkeypatch.delenv(names.ENV_DATA_TABLE, raising=False)
    reset_all()
    with pytest.raises(ConfigurationError, match=names.ENV_DATA_TABLE) as raised:
        KIT.get_settings()
    assert isinstance(raised.value.__cause__, pydantic.ValidationError)
    assert names.ENV_DATA_TABLE in raised.value.settings
    assert not KIT.get_settings.cached


def test_warm_builds_the_getters_at_init_so_the_first_call_finds_them_cached(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a function's kit in a valid environment, its caches cold
    monkeypatch.setenv(names.ENV_DATA_TABLE, "data-w")
    monkeypatch.setenv(names.ENV_METADATA_TABLE, "meta-w")
    assert not KIT.get_settings.cached and not KIT.get_facade.cached
    order: list[str] = []
    # When the module warms its settings, its facade and one builder of its own
    warmed = KIT.warm(KIT.get_settings, KIT.get_facade, lambda: order.append("own"))
    # Then every builder ran, in order, and the getters serve what was built
    assert warmed is True and order == ["own"]
    assert KIT.get_settings.cached and KIT.get_facade.cached
    facade = KIT.get_facade()
    assert facade.config.data_table == "data-w"
    facade.close()


def test_warm_defers_a_misconfiguration_to_the_first_call_and_logs_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import pydantic

    # Given an environment without the data table (invalid settings)
    monkeypatch.delenv(names.ENV_DATA_TABLE, raising=False)
    later: list[str] = []
    # When the module warms at init
    with caplog.at_level("WARNING"):
        warmed = KIT.warm(KIT.get_settings, lambda: later.append("ran"))
    # Then the import does not fail: the error is logged, naming it, and the builders
    # after the failing one are skipped
    assert warmed is False and later == []
    (record,) = [r for r in caplog.records if r.getMessage().startswith("init: build deferred")]
    assert record.error_type == "ConfigurationError"  # type: ignore[attr-defined]
    assert record.builder == "tests.fake_function.get_settings"  # type: ignore[attr-defined]
    assert names.ENV_DATA_TABLE in record.error  # type: ignore[attr-defined]
    # And nothing was cached: the first call raises the same error (not swallowed)
    assert not KIT.get_settings.cached
    with pytest.raises(ConfigurationError, match=names.ENV_DATA_TABLE) as raised:
        KIT.get_settings()
    assert isinstance(raised.value.__cause__, pydantic.ValidationError)


def test_warm_lets_an_unexpected_error_fail_the_import() -> None:
    # A bug is not a misconfiguration: it fails init as it would fail every call
    def broken() -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError, match="bug"):
        KIT.warm(broken)


def test_entry_point_passes_injected_arguments_through() -> None:
    kit = KIT
    seen: dict[str, Any] = {}

    @kit.entry_point()
    def handler(event: dict[str, Any], context: Any, facade: Any = None) -> str:
        seen["facade"] = facade
        return "done"

    assert handler({}, LambdaContext(), facade="fake") == "done"
    assert seen == {"facade": "fake"}
    assert handler.__name__ == "handler"


# --- Dependency --------------------------------------------------------------------------------
def test_a_dependency_serves_the_injected_value_only_inside_the_block() -> None:
    store = Dependency("store", lambda: "container")
    assert store() == "container"
    with store.injected("fake"):
        assert store() == "fake"
        with store.injected(None):  # nothing injected: the default serves
            assert store() == "container"
        assert store() == "fake"
    assert store() == "container"


def test_a_dependency_injected_in_one_thread_is_not_seen_by_another() -> None:
    store = Dependency("store", lambda: "container")
    seen: list[str] = []
    with store.injected("fake"):
        worker = threading.Thread(target=lambda: seen.append(store()))
        worker.start()
        worker.join()
    assert seen == ["container"]


# --- HTTP and batches --------------------------------------------------------------------------
def test_path_value_decodes_percent_encoding() -> None:
    assert lambda_kit.path_value("CARRIER%23UA") == "CARRIER#UA"
    assert lambda_kit.path_value("plain") == "plain"


def test_sqs_payloads_and_redeliveries() -> None:
    event = {
        "Records": [
            {"messageId": "a", "body": "one", "attributes": {"ApproximateReceiveCount": "1"}},
            {"messageId": "b", "body": "two", "attributes": {"ApproximateReceiveCount": "3"}},
            {"messageId": "c"},
        ]
    }
    items, redelivered = lambda_kit.batch_payloads(event, EventType.SQS)
    assert [(item_id, payload()) for item_id, payload in items] == [
        ("a", "one"),
        ("b", "two"),
        ("c", ""),
    ]
    assert redelivered == {"b"}


def test_kinesis_payloads_decode_lazily_and_bad_base64_fails_only_its_record() -> None:
    event = {
        "Records": [
            {"kinesis": {"sequenceNumber": "1", "data": base64.b64encode(b"{}").decode()}},
            {"kinesis": {"sequenceNumber": "2", "data": "%%% not base64 %%%"}},
        ]
    }
    items, redelivered = lambda_kit.batch_payloads(event, EventType.KinesisDataStreams)
    assert [item_id for item_id, _ in items] == ["1", "2"]
    assert items[0][1]() == b"{}"
    with pytest.raises(binascii.Error):
        items[1][1]()
    assert redelivered == set()


def test_batch_payloads_of_another_source_is_an_error() -> None:
    with pytest.raises(ValueError, match="DynamoDBStreams"):
        lambda_kit.batch_payloads({"Records": []}, EventType.DynamoDBStreams)


def test_partial_batch_response_reports_failed_and_unseen_records(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kit = KIT
    event = {
        "Records": [
            {
                "messageId": m,
                "body": "{}",
                "receiptHandle": "h",
                "attributes": {},
                "eventSource": "aws:sqs",
            }
            for m in ("ok", "bad", "unseen")
        ]
    }
    response = lambda_kit.partial_batch_response(
        event, LambdaContext(), EventType.SQS, {"ok": None, "bad": "invalid event: x"}, kit.logger
    )
    assert response == {
        "batchItemFailures": [{"itemIdentifier": "bad"}, {"itemIdentifier": "unseen"}]
    }
    rejected = {r.item_id: r.reason for r in caplog.records if r.getMessage() == "record rejected"}
    assert rejected == {"bad": "invalid event: x", "unseen": lambda_kit.NOT_SEEN}


def test_the_error_body_model_serializes_its_fields() -> None:
    body = lambda_kit.ErrorResponse(message="limit: too big", field="limit")
    assert json.loads(body.model_dump_json(exclude_none=True)) == {
        "message": "limit: too big",
        "field": "limit",
    }
