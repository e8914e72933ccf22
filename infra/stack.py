"""The dynashard stack: its own data table, the Dynashard construct on it, cdk-nag."""

from __future__ import annotations

from typing import Any, Final, TypeVar

from aws_cdk import Aspects, CfnOutput, Stack, Tags
from cdk_nag import AwsSolutionsChecks
from constructs import Construct

from .config import StackParameters
from .constructs.api import EventsApi
from .constructs.dynashard import Dynashard
from .constructs.ingest import Ingest
from .constructs.monitoring import Monitoring
from .constructs.query import Query
from .constructs.scaler import Scaler
from .constructs.tables import DataTable, Tables
from .constructs.write_load import WriteLoadRules

#: Construct id of the :class:`Dynashard` construct in this stack. CDK leaves a
#: construct named ``Default`` out of the logical ids below it (``makeUniqueId`` in
#: aws-cdk-lib, ``Names.uniqueId``), so every resource keeps the logical id it had
#: before the stack was built from the construct (``TablesMetadataTable...``,
#: ``ScalerFunction...``): a deployed stack updates in place instead of replacing its
#: metadata table, whose ``shard_history`` readers need (design invariant 3).
CONSTRUCT_ID: Final = "Default"

_T = TypeVar("_T")


class DynashardStack(Stack):
    """The whole application: the data table and :class:`Dynashard` on it, with everything.

    Parameters
    ----------
    scope : constructs.Construct
        The CDK app.
    construct_id : str
        Stack name, ``dynashard-<stage>`` by convention.
    config : StackParameters
        The validated context parameters.
    **kwargs
        Passed to :class:`aws_cdk.Stack` (``env``, ``description``, ...).

    Attributes
    ----------
    data_table : aws_cdk.aws_dynamodb.TableV2
        The stack's data table (:class:`~infra.constructs.tables.DataTable`).
    dynashard : Dynashard
        The construct, with ingest and query functions; the properties below are its
        parts.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: StackParameters, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        # "Tables", the id the data table had beside the metadata table, keeps its
        # logical id (TablesDataTable...) as CONSTRUCT_ID keeps the others'.
        self.data_table = DataTable(self, "Tables", config=config).table
        self.dynashard = Dynashard(
            self,
            CONSTRUCT_ID,
            table=self.data_table,
            parameters=config,
            with_ingest=True,
            with_query=True,
            name_prefix=self.stack_name,
        )
        self._build_outputs()
        Tags.of(self).add("project", "dynashard")
        Tags.of(self).add("stage", config.stage)
        Aspects.of(self).add(AwsSolutionsChecks(verbose=True))

    @property
    def tables(self) -> Tables:
        """Tables: The data table and the metadata table."""
        return self.dynashard.tables

    @property
    def api(self) -> EventsApi:
        """EventsApi: The REST API."""
        return _built(self.dynashard.api)

    @property
    def ingest(self) -> Ingest:
        """Ingest: The ingest functions, queue and stream."""
        return _built(self.dynashard.ingest)

    @property
    def write_load(self) -> WriteLoadRules:
        """WriteLoadRules: The write-load Contributor Insights rules, one per part."""
        return _built(self.dynashard.write_load)

    @property
    def query(self) -> Query:
        """Query: The query function."""
        return _built(self.dynashard.query)

    @property
    def scaler(self) -> Scaler:
        """Scaler: The scaler, its alarms and sweep."""
        return self.dynashard.scaler

    @property
    def monitoring(self) -> Monitoring:
        """Monitoring: The dashboard and the dead-letter alarms."""
        return self.dynashard.monitoring

    def _build_outputs(self) -> None:
        """Export what a user needs after ``cdk deploy`` (see docs/DEPLOY.md)."""
        outputs = {
            "ApiUrl": self.api.api.url,
            "DataTableName": self.data_table.table_name,
            "MetadataTableName": self.tables.metadata_table.table_name,
            "IngestQueueUrl": self.ingest.queue.queue_url,
            "IngestStreamName": self.ingest.stream.stream_name,
            "DeadLetterQueueUrl": self.ingest.dead_letter_queue.queue_url,
            "DashboardName": self.monitoring.dashboard.dashboard_name,
        }
        if self.api.api_key is not None:
            outputs["ApiKeyId"] = self.api.api_key.key_id
        for name, value in outputs.items():
            CfnOutput(self, name, value=value)


def _built(part: _T | None) -> _T:
    """Return a part the stack always builds (with_ingest and with_query are on)."""
    if part is None:
        raise RuntimeError("the stack builds its Dynashard construct with ingest and query")
    return part
