"""The dynashard stack: composes one construct per concern and checks it with cdk-nag."""

from __future__ import annotations

from typing import Any

from aws_cdk import Aspects, CfnOutput, Stack, Tags
from cdk_nag import AwsSolutionsChecks
from constructs import Construct

from infra.config import StackParameters
from infra.constructs.api import EventsApi
from infra.constructs.ingest import Ingest
from infra.constructs.layer import DynashardLayer
from infra.constructs.monitoring import Monitoring
from infra.constructs.query import Query
from infra.constructs.scaler import Scaler
from infra.constructs.tables import Tables
from infra.nag import add_suppressions


class DynashardStack(Stack):
    """The whole application: tables, API, ingest, query, scaler, monitoring.

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
    tables, api, ingest, query, scaler, monitoring
        The composed constructs.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: StackParameters, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        self.tables = Tables(self, "Tables", config=config)
        layer = DynashardLayer(self, "DynashardLayer").layer
        self.api = EventsApi(self, "Api", config=config)
        self.ingest = Ingest(
            self, "Ingest", config=config, tables=self.tables, layer=layer, api=self.api
        )
        self.query = Query(
            self, "Query", config=config, tables=self.tables, layer=layer, api=self.api
        )
        self.scaler = Scaler(
            self,
            "Scaler",
            config=config,
            tables=self.tables,
            layer=layer,
            write_load_rule_name=self.ingest.write_load_rule_name,
        )
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            config=config,
            tables=self.tables,
            api=self.api,
            ingest=self.ingest,
            query=self.query,
            scaler=self.scaler,
        )
        self._build_outputs()
        Tags.of(self).add("project", "dynashard")
        Tags.of(self).add("stage", config.stage)
        add_suppressions(
            functions=[
                self.ingest.api_function,
                self.ingest.queue_function,
                self.ingest.stream_function,
                self.query.function,
                self.scaler.function,
            ],
            scaler=self.scaler.function,
            stream_failure_queue=self.ingest.stream_failure_queue,
            scaler_failure_queue=self.scaler.failure_queue,
            api=self.api.api,
            api_auth=config.api_auth,
        )
        Aspects.of(self).add(AwsSolutionsChecks(verbose=True))

    def _build_outputs(self) -> None:
        """Export what a user needs after ``cdk deploy`` (see docs/DEPLOY.md)."""
        outputs = {
            "ApiUrl": self.api.api.url,
            "DataTableName": self.tables.data_table.table_name,
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
