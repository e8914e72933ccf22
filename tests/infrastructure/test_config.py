"""Context parameters: parsing, validation, the dev/retained split."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pydantic
import pytest

from dynashard.core.keys import MAX_SHARD_COUNT
from dynashard.lambda_kit.settings import FunctionSettings
from infra.app import build_app
from infra.config import FUNCTION_MEMORY_MB, StackParameters

#: The documents whose deploy commands are checked.
DOCS = Path(__file__).resolve().parents[2] / "docs"

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


def test_max_shards_above_the_librarys_bound_stops_the_synth(tmp_path: Path) -> None:
    # Given -c max_shards one above the bound the functions enforce (the library's)
    context = {"aws:cdk:bundling-stacks": [], "max_shards": str(MAX_SHARD_COUNT + 1)}
    # When the app is built, Then the synth stops naming the parameter and the bound
    with pytest.raises(pydantic.ValidationError) as raised:
        build_app(context, outdir=str(tmp_path))
    [error] = raised.value.errors()
    assert error["loc"] == ("max_shards",)
    assert f"less than or equal to {MAX_SHARD_COUNT}" in str(raised.value)
    # and the bound itself is a stack the functions serve
    bound = StackParameters.model_validate({"max_shards": str(MAX_SHARD_COUNT)})
    assert FunctionSettings(
        data_table="d-t", metadata_table="m-t", max_shards=bound.max_shards
    ).to_config()


def _deploy_commands(text: str) -> list[str]:
    """Return the ``cdk deploy`` command lines of a document's bash blocks, joined."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL):
        joined = block.replace("\\\n", " ")
        commands += [line for line in joined.splitlines() if "cdk deploy" in line]
    return commands


@pytest.mark.parametrize("document", [*sorted(DOCS.glob("*.md")), DOCS.parent / "README.md"])
def test_the_documented_deploy_commands_pass_the_stacks_validation(document: Path) -> None:
    # DEPLOY.md's own example once gave max_shards=2000, a stack whose functions refused
    # every request: every -c of a documented deploy command must make valid parameters
    for command in _deploy_commands(document.read_text()):
        words = shlex.split(command, comments=True)
        values = dict(
            words[i + 1].split("=", 1)
            for i, word in enumerate(words)
            if word == "-c" and "<" not in words[i + 1]
        )
        StackParameters.model_validate(values)  # raises, naming the parameter
