"""The local twin: the synthesized template read, its references resolved, its roles checked.

The template tests (marked ``infra``) synthesize the stack once per parameter set
(:func:`sandbox.twin.LocalTwin.load`, kept under ``.twin/``) and hold what the twin reads
to the stack's parameters (:class:`infra.config.StackParameters`); the resolver, the
request checks and the policy evaluation are pure.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from dynashard import names
from infra.config import StackParameters
from sandbox.twin import LocalTwin
from sandbox.twin.iam import RolePolicy, request_checks
from sandbox.twin.intrinsics import LocalResource, Resolver, UnresolvedReferenceError
from sandbox.twin.runtime import resolve_dynamic_references
from sandbox.twin.stack import TemplateError, rate_seconds
from tests.infrastructure.conftest import PROD_CONTEXT

API = "functions.ingest.app:api_handler"
SQS = "functions.ingest.app:sqs_handler"
KINESIS = "functions.ingest.app:kinesis_handler"
QUERY = "functions.query.app:handler"
SCALER = "functions.scaler.app:handler"

#: The API's methods (tests/infrastructure/test_api.py holds the same list to the stack).
ROUTES = {
    ("POST", "/events"): API,
    ("POST", "/counters/{name}"): API,
    ("GET", "/events"): QUERY,
    ("GET", "/counters/{name}"): QUERY,
    ("GET", "/shards/{key}"): QUERY,
    ("PUT", "/index/{key}/layout"): API,
    ("POST", "/index/{key}"): API,
    ("GET", "/index/{key}"): QUERY,
    ("PUT", "/shards/{key}/strategy"): API,
    ("PUT", "/shards/{key}/max-shards"): API,
}

REGION, ACCOUNT = "us-east-1", "000000000000"
TABLE_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table"


# --- the template, read -------------------------------------------------------------------
@pytest.fixture(scope="module")
def dev() -> LocalTwin:
    """The twin of the stack with every parameter at its default, tables bound."""
    twin = LocalTwin.load(region=REGION)
    twin.bind_tables({"DataTable": "data-t", "MetadataTable": "meta-t"})
    return twin


@pytest.fixture(scope="module")
def prod() -> LocalTwin:
    """The twin of the stack with :data:`PROD_CONTEXT` (every option away from its default)."""
    twin = LocalTwin.load(PROD_CONTEXT, region=REGION)
    twin.bind_tables({"DataTable": "data-t", "MetadataTable": "meta-t"})
    return twin


@pytest.mark.infra
def test_dev_functions_are_the_stacks_handlers_with_its_timeout_and_memory(dev: LocalTwin) -> None:
    params = StackParameters()
    functions = {f.handler: f for f in dev.spec.functions.values()}
    assert set(functions) == {API, SQS, KINESIS, QUERY, SCALER}
    memory = {
        API: params.memory_mb("ingest_api"),
        SQS: params.memory_mb("ingest_queue"),
        KINESIS: params.memory_mb("ingest_stream"),
        QUERY: params.memory_mb("query"),
        SCALER: params.memory_mb("scaler"),
    }
    for handler, fn in functions.items():
        assert fn.timeout_s == params.function_timeout_s, handler
        assert fn.memory_mb == memory[handler], handler
        assert dev.spec.policies[fn.role_id], f"{handler}: its role has no policy"
    assert functions[SCALER].reserved_concurrency == params.scaler_reserved_concurrency
    # Each function's table references resolve to the bound local tables.
    env = dev.function_environment(functions[SQS].logical_id)
    assert (env["DYNASHARD_DATA_TABLE"], env["DYNASHARD_METADATA_TABLE"]) == ("data-t", "meta-t")
    # The LocalFunction the twin hands out is named, timed and sized as the template says.
    fn = dev.function(SQS)
    assert fn.name == f"dynashard-dev-{functions[SQS].logical_id}"
    assert (fn.timeout_s, fn.memory_mb) == (params.function_timeout_s, memory[SQS])
    assert fn.role is dev.role(functions[SQS].logical_id)


@pytest.mark.infra
def test_dev_event_source_mappings_and_their_queues(dev: LocalTwin) -> None:
    params = StackParameters()
    sqs = dev.spec.mapping_of(dev.function_spec(SQS).logical_id)
    assert (sqs.batch_size, sqs.maximum_batching_window_s) == (params.sqs_batch_size, 0)
    assert sqs.report_batch_item_failures and sqs.on_failure_id is None
    queue = dev.spec.queues[sqs.source_id]
    assert queue.visibility_timeout_s == 6 * params.function_timeout_s
    assert queue.max_receive_count == params.queue_max_receive_count
    assert not queue.fifo
    assert queue.dead_letter_id in dev.spec.queues

    kinesis = dev.spec.mapping_of(dev.function_spec(KINESIS).logical_id)
    assert kinesis.batch_size == params.kinesis_batch_size
    assert kinesis.maximum_retry_attempts == params.kinesis_retry_attempts
    assert kinesis.maximum_record_age_s == params.kinesis_max_record_age_s
    assert kinesis.bisect_batch_on_function_error and kinesis.report_batch_item_failures
    assert kinesis.starting_position == "TRIM_HORIZON"
    assert kinesis.on_failure_id in dev.spec.queues
    stream = dev.spec.streams[kinesis.source_id]
    assert stream.on_demand and stream.shard_count == 4

    # What the pollers run: the same settings, with Lambda's defaults where AWS sets them.
    local_sqs = dev.sqs_mapping(SQS)
    assert (local_sqs.batch_size, local_sqs.concurrency) == (params.sqs_batch_size, 5)
    local_kinesis = dev.kinesis_mapping(KINESIS, retry_backoff_s=0.5)
    assert local_kinesis.maximum_retry_attempts == params.kinesis_retry_attempts
    assert local_kinesis.bisect_batch_on_function_error
    assert local_kinesis.retry_backoff_s == 0.5  # a local knob, passed through


@pytest.mark.infra
def test_dev_alarms_schedule_insight_rule_and_routes(dev: LocalTwin) -> None:
    scaler = dev.function_spec(SCALER).logical_id
    alarms = dev.scaler_alarms(SCALER)
    assert sorted(name for name, _ in alarms) == sorted(
        f"dynashard-dev-{n}"
        for n in (
            "TableWriteKeyRange",
            "Gsi1WriteKeyRange",
            "TableReadKeyRange",
            "Gsi1ReadKeyRange",
        )
    )
    assert {spec.metric_name for _, spec in alarms} == {
        "WriteKeyRangeThroughputThrottleEvents",
        "ReadKeyRangeThroughputThrottleEvents",
    }
    assert {spec.index_name for _, spec in alarms} == {None, "GSI1"}
    for alarm in dev.spec.alarms:
        if scaler in alarm.action_ids:
            assert dev.alarm_table(alarm.logical_id) == "data-t"
    # The queue-depth alarms act on nothing the twin runs.
    assert any(not a.action_ids for a in dev.spec.alarms)
    assert dev.sweep_rate_s(SCALER) == 60.0
    # The write-load rules, one per part of the key space, each read from the template
    rules = dev.function_environment(scaler)["DYNASHARD_WRITE_LOAD_RULE"].split(",")
    assert len(rules) > 1
    for part, rule in enumerate(rules):
        body, readers = dev.insight_rule_body(rule)
        assert json.loads(body)["LogGroupNames"]
        assert {"Match": "$.part", "EqualTo": part} in json.loads(body)["Contribution"]["Filters"]
        assert set(readers) == {API, SQS, KINESIS}
    routes = dev.routes()
    assert len(routes) == len(ROUTES)
    assert {(m, r): h for m, r, h in routes} == ROUTES


@pytest.mark.infra
def test_dev_describe_names_the_template_and_what_is_not_modelled(dev: LocalTwin) -> None:
    lines = dev.describe()
    assert lines[0].startswith("Template:") and "dynashard-dev" in lines[0]
    assert "5 functions, 10 routes" in lines[0]
    assert "Not modelled locally:" in lines
    assert any("AWS::Lambda::Permission" in line for line in lines)


@pytest.mark.infra
def test_prod_context_reaches_what_the_twin_runs(prod: LocalTwin) -> None:
    params = StackParameters.model_validate(PROD_CONTEXT)
    assert prod.source.stack_name == "dynashard-prod"
    sqs = prod.spec.mapping_of(prod.function_spec(SQS).logical_id)
    queue = prod.spec.queues[sqs.source_id]
    assert queue.max_receive_count == params.queue_max_receive_count == 7
    assert queue.fifo and not queue.content_based_deduplication
    assert queue.dead_letter_id is not None and prod.spec.queues[queue.dead_letter_id].fifo
    kinesis = prod.spec.mapping_of(prod.function_spec(KINESIS).logical_id)
    assert kinesis.maximum_retry_attempts == params.kinesis_retry_attempts == 4
    assert prod.kinesis_mapping(KINESIS).maximum_retry_attempts == 4
    env = prod.function_environment(prod.function_spec(API).logical_id)
    assert env["DYNASHARD_MAX_SHARDS"] == "64"
    assert env["DYNASHARD_BUCKETED_KEYS"] == PROD_CONTEXT["bucketed_keys"]
    assert json.loads(env["DYNASHARD_KEY_SETTINGS"])[0]["key"] == "DEPARTURES#JFK"
    assert prod.function_environment(prod.function_spec(SCALER).logical_id)[
        "DYNASHARD_SHRINK_COOL_PERIOD_S"
    ] in {"3600", "3600.0"}
    # A FIFO queue's CreateQueue attributes, as the template sets them.
    prod.bind_queue(queue.dead_letter_id, "http://localhost/000000000000/dlq.fifo")
    attributes = prod.queue_attributes(sqs.source_id)
    assert attributes["FifoQueue"] == "true"
    assert attributes["ContentBasedDeduplication"] == "false"
    assert json.loads(attributes["RedrivePolicy"])["maxReceiveCount"] == 7
    assert {(m, r) for m, r, _ in prod.routes()} == set(ROUTES)


@pytest.mark.infra
def test_the_ingest_roles_allow_their_writes_and_nothing_else(dev: LocalTwin) -> None:
    role = dev.role(dev.function_spec(SQS).logical_id)
    assert role.allows("dynamodb:BatchWriteItem", f"{TABLE_ARN}/data-t")
    assert role.allows("dynamodb:UpdateItem", f"{TABLE_ARN}/meta-t")
    assert not role.allows("dynamodb:Query", f"{TABLE_ARN}/data-t/index/GSI1")
    assert not role.allows("dynamodb:DeleteTable", f"{TABLE_ARN}/data-t")
    assert not role.allows("dynamodb:BatchWriteItem", f"{TABLE_ARN}/another-table")
    query = dev.role(dev.function_spec(QUERY).logical_id)
    assert query.allows("dynamodb:Query", f"{TABLE_ARN}/data-t")
    assert not query.allows("dynamodb:BatchWriteItem", f"{TABLE_ARN}/data-t")


# --- intrinsic functions ------------------------------------------------------------------
@pytest.fixture
def resolver() -> Resolver:
    return Resolver(
        REGION,
        {
            "Table": LocalResource("data-t", {"Arn": f"{TABLE_ARN}/data-t"}),
            "Queue": LocalResource("http://q/1/ingest", {"Arn": "arn:q", "QueueName": "ingest"}),
        },
    )


def test_ref_and_get_att_resolve_to_the_bound_resources(resolver: Resolver) -> None:
    assert resolver.resolve({"Ref": "Table"}) == "data-t"
    assert resolver.resolve({"Fn::GetAtt": ["Table", "Arn"]}) == f"{TABLE_ARN}/data-t"
    assert resolver.resolve({"Fn::GetAtt": "Queue.QueueName"}) == "ingest"
    assert resolver.resolve({"Ref": "AWS::Region"}) == REGION
    assert resolver.resolve({"Ref": "AWS::AccountId"}) == ACCOUNT


def test_join_sub_select_and_split(resolver: Resolver) -> None:
    join = {"Fn::Join": ["", [{"Fn::GetAtt": ["Table", "Arn"]}, "/index/*"]]}
    assert resolver.resolve(join) == f"{TABLE_ARN}/data-t/index/*"
    sub = {"Fn::Sub": "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:${Table}"}
    assert resolver.resolve(sub) == f"arn:aws:logs:{REGION}:{ACCOUNT}:data-t"
    sub_vars = {"Fn::Sub": ["${Name}-${Queue.QueueName}", {"Name": {"Ref": "Table"}}]}
    assert resolver.resolve(sub_vars) == "data-t-ingest"
    assert resolver.resolve({"Fn::Sub": "${!Literal}"}) == "${!Literal}"
    select = {"Fn::Select": [1, {"Fn::Split": ["/", {"Fn::GetAtt": ["Table", "Arn"]}]}]}
    assert resolver.resolve(select) == "data-t"
    nested = {"Statement": [{"Resource": [{"Ref": "Table"}, "literal"]}]}
    assert resolver.resolve(nested) == {"Statement": [{"Resource": ["data-t", "literal"]}]}


def test_an_unknown_reference_is_an_error_naming_it(resolver: Resolver) -> None:
    with pytest.raises(UnresolvedReferenceError, match="Nowhere"):
        resolver.resolve({"Ref": "Nowhere"})
    with pytest.raises(UnresolvedReferenceError, match=r"Table\.StreamArn"):
        resolver.resolve({"Fn::GetAtt": ["Table", "StreamArn"]})


def test_only_rate_schedules_run_locally() -> None:
    assert rate_seconds("rate(1 minute)") == 60.0
    assert rate_seconds("rate(2 hours)") == 7200.0
    with pytest.raises(TemplateError, match="rate"):
        rate_seconds("cron(0 12 * * ? *)")


# --- what each request is authorized on ---------------------------------------------------
def _checks(service: str, operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    return request_checks(service, operation, params, REGION, ACCOUNT)


def test_a_query_of_an_index_is_authorized_on_the_index() -> None:
    assert _checks("dynamodb", "Query", {"TableName": "data-t", "IndexName": "GSI1"}) == [
        ("dynamodb:Query", f"{TABLE_ARN}/data-t/index/GSI1")
    ]
    assert _checks("dynamodb", "GetItem", {"TableName": "data-t", "Key": {}}) == [
        ("dynamodb:GetItem", f"{TABLE_ARN}/data-t")
    ]


def test_a_batch_is_authorized_on_every_table_it_names() -> None:
    params = {"RequestItems": {"data-t": [], "meta-t": []}}
    assert sorted(_checks("dynamodb", "BatchWriteItem", params)) == [
        ("dynamodb:BatchWriteItem", f"{TABLE_ARN}/data-t"),
        ("dynamodb:BatchWriteItem", f"{TABLE_ARN}/meta-t"),
    ]
    assert _checks("dynamodb", "BatchGetItem", {"RequestItems": {"meta-t": {}}}) == [
        ("dynamodb:BatchGetItem", f"{TABLE_ARN}/meta-t")
    ]


def test_a_transaction_is_authorized_per_item_as_its_underlying_action() -> None:
    params = {
        "TransactItems": [
            {"Put": {"TableName": "data-t", "Item": {}}},
            {"Update": {"TableName": "meta-t", "Key": {}}},
            {"ConditionCheck": {"TableName": "meta-t", "Key": {}}},
            {"Delete": {"TableName": "data-t", "Key": {}}},
            {"Put": {"TableName": "data-t", "Item": {}}},  # the same pair once
        ]
    }
    assert _checks("dynamodb", "TransactWriteItems", params) == [
        ("dynamodb:ConditionCheckItem", f"{TABLE_ARN}/meta-t"),
        ("dynamodb:DeleteItem", f"{TABLE_ARN}/data-t"),
        ("dynamodb:PutItem", f"{TABLE_ARN}/data-t"),
        ("dynamodb:UpdateItem", f"{TABLE_ARN}/meta-t"),
    ]
    gets = {"TransactItems": [{"Get": {"TableName": "meta-t", "Key": {}}}]}
    assert _checks("dynamodb", "TransactGetItems", gets) == [
        ("dynamodb:GetItem", f"{TABLE_ARN}/meta-t")
    ]


def test_sqs_kinesis_and_cloudwatch_requests_name_their_resources() -> None:
    url = "http://127.0.0.1:4566/000000000000/ingest.fifo"
    assert _checks("sqs", "SendMessage", {"QueueUrl": url}) == [
        ("sqs:SendMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:ingest.fifo")
    ]
    assert _checks("kinesis", "PutRecord", {"StreamName": "s"}) == [
        ("kinesis:PutRecord", f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/s")
    ]
    assert _checks("kinesis", "GetRecords", {"StreamARN": "arn:aws:kinesis:x:1:stream/s"}) == [
        ("kinesis:GetRecords", "arn:aws:kinesis:x:1:stream/s")
    ]
    # botocore's "cloudwatch" is IAM's "cloudwatch"; PutMetricData has no resource.
    assert _checks("cloudwatch", "PutMetricData", {"Namespace": "n"}) == [
        ("cloudwatch:PutMetricData", "*")
    ]
    assert _checks("cloudwatch", "DescribeAlarms", {"AlarmNames": ["a", "b"]}) == [
        ("cloudwatch:DescribeAlarms", f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:a"),
        ("cloudwatch:DescribeAlarms", f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:b"),
    ]
    assert _checks("cloudwatch", "GetInsightRuleReport", {"RuleName": "r"}) == [
        ("cloudwatch:GetInsightRuleReport", f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:insight-rule/r")
    ]


# --- policy evaluation --------------------------------------------------------------------
def _role(*statements: dict[str, Any]) -> RolePolicy:
    return RolePolicy(
        role_name="IngestRole",
        session_name="dynashard-dev-Ingest",
        documents=[{"Version": "2012-10-17", "Statement": list(statements)}],
        region=REGION,
        account_id=ACCOUNT,
    )


def test_an_allow_with_wildcards_allows_and_anything_else_is_implicitly_denied() -> None:
    role = _role(
        {
            "Effect": "Allow",
            "Action": ["dynamodb:BatchWriteItem", "dynamodb:Get*"],
            "Resource": [f"{TABLE_ARN}/data-t", f"{TABLE_ARN}/data-t/index/*"],
        }
    )
    assert role.allows("dynamodb:BatchWriteItem", f"{TABLE_ARN}/data-t")
    assert role.allows("dynamodb:GetItem", f"{TABLE_ARN}/data-t")
    assert role.allows("dynamodb:GetItem", f"{TABLE_ARN}/data-t/index/GSI1")
    assert not role.allows("dynamodb:PutItem", f"{TABLE_ARN}/data-t")
    assert not role.allows("dynamodb:GetItem", f"{TABLE_ARN}/meta-t")


def test_an_explicit_deny_wins_over_any_allow() -> None:
    role = _role(
        {"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"},
        {"Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": f"{TABLE_ARN}/data-t"},
    )
    assert role.allows("dynamodb:PutItem", f"{TABLE_ARN}/data-t")
    assert not role.allows("dynamodb:DeleteItem", f"{TABLE_ARN}/data-t")
    assert role.allows("dynamodb:DeleteItem", f"{TABLE_ARN}/meta-t")


def test_a_denied_request_raises_awss_access_denied_naming_the_action() -> None:
    role = _role({"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": "*"})
    params = {"RequestItems": {"data-t": []}}
    with pytest.raises(ClientError) as caught:
        role.check(_checks("dynamodb", "BatchWriteItem", params))
    error = caught.value.response["Error"]
    assert error["Code"] == "AccessDeniedException"
    assert error["Message"] == (
        f"User: arn:aws:sts::{ACCOUNT}:assumed-role/IngestRole/dynashard-dev-Ingest is not "
        f"authorized to perform: dynamodb:BatchWriteItem on resource: {TABLE_ARN}/data-t "
        "because no identity-based policy allows the dynamodb:BatchWriteItem action"
    )
    assert role.checked == 1


def test_a_poller_polls_with_the_function_role_and_its_source_is_the_resource() -> None:
    # Given the dev twin with its stream and queues bound after the functions were made
    # (as the sandbox does: handlers first, then the sources)
    from botocore.exceptions import HTTPClientError

    from sandbox.twin.sources import KINESIS_HANDLER, SQS_HANDLER, poller_client

    twin = LocalTwin.load()
    twin.bind_tables({"DataTable": "d", "MetadataTable": "m"})
    stream_fn = twin.function(KINESIS_HANDLER)
    stream_id, queue_id = twin.source_of(KINESIS_HANDLER), twin.source_of(SQS_HANDLER)
    twin.bind_stream(stream_id, "s1")
    for rid in twin.spec.queues:
        twin.bind_queue(rid, f"http://127.0.0.1:9/000000000000/{rid}")
    nowhere = "http://127.0.0.1:9"
    # When the stream's poller asks for records (the request names only an iterator)
    kinesis = poller_client(twin, KINESIS_HANDLER, "kinesis", nowhere)
    with pytest.raises(HTTPClientError):  # allowed: it went on to send (sockets are off here)
        kinesis.get_records(ShardIterator="AAAA")
    # the role handed out before the stream existed was resolved again when it was bound
    assert stream_fn.role is not None and stream_fn.role.checked == 1
    # When the stream's role is used to read the SQS queue it was never granted
    stranger = poller_client(twin, KINESIS_HANDLER, "sqs", nowhere)
    queue_url = twin.resolver.ref(queue_id)
    with pytest.raises(ClientError) as denied:
        stranger.receive_message(QueueUrl=queue_url)
    # Then AWS's answer names the action and the queue
    error = denied.value.response["Error"]
    assert error["Code"] == "AccessDeniedException"
    assert "sqs:ReceiveMessage" in error["Message"] and queue_id in error["Message"]
    # and a batch delete is authorized as sqs:DeleteMessage on the SQS function's role
    sqs = poller_client(twin, SQS_HANDLER, "sqs", nowhere)
    with pytest.raises(HTTPClientError):
        sqs.delete_message_batch(QueueUrl=queue_url, Entries=[{"Id": "1", "ReceiptHandle": "r"}])


def test_the_facades_own_client_is_checked_against_the_role() -> None:
    # Given the checks installed, and a role that may only read
    from dynashard import DynashardConfig
    from dynashard.facade import make_client
    from sandbox.twin.iam import install_default, role_scope

    install_default()
    role = _role({"Effect": "Allow", "Action": "dynamodb:Query", "Resource": "*"})
    # When a function creates the facade's client (from the library's own session, whose
    # Query responses keep their items raw) and writes with it
    with role_scope(role):
        client = make_client(DynashardConfig("data-t", "meta-t", endpoint_url="http://127.0.0.1:9"))
    with pytest.raises(ClientError) as denied:
        client.batch_write_item(RequestItems={"data-t": [{"PutRequest": {"Item": {}}}]})
    # Then the write is refused before it is sent, as AWS refuses it
    error = denied.value.response["Error"]
    assert error["Code"] == "AccessDeniedException"
    assert "dynamodb:BatchWriteItem" in error["Message"]
    assert role.checked == 1


def test_clients_a_function_builds_at_init_are_checked_against_its_role(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the checks installed, a function's environment, and a role that may only Query
    import sys

    from dynashard import names
    from sandbox.local_aws.lambda_runtime import LocalFunction
    from sandbox.twin.iam import install_default

    install_default()
    monkeypatch.setenv(names.ENV_DATA_TABLE, "data-t")
    monkeypatch.setenv(names.ENV_METADATA_TABLE, "meta-t")
    monkeypatch.setenv(names.ENV_DYNAMODB_ENDPOINT, "http://127.0.0.1:9")
    monkeypatch.setenv(names.ENV_CURSOR_KEY, "k" * 64)
    role = _role({"Effect": "Allow", "Action": "dynamodb:Query", "Resource": "*"})
    function = LocalFunction("functions.query.app:handler", role=role, name="q")
    # When an execution environment is initialised (the module copy builds its facade)
    assert function.provision(1) == 1
    copy = sys.modules[
        max(
            (m for m in sys.modules if m.startswith("functions.query.app__env")),
            key=lambda m: int(m.rsplit("env", 1)[1]),
        )
    ]
    assert copy.get_facade.cached
    # Then the client built at init is the role's: a read it was not granted is refused
    with pytest.raises(ClientError) as denied:
        copy.get_facade().client.get_item(TableName="meta-t", Key={"key": {"S": "K"}})
    assert denied.value.response["Error"]["Code"] == "AccessDeniedException"
    assert "dynamodb:GetItem" in denied.value.response["Error"]["Message"]
    copy.get_facade().close()


# --- issue 39: the query function's cursor key, a secret the stack generates -------------------
def test_the_cursor_key_is_the_templates_secret_resolved_to_a_local_value(dev: LocalTwin) -> None:
    # Given the template: the query function's DYNASHARD_CURSOR_KEY is a dynamic reference
    # to the AWS::SecretsManager::Secret the stack generates (64 letters and digits)
    [query] = [
        fid for fid, fn in dev.spec.functions.items() if names.ENV_CURSOR_KEY in fn.environment
    ]
    assert dev.spec.functions[query].handler == "functions.query.app:handler"
    raw = dev.spec.functions[query].environment[names.ENV_CURSOR_KEY]
    assert "{{resolve:secretsmanager:" in json.dumps(raw)
    # When the twin resolves the function's environment
    key = dev.function_environment(query)[names.ENV_CURSOR_KEY]
    # Then it is a local value of the generated secret's shape, the same for every twin of
    # this process, in the environment the sandbox sets for every function
    assert len(key) == 64 and key.isalnum()
    assert list(LocalTwin.load(region=REGION).secrets.values()) == [key]
    assert dev.environment({})[names.ENV_CURSOR_KEY] == key


def test_a_dynamic_reference_the_twin_does_not_model_is_an_error() -> None:
    values = {"arn:s": "v"}
    assert (
        resolve_dynamic_references("a{{resolve:secretsmanager:arn:s:SecretString:::}}", values)
        == "av"
    )
    for text in (
        "{{resolve:secretsmanager:arn:other:SecretString:::}}",  # no such secret
        "{{resolve:secretsmanager:arn:s:SecretString:password::}}",  # a JSON key
    ):
        with pytest.raises(TemplateError, match="not modelled locally"):
            resolve_dynamic_references(text, values)
