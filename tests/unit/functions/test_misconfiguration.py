"""A function whose own environment is invalid answers 500 and says so in its log (issue 39).

``-c max_shards=2000`` once deployed functions that answered every request with a 400
naming the configuration: the client was blamed for the operator's error, and no alarm
fired. The configuration is the function's, so the answer is a 500, the log names the
setting, and the metric the stack alarms on is counted.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dynashard import names
from dynashard.core.keys import MAX_SHARD_COUNT
from dynashard.errors import ConfigurationError
from functions.ingest import app as ingest
from functions.query import app as query

from .support import LambdaContext, load_event

#: An environment no request can be served under, and the setting each one names.
MISCONFIGURED: dict[str, tuple[dict[str, str], str]] = {
    # the settings refuse it: above the library's bound (the DEPLOY.md example's 2000)
    "max_shards above the bound": (
        {names.ENV_MAX_SHARDS: str(MAX_SHARD_COUNT * 2)},
        names.ENV_MAX_SHARDS,
    ),
    # the settings take each value, the facade refuses them together
    "default_shards above max_shards": (
        {names.ENV_DEFAULT_SHARDS: "5", names.ENV_MAX_SHARDS: "2"},
        "shard counts",
    ),
}


def _emitted_metrics(out: str) -> set[str]:
    """Names of the EMF metrics printed on stdout under the dimension the stack alarms on."""
    found: set[str] = set()
    for line in out.splitlines():
        if '"_aws"' in line:
            record = json.loads(line)
            for group in record["_aws"]["CloudWatchMetrics"]:
                if group["Dimensions"] == [[names.METRICS_SERVICE_DIMENSION]]:
                    found |= {m["Name"] for m in group["Metrics"]}
    return found


@pytest.mark.parametrize("case", sorted(MISCONFIGURED))
@pytest.mark.parametrize(
    ("handler", "event"),
    [(query.handler, "api_get_shards"), (lambda e, c: ingest.api_handler(e, c), "api_post_events")],
    ids=["query", "ingest"],
)
def test_an_invalid_environment_is_a_500_logged_and_counted(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    context: LambdaContext,
    case: str,
    handler: Any,
    event: str,
) -> None:
    # Given a function whose environment is invalid (the container's own facade serves)
    environment, setting = MISCONFIGURED[case]
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    # When a valid request arrives
    response = handler(load_event(event), context)
    # Then the answer is the server's 500, naming no field of the request
    assert response["statusCode"] == 500, response["body"]
    body = json.loads(response["body"])
    assert body["field"] is None
    assert "configuration is invalid" in body["message"]
    # and the log names the setting at error level
    [logged] = [r for r in caplog.records if r.getMessage() == "function misconfigured"]
    assert logged.levelname == "ERROR"
    assert setting in logged.settings  # type: ignore[attr-defined]
    # and the metric the stack alarms on is flushed with the invocation
    assert names.METRIC_FUNCTION_MISCONFIGURED in _emitted_metrics(capsys.readouterr().out)


def test_a_batch_function_fails_its_invocation_on_an_invalid_environment(
    monkeypatch: pytest.MonkeyPatch, context: LambdaContext
) -> None:
    # Given the queue function above the library's bound
    monkeypatch.setenv(names.ENV_MAX_SHARDS, str(MAX_SHARD_COUNT + 1))
    # When a batch arrives, the invocation fails (Lambda's Errors; the batch comes back)
    with pytest.raises(ConfigurationError, match=names.ENV_MAX_SHARDS) as raised:
        ingest.sqs_handler(load_event("sqs_batch"), context)
    assert f"less than or equal to {MAX_SHARD_COUNT}" in raised.value.message


def test_the_bound_itself_is_served(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.ENV_MAX_SHARDS, str(MAX_SHARD_COUNT))
    assert query.get_settings().to_config().max_shards == MAX_SHARD_COUNT
