"""Lambda defaults defined once, and the function factory.

Runtime, architecture, memory, timeout, log format, tracing, log group and role are
decided here for every function of the stack, so the five functions cannot drift. So
is the wiring the ingest, query and scaler constructs share: the environment, the
function with its statements (:func:`build_function`), the metadata-table statement
(:func:`build_metadata_statement`), the data table's customer managed key, when it
has one (:func:`grant_data_table_key`), and the ARN of a resource of the stack's own
(:func:`stack_arn`). The layer the functions share is built in
:mod:`infra.constructs.layer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from dynashard import names

from ..assets import FUNCTIONS_DIR
from ..config import DynashardParameters, FunctionName
from ..deploy_checks import (
    ENVIRONMENT_NOT_SECRET,
    LOGS_SERVICE_ENCRYPTED,
    NO_VPC,
    ROLE_DEPENDENCY,
    ignore_cfn_lint,
    skip_checkov,
)
from .grants import METADATA_READ_ACTIONS, METADATA_READ_UPDATE_ACTIONS, SCHEMA_CHECK_ACTIONS

if TYPE_CHECKING:
    from .tables import Tables


#: The one place where the runtime name of :mod:`dynashard.names` becomes a CDK Runtime.
#: SnapStart serves Python 3.12 and later ("Improving startup performance with Lambda
#: SnapStart", AWS Lambda Developer Guide); CDK refuses it on a runtime not declared so.
RUNTIME: Final = lambda_.Runtime(
    names.LAMBDA_PYTHON_RUNTIME, lambda_.RuntimeFamily.PYTHON, supports_snap_start=True
)
#: Graviton: "up to 34% better price performance" (AWS Lambda, arm64 launch).
ARCHITECTURE: Final = lambda_.Architecture.ARM_64

#: Alias of a SnapStart function's published version, the one its integrations invoke.
LIVE_ALIAS: Final = "live"


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
    config : DynashardParameters
        Parameters (memory, timeout, log retention, stage).
    code_dir : str
        Folder name under ``functions/`` holding the entry module (the code asset).
    handler : str
        Handler in ``module.function`` form, e.g. ``app.sqs_handler``.
    memory : FunctionName
        Which function's memory size it gets (:meth:`DynashardParameters.memory_mb`).
    layer : aws_cdk.aws_lambda.ILayerVersion
        The dynashard layer.
    environment : mapping of str to str
        Environment variables; names from :mod:`dynashard.names`.
    description : str
        Function description shown in the console.
    reserved_concurrency : int, optional
        Reserved concurrent executions (``ReservedConcurrentExecutions``); None: the
        function draws from the account's unreserved pool.
    snap_start : bool
        Lambda SnapStart on published versions, and an alias :data:`LIVE_ALIAS` on the
        current version for callers to invoke (:attr:`invoke_target`).

    Attributes
    ----------
    function : aws_cdk.aws_lambda.Function
        The function.
    role : aws_cdk.aws_iam.Role
        Its execution role (one per function).
    log_group : aws_cdk.aws_logs.LogGroup
        Its log group, with the configured retention.
    service : str
        ``code_dir``: the Powertools service name :func:`build_function` gives it, the
        ``service`` dimension of the metrics it emits.
    alias : aws_cdk.aws_lambda.Alias or None
        With SnapStart, the alias :data:`LIVE_ALIAS` on the published version.
    invoke_target : aws_cdk.aws_lambda.IFunction
        What an integration invokes: the alias with SnapStart (SnapStart serves published
        versions only), else the function (``$LATEST``).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DynashardParameters,
        code_dir: str,
        handler: str,
        memory: FunctionName,
        layer: lambda_.ILayerVersion,
        environment: Mapping[str, str],
        description: str,
        reserved_concurrency: int | None = None,
        snap_start: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        self.service = code_dir
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
            memory_size=config.memory_mb(memory),
            timeout=Duration.seconds(config.function_timeout_s),
            environment={
                names.ENV_POWERTOOLS_METRICS_NAMESPACE: names.METRICS_NAMESPACE,
                **environment,
            },
            description=description,
            reserved_concurrent_executions=reserved_concurrency,
            snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if snap_start else None,
        )
        self.alias: lambda_.Alias | None = None
        self.invoke_target: lambda_.IFunction = self.function
        if snap_start:
            self.alias = lambda_.Alias(
                self, "Live", alias_name=LIVE_ALIAS, version=self.function.current_version
            )
            self.invoke_target = self.alias
        # What every function shares; how it is invoked (DLQ, concurrency) is its
        # owner's to say (infra.constructs.ingest, query, scaler).
        skip_checkov(self.function, NO_VPC, ENVIRONMENT_NOT_SECRET)
        ignore_cfn_lint(self.function, ROLE_DEPENDENCY)
        skip_checkov(self.log_group, LOGS_SERVICE_ENCRYPTED)

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
    config: DynashardParameters, data_table_name: str, metadata_table_name: str, service: str
) -> dict[str, str]:
    """Return the environment every function gets (names from :mod:`dynashard.names`).

    Parameters
    ----------
    config : DynashardParameters
        Parameters.
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
        names.ENV_IN_BAND_GROWTH: str(config.in_band_growth).lower(),
        names.ENV_POWERTOOLS_SERVICE_NAME: service,
        # only when set: an empty value would say nothing the default does not
        **({names.ENV_TIME_BUCKETS: config.time_buckets} if config.time_buckets else {}),
        **({names.ENV_BUCKETED_KEYS: config.bucketed_keys} if config.bucketed_keys else {}),
        # the data table's key schema: each variable only when its parameter is set
        **config.schema_environment,
    }


def build_schema_check_statement(tables: Tables) -> iam.PolicyStatement:
    """Return the statement for the cold-start key-schema check: ``DescribeTable``.

    A function whose schema is not dynashard's default checks the data table's key
    schema when it starts (:func:`dynashard.dynamodb.table_check.check_table_schema`);
    with the default it does not, and its role gets no such statement.

    Parameters
    ----------
    tables : Tables
        The data table (the statement's one resource).

    Returns
    -------
    aws_cdk.aws_iam.PolicyStatement
        ``dynamodb:DescribeTable`` on the data table.
    """
    return iam.PolicyStatement(
        sid="CheckDataTableSchema",
        actions=list(SCHEMA_CHECK_ACTIONS),
        resources=[tables.data_table.table_arn],
    )


def build_function(
    scope: Construct,
    construct_id: str,
    *,
    config: DynashardParameters,
    tables: Tables,
    layer: lambda_.ILayerVersion,
    code_dir: str,
    handler: str,
    memory: FunctionName,
    description: str,
    statements: Sequence[iam.PolicyStatement],
    environment: Mapping[str, str] | None = None,
    reserved_concurrency: int | None = None,
    snap_start: bool = False,
) -> DynashardFunction:
    """Return a function of the stack wired to the tables, with its own statements.

    The environment is :func:`shared_environment` (service name ``code_dir``) followed
    by ``environment``; the role gets ``statements`` and nothing else beyond its log
    group, and, when the data table's schema is not the default, the cold-start
    schema check's ``DescribeTable`` (:func:`build_schema_check_statement`).

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct.
    construct_id : str
        Construct id of the :class:`DynashardFunction`.
    config : DynashardParameters
        Parameters (the functions' defaults and the planning parameters).
    tables : Tables
        The data and metadata tables (their names go into the environment).
    layer : aws_cdk.aws_lambda.ILayerVersion
        The dynashard layer.
    code_dir : str
        Folder under ``functions/``; also the Powertools service name.
    handler : str
        Handler in ``module.function`` form.
    memory : FunctionName
        Which function's memory size it gets (:meth:`DynashardParameters.memory_mb`).
    description : str
        Function description shown in the console.
    statements : sequence of aws_cdk.aws_iam.PolicyStatement
        Least-privilege statements for the function's role.
    environment : mapping of str to str, optional
        Variables added after the shared ones (names from :mod:`dynashard.names`).
    reserved_concurrency : int, optional
        Reserved concurrent executions; None (default): none reserved.
    snap_start : bool
        SnapStart on published versions, behind an alias (:class:`DynashardFunction`).

    Returns
    -------
    DynashardFunction
        The function, its role and its log group.
    """
    fn = DynashardFunction(
        scope,
        construct_id,
        config=config,
        code_dir=code_dir,
        handler=handler,
        memory=memory,
        layer=layer,
        environment={
            **shared_environment(
                config, tables.data_table.table_name, tables.metadata_table.table_name, code_dir
            ),
            **(environment or {}),
        },
        description=description,
        reserved_concurrency=reserved_concurrency,
        snap_start=snap_start,
    )
    fn.add_to_policy(*statements)
    if not config.table_schema.is_default:
        fn.add_to_policy(build_schema_check_statement(tables))
    return fn


def build_metadata_statement(tables: Tables, *, update: bool) -> iam.PolicyStatement:
    """Return the statement on the metadata table: read, or read and change N.

    Parameters
    ----------
    tables : Tables
        The tables; the statement names the metadata table's ARN only.
    update : bool
        ``True`` for :data:`METADATA_READ_UPDATE_ACTIONS` (sid
        ``ReadUpdateShardMetadata``), ``False`` for :data:`METADATA_READ_ACTIONS` (sid
        ``ReadShardMetadata``).

    Returns
    -------
    aws_cdk.aws_iam.PolicyStatement
        Exact actions on the exact table ARN.
    """
    return iam.PolicyStatement(
        sid="ReadUpdateShardMetadata" if update else "ReadShardMetadata",
        actions=list(METADATA_READ_UPDATE_ACTIONS if update else METADATA_READ_ACTIONS),
        resources=[tables.metadata_table.table_arn],
    )


def grant_data_table_key(fn: DynashardFunction, table: dynamodb.ITable, *, write: bool) -> None:
    """Let a function use the data table's customer managed KMS key, if it has one.

    A table encrypted with an AWS owned or AWS managed key needs no grant; one encrypted
    with a customer managed key (a user's table, ``Table.from_table_attributes(...,
    encryption_key=...)``) needs the same key actions that ``Table.grant_read_data`` /
    ``grant_write_data`` would add: ``kms:Decrypt`` to read, and ``kms:Encrypt``,
    ``kms:ReEncrypt*`` and ``kms:GenerateDataKey*`` as well to write.

    Parameters
    ----------
    fn : DynashardFunction
        The function; its own role gets the grant.
    table : aws_cdk.aws_dynamodb.ITable
        The data table (``encryption_key`` None: nothing to grant).
    write : bool
        Whether the function writes the table.
    """
    key = table.encryption_key
    if key is None:
        return
    if write:
        key.grant_encrypt_decrypt(fn.role)
    else:
        key.grant_decrypt(fn.role)


def stack_arn(
    scope: Construct, service: str, resource: str, name: str, arn_format: ArnFormat
) -> str:
    """Return the ARN of a resource of ``service`` named ``name`` in the stack of ``scope``.

    Parameters
    ----------
    scope : constructs.Construct
        Any construct of the stack (its partition, region and account are used).
    service : str
        Service namespace, e.g. ``cloudwatch``.
    resource : str
        Resource type, e.g. ``alarm`` or ``insight-rule``.
    name : str
        Resource name.
    arn_format : aws_cdk.ArnFormat
        How the name joins the type (``alarm:name``, ``insight-rule/name``).

    Returns
    -------
    str
        The ARN (a CDK token).
    """
    return Stack.of(scope).format_arn(
        service=service, resource=resource, resource_name=name, arn_format=arn_format
    )


def _num(value: float) -> str:
    """Format a number for an environment variable without a spurious ``.0``."""
    return str(int(value)) if float(value).is_integer() else str(value)
