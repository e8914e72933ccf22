"""The README's examples and the event's input types pass plain mypy (issue 39).

``Event(ts="2013-01-01T00:00:00Z")``, the README's own example, failed mypy: the field
was typed as what it stores (``datetime``). The check runs mypy, strict as the project's
configuration sets it and without pydantic's plugin (as a user's project runs it), on
``typed_event_inputs.py`` beside this file and on every Python block of the two READMEs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SNIPPET = Path(__file__).with_name("typed_event_inputs.py")
READMES = (ROOT / "README.md", ROOT / "layers" / "dynashard" / "README.md")


def python_blocks(markdown: Path) -> list[str]:
    text = markdown.read_text()
    return [str(block) for block in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)]


def mypy(files: list[Path], cache: Path) -> subprocess.CompletedProcess[str]:
    """Run mypy with the project's configuration (strict, no plugin) on ``files``."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(cache),
            "--no-error-summary",
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )


def test_the_configuration_is_plain_mypy() -> None:
    """Without pydantic's plugin: the check is what a user's mypy sees."""
    assert "plugins" not in (ROOT / "pyproject.toml").read_text().split("[tool.mypy]")[1]


def test_event_inputs_and_the_readme_examples_type_check(tmp_path: Path) -> None:
    # Given the typed snippet and each README's Python blocks, as files
    files = [SNIPPET]
    for readme in READMES:
        blocks = python_blocks(readme)
        assert blocks, f"{readme.name} has no Python example"
        for i, block in enumerate(blocks):
            name = f"{readme.parent.name.replace('-', '_')}_readme_{i}.py"
            (tmp_path / name).write_text(block)
            files.append(tmp_path / name)
    assert any("ts=" in block for readme in READMES for block in python_blocks(readme))
    # When mypy checks them, Then it finds nothing (an unused ignore would be an error too)
    result = mypy(files, tmp_path / "cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_check_fails_on_a_wrong_time(tmp_path: Path) -> None:
    """The check above could not fail if mypy accepted anything for ``ts``."""
    bad = tmp_path / "bad.py"
    bad.write_text('from dynashard import Event\n\nEvent(key="K", id="e", ts=[2013])\n')
    result = mypy([bad], tmp_path / "cache")
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'Argument "ts" to "Event" has incompatible type "list[int]"' in result.stdout


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MYPYPATH", raising=False)
