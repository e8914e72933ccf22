"""The cold-start and memory benchmarks' pure parts: ratios, the deployed environment,
the events they build (read back by the handler kit) and the memory-size rule."""

from __future__ import annotations

import base64
import json

import pytest

from bench.cold_start import (
    CHILD,
    ENV_NO_BYTECODE,
    Sample,
    deployed_env,
    get_events_event,
    kinesis_batch,
    post_events_event,
    sqs_batch,
    summarize,
    summarize_no_bytecode,
)
from bench.memory import MB_PER_VCPU, memory_size
from dynashard import names
from dynashard.lambda_kit.batch import batch_payloads

EVENTS = [
    {"key": "DEPARTURES#EWR", "id": f"e{i}", "ts": "2013-01-01T10:00:00Z", "data": {"n": i}}
    for i in range(3)
]


def sample(import_ms: float, invoke_ms: float) -> Sample:
    return Sample(import_ms, invoke_ms, import_ms, invoke_ms, 50 * 1024)


def test_the_ratio_compares_import_plus_first_call_medians_with_the_boto3_baseline() -> None:
    summary = summarize(
        {
            "baseline.logger": [sample(20, 0), sample(30, 0), sample(25, 0)],
            "baseline.boto3": [sample(150, 50), sample(190, 10), sample(300, 0)],
            "query.handler": [sample(200, 60), sample(180, 80), sample(500, 0)],
        }
    )
    (run,) = summary["runs"]
    # medians of the per-sample totals: handler 260, boto3 200, logger 25
    assert run["baseline_boto3_ms"] == 200 and run["baseline_logger_ms"] == 25
    assert run["ratio"] == 1.3 and run["ratio_logger"] == 10.4
    assert run["cpu_ratio"] == 1.3  # the samples' CPU times equal their wall times
    assert summary["targets"]["ratio_vs_boto3_max"]["met"] is True
    slower = summarize(
        {
            "baseline.logger": [sample(25, 0)],
            "baseline.boto3": [sample(200, 0)],
            "query.handler": [sample(261, 0)],
        }
    )
    assert slower["targets"]["ratio_vs_boto3[query.handler]"]["met"] is False


def test_no_bytecode_compares_each_entry_with_its_compiled_run() -> None:
    out = summarize_no_bytecode(
        {"query.handler": [sample(600, 100), sample(700, 100), sample(650, 50)]},
        {"query.handler": [sample(200, 60), sample(180, 80)], "scaler.handler": [sample(1, 1)]},
    )
    assert list(out) == ["query.handler"]
    q = out["query.handler"]
    assert q["total_ms"] == 700 and q["with_bytecode_total_ms"] == 260
    assert q["slowdown"] == round(700 / 260, 2) and q["samples"] == 3


def test_the_child_skips_bytecode_only_when_asked() -> None:
    assert f'os.environ.get("{ENV_NO_BYTECODE}") == "1"' in CHILD
    assert "cache_from_source" in CHILD  # the import system's .pyc path, replaced


def test_the_children_run_with_tracing_and_metrics_on_as_deployed() -> None:
    env = deployed_env("http://127.0.0.1:8000", ("data-t", "meta-t"), "query", {"X": "1"})
    assert "POWERTOOLS_TRACE_DISABLED" not in env
    assert "POWERTOOLS_METRICS_DISABLED" not in env
    assert env["LAMBDA_TASK_ROOT"] and env["_X_AMZN_TRACE_ID"].startswith("Root=")
    assert env[names.ENV_POWERTOOLS_SERVICE_NAME] == "query"
    assert env[names.ENV_DATA_TABLE] == "data-t" and env["X"] == "1"


@pytest.mark.parametrize("kind", ["sqs", "kinesis"])
def test_the_batches_carry_the_events_as_the_handlers_read_them(kind: str) -> None:
    from aws_lambda_powertools.utilities.batch import EventType

    if kind == "sqs":
        event, event_type = sqs_batch(EVENTS), EventType.SQS
        bodies = [json.loads(r["body"]) for r in event["Records"]]
    else:
        event, event_type = kinesis_batch(EVENTS), EventType.KinesisDataStreams
        bodies = [json.loads(base64.b64decode(r["kinesis"]["data"])) for r in event["Records"]]
    assert bodies == EVENTS
    items, _ = batch_payloads(event, event_type)
    assert [json.loads(payload()) for _, payload in items] == EVENTS
    assert len({identifier for identifier, _ in items}) == len(EVENTS)


def test_the_api_events_carry_the_body_and_the_query() -> None:
    assert json.loads(post_events_event(EVENTS[:1])["body"]) == EVENTS[0]
    assert json.loads(post_events_event(EVENTS)["body"]) == {"events": EVENTS}
    get = get_events_event("K#1", 1000)
    assert get["queryStringParameters"] == {"key": "K#1", "limit": "1000"}
    assert get["multiValueQueryStringParameters"]["limit"] == ["1000"]


def test_memory_size_holds_the_peak_with_headroom_and_feeds_the_cpu() -> None:
    # memory-bound: 1.5 x 300 MiB = 472 MB > 1769 x 0.1 s -> 512
    assert memory_size(300.0, 100.0) == {
        "rss_mb": 471.9,
        "cpu_mb": 176.9,
        "memory_mb": 512,
        "vcpu": round(512 / MB_PER_VCPU, 3),
        "bound": "memory",
    }
    # CPU-bound: 0.6 s of CPU at 1 s budget needs 0.6 vCPU = 1061 MB -> 1152
    assert memory_size(60.0, 600.0)["memory_mb"] == 1152
    # never below 128 MB, never above one vCPU
    assert memory_size(1.0, 1.0)["memory_mb"] == 128
    assert memory_size(5000.0, 5000.0)["memory_mb"] == MB_PER_VCPU
