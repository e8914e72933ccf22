"""Ingest: the API's write and shard-administration routes, an SQS queue, a Kinesis stream.

Three functions share the ingest code (``functions/ingest``), one per trigger, because
a Lambda function has one handler; each has its own role and log group. All three may
write the data table and read/update the metadata table (in-band shard growth, and the
stack's key settings, created before a container's first write), and nothing else. The
API function also serves ``PUT /shards/{key}/strategy`` and ``PUT /shards/{key}/max-shards``.

The queue is a standard queue, or with ``fifo_ingest_queue`` a FIFO queue (and a FIFO
dead-letter queue, as SQS requires of a FIFO queue's DLQ).

The ingest code logs one ``write load`` line per logical key and invocation
(:mod:`dynashard.core.load`), with its key's part of the key space
(``DYNASHARD_WRITE_LOAD_PARTS``, the stack's ``write_load_parts``); the Contributor
Insights rules on the three log groups, one per part, rank logical keys by the write
units offered and the scaler reads their reports
(:class:`infra.constructs.write_load.WriteLoadRules`).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from dynashard import names
from dynashard.lambda_kit.key_settings import dump_key_settings

from ..config import DynashardParameters, FunctionName
from ..deploy_checks import (
    API_CONCURRENCY,
    KINESIS_CONCURRENCY,
    KINESIS_SOURCE_NO_DLQ,
    SQS_CONCURRENCY,
    SQS_SOURCE_NO_DLQ,
    SSE_SQS,
    SYNC_NO_DLQ,
    skip_checkov,
)
from .api import EventsApi
from .functions import (
    DynashardFunction,
    build_function,
    build_metadata_statement,
    grant_data_table_key,
)

# What the library's writer needs (infra/constructs/grants.py, one source with grant_write):
# the data table's writes, an ordered index's reads and deletes (the API function's
# ``POST /index/{key}``), the adopted-key check of a raised cap (``PUT .../max-shards``).
from .grants import CAP_ACTIONS, DATA_WRITE_ACTIONS, ORDERED_INDEX_ACTIONS
from .tables import Tables


def _build_write_statements(
    tables: Tables, ordered_index: bool = False
) -> list[iam.PolicyStatement]:
    """Return the ingest functions' statements: exact actions on exact table ARNs.

    ``ordered_index`` adds :data:`ORDERED_INDEX_ACTIONS` on the data table and
    :data:`CAP_ACTIONS` on the metadata table (the API function only).
    """
    extra = ORDERED_INDEX_ACTIONS if ordered_index else ()
    statements = [
        iam.PolicyStatement(
            sid="WriteDataTable",
            actions=[*DATA_WRITE_ACTIONS, *extra],
            resources=[tables.data_table.table_arn],
        ),
        build_metadata_statement(tables, update=True),
    ]
    if ordered_index:
        statements.append(
            iam.PolicyStatement(
                sid="ReadAdoptedKeysForCap",
                actions=list(CAP_ACTIONS),
                resources=[tables.metadata_table.table_arn],
            )
        )
    return statements


def _fifo_options(config: DynashardParameters) -> dict[str, Any]:
    """Return the queue properties of a FIFO ingest queue; none for a standard one.

    Deduplication is by the message deduplication id the producer sends (the event's
    ``id``), not by content: two events with the same body but different ids are both
    kept. High-throughput mode (deduplication and throughput per message group, "High
    throughput for FIFO queues", Amazon SQS Developer Guide): with one group per logical
    key, keys do not share one queue-wide limit.
    """
    if not config.fifo_ingest_queue:
        return {}
    return {
        "fifo": True,
        "content_based_deduplication": False,
        "deduplication_scope": sqs.DeduplicationScope.MESSAGE_GROUP,
        "fifo_throughput_limit": sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
    }


def _build_queues(scope: Construct, config: DynashardParameters) -> tuple[sqs.Queue, sqs.Queue]:
    """Return the ingest queue and its dead-letter queue (both FIFO with ``fifo_ingest_queue``).

    The visibility timeout is six times the function timeout, as the Lambda
    Developer Guide advises for SQS event sources ("Configuring a queue to use with
    Lambda"), so a batch retried inside Lambda is not redelivered meanwhile. A FIFO
    queue's dead-letter queue must be FIFO too (Amazon SQS Developer Guide, "Using
    dead-letter queues").
    """
    dlq = sqs.Queue(
        scope,
        "DeadLetterQueue",
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(14),
        fifo=True if config.fifo_ingest_queue else None,
    )
    queue = sqs.Queue(
        scope,
        "Queue",
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        visibility_timeout=Duration.seconds(6 * config.function_timeout_s),
        dead_letter_queue=sqs.DeadLetterQueue(
            max_receive_count=config.queue_max_receive_count, queue=dlq
        ),
        **_fifo_options(config),
    )
    for q in (queue, dlq):
        skip_checkov(q, SSE_SQS)
    return queue, dlq


def _build_stream(scope: Construct) -> tuple[kinesis.Stream, sqs.Queue]:
    """Return the on-demand Kinesis stream and the queue for batches it gives up on."""
    stream = kinesis.Stream(
        scope,
        "Stream",
        stream_mode=kinesis.StreamMode.ON_DEMAND,
        encryption=kinesis.StreamEncryption.MANAGED,
        retention_period=Duration.hours(24),
    )
    failures = sqs.Queue(
        scope,
        "StreamFailureQueue",
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(14),
    )
    skip_checkov(failures, SSE_SQS)
    return stream, failures


class Ingest(Construct):
    """The write path: API, SQS and Kinesis triggers of the ingest code.

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct.
    construct_id : str
        Construct id.
    config : DynashardParameters
        Batch sizes, retries, max receive count and the functions' defaults.
    tables : Tables
        The data and metadata tables.
    layer : aws_cdk.aws_lambda.ILayerVersion
        The dynashard layer.
    api : EventsApi
        The REST API; the POST routes are added to it.

    Attributes
    ----------
    api_function, queue_function, stream_function : DynashardFunction
        The ingest functions (handlers ``app.api_handler``, ``app.sqs_handler``,
        ``app.kinesis_handler``).
    queue, dead_letter_queue : aws_cdk.aws_sqs.Queue
        The ingest queue and its DLQ (after ``queue_max_receive_count`` receives); FIFO
        queues with ``fifo_ingest_queue``.
    stream : aws_cdk.aws_kinesis.Stream
        The on-demand ingest stream.
    stream_failure_queue : aws_cdk.aws_sqs.Queue
        On-failure destination of the stream's event source mapping (it receives the
        failed batch's shard and sequence numbers, not the records).
    functions : tuple of DynashardFunction
        The three ingest functions, whose logs the write-load rules read.
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
    ) -> None:
        super().__init__(scope, construct_id)
        self.queue, self.dead_letter_queue = _build_queues(self, config)
        self.stream, self.stream_failure_queue = _build_stream(self)

        environment = {
            # each write-load line carries its key's part: one rule per part reads it
            names.ENV_WRITE_LOAD_PARTS: str(config.write_load_parts),
            **(
                {names.ENV_KEY_SETTINGS: dump_key_settings(config.key_settings)}
                if config.key_settings
                else {}
            ),
        }

        def _function(
            construct_id: str,
            handler: str,
            memory: FunctionName,
            description: str,
            ordered_index: bool = False,
            snap_start: bool = False,
        ) -> DynashardFunction:
            fn = build_function(
                self,
                construct_id,
                config=config,
                tables=tables,
                layer=layer,
                code_dir="ingest",
                handler=handler,
                memory=memory,
                description=description,
                statements=_build_write_statements(tables, ordered_index),
                environment=environment,
                snap_start=snap_start,
            )
            grant_data_table_key(fn, tables.data_table, write=True)
            return fn

        self.api_function = _function(
            "ApiFunction",
            "app.api_handler",
            "ingest_api",
            "dynashard ingest: POST /events, /counters, PUT/POST /index, PUT /shards",
            ordered_index=True,
            snap_start=config.snap_start,
        )
        self.queue_function = _function(
            "QueueFunction", "app.sqs_handler", "ingest_queue", "dynashard ingest: SQS batches"
        )
        self.stream_function = _function(
            "StreamFunction",
            "app.kinesis_handler",
            "ingest_stream",
            "dynashard ingest: Kinesis batches",
        )
        skip_checkov(self.api_function.function, SYNC_NO_DLQ, API_CONCURRENCY)
        skip_checkov(self.queue_function.function, SQS_SOURCE_NO_DLQ, SQS_CONCURRENCY)
        skip_checkov(self.stream_function.function, KINESIS_SOURCE_NO_DLQ, KINESIS_CONCURRENCY)
        self._build_event_sources(config)
        self.functions = (self.api_function, self.queue_function, self.stream_function)
        target = self.api_function.invoke_target  # the SnapStart alias, when on
        api.add_route("POST", "/events", target, json_body=True)
        api.add_route("POST", "/counters/{name}", target, json_body=True)
        api.add_route("PUT", "/index/{key}/layout", target, json_body=True)
        api.add_route("POST", "/index/{key}", target, json_body=True)
        for admin in ("/shards/{key}/strategy", "/shards/{key}/max-shards"):
            api.add_route("PUT", admin, target, json_body=True)

    def _build_event_sources(self, config: DynashardParameters) -> None:
        """Wire the queue and the stream to their functions with partial batch responses.

        The SQS mapping is the same for a FIFO queue: its batch size is at most 10
        (``sqs_batch_size`` is) and it has no batching window, which Lambda does not
        support for FIFO queues ("Lambda parameters for Amazon SQS event source
        mappings", AWS Lambda Developer Guide).
        """
        self.queue_function.function.add_event_source(
            sources.SqsEventSource(
                self.queue,
                batch_size=config.sqs_batch_size,
                report_batch_item_failures=True,
            )
        )
        self.stream_function.function.add_event_source(
            sources.KinesisEventSource(
                self.stream,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=config.kinesis_batch_size,
                report_batch_item_failures=True,
                bisect_batch_on_error=True,
                retry_attempts=config.kinesis_retry_attempts,
                max_record_age=Duration.seconds(config.kinesis_max_record_age_s),
                on_failure=sources.SqsDlq(self.stream_failure_queue),
            )
        )
