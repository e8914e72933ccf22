"""MkDocs hook: serve a few repository files from where they live, one copy each.

The site is built from ``docs/``, and MkDocs reads nothing outside it. The repository's
README (the home page), the benchmark report with its charts and JSON results, and the
functions' README live elsewhere and are written or generated there (``python -m bench
report`` writes ``bench/REPORT.md`` next to ``bench/results/``). This hook adds them to
the site under their repository paths (``bench/REPORT.md`` stays ``bench/REPORT.md``)
instead of copying them into ``docs/``, and rewrites each page's relative links from
repository paths to site paths, so the same Markdown links work on GitHub and in the
site: ``docs/api.md`` in the README becomes ``api.md``, ``../bench/REPORT.md`` in a
page of ``docs/`` becomes ``bench/REPORT.md``. A link to a file that is neither in
``docs/`` nor mounted is left as it is, and ``mkdocs build --strict`` fails on it.

It also keeps the site offline when it is viewed: each built page is checked
(`offline_problems`), and the build fails on a page that loads a script or a stylesheet
from another host, or draws a mermaid diagram without the mermaid script the site
ships (``docs/javascripts/``, ``extra_javascript`` in ``mkdocs.yml``): without it,
mkdocs-material fetches mermaid from a CDN in the reader's browser.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.pages import Page

DOCS_PREFIX = "docs/"
MOUNTED_GLOBS = (
    "README.md",
    "functions/README.md",
    "bench/REPORT.md",
    "bench/results/*.png",
    "bench/results/*.json",
)
_LINK = re.compile(r"(\]\()([^)\s#]*)(#[^)\s]*)?(\s+\"[^\"]*\")?(\))")
_mounted: set[str] = set()
_SCRIPT = re.compile(r"<script\b([^>]*)>", re.I)
_LINK_TAG = re.compile(r"<link\b([^>]*)>", re.I)
_ATTR = re.compile(r"""([a-z-]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""", re.I)
_MERMAID_BLOCK = re.compile(r"""<(?:pre|div)\b[^>]*\bclass=["'][^"']*\bmermaid\b""", re.I)
#: The file name of the mermaid script the site ships (docs/javascripts/).
MERMAID_SCRIPT = re.compile(r"(?:^|/)mermaid[-.\w]*\.min\.js$")


def _repo_root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent


def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    """Add the mounted repository files to the site, under their repository paths.

    Parameters
    ----------
    files : Files
        The files MkDocs found in ``docs_dir``.
    config : MkDocsConfig
        The loaded ``mkdocs.yml``.

    Returns
    -------
    Files
        The same collection, with every file matching ``MOUNTED_GLOBS`` added.
    """
    root = _repo_root(config)
    _mounted.clear()
    for pattern in MOUNTED_GLOBS:
        for path in sorted(root.glob(pattern)):
            src_uri = path.relative_to(root).as_posix()
            _mounted.add(src_uri)
            files.append(File.generated(config, src_uri, abs_src_path=str(path)))
    return files


def _repo_path(src_uri: str) -> str:
    return src_uri if src_uri in _mounted else DOCS_PREFIX + src_uri


def _site_path(repo_path: str) -> str | None:
    if repo_path in _mounted:
        return repo_path
    if repo_path.startswith(DOCS_PREFIX):
        return repo_path[len(DOCS_PREFIX) :]
    return None


def rewrite_links(markdown: str, src_uri: str) -> str:
    """Turn a page's relative links to repository files into links between site files.

    Parameters
    ----------
    markdown : str
        The page's Markdown source.
    src_uri : str
        The page's path in the site (``api.md``, ``bench/REPORT.md``).

    Returns
    -------
    str
        The Markdown with each relative link or image target that names a file of
        ``docs/`` or a mounted file rewritten relative to the page's site path; other
        links (absolute, ``mailto:``, anchors only, unknown files) unchanged.

    Examples
    --------
    >>> _mounted.update({"README.md", "bench/REPORT.md"})
    >>> rewrite_links("[API](docs/api.md#routes)", "README.md")
    '[API](api.md#routes)'
    >>> rewrite_links("![chart](../bench/results/x.png)", "benchmarks.md")
    '![chart](../bench/results/x.png)'
    >>> rewrite_links("[report](../bench/REPORT.md)", "benchmarks.md")
    '[report](bench/REPORT.md)'
    """
    page_dir = posixpath.dirname(_repo_path(src_uri))
    site_dir = posixpath.dirname(src_uri)

    def replace(match: re.Match[str]) -> str:
        target = match.group(2)
        if not target or ":" in target or target.startswith("/"):
            return match.group(0)
        site = _site_path(posixpath.normpath(posixpath.join(page_dir, target)))
        if site is None:
            return match.group(0)
        new_target = posixpath.relpath(site, site_dir or ".")
        anchor, title, close = (part or "" for part in match.group(3, 4, 5))
        return f"{match.group(1)}{new_target}{anchor}{title}{close}"

    return _LINK.sub(replace, markdown)


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Rewrite the page's links from repository paths to site paths.

    Parameters
    ----------
    markdown : str
        The page's Markdown source.
    page : Page
        The page being built.
    config : MkDocsConfig
        The loaded ``mkdocs.yml``.
    files : Files
        Every file of the site.

    Returns
    -------
    str
        The Markdown with its links rewritten by `rewrite_links`.
    """
    return rewrite_links(markdown, page.file.src_uri)


def _attributes(tag_body: str) -> dict[str, str]:
    return {
        match.group(1).lower(): next((g for g in match.group(2, 3, 4) if g is not None), "")
        for match in _ATTR.finditer(tag_body)
    }


def _external(url: str) -> bool:
    return url.startswith("//") or re.match(r"^[a-z][a-z0-9+.-]*:", url, re.I) is not None


def offline_problems(html: str) -> list[str]:
    """Say what in a built page would fetch something from another host when viewed.

    Parameters
    ----------
    html : str
        A built page.

    Returns
    -------
    list[str]
        One sentence per problem, empty when the page needs nothing from another host:
        a ``<script src>`` or a stylesheet ``<link>`` whose URL has a scheme or starts
        with ``//``, and a mermaid diagram on a page that loads no local mermaid script
        synchronously (mkdocs-material's bundle looks for ``window.mermaid`` once the
        document is loaded and fetches mermaid from a CDN when it is not there; an
        ``async`` or ``defer`` script may come too late).

    Examples
    --------
    >>> offline_problems('<script src="https://unpkg.com/x.js"></script>')
    ['loads the script https://unpkg.com/x.js from another host']
    >>> offline_problems('<pre class="mermaid"><code>flowchart LR</code></pre>')[0][:40]
    'draws a mermaid diagram but loads no loc'
    >>> page = '<pre class="mermaid"></pre><script src="javascripts/mermaid-11.1.0.min.js">'
    >>> offline_problems(page)
    []
    """
    problems = []
    local_mermaid = False
    for match in _SCRIPT.finditer(html):
        attrs = _attributes(match.group(1))
        src = attrs.get("src")
        if src is None:
            continue
        if _external(src):
            problems.append(f"loads the script {src} from another host")
        elif MERMAID_SCRIPT.search(src) and "async" not in attrs and "defer" not in attrs:
            local_mermaid = True
    for match in _LINK_TAG.finditer(html):
        attrs = _attributes(match.group(1))
        href = attrs.get("href", "")
        if "stylesheet" in attrs.get("rel", "").lower().split() and _external(href):
            problems.append(f"loads the stylesheet {href} from another host")
    if _MERMAID_BLOCK.search(html) and not local_mermaid:
        problems.append(
            "draws a mermaid diagram but loads no local mermaid script: mkdocs-material "
            "would fetch mermaid from a CDN (add it to extra_javascript in mkdocs.yml)"
        )
    return problems


def on_post_page(output: str, *, page: Page, config: MkDocsConfig) -> str:
    """Fail the build on a page that would fetch anything from another host.

    Parameters
    ----------
    output : str
        The built page.
    page : Page
        The page.
    config : MkDocsConfig
        The loaded ``mkdocs.yml``.

    Returns
    -------
    str
        The page, unchanged.

    Raises
    ------
    PluginError
        Naming the page and each problem `offline_problems` found.
    """
    problems = offline_problems(output)
    if problems:
        raise PluginError(f"{page.file.src_uri} is not offline: " + "; ".join(problems))
    return output
