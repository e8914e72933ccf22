"""The alarm on a function whose own configuration is invalid (issue 39).

Such a function answers the API with a 500 and fails its queue, stream or scaler
invocations (``dynashard.lambda_kit.kit.misconfiguration_reported``), counting the
metric this alarm sums. The API's 5XXError alone would also count the retryable 503s.
"""

from __future__ import annotations

from typing import Any

import pytest

from dynashard import names

from .conftest import Synth

pytestmark = pytest.mark.infra


def _misconfiguration_alarm(synth: Synth) -> dict[str, Any]:
    [alarm] = [
        a["Properties"]
        for a in synth.of_type("AWS::CloudWatch::Alarm").values()
        if any(
            m.get("MetricStat", {}).get("Metric", {}).get("MetricName")
            == names.METRIC_FUNCTION_MISCONFIGURED
            for m in a["Properties"].get("Metrics", [])
        )
    ]
    return alarm


def test_the_alarm_sums_every_functions_misconfiguration_count(dev: Synth) -> None:
    alarm = _misconfiguration_alarm(dev)
    # Then it fires on the first invocation that counts one, within a minute
    assert alarm["Threshold"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["EvaluationPeriods"] == 1
    assert alarm["TreatMissingData"] == "notBreaching"
    metrics = {m["Id"]: m for m in alarm["Metrics"]}
    [expression] = [m for m in metrics.values() if "Expression" in m]
    stats = [m["MetricStat"] for m in metrics.values() if "MetricStat" in m]
    assert all(s["Stat"] == "Sum" and s["Period"] == 60 for s in stats)
    assert all(s["Metric"]["Namespace"] == names.METRICS_NAMESPACE for s in stats)
    # and its services are exactly the functions' Powertools service names (the dimension
    # Powertools gives the metric), each one summed
    services = {
        d["Value"]
        for s in stats
        for d in s["Metric"]["Dimensions"]
        if d["Name"] == names.METRICS_SERVICE_DIMENSION
    }
    deployed = {
        f["Properties"]["Environment"]["Variables"][names.ENV_POWERTOOLS_SERVICE_NAME]
        for f in dev.of_type("AWS::Lambda::Function").values()
        if names.ENV_POWERTOOLS_SERVICE_NAME
        in f["Properties"].get("Environment", {}).get("Variables", {})
    }
    assert services == deployed == {"ingest", "query", "scaler"}
    summed = [i for i in metrics if i != expression["Id"]]
    assert all(f"FILL({i}, 0)" in expression["Expression"] for i in summed)
