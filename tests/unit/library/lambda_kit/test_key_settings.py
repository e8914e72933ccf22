"""The stack's key settings: parsing (pure) and what the applier does to new and stored keys."""

from __future__ import annotations

import json
import logging

import pytest

from dynashard import Dynashard
from dynashard.errors import InvalidInputError
from dynashard.lambda_kit.key_settings import (
    MAX_KEY_SETTINGS_BYTES,
    KeySetting,
    KeySettingsApplier,
    dump_key_settings,
    parse_key_settings,
)


def test_settings_round_trip_through_their_environment_json() -> None:
    raw = [
        {
            "key": "DEPARTURES#JFK",
            "strategy": "calculated",
            "attribute": "carrier",
            "max_shards": 16,
        }
    ]
    settings = parse_key_settings(json.dumps(raw))
    assert settings == (KeySetting(**raw[0]),)
    assert json.loads(dump_key_settings(settings)) == raw
    assert parse_key_settings(None) == parse_key_settings(" ") == ()


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('[{"key": "K", "strategy": "calculated"}]', "key_settings[0]"),
        ('[{"key": "K", "strategy": "random", "attribute": "a"}]', "key_settings[0]"),
        ('[{"key": "K"}]', "key_settings[0]"),  # sets nothing
        ('[{"key": "K", "shards": 8, "max_shards": 4}]', "key_settings[0]"),
        ('[{"key": "K", "max_shards": 1001}]', "key_settings[0].max_shards"),
        ('[{"key": "K", "max_shards": 2}, {"key": "K", "max_shards": 3}]', "key_settings[1].key"),
        ('[{"key": "K", "strategy": "ordered"}]', "key_settings[0].strategy"),
        ("{not json", "key_settings"),
    ],
)
def test_a_bad_setting_names_its_field(raw: str, field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_key_settings(raw)
    assert caught.value.field == field


def test_settings_longer_than_their_share_of_the_environment_are_refused() -> None:
    many = [{"key": f"KEY#{i:04d}", "max_shards": 8} for i in range(MAX_KEY_SETTINGS_BYTES // 20)]
    with pytest.raises(InvalidInputError, match="4 KB"):
        parse_key_settings(json.dumps(many))


def test_applier_creates_new_keys_and_leaves_stored_ones(facade: Dynashard) -> None:
    ds = facade
    ds.set_strategy("OLD", "random")
    applier = KeySettingsApplier(
        parse_key_settings(
            json.dumps(
                [
                    {"key": "NEW", "strategy": "calculated", "attribute": "carrier", "shards": 2},
                    {"key": "CAP", "max_shards": 4},
                    {"key": "OLD", "strategy": "calculated", "attribute": "carrier"},
                ]
            )
        )
    )
    outcomes = applier.ensure(ds, logging.getLogger("test"))
    assert [(o.key, o.action) for o in outcomes] == [
        ("NEW", "created"),
        ("CAP", "created"),
        ("OLD", "differs"),
    ]
    assert ds.shard_info("NEW").strategy_label == "calculated(carrier)"
    assert ds.shard_info("NEW").number_of_shards == 2
    assert ds.shard_info("CAP").max_shards == 4
    assert ds.shard_info("OLD").strategy_label == "random"
    # Once applied, nothing is left to do (no more reads per invocation)
    assert applier.pending == [] and applier.ensure(ds, logging.getLogger("test")) == []
