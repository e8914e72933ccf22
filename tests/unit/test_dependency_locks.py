"""The hash-locked requirements hold every pin of pyproject.toml (``make lock`` was run)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;]+)")


def _group(groups: dict[str, list[Any]], name: str) -> list[str]:
    pins: list[str] = []
    for entry in groups[name]:
        if isinstance(entry, dict):
            pins.extend(_group(groups, entry["include-group"]))
        else:
            pins.append(entry)
    return pins


def _locked(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        m = PIN.match(line)
        if m:
            found[m.group(1).lower().replace("_", "-")] = m.group(3)
    return found


def test_every_pin_of_the_dev_group_is_in_the_lock_with_hashes() -> None:
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    lock = ROOT / "requirements" / "dev.txt"
    locked = _locked(lock)
    for requirement in _group(groups, "dev"):
        m = PIN.match(requirement)
        assert m, f"{requirement} is not pinned with =="
        name = m.group(1).lower().replace("_", "-")
        assert locked.get(name) == m.group(3), f"{requirement}: run `make lock`"
    text = lock.read_text()
    # every locked requirement carries at least one hash
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text)
    assert all("--hash=sha256:" in b for b in blocks if PIN.match(b))


def test_the_layer_lock_holds_the_runtime_group_and_the_librarys_own_dependencies() -> None:
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    locked = _locked(ROOT / "layers" / "dynashard" / "requirements.lock")
    for requirement in _group(groups, "runtime"):
        m = PIN.match(requirement)
        assert m and locked.get(m.group(1).lower()) == m.group(3), f"{requirement}: make lock"
    library = tomllib.loads((ROOT / "layers" / "dynashard" / "pyproject.toml").read_text())
    for requirement in library["project"]["dependencies"]:
        name = re.split(r"[<>=\[ ]", requirement)[0].lower()
        assert name in locked, f"{name}: make lock"


def test_the_checks_lock_holds_the_checks_group_with_hashes() -> None:
    """checkov's own environment (.venv-checks) is locked like .venv (``make lock``)."""
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    lock = ROOT / "requirements" / "checks.txt"
    locked = _locked(lock)
    for requirement in _group(groups, "checks"):
        m = PIN.match(requirement)
        assert m, f"{requirement} is not pinned with =="
        assert locked.get(m.group(1).lower()) == m.group(3), f"{requirement}: run `make lock`"
    blocks = re.split(r"\n(?=[A-Za-z0-9])", lock.read_text())
    assert all("--hash=sha256:" in b for b in blocks if PIN.match(b))
