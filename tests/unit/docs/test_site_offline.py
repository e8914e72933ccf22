"""The documentation site renders offline: nothing is fetched from another host when viewed.

``make docs`` runs docs/hooks.py, which fails the build on a page that loads a script or a
stylesheet from another host, or draws a mermaid diagram without the mermaid script the
site ships (mkdocs-material would fetch mermaid from a CDN). These tests check that
check, and that the mermaid the site ships is the one mkdocs-material drives: the major
version its bundle would fetch, the version its file name says.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import material
import yaml

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"

sys.path.insert(0, str(DOCS))
from hooks import offline_problems  # noqa: E402  (docs/ is not a package)

MERMAID_PAGE = '<pre class="mermaid"><code>flowchart LR\n  A --> B</code></pre>'


def _extra_javascript() -> list[str]:
    loader = type("Loader", (yaml.SafeLoader,), {})
    loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=loader)
    return list(config.get("extra_javascript", []))


def test_a_script_or_stylesheet_from_another_host_is_refused() -> None:
    html = (
        '<script src="https://unpkg.com/mermaid@11/dist/mermaid.min.js"></script>'
        "<script src='//cdn.example/x.js'></script>"
        '<link href="https://fonts.googleapis.com/css?family=Roboto" rel="stylesheet">'
    )
    assert offline_problems(html) == [
        "loads the script https://unpkg.com/mermaid@11/dist/mermaid.min.js from another host",
        "loads the script //cdn.example/x.js from another host",
        "loads the stylesheet https://fonts.googleapis.com/css?family=Roboto from another host",
    ]


def test_local_scripts_and_stylesheets_pass() -> None:
    html = (
        '<script src="assets/javascripts/bundle.min.js"></script>'
        '<link rel="stylesheet" href="../assets/stylesheets/main.css">'
        '<link rel="canonical" href="https://example.org/page.html">'
    )
    assert offline_problems(html) == []


def test_a_mermaid_diagram_needs_the_local_mermaid_loaded_synchronously() -> None:
    assert "draws a mermaid diagram" in offline_problems(MERMAID_PAGE)[0]
    deferred = MERMAID_PAGE + '<script defer src="javascripts/mermaid-11.17.2.min.js"></script>'
    assert "draws a mermaid diagram" in offline_problems(deferred)[0]
    loaded = MERMAID_PAGE + '<script src="javascripts/mermaid-11.17.2.min.js"></script>'
    assert offline_problems(loaded) == []


def test_the_site_ships_the_mermaid_major_that_mkdocs_material_fetches() -> None:
    scripts = [name for name in _extra_javascript() if "mermaid" in name]
    assert len(scripts) == 1, f"mkdocs.yml's extra_javascript loads mermaid once: {scripts}"
    shipped = DOCS / scripts[0]
    assert shipped.is_file(), f"{shipped} is missing"
    named = re.search(r"mermaid-(\d+)\.(\d+)\.(\d+)\.min\.js$", shipped.name)
    assert named, f"{shipped.name} does not name its version"
    # mermaid's own version object, {version:"11.17.2"}, which its renderers receive
    embedded = re.findall(rb'\{version:"(\d+\.\d+\.\d+)"\}', shipped.read_bytes())
    assert embedded == [".".join(named.groups()).encode()], embedded
    assets = Path(material.__file__).parent / "templates" / "assets" / "javascripts"
    bundle = next(assets.glob("bundle.*.min.js"))
    fetched = re.search(r"mermaid@(\d+)/dist/mermaid\.min\.js", bundle.read_text(encoding="utf-8"))
    assert fetched, "mkdocs-material's bundle no longer names the mermaid it fetches: check by hand"
    assert fetched.group(1) == named.group(1)
    assert (DOCS / "javascripts" / "mermaid-LICENSE.txt").is_file()
