"""Lambda defaults defined once, and the function factory.

Runtime, architecture, memory, timeout, log format, tracing, log group and role are
decided here for every function of the stack, so the five functions cannot drift. The
layer the functions share is built in :mod:`infra.constructs.layer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from dynashard import names
from infra.config import StackParameters

#: Repository root (``infra/constructs/functions.py`` -> ``.``).
REPO_ROOT: Final = Path(__file__).resolve().parents[2]
#: One folder per function; each is that function's code asset.
FUNCTIONS_DIR: Final = REPO_ROOT / "functions"

#: The one place where the runtime name of :mod:`dynashard.names` becomes a CDK Runtime.
RUNTIME: Final = lambda_.Runtime(names.LAMBDA_PYTHON_RUNTIME, lambda_.RuntimeFamily.PYTHON)
#: Graviton: "up to 34% better price performance" (AWS Lambda, arm64 launch).
ARCHITECTURE: Final = lambda_.Architecture.ARM_64


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
    config : StackParameters
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
        config: StackParameters,
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
    config: StackParameters, data_table_name: str, metadata_table_name: str, service: str
) -> dict[str, str]:
    """Return the environment every function gets (names from :mod:`dynashard.names`).

    Parameters
    ----------
    config : StackParameters
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
