"""The second act's growth loop: its settings."""

from __future__ import annotations

import pytest

from dynashard import names
from sandbox.demo.growth import GrowthSettings


def test_settings_scale_the_limits_and_the_writers_cache_lifetime() -> None:
    settings = GrowthSettings(scale=0.01, speed=10.0)
    assert settings.partition_wcu == pytest.approx(10.0)
    assert settings.partition_rcu == pytest.approx(30.0)
    env = settings.function_environment()
    assert env[names.ENV_PARTITION_WCU] == "10.0"
    assert env[names.ENV_METADATA_CACHE_TTL_S] == "3.0"  # 30 emulated s at x10
    assert env[names.ENV_IN_BAND_GROWTH] == "false"
    with pytest.raises(ValueError, match="scale and speed"):
        GrowthSettings(speed=0)
