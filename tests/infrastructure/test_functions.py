"""Function defaults (runtime, arm64, JSON logs, own log group and role), env and layer."""

from __future__ import annotations

from typing import Any

import pytest

from dynashard import names
from dynashard.core.load import WRITE_LOAD_RULE_SUFFIX
from infra.alarm_specs import SCALER_ALARMS
from infra.config import FUNCTION_MEMORY_MB, DynashardParameters
from tests.infrastructure.conftest import Synth

pytestmark = pytest.mark.infra

HANDLERS = {
    "api_function": "app.api_handler",
    "queue_function": "app.sqs_handler",
    "stream_function": "app.kinesis_handler",
}


def _functions(s: Synth) -> dict[str, Any]:
    stack = s.stack
    fns = {name: getattr(stack.ingest, name) for name in HANDLERS}
    fns["query"] = stack.query.function
    fns["scaler"] = stack.scaler.function
    return fns


def test_five_functions_each_with_the_expected_handler(dev: Synth) -> None:
    assert len(dev.of_type("AWS::Lambda::Function")) == 5
    expected = {**HANDLERS, "query": "app.handler", "scaler": "app.handler"}
    for name, fn in _functions(dev).items():
        props = dev.resources[dev.logical_id(fn.function)]["Properties"]
        assert props["Handler"] == expected[name], name


def test_defaults_defined_once_apply_to_every_function(dev: Synth) -> None:
    layer_id = dev.logical_id(dev.stack.dynashard.layer)
    roles, log_groups = set(), set()
    for name, fn in _functions(dev).items():
        props = dev.resources[dev.logical_id(fn.function)]["Properties"]
        assert props["Runtime"] == names.LAMBDA_PYTHON_RUNTIME, name
        assert props["Architectures"] == ["arm64"], name
        assert props["LoggingConfig"]["LogFormat"] == "JSON", name
        assert props["TracingConfig"] == {"Mode": "Active"}, name
        assert props["Layers"] == [{"Ref": layer_id}], name
        log_group = dev.logical_id(fn.log_group)
        assert props["LoggingConfig"]["LogGroup"] == {"Ref": log_group}, name
        role = dev.logical_id(fn.role)
        assert props["Role"] == {"Fn::GetAtt": [role, "Arn"]}, name
        roles.add(role)
        log_groups.add(log_group)
        assert dev.resources[log_group]["Properties"]["RetentionInDays"] == 30
    assert len(roles) == 5 and len(log_groups) == 5  # one each, nothing shared


#: The memory parameter of each function (``infra.config.StackParameters.memory_mb``).
MEMORY = {
    "api_function": "ingest_api",
    "queue_function": "ingest_queue",
    "stream_function": "ingest_stream",
    "query": "query",
    "scaler": "scaler",
}


def test_each_function_gets_its_own_measured_memory_size(dev: Synth) -> None:
    sizes = {}
    for name, fn in _functions(dev).items():
        props = dev.resources[dev.logical_id(fn.function)]["Properties"]
        sizes[name] = props["MemorySize"]
        assert props["MemorySize"] == FUNCTION_MEMORY_MB[MEMORY[name]], name
    # Sized from bench/results/memory.json: the batch and scatter-gather functions, whose
    # CPU work is largest, get the most (CPU is allocated in proportion to memory); none
    # gets less than 512 MB (0.29 vCPU), below which the ~300 ms of CPU a cold start
    # measured there would take over a second; none more than one vCPU (1,769 MB), past
    # which a Python function (one GIL) gains little
    assert sizes["queue_function"] > sizes["api_function"] < sizes["query"]
    assert min(sizes.values()) >= 512
    assert max(sizes.values()) <= 1769


def test_log_retention_follows_context(prod: Synth) -> None:
    for fn in _functions(prod).values():
        log_group = prod.resources[prod.logical_id(fn.log_group)]
        assert log_group["Properties"]["RetentionInDays"] == 90
        assert log_group["DeletionPolicy"] == "Retain"


def test_layer_is_arm64_for_the_pinned_runtime(dev: Synth) -> None:
    (layer,) = dev.of_type("AWS::Lambda::LayerVersion").values()
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    assert layer["Properties"]["CompatibleRuntimes"] == [names.LAMBDA_PYTHON_RUNTIME]


def test_environment_uses_the_shared_names(dev: Synth, prod: Synth) -> None:
    data_id = dev.logical_id(dev.stack.tables.data_table)
    meta_id = dev.logical_id(dev.stack.tables.metadata_table)
    services = {"query": "query", "scaler": "scaler", **dict.fromkeys(HANDLERS, "ingest")}
    parts = DynashardParameters().write_load_parts
    for name, fn in _functions(dev).items():
        props = dev.resources[dev.logical_id(fn.function)]["Properties"]
        env = dict(props["Environment"]["Variables"])
        if name == "scaler":  # what its sweep asks CloudWatch about
            assert env.pop(names.ENV_SCALER_ALARM_NAMES) == ",".join(
                f"{dev.stack.stack_name}-{spec.id}" for spec in SCALER_ALARMS
            )
            # the write-load reports it reads, one per part of the key space
            # (tests/infrastructure/test_write_load_rule.py)
            assert env.pop(names.ENV_WRITE_LOAD_RULE) == ",".join(
                f"{dev.stack.stack_name}-{WRITE_LOAD_RULE_SUFFIX}-{i}-of-{parts}"
                for i in range(parts)
            )
            # the shrink sweep's cool period (the low-water mark defaults in the function)
            assert env.pop(names.ENV_SHRINK_COOL_PERIOD_S) == "1800"
            assert names.ENV_SHRINK_UTILIZATION not in env
        if services[name] == "ingest":  # the writers put each key's part in their lines
            assert env.pop(names.ENV_WRITE_LOAD_PARTS) == str(parts)
        if name == "query":  # the key its cursors are signed with: the generated secret's
            secret_id = dev.logical_id(dev.stack.query.cursor_key.secret)
            assert env.pop(names.ENV_CURSOR_KEY) == {
                "Fn::Join": [
                    "",
                    ["{{resolve:secretsmanager:", {"Ref": secret_id}, ":SecretString:::}}"],
                ]
            }
            generate = dev.resources[secret_id]["Properties"]["GenerateSecretString"]
            assert generate == {
                "ExcludePunctuation": True,
                "IncludeSpace": False,
                "PasswordLength": 64,
            }
        assert env == {
            names.ENV_DATA_TABLE: {"Ref": data_id},
            names.ENV_METADATA_TABLE: {"Ref": meta_id},
            names.ENV_DEFAULT_SHARDS: "1",
            names.ENV_MAX_SHARDS: "1000",
            names.ENV_COOLDOWN_S: "60",
            names.ENV_METADATA_CACHE_TTL_S: "30",
            names.ENV_TIME_BUCKET: "day",
            names.ENV_PARTITION_WCU: "1000",
            names.ENV_PARTITION_RCU: "3000",
            names.ENV_TARGET_UTILIZATION: "0.8",
            names.ENV_WRITE_MAX_ATTEMPTS: "8",
            # the scaler grows; writers do not double N on their own (measured:
            # bench/results/growth_config.json)
            names.ENV_IN_BAND_GROWTH: "false",
            names.ENV_POWERTOOLS_SERVICE_NAME: services[name],
            names.ENV_POWERTOOLS_METRICS_NAMESPACE: names.METRICS_NAMESPACE,
        }, name
    scaler = prod.resources[prod.logical_id(prod.stack.scaler.function.function)]
    assert scaler["Properties"]["Environment"]["Variables"][names.ENV_MAX_SHARDS] == "64"
    # the shrink sweep's low-water mark and cool period, from the stack's context
    scaler_env = scaler["Properties"]["Environment"]["Variables"]
    assert scaler_env[names.ENV_SHRINK_UTILIZATION] == "0.3"
    assert scaler_env[names.ENV_SHRINK_COOL_PERIOD_S] == "3600"


def test_bucketed_keys_reach_every_function_only_when_set(dev: Synth, prod: Synth) -> None:
    # Given the prod context's OPS_LOG=day,THREAT#=month (dev sets none)
    for name, fn in _functions(prod).items():
        env = prod.resources[prod.logical_id(fn.function)]["Properties"]["Environment"]
        # Then every function, writers and readers alike, maps the same families
        assert env["Variables"][names.ENV_BUCKETED_KEYS] == "OPS_LOG=day,THREAT#=month", name
    for name, fn in _functions(dev).items():
        env = dev.resources[dev.logical_id(fn.function)]["Properties"]["Environment"]
        assert names.ENV_BUCKETED_KEYS not in env["Variables"], name
