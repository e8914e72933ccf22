"""Each of the library's extras brings what the modules that need it import (issue 39).

The requirements are the library's pyproject (the wheel's METADATA is the same,
tests/integration/test_wheel.py), parsed with ``packaging``; what they bring is their
closure through the installed distributions' own metadata, their extras' markers
evaluated as pip evaluates them. Two checks per extra:

- every third-party import of a module (outside ``if TYPE_CHECKING:``), read from its
  source, is in the closure of the core dependencies and the module's extra;
- what a fresh interpreter loads when it does the extra's work (``function_kit()`` and
  every ``lambda_kit`` module; every ``cli`` module) is too: that catches what a
  dependency imports on our behalf, as Powertools' Tracer imports ``aws_xray_sdk``,
  which no module of the library names.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[3]
LIBRARY = ROOT / "layers" / "dynashard"
PACKAGE = LIBRARY / "src" / "dynashard"
PROJECT = tomllib.loads((LIBRARY / "pyproject.toml").read_text())["project"]

#: Module prefix -> the extra it needs (the longest prefix wins); any other module needs
#: the core dependencies alone.
EXTRA_OF = {
    "dynashard.lambda_kit": "lambda",
    "dynashard.cli": "cli",
    "dynashard.cli.charts": "chart",
}


def extra_of(module: str) -> str | None:
    found = [p for p in EXTRA_OF if module == p or module.startswith(p + ".")]
    return EXTRA_OF[max(found, key=len)] if found else None


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def requirements(extra: str | None) -> list[Requirement]:
    """The core dependencies, and the extra's when one is named."""
    reqs = [Requirement(r) for r in PROJECT["dependencies"]]
    if extra is not None:
        reqs += [Requirement(r) for r in PROJECT["optional-dependencies"][extra]]
    return reqs


def closure(reqs: list[Requirement]) -> frozenset[str]:
    """The distributions ``reqs`` install: their names and their dependencies' (installed)."""
    names: set[str] = set()
    visited: set[tuple[str, frozenset[str]]] = set()
    todo = [(canonicalize_name(r.name), frozenset(r.extras)) for r in reqs]
    while todo:
        name, extras = todo.pop()
        if (name, extras) in visited:
            continue
        visited.add((name, extras))
        names.add(name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            pytest.fail(f"{name} (required by the library's metadata) is not installed")
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or any(
                req.marker.evaluate({"extra": extra}) for extra in ("", *extras)
            ):
                todo.append((canonicalize_name(req.name), frozenset(req.extras)))
    return frozenset(names)


@cache
def providers() -> dict[str, frozenset[str]]:
    """Top-level import name -> the distributions that provide it."""
    mapping = importlib.metadata.packages_distributions()
    return {name: frozenset(canonicalize_name(d) for d in dists) for name, dists in mapping.items()}


#: What a dependency imports when it is installed and does without otherwise (each in a
#: ``try: ... except ImportError``): loaded here because the test environment has them.
OPTIONAL_IMPORTS = {
    "certifi": "botocore.httpsession: its own CA bundle without it",
    "backports": "urllib3.util.request: backports.zstd, an Accept-Encoding without it",
}


def uncovered(imported: set[str], extra: str | None) -> dict[str, list[str]]:
    """The imported top-level names no distribution of the extra's closure provides."""
    allowed = closure(requirements(extra))
    missing: dict[str, list[str]] = {}
    ignored = {*sys.stdlib_module_names, *OPTIONAL_IMPORTS, "dynashard"}
    # the interpreter's build configuration, loaded by sysconfig (standard library)
    ignored |= {name for name in imported if name.startswith("_sysconfigdata_")}
    for name in sorted(imported - ignored):
        dists = providers().get(name)
        if not dists or not dists & allowed:
            missing[name] = sorted(dists or ["(no installed distribution provides it)"])
    return missing


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def run_time_imports(path: Path) -> set[str]:
    """Top-level names a module imports at run time (``TYPE_CHECKING`` blocks left out)."""
    found: set[str] = set()
    todo: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _type_checking_only(node):
            todo.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        todo.extend(ast.iter_child_nodes(node))
    return found


# --- the declarations ------------------------------------------------------------------------
def test_the_extras_are_lambda_cli_and_chart() -> None:
    extras = PROJECT["optional-dependencies"]
    assert set(extras) == set(EXTRA_OF.values()) == {"lambda", "cli", "chart"}
    # the tracer: function_kit() builds Powertools' Tracer, which needs the X-Ray SDK
    (powertools,) = (Requirement(r) for r in extras["lambda"])
    assert powertools.name == "aws-lambda-powertools" and "tracer" in powertools.extras
    assert "aws-xray-sdk" in closure(requirements("lambda"))
    # matplotlib is the chart's alone, not the command's
    assert "matplotlib" not in closure(requirements("cli"))
    assert "matplotlib" in closure(requirements("chart"))


def test_no_declared_dependency_is_unused() -> None:
    """pydantic-settings was declared and imported nowhere: every core or extra
    requirement is imported by a module that needs it."""
    imported: dict[str | None, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        imported.setdefault(extra_of(module_name(path)), set()).update(run_time_imports(path))
    for extra in (None, *PROJECT["optional-dependencies"]):
        names = imported[extra] if extra else set().union(*imported.values())
        for text in requirements(extra)[len(PROJECT["dependencies"]) if extra else 0 :]:
            dist = canonicalize_name(text.name)
            provided = {name for name, dists in providers().items() if dist in dists}
            assert provided & names, f"{text} ({extra or 'core'}) is imported by no module"


# --- the imports, read from the source ---------------------------------------------------------
@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: module_name(p))
def test_each_modules_imports_are_in_its_extras_closure(path: Path) -> None:
    extra = extra_of(module_name(path))
    assert uncovered(run_time_imports(path), extra) == {}, (
        f"{module_name(path)} imports them; declare them in the "
        f"{extra or 'core'} requirements of layers/dynashard/pyproject.toml"
    )


# --- the imports, as a fresh interpreter loads them ------------------------------------------
LOADED = """\
import json, os, sys
before = set(sys.modules)
{statement}
print(json.dumps(sorted({{m.split('.')[0] for m in set(sys.modules) - before}})))
"""

#: The extra's work: every module of it imported, and what a function does at cold start.
WORK = {
    "lambda": (
        "import pkgutil, importlib, dynashard.lambda_kit as kit\n"
        "for m in pkgutil.walk_packages(kit.__path__, 'dynashard.lambda_kit.'):\n"
        "    importlib.import_module(m.name)\n"
        "from dynashard.lambda_kit.kit import function_kit\n"
        "from dynashard.lambda_kit.settings import FunctionSettings\n"
        "function_kit('probe', FunctionSettings)\n"
    ),
    "cli": (
        "import pkgutil, importlib, dynashard.cli as cli\n"
        "for m in pkgutil.walk_packages(cli.__path__, 'dynashard.cli.'):\n"
        "    importlib.import_module(m.name)\n"
        "from dynashard.cli.app import app\n"
        "from dynashard.cli.context import options\n"
    ),
}


@pytest.mark.parametrize("extra", sorted(WORK))
def test_what_the_extras_work_loads_is_in_its_closure(extra: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", LOADED.format(statement=WORK[extra])],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = set(json.loads(result.stdout.strip().splitlines()[-1]))
    if extra == "lambda":  # the check could not fail if the tracer were never built
        assert {"aws_lambda_powertools", "aws_xray_sdk"} <= loaded, sorted(loaded)
    assert uncovered(loaded, extra) == {}
