"""The dynashard Lambda layer: the library and its pinned run-time dependencies.

The layer is built for the functions' :data:`~infra.constructs.functions.RUNTIME` and
:data:`~infra.constructs.functions.ARCHITECTURE`, with the local pip when it can reach
the wheels and with Docker otherwise, from ``layers/dynashard/requirements.lock``: every
dependency, transitive ones included, pinned and checked against its hash
(``make lock`` compiles it from the ``runtime`` group with uv).

Powertools is bundled into the dynashard layer (with pydantic, pydantic-settings and
boto3) rather than taken from AWS's published Powertools layer: the versions are the
ones pinned in the ``runtime`` dependency group of pyproject.toml, i.e. exactly what
the tests run against; the published layer's version number for a given Powertools
release cannot be checked offline; and boto3 has to be bundled anyway, because the
``ThrottlingReasons`` field the library reads is newer than the runtime's boto3.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any, Final, cast

import jsii
from aws_cdk import BundlingOptions, ILocalBundling, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from dynashard import names
from infra.constructs.functions import ARCHITECTURE, REPO_ROOT, RUNTIME

#: Source of the dynashard layer (an installable package).
LAYER_SOURCE: Final = REPO_ROOT / "layers" / "dynashard"
#: Wheel platform and interpreter version that match RUNTIME and ARCHITECTURE.
PIP_PLATFORM: Final = "manylinux2014_aarch64"
PIP_PYTHON_VERSION: Final = names.LAMBDA_PYTHON_RUNTIME.removeprefix("python")


#: The layer's run-time dependencies, transitive ones included, pinned with their hashes
#: for Lambda's Python on arm64 (``make lock`` regenerates it from the ``runtime`` group).
LAYER_LOCK: Final = LAYER_SOURCE / "requirements.lock"


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


@jsii.implements(ILocalBundling)
class PipLocalBundling:
    """Build the layer with the local pip (no Docker): ``pip install --target python/``.

    pip downloads the manylinux2014 aarch64 wheels for the Lambda Python version, so the
    compiled parts (``pydantic_core``, ``wrapt``) match Lambda arm64 whatever the build
    machine is. When pip fails (no network and no wheelhouse, say) it prints why and
    returns False, and CDK falls back to the Docker bundling of the layer's
    ``BundlingOptions``.

    Parameters
    ----------
    source : pathlib.Path
        The library's source directory (``layers/dynashard``).
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
            True when pip succeeded; False (after a message on stderr) otherwise.
        """
        with tempfile.TemporaryDirectory(prefix="dynashard-layer-") as tmp:
            # Build from a copy: pip builds in-tree and would leave build/ in the repo.
            source = Path(tmp) / "dynashard"
            shutil.copytree(
                self._source,
                source,
                ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"),
            )
            for command in pip_layer_commands(source, Path(output_dir) / "python", self._lock):
                result = subprocess.run(command, capture_output=True, text=True, check=False)
                if result.returncode != 0:
                    break
        if result.returncode == 0:
            return True
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-5:])
        sys.stderr.write(
            "dynashard layer: local bundling with pip failed "
            f"(exit {result.returncode}); falling back to Docker bundling.\n"
            f"{tail}\n"
            "Without Docker, give pip access to the manylinux2014_aarch64 wheels "
            "(a package index or PIP_FIND_LINKS wheelhouse) and run the synth again.\n"
        )
        return False


def _build_layer_code(lock: Path = LAYER_LOCK) -> lambda_.Code:
    """Return the layer's code asset: local pip bundling, Docker as the fallback."""
    docker_command = " && ".join(
        [
            "cp -r /asset-input /tmp/src",
            "pip install --no-compile --require-hashes --no-deps -t /asset-output/python "
            f"-r /tmp/src/{lock.name}",
            "pip install --no-compile --no-deps -t /asset-output/python /tmp/src",
        ]
    )
    return lambda_.Code.from_asset(
        str(LAYER_SOURCE),
        exclude=["build", "*.egg-info", "**/__pycache__"],
        bundling=BundlingOptions(
            image=RUNTIME.bundling_image,
            platform="linux/arm64",
            command=["bash", "-c", docker_command],
            # jsii calls try_bundle(output_dir, options) positionally, while the typed
            # interface declares the options keyword-only; the cast records that.
            local=cast(ILocalBundling, PipLocalBundling(LAYER_SOURCE, lock)),
        ),
    )


class DynashardLayer(Construct):
    """The Lambda layer: the dynashard library plus its pinned run-time dependencies.

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
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=_build_layer_code(),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="dynashard library with Powertools, pydantic and boto3 (pinned)",
            # Old versions are deleted on update: a deployed function keeps its own copy
            # of the layer version it was published with, so nothing depends on them.
            removal_policy=RemovalPolicy.DESTROY,
        )
