"""The API reference (docs/reference/) covers the library, and the site's nav lists it.

The reference is generated from the docstrings by mkdocstrings (``mkdocs.yml``); what
these tests guard is its coverage, which the build alone does not check: a new module
of the library must get a ``::: dynashard.…`` block on a reference page (the
``dynashard`` command, ``dynashard.cli``, is documented as a command in docs/cli.md),
each reference page must be in the nav, and the hand-kept signature list the reference
replaced must not come back.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"
PACKAGE = ROOT / "layers" / "dynashard" / "src" / "dynashard"
#: Subpackages documented elsewhere than in the reference, and why.
NOT_IN_REFERENCE = {"dynashard.cli": "the dynashard command: docs/cli.md"}
_DIRECTIVE = re.compile(r"^::: (dynashard(?:\.\w+)*)\s*$", re.M)

sys.path.insert(0, str(DOCS))
from griffe_roles import plain_roles  # noqa: E402  (docs/ is not a package)


def _modules() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(part.startswith("_") for part in parts):
            continue
        found.add(".".join(parts))
    return found


def _documented() -> set[str]:
    names: set[str] = set()
    for page in REFERENCE.glob("*.md"):
        names.update(_DIRECTIVE.findall(page.read_text(encoding="utf-8")))
    return names


def _nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def _mkdocs_config() -> dict[str, object]:
    # mkdocs.yml names a Python function with a !!python/name tag: read it as text
    loader = type("Loader", (yaml.SafeLoader,), {})
    loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=loader)
    assert isinstance(config, dict)
    return config


def test_every_public_module_has_a_block_on_a_reference_page() -> None:
    documented = _documented()
    missing = {
        module
        for module in _modules()
        if module not in documented
        and not any(module == skip or module.startswith(skip + ".") for skip in NOT_IN_REFERENCE)
    }
    assert not missing, f"modules with no '::: name' block in docs/reference/: {sorted(missing)}"


def test_every_block_names_a_module_or_object_that_exists() -> None:
    modules = _modules()
    for name in _documented():
        module = name
        while module not in modules and "." in module:
            module = module.rsplit(".", 1)[0]
        assert module in modules, f"docs/reference/ documents {name}, which is no module"


def test_every_reference_page_is_in_the_nav() -> None:
    nav = set(_nav_pages(_mkdocs_config()["nav"]))
    pages = {f"reference/{page.name}" for page in REFERENCE.glob("*.md")}
    assert pages <= nav, f"reference pages missing from mkdocs.yml's nav: {sorted(pages - nav)}"


def test_the_reference_is_generated_from_numpy_docstrings() -> None:
    config = _mkdocs_config()
    plugins = {next(iter(p)) if isinstance(p, dict) else p: p for p in config["plugins"]}  # type: ignore[attr-defined]
    python = plugins["mkdocstrings"]["mkdocstrings"]["handlers"]["python"]  # type: ignore[index]
    assert python["options"]["docstring_style"] == "numpy"
    assert python["paths"] == ["layers/dynashard/src"]


def test_the_hand_kept_signature_list_is_gone_and_nothing_links_to_it() -> None:
    assert not (DOCS / "LIBRARY_API.md").exists()
    pages = [ROOT / "README.md", *DOCS.rglob("*.md"), ROOT / "mkdocs.yml"]
    linking = [str(p.relative_to(ROOT)) for p in pages if "LIBRARY_API" in p.read_text("utf-8")]
    assert not linking, f"still linking to docs/LIBRARY_API.md: {linking}"


def test_sphinx_roles_render_as_inline_code() -> None:
    text = ":class:`~dynashard.facade.Dynashard`, :meth:`ShardMetadata.adopt`, :mod:`x.y`"
    assert plain_roles(text) == "`Dynashard`, `ShardMetadata.adopt`, `x.y`"
    assert plain_roles("``literal`` and `Page`") == "``literal`` and `Page`"
