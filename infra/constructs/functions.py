"""Lambda defaults defined once, the dynashard layer, and the function factory.

Runtime, architecture, memory, timeout, log format, tracing, log group and role are
decided here for every function of the stack, so the five functions cannot drift.

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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

import jsii
from aws_cdk import BundlingOptions, Duration, ILocalBundling, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from dynashard import names
from infra.config import StackConfig

#: Repository root (``infra/constructs/functions.py`` -> ``.``).
REPO_ROOT: Final = Path(__file__).resolve().parents[2]
#: Source of the dynashard layer (an installable package).
LAYER_SOURCE: Final = REPO_ROOT / "layers" / "dynashard"
#: One folder per function; each is that function's code asset.
FUNCTIONS_DIR: Final = REPO_ROOT / "functions"

#: The one place where the runtime name of :mod:`dynashard.names` becomes a CDK Runtime.
RUNTIME: Final = lambda_.Runtime(names.LAMBDA_PYTHON_RUNTIME, lambda_.RuntimeFamily.PYTHON)
#: Graviton: "up to 34% better price performance" (AWS Lambda, arm64 launch).
ARCHITECTURE: Final = lambda_.Architecture.ARM_64
#: Wheel platform and interpreter version that match RUNTIME and ARCHITECTURE.
PIP_PLATFORM: Final = "manylinux2014_aarch64"
PIP_PYTHON_VERSION: Final = names.LAMBDA_PYTHON_RUNTIME.removeprefix("python")


def layer_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """Return the pinned run-time requirements the layer ships with the library.

    Parameters
    ----------
    pyproject : pathlib.Path
        The application's pyproject.toml; its ``[dependency-groups].runtime`` list is
        the single source of the pins.

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


def pip_layer_command(source: Path, target: Path, requirements: Sequence[str]) -> list[str]:
    """Build the pip command that installs the layer for Lambda arm64 without Docker.

    Parameters
    ----------
    source : pathlib.Path
        Directory of the dynashard package (a copy of ``layers/dynashard``).
    target : pathlib.Path
        The layer's ``python/`` directory (Lambda adds ``/opt/python`` to sys.path).
    requirements : sequence of str
        Pinned requirements installed next to the library.

    Returns
    -------
    list of str
        argv for :func:`subprocess.run`; binary wheels only, for the Lambda platform.
    """
    return [
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
        str(source),
        *requirements,
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
    requirements : sequence of str
        Pinned requirements installed next to the library.
    """

    def __init__(self, source: Path, requirements: Sequence[str]) -> None:
        self._source = source
        self._requirements = list(requirements)

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
            command = pip_layer_command(source, Path(output_dir) / "python", self._requirements)
            result = subprocess.run(command, capture_output=True, text=True, check=False)
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


def _build_layer_code(requirements: Sequence[str]) -> lambda_.Code:
    """Return the layer's code asset: local pip bundling, Docker as the fallback."""
    docker_command = " && ".join(
        [
            "cp -r /asset-input /tmp/src",
            "pip install --no-compile -t /asset-output/python /tmp/src "
            + " ".join(f"'{req}'" for req in requirements),
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
            local=cast(ILocalBundling, PipLocalBundling(LAYER_SOURCE, requirements)),
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
            code=_build_layer_code(layer_requirements()),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="dynashard library with Powertools, pydantic and boto3 (pinned)",
            # Old versions are deleted on update: a deployed function keeps its own copy
            # of the layer version it was published with, so nothing depends on them.
            removal_policy=RemovalPolicy.DESTROY,
        )


class DynashardFunction(Construct):
    """One Lambda function with the stack's defaults, its own role and log group.

    The role starts empty except for writing to the function's own log group; callers
    add least-privilege statements with :meth:`add_to_policy`.

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct.
    construct_id : str
        Construct id.
    config : StackConfig
        Stack parameters (memory, timeout, log retention, stage).
    code_dir : str
        Folder name under ``functions/`` holding the entry module (the code asset).
    handler : str
        Handler in ``module.function`` form, e.g. ``app.sqs_handler``.
    layer : aws_cdk.aws_lambda.ILayerVersion
        The dynashard layer.
    environment : mapping of str to str
        Environment variables; names from :mod:`dynashard.names`.
    description : str
        Function description shown in the console.

    Attributes
    ----------
    function : aws_cdk.aws_lambda.Function
        The function.
    role : aws_cdk.aws_iam.Role
        Its execution role (one per function).
    log_group : aws_cdk.aws_logs.LogGroup
        Its log group, with the configured retention.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: StackConfig,
        code_dir: str,
        handler: str,
        layer: lambda_.ILayerVersion,
        environment: Mapping[str, str],
        description: str,
    ) -> None:
        super().__init__(scope, construct_id)
        removal = RemovalPolicy.DESTROY if config.is_dev else RemovalPolicy.RETAIN
        self.log_group = logs.LogGroup(
            self,
            "LogGroup",
            retention=logs.RetentionDays[config.log_retention_name],
            removal_policy=removal,
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"dynashard {construct_id} function (least privilege)",
        )
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            code=lambda_.Code.from_asset(
                str(FUNCTIONS_DIR / code_dir), exclude=["**/__pycache__", "*.pyc"]
            ),
            handler=handler,
            layers=[layer],
            role=self.role,
            log_group=self.log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            tracing=lambda_.Tracing.ACTIVE,
            memory_size=config.function_memory_mb,
            timeout=Duration.seconds(config.function_timeout_s),
            environment={
                names.ENV_POWERTOOLS_METRICS_NAMESPACE: names.METRICS_NAMESPACE,
                **environment,
            },
            description=description,
        )

    def add_to_policy(self, *statements: iam.PolicyStatement) -> None:
        """Add IAM statements to this function's own role.

        Parameters
        ----------
        *statements : aws_cdk.aws_iam.PolicyStatement
            Statements to allow; each should name exact actions and resources.
        """
        for statement in statements:
            self.role.add_to_policy(statement)


def shared_environment(
    config: StackConfig, data_table_name: str, metadata_table_name: str, service: str
) -> dict[str, str]:
    """Return the environment every function gets (names from :mod:`dynashard.names`).

    Parameters
    ----------
    config : StackConfig
        Stack parameters.
    data_table_name, metadata_table_name : str
        Physical table names (CDK tokens).
    service : str
        Powertools service name of the function (``POWERTOOLS_SERVICE_NAME``).

    Returns
    -------
    dict of str to str
        Environment variables for :class:`DynashardFunction`.
    """
    return {
        names.ENV_DATA_TABLE: data_table_name,
        names.ENV_METADATA_TABLE: metadata_table_name,
        names.ENV_DEFAULT_SHARDS: str(config.default_shards),
        names.ENV_MAX_SHARDS: str(config.max_shards),
        names.ENV_COOLDOWN_S: _num(config.cooldown_s),
        names.ENV_METADATA_CACHE_TTL_S: _num(config.metadata_cache_ttl_s),
        names.ENV_TIME_BUCKET: str(config.time_bucket.value),
        names.ENV_PARTITION_WCU: _num(config.partition_wcu),
        names.ENV_PARTITION_RCU: _num(config.partition_rcu),
        names.ENV_TARGET_UTILIZATION: _num(config.target_utilization),
        names.ENV_WRITE_MAX_ATTEMPTS: str(config.write_max_attempts),
        names.ENV_POWERTOOLS_SERVICE_NAME: service,
    }


def _num(value: float) -> str:
    """Format a number for an environment variable without a spurious ``.0``."""
    return str(int(value)) if float(value).is_integer() else str(value)
