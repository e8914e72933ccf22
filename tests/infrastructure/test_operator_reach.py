"""What an operator reaches: shard-administration routes, key settings, the FIFO queue option.

The prod context (tests/infrastructure/conftest.py) sets ``key_settings`` and
``fifo_ingest_queue``; dev leaves both at their defaults.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from dynashard import names
from infra.config import StackParameters
from tests.infrastructure.conftest import PROD_CONTEXT, Synth
from tests.infrastructure.test_api import _methods, _target
from tests.infrastructure.test_ingest import _mapping_for

pytestmark = pytest.mark.infra

ADMIN_ROUTES = [("PUT", "/shards/{key}/strategy"), ("PUT", "/shards/{key}/max-shards")]


def _env(s: Synth, fn: Any) -> dict[str, Any]:
    return dict(s.resources[s.logical_id(fn.function)]["Properties"]["Environment"]["Variables"])


@pytest.mark.parametrize("route", ADMIN_ROUTES)
def test_admin_routes_go_to_the_ingest_api_function_iam_authorized_with_a_json_body(
    dev: Synth, route: tuple[str, str]
) -> None:
    method = _methods(dev)[route]
    assert _target(dev, method) == "ingest"
    assert method["AuthorizationType"] == "AWS_IAM"
    assert method["RequestParameters"] == {"method.request.path.key": True}
    assert "application/json" in method["RequestModels"]


def test_key_settings_reach_the_ingest_functions_only_as_compact_json(
    dev: Synth, prod: Synth
) -> None:
    ingest = prod.stack.ingest
    expected = json.loads(PROD_CONTEXT["key_settings"])
    for fn in (ingest.api_function, ingest.queue_function, ingest.stream_function):
        raw = _env(prod, fn)[names.ENV_KEY_SETTINGS]
        assert json.loads(raw) == expected and ", " not in raw
    for fn in (prod.stack.query.function, prod.stack.scaler.function):
        assert names.ENV_KEY_SETTINGS not in _env(prod, fn)
    for fn in (dev.stack.ingest.api_function, dev.stack.ingest.queue_function):
        assert names.ENV_KEY_SETTINGS not in _env(dev, fn)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ([{"key": "K", "strategy": "calculated"}], "needs an attribute"),
        ([{"key": "K", "max_shards": 128}], "exceeds max_shards"),  # stack max_shards 64
        ([{"key": "K", "max_shards": 2}], "below the N the key is created with"),  # default 4
        ([{"key": "K", "max_shards": 8}, {"key": "K", "max_shards": 8}], "listed twice"),
        ("[{", "not JSON"),
    ],
)
def test_bad_key_settings_stop_the_synth_naming_the_setting(settings: Any, message: str) -> None:
    raw = settings if isinstance(settings, str) else json.dumps(settings)
    with pytest.raises(ValidationError, match=message):
        StackParameters.model_validate({"max_shards": 64, "default_shards": 4, "key_settings": raw})


def test_fifo_option_makes_fifo_queues_deduplicated_by_id_not_content(
    dev: Synth, prod: Synth
) -> None:
    ingest = prod.stack.ingest
    queue = prod.resources[prod.logical_id(ingest.queue)]["Properties"]
    dlq = prod.resources[prod.logical_id(ingest.dead_letter_queue)]["Properties"]
    assert queue["FifoQueue"] is True and dlq["FifoQueue"] is True  # SQS: a FIFO DLQ
    assert queue["ContentBasedDeduplication"] is False
    assert queue["DeduplicationScope"] == "messageGroup"
    assert queue["FifoThroughputLimit"] == "perMessageGroupId"
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": [prod.logical_id(ingest.dead_letter_queue), "Arn"]
    }
    assert queue["VisibilityTimeout"] >= 6 * prod.stack.config.function_timeout_s
    for q in (queue, dlq):
        assert q["SqsManagedSseEnabled"] is True
    # The standard queue stays the default
    for q in (dev.stack.ingest.queue, dev.stack.ingest.dead_letter_queue):
        assert "FifoQueue" not in dev.resources[dev.logical_id(q)]["Properties"]


def test_fifo_mapping_has_no_batching_window_and_at_most_ten_records(prod: Synth) -> None:
    # Lambda: FIFO batch size at most 10, no batching window ("Lambda parameters for
    # Amazon SQS event source mappings", AWS Lambda Developer Guide)
    ingest = prod.stack.ingest
    mapping = _mapping_for(prod, ingest.queue_function.function)
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [prod.logical_id(ingest.queue), "Arn"]}
    assert mapping["BatchSize"] <= 10
    assert "MaximumBatchingWindowInSeconds" not in mapping
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
