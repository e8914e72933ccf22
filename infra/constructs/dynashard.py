"""dynashard for one data table, in any stack: the construct a user adds to their own.

:class:`Dynashard` takes a data table, one the stack declares (``Table``, ``TableV2``) or
one it imports (``Table.from_table_attributes``), and builds around it everything that
shards its hot keys: the shard-metadata table, the layer, the scaler (function,
key-range throttle alarms on the table and GSI1, its one-minute sweep, its on-failure
queue), the dashboard and dead-letter alarms, and, on request, the ingest functions
(REST API, SQS queue, Kinesis stream, the write-load Contributor Insights rules) and the
query function (REST API). The project's own stack (:class:`infra.stack.DynashardStack`)
is its data table plus this construct.

What CloudFormation cannot do on a table the stack does not own is left to the user and
said at synth time, not faked:

- Contributor Insights. The scaler finds hot partition keys only in the reports of the
  Contributor Insights rules DynamoDB keeps for the table and GSI1, and CloudFormation
  enables them only on a table it manages. For an imported table the user enables it
  (``aws dynamodb update-contributor-insights``, see docs/DEPLOY.md) and says so with
  ``contributor_insights_enabled=True``; until then the synth warns. For a table the
  stack declares, the table's own ``contributor_insights_specification`` is read, and a
  table without it gets the same warning.
- The key schema. dynashard writes the attribute names of its table schema
  (``DynashardParameters`` ``partition_key_attr``, ``sort_key_attr``,
  ``sort_key_codec``, ``gsi_name``, ...; by default ``PK``, ``SK``, ``GSI1``,
  ``GSI1PK``, ``GSI1SK``, :mod:`dynashard.names`). A table the stack declares is
  checked against them when the app is synthesized (an error names what differs); an
  imported one cannot be read, and the user answers for it (with a schema other than
  the default, the functions check it with ``DescribeTable`` when they start).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Final

import jsii
from aws_cdk import Annotations, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct, IValidation

from dynashard.core.schema import TableSchema

from ..config import DynashardParameters
from ..nag import add_suppressions
from .api import EventsApi
from .functions import DynashardFunction
from .grants import ADMIN, READ, WRITE, LibraryRole, grant_library_role
from .ingest import Ingest
from .layer import DynashardLayer
from .monitoring import Monitoring
from .query import Query
from .scaler import Scaler
from .tables import Tables, contributor_insights_state, data_table_errors
from .write_load import WriteLoadRules

#: Id of the synth warning about Contributor Insights (``Annotations.acknowledge_warning``
#: takes it, for a stack that knowingly runs without).
CONTRIBUTOR_INSIGHTS_WARNING: Final = "dynashard:contributorInsightsNotEnabled"
#: What a name prefix may hold: a CloudWatch dashboard name's characters
#: (``PutDashboard``: letters, digits, ``-`` and ``_``), which alarm and rule names allow too.
NAME_PREFIX: Final = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


@jsii.implements(IValidation)
class _DataTableCheck:
    """Checks the data table when the app is synthesized (the whole tree is built then)."""

    def __init__(self, owner: Dynashard, table: dynamodb.ITable, *, schema: TableSchema) -> None:
        self._owner, self._table, self._schema = owner, table, schema

    def validate(self) -> list[str]:
        """Return the key-schema errors; warn when Contributor Insights is off."""
        path = self._table.node.path
        gsi_name = self._schema.gsi_name
        if contributor_insights_state(self._table, gsi_name=gsi_name) is False:
            where = f"{path} and its {gsi_name}" if gsi_name else path
            Annotations.of(self._owner).add_warning_v2(
                CONTRIBUTOR_INSIGHTS_WARNING,
                f"Contributor Insights is not enabled on {where}: the scaler finds hot "
                "partition keys only in its reports, so no shard count grows from the "
                "throttle alarms. Set contributor_insights_specification on the table"
                + (f" and on {gsi_name}." if gsi_name else "."),
            )
        return [
            f"{path} cannot be dynashard's data table: {error}"
            for error in data_table_errors(self._table, schema=self._schema)
        ]


class Dynashard(Construct):
    """dynashard on one data table: metadata table, scaler, alarms, layer, dashboard.

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct, usually the user's stack.
    construct_id : str
        Construct id.
    table : aws_cdk.aws_dynamodb.ITable
        The data table. Its items are dynashard's: string partition key ``PK`` and sort
        key ``SK``, and (for time-window reads from the index and its alarms) a GSI
        named ``GSI1`` on string ``GSI1PK``/``GSI1SK`` with projection ``ALL``. A
        ``Table`` or ``TableV2`` of the app is checked at synth time; for an imported
        table (``Table.from_table_attributes(self, "Orders", table_name="orders",
        global_indexes=["GSI1"])``, with ``encryption_key=`` if it uses a customer
        managed key) the user answers for it.
    parameters : DynashardParameters, optional
        Shard planning, functions, API, queue and stream settings; defaults when not
        given.
    with_ingest : bool
        Also build the ingest functions: ``POST`` routes of a REST API, an SQS queue with
        its dead-letter queue, a Kinesis stream with its on-failure queue, and the
        write-load Contributor Insights rules on their logs (one per part of the key
        space, the parameters' ``write_load_parts``), which the scaler reads to size
        growth and to shrink. Default False: the table is written by the user's own
        code (with the library in the layer).
    with_query : bool
        Also build the query function and the ``GET`` routes of the REST API. Default
        False.
    gsi1 : bool
        Whether the table has its time-bucket GSI (default True), named by the
        parameters' ``gsi_name`` (``GSI1`` by default; ``""`` says there is none, like
        False): its two throttle alarms, the scaler's ``DescribeContributorInsights`` on
        it, the query function's reads of it and its dashboard graphs.
    contributor_insights_enabled : bool, optional
        For an imported table only: True once Contributor Insights is enabled on it (and
        on GSI1) outside CloudFormation, which cannot enable it on a table it does not
        manage. None (default) or False: the synth warns (:data:`CONTRIBUTOR_INSIGHTS_WARNING`).
        A table the app declares says it itself (``contributor_insights_specification``).
    name_prefix : str, optional
        First part of the names of the alarms (``{prefix}-TableWriteKeyRange``), of the
        write-load rules (``{prefix}-offered-write-units``, with ``-{i}-of-{P}`` per
        part when there are several), of the dashboard and of the
        API: letters, digits, ``-`` and ``_``. Default ``{stack name}-{construct_id}``,
        unique per construct in an account and region as long as stack names are.

    Attributes
    ----------
    tables : Tables
        ``data_table`` (the table given) and ``metadata_table`` (created here).
    layer : aws_cdk.aws_lambda.LayerVersion
        The dynashard layer (the library and its pinned dependencies), which the user's
        own functions may use too.
    api : EventsApi or None
        The REST API, when there are ingest or query functions.
    ingest : Ingest or None
        The ingest functions, queue and stream (``with_ingest``).
    write_load : WriteLoadRules or None
        The write-load Contributor Insights rules on the ingest functions' logs
        (``with_ingest``).
    query : Query or None
        The query function (``with_query``).
    scaler : Scaler
        The scaler function, its alarms, its sweep and its on-failure queue.
    monitoring : Monitoring
        The dashboard and the dead-letter alarms.
    functions : list of DynashardFunction
        Every function built, the scaler last.
    name_prefix : str
        The prefix the names were built with.
    gsi_name : str or None
        The data table's GSI the construct reads and alarms on; None: none.

    Raises
    ------
    ValueError
        If ``name_prefix`` has other characters, or ``contributor_insights_enabled`` is
        given for a table the app declares.

    Examples
    --------
    In a user's stack, for a table it already has (``examples/existing_stack/app.py``)::

        orders = dynamodb.Table.from_table_attributes(
            self, "Orders", table_name="orders", global_indexes=["GSI1"]
        )
        Dynashard(
            self,
            "Dynashard",
            table=orders,
            parameters=DynashardParameters(stage="prod", max_shards=64),
            with_query=True,
            contributor_insights_enabled=True,
        )

    The roles of the user's own code that use the library::

        shards = Dynashard(self, "Shards", table=table)
        shards.grant_write(ingest_role)
        shards.grant_read(api_function)
        shards.grant_admin(operator_role)
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable,
        parameters: DynashardParameters | None = None,
        with_ingest: bool = False,
        with_query: bool = False,
        gsi1: bool = True,
        contributor_insights_enabled: bool | None = None,
        name_prefix: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        config = parameters or DynashardParameters()
        self.name_prefix = name_prefix or f"{Stack.of(self).stack_name}-{construct_id}"
        if not NAME_PREFIX.match(self.name_prefix):
            raise ValueError(
                f"name_prefix {self.name_prefix!r}: use 1-100 letters, digits, '-' or '_'"
            )
        # the data table's GSI: the schema's (GSI1 by default), unless there is none
        schema = config.table_schema
        if not gsi1 and schema.gsi_name is not None:
            schema = dataclasses.replace(schema, gsi_name=None)
        gsi_name = self.gsi_name = schema.gsi_name
        self._check_contributor_insights(table, gsi_name, contributor_insights_enabled)
        self.node.add_validation(_DataTableCheck(self, table, schema=schema))

        self.tables = Tables(self, "Tables", config=config, data_table=table)
        self.layer: lambda_.LayerVersion = DynashardLayer(self, "DynashardLayer").layer
        self.api: EventsApi | None = None
        self.ingest: Ingest | None = None
        self.write_load: WriteLoadRules | None = None
        self.query: Query | None = None
        if with_ingest or with_query:
            api = self.api = EventsApi(self, "Api", config=config, name=self.name_prefix)
            if with_ingest:
                self.ingest = Ingest(
                    self,
                    "Ingest",
                    config=config,
                    tables=self.tables,
                    layer=self.layer,
                    api=api,
                )
                self.write_load = WriteLoadRules(
                    self,
                    "WriteLoad",
                    functions=self.ingest.functions,
                    parts=config.write_load_parts,
                    name_prefix=self.name_prefix,
                )
            if with_query:
                self.query = Query(
                    self,
                    "Query",
                    config=config,
                    tables=self.tables,
                    layer=self.layer,
                    api=api,
                    gsi_name=gsi_name,
                )
        self.scaler = Scaler(
            self,
            "Scaler",
            config=config,
            tables=self.tables,
            layer=self.layer,
            name_prefix=self.name_prefix,
            write_load_rule_names=self.write_load.rule_names if self.write_load else (),
            gsi_name=gsi_name,
        )
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            dashboard_name=self.name_prefix,
            tables=self.tables,
            scaler=self.scaler,
            api=self.api,
            ingest=self.ingest,
            query=self.query,
            gsi_name=gsi_name,
        )
        ingest_functions = (
            (self.ingest.api_function, self.ingest.queue_function, self.ingest.stream_function)
            if self.ingest
            else ()
        )
        self.functions: list[DynashardFunction] = [
            *ingest_functions,
            *((self.query.function,) if self.query else ()),
            self.scaler.function,
        ]
        add_suppressions(
            functions=self.functions,
            scaler=self.scaler.function,
            scaler_failure_queue=self.scaler.failure_queue,
            api_auth=config.api_auth,
            stream_failure_queue=self.ingest.stream_failure_queue if self.ingest else None,
            api=self.api.api if self.api else None,
            data_key_writers=ingest_functions if table.encryption_key is not None else (),
        )

    def grant_write(self, grantee: iam.IGrantable) -> iam.Grant:
        """Grant what writing with the library needs (:data:`~infra.constructs.grants.WRITE`).

        ``put_events``, ``increment_counter`` (idempotent too), an ordered index's
        writes, the in-band growth of a key's shard count and the key-schema check:
        ``BatchWriteItem``, ``PutItem``, ``UpdateItem``, ``ConditionCheckItem``,
        ``GetItem``, ``BatchGetItem``, ``DeleteItem`` and ``DescribeTable`` on the data
        table; ``GetItem``, ``PutItem``, ``UpdateItem`` and ``BatchGetItem`` on the
        metadata table; encrypt and decrypt with a customer managed key of either.

        Parameters
        ----------
        grantee : aws_cdk.aws_iam.IGrantable
            The principal that runs the library (a role, a function).

        Returns
        -------
        aws_cdk.aws_iam.Grant
            The grant, as CDK's own ``grant_*`` methods return it.
        """
        return self._grant(grantee, WRITE)

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Grant what reading with the library needs (:data:`~infra.constructs.grants.READ`).

        ``query_events``, ``get_counter``, ``shard_info``, an ordered index's reads and
        the key-schema check: ``Query``, ``GetItem``, ``BatchGetItem`` and
        ``DescribeTable`` on the data table and its GSI; ``GetItem`` and
        ``BatchGetItem`` on the metadata table; decrypt with a customer managed key.

        Parameters
        ----------
        grantee : aws_cdk.aws_iam.IGrantable
            The principal that runs the library.

        Returns
        -------
        aws_cdk.aws_iam.Grant
            The grant.
        """
        return self._grant(grantee, READ)

    def grant_admin(self, grantee: iam.IGrantable) -> iam.Grant:
        """Grant what the operator's commands need (:data:`~infra.constructs.grants.ADMIN`).

        Everything :meth:`grant_read` grants, plus resizing (``grow``, ``shrink``,
        ``set_shard_count``, ``set_max_shards``, ``set_strategy``), adoption
        (``survey_bare_key``, ``adopt``), listing (``sharded_keys``: ``Scan`` of the
        metadata table) and compaction (``count_events``, ``compact``: ``GetItem``,
        ``ConditionCheckItem`` and ``DeleteItem`` on the data table). Not the writes of
        events or counters (:meth:`grant_write`).

        Parameters
        ----------
        grantee : aws_cdk.aws_iam.IGrantable
            The operator's principal (the ``dynashard`` command's role).

        Returns
        -------
        aws_cdk.aws_iam.Grant
            The grant.
        """
        return self._grant(grantee, ADMIN)

    def _grant(self, grantee: iam.IGrantable, role: LibraryRole) -> iam.Grant:
        """Grant ``role`` on this construct's data and metadata tables (and GSI)."""
        return grant_library_role(
            grantee,
            role,
            data_table=self.tables.data_table,
            metadata_table=self.tables.metadata_table,
            gsi_name=self.gsi_name,
        )

    def _check_contributor_insights(
        self, table: dynamodb.ITable, gsi_name: str | None, enabled: bool | None
    ) -> None:
        """Refuse a claim about a table the app declares; warn for an imported one not enabled."""
        declared = contributor_insights_state(table, gsi_name=gsi_name)
        if declared is not None:
            if enabled is not None:
                raise ValueError(
                    "contributor_insights_enabled is for an imported table; "
                    f"{table.node.path} says it itself (contributor_insights_specification)"
                )
            return  # read again, and warned about, when the app is synthesized
        if enabled:
            return
        index = f" --index-name {gsi_name}" if gsi_name else ""
        Annotations.of(self).add_warning_v2(
            CONTRIBUTOR_INSIGHTS_WARNING,
            f"{table.node.path} is imported: CloudFormation cannot enable Contributor "
            "Insights on a table it does not manage, and the scaler finds hot partition "
            "keys only in its reports, so no shard count grows from the throttle alarms "
            "until it is on. Enable it (aws dynamodb update-contributor-insights "
            "--table-name <name> --contributor-insights-action ENABLE "
            "--contributor-insights-mode ACCESSED_AND_THROTTLED_KEYS"
            + (f", and again with{index}" if gsi_name else "")
            + ") and pass contributor_insights_enabled=True.",
        )
