"""The functions on the handler kit: their per-container caches, and how they are reset."""

from __future__ import annotations

import pytest

from dynashard import names
from dynashard.lambda_kit.cache import registered_caches, reset_all
from functions.ingest import app as ingest
from functions.query import app as query
from functions.scaler import app as scaler
from sandbox.env_vars import reset_function_caches

from .support import FakeFacade, LambdaContext, load_event


def test_the_functions_getters_are_registered_under_their_module() -> None:
    registered = {cache.name for cache in registered_caches()}
    assert {
        "functions.ingest.app.get_settings",
        "functions.ingest.app.get_facade",
        "functions.query.app.get_settings",
        "functions.query.app.get_facade",
        "functions.scaler.app.get_settings",
        "functions.scaler.app.get_facade",
        "functions.scaler.app.get_alarm_states",
        "functions.scaler.app.get_hot_key_source",
        "functions.scaler.app.get_offered_load_source",
    } <= registered


def test_settings_and_facade_are_built_once_per_container_and_reset_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a warm query function
    facade = query.get_facade()
    assert query.get_facade() is facade
    assert facade.config.data_table == names.DEFAULT_DATA_TABLE
    # When the environment points elsewhere and the sandbox starts the functions cold
    monkeypatch.setenv(names.ENV_DATA_TABLE, "other-data")
    cleared = reset_function_caches()
    # Then both getters were reset, and the next container sees the new table
    assert {"functions.query.app.get_settings", "functions.query.app.get_facade"} <= set(cleared)
    assert query.get_facade() is not facade
    assert query.get_facade().config.data_table == "other-data"
    facade.close()
    query.get_facade().close()


def test_reset_function_caches_starts_the_scaler_cold_with_its_own_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a warm scaler: its settings (the library's model plus its own fields) and
    # the offered-load adapter built from them
    assert isinstance(scaler.get_settings(), scaler.Settings)
    assert scaler.get_offered_load_source() is None
    # When the environment names a rule and the sandbox starts the functions cold
    monkeypatch.setenv(names.ENV_WRITE_LOAD_RULE, "offered-write-units")
    cleared = reset_function_caches()
    # Then the kit's getters and the scaler's own were reset, and rebuilt from the new
    # environment
    assert {
        "functions.scaler.app.get_settings",
        "functions.scaler.app.get_offered_load_source",
    } <= set(cleared)
    assert not scaler.get_settings.cached
    assert not scaler.get_offered_load_source.cached
    assert scaler.get_settings().write_load_rule == "offered-write-units"
    assert scaler.get_offered_load_source() is not None


def test_reset_all_leaves_an_injected_facade_alone(context: LambdaContext) -> None:
    # An injected facade is the invocation's, never cached: the container's stays cold
    ingest.api_handler(load_event("api_post_events"), context, facade=FakeFacade())
    assert not ingest.get_facade.cached
    assert "functions.ingest.app.get_facade" not in reset_all()
