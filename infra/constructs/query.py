"""Query: the GET routes of the API, served by one read-only function."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from dynashard import names

from ..config import DynashardParameters
from ..deploy_checks import API_CONCURRENCY, SYNC_NO_DLQ, skip_checkov
from .api import EventsApi
from .cursor_key import CursorKey
from .functions import (
    DynashardFunction,
    build_function,
    build_metadata_statement,
    grant_data_table_key,
)

# What the library's readers need (infra/constructs/grants.py, one source with grant_read).
from .grants import DATA_READ_ACTIONS
from .tables import Tables

#: Query parameter naming the logical key of ``GET /events``.
EVENTS_KEY_PARAM = "key"


def _build_read_statements(tables: Tables, gsi_name: str | None) -> list[iam.PolicyStatement]:
    """Return the query function's statements: reads only, on exact ARNs."""
    # the one index the planner may read: the table's time-bucket GSI, when it has one
    gsi_arns = [f"{tables.data_table.table_arn}/index/{gsi_name}"] if gsi_name else []
    return [
        iam.PolicyStatement(
            sid="ReadDataTable",
            actions=list(DATA_READ_ACTIONS),
            resources=[tables.data_table.table_arn, *gsi_arns],
        ),
        build_metadata_statement(tables, update=False),
    ]


class Query(Construct):
    """The read path: ``GET /events``, ``GET /counters/{name}``, ``GET /shards/{key}``.

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct.
    construct_id : str
        Construct id.
    config : DynashardParameters
        The functions' defaults.
    tables : Tables
        The data and metadata tables.
    layer : aws_cdk.aws_lambda.ILayerVersion
        The dynashard layer.
    api : EventsApi
        The REST API; the GET routes are added to it.
    gsi_name : str or None
        The data table's time-bucket GSI (``GSI1`` by default; the function may read
        it). None: the table has none, and a read the planner sends to the GSI
        (``consistent=false`` over a window, or ``path=gsi1``) fails; consistent reads,
        the default, use the base table only.

    Attributes
    ----------
    function : DynashardFunction
        The query function (handler ``app.handler``).
    cursor_key : CursorKey
        The generated secret its pagination cursors are signed with
        (``DYNASHARD_CURSOR_KEY``).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DynashardParameters,
        tables: Tables,
        layer: lambda_.ILayerVersion,
        api: EventsApi,
        gsi_name: str | None = names.GSI1_NAME,
    ) -> None:
        super().__init__(scope, construct_id)
        self.function: DynashardFunction = build_function(
            self,
            "Function",
            config=config,
            tables=tables,
            layer=layer,
            code_dir="query",
            handler="app.handler",
            memory="query",
            description="dynashard query: scatter-gather reads, counters, shard info",
            statements=_build_read_statements(tables, gsi_name),
            snap_start=config.snap_start,
        )
        grant_data_table_key(self.function, tables.data_table, write=False)
        # The key its cursors are signed with (issue 39: a cursor it did not issue is a 400).
        self.cursor_key = CursorKey(self, "CursorKey")
        self.cursor_key.pass_to(self.function.function)
        skip_checkov(self.function.function, SYNC_NO_DLQ, API_CONCURRENCY)
        fn = self.function.invoke_target  # the SnapStart alias, when on
        api.add_route("GET", "/events", fn, required_query=(EVENTS_KEY_PARAM,))
        api.add_route("GET", "/counters/{name}", fn)
        api.add_route("GET", "/shards/{key}", fn)
        api.add_route("GET", "/index/{key}", fn)
