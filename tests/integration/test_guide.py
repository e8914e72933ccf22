"""docs/add-to-your-service.md, run as written against DynamoDB Local.

The guide marks each fenced block with an HTML comment on the line before it (the site
does not show it), and this test treats each block as its marker says:

``<!-- guide: run -->``, ``<!-- guide: run, exits N -->``
    A ``bash`` block, run in the guide's order by ``bash`` with ``set -euo pipefail``,
    in one empty directory, the variables each block exports kept for the next ones; it
    must exit 0 (or N).
``<!-- guide: output -->``
    A ``text`` block: the output of the run block before it, stdout and stderr as a
    terminal shows them. ``...`` stands for any text, as in doctest's ELLIPSIS, and the
    whole-second UTC times ``status`` prints, with their age (``2026-06-22T09:14:03Z``,
    ``(12 s ago)``), match any such time: they are the only parts a run changes.
``<!-- guide: save FILE -->``
    A block the reader saves as FILE, in that directory, before the next run block.
``<!-- guide: example PATH -->``
    A block that must be, as it is, the part of PATH between its ``--8<--`` markers
    (tests/infrastructure/test_ops_log_stack.py synthesizes that file).
``<!-- guide: aws -->``
    A ``bash`` block that needs AWS (Contributor Insights, ``cdk deploy``): not run,
    only parsed (``bash -n``).

A block without a marker fails the test, so none goes unchecked by mistake.

The run starts with a clean environment: the project's virtualenv first on ``PATH``, the
checkout on ``PYTHONPATH`` (for ``examples.ops_log``), and ``DYNAMODB_ENDPOINT``, the
placeholder the guide names, set to the session's DynamoDB Local (``dynamodb_local``,
which fails the test, never skips it, when Java or the engine is missing). The guide
names its tables (``ops-service``, ``ops-service-shards``), so the test refuses to
start if they exist and deletes them afterwards.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest

from sandbox.engines.dynamodb_local import DynamoDBLocal
from sandbox.tables import delete_tables

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "add-to-your-service.md"
#: The tables the guide creates.
TABLES = ("ops-service", "ops-service-shards")
#: Seconds one block may run.
BLOCK_TIMEOUT_S = 300

_MARKER = re.compile(r"^<!-- guide: (?P<kind>[a-z]+)(?P<arg>[^>]*?) -->$")
_FENCE = re.compile(r"^```(?P<lang>\S*)$")
_EXITS = re.compile(r"^, exits (?P<code>\d+)$")
_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
_AGE = re.compile(r"\(\d+ (?:s|min|h|d) ago\)")


@dataclass(frozen=True)
class Block:
    """One fenced block of the guide and its marker."""

    kind: str  # run, output, save, example, aws; "" when unmarked
    arg: str  # the marker's argument: ", exits N", a file name, a path
    lang: str
    text: str
    line: int  # of the opening fence, 1-based

    @property
    def where(self) -> str:
        return f"{GUIDE.relative_to(ROOT)}:{self.line}"


def blocks(path: Path = GUIDE) -> list[Block]:
    """Return every fenced block of a page, with the marker on the line before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        start = i
        i += 1
        body: list[str] = []
        while lines[i] != "```":
            body.append(lines[i])
            i += 1
        marker = _MARKER.match(lines[start - 1]) if start > 0 else None
        found.append(
            Block(
                kind=marker["kind"] if marker else "",
                arg=marker["arg"].strip() if marker else "",
                lang=fence["lang"],
                text="\n".join(body) + "\n",
                line=start + 1,
            )
        )
        i += 1
    return found


def normalise(text: str) -> str:
    """Return output without trailing blanks and with the times a run changes made equal."""
    text = "\n".join(line.rstrip() for line in text.strip("\n").splitlines())
    return _AGE.sub("(<age> ago)", _TIME.sub("<time>", text))


def matches(expected: str, actual: str) -> bool:
    """Tell whether ``actual`` is ``expected``, ``...`` in it standing for any text."""
    parts = [re.escape(part) for part in normalise(expected).split("...")]
    return re.fullmatch(".*?".join(parts), normalise(actual), re.DOTALL) is not None


def test_every_block_is_marked_and_every_output_follows_a_run() -> None:
    found = blocks()
    assert found, f"{GUIDE} has no code blocks"
    kinds = {"run", "output", "save", "example", "aws"}
    for block in found:
        assert block.kind in kinds, f"{block.where}: a block without a known guide marker"
        if block.kind in ("run", "aws"):
            assert block.lang == "bash", f"{block.where}: {block.kind} blocks are bash"
        if block.kind == "run":
            assert block.arg == "" or _EXITS.match(block.arg), f"{block.where}: {block.arg!r}"
        if block.kind == "output":
            assert block.lang == "text", f"{block.where}: output blocks are text"
    for previous, block in pairwise(found):
        if block.kind == "output":
            assert previous.kind == "run", f"{block.where}: output of no run block"
    assert found[0].kind == "run"


def test_the_example_blocks_show_their_files_as_they_are() -> None:
    examples = [b for b in blocks() if b.kind == "example"]
    assert examples, "the guide shows no example file"
    for block in examples:
        source = (ROOT / block.arg).read_text(encoding="utf-8")
        section = re.search(
            r"# --8<-- \[start:stack\]\n(.*?)\n+# --8<-- \[end:stack\]", source, re.S
        )
        assert section is not None, f"{block.arg} has no --8<-- section"
        assert block.text.strip("\n") == section.group(1).strip("\n"), (
            f"{block.where} differs from {block.arg}"
        )


def test_the_aws_blocks_parse() -> None:
    for block in (b for b in blocks() if b.kind == "aws"):
        parsed = subprocess.run(
            ["bash", "-n"], input=block.text, capture_output=True, text=True, check=False
        )
        assert parsed.returncode == 0, f"{block.where}: {parsed.stderr}"


@pytest.fixture
def guide_tables(dynamodb_local: DynamoDBLocal) -> Iterator[DynamoDBLocal]:
    """DynamoDB Local without the guide's tables; they are deleted after the run."""
    client = dynamodb_local.client()
    present = sorted(set(TABLES) & set(client.list_tables()["TableNames"]))
    assert not present, f"the guide's tables already exist in this DynamoDB Local: {present}"
    try:
        yield dynamodb_local
    finally:
        delete_tables(client, TABLES)


def test_the_guide_runs_as_written(guide_tables: DynamoDBLocal, tmp_path: Path) -> None:
    workdir = tmp_path / "guide"
    workdir.mkdir()
    exported = tmp_path / "exported.sh"  # the variables a block exports, for the next ones
    exported.write_text("", encoding="utf-8")
    venv_bin = Path(sys.executable).parent
    env = {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "DYNAMODB_ENDPOINT": guide_tables.endpoint_url,
    }
    found = blocks()
    ran = 0
    for index, block in enumerate(found):
        if block.kind == "save":
            (workdir / block.arg).write_text(block.text, encoding="utf-8")
            continue
        if block.kind != "run":
            continue
        exits = _EXITS.match(block.arg)
        want = int(exits["code"]) if exits else 0
        script = (
            f"source {exported}\n"
            f"trap 'export -p > {exported}' EXIT\n"
            "set -euo pipefail\n" + block.text
        )
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
            check=False,
        )
        ran += 1
        assert done.returncode == want, (
            f"{block.where} exited {done.returncode}, not {want}:\n{block.text}\n{done.stdout}"
        )
        following = found[index + 1] if index + 1 < len(found) else None
        if following is not None and following.kind == "output":
            assert matches(following.text, done.stdout), (
                f"{following.where}: the guide shows\n{following.text}\nthe run printed\n"
                f"{done.stdout}"
            )
    assert ran >= 10, f"only {ran} blocks ran"
