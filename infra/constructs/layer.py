"""The dynashard Lambda layer: the library and its pinned run-time dependencies.

The layer is built for the functions' :data:`~infra.constructs.functions.RUNTIME` and
:data:`~infra.constructs.functions.ARCHITECTURE`, with the local pip when it can reach
the wheels and with Docker otherwise, from ``layers/dynashard/requirements.lock``: every
dependency, transitive ones included, pinned and checked against its hash
(``make lock`` compiles it from the ``runtime`` group with uv).

The library itself comes from ``layers/dynashard`` in a checkout. In the installed
``dynashard-cdk`` package (:mod:`infra.assets`), which carries the lock but not the
library's source, it comes from the installed ``dynashard`` distribution, the one the
construct itself imports: :func:`stage_installed_library` copies its files (the
``dynashard`` package and its ``.dist-info``) into a staging folder beside the lock,
and the bundling copies them into the layer's ``python/`` as pip would have installed
them. The layer then ships exactly the library the app was synthesized with.

Powertools is bundled into the dynashard layer (with pydantic and
boto3) rather than taken from AWS's published Powertools layer: the versions are the
ones pinned in the ``runtime`` dependency group of pyproject.toml, i.e. exactly what
the tests run against; the published layer's version number for a given Powertools
release cannot be checked offline; and boto3 has to be bundled anyway, because the
``ThrottlingReasons`` field the library reads is newer than the runtime's boto3.

The layer ships its bytecode. ``/opt`` is read-only in Lambda, so a layer without
``.pyc`` files is compiled again in every cold start (importing the ingest handler took
3.5 times as long without them, ``bench/cold_start.py``'s ``no_bytecode``). pip installs
with ``--no-compile`` (it would compile with the build machine's interpreter), then
:func:`compile_command` compiles every module with an interpreter of the Lambda runtime's
version (the Docker bundling image's, or a local one found by :func:`find_layer_python`),
as ``unchecked-hash`` ``.pyc`` files: valid whatever the files' modification times
(a zip does not keep them exactly), never checked against the source at import (the
layer is immutable), and identical from one build to the next (the asset hash stays
the same when nothing changed).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil

# B404: the layer build runs pip and compileall as argument lists (no shell), built from
# this repository's lock file and interpreter paths, never from user input.
import subprocess  # nosec B404
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any, Final, cast

import jsii
from aws_cdk import BundlingOptions, ILocalBundling, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

import dynashard
from dynashard import names

from ..assets import INSTALLED, LAYER_LOCK, LAYER_SOURCE, REPO_ROOT
from .functions import ARCHITECTURE, RUNTIME

#: Wheel platform and interpreter version that match RUNTIME and ARCHITECTURE.
PIP_PLATFORM: Final = "manylinux2014_aarch64"
PIP_PYTHON_VERSION: Final = names.LAMBDA_PYTHON_RUNTIME.removeprefix("python")


#: Where Lambda mounts the layer's ``python/`` directory: the source path written into
#: the compiled code objects (tracebacks name the deployed files, and the bytecode does
#: not depend on the build directory).
LAYER_PYTHON_DIR: Final = "/opt/python"
#: Environment variable naming a local interpreter of the Lambda Python version, used to
#: compile the layer when neither this interpreter nor ``pythonX.Y`` on PATH is one.
ENV_LAYER_PYTHON: Final = "DYNASHARD_LAYER_PYTHON"
#: In a staged layer source (:func:`stage_installed_library`), the folder holding the
#: installed library's files as they go into the layer's ``python/``.
STAGED_SITE: Final = "site"
#: The files of the installed distribution's ``.dist-info`` that say what it is, the ones
#: staged (``RECORD``, ``INSTALLER``, ``direct_url.json`` say how it was installed on
#: this machine: left out, so the asset is the same on every machine).
_DIST_INFO_FILES: Final = ("METADATA", "WHEEL", "top_level.txt", "entry_points.txt")


def layer_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """Return the pinned run-time requirements the layer ships with the library.

    Parameters
    ----------
    pyproject : pathlib.Path
        The application's pyproject.toml; its ``[dependency-groups].runtime`` list is
        the single source of the pins (:data:`LAYER_LOCK` is compiled from it).

    Returns
    -------
    list of str
        Requirement specifiers, e.g. ``["boto3==1.43.11", ...]``.

    Raises
    ------
    KeyError
        If the ``runtime`` dependency group is missing.
    """
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return [str(req) for req in data["dependency-groups"]["runtime"] if isinstance(req, str)]


def pip_layer_commands(source: Path, target: Path, lock: Path = LAYER_LOCK) -> list[list[str]]:
    """Build the pip commands that install the layer for Lambda arm64 without Docker.

    The dependencies come from the lock file alone, every one checked against its hash
    (``--require-hashes``; binary wheels for the Lambda platform only); the library
    itself is installed after them without dependencies (a local directory has no hash
    to check).

    Parameters
    ----------
    source : pathlib.Path
        Directory of the dynashard package (a copy of ``layers/dynashard``).
    target : pathlib.Path
        The layer's ``python/`` directory (Lambda adds ``/opt/python`` to sys.path).
    lock : pathlib.Path
        The hash-locked requirements (:data:`LAYER_LOCK`).

    Returns
    -------
    list of list of str
        argv for :func:`subprocess.run`, run in order: the locked dependencies, then
        the library.
    """
    common = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--target",
        str(target),
        "--platform",
        PIP_PLATFORM,
        "--implementation",
        "cp",
        "--python-version",
        PIP_PYTHON_VERSION,
        "--only-binary=:all:",
    ]
    return [
        [*common, "--require-hashes", "--no-deps", "-r", str(lock)],
        [*common, "--no-deps", str(source)],
    ]


def compile_command(python: str, target: str) -> list[str]:
    """Build the command that compiles the layer's modules to ``unchecked-hash`` bytecode.

    Parameters
    ----------
    python : str
        An interpreter of the Lambda runtime's Python version (its ``.pyc`` files are
        named ``*.cpython-312.pyc`` and only that version reads them).
    target : str
        The layer's ``python/`` directory.

    Returns
    -------
    list of str
        argv: ``python -m compileall`` quiet, on every core, with the deployed path
        (:data:`LAYER_PYTHON_DIR`) as the source file names and
        ``--invalidation-mode unchecked-hash`` (PEP 552: the ``.pyc`` is used without
        looking at the source, which a read-only layer cannot change).
    """
    return [
        python,
        "-m",
        "compileall",
        "-q",
        "-j",
        "0",
        "-d",
        LAYER_PYTHON_DIR,
        "--invalidation-mode",
        "unchecked-hash",
        target,
    ]


def _python_version(python: str) -> str | None:
    """Return ``"X.Y"`` of an interpreter, or None when it does not run (in 30 s)."""
    try:
        # B603: an argument list (no shell) naming an interpreter the build chose itself.
        result = subprocess.run(  # nosec B603
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def find_layer_python(version: str = PIP_PYTHON_VERSION) -> str | None:
    """Find a local interpreter of the Lambda runtime's Python version, to compile with.

    Tried in order: :data:`ENV_LAYER_PYTHON`, this interpreter, ``pythonX.Y`` on PATH;
    each is run once to read its version (a pyenv shim may exist and not run).

    Parameters
    ----------
    version : str
        ``"X.Y"``, the Lambda runtime's (:data:`PIP_PYTHON_VERSION`).

    Returns
    -------
    str or None
        The interpreter's path, or None when no candidate is that version.
    """
    candidates = [
        os.environ.get(ENV_LAYER_PYTHON),
        sys.executable,
        shutil.which(f"python{version}"),
    ]
    for candidate in candidates:
        if candidate and _python_version(candidate) == version:
            return candidate
    return None


def docker_bundling_command(lock: Path = LAYER_LOCK, *, staged: bool = False) -> str:
    """Return the shell command of the Docker bundling (in the runtime's build image).

    Parameters
    ----------
    lock : pathlib.Path
        The hash-locked requirements (:data:`LAYER_LOCK`); its name in the asset.
    staged : bool
        True when the asset is a staged installed library (:func:`stage_installed_library`):
        its :data:`STAGED_SITE` folder is copied instead of pip installing the source.

    Returns
    -------
    str
        For ``bash -c``: install the locked dependencies and the library with the image's
        pip, then compile everything with the image's Python (the runtime's version).
    """
    library = (
        f"cp -r /tmp/src/{STAGED_SITE}/. /asset-output/python/"
        if staged
        else "pip install --no-compile --no-deps -t /asset-output/python /tmp/src"
    )
    return " && ".join(
        [
            "cp -r /asset-input /tmp/src",
            "pip install --no-compile --require-hashes --no-deps -t /asset-output/python "
            f"-r /tmp/src/{lock.name}",
            library,
            " ".join(compile_command("python", "/asset-output/python")),
        ]
    )


def stage_installed_library(staging: Path, lock: Path = LAYER_LOCK) -> Path:
    """Stage the installed ``dynashard`` library and the lock as the layer's source.

    The files are the imported ``dynashard`` package (what this construct runs with;
    bytecode left out, the layer compiles its own) and the ``.dist-info`` of the
    installed distribution, less what records the install on this machine
    (:data:`_DIST_INFO_FILES`), so the staged folder, and with it the asset's hash,
    depends only on the library's version and content.

    Parameters
    ----------
    staging : pathlib.Path
        An empty folder; it receives the lock and :data:`STAGED_SITE`.
    lock : pathlib.Path
        The hash-locked requirements (:data:`LAYER_LOCK`).

    Returns
    -------
    pathlib.Path
        ``staging``, the layer's asset source.

    Raises
    ------
    importlib.metadata.PackageNotFoundError
        If no ``dynashard`` distribution is installed (``pip install dynashard``; it is a
        dependency of ``dynashard-cdk``).
    """
    site = staging / STAGED_SITE
    shutil.copytree(
        Path(dynashard.__file__).parent,
        site / "dynashard",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    dist = importlib.metadata.distribution("dynashard")
    info = f"dynashard-{dist.version}.dist-info"
    (site / info).mkdir()
    for name in _DIST_INFO_FILES:
        text = dist.read_text(name)
        if text is not None:
            (site / info / name).write_text(text, encoding="utf-8")
    shutil.copy2(lock, staging / lock.name)
    return staging


@jsii.implements(ILocalBundling)
class PipLocalBundling:
    """Build the layer with the local pip (no Docker): ``pip install --target python/``.

    pip downloads the manylinux2014 aarch64 wheels for the Lambda Python version, so the
    compiled parts (``pydantic_core``, ``wrapt``) match Lambda arm64 whatever the build
    machine is. When pip fails (no network and no wheelhouse, say) it prints why and
    returns False, and CDK falls back to the Docker bundling of the layer's
    ``BundlingOptions``. The modules are then compiled by a local interpreter of the
    Lambda Python version (:func:`find_layer_python`); without one it builds the layer
    without bytecode and warns on stderr (bytecode of another version would be ignored
    in Lambda, and no bytecode at all costs every cold start the compilation; Docker
    bundling compiles with the image's Python).

    Parameters
    ----------
    source : pathlib.Path
        The library's source directory (``layers/dynashard``), or a staged installed
        library (:func:`stage_installed_library`), whose files are copied as they are.
    lock : pathlib.Path
        The hash-locked requirements installed next to the library (:data:`LAYER_LOCK`).
    """

    def __init__(self, source: Path, lock: Path = LAYER_LOCK) -> None:
        self._source = source
        self._lock = lock

    def try_bundle(self, output_dir: str, options: Any) -> bool:
        """Install the layer into ``output_dir/python``; return False to use Docker.

        Parameters
        ----------
        output_dir : str
            Directory CDK zips as the layer asset.
        options : aws_cdk.BundlingOptions
            CDK's bundling options (the Docker ones); unused here.

        Returns
        -------
        bool
            True when pip (and the compilation, with a local Python of the runtime's
            version; without one the layer ships without bytecode, after a warning on
            stderr) succeeded; False (after a message on stderr) otherwise.
        """
        python = find_layer_python()
        if python is None:
            sys.stderr.write(
                f"dynashard layer: no local Python {PIP_PYTHON_VERSION} to compile the layer "
                "with: building it without bytecode, so every cold start in Lambda compiles "
                f"its modules (about 2 x the import time). Set {ENV_LAYER_PYTHON} to a Python "
                f"{PIP_PYTHON_VERSION} interpreter, or bundle with Docker, to ship it "
                "compiled.\n"
            )
        target = Path(output_dir) / "python"
        staged_site = self._source / STAGED_SITE
        if staged_site.is_dir():  # the installed library: its files go in as they are
            deps, _ = pip_layer_commands(self._source, target, self._lock)
            # B603: pip's argument list (no shell) from the lock file.
            result = subprocess.run(deps, capture_output=True, text=True, check=False)  # nosec B603
            if result.returncode == 0:
                shutil.copytree(staged_site, target, dirs_exist_ok=True)
                if python is not None:
                    # B603: compileall's argument list (no shell) on the layer's own folder.
                    result = subprocess.run(  # nosec B603
                        compile_command(python, str(target)),
                        capture_output=True,
                        text=True,
                        check=False,
                    )
            return self._report(result)
        with tempfile.TemporaryDirectory(prefix="dynashard-layer-") as tmp:
            # Build from a copy: pip builds in-tree and would leave build/ in the repo.
            # dist/ holds a wheel built in place (python -m build), never the layer's.
            source = Path(tmp) / "dynashard"
            shutil.copytree(
                self._source,
                source,
                ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"),
            )
            commands = pip_layer_commands(source, target, self._lock)
            if python is not None:
                commands.append(compile_command(python, str(target)))
            for command in commands:
                # B603: pip and compileall argument lists (no shell) from the lock file.
                result = subprocess.run(  # nosec B603
                    command, capture_output=True, text=True, check=False
                )
                if result.returncode != 0:
                    break
        return self._report(result)

    @staticmethod
    def _report(result: subprocess.CompletedProcess[str]) -> bool:
        """Return True for a command that succeeded; else say why on stderr, False."""
        if result.returncode == 0:
            return True
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-5:])
        sys.stderr.write(
            "dynashard layer: local bundling failed "
            f"(exit {result.returncode}); falling back to Docker bundling.\n"
            f"{tail}\n"
            "Without Docker, give pip access to the manylinux2014_aarch64 wheels "
            "(a package index or PIP_FIND_LINKS wheelhouse) and run the synth again.\n"
        )
        return False


def _build_layer_code(source: Path, lock: Path = LAYER_LOCK) -> lambda_.Code:
    """Return the layer's code asset: local pip bundling, Docker as the fallback."""
    return lambda_.Code.from_asset(
        str(source),
        # Build output, a wheel built in place (dist/) included: not part of the asset's hash.
        exclude=["build", "dist", "*.egg-info", "**/__pycache__"],
        bundling=BundlingOptions(
            image=RUNTIME.bundling_image,
            platform="linux/arm64",
            command=[
                "bash",
                "-c",
                docker_bundling_command(lock, staged=(source / STAGED_SITE).is_dir()),
            ],
            # jsii calls try_bundle(output_dir, options) positionally, while the typed
            # interface declares the options keyword-only; the cast records that.
            local=cast(ILocalBundling, PipLocalBundling(source, lock)),
        ),
    )


class DynashardLayer(Construct):
    """The Lambda layer: the dynashard library plus its pinned run-time dependencies.

    In a checkout the library is ``layers/dynashard``; from the installed
    ``dynashard-cdk`` package it is the installed ``dynashard`` distribution, staged in a
    temporary folder while the asset is built (:func:`stage_installed_library`).

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct.
    construct_id : str
        Construct id.

    Attributes
    ----------
    layer : aws_cdk.aws_lambda.LayerVersion
        The layer, compatible with :data:`RUNTIME` on :data:`ARCHITECTURE` only.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        if LAYER_SOURCE is not None and not INSTALLED:
            self.layer = self._build(LAYER_SOURCE)
            return
        # The asset is staged (bundled, or hashed when bundling is skipped) while the
        # LayerVersion is built, so the staging folder is needed only until then.
        with tempfile.TemporaryDirectory(prefix="dynashard-layer-source-") as tmp:
            self.layer = self._build(stage_installed_library(Path(tmp)))

    def _build(self, source: Path) -> lambda_.LayerVersion:
        """Return the LayerVersion built from ``source``."""
        return lambda_.LayerVersion(
            self,
            "Layer",
            code=_build_layer_code(source),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="dynashard library with Powertools, pydantic and boto3 (pinned)",
            # Old versions are deleted on update: a deployed function keeps its own copy
            # of the layer version it was published with, so nothing depends on them.
            removal_policy=RemovalPolicy.DESTROY,
        )
