"""Context parameters: parsing, validation, the dev/retained split."""

from __future__ import annotations

import pydantic
import pytest

from infra.config import FUNCTION_MEMORY_MB, StackParameters

pytestmark = pytest.mark.infra


def test_defaults() -> None:
    config = StackParameters()
    assert config.stage == "dev" and config.is_dev
    assert config.api_auth == "iam"
    assert config.max_read_request_units is None


def test_command_line_strings_are_converted() -> None:
    config = StackParameters.model_validate(
        {"stage": "prod", "max_shards": "64", "cooldown_s": "12.5", "max_read_request_units": ""}
    )
    assert config.max_shards == 64
    assert config.cooldown_s == 12.5
    assert config.max_read_request_units is None
    assert not config.is_dev


@pytest.mark.parametrize(
    "bad",
    [
        {"default_shards": 10, "max_shards": 5},
        {"log_retention_days": 31},
        {"api_auth": "cognito"},
        {"contributor_insights_mode": "ALL"},
        {"stage": "Prod!"},
        {"sqs_batch_size": 11},
        {"write_max_attempts": 0},
        {"write_max_attempts": 21},
        {"no_such_parameter": 1},
    ],
)
def test_invalid_parameters_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        StackParameters.model_validate(bad)


def test_the_shrink_mark_must_stay_below_the_growth_target() -> None:
    assert StackParameters().shrink_utilization is None  # half the target, in the function
    assert StackParameters.model_validate({"shrink_utilization": "0.3"}).shrink_utilization == 0.3
    with pytest.raises(pydantic.ValidationError, match="shrink_utilization"):
        StackParameters.model_validate({"shrink_utilization": "0.8", "target_utilization": "0.8"})
    with pytest.raises(pydantic.ValidationError, match="shrink_cool_period_s"):
        StackParameters.model_validate({"shrink_cool_period_s": "30"})


def test_each_function_has_its_measured_memory_unless_told_otherwise() -> None:
    # Given no context: each function gets the size bench.memory derived for it
    config = StackParameters()
    assert {f: config.memory_mb(f) for f in FUNCTION_MEMORY_MB} == FUNCTION_MEMORY_MB
    # When one size is given for all, and one function's own on top
    config = StackParameters.model_validate(
        {"function_memory_mb": "2048", "scaler_memory_mb": "256"}
    )
    # Then the function's own wins, and the others take the common one
    assert config.memory_mb("scaler") == 256
    assert config.memory_mb("query") == 2048
    assert StackParameters.model_validate({"function_memory_mb": ""}).function_memory_mb is None
    with pytest.raises(pydantic.ValidationError, match="query_memory_mb"):
        StackParameters.model_validate({"query_memory_mb": "64"})
