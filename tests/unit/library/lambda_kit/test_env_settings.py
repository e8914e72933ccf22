"""The functions' settings read their variables without pydantic-settings (issue 29)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dynashard import names
from dynashard.lambda_kit.settings import FunctionSettings, environment_values

ENV = {names.ENV_DATA_TABLE: "events-data", names.ENV_METADATA_TABLE: "events-shards"}


def test_settings_come_from_the_variables_their_fields_name() -> None:
    env = {**ENV, names.ENV_DEFAULT_SHARDS: "4", names.ENV_IN_BAND_GROWTH: "false"}
    settings = FunctionSettings(_environ=env)
    assert (settings.data_table, settings.default_shards, settings.in_band_growth) == (
        "events-data",
        4,
        False,
    )
    assert settings.write_max_attempts == 8  # the default, no variable set


def test_a_bad_variable_is_an_error_naming_it() -> None:
    with pytest.raises(ValidationError) as raised:
        FunctionSettings(_environ={**ENV, names.ENV_DEFAULT_SHARDS: "0"})
    assert [e["loc"] for e in raised.value.errors()] == [(names.ENV_DEFAULT_SHARDS,)]
    assert names.ENV_DEFAULT_SHARDS in str(raised.value)


def test_a_missing_variable_is_an_error_naming_it() -> None:
    with pytest.raises(ValidationError) as raised:
        FunctionSettings(_environ={names.ENV_DATA_TABLE: "events-data"})
    assert [e["loc"] for e in raised.value.errors()] == [(names.ENV_METADATA_TABLE,)]


def test_an_explicit_value_beats_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**ENV, names.ENV_DEFAULT_SHARDS: "4"}.items():
        monkeypatch.setenv(name, value)
    assert FunctionSettings().default_shards == 4  # os.environ by default
    assert FunctionSettings(default_shards=2).default_shards == 2


def test_only_the_named_variables_are_read() -> None:
    found = environment_values(FunctionSettings, {**ENV, "HOME": "/root"})
    assert found == ENV
