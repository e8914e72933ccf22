"""The second act's growth loop: its settings."""

from __future__ import annotations

import pytest

from dynashard import names
from sandbox.scenarios.demo.growth import GrowthSettings


def test_settings_scale_the_limits_and_the_writers_cache_lifetime() -> None:
    settings = GrowthSettings(scale=0.01, speed=10.0, metadata_cache_ttl_s=30.0)
    assert settings.partition_wcu == pytest.approx(10.0)
    assert settings.partition_rcu == pytest.approx(30.0)
    env = settings.function_environment()
    assert env[names.ENV_PARTITION_WCU] == "10.0"
    assert env[names.ENV_METADATA_CACHE_TTL_S] == "3.0"  # 30 emulated s at x10
    # in-band growth as the stack deploys it, unless the act sets it
    assert names.ENV_IN_BAND_GROWTH not in env
    env = GrowthSettings(in_band_growth=True).function_environment()
    assert env[names.ENV_IN_BAND_GROWTH] == "true"
    with pytest.raises(ValueError, match="scale and speed"):
        GrowthSettings(speed=0)


def test_the_act_is_shorter_than_the_cool_period_so_its_sweep_never_shrinks() -> None:
    # The sweep shrinks only once the act's write-load rule has watched a whole cool
    # period (sandbox.local_aws.alarms.scaler_action); the second act lasts about 7 wall minutes,
    # at x1 time (x2 with --sample): at most 840 emulated seconds, with room to spare.
    from sandbox.env_vars import local_twin

    twin = local_twin()
    scaler = twin.function_spec("functions.scaler.app:handler").logical_id
    settings = GrowthSettings().with_stack(twin.function_environment(scaler))
    longest_act_emulated_s = 10 * 60 * 2.0
    assert settings.shrink_cool_period_s == 1800.0 > longest_act_emulated_s
    env = settings.function_environment()
    assert float(env[names.ENV_SHRINK_COOL_PERIOD_S]) == settings.shrink_cool_period_s


def test_unset_settings_come_from_the_stack_and_set_ones_stay() -> None:
    # the act's own choice stays; what it leaves unset is the template's, never a copy
    stack = {
        names.ENV_COOLDOWN_S: "90",
        names.ENV_METADATA_CACHE_TTL_S: "20",
        names.ENV_SHRINK_COOL_PERIOD_S: "3600",
    }
    settings = GrowthSettings(speed=2.0, cooldown_s=30.0).with_stack(stack)
    assert (settings.cooldown_s, settings.metadata_cache_ttl_s) == (30.0, 20.0)
    assert settings.shrink_cool_period_s == 3600.0
    env = settings.function_environment()
    assert env[names.ENV_METADATA_CACHE_TTL_S] == "10.0"  # 20 emulated s at x2
    assert names.ENV_COOLDOWN_S not in GrowthSettings().function_environment()


def test_the_emulator_charges_the_facades_own_session_too() -> None:
    # The facade's client comes from the library's own session (Query pages parsed once);
    # the second act's emulator must be installed there as on boto3's default session, or
    # the functions' writes pass it uncharged and no key is ever throttled.
    import boto3

    from dynashard.dynamodb.raw_items import raw_items_session
    from sandbox.sessions import client_sessions

    sessions = client_sessions()
    assert raw_items_session()._session in sessions
    assert boto3.DEFAULT_SESSION is not None and boto3.DEFAULT_SESSION._session in sessions


def test_the_second_act_redelivers_after_the_stacks_visibility_timeout() -> None:
    # SQS hands a failed record back after the ingest queue's visibility timeout: the act
    # takes it from the template (six times the queue function's timeout), not a copy
    from types import SimpleNamespace

    from sandbox.env_vars import local_twin
    from sandbox.scenarios.demo.hot_act import ingest_visibility_timeout_s
    from sandbox.twin.sources import SQS_HANDLER

    twin = local_twin()
    timeout_s = twin.function_spec(SQS_HANDLER).timeout_s
    assert ingest_visibility_timeout_s(SimpleNamespace(twin=twin)) == 6 * timeout_s
    with pytest.raises(RuntimeError, match="no twin"):
        ingest_visibility_timeout_s(SimpleNamespace(twin=None))
