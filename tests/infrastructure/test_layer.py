"""The layer build without Docker: the real pip bundling, and its fallback message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infra.constructs import layer
from infra.constructs.layer import LAYER_LOCK, LAYER_SOURCE, PipLocalBundling, layer_requirements

pytestmark = pytest.mark.infra


def test_requirements_are_the_runtime_group_pins_and_the_lock_holds_them() -> None:
    reqs = layer_requirements()
    assert any(r.startswith("aws-lambda-powertools") for r in reqs)
    assert any(r.startswith("pydantic==") for r in reqs)
    assert all("==" in r for r in reqs)
    locked = LAYER_LOCK.read_text()
    for req in reqs:  # `make lock` after changing the runtime group
        name, version = req.split("[")[0].split("==")[0], req.split("==")[1]
        assert f"\n{name}=={version} \\\n" in "\n" + locked, f"{req} not in {LAYER_LOCK.name}"


def test_local_bundling_installs_arm64_wheels(tmp_path: Path) -> None:
    """Runs pip for real (about 5-10 s): the layer make synth would upload."""
    build_dir_before = (LAYER_SOURCE / "build").exists()
    assert PipLocalBundling(LAYER_SOURCE).try_bundle(str(tmp_path), None)
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
    assert not PipLocalBundling(LAYER_SOURCE).try_bundle(str(tmp_path), None)
    err = capsys.readouterr().err
    assert "falling back to Docker" in err
    assert "No matching distribution" in err


def test_pip_commands_install_the_lock_with_hashes_for_lambda_arm64_python() -> None:
    deps, library = layer.pip_layer_commands(Path("src"), Path("out/python"), Path("x.lock"))
    for cmd in (deps, library):
        assert cmd[:4] == [sys.executable, "-m", "pip", "install"]
        assert "manylinux2014_aarch64" in cmd
        assert cmd[cmd.index("--python-version") + 1] == "3.12"
        assert "--only-binary=:all:" in cmd and "--no-deps" in cmd
    assert "--require-hashes" in deps and deps[-2:] == ["-r", "x.lock"]
    assert library[-1] == "src"  # the library alone: its dependencies are the lock's
