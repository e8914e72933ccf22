"""The data table and the metadata table, declared from :mod:`infra.table_specs`.

Key schemas and the GSI come from the specs the sandbox also uses; nothing here
repeats an attribute or index name. The project's stack declares its data table
(:class:`DataTable`); a stack that brings its own hands it to :class:`Tables`, and
:func:`data_table_errors` and :func:`contributor_insights_state` read what a table of
the stack says about itself (an imported table says nothing CloudFormation can read).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import RemovalPolicy, Resource, Stack
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from dynashard.core.schema import DEFAULT_SCHEMA, TableSchema

from ..config import DynashardParameters, StackParameters
from ..table_specs import DATA_TABLE, METADATA_TABLE, TableSpec


def _attr(name: str) -> dynamodb.Attribute:
    """Return a string-typed key attribute (every key of the specs is ``S``)."""
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


def _build_indexes(spec: TableSpec) -> list[dynamodb.GlobalSecondaryIndexPropsV2]:
    """Return the GSIs of a spec, ``ALL`` projection (reads need the whole item)."""
    return [
        dynamodb.GlobalSecondaryIndexPropsV2(
            index_name=index.name,
            partition_key=_attr(index.partition_key),
            sort_key=_attr(index.sort_key),
            projection_type=dynamodb.ProjectionType.ALL,
        )
        for index in spec.indexes
    ]


def _build_data_billing(config: StackParameters) -> dynamodb.Billing:
    """Return on-demand billing, capped by the optional maximum throughput."""
    return dynamodb.Billing.on_demand(
        max_read_request_units=config.max_read_request_units,
        max_write_request_units=config.max_write_request_units,
    )


def _build_warm_throughput(config: StackParameters) -> dynamodb.WarmThroughput | None:
    """Return the data table's warm throughput, or None when not configured."""
    if config.warm_read_units_per_second is None and config.warm_write_units_per_second is None:
        return None
    return dynamodb.WarmThroughput(
        read_units_per_second=config.warm_read_units_per_second,
        write_units_per_second=config.warm_write_units_per_second,
    )


def _build_table(
    scope: Construct,
    spec: TableSpec,
    config: DynashardParameters,
    *,
    billing: dynamodb.Billing,
    warm_throughput: dynamodb.WarmThroughput | None = None,
    contributor_insights: dynamodb.ContributorInsightsSpecification | None = None,
) -> dynamodb.TableV2:
    """Return a TableV2 for a spec with the settings both tables share.

    A spec's ``ttl_attribute`` turns on Time to Live (the data table's: counters'
    idempotency markers expire). Both tables get point-in-time recovery and
    encryption at rest with the AWS managed key (``aws/dynamodb``, visible in
    CloudTrail); outside dev stages, deletion protection and a retain policy,
    because losing the metadata table's ``shard_history`` would make readers miss
    shards (design invariant 3).
    """
    return dynamodb.TableV2(
        scope,
        spec.logical_id,
        partition_key=_attr(spec.partition_key),
        sort_key=_attr(spec.sort_key) if spec.sort_key else None,
        global_secondary_indexes=_build_indexes(spec) or None,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        encryption=dynamodb.TableEncryptionV2.aws_managed_key(),
        deletion_protection=not config.is_dev,
        removal_policy=RemovalPolicy.DESTROY if config.is_dev else RemovalPolicy.RETAIN,
        billing=billing,
        warm_throughput=warm_throughput,
        contributor_insights_specification=contributor_insights,
        time_to_live_attribute=spec.ttl_attribute,
    )


class DataTable(Construct):
    """The project's own data table: sharded items, GSI1, Contributor Insights on.

    A stack that brings its own table does not use this; it hands its table to
    :class:`~infra.constructs.dynashard.Dynashard`, which builds :class:`Tables` around it.

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct.
    construct_id : str
        Construct id.
    config : StackParameters
        Throughput caps, warm throughput, Contributor Insights mode and stage.

    Attributes
    ----------
    table : aws_cdk.aws_dynamodb.TableV2
        ``PK``/``SK`` with GSI1, on-demand, Contributor Insights on the table and GSI1 (the
        scaler reads their throttled and hottest keys).
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: StackParameters) -> None:
        super().__init__(scope, construct_id)
        self.table = _build_table(
            self,
            DATA_TABLE,
            config,
            billing=_build_data_billing(config),
            warm_throughput=_build_warm_throughput(config),
            contributor_insights=dynamodb.ContributorInsightsSpecification(
                enabled=True,
                mode=dynamodb.ContributorInsightsMode[config.contributor_insights_mode],
            ),
        )


class Tables(Construct):
    """The data table dynashard is given and the metadata table it creates (shard counts).

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct.
    construct_id : str
        Construct id.
    config : DynashardParameters
        Stage (retention and deletion protection of the metadata table).
    data_table : aws_cdk.aws_dynamodb.ITable
        The data table: the project's :class:`DataTable`, a user's ``Table`` or
        ``TableV2``, or one imported with ``Table.from_table_attributes``.

    Attributes
    ----------
    data_table : aws_cdk.aws_dynamodb.ITable
        ``data_table``, as given.
    metadata_table : aws_cdk.aws_dynamodb.TableV2
        Partition key ``key``, on-demand, point-in-time recovery.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DynashardParameters,
        data_table: dynamodb.ITable,
    ) -> None:
        super().__init__(scope, construct_id)
        self.data_table = data_table
        self.metadata_table = _build_table(
            self, METADATA_TABLE, config, billing=dynamodb.Billing.on_demand()
        )


def _owned_resource(
    table: dynamodb.ITable,
) -> dynamodb.CfnTable | dynamodb.CfnGlobalTable | None:
    """Return the L1 resource of a table the app declares; None for an imported one."""
    if not Resource.is_owned_resource(table):
        return None
    child = table.node.default_child
    if isinstance(child, dynamodb.CfnTable | dynamodb.CfnGlobalTable):
        return child
    return None


def _key_schema(elements: Sequence[Mapping[str, Any]] | None) -> tuple[tuple[str, str], ...]:
    """Return a resolved ``KeySchema`` as ``((attribute, HASH|RANGE), ...)``."""
    return tuple((str(e["attributeName"]), str(e["keyType"])) for e in elements or ())


def _gsi(indexes: Sequence[Mapping[str, Any]] | None, name: str) -> Mapping[str, Any] | None:
    """Return the resolved entry of GSI ``name`` in a ``GlobalSecondaryIndexes`` list, if any."""
    return next((i for i in indexes or () if i.get("indexName") == name), None)


def data_table_errors(table: dynamodb.ITable, *, schema: TableSchema = DEFAULT_SCHEMA) -> list[str]:
    """Say what keeps a table of the app from being dynashard's data table.

    dynashard writes items under the attribute names of its table schema
    (:class:`dynashard.core.schema.TableSchema`; by default :mod:`dynashard.names`): a
    string partition key (``PK``) and a sort key (``SK``) of the codec's type (``S``, or
    ``N`` for ``epoch_ms_number``), and, for the time-bucket view, a GSI (``GSI1``)
    keyed on a string partition key (``GSI1PK``) and a sort key of the codec's type
    (``GSI1SK``) with projection ``ALL`` (a GSI read returns whole items). A table the
    app declares (``Table``, ``TableV2``) is checked against it; an imported table
    cannot be, and gets no error.

    Parameters
    ----------
    table : aws_cdk.aws_dynamodb.ITable
        The data table.
    schema : TableSchema
        The key schema dynashard is configured with; its ``gsi_name`` None: the table
        is not meant to have the GSI, which is then not checked.

    Returns
    -------
    list of str
        One sentence per problem; empty when it fits or cannot be read.
    """
    resource = _owned_resource(table)
    if resource is None:
        return []
    stack = Stack.of(resource)
    types = {
        str(a["attributeName"]): str(a["attributeType"])
        for a in stack.resolve(resource.attribute_definitions) or ()
    }
    expected_keys = ((schema.partition_key, "HASH"), (schema.sort_key, "RANGE"))
    errors = []
    keys = _key_schema(stack.resolve(resource.key_schema))
    if keys != expected_keys:
        errors.append(f"its key schema is {keys}, dynashard writes {expected_keys}")
    wanted = {schema.partition_key: "S", schema.sort_key: schema.sort_key_type}
    if schema.gsi_name is not None:
        index = _gsi(stack.resolve(resource.global_secondary_indexes), schema.gsi_name)
        expected_index = ((schema.gsi_partition_key, "HASH"), (schema.gsi_sort_key, "RANGE"))
        if index is None:
            errors.append(f"it has no {schema.gsi_name}: add it, or pass gsi1=False")
        else:
            index_keys = _key_schema(index.get("keySchema"))
            if index_keys != expected_index:
                errors.append(
                    f"{schema.gsi_name}'s key schema is {index_keys}, dynashard writes "
                    f"{expected_index}"
                )
            projection = (index.get("projection") or {}).get("projectionType")
            if projection != "ALL":
                errors.append(f"{schema.gsi_name} projects {projection}, reads need ALL")
            wanted[schema.gsi_partition_key] = "S"
            wanted[schema.gsi_sort_key] = schema.sort_key_type
    errors += [
        f"attribute {name} is of type {types[name]}, dynashard writes {kind}"
        for name, kind in wanted.items()
        if types.get(name, kind) != kind
    ]
    return errors


def _enabled(spec: Any) -> bool:
    """Tell whether a resolved ``ContributorInsightsSpecification`` enables it."""
    return isinstance(spec, Mapping) and spec.get("enabled") is True


def contributor_insights_state(table: dynamodb.ITable, *, gsi_name: str | None) -> bool | None:
    """Tell whether CloudFormation enables Contributor Insights on the table (and its GSI).

    The scaler finds hot partition keys only in the reports of the Contributor Insights
    rules DynamoDB keeps for the table and for GSI1. For a ``Table``, the table's
    ``ContributorInsightsSpecification`` and GSI1's own; for a ``TableV2``
    (``AWS::DynamoDB::GlobalTable``), every replica's and its GSI1 entry's.

    Parameters
    ----------
    table : aws_cdk.aws_dynamodb.ITable
        The data table.
    gsi_name : str or None
        The GSI that must have it too (``GSI1`` by default); None: the table only.

    Returns
    -------
    bool or None
        True when enabled on all of them, False when not, None for an imported table
        (CloudFormation neither knows nor can change it).
    """
    resource = _owned_resource(table)
    if resource is None:
        return None
    stack = Stack.of(resource)
    if isinstance(resource, dynamodb.CfnTable):
        specs = [stack.resolve(resource.contributor_insights_specification)]
        if gsi_name is not None:
            index = _gsi(stack.resolve(resource.global_secondary_indexes), gsi_name) or {}
            specs.append(index.get("contributorInsightsSpecification"))
        return all(_enabled(spec) for spec in specs)
    replicas = stack.resolve(resource.replicas) or []
    specs = []
    for replica in replicas:
        specs.append(replica.get("contributorInsightsSpecification"))
        if gsi_name is not None:
            index = _gsi(replica.get("globalSecondaryIndexes"), gsi_name) or {}
            specs.append(index.get("contributorInsightsSpecification"))
    return bool(specs) and all(_enabled(spec) for spec in specs)
