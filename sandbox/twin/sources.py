"""The template's queues and stream, created on moto's server and bound to the twin."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from sandbox.local_aws.pollers import EventSources

if TYPE_CHECKING:
    from sandbox.twin.runtime import LocalTwin

#: The ingest handlers the stack's event source mappings invoke.
SQS_HANDLER = "functions.ingest.app:sqs_handler"
KINESIS_HANDLER = "functions.ingest.app:kinesis_handler"


def create_sources(
    twin: LocalTwin, sqs: Any, kinesis: Any, *, shards: int | None = None
) -> EventSources:
    """Create every queue and stream of the template and bind them to ``twin``.

    Dead-letter queues are created first, so each queue's ``RedrivePolicy`` names its
    dead-letter queue's ARN as the template's does. Names carry a random suffix, so
    runs beside each other never share a queue.

    Parameters
    ----------
    twin : LocalTwin
        The twin (bound in place).
    sqs, kinesis : botocore clients
        Clients of moto's server.
    shards : int, optional
        Shards of the stream; default the template's (4 for an on-demand stream).

    Returns
    -------
    EventSources
        The queue and stream of the ingest function's mappings, the queue's
        dead-letter queue and the stream mapping's on-failure destination.

    Raises
    ------
    TimeoutError
        If a stream is not active within 30 s.
    """
    run = uuid.uuid4().hex[:8]
    queues = twin.spec.queues
    ordered = sorted(queues, key=lambda rid: queues[rid].dead_letter_id is not None)
    for rid in ordered:
        name = f"{twin.source.stack_name}-{rid}-{run}"[:75]
        if queues[rid].fifo:
            name += ".fifo"
        url = sqs.create_queue(QueueName=name, Attributes=twin.queue_attributes(rid))["QueueUrl"]
        twin.bind_queue(rid, url)
    for rid, stream in twin.spec.streams.items():
        name = f"{twin.source.stack_name}-{rid}-{run}"
        kinesis.create_stream(StreamName=name, ShardCount=shards or stream.shard_count)
        _wait_active(kinesis, name)
        twin.bind_stream(rid, name)
    queue_id, stream_id = twin.source_of(SQS_HANDLER), twin.source_of(KINESIS_HANDLER)
    dlq_id = queues[queue_id].dead_letter_id
    on_failure_id = twin.on_failure_of(KINESIS_HANDLER)
    if dlq_id is None or on_failure_id is None:
        raise ValueError("the ingest queue needs a dead-letter queue and the stream an on-failure")
    ref = twin.resolver.ref
    return EventSources(ref(stream_id), ref(queue_id), ref(dlq_id), ref(on_failure_id))


def poller_client(
    twin: LocalTwin,
    handler: str,
    service: str,
    endpoint_url: str,
    *,
    on_failure: bool = False,
    max_pool_connections: int = 16,
) -> Any:
    """Create the client an event source mapping polls (or reports failures) with.

    Lambda reads a mapping's queue or stream, and sends to its on-failure destination,
    with the function's execution role; so does this client: created in that role's
    scope (:func:`sandbox.twin.iam.role_scope`), every call it makes is checked against
    the role, requests that name no resource (``GetRecords``) against the source's ARN.

    Parameters
    ----------
    twin : LocalTwin
        The twin, its sources bound (:func:`create_sources`).
    handler : str
        The function the mapping invokes (``module:attribute``).
    service : str
        ``sqs`` or ``kinesis``.
    endpoint_url : str
        moto's server.
    on_failure : bool
        The client of the mapping's on-failure destination instead of its source.
    max_pool_connections : int
        HTTP connections the client may hold.

    Returns
    -------
    botocore.client.BaseClient
        The client.
    """
    from sandbox.engines.moto_server import aws_client
    from sandbox.twin.iam import install_default, role_scope

    install_default()
    target = twin.on_failure_of(handler) if on_failure else twin.source_of(handler)
    arn = twin.resolver.get_att(target, "Arn") if target is not None else None
    role = twin.role(twin.function_spec(handler).logical_id)
    with role_scope(role, source_arn=arn):
        return aws_client(service, endpoint_url, max_pool_connections=max_pool_connections)


def _wait_active(kinesis: Any, name: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        summary = kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]
        if summary["StreamStatus"] == "ACTIVE":
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"stream {name} not ACTIVE after {timeout_s:.0f} s")
        time.sleep(0.1)
