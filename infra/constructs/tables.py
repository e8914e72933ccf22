"""The data table and the metadata table, declared from :mod:`infra.table_specs`.

Key schemas and the GSI come from the specs the sandbox also uses; nothing here
repeats an attribute or index name.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from infra.config import StackParameters
from infra.table_specs import DATA_TABLE, METADATA_TABLE, TableSpec


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
    config: StackParameters,
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


class Tables(Construct):
    """The data table (sharded items, GSI1) and the metadata table (shard counts).

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
    data_table : aws_cdk.aws_dynamodb.TableV2
        ``PK``/``SK`` with GSI1, on-demand, Contributor Insights on (the scaler reads
        its throttled and hottest keys).
    metadata_table : aws_cdk.aws_dynamodb.TableV2
        Partition key ``key``, on-demand.
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: StackParameters) -> None:
        super().__init__(scope, construct_id)
        self.data_table = _build_table(
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
        self.metadata_table = _build_table(
            self, METADATA_TABLE, config, billing=dynamodb.Billing.on_demand()
        )
