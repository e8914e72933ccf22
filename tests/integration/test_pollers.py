"""Event-source pollers against moto's server: Lambda's SQS and Kinesis semantics."""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import EventType

from dynashard import Dynashard, DynashardConfig
from dynashard.lambda_kit.batch import partial_batch_response
from sandbox.engines.dynamodb_local import DynamoDBLocal
from sandbox.engines.moto_server import MotoServer
from sandbox.local_aws.aws_events import LambdaContext
from sandbox.local_aws.pollers import (
    KinesisEventSourceMapping,
    KinesisPoller,
    PollerConfigError,
    SqsEventSourceMapping,
    SqsPoller,
    put_records,
)

pytestmark = pytest.mark.integration


def wait_for(predicate: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


class Recorder:
    """A function that records each batch and answers what ``answer`` says."""

    def __init__(self, answer: Callable[[list[dict[str, Any]], int], Any]) -> None:
        self.answer = answer
        self.batches: list[list[dict[str, Any]]] = []
        self.lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> Any:
        with self.lock:
            self.batches.append(event["Records"])
            n = len(self.batches)
        return self.answer(event["Records"], n)


def body_of(record: dict[str, Any]) -> str:
    if "kinesis" in record:
        return base64.b64decode(record["kinesis"]["data"]).decode()
    return str(record["body"])


def failures(records: list[dict[str, Any]], bad: Callable[[dict[str, Any]], bool]) -> Any:
    ident = "sequenceNumber" if records and "kinesis" in records[0] else "messageId"
    return {
        "batchItemFailures": [
            {"itemIdentifier": r["kinesis"][ident] if "kinesis" in r else r[ident]}
            for r in records
            if bad(r)
        ]
    }


# --- SQS -----------------------------------------------------------------------------------
@pytest.fixture
def sqs(moto_server: MotoServer) -> Any:
    return moto_server.client("sqs")


def make_queue(sqs: Any, *, max_receives: int = 2, fifo: bool = False) -> tuple[str, str]:
    name = f"q-{uuid.uuid4().hex[:8]}"
    suffix = ".fifo" if fifo else ""
    dlq = sqs.create_queue(
        QueueName=f"{name}-dlq{suffix}", Attributes={"FifoQueue": "true"} if fifo else {}
    )["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    attributes = {
        "VisibilityTimeout": "1",
        "RedrivePolicy": json.dumps(
            {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receives}
        ),
    }
    if fifo:
        attributes |= {"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    url = sqs.create_queue(QueueName=name + suffix, Attributes=attributes)["QueueUrl"]
    return url, dlq


def drain_bodies(sqs: Any, url: str) -> list[str]:
    bodies: list[str] = []
    while True:
        msgs = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not msgs:
            return bodies
        bodies.extend(m["Body"] for m in msgs)
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)
            ],
        )


def send(sqs: Any, url: str, bodies: list[str], group: str | None = None) -> None:
    for start in range(0, len(bodies), 10):
        entries: list[dict[str, Any]] = [
            {"Id": str(i), "MessageBody": b} for i, b in enumerate(bodies[start : start + 10])
        ]
        if group is not None:
            for e in entries:
                e["MessageGroupId"] = group
        sqs.send_message_batch(QueueUrl=url, Entries=entries)


def test_sqs_partial_failure_redelivers_then_redrives_to_the_dlq(sqs: Any) -> None:
    # Given a queue whose RedrivePolicy allows 2 receives, and a function that always
    # reports the message "poison" as failed
    url, dlq = make_queue(sqs, max_receives=2)
    send(sqs, url, ["a", "poison", "b"])
    fn = Recorder(lambda records, n: failures(records, lambda r: r["body"] == "poison"))
    # When the poller runs until the queue is empty
    with SqsPoller(sqs, url, fn, SqsEventSourceMapping(batch_size=10)) as poller:
        assert poller.wait_drained(timeout_s=30)
    # Then the good messages were delivered and deleted once, the poison twice, with its
    # receive count, and it is now in the DLQ
    delivered = [
        (r["body"], r["attributes"]["ApproximateReceiveCount"]) for b in fn.batches for r in b
    ]
    assert sorted(d for d in delivered if d[0] != "poison") == [("a", "1"), ("b", "1")]
    assert [d for d in delivered if d[0] == "poison"] == [("poison", "1"), ("poison", "2")]
    assert drain_bodies(sqs, dlq) == ["poison"]
    assert poller.stats.records_acknowledged == 2
    assert poller.stats.items_reported_failed == 2


def test_sqs_function_error_returns_the_whole_batch(sqs: Any) -> None:
    # Given a function that raises on its first invocation only
    url, _dlq = make_queue(sqs, max_receives=5)
    send(sqs, url, ["a", "b", "c"])

    def answer(records: list[dict[str, Any]], n: int) -> Any:
        if n == 1:
            raise RuntimeError("boom")
        return None

    fn = Recorder(answer)
    with SqsPoller(sqs, url, fn, SqsEventSourceMapping(batch_size=10)) as poller:
        assert poller.wait_drained(timeout_s=30)
    # Then every message came back once, with receive count 2
    again = sorted(r["body"] for b in fn.batches[1:] for r in b)
    assert again == ["a", "b", "c"]
    assert {r["attributes"]["ApproximateReceiveCount"] for b in fn.batches[1:] for r in b} == {"2"}
    assert poller.stats.function_errors == 1


def test_sqs_invalid_partial_response_fails_the_whole_batch(sqs: Any) -> None:
    # Given a function naming an id that is not in the batch on its first invocation
    url, _dlq = make_queue(sqs, max_receives=5)
    send(sqs, url, ["a", "b"])
    fn = Recorder(
        lambda records, n: {"batchItemFailures": [{"itemIdentifier": "nope"}]} if n == 1 else {}
    )
    with SqsPoller(sqs, url, fn, SqsEventSourceMapping(batch_size=10)) as poller:
        assert poller.wait_drained(timeout_s=30)
    # Then nothing of the first batch was deleted: both came back
    assert sorted(r["body"] for b in fn.batches[1:] for r in b) == ["a", "b"]
    assert poller.stats.function_errors == 1


def test_sqs_batching_window_gathers_past_ten_messages(sqs: Any) -> None:
    # Given 25 messages and a batch size of 25 with a 2 s window
    url, _dlq = make_queue(sqs)
    send(sqs, url, [f"m{i}" for i in range(25)])
    fn = Recorder(lambda records, n: None)
    mapping = SqsEventSourceMapping(batch_size=25, maximum_batching_window_s=2)
    with SqsPoller(sqs, url, fn, mapping) as poller:
        assert poller.wait_drained(timeout_s=30)
    # Then one invocation had them all
    assert [len(b) for b in fn.batches] == [25]


def test_sqs_mapping_bounds_are_lambdas() -> None:
    with pytest.raises(PollerConfigError, match="BatchSize"):
        SqsEventSourceMapping(batch_size=10_001, maximum_batching_window_s=1)
    with pytest.raises(PollerConfigError, match="MaximumBatchingWindowInSeconds"):
        SqsEventSourceMapping(batch_size=11)


def test_fifo_batch_size_above_ten_is_refused(sqs: Any) -> None:
    url, _dlq = make_queue(sqs, fifo=True)
    poller = SqsPoller(sqs, url, lambda e: None, SqsEventSourceMapping(11, 1))
    with pytest.raises(PollerConfigError, match="FIFO"):
        poller.start()


def test_fifo_group_stops_at_its_first_failure_and_keeps_order(sqs: Any) -> None:
    # Given a FIFO queue with group A (a1 a2 a3) and group B (b1 b2), and the ingest
    # function's batch answer (dynashard.lambda_kit) failing a2 on its first delivery
    url, dlq = make_queue(sqs, max_receives=5, fifo=True)
    send(sqs, url, ["a1", "a2", "a3"], group="A")
    send(sqs, url, ["b1", "b2"], group="B")
    logger = Logger(service="test-fifo")
    done: list[str] = []

    def answer(records: list[dict[str, Any]], n: int) -> Any:
        fates = {
            r["messageId"]: "transient"
            if r["body"] == "a2" and r["attributes"]["ApproximateReceiveCount"] == "1"
            else None
            for r in records
        }
        response = partial_batch_response(
            {"Records": records}, LambdaContext(), EventType.SQS, fates, logger
        )
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        done.extend(r["body"] for r in records if r["messageId"] not in failed)
        return response

    fn = Recorder(answer)
    with SqsPoller(sqs, url, fn, SqsEventSourceMapping(batch_size=10)) as poller:
        assert poller.wait_drained(timeout_s=30)
    # Then a3 was held back with a2 (reported failed though its fate was fine), group B
    # went on, and each group was done in order

    first = {r["body"] for r in fn.batches[0]}
    assert {"a1", "a2", "a3"} <= first
    assert [b for b in done if b.startswith("a")] == ["a1", "a2", "a3"]
    assert [b for b in done if b.startswith("b")] == ["b1", "b2"]
    assert drain_bodies(sqs, dlq) == []


# --- Kinesis -------------------------------------------------------------------------------
@pytest.fixture
def kinesis(moto_server: MotoServer) -> Any:
    return moto_server.client("kinesis")


def make_stream(kinesis: Any, shards: int = 1) -> str:
    name = f"s-{uuid.uuid4().hex[:8]}"
    kinesis.create_stream(StreamName=name, ShardCount=shards)
    wait_for(
        lambda: (
            kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"][
                "StreamStatus"
            ]
            == "ACTIVE"
        )
    )
    return name


@pytest.fixture
def on_failure(sqs: Any) -> Iterator[tuple[Any, str]]:
    url = sqs.create_queue(QueueName=f"onfail-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    yield sqs, url


def run_kinesis(
    kinesis: Any,
    stream: str,
    fn: Recorder,
    mapping: KinesisEventSourceMapping,
    on_failure: tuple[Any, str] | None,
    expected: int,
) -> KinesisPoller:
    with KinesisPoller(kinesis, stream, fn, mapping, on_failure=on_failure) as poller:
        wait_for(
            lambda: (
                poller.stats.records_acknowledged + poller.stats.records_to_on_failure >= expected
            )
        )
        assert poller.wait_caught_up(timeout_s=30)
    return poller


def test_kinesis_batches_keep_shard_order(kinesis: Any) -> None:
    # Given 45 records on one shard and a batch size of 10
    stream = make_stream(kinesis)
    put_records(kinesis, stream, [("k", f"r{i}".encode()) for i in range(45)])
    fn = Recorder(lambda records, n: None)
    run_kinesis(kinesis, stream, fn, KinesisEventSourceMapping(batch_size=10), None, 45)
    # Then batches of at most 10 came in stream order
    assert max(len(b) for b in fn.batches) == 10
    assert [body_of(r) for b in fn.batches for r in b] == [f"r{i}" for i in range(45)]


def test_kinesis_partial_response_retries_from_the_lowest_failed_sequence(kinesis: Any) -> None:
    # Given a function that reports r3 and r6 failed on its first invocation only
    stream = make_stream(kinesis)
    put_records(kinesis, stream, [("k", f"r{i}".encode()) for i in range(8)])
    fn = Recorder(
        lambda records, n: (
            failures(records, lambda r: body_of(r) in {"r3", "r6"}) if n == 1 else None
        )
    )
    poller = run_kinesis(kinesis, stream, fn, KinesisEventSourceMapping(batch_size=8), None, 8)
    # Then the retry starts at r3 (the checkpoint), r0..r2 are not sent again
    assert [body_of(r) for r in fn.batches[1]] == [f"r{i}" for i in range(3, 8)]
    assert poller.stats.records_acknowledged == 8
    assert poller.stats.retries == 1


def test_kinesis_bisects_to_isolate_a_poison_record(kinesis: Any, on_failure: Any) -> None:
    # Given a function that raises on any batch holding "poison", bisection on, 1 retry
    stream = make_stream(kinesis)
    bodies = [f"r{i}" for i in range(8)]
    bodies[5] = "poison"
    put_records(kinesis, stream, [("k", b.encode()) for b in bodies])

    def answer(records: list[dict[str, Any]], n: int) -> Any:
        if any(body_of(r) == "poison" for r in records):
            raise ValueError("poison")
        return None

    fn = Recorder(answer)
    mapping = KinesisEventSourceMapping(
        batch_size=8,
        bisect_batch_on_function_error=True,
        maximum_retry_attempts=1,
        retry_backoff_s=0.01,
    )
    poller = run_kinesis(kinesis, stream, fn, mapping, on_failure, 8)
    # Then the batch was split until the poison stood alone, which went to the on-failure
    # destination after its retry; every other record was done exactly once
    sqs, url = on_failure
    failures_sent = [json.loads(b) for b in drain_bodies(sqs, url)]
    assert len(failures_sent) == 1
    info = failures_sent[0]["KinesisBatchInfo"]
    assert info["batchSize"] == 1
    assert failures_sent[0]["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert failures_sent[0]["responseContext"]["functionError"] == "Unhandled"
    poison_seq = next(
        r["kinesis"]["sequenceNumber"] for b in fn.batches for r in b if body_of(r) == "poison"
    )
    assert info["startSequenceNumber"] == info["endSequenceNumber"] == poison_seq
    done = [body_of(r) for b in fn.batches if "poison" not in map(body_of, b) for r in b]
    assert sorted(done) == sorted(b for b in bodies if b != "poison")
    assert poller.stats.bisections >= 3
    assert poller.stats.records_to_on_failure == 1


def test_kinesis_retry_limit_sends_the_batch_to_the_on_failure_destination(
    kinesis: Any, on_failure: Any
) -> None:
    # Given a function that always raises, no bisection, 2 retries
    stream = make_stream(kinesis)
    put_records(kinesis, stream, [("k", f"r{i}".encode()) for i in range(4)])

    def answer(records: list[dict[str, Any]], n: int) -> Any:
        raise RuntimeError("down")

    fn = Recorder(answer)
    mapping = KinesisEventSourceMapping(
        batch_size=4, maximum_retry_attempts=2, retry_backoff_s=0.01
    )
    run_kinesis(kinesis, stream, fn, mapping, on_failure, 4)
    # Then it was invoked 1 + 2 times, and the batch's description was sent once
    assert len(fn.batches) == 3
    sqs, url = on_failure
    sent = [json.loads(b) for b in drain_bodies(sqs, url)]
    assert [s["KinesisBatchInfo"]["batchSize"] for s in sent] == [4]
    assert sent[0]["requestContext"]["approximateInvokeCount"] == 3


def test_kinesis_mapping_bounds_are_lambdas() -> None:
    with pytest.raises(PollerConfigError, match="MaximumRetryAttempts"):
        KinesisEventSourceMapping(maximum_retry_attempts=10_001)
    with pytest.raises(PollerConfigError, match="BatchSize"):
        KinesisEventSourceMapping(batch_size=0)


# --- the real ingest handlers ----------------------------------------------------------------
def test_real_ingest_handlers_through_both_pollers(
    moto_server: MotoServer,
    dynamodb_local: DynamoDBLocal,
    sandbox_tables: tuple[str, str],
    function_env: dict[str, str],
) -> None:
    from sandbox.local_aws.lambda_runtime import LocalFunction

    sqs, kinesis = moto_server.client("sqs"), moto_server.client("kinesis")
    sqs_fn = LocalFunction("functions.ingest.app:sqs_handler")
    kin_fn = LocalFunction("functions.ingest.app:kinesis_handler")
    events = [
        {"key": "POLL#A", "id": f"e{i:03d}", "ts": f"2013-01-01T00:{i:02d}:00Z", "data": {"n": i}}
        for i in range(40)
    ]
    poison = {"key": "POLL#A", "id": "bad", "ts": "not a time"}
    url, dlq = make_queue(sqs, max_receives=2)
    send(sqs, url, [json.dumps(e) for e in events[:20]] + [json.dumps(poison)])
    stream = make_stream(kinesis, shards=2)
    put_records(
        kinesis, stream, [(e["key"], json.dumps(e).encode()) for e in [*events[20:], poison]]
    )
    # When both pollers drive the real handlers
    ctx = LambdaContext(function_name="dynashard-ingest")
    mapping = KinesisEventSourceMapping(
        batch_size=100,
        bisect_batch_on_function_error=True,
        maximum_retry_attempts=2,
        retry_backoff_s=0.01,
    )
    with (
        SqsPoller(sqs, url, lambda e: sqs_fn(e, ctx), SqsEventSourceMapping(10)) as sq,
        KinesisPoller(kinesis, stream, lambda e: kin_fn(e, ctx), mapping) as kp,
    ):
        assert sq.wait_drained(timeout_s=60)
        wait_for(lambda: kp.stats.records_acknowledged + kp.stats.records_to_on_failure >= 21)
    # Then every good event is stored once, the poison is in the DLQ and was sent to
    # the (absent) on-failure destination
    data_table, metadata_table = sandbox_tables
    ds = Dynashard(
        DynashardConfig(data_table, metadata_table, endpoint_url=dynamodb_local.endpoint_url)
    )
    page = ds.query_events("POLL#A", limit=100)
    assert [i["id"] for i in page.items] == [e["id"] for e in events]
    assert [json.loads(b)["id"] for b in drain_bodies(sqs, dlq)] == ["bad"]
    assert kp.stats.records_to_on_failure == 1


def test_fifo_ingest_queue_as_the_stack_builds_it_keeps_each_keys_order(
    moto_server: MotoServer,
    dynamodb_local: DynamoDBLocal,
    sandbox_tables: tuple[str, str],
    function_env: dict[str, str],
) -> None:
    # Given a FIFO queue as the stack's fifo_ingest_queue builds it: content-based
    # deduplication off, producers sending each key as its message group and the
    # event's id as the deduplication id (a producer's retry of b1 is dropped by SQS)
    from functions.ingest import app as ingest

    sqs = moto_server.client("sqs")
    name = f"fifo-{uuid.uuid4().hex[:8]}"
    dlq = sqs.create_queue(QueueName=f"{name}-dlq.fifo", Attributes={"FifoQueue": "true"})
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq["QueueUrl"], AttributeNames=["QueueArn"])
    url = sqs.create_queue(
        QueueName=f"{name}.fifo",
        Attributes={
            "FifoQueue": "true",
            "ContentBasedDeduplication": "false",
            "VisibilityTimeout": "1",
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dlq_arn["Attributes"]["QueueArn"], "maxReceiveCount": 5}
            ),
        },
    )["QueueUrl"]

    def event(key: str, eid: str, minute: int) -> dict[str, Any]:
        return {"key": key, "id": eid, "ts": f"2013-01-01T00:{minute:02d}:00Z", "data": {}}

    sent = [event("FIFO#A", f"a{i}", i) for i in (1, 2, 3)] + [
        event("FIFO#B", f"b{i}", i) for i in (1, 2)
    ]
    for e in [*sent, sent[3]]:  # b1 twice: the second is a duplicate by id
        sqs.send_message(
            QueueUrl=url,
            MessageBody=json.dumps(e),
            MessageGroupId=e["key"],
            MessageDeduplicationId=e["id"],
        )
    # And a facade whose first write of a2 fails for now (a throttled item)
    data_table, metadata_table = sandbox_tables
    ds = Dynashard(
        DynashardConfig(data_table, metadata_table, endpoint_url=dynamodb_local.endpoint_url)
    )
    failed_once: set[str] = set()

    class FlakyFacade:
        def __getattr__(self, name: str) -> Any:
            return getattr(ds, name)

        def put_events(self, events: Any) -> Any:
            import dataclasses

            outcomes = ds.put_events(events)
            if "a2" not in failed_once and any(o.event_id == "a2" for o in outcomes):
                failed_once.add("a2")
                return [
                    dataclasses.replace(o, ok=False, error="ProvisionedThroughputExceededException")
                    if o.event_id == "a2"
                    else o
                    for o in outcomes
                ]
            return outcomes

    acknowledged: list[str] = []
    batches: list[list[str]] = []

    def invoke(lambda_event: dict[str, Any]) -> Any:
        response = ingest.sqs_handler(
            lambda_event, LambdaContext(function_name="ingest"), facade=FlakyFacade()
        )
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        ids = [json.loads(r["body"])["id"] for r in lambda_event["Records"]]
        batches.append(ids)
        acknowledged.extend(
            i
            for i, r in zip(ids, lambda_event["Records"], strict=True)
            if r["messageId"] not in failed
        )
        return response

    # When the FIFO poller drives the real handler (the stack's mapping: batch size 10,
    # no batching window)
    with SqsPoller(sqs, url, invoke, SqsEventSourceMapping(batch_size=10)) as poller:
        assert poller.wait_drained(timeout_s=60)
    # Then a3 was reported failed with a2 though written, came back after it, and each
    # key's events were acknowledged in order; b1 was delivered once; nothing dead-lettered
    assert failed_once == {"a2"}
    assert [i for i in acknowledged if i.startswith("a")] == ["a1", "a2", "a3"]
    assert [i for i in acknowledged if i.startswith("b")] == ["b1", "b2"]
    assert sum(batch.count("b1") for batch in batches) == 1
    assert drain_bodies(sqs, dlq["QueueUrl"]) == []
    page = ds.query_events("FIFO#A", limit=10)
    assert [i["id"] for i in page.items] == ["a1", "a2", "a3"]
    ds.close()
