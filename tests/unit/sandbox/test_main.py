"""``python -m sandbox up|demo|chaos``: each job's ``main(argv)``, the arguments passed on."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import types
from pathlib import Path

import pytest

from sandbox import __main__ as sandbox_main

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("job", sorted(sandbox_main.JOBS))
def test_every_job_is_a_module_with_main_taking_argv(job: str) -> None:
    module = importlib.import_module(sandbox_main.JOBS[job])
    assert callable(module.main)
    assert "argv" in inspect.signature(module.main).parameters
    assert job in sandbox_main.SUMMARIES


def test_the_arguments_after_the_job_go_to_it_and_its_code_comes_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[str]] = []
    job = types.ModuleType("fake_job")
    job.main = lambda argv: seen.append(list(argv)) or 2  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_job", job)
    monkeypatch.setitem(sandbox_main.JOBS, "demo", "fake_job")
    assert sandbox_main.main(["demo", "--sample", "5000", "--act", "1", "--help"]) == 2
    assert seen == [["--sample", "5000", "--act", "1", "--help"]]


def test_an_unknown_job_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        sandbox_main.main(["down"])
    assert exit_.value.code == 2
    assert "invalid choice: 'down'" in capsys.readouterr().err


def test_help_lists_the_jobs_without_importing_them() -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sandbox", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    for job in ("up", "demo", "chaos"):
        assert f"\n  {job} " in result.stdout
    assert "Example: python -m sandbox demo --sample 5000" in result.stdout
    imported = [line.split("|")[-1].strip() for line in result.stderr.splitlines()]
    assert not [m for m in imported if m.startswith(("sandbox.", "dynashard", "boto"))]


@pytest.mark.parametrize("job", ["up", "demo", "chaos"])
def test_each_job_answers_its_own_help(job: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sandbox", job, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout and "--" in result.stdout
