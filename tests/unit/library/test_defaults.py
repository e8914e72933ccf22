"""One table of tunable defaults (issue 39): read by every layer, written once, in the docs.

``cooldown_s=60.0`` alone was written in five places (the library's config, its shard
metadata, the functions' settings, the stack's parameters, the command); each was a
chance for one layer to drift from the others.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dynashard import DynashardConfig, defaults, names
from dynashard.core.retry import Backoff
from dynashard.defaults import TUNABLES, Tunable, markdown_table
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.lambda_kit.settings import FunctionSettings
from infra.config import DynashardParameters

ROOT = Path(__file__).resolve().parents[3]
#: Where the layers declare their settings; bench/ and tests/ choose their own values.
SCANNED = (
    ROOT / "layers" / "dynashard" / "src" / "dynashard",
    ROOT / "infra",
    ROOT / "functions",
    ROOT / "sandbox",
)
TABLE_MODULE = ROOT / "layers" / "dynashard" / "src" / "dynashard" / "defaults.py"
CONFIGURATION_DOC = ROOT / "docs" / "configuration.md"
DEPLOY_DOC = ROOT / "docs" / "DEPLOY.md"

#: name (or alias) -> the tunable it is.
BY_NAME: dict[str, Tunable[Any]] = {n: t for t in TUNABLES for n in (t.name, *t.aliases)}
#: ``ENV_...`` constant of dynashard.names -> the tunable it is read into.
BY_ENV_CONSTANT: dict[str, Tunable[Any]] = {
    constant: t
    for t in TUNABLES
    for constant in dir(names)
    if t.env is not None and getattr(names, constant) == t.env
}


def _restates(tunable: Tunable[Any], node: ast.expr | None) -> bool:
    """Whether ``node`` is a literal equal to the tunable's default or the stack's."""
    if not isinstance(node, ast.Constant) or node.value is None:
        return False
    value = node.value
    if isinstance(tunable.default, bool) != isinstance(value, bool):
        return False  # 1 is not True
    if not isinstance(value, int | float):
        return False
    return value in (tunable.default, tunable.stack_default)


def _field_default(node: ast.expr | None) -> ast.expr | None:
    """The default of ``Field(default, ...)`` / ``Field(default=...)``, else the node itself."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Field":
        if node.args:
            return node.args[0]
        return next((k.value for k in node.keywords if k.arg == "default"), None)
    return node


def restated_defaults(source: str, filename: str = "<source>") -> Iterator[str]:
    """Yield ``file:line: what`` for each literal that restates a tunable's default.

    Where a layer declares a tunable (by its name): a class field (``cooldown_s: float =
    60.0``, ``Field(60.0, ...)``), a parameter's default (``def f(cooldown_s=60.0)``), a
    keyword argument (``Config(cooldown_s=60.0)``), and the fallback of its variable
    (``env_float(names.ENV_COOLDOWN_S, 60.0)``).
    """
    for node in ast.walk(ast.parse(source, filename)):
        where = f"{filename}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            for target in targets:
                tunable = BY_NAME.get(getattr(target, "id", ""))
                if tunable and _restates(tunable, _field_default(node.value)):
                    yield f"{where}: field {tunable.name}"
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = [
                *zip(
                    positional[len(positional) - len(args.defaults) :], args.defaults, strict=True
                ),
                *zip(args.kwonlyargs, args.kw_defaults, strict=True),
            ]
            for arg, default in pairs:
                tunable = BY_NAME.get(arg.arg)
                if tunable and _restates(tunable, default):
                    yield f"{where}: parameter {arg.arg}"
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                tunable = BY_NAME.get(keyword.arg or "")
                if tunable and _restates(tunable, keyword.value):
                    yield f"{where}: keyword {keyword.arg}"
            envs = [
                BY_ENV_CONSTANT[a.attr]
                for a in node.args
                if isinstance(a, ast.Attribute) and a.attr in BY_ENV_CONSTANT
            ]
            for tunable in envs:
                if any(_restates(tunable, a) for a in node.args):
                    yield f"{where}: fallback of {tunable.env}"


def _sources() -> Iterator[Path]:
    for folder in SCANNED:
        for path in sorted(folder.rglob("*.py")):
            if path != TABLE_MODULE:
                yield path


# --- written once ----------------------------------------------------------------------------
def test_no_layer_writes_a_default_again() -> None:
    found = [
        hit
        for path in _sources()
        for hit in restated_defaults(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == [], "read these from dynashard.defaults:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "class C:\n    cooldown_s: float = 60.0\n",
        "class C:\n    max_shards: int = Field(1000, ge=1, validation_alias=X)\n",
        "class C:\n    in_band_growth: bool = Field(default=False)\n",  # the stack's
        "def f(*, cache_ttl_s: float = 30.0) -> None: ...\n",
        "DynashardConfig('d', 'm', target_utilization=0.8)\n",
        "env_float(names.ENV_PARTITION_WCU, 1000.0)\n",
    ],
)
def test_the_scan_finds_a_restated_default(source: str) -> None:
    assert len(list(restated_defaults(source))) == 1


@pytest.mark.parametrize(
    "source",
    [
        "class C:\n    max_shards: int = 64\n",  # a value of its own, not the default
        "class C:\n    cooldown_s: float = defaults.COOLDOWN_S.default\n",
        "f(cooldown_s=0.0, max_workers=1)\n",
        "class C:\n    default_shards: bool = True\n",  # True is not 1
        "timeout_s: float = 60.0\n",
    ],
)
def test_the_scan_leaves_other_values_alone(source: str) -> None:
    assert list(restated_defaults(source)) == []


# --- read by every layer ---------------------------------------------------------------------
@pytest.mark.parametrize("tunable", [t for t in TUNABLES if t.env], ids=lambda t: t.name)
def test_the_functions_settings_take_default_bounds_and_variable(tunable: Tunable[Any]) -> None:
    field = FunctionSettings.model_fields[tunable.name]
    assert field.default == tunable.default
    assert field.validation_alias == tunable.env
    assert _bounds(field.metadata) == _bounds_of(tunable)


@pytest.mark.parametrize("tunable", [t for t in TUNABLES if t.env], ids=lambda t: t.name)
def test_the_stacks_parameters_take_the_stack_default_and_bounds(tunable: Tunable[Any]) -> None:
    field = DynashardParameters.model_fields[tunable.name]
    assert field.default == tunable.stack_default
    assert _bounds(field.metadata) == _bounds_of(tunable)


def test_the_library_takes_every_default() -> None:
    config = DynashardConfig("d", "m")
    for tunable in TUNABLES:
        if tunable.name in DynashardConfig.__dataclass_fields__:
            assert getattr(config, tunable.name) == tunable.default, tunable.name
    assert config.write_backoff.max_attempts == Backoff().max_attempts
    assert Backoff().max_attempts == defaults.WRITE_MAX_ATTEMPTS.default
    metadata = ShardMetadata(store=None)  # type: ignore[arg-type]
    assert metadata.cooldown_s == defaults.COOLDOWN_S.default
    assert metadata.cache_ttl_s == defaults.METADATA_CACHE_TTL_S.default
    assert metadata.max_shards == defaults.MAX_SHARDS.default


def _bounds(metadata: list[Any]) -> dict[str, float]:
    found: dict[str, float] = {}
    for item in metadata:
        for op in ("ge", "gt", "le", "lt"):
            if getattr(item, op, None) is not None:
                found[op] = getattr(item, op)
    return found


def _bounds_of(tunable: Tunable[Any]) -> dict[str, float]:
    return {
        op: value
        for op, value in (
            ("ge", tunable.ge),
            ("gt", tunable.gt),
            ("le", tunable.le),
            ("lt", tunable.lt),
        )
        if value is not None
    }


# --- shown in the docs -----------------------------------------------------------------------
def test_the_docs_table_is_the_modules() -> None:
    text = CONFIGURATION_DOC.read_text()
    match = re.search(
        r"<!-- defaults-table:start[^\n]*-->\n(.*?)<!-- defaults-table:end -->", text, re.S
    )
    assert match, "docs/configuration.md has lost its table markers"
    assert match.group(1) == markdown_table(), (
        "docs/configuration.md's table differs from dynashard.defaults; paste:\n" + markdown_table()
    )


def _deploy_md_defaults() -> dict[str, str]:
    """DEPLOY.md's parameter table: name -> default as written (a row may pair two)."""
    found: dict[str, str] = {}
    for line in DEPLOY_DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        keys = [k.strip().strip("`") for k in cells[0].split(" / ")]
        values = [v.strip().strip("`") for v in cells[1].split(" / ")]
        if len(keys) == len(values):
            found.update(zip(keys, values, strict=True))
    return found


@pytest.mark.parametrize("tunable", [t for t in TUNABLES if t.env], ids=lambda t: t.name)
def test_deploy_md_gives_each_parameter_the_stacks_default(tunable: Tunable[Any]) -> None:
    written = _deploy_md_defaults().get(tunable.name)
    assert written is not None, f"DEPLOY.md has no row for {tunable.name}"
    expected = tunable.stack_default
    if isinstance(expected, bool):
        assert written == str(expected).lower()
    else:
        assert float(written.replace(",", "")) == expected
