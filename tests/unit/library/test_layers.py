"""The library's floor plan: pure layers load no SDK, and every import points down.

The layers, lowest first (``dynashard/__init__.py`` says what each holds):

0. ``names``, ``errors``, ``defaults`` (the table of tunable defaults and caps);
1. ``core``: pure values and rules;
2. ``planning``: pure decisions;
3. ``model``: the event (pydantic);
4. ``dynamodb``, ``cloudwatch``: the adapters;
5. ``facade``;
6. ``lambda_kit``;
7. ``cli``.

A module may import its own layer or a lower one, never a higher one, and the
library's imports (lazy ones included) form no circle.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import dynashard

PACKAGE = Path(dynashard.__file__).parent
RANKS = {
    "dynashard._lazy": 0,
    "dynashard._version": 0,
    "dynashard.names": 0,
    "dynashard.errors": 0,
    "dynashard.defaults": 0,
    "dynashard.core": 1,
    "dynashard.planning": 2,
    "dynashard.model": 3,
    "dynashard.dynamodb": 4,
    "dynashard.cloudwatch": 4,
    "dynashard.facade": 5,
    "dynashard.lambda_kit": 6,
    "dynashard.cli": 7,
}
PURE_PACKAGES = ("dynashard.core", "dynashard.planning")
#: What no module of a pure package may load: the AWS SDK, pydantic, Powertools, or a
#: layer above the pure ones.
HEAVY = (
    "boto3",
    "botocore",
    "pydantic",
    "pydantic_settings",
    "aws_lambda_powertools",
    "dynashard.model",
    "dynashard.dynamodb",
    "dynashard.cloudwatch",
    "dynashard.facade",
    "dynashard.lambda_kit",
    "dynashard.cli",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def library_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def rank(module: str) -> int | None:
    for prefix, value in RANKS.items():
        if module == prefix or module.startswith(prefix + "."):
            return value
    return None


def is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(path: Path, modules: dict[str, Path], runtime_only: bool) -> set[str]:
    """The library modules ``path`` imports (lazy imports in functions included)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if runtime_only and is_type_checking_block(node):
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("dynashard."))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "dynashard":
                for alias in node.names:
                    if f"dynashard.{alias.name}" in modules:
                        found.add(f"dynashard.{alias.name}")
                    else:
                        found.add(dynashard._EXPORTS[alias.name])
            elif node.module.startswith("dynashard."):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in modules else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


def loaded_after(statement: str) -> list[str]:
    probe = (
        f"import sys\n{statement}\n"
        f"print(' '.join(sorted(h for h in {HEAVY!r} if h in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout.split()


PURE_MODULES = sorted(m for m in library_modules() if rank(m) in (1, 2))


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in library_modules() if m != "dynashard" and rank(m) is None]
    assert unplaced == []


def test_the_pure_packages_are_found() -> None:
    # The purity check below would pass vacuously on an empty list.
    assert {m.rsplit(".", 1)[0] for m in PURE_MODULES} >= set(PURE_PACKAGES)
    assert len(PURE_MODULES) >= 15
    walked = {
        info.name
        for package in PURE_PACKAGES
        for info in pkgutil.walk_packages(
            [str(PACKAGE / package.split(".")[1])], prefix=f"{package}."
        )
    }
    assert walked <= set(PURE_MODULES)


@pytest.mark.parametrize("module", PURE_MODULES)
def test_a_pure_module_loads_no_sdk_and_no_higher_layer(module: str) -> None:
    assert loaded_after(f"import {module}") == []


def test_the_probe_sees_the_sdk_when_a_writer_is_imported() -> None:
    # The check above could not fail if the probe never saw botocore.
    loaded = loaded_after("import dynashard.dynamodb.writer")
    assert {"boto3", "botocore", "pydantic", "dynashard.model", "dynashard.dynamodb"} <= set(loaded)


def test_every_import_points_to_the_same_layer_or_a_lower_one() -> None:
    modules = library_modules()
    upward = []
    for name, path in modules.items():
        if name == "dynashard":
            continue
        for target in imports_of(path, modules, runtime_only=False):
            if (rank(target) or 0) > (rank(name) or 0):
                upward.append(f"{name} -> {target}")
    assert upward == []


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_library_has_no_import_circle() -> None:
    modules = library_modules()
    graph = {
        name: imports_of(path, modules, runtime_only=True) - {name}
        for name, path in modules.items()
        if name != "dynashard"
    }
    assert find_cycle(graph) is None
    # The search finds a circle where there is one.
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_public_names_load_on_first_use() -> None:
    assert loaded_after("from dynashard import plan_shard_count") == []
    assert "botocore" in loaded_after("from dynashard import Dynashard")
    assert sorted(dynashard.__all__) == sorted(dynashard._EXPORTS)
    assert set(dynashard.__all__) <= set(dir(dynashard))
    for name in dynashard.__all__:
        assert getattr(dynashard, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = dynashard.nope  # type: ignore[attr-defined]


def test_the_lambda_kit_keeps_its_names() -> None:
    from dynashard import lambda_kit

    assert sorted(lambda_kit.__all__) == sorted(lambda_kit._EXPORTS)
    for name in lambda_kit.__all__:
        assert getattr(lambda_kit, name) is not None
    # The cache registry is usable without Powertools (the sandbox resets caches with it).
    assert "aws_lambda_powertools" not in loaded_after("from dynashard.lambda_kit import reset_all")
