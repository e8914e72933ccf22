"""The layer build without Docker: the real pip bundling, and its fallback message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infra.constructs import layer
from infra.constructs.layer import LAYER_SOURCE, PipLocalBundling, layer_requirements

pytestmark = pytest.mark.infra


def test_requirements_are_the_runtime_group_pins() -> None:
    reqs = layer_requirements()
    assert any(r.startswith("aws-lambda-powertools") for r in reqs)
    assert any(r.startswith("pydantic==") for r in reqs)
    assert all("==" in r for r in reqs)


def test_local_bundling_installs_arm64_wheels(tmp_path: Path) -> None:
    """Runs pip for real (about 5-10 s): the layer make synth would upload."""
    build_dir_before = (LAYER_SOURCE / "build").exists()
    assert PipLocalBundling(LAYER_SOURCE, layer_requirements()).try_bundle(str(tmp_path), None)
    site = tmp_path / "python"
    assert (site / "dynashard" / "names.py").is_file()
    assert (site / "aws_lambda_powertools").is_dir()
    cores = list((site / "pydantic_core").glob("_pydantic_core.*.so"))
    assert [c.name for c in cores] == ["_pydantic_core.cpython-312-aarch64-linux-gnu.so"]
    # built from a copy: the bundling leaves no build/ in the repository
    assert (LAYER_SOURCE / "build").exists() == build_dir_before


def test_failed_pip_falls_back_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fake_run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution")

    monkeypatch.setattr(layer.subprocess, "run", fake_run)
    assert not PipLocalBundling(LAYER_SOURCE, ["x==1"]).try_bundle(str(tmp_path), None)
    err = capsys.readouterr().err
    assert "falling back to Docker" in err
    assert "No matching distribution" in err


def test_pip_command_targets_lambda_arm64_python() -> None:
    cmd = layer.pip_layer_command(Path("src"), Path("out/python"), ["a==1"])
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"]
    assert "manylinux2014_aarch64" in cmd
    assert cmd[cmd.index("--python-version") + 1] == "3.12"
    assert "--only-binary=:all:" in cmd
