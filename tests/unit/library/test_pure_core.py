"""The pure core imports without boto3, botocore or pydantic (a fresh interpreter each)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import dynashard

PURE = (
    "keys",
    "strategies",
    "merge",
    "throttling",
    "planning",
    "load",
    "names",
    "retry",
    "scaling",
)
HEAVY = ("boto3", "botocore", "pydantic")


def loaded_after(statement: str) -> list[str]:
    probe = (
        f"import sys\n{statement}\n"
        f"print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout.split()


@pytest.mark.parametrize("module", PURE)
def test_a_pure_module_loads_no_aws_sdk(module: str) -> None:
    assert loaded_after(f"import dynashard.{module}") == []


def test_the_probe_sees_the_sdk_when_a_writer_is_imported() -> None:
    # The check above could not fail if the probe never saw botocore.
    assert loaded_after("import dynashard.writer") == ["boto3", "botocore", "pydantic"]


def test_public_names_load_on_first_use() -> None:
    assert loaded_after("from dynashard import plan_shard_count") == []
    assert "botocore" in loaded_after("from dynashard import Dynashard")
    assert sorted(dynashard.__all__) == sorted(dynashard._EXPORTS)
    assert set(dynashard.__all__) <= set(dir(dynashard))
    for name in dynashard.__all__:
        assert getattr(dynashard, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = dynashard.nope  # type: ignore[attr-defined]
