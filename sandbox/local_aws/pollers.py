"""Event-source pollers with Lambda's semantics, against a real SQS and Kinesis API.

Lambda's event source mappings poll a queue or a stream and invoke a function with
batches (AWS Lambda Developer Guide, "Using Lambda with Amazon SQS" and "Using Lambda
with Kinesis Data Streams"). These pollers do the same against any endpoint that speaks
the APIs (in the sandbox, moto's server: :mod:`sandbox.engines.moto_server`), so the real ingest
handlers see the events, the redeliveries and the dead letters AWS would give them.

:class:`SqsPoller` -- ``ReceiveMessage`` until ``batch_size`` messages or
``maximum_batching_window_s`` elapsed; one invocation; the messages not reported in
``batchItemFailures`` are deleted, the others stay and come back when their visibility
timeout (the queue's) expires, and the queue's own ``RedrivePolicy`` moves a message to
its dead-letter queue once received ``maxReceiveCount`` times. A function error (or an
invalid partial response) deletes nothing. FIFO queues: SQS itself hands out no
message of a group while another of it is in flight; the handler stops a group at its
first failure (Powertools' ``SqsFifoPartialProcessor``, see ``dynashard.lambda_kit``).

:class:`KinesisPoller` -- one thread per shard (parallelization factor 1), so records
are handled in order per shard; ``GetRecords`` up to ``batch_size``; a partial response
checkpoints before the lowest failed sequence number and retries from it; a function
error retries the whole batch, or, with ``bisect_batch_on_function_error``, each half
in turn; after ``maximum_retry_attempts`` the batch's description goes to the on-failure
destination (an SQS queue) and the shard moves on.

Settings are named and bounded as in Lambda's ``CreateEventSourceMapping`` API.
"""

from __future__ import annotations

import functools
import itertools
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from sandbox.lifecycle import StartStop
from sandbox.local_aws.aws_events import (
    ACCOUNT_ID,
    REGION,
    kinesis_event,
    kinesis_record,
    sqs_event,
    sqs_message_record,
)
from sandbox.tally import Tally

#: A function invocation: the event in, what the handler returned out (raises on error).
Invoke = Callable[[dict[str, Any]], Any]

#: ``CreateEventSourceMapping`` bounds (Lambda API Reference): batch size of a standard
#: queue and of a stream, of a FIFO queue; the batching window; retry attempts.
MAX_BATCH_SIZE = 10_000
MAX_FIFO_BATCH_SIZE = 10
MAX_BATCHING_WINDOW_S = 300.0
MAX_RETRY_ATTEMPTS = 10_000
#: SQS ``ReceiveMessage``: at most 10 messages per call, long polls of at most 20 s.
RECEIVE_MAX_MESSAGES = 10
RECEIVE_MAX_WAIT_S = 20
#: Kinesis ``PutRecords`` takes at most 500 records per call (Kinesis API Reference).
PUT_RECORDS_MAX = 500
#: ``condition`` of an on-failure record whose batch used up its retries.
RETRY_ATTEMPTS_EXHAUSTED = "RetryAttemptsExhausted"


class PollerConfigError(ValueError):
    """An event source mapping setting is outside what Lambda accepts."""


class InvalidPartialResponseError(ValueError):
    """A ``batchItemFailures`` answer that Lambda treats as a failure of the whole batch.

    An ``itemIdentifier`` that is missing, empty, not a string, or names no record of
    the batch (AWS Lambda Developer Guide, "Success and failure conditions").
    """


def partial_failures(response: Any, identifiers: Sequence[str]) -> list[str]:
    """Read a partial batch response as Lambda does.

    Parameters
    ----------
    response : Any
        What the handler returned. None, ``{}``, a response without
        ``batchItemFailures`` or with an empty list: the whole batch succeeded.
    identifiers : sequence of str
        The batch's item identifiers (message ids or sequence numbers).

    Returns
    -------
    list of str
        The failed identifiers, in the batch's order.

    Raises
    ------
    InvalidPartialResponseError
        When an entry has no ``itemIdentifier``, an empty or non-string one, or one that
        is not in the batch: Lambda then counts the whole batch as failed.
    """
    if not response:
        return []
    if not isinstance(response, Mapping):
        raise InvalidPartialResponseError(f"response is a {type(response).__name__}, not a map")
    entries = response.get("batchItemFailures")
    if not entries:
        return []
    known = set(identifiers)
    failed: set[str] = set()
    for entry in entries:
        item = entry.get("itemIdentifier") if isinstance(entry, Mapping) else None
        if not isinstance(item, str) or not item:
            raise InvalidPartialResponseError(f"batchItemFailures entry {entry!r}")
        if item not in known:
            raise InvalidPartialResponseError(f"itemIdentifier {item!r} is not in the batch")
        failed.add(item)
    return [i for i in identifiers if i in failed]


@dataclass
class PollerStats(Tally):
    """What a poller did (thread-safe through :meth:`add`).

    Attributes
    ----------
    invocations : int
        Function invocations.
    records_delivered : int
        Records handed to the function, redeliveries and retries included.
    records_acknowledged : int
        SQS messages deleted (each message once); Kinesis records checkpointed as done.
    duplicate_deliveries : int
        SQS messages deleted again after another delivery of theirs was (at least once
        delivery of a standard queue).
    items_reported_failed : int
        ``batchItemFailures`` entries read.
    function_errors : int
        Invocations that raised or answered an invalid partial response.
    bisections : int
        Kinesis batches split in two after a function error.
    retries : int
        Kinesis batches retried.
    records_to_on_failure : int
        Kinesis records whose batch went to the on-failure destination.
    stale_receipt_handles : int
        SQS deletes refused with ``ReceiptHandleIsInvalid``: the message's visibility
        timeout ran out while the function worked, SQS handed it out again, and that
        later delivery deletes it (at least once delivery; the write is idempotent).
    errors : list of str
        The first 50 errors (function errors and AWS API errors).
    """

    invocations: int = 0
    records_delivered: int = 0
    records_acknowledged: int = 0
    duplicate_deliveries: int = 0
    items_reported_failed: int = 0
    function_errors: int = 0
    bisections: int = 0
    retries: int = 0
    records_to_on_failure: int = 0
    stale_receipt_handles: int = 0
    errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def to_json(self) -> dict[str, Any]:
        """Return the counts and errors as a JSON-ready dict.

        Returns
        -------
        dict
            Field name -> value.
        """
        with self._lock:
            return {k: v for k, v in vars(self).items() if not k.startswith("_")} | {
                "errors": list(self.errors)
            }


def _check(name: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise PollerConfigError(f"{name} must be between {low:g} and {high:g}, got {value:g}")


def wait_settled(
    condition: Callable[[], bool], timeout_s: float, settle_s: float, poll_s: float
) -> bool:
    """Wait until ``condition`` has held for ``settle_s`` seconds in a row.

    Parameters
    ----------
    condition : callable
        Asked every ``poll_s`` seconds.
    timeout_s : float
        Seconds to wait at most.
    settle_s : float
        Seconds it must keep holding (0: the first time it holds).
    poll_s : float
        Seconds between asks.

    Returns
    -------
    bool
        Whether it settled in time.
    """
    deadline = time.monotonic() + timeout_s
    since: float | None = None
    while time.monotonic() < deadline:
        if condition():
            since = since if since is not None else time.monotonic()
            if time.monotonic() - since >= settle_s:
                return True
        else:
            since = None
        time.sleep(poll_s)
    return False


#: Seconds :meth:`SqsPoller.wait_drained` wants the queue empty before it believes it.
#: ``GetQueueAttributes`` counts are approximate ("ApproximateNumberOf...", SQS API
#: Reference): a message whose visibility timeout ends between the visible and the
#: in-flight count is in neither (moto counts them one after the other), so a
#: redelivered message can read as a drained queue for one poll.
DRAINED_SETTLE_S = 0.5


@dataclass(frozen=True)
class SqsEventSourceMapping:
    """An SQS event source mapping's settings (``CreateEventSourceMapping``).

    Parameters
    ----------
    batch_size : int
        Records per invocation at most: 1 to 10,000 (10 for a FIFO queue).
    maximum_batching_window_s : float
        Seconds to gather a batch, 0 to 300; at least 1 when ``batch_size`` > 10.
    report_batch_item_failures : bool
        ``FunctionResponseTypes=["ReportBatchItemFailures"]``: read ``batchItemFailures``;
        off, the answer is ignored and a batch that did not raise is deleted whole.
    concurrency : int
        Batches in flight at once (Lambda starts with five pollers; its
        ``ScalingConfig.MaximumConcurrency`` is 2 to 1,000).
    wait_time_s : int
        ``WaitTimeSeconds`` of the long poll that starts a batch, 0 to 20.

    Raises
    ------
    PollerConfigError
        When a setting is outside those bounds.
    """

    batch_size: int = 10
    maximum_batching_window_s: float = 0.0
    report_batch_item_failures: bool = True
    concurrency: int = 1
    wait_time_s: int = 1

    def __post_init__(self) -> None:
        _check("BatchSize", self.batch_size, 1, MAX_BATCH_SIZE)
        _check("MaximumBatchingWindowInSeconds", self.maximum_batching_window_s, 0, 300)
        _check("MaximumConcurrency", self.concurrency, 1, 1000)
        _check("WaitTimeSeconds", self.wait_time_s, 0, RECEIVE_MAX_WAIT_S)
        if self.batch_size > RECEIVE_MAX_MESSAGES and self.maximum_batching_window_s < 1:
            raise PollerConfigError(
                "MaximumBatchingWindowInSeconds must be at least 1 when BatchSize is above "
                f"{RECEIVE_MAX_MESSAGES}, got {self.maximum_batching_window_s:g}"
            )


class _Threads(StartStop):
    """Worker threads that run until :meth:`stop`."""

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def stop(self) -> None:
        """Stop polling: finish the batch in hand, then join the threads."""
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=120)
        self._threads = []


class SqsPoller(_Threads):
    """Poll an SQS queue and invoke a function with batches, as Lambda does.

    Parameters
    ----------
    sqs : botocore client
        An SQS client (e.g. :meth:`sandbox.engines.moto_server.MotoServer.client`).
    queue_url : str
        The queue. Its ``VisibilityTimeout`` and ``RedrivePolicy`` apply as on AWS.
    invoke : callable
        ``invoke(event) -> response``; raising is a function error.
    mapping : SqsEventSourceMapping
        The settings.

    Raises
    ------
    PollerConfigError
        On :meth:`start`, when a FIFO queue is given a batch size above 10.
    """

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        invoke: Invoke,
        mapping: SqsEventSourceMapping | None = None,
    ) -> None:
        super().__init__()
        self.sqs = sqs
        self.queue_url = queue_url
        self.invoke = invoke
        self.mapping = mapping or SqsEventSourceMapping()
        self.stats = PollerStats()
        self._acked: set[str] = set()
        self._acked_lock = threading.Lock()
        self._queue_arn: str | None = None
        self._fifo = False

    def _describe(self) -> None:
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["QueueArn", "FifoQueue"]
        )["Attributes"]
        self._queue_arn = attrs["QueueArn"]
        self._fifo = attrs.get("FifoQueue") == "true"
        if self._fifo and self.mapping.batch_size > MAX_FIFO_BATCH_SIZE:
            raise PollerConfigError(
                f"BatchSize must be at most {MAX_FIFO_BATCH_SIZE} for a FIFO queue, got "
                f"{self.mapping.batch_size}"
            )

    def start(self) -> None:
        """Start ``mapping.concurrency`` polling threads."""
        self._describe()
        self._stopping.clear()
        for n in range(self.mapping.concurrency):
            self._spawn(f"sqs-poller-{n}", self._run)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self.poll_once()
            except Exception as exc:  # an API error: log it and poll again
                self.stats.error(f"SQS poll of {self.queue_url} failed: {exc!r}")
                self._stopping.wait(0.5)

    def _receive(self, count: int, wait_s: int) -> list[dict[str, Any]]:
        answer = self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=min(RECEIVE_MAX_MESSAGES, count),
            WaitTimeSeconds=wait_s,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages: list[dict[str, Any]] = answer.get("Messages", [])
        return messages

    def receive_batch(self) -> list[dict[str, Any]]:
        """Gather one batch: up to ``batch_size`` messages within the batching window.

        Returns
        -------
        list of dict
            ``ReceiveMessage`` entries; empty when the queue had none for a long poll.
        """
        m = self.mapping
        batch = self._receive(m.batch_size, m.wait_time_s)
        if not batch or m.maximum_batching_window_s == 0:
            return batch
        deadline = time.monotonic() + m.maximum_batching_window_s
        while len(batch) < m.batch_size and not self._stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            more = self._receive(m.batch_size - len(batch), 1 if left >= 1 else 0)
            if not more and left < 1:
                self._stopping.wait(min(left, 0.05))
            batch.extend(more)
        return batch

    def poll_once(self) -> int:
        """Receive one batch, invoke the function, delete what it did not report failed.

        Returns
        -------
        int
            Messages in the batch (0 when none arrived).
        """
        if self._queue_arn is None:
            self._describe()
        assert self._queue_arn is not None
        batch = self.receive_batch()
        if not batch:
            return 0
        records = [sqs_message_record(message, self._queue_arn) for message in batch]
        ids = [r["messageId"] for r in records]
        self.stats.add(invocations=1, records_delivered=len(records))
        try:
            response = self.invoke(sqs_event(records))
            failed = (
                set(partial_failures(response, ids))
                if self.mapping.report_batch_item_failures
                else set()
            )
        except Exception as exc:  # a function error: every message comes back
            self.stats.add(function_errors=1)
            self.stats.error(f"function error on a batch of {len(batch)}: {exc!r}"[:500])
            return len(batch)
        self.stats.add(items_reported_failed=len(failed))
        done = [m for m in batch if m["MessageId"] not in failed]
        self._delete(done)
        return len(batch)

    def _delete(self, messages: Sequence[Mapping[str, Any]]) -> None:
        for start in range(0, len(messages), RECEIVE_MAX_MESSAGES):
            chunk = messages[start : start + RECEIVE_MAX_MESSAGES]
            answer = self.sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)
                ],
            )
            # A message whose receipt handle expired comes back: a redelivery, not a loss.
            for entry in answer.get("Failed", []):
                if entry.get("Code") == "ReceiptHandleIsInvalid":
                    self.stats.add(stale_receipt_handles=1)
                else:
                    self.stats.error(f"DeleteMessageBatch refused {entry}")
            deleted = [chunk[int(e["Id"])]["MessageId"] for e in answer.get("Successful", [])]
            with self._acked_lock:
                new = [mid for mid in deleted if mid not in self._acked]
                self._acked.update(new)
            # A standard queue delivers at least once: a message handed out twice (to two
            # pollers) and deleted twice is acknowledged once.
            self.stats.add(
                records_acknowledged=len(new), duplicate_deliveries=len(deleted) - len(new)
            )

    def backlog(self) -> int:
        """Return the messages still in the queue, visible or in flight.

        Returns
        -------
        int
            ``ApproximateNumberOfMessages`` + ``ApproximateNumberOfMessagesNotVisible``
            (+ ``...Delayed``).
        """
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return sum(int(v) for v in attrs.values())

    def wait_drained(self, timeout_s: float, settle_s: float = DRAINED_SETTLE_S) -> bool:
        """Wait until the queue is empty (every message deleted or moved to its DLQ).

        Parameters
        ----------
        timeout_s : float
            Seconds to wait at most.
        settle_s : float
            Seconds the queue must stay empty (:data:`DRAINED_SETTLE_S`): one empty
            reading is not proof, since the counts are approximate.

        Returns
        -------
        bool
            Whether it drained in time.
        """
        return wait_settled(lambda: self.backlog() == 0, timeout_s, settle_s, poll_s=0.2)


@dataclass(frozen=True)
class KinesisEventSourceMapping:
    """A Kinesis event source mapping's settings (``CreateEventSourceMapping``).

    Parameters
    ----------
    batch_size : int
        Records per invocation at most, 1 to 10,000.
    maximum_batching_window_s : float
        Seconds to gather a batch, 0 to 300.
    starting_position : {"TRIM_HORIZON", "LATEST"}
        Where each shard is read from.
    bisect_batch_on_function_error : bool
        Split a failed batch in two and retry each half (splitting does not count as a
        retry). With partial responses, a retry that made no progress (its first record
        failed again) is split the same way, so a poison record ends alone.
    maximum_retry_attempts : int
        Retries of a batch before it goes to the on-failure destination: -1 (until the
        record expires, i.e. forever here) or 0 to 10,000. A partial response that moves
        the checkpoint starts a new batch there: its first retry is retry 1.
    report_batch_item_failures : bool
        Read ``batchItemFailures``: checkpoint before the lowest failed sequence number.
    retry_backoff_s : float
        Seconds before the first retry of a batch, doubled on each further retry up to
        ``retry_backoff_max_s`` (Lambda backs off too; its schedule is not published).
    retry_backoff_max_s : float
        Longest wait before a retry, seconds.
    idle_poll_s : float
        Seconds between ``GetRecords`` calls on a shard that had nothing (Lambda polls
        each shard about once a second).

    Raises
    ------
    PollerConfigError
        When a setting is outside those bounds.
    """

    batch_size: int = 100
    maximum_batching_window_s: float = 0.0
    starting_position: Literal["TRIM_HORIZON", "LATEST"] = "TRIM_HORIZON"
    bisect_batch_on_function_error: bool = False
    maximum_retry_attempts: int = -1
    report_batch_item_failures: bool = True
    retry_backoff_s: float = 0.1
    retry_backoff_max_s: float = 2.0
    idle_poll_s: float = 0.2

    def __post_init__(self) -> None:
        _check("BatchSize", self.batch_size, 1, MAX_BATCH_SIZE)
        _check("MaximumBatchingWindowInSeconds", self.maximum_batching_window_s, 0, 300)
        _check("MaximumRetryAttempts", self.maximum_retry_attempts, -1, MAX_RETRY_ATTEMPTS)


@dataclass
class _Batch:
    records: list[dict[str, Any]]  # GetRecords entries, in shard order
    attempts: int = 0  # retries so far (0: the first invocation)
    invocations: int = 0


def kinesis_on_failure_record(
    batch: Sequence[Mapping[str, Any]],
    *,
    shard_id: str,
    stream_arn: str,
    function_name: str,
    invocations: int,
    function_error: str | None,
    condition: str = RETRY_ATTEMPTS_EXHAUSTED,
) -> dict[str, Any]:
    """Build the record Lambda sends to a stream mapping's on-failure destination.

    Parameters
    ----------
    batch : sequence of mapping
        The batch's ``GetRecords`` entries, in order.
    shard_id, stream_arn : str
        Where they came from.
    function_name : str
        The function (its ARN is built from it).
    invocations : int
        ``approximateInvokeCount``.
    function_error : str or None
        ``Unhandled`` after a function error; None after partial responses.
    condition : str
        Why the batch was discarded (``RetryAttemptsExhausted``).

    Returns
    -------
    dict
        ``requestContext``, ``responseContext``, ``version``, ``timestamp`` and
        ``KinesisBatchInfo`` (``shardId``, ``startSequenceNumber``,
        ``endSequenceNumber``, ``approximateArrivalOfFirstRecord``,
        ``approximateArrivalOfLastRecord``, ``batchSize``, ``streamArn``), as in the
        Lambda Developer Guide ("Retaining discarded batches for a Kinesis event
        source"): the records themselves stay in the stream.
    """

    def iso(value: Any) -> str:
        when = value if isinstance(value, datetime) else datetime.fromtimestamp(float(value), UTC)
        return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    response: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if function_error is not None:
        response["functionError"] = function_error
    return {
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{function_name}",
            "condition": condition,
            "approximateInvokeCount": invocations,
        },
        "responseContext": response,
        "version": "1.0",
        "timestamp": iso(time.time()),
        "KinesisBatchInfo": {
            "shardId": shard_id,
            "startSequenceNumber": batch[0]["SequenceNumber"],
            "endSequenceNumber": batch[-1]["SequenceNumber"],
            "approximateArrivalOfFirstRecord": iso(batch[0]["ApproximateArrivalTimestamp"]),
            "approximateArrivalOfLastRecord": iso(batch[-1]["ApproximateArrivalTimestamp"]),
            "batchSize": len(batch),
            "streamArn": stream_arn,
        },
    }


class KinesisPoller(_Threads):
    """Poll every shard of a Kinesis stream and invoke a function, as Lambda does.

    Parameters
    ----------
    kinesis : botocore client
        A Kinesis client.
    stream_name : str
        The stream.
    invoke : callable
        ``invoke(event) -> response``; raising is a function error.
    mapping : KinesisEventSourceMapping
        The settings.
    on_failure : tuple of (botocore SQS client, str), optional
        The on-failure destination: an SQS client and a queue URL. None: a batch out of
        retries is dropped (counted in ``stats.records_to_on_failure``), as on AWS.
    function_name : str
        Named in on-failure records.
    """

    def __init__(
        self,
        kinesis: Any,
        stream_name: str,
        invoke: Invoke,
        mapping: KinesisEventSourceMapping | None = None,
        *,
        on_failure: tuple[Any, str] | None = None,
        function_name: str = "dynashard-ingest",
    ) -> None:
        super().__init__()
        self.kinesis = kinesis
        self.stream_name = stream_name
        self.invoke = invoke
        self.mapping = mapping or KinesisEventSourceMapping()
        self.on_failure = on_failure
        self.function_name = function_name
        self.stats = PollerStats()
        self.stream_arn = ""
        self._behind: dict[str, bool] = {}
        self._behind_lock = threading.Lock()

    def start(self) -> None:
        """Describe the stream and start one polling thread per shard."""
        summary = self.kinesis.describe_stream_summary(StreamName=self.stream_name)
        self.stream_arn = summary["StreamDescriptionSummary"]["StreamARN"]
        shards = self.kinesis.list_shards(StreamName=self.stream_name)["Shards"]
        self._stopping.clear()
        for shard in shards:
            shard_id = shard["ShardId"]
            with self._behind_lock:
                self._behind[shard_id] = True
            self._spawn(f"kinesis-{shard_id}", functools.partial(self._run, shard_id))

    @property
    def caught_up(self) -> bool:
        """bool: Every shard has no record in hand and its last read found nothing new."""
        with self._behind_lock:
            return not any(self._behind.values())

    def _set_behind(self, shard_id: str, behind: bool) -> None:
        with self._behind_lock:
            self._behind[shard_id] = behind

    def _iterator(self, shard_id: str) -> str:
        answer = self.kinesis.get_shard_iterator(
            StreamName=self.stream_name,
            ShardId=shard_id,
            ShardIteratorType=self.mapping.starting_position,
        )
        iterator: str = answer["ShardIterator"]
        return iterator

    def _run(self, shard_id: str) -> None:
        buffered: deque[dict[str, Any]] = deque()
        iterator: str | None = None
        pending: deque[_Batch] = deque()
        while not self._stopping.is_set():
            try:
                if not pending:
                    if iterator is None:
                        iterator = self._iterator(shard_id)
                    iterator = self._fill(iterator, buffered)
                    if not buffered:
                        self._set_behind(shard_id, False)
                        self._stopping.wait(self.mapping.idle_poll_s)
                        continue
                    self._set_behind(shard_id, True)
                    size = min(self.mapping.batch_size, len(buffered))
                    pending.append(_Batch([buffered.popleft() for _ in range(size)]))
                self._attempt(shard_id, pending)
            except Exception as exc:  # an API error: log it, keep the shard's position
                self.stats.error(f"Kinesis poll of {shard_id} failed: {exc!r}")
                self._stopping.wait(0.5)

    def _fill(self, iterator: str, buffered: deque[dict[str, Any]]) -> str:
        """Read records into ``buffered`` until a batch is full or the window ends."""
        m = self.mapping
        if len(buffered) >= m.batch_size:
            return iterator
        deadline = time.monotonic() + m.maximum_batching_window_s
        while True:
            # Lambda reads up to 10,000 records per call and batches them itself.
            answer = self.kinesis.get_records(ShardIterator=iterator, Limit=MAX_BATCH_SIZE)
            iterator = answer["NextShardIterator"]
            buffered.extend(answer["Records"])
            if len(buffered) >= m.batch_size or time.monotonic() >= deadline:
                return iterator
            if not answer["Records"]:
                self._stopping.wait(min(0.05, max(0.0, deadline - time.monotonic())))
            if self._stopping.is_set():
                return iterator

    def _event(self, shard_id: str, batch: _Batch) -> dict[str, Any]:
        return kinesis_event(
            kinesis_record(
                r["Data"],
                partition_key=r["PartitionKey"],
                sequence_number=r["SequenceNumber"],
                shard_id=shard_id,
                stream_arn=self.stream_arn,
                arrival_s=r["ApproximateArrivalTimestamp"].timestamp()
                if isinstance(r["ApproximateArrivalTimestamp"], datetime)
                else float(r["ApproximateArrivalTimestamp"]),
            )
            for r in batch.records
        )

    def _attempt(self, shard_id: str, pending: deque[_Batch]) -> None:
        """Invoke the function with the first pending batch and settle its outcome."""
        m = self.mapping
        batch = pending[0]
        if batch.attempts:
            self.stats.add(retries=1)
            delay = min(m.retry_backoff_max_s, m.retry_backoff_s * 2 ** (batch.attempts - 1))
            if self._stopping.wait(delay):
                return
        seqs = [r["SequenceNumber"] for r in batch.records]
        batch.invocations += 1
        self.stats.add(invocations=1, records_delivered=len(seqs))
        function_error: str | None = None
        try:
            response = self.invoke(self._event(shard_id, batch))
            failed = partial_failures(response, seqs) if m.report_batch_item_failures else []
        except Exception as exc:
            function_error = "Unhandled"
            self.stats.add(function_errors=1)
            self.stats.error(f"function error on {shard_id} ({len(seqs)} records): {exc!r}"[:500])
            failed = seqs
        pending.popleft()
        if not failed:
            self.stats.add(records_acknowledged=len(seqs))
            return
        self.stats.add(items_reported_failed=len(failed) if function_error is None else 0)
        first = seqs.index(failed[0])  # the checkpoint: everything before it is done
        self.stats.add(records_acknowledged=first)
        rest = batch.records[first:]
        no_progress = first == 0
        if m.bisect_batch_on_function_error and no_progress and len(rest) > 1:
            half = len(rest) // 2
            self.stats.add(bisections=1)
            pending.extendleft(
                [
                    _Batch(rest[half:], batch.attempts, batch.invocations),
                    _Batch(rest[:half], batch.attempts, batch.invocations),
                ]
            )
            return
        # A checkpoint that moved starts a new batch at it, whose retries count from zero
        # (Lambda reads the next batch from the checkpoint); no progress is a retry.
        retry = (
            _Batch(rest, batch.attempts + 1, batch.invocations)
            if no_progress
            else _Batch(rest, 1, 1)
        )
        if m.maximum_retry_attempts >= 0 and retry.attempts > m.maximum_retry_attempts:
            self._discard(shard_id, retry, function_error)
            return
        pending.appendleft(retry)

    def _discard(self, shard_id: str, batch: _Batch, function_error: str | None) -> None:
        self.stats.add(records_to_on_failure=len(batch.records))
        if self.on_failure is None:
            return
        sqs, queue_url = self.on_failure
        record = kinesis_on_failure_record(
            batch.records,
            shard_id=shard_id,
            stream_arn=self.stream_arn,
            function_name=self.function_name,
            invocations=batch.invocations,
            function_error=function_error,
        )
        sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(record))

    def wait_caught_up(self, timeout_s: float, settle_s: float = 0.5) -> bool:
        """Wait until every shard is caught up (no record in hand, nothing new read).

        Parameters
        ----------
        timeout_s : float
            Seconds to wait at most.
        settle_s : float
            Seconds the shards must stay caught up.

        Returns
        -------
        bool
            Whether they caught up in time.
        """
        return wait_settled(lambda: self.caught_up, timeout_s, settle_s, poll_s=0.1)


@dataclass(frozen=True)
class EventSources:
    """An ingest function's queue and stream, as the stack would have them.

    Attributes
    ----------
    stream : str
        Kinesis stream name.
    queue_url, dlq_url : str
        The SQS queue (with a ``RedrivePolicy``) and
        its dead-letter queue.
    on_failure_url : str
        The Kinesis mapping's on-failure destination (an SQS queue).
    """

    stream: str
    queue_url: str
    dlq_url: str
    on_failure_url: str


def create_sources(
    sqs: Any,
    kinesis: Any,
    shards: int,
    *,
    prefix: str = "dynashard-ingest",
    visibility_timeout_s: int = 30,
    max_receives: int = 5,
) -> EventSources:
    """Create a Kinesis stream, an SQS queue with its DLQ, and an on-failure queue.

    Parameters
    ----------
    sqs, kinesis : botocore clients
        Clients of the moto server.
    shards : int
        Shards of the stream (one poller thread, so one invocation in flight, each).
    prefix : str
        Name prefix; a random suffix keeps runs apart.
    visibility_timeout_s : int
        The queue's ``VisibilityTimeout``, seconds.
    max_receives : int
        The queue's ``maxReceiveCount``.

    Returns
    -------
    EventSources
        Names and URLs, the stream active.

    Raises
    ------
    TimeoutError
        If the stream is not active within 30 s.
    """
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    dlq_url = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receives}
    queue_url = sqs.create_queue(
        QueueName=name,
        Attributes={
            "VisibilityTimeout": str(visibility_timeout_s),
            "RedrivePolicy": json.dumps(redrive),
        },
    )["QueueUrl"]
    on_failure_url = sqs.create_queue(QueueName=f"{name}-on-failure")["QueueUrl"]
    kinesis.create_stream(StreamName=name, ShardCount=shards)
    deadline = time.monotonic() + 30
    while True:
        summary = kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]
        if summary["StreamStatus"] == "ACTIVE":
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"stream {name} not ACTIVE after 30 s")
        time.sleep(0.1)
    return EventSources(name, queue_url, dlq_url, on_failure_url)


def queue_depth(sqs: Any, queue_url: str) -> int:
    """Return the messages in a queue (``ApproximateNumberOfMessages`` and in flight).

    Parameters
    ----------
    sqs : botocore client
        The SQS client.
    queue_url : str
        The queue.

    Returns
    -------
    int
        Visible plus in-flight messages.
    """
    attrs = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(v) for v in attrs.values())


def put_records(
    kinesis: Any, stream_name: str, records: Iterable[tuple[str, bytes]], *, attempts: int = 20
) -> int:
    """Put records on a stream, 500 per ``PutRecords`` call, resending refused ones.

    Parameters
    ----------
    kinesis : botocore client
        A Kinesis client.
    stream_name : str
        The stream.
    records : iterable of (str, bytes)
        ``(partition key, data)`` in order; records of one partition key keep their
        order on its shard only if no earlier one of them is refused and resent.
    attempts : int
        Calls per chunk at most, resending ``FailedRecordCount``'s records.

    Returns
    -------
    int
        Records put.

    Raises
    ------
    RuntimeError
        When a chunk still has refused records after ``attempts`` calls.
    """
    put = 0
    it = iter(records)
    while chunk := list(itertools.islice(it, PUT_RECORDS_MAX)):
        entries = [{"PartitionKey": key, "Data": data} for key, data in chunk]
        for attempt in range(attempts):
            answer = kinesis.put_records(StreamName=stream_name, Records=entries)
            refused = [
                e for e, r in zip(entries, answer["Records"], strict=True) if "ErrorCode" in r
            ]
            put += len(entries) - len(refused)
            entries = refused
            if not entries:
                break
            time.sleep(min(1.0, 0.05 * 2**attempt))
        if entries:
            raise RuntimeError(f"PutRecords refused {len(entries)} records {attempts} times")
    return put


__all__ = [
    "EventSources",
    "InvalidPartialResponseError",
    "Invoke",
    "KinesisEventSourceMapping",
    "KinesisPoller",
    "PollerConfigError",
    "PollerStats",
    "SqsEventSourceMapping",
    "SqsPoller",
    "create_sources",
    "kinesis_on_failure_record",
    "partial_failures",
    "put_records",
    "queue_depth",
]
