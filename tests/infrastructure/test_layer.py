"""The layer build without Docker: the real pip bundling, its bytecode, its fallbacks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dynashard._version import UNKNOWN_VERSION
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


#: PEP 3147/552 header of a Python 3.12 ``.pyc``: magic number 3531, then the flags
#: word (bit 0: hash-based, bit 1: check the source; unchecked-hash is 0b01).
PY312_MAGIC = (3531).to_bytes(2, "little") + b"\r\n"
UNCHECKED_HASH_FLAGS = (1).to_bytes(4, "little")


def test_local_bundling_installs_arm64_wheels_and_their_bytecode(tmp_path: Path) -> None:
    """Runs pip and compileall for real (about 10-20 s): the layer make synth would upload.

    Without a local Python 3.12 the layer is built without bytecode (see the next test).
    """
    build_dir_before = (LAYER_SOURCE / "build").exists()
    assert PipLocalBundling(LAYER_SOURCE).try_bundle(str(tmp_path), None)
    site = tmp_path / "python"
    assert (site / "dynashard" / "names.py").is_file()
    assert (site / "aws_lambda_powertools").is_dir()
    cores = list((site / "pydantic_core").glob("_pydantic_core.*.so"))
    assert [c.name for c in cores] == ["_pydantic_core.cpython-312-aarch64-linux-gnu.so"]
    # built from a copy without git metadata: the version given, else the fallback
    # (layers/dynashard's [tool.setuptools_scm], docs/contributing.md)
    version = os.environ.get("SETUPTOOLS_SCM_PRETEND_VERSION_FOR_DYNASHARD", UNKNOWN_VERSION)
    assert [p.name for p in site.glob("dynashard-*.dist-info")] == [
        f"dynashard-{version}.dist-info"
    ]
    # built from a copy: the bundling leaves no build/ in the repository
    assert (LAYER_SOURCE / "build").exists() == build_dir_before
    if layer.find_layer_python() is None:  # no local 3.12: no bytecode at all
        assert not list(site.rglob("*.pyc"))
        return
    # every module has its 3.12 bytecode, unchecked-hash, and nothing of another version
    sources = [p for p in site.rglob("*.py") if "__pycache__" not in p.parts]
    missing = [
        p for p in sources if not (p.parent / "__pycache__" / f"{p.stem}.cpython-312.pyc").is_file()
    ]
    assert sources and not missing, missing[:5]
    other = [p for p in site.rglob("*.pyc") if ".cpython-312." not in p.name]
    assert not other, other[:5]
    header = (site / "dynashard" / "__pycache__" / "names.cpython-312.pyc").read_bytes()[:8]
    assert header == PY312_MAGIC + UNCHECKED_HASH_FLAGS


def test_without_a_local_python_of_the_runtime_version_the_layer_ships_uncompiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(layer, "find_layer_python", lambda: None)
    calls: list[list[str]] = []
    real_run = layer.subprocess.run

    def recording_run(command: list[str], **kwargs: Any) -> Any:
        calls.append(command)
        return real_run(command, **kwargs)

    monkeypatch.setattr(layer.subprocess, "run", recording_run)
    assert PipLocalBundling(LAYER_SOURCE).try_bundle(str(tmp_path), None)
    assert calls and not any("compileall" in command for command in calls)
    err = capsys.readouterr().err
    assert "without bytecode" in err and layer.ENV_LAYER_PYTHON in err


def test_find_layer_python_accepts_only_the_runtime_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    this = f"{sys.version_info[0]}.{sys.version_info[1]}"
    monkeypatch.setenv(layer.ENV_LAYER_PYTHON, sys.executable)
    assert layer.find_layer_python(this) == sys.executable
    monkeypatch.setenv("PATH", os.defpath)
    monkeypatch.delenv(layer.ENV_LAYER_PYTHON)
    if shutil.which("python2.0") is None:
        assert layer.find_layer_python("2.0") is None


def test_compile_command_writes_unchecked_hash_bytecode_named_for_the_layer_path() -> None:
    cmd = layer.compile_command("python3.12", "out/python")
    assert cmd[:3] == ["python3.12", "-m", "compileall"]
    assert cmd[cmd.index("--invalidation-mode") + 1] == "unchecked-hash"
    assert cmd[cmd.index("-d") + 1] == "/opt/python"
    assert cmd[-1] == "out/python"


def test_docker_bundling_compiles_with_the_image_python_after_installing() -> None:
    command = layer.docker_bundling_command(Path("x.lock"))
    steps = command.split(" && ")
    assert "--no-compile" in steps[1] and "-r /tmp/src/x.lock" in steps[1]
    assert steps[-1].startswith("python -m compileall ")
    assert "--invalidation-mode unchecked-hash" in steps[-1]
    assert steps[-1].endswith(" /asset-output/python")


def test_failed_pip_falls_back_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fake_run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution")

    monkeypatch.setattr(layer, "find_layer_python", lambda: sys.executable)
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
