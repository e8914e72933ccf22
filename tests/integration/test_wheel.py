"""The library's wheel and sdist, as a user gets them.

``python -m build`` builds the sdist from a copy of ``layers/dynashard`` and the wheel from
that sdist (its default), so a file the sdist lacks breaks the wheel here, not on a
user's machine. Both pass ``twine check --strict``; the wheel's metadata is the
pyproject's, its version the one setuptools-scm reads from the checkout's git metadata
(the copy has none: the build is given it, as the layer's build is), and a wheel built
from the sdist alone keeps it; a copy built without it gets the fallback version; the
sdist carries the changelog, whose newest entry is that version, or which opens with
``[Unreleased]`` between releases. Then the wheel is installed with its ``cli`` and
``lambda`` extras into a fresh virtualenv outside the checkout (its dependencies from the
package index, as a user's pip gets them) and run there, from a directory outside the
checkout: an import, ``dynashard --help``, a function's kit (``function_kit()``, its
tracer), and the example of the package's README against DynamoDB
Local, after the two tables are created with plain boto3 calls.

The build runs without isolation when this environment has the build backend (``make
install`` installs the locked setuptools), else isolated (setuptools from the index).
"""

from __future__ import annotations

import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import tomllib
import uuid
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
from packaging.version import Version

from dynashard._version import UNKNOWN_VERSION
from sandbox.engines.dynamodb_local import (
    LOCAL_ACCESS_KEY_ID,
    LOCAL_REGION,
    LOCAL_SECRET_ACCESS_KEY,
    DynamoDBLocal,
)
from tests.infrastructure.test_shipped_code import DEV_PACKAGES, _texts, scan

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "layers" / "dynashard"
#: setuptools-scm's variable that gives a build without git metadata its version.
PRETEND_VERSION = "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_DYNASHARD"


def checkout_version() -> str:
    """The version setuptools-scm derives for the checkout (the library's configuration)."""
    result = _run([sys.executable, "-m", "setuptools_scm", "-c", str(LIBRARY / "pyproject.toml")])
    assert result.returncode == 0, _explain(result)
    return str(Version(result.stdout.strip()))


@dataclass(frozen=True)
class Dist:
    """The built distributions."""

    wheel: Path
    sdist: Path


def _run(args: list[str], *, timeout: float = 120, **kwargs: Any) -> CompletedProcess[str]:
    """Run a command; the caller checks its exit code, with :func:`_explain` as the message."""
    return subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )


def _explain(result: CompletedProcess[str]) -> str:
    out, err = result.stdout[-3000:], result.stderr[-3000:]
    return f"{result.args}: exit {result.returncode}\n{out}\n{err}"


def _build(source: Path, out: Path, *args: str, version: str | None = None) -> None:
    """``python -m build`` of ``source`` into ``out``; ``version`` as the pretend one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SETUPTOOLS_SCM_")}
    if version is not None:
        env[PRETEND_VERSION] = version
    results = []
    for isolation in (["--no-isolation"], []):
        shutil.rmtree(out, ignore_errors=True)
        command = [sys.executable, "-m", "build", *isolation, *args, "--outdir", str(out)]
        result = _run([*command, str(source)], env=env)
        results.append(result)
        if result.returncode == 0:
            return
    pytest.fail("python -m build failed:\n" + "\n".join(_explain(r) for r in results))


def _copy_library(work: Path) -> Path:
    """A copy of ``layers/dynashard`` outside the checkout: no git metadata."""
    source = work / "dynashard"
    shutil.copytree(
        LIBRARY,
        source,
        ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"),
    )
    return source


def build_dist(work: Path, version: str) -> Dist:
    """Build the sdist and, from it, the wheel of a copy of ``layers/dynashard``."""
    out = work / "dist"
    _build(_copy_library(work), out, version=version)
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert [p.name for p in wheels] == [f"dynashard-{version}-py3-none-any.whl"]
    assert [p.name for p in sdists] == [f"dynashard-{version}.tar.gz"]
    return Dist(wheel=wheels[0], sdist=sdists[0])


@pytest.fixture(scope="module")
def version() -> str:
    return checkout_version()


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory, version: str) -> Dist:
    return build_dist(tmp_path_factory.mktemp("build"), version)


def _wheel_files(dist: Dist) -> dict[str, bytes]:
    with zipfile.ZipFile(dist.wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


# --- the distributions -------------------------------------------------------------------------
def test_twine_check_strict_passes_on_the_wheel_and_the_sdist(dist: Dist) -> None:
    result = _run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dist.wheel), str(dist.sdist)],
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert result.returncode == 0, _explain(result)
    assert result.stdout.count("PASSED") == 2, result.stdout


def test_the_checkouts_version_comes_from_git(version: str) -> None:
    """One scheme (setuptools-scm): a tag vX.Y.Z is X.Y.Z, any other commit a dev
    version naming the commit, so two different commits never build the same version."""
    head = _run(["git", "-C", str(ROOT), "rev-parse", "HEAD"])
    assert head.returncode == 0, _explain(head)
    tag = _run(["git", "-C", str(ROOT), "describe", "--tags", "--exact-match", "--match", "v*"])
    dirty = _run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])
    parsed = Version(version)
    if tag.returncode == 0 and not dirty.stdout.strip():
        assert version == tag.stdout.strip().removeprefix("v")
        assert not parsed.is_devrelease and parsed.local is None
    else:
        assert parsed.is_devrelease and parsed.local is not None, version
        assert f"g{head.stdout.strip()[:7]}" in parsed.local, (version, head.stdout)


def test_a_copy_without_git_gets_the_fallback_and_a_wheel_keeps_its_sdists_version(
    dist: Dist, version: str, tmp_path: Path
) -> None:
    # Given the sdist unpacked outside the checkout, no version given
    with tarfile.open(dist.sdist) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    # When a wheel is built from it, Then it has the sdist's version (its PKG-INFO)
    _build(tmp_path / "unpacked" / f"dynashard-{version}", tmp_path / "from-sdist", "--wheel")
    assert [p.name for p in (tmp_path / "from-sdist").iterdir()] == [
        f"dynashard-{version}-py3-none-any.whl"
    ]
    # and a copy of the source without git metadata, no version given, gets the fallback:
    # a local version, which a package index refuses
    _build(_copy_library(tmp_path / "copy"), tmp_path / "no-git", "--sdist")
    assert [p.name for p in (tmp_path / "no-git").iterdir()] == [
        f"dynashard-{UNKNOWN_VERSION}.tar.gz"
    ]
    assert Version(UNKNOWN_VERSION).local == "unknown"


def test_the_wheel_metadata_is_the_pyprojects(dist: Dist, version: str) -> None:
    # Given the wheel's METADATA and the library's pyproject
    files = _wheel_files(dist)
    info = f"dynashard-{version}.dist-info"
    meta = email.parser.Parser().parsestr(files[f"{info}/METADATA"].decode("utf-8"))
    project = tomllib.loads((LIBRARY / "pyproject.toml").read_text())["project"]
    # Then the name, the version (the checkout's) and what pip needs are there
    assert meta["Name"] == "dynashard"
    assert meta["Version"] == version
    assert meta["Requires-Python"] == project["requires-python"]
    assert meta["Summary"] == project["description"]
    expected = set(project["dependencies"]) | {
        f'{req}; extra == "{extra}"'
        for extra, reqs in project["optional-dependencies"].items()
        for req in reqs
    }
    assert set(meta.get_all("Requires-Dist")) == expected
    assert {r.split(">=")[0] for r in project["dependencies"]} == {"boto3", "pydantic"}
    assert set(meta.get_all("Provides-Extra")) == {"chart", "cli", "lambda"}
    assert set(meta.get_all("Classifier")) == set(project["classifiers"])
    assert meta["Keywords"] and meta["Author"] == "dynashard contributors"
    # and the licence (PEP 639): its SPDX expression, and its files inside the wheel
    assert meta["License-Expression"] == project["license"] == "Apache-2.0"
    assert meta.get_all("License-File") == project["license-files"] == ["LICENSE", "NOTICE"]
    for name in project["license-files"]:
        assert files[f"{info}/licenses/{name}"] == (LIBRARY / name).read_bytes()
    # and the project's addresses
    urls = dict(url.split(", ", 1) for url in meta.get_all("Project-URL"))
    assert urls == project["urls"]
    # and the package page is the README, as Markdown
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().strip() == (LIBRARY / "README.md").read_text().strip()
    # and the command, the type marker
    entry_points = files[f"{info}/entry_points.txt"].decode()
    assert "[console_scripts]\ndynashard = dynashard.cli.app:main" in entry_points
    assert "dynashard/py.typed" in files


def test_the_sdist_carries_the_changelog_of_this_version(dist: Dist, version: str) -> None:
    top = f"dynashard-{version}"
    with tarfile.open(dist.sdist) as archive:
        names = set(archive.getnames())
        member = archive.extractfile(f"{top}/CHANGELOG.md")
        assert member is not None
        changelog = member.read().decode()
    for name in (
        "PKG-INFO",
        "README.md",
        "LICENSE",
        "NOTICE",
        "pyproject.toml",
        "src/dynashard/__init__.py",
    ):
        assert f"{top}/{name}" in names
    assert changelog == (LIBRARY / "CHANGELOG.md").read_text()
    # The newest released entry (Keep a Changelog: "## [x.y.z] - YYYY-MM-DD") is this
    # version; between releases the changelog opens with [Unreleased], and a version from
    # a tag (not the fallback's base) comes after the newest release.
    released = re.findall(r"^## \[(\d[^\]]*)\] - \d{4}-\d{2}-\d{2}$", changelog, re.MULTILINE)
    sections = re.findall(r"^## \[([^\]]*)\]", changelog, re.MULTILINE)
    parsed = Version(version)
    if parsed.is_devrelease:
        assert sections[0] == "Unreleased", sections
        if "unknown" not in (parsed.local or ""):
            assert parsed > Version(released[0]), (version, released)
    else:
        assert released and released[0] == version, released


def test_the_wheel_holds_no_reference_to_sandbox_or_bench(dist: Dist) -> None:
    """The wheel is the library alone (tests/infrastructure/test_shipped_code.py scans the
    layer the same way)."""
    files = _wheel_files(dist)
    assert "dynashard/cli/app.py" in files and "dynashard/__init__.py" in files
    assert "dynashard/cli/checkout.py" not in files
    tops = {name.split("/")[0] for name in files}
    assert not tops & set(DEV_PACKAGES), tops
    # and no file of it reaches for sandbox/ or bench/
    texts = _texts(files)
    assert any(name.endswith("entry_points.txt") for name in texts)
    assert scan(texts) == {}


# --- installed outside the checkout ------------------------------------------------------------
@dataclass(frozen=True)
class Installed:
    """A fresh virtualenv with the wheel installed, and a directory to run in."""

    bin: Path
    cwd: Path
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 60) -> CompletedProcess[str]:
        return _run(list(args), cwd=self.cwd, env=self.env, timeout=timeout)


def _clean_env(venv_dir: Path, home: Path) -> dict[str, str]:
    """The environment of a user's shell: no checkout on the path, no AWS profile."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in dropped and not k.startswith(("AWS_", "DYNASHARD_"))
    }
    env.update(
        PATH=f"{venv_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv_dir),
        PYTHONNOUSERSITE="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
        AWS_CONFIG_FILE=str(home / "aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(home / "aws-credentials"),
    )
    return env


@pytest.fixture(scope="module")
def installed(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    home = tmp_path_factory.mktemp("user")
    assert not home.resolve().is_relative_to(ROOT), f"{home} is inside the checkout"
    venv_dir = home / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    installed = Installed(bin=venv_dir / "bin", cwd=home, env=_clean_env(venv_dir, home))
    pip = [str(installed.bin / "python"), "-m", "pip", "install", "--quiet"]
    result = installed.run(*pip, f"{dist.wheel}[cli,lambda]", timeout=300)
    assert result.returncode == 0, _explain(result)
    return installed


def test_the_installed_wheel_imports_with_its_version(installed: Installed, version: str) -> None:
    code = (
        "import importlib.metadata, json, dynashard; "
        "print(json.dumps([dynashard.__version__, importlib.metadata.version('dynashard'), "
        "dynashard.__file__]))"
    )
    result = installed.run(str(installed.bin / "python"), "-c", code)
    assert result.returncode == 0, _explain(result)
    dynashard_version, dist_version, module_file = json.loads(result.stdout)
    assert dynashard_version == dist_version == version
    # imported from the fresh virtualenv, not from the checkout
    assert Path(module_file).is_relative_to(installed.bin.parent), module_file


def test_the_installed_command_answers_help(installed: Installed) -> None:
    result = installed.run(str(installed.bin / "dynashard"), "--help")
    assert result.returncode == 0, _explain(result)
    assert "Usage: dynashard" in result.stdout
    for command in ("status", "resize", "plan", "hot"):
        assert re.search(rf"^\s+{command}\s", result.stdout, re.MULTILINE), result.stdout


def test_the_lambda_extra_builds_a_functions_kit_with_its_tracer(installed: Installed) -> None:
    """``dynashard[lambda]`` then ``function_kit()`` failed: No module named 'aws_xray_sdk'."""
    code = (
        "import json, sys\n"
        "from dynashard.lambda_kit.kit import function_kit\n"
        "from dynashard.lambda_kit.settings import FunctionSettings\n"
        "kit = function_kit('probe', FunctionSettings)\n"
        "print(json.dumps([type(kit.tracer).__name__, 'aws_xray_sdk' in sys.modules]))\n"
    )
    result = installed.run(str(installed.bin / "python"), "-c", code)
    assert result.returncode == 0, _explain(result)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == ["Tracer", True]
    # and the command's extra did not bring the chart's matplotlib
    check = "import importlib.util as u; print(u.find_spec('matplotlib') is None)"
    result = installed.run(str(installed.bin / "python"), "-c", check)
    assert result.stdout.strip() == "True", _explain(result)


def _readme_example() -> str:
    blocks = re.findall(r"^```python\n(.*?)^```", (LIBRARY / "README.md").read_text(), re.S | re.M)
    assert len(blocks) == 1, "the package README has one Python example"
    return str(blocks[0])


#: A user's script: the two tables with plain boto3, the README's example, a check.
EXAMPLE = """\
import json

import boto3

DATA, META = "{data}", "{meta}"
client = boto3.client("dynamodb")
client.create_table(
    TableName=DATA,
    BillingMode="PAY_PER_REQUEST",
    AttributeDefinitions=[
        {{"AttributeName": name, "AttributeType": "S"}}
        for name in ("PK", "SK", "GSI1PK", "GSI1SK")
    ],
    KeySchema=[
        {{"AttributeName": "PK", "KeyType": "HASH"}},
        {{"AttributeName": "SK", "KeyType": "RANGE"}},
    ],
    GlobalSecondaryIndexes=[
        {{
            "IndexName": "GSI1",
            "KeySchema": [
                {{"AttributeName": "GSI1PK", "KeyType": "HASH"}},
                {{"AttributeName": "GSI1SK", "KeyType": "RANGE"}},
            ],
            "Projection": {{"ProjectionType": "ALL"}},
        }}
    ],
)
client.create_table(
    TableName=META,
    BillingMode="PAY_PER_REQUEST",
    AttributeDefinitions=[{{"AttributeName": "key", "AttributeType": "S"}}],
    KeySchema=[{{"AttributeName": "key", "KeyType": "HASH"}}],
)
for name in (DATA, META):
    client.get_waiter("table_exists").wait(TableName=name)
try:
{example}
    pks = set()
    for scanned in client.get_paginator("scan").paginate(TableName=DATA):
        pks.update(item["PK"]["S"] for item in scanned["Items"])
    print(json.dumps({{"items": page.items, "cursor": page.cursor, "pks": sorted(pks)}}))
finally:
    for name in (DATA, META):
        client.delete_table(TableName=name)
"""


def test_the_readme_example_runs_against_dynamodb_local(
    installed: Installed, dynamodb_local: DynamoDBLocal
) -> None:
    # Given a user's script: the README's example on two fresh tables (unique names)
    suffix = uuid.uuid4().hex[:8]
    data, meta = f"wheel-data-{suffix}", f"wheel-shards-{suffix}"
    example = _readme_example()
    assert '"dynashard-data"' in example and '"dynashard-shards"' in example
    example = example.replace('"dynashard-data"', "DATA").replace('"dynashard-shards"', "META")
    script = installed.cwd / "example.py"
    script.write_text(
        EXAMPLE.format(data=data, meta=meta, example=textwrap.indent(example, "    "))
    )
    # When it runs with the endpoint and credentials a user would set for DynamoDB Local
    env = {
        **installed.env,
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_local.endpoint_url,
        "AWS_ACCESS_KEY_ID": LOCAL_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": LOCAL_SECRET_ACCESS_KEY,
        "AWS_DEFAULT_REGION": LOCAL_REGION,
    }
    result = _run([str(installed.bin / "python"), str(script)], cwd=installed.cwd, env=env)
    assert result.returncode == 0, _explain(result)
    # Then the ten events come back in time order, exactly as written, in one page
    printed_ids, report = result.stdout.strip().splitlines()[-2:]
    ids = [f"UA{i}" for i in range(10)]
    assert printed_ids == str(ids)
    out = json.loads(report)
    assert out["items"] == [
        {
            "key": "DEPARTURES#JFK",
            "id": f"UA{i}",
            "ts": f"2013-01-01T10:{i:02d}:00.000000Z",
            "data": {"delay": i},
        }
        for i in range(10)
    ]
    assert out["cursor"] is None
    # and they were spread over the key's 4 shards (10 events all on one: p = 4 / 4**10)
    shards = {f"DEPARTURES#JFK#{s}" for s in range(4)}
    assert set(out["pks"]) <= shards and len(out["pks"]) > 1, out["pks"]
