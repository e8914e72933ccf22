"""The Lambda layer ships no code that reaches for the repository's dev jobs.

``sandbox/`` and ``bench/`` live in the repository, not in the library: a wheel or a layer
that imports them, names one of their modules for ``importlib`` or ``python -m``, or
points the reader to a removed ``dynashard sandbox|demo|bench`` command can never work
where it is installed. The scan reads the code, not the prose: in Python files every
import and every string that is not a docstring (f-string parts included); in the other
files (the ``.dist-info`` metadata, ``entry_points.txt``) every line. Docstrings may
still say "the local sandbox", or name the sandbox's counterpart of a class for the
reader; they run nowhere.

The wheel is scanned the same way where it is built, with ``python -m build``
(tests/integration/test_wheel.py imports the scanner from here).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from infra.constructs import layer
from infra.constructs.layer import LAYER_SOURCE, PipLocalBundling

pytestmark = pytest.mark.infra

#: A code reference to the repository's dev packages, in a string or a metadata line.
DEV_REFERENCE = re.compile(
    r"""
    (?<![\w./-])(?:sandbox|bench)(?:\.[A-Za-z_]\w*)+     # a dotted module path: bench.reads
    | (?<![\w./-])(?:sandbox|bench)/\w                  # a file of them: bench/results
    | =\s*(?:sandbox|bench)\s*:                          # an entry point: x = sandbox:main
    | \bimport\s+(?:sandbox|bench)\b(?!/)               # an import written out
    | \bfrom\s+(?:sandbox|bench)(?:\.\w+)*\s+import\b
    | -m\s+(?:sandbox|bench)\b                          # python -m sandbox / bench
    | \bdynashard\s+(?:sandbox|demo|bench)\b            # a removed dynashard command
    """,
    re.VERBOSE,
)
#: The top-level packages that stay in the repository.
DEV_PACKAGES = ("sandbox", "bench")


def _docstrings(tree: ast.AST) -> set[int]:
    """Return the ids of the string nodes that are docstrings of a module, class or def."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                found.add(id(body[0].value))
    return found


def python_references(source: str) -> list[str]:
    """Return ``"line N: ..."`` for each dev-package reference in a module's code.

    Imports of ``sandbox``/``bench`` (or their modules), and strings that are not
    docstrings matching :data:`DEV_REFERENCE`; comments and docstrings are prose.
    """
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.JoinedStr):  # an f-string: each value stands as "x"
            text = "".join(
                str(part.value) if isinstance(part, ast.Constant) else "x" for part in node.values
            )
            if DEV_REFERENCE.search(text):
                found.append(f"line {node.lineno}: f{text!r}")
            continue
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and DEV_REFERENCE.search(node.value)
        ):
            found.append(f"line {node.lineno}: {node.value!r}")
            continue
        else:
            continue
        for name in names:
            if name.split(".")[0] in DEV_PACKAGES:
                found.append(f"line {node.lineno}: import {name}")
    return found


def text_references(text: str) -> list[str]:
    """Return ``"line N: ..."`` for each line of a non-Python file with a dev reference."""
    return [
        f"line {i}: {line.strip()}"
        for i, line in enumerate(text.splitlines(), 1)
        if DEV_REFERENCE.search(line)
    ]


def scan(files: dict[str, str]) -> dict[str, list[str]]:
    """Scan ``{path: text}``; return the paths with references, and the references."""
    found: dict[str, list[str]] = {}
    for path, text in files.items():
        refs = python_references(text) if path.endswith(".py") else text_references(text)
        if refs:
            found[path] = refs
    return found


def _texts(paths: dict[str, bytes]) -> dict[str, str]:
    """Decode every file that is text; compiled or binary files are skipped."""
    texts: dict[str, str] = {}
    for path, data in paths.items():
        if path.endswith((".pyc", ".so")):
            continue
        try:
            texts[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return texts


# --- the scanner finds what it is there to find ------------------------------------------------
#: What the deleted ``dynashard.cli.checkout`` did, in a few lines, with the prose it had.
CHECKOUT_LIKE = '''
"""The commands that need a checkout: the local sandbox and the benchmarks."""
import importlib
import sandbox.serve
from bench.charts import render_all
from sandbox import serve

BENCHMARKS = {"hot-key": "bench.hot_key", "reads": "bench.reads"}


def bench(name):
    """Run ``bench.NAME`` (a docstring may name a module for the reader)."""
    # a comment about sandbox.scenarios.demo is prose too
    module = importlib.import_module(f"bench.{name}")
    hint = "see dynashard demo --help-demo"
    subprocess.run([sys.executable, "-m", "sandbox.scenarios.demo"])
    return module.main([]), hint, f"run python -m bench {name}"
'''


def test_the_scan_flags_imports_module_strings_and_removed_commands_not_prose() -> None:
    # Given a module that does what the deleted checkout code did, When it is scanned
    found = python_references(CHECKOUT_LIKE)
    joined = " ".join(found)
    # Then every import, module-path string, -m invocation and removed command is found
    for reference in (
        "import sandbox.serve",
        "import bench.charts",
        "import sandbox",
        "'bench.hot_key'",
        "'bench.reads'",
        "f'bench.x'",  # a module path built by an f-string
        "'see dynashard demo --help-demo'",
        "'sandbox.scenarios.demo'",
        "f'run python -m bench x'",
    ):
        assert reference in joined, (reference, found)
    # and nothing else: not the docstrings (lines 2 and 11), not the comment (12)
    lines = {int(f.split(":")[0].removeprefix("line ")) for f in found}
    assert lines == {4, 5, 6, 8, 14, 15, 16, 17}


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("the local sandbox answers; see the sandbox.", False),
        ("DynamoDB endpoint: the sandbox's DynamoDB Local or partition emulator.", False),
        ("reads a benchmark result, not a bench. Done", False),
        ("dynashard-sandbox.example.com", False),
        ("[console_scripts]\ndynashard = dynashard.cli.app:main", False),
        ("[console_scripts]\ndynashard-demo = sandbox.scenarios.demo.cli:main", True),
        ("demo = sandbox:main", True),
        ("The local sandbox: DynamoDB Local and the gateway", False),
        ("a chart from bench/results/*.json", True),
        ("from bench.charts import render_all", True),
        ("Requires-Dist: sandbox.tools", True),
        ("python -m sandbox up", True),
        ("try: dynashard bench charts", True),
    ],
)
def test_the_scan_of_metadata_lines(text: str, flagged: bool) -> None:
    assert bool(text_references(text)) is flagged


# --- the layer ---------------------------------------------------------------------------------
def test_the_layer_holds_no_reference_to_sandbox_or_bench(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layer's own files, as the bundling selects them: its run-time dependencies
    (an empty lock here) are third-party code and not scanned; no bytecode is compiled.
    """
    # Given the layer built by the local bundling with no dependencies
    empty_lock = tmp_path / "requirements.lock"
    empty_lock.write_text("")
    monkeypatch.setattr(layer, "find_layer_python", lambda: None)
    out = tmp_path / "asset"
    assert PipLocalBundling(LAYER_SOURCE, empty_lock).try_bundle(str(out), None)
    site = out / "python"
    files = {
        str(path.relative_to(site)): path.read_bytes() for path in site.rglob("*") if path.is_file()
    }
    # Then it ships the library and nothing of the repository's dev packages
    assert "dynashard/cli/app.py" in files and "dynashard/names.py" in files
    assert "dynashard/cli/checkout.py" not in files
    tops = {name.split("/")[0] for name in files}
    assert not tops & set(DEV_PACKAGES), tops
    assert scan(_texts(files)) == {}
