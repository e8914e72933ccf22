"""What a synthesized template deploys, read into the shapes the local twin runs.

:func:`read_stack` turns a CloudFormation template (JSON) into a :class:`StackSpec`: each
function (handler, environment, timeout, memory, role, log group), each event source
mapping, queue and stream, each alarm, the schedule, the Contributor Insights rules,
the API's routes, each role's policy documents, and the list of what the twin cannot
model (:attr:`StackSpec.unmodelled`). Values stay as the template has them
(intrinsic functions included); :class:`sandbox.twin.intrinsics.Resolver` resolves
them once the twin has created the local resources they refer to. Pure: no I/O.

Source: the "AWS resource and property types reference" of the AWS CloudFormation
User Guide (property names and defaults: ``VisibilityTimeout`` 30 s, ``Timeout`` 3 s,
``MemorySize`` 128 MB, ``MaximumRetryAttempts`` 2 for asynchronous invocation).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Final

#: Resource types the twin runs; any other type is listed as not modelled.
MODELLED_TYPES: Final = frozenset(
    {
        "AWS::DynamoDB::GlobalTable",
        "AWS::DynamoDB::Table",
        "AWS::Lambda::Function",
        "AWS::Lambda::EventSourceMapping",
        "AWS::Lambda::EventInvokeConfig",
        "AWS::SQS::Queue",
        "AWS::Kinesis::Stream",
        "AWS::CloudWatch::Alarm",
        "AWS::CloudWatch::InsightRule",
        "AWS::Events::Rule",
        "AWS::IAM::Role",
        "AWS::IAM::Policy",
        "AWS::SecretsManager::Secret",
        "AWS::ApiGateway::RestApi",
        "AWS::ApiGateway::Resource",
        "AWS::ApiGateway::Method",
    }
)

#: What the twin knowingly leaves out of what it runs, said once at start-up.
KNOWN_GAPS: Final = (
    "Lambda runtime and architecture (python3.12 on arm64): the functions run in this "
    "Python, in this process, one module copy per execution environment",
    "Lambda MemorySize: passed to the context (memory_limit_in_mb), not enforced",
    "the layer: the library runs from this checkout, not from the bundled layer asset",
    "X-Ray tracing and CloudWatch Logs delivery (log groups, retention, LoggingConfig "
    "levels): logs go to this process's logging, tracing is off",
    "API Gateway authorization (AWS_IAM or API key), request validators and models, "
    "stage throttling and usage plans: the local gateway calls the function directly",
    "encryption at rest (KMS, SSE-SQS) and retention periods of queues and the stream",
    "resource-based policies (Lambda permissions, SQS queue policies) and role trust "
    "policies: only identity-based policies of the functions' roles are checked",
    "IAM condition keys: statements are matched on action and resource only",
    "Lambda Timeout: an invocation that outlasts it is counted and logged, not stopped "
    "(a thread cannot be killed, and this machine is slower than Lambda's)",
    "alarms without an action on a function (the queue-depth alarms) are not evaluated",
    "asynchronous invocation (AWS::Lambda::EventInvokeConfig): the alarms and the schedule "
    "invoke the scaler synchronously; a failed run is reported, not retried twice and "
    "sent to its on-failure queue",
    "Kinesis MaximumRecordAgeInSeconds: records never expire locally",
    "FIFO deduplication scope and throughput limit (DeduplicationScope, "
    "FifoThroughputLimit): moto deduplicates across the queue",
)


class TemplateError(ValueError):
    """The template lacks something the twin needs (a handler's code, a route's target)."""


def _id(value: Any) -> str:
    """Logical id named by ``Ref`` or ``Fn::GetAtt`` (an ARN) in ``value``."""
    if isinstance(value, Mapping):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            target = value["Fn::GetAtt"]
            return str(target[0] if isinstance(target, list) else str(target).split(".")[0])
    raise TemplateError(f"expected a Ref or Fn::GetAtt, got {value!r}")


@dataclass(frozen=True)
class FunctionSpec:
    """One ``AWS::Lambda::Function``.

    Attributes
    ----------
    logical_id : str
        Its logical id.
    handler : str
        ``module:attribute`` in this repository, e.g. ``functions.ingest.app:api_handler``
        (the code asset's folder, from ``aws:asset:path``, plus ``Handler``).
    environment : dict
        ``Environment.Variables``, unresolved.
    timeout_s : int
        ``Timeout``, seconds (default 3).
    memory_mb : int
        ``MemorySize``, MB (default 128).
    role_id : str
        Logical id of its execution role.
    log_group_id : str or None
        Logical id of its ``LoggingConfig.LogGroup``.
    reserved_concurrency : int or None
        ``ReservedConcurrentExecutions``.
    """

    logical_id: str
    handler: str
    environment: dict[str, Any]
    timeout_s: int
    memory_mb: int
    role_id: str
    log_group_id: str | None
    reserved_concurrency: int | None


@dataclass(frozen=True)
class EventSourceMappingSpec:
    """One ``AWS::Lambda::EventSourceMapping`` (SQS or Kinesis).

    Attributes
    ----------
    logical_id, function_id, source_id : str
        The mapping, its function and its queue or stream (logical ids).
    batch_size : int
        ``BatchSize`` (default 10 for SQS, 100 for Kinesis).
    maximum_batching_window_s : int
        ``MaximumBatchingWindowInSeconds`` (default 0).
    bisect_batch_on_function_error : bool
        ``BisectBatchOnFunctionError``.
    maximum_retry_attempts : int
        ``MaximumRetryAttempts`` (default -1: until the record expires).
    maximum_record_age_s : int
        ``MaximumRecordAgeInSeconds`` (default -1: the stream's retention).
    report_batch_item_failures : bool
        ``FunctionResponseTypes`` has ``ReportBatchItemFailures``.
    maximum_concurrency : int or None
        ``ScalingConfig.MaximumConcurrency`` (SQS).
    on_failure_id : str or None
        Logical id of ``DestinationConfig.OnFailure.Destination``.
    starting_position : str or None
        ``StartingPosition`` (Kinesis).
    """

    logical_id: str
    function_id: str
    source_id: str
    batch_size: int
    maximum_batching_window_s: int
    bisect_batch_on_function_error: bool
    maximum_retry_attempts: int
    maximum_record_age_s: int
    report_batch_item_failures: bool
    maximum_concurrency: int | None
    on_failure_id: str | None
    starting_position: str | None


@dataclass(frozen=True)
class QueueSpec:
    """One ``AWS::SQS::Queue``.

    Attributes
    ----------
    logical_id : str
        Its logical id.
    visibility_timeout_s : int
        ``VisibilityTimeout`` (default 30).
    fifo : bool
        ``FifoQueue``.
    content_based_deduplication : bool
        ``ContentBasedDeduplication``.
    dead_letter_id : str or None
        Logical id of ``RedrivePolicy.deadLetterTargetArn``.
    max_receive_count : int or None
        ``RedrivePolicy.maxReceiveCount``.
    """

    logical_id: str
    visibility_timeout_s: int
    fifo: bool
    content_based_deduplication: bool
    dead_letter_id: str | None
    max_receive_count: int | None


@dataclass(frozen=True)
class StreamSpec:
    """One ``AWS::Kinesis::Stream``.

    Attributes
    ----------
    logical_id : str
        Its logical id.
    shard_count : int
        ``ShardCount``; an ``ON_DEMAND`` stream starts with
        :data:`ON_DEMAND_INITIAL_SHARDS` (4 MB/s of writes, the on-demand default).
    on_demand : bool
        ``StreamModeDetails.StreamMode`` is ``ON_DEMAND``.
    """

    logical_id: str
    shard_count: int
    on_demand: bool


#: Shards of a new on-demand stream: its default write capacity, 4 MB/s or 4,000
#: records/s, is four shards' worth ("Choose the data stream capacity mode", Amazon
#: Kinesis Data Streams Developer Guide).
ON_DEMAND_INITIAL_SHARDS: Final = 4


@dataclass(frozen=True)
class AlarmTemplate:
    """One ``AWS::CloudWatch::Alarm``, as the template has it.

    Attributes
    ----------
    logical_id : str
        Its logical id.
    properties : dict
        ``Properties`` (``AlarmName``, ``MetricName``, ``Dimensions``, ``Statistic``,
        ``Period``, ``EvaluationPeriods``, ``DatapointsToAlarm``, ``Threshold``,
        ``ComparisonOperator``, ``TreatMissingData``, ``AlarmActions``), unresolved.
    """

    logical_id: str
    properties: dict[str, Any]

    @property
    def action_ids(self) -> tuple[str, ...]:
        """Tuple of str: Logical ids of the resources ``AlarmActions`` invoke."""
        return tuple(_id(a) for a in self.properties.get("AlarmActions", []))


@dataclass(frozen=True)
class ScheduleSpec:
    """One ``AWS::Events::Rule`` with a ``ScheduleExpression``.

    Attributes
    ----------
    logical_id : str
        Its logical id.
    rate_s : float
        The period of ``rate(N unit)``, seconds.
    target_ids : tuple of str
        Logical ids of the functions it invokes.
    enabled : bool
        ``State`` is ``ENABLED``.
    """

    logical_id: str
    rate_s: float
    target_ids: tuple[str, ...]
    enabled: bool


@dataclass(frozen=True)
class RouteSpec:
    """One API method: ``(HttpMethod, full resource path)`` and its function.

    Attributes
    ----------
    method : str
        HTTP method.
    resource : str
        Resource path template, e.g. ``/counters/{name}``.
    function_id : str
        Logical id of the function of its proxy integration.
    """

    method: str
    resource: str
    function_id: str


@dataclass(frozen=True)
class InvokeConfigSpec:
    """An ``AWS::Lambda::EventInvokeConfig``: asynchronous invocation of one function.

    Attributes
    ----------
    function_id : str
        The function.
    maximum_retry_attempts : int
        Retries after a failed asynchronous invocation (default 2).
    on_failure_id : str or None
        Logical id of the on-failure destination.
    """

    function_id: str
    maximum_retry_attempts: int
    on_failure_id: str | None


@dataclass
class StackSpec:
    """What a template deploys, by kind (see the module docstring).

    Attributes
    ----------
    functions, queues, streams : dict
        Logical id to spec.
    tables : dict of str to dict
        Logical id of each table to its ``Properties``.
    mappings : list of EventSourceMappingSpec
        Event source mappings.
    alarms : list of AlarmTemplate
        Alarms.
    schedules : list of ScheduleSpec
        Scheduled rules.
    insight_rules : dict of str to Any
        Logical id of each Contributor Insights rule to its ``RuleBody`` (unresolved).
    routes : list of RouteSpec
        The API's methods.
    policies : dict of str to list of dict
        Role logical id to the policy documents attached to it (unresolved).
    invoke_configs : dict of str to InvokeConfigSpec
        Function logical id to its asynchronous invocation settings.
    unmodelled : list of str
        What the twin does not run: :data:`KNOWN_GAPS` and one line per resource type
        outside :data:`MODELLED_TYPES`, with its count.
    """

    functions: dict[str, FunctionSpec] = field(default_factory=dict)
    queues: dict[str, QueueSpec] = field(default_factory=dict)
    streams: dict[str, StreamSpec] = field(default_factory=dict)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    mappings: list[EventSourceMappingSpec] = field(default_factory=list)
    alarms: list[AlarmTemplate] = field(default_factory=list)
    schedules: list[ScheduleSpec] = field(default_factory=list)
    insight_rules: dict[str, Any] = field(default_factory=dict)
    routes: list[RouteSpec] = field(default_factory=list)
    policies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    invoke_configs: dict[str, InvokeConfigSpec] = field(default_factory=dict)
    unmodelled: list[str] = field(default_factory=list)

    def function_by_handler(self, handler: str) -> FunctionSpec:
        """Return the one function whose handler is ``handler``.

        Parameters
        ----------
        handler : str
            ``module:attribute``.

        Returns
        -------
        FunctionSpec
            The function.

        Raises
        ------
        TemplateError
            When no function, or more than one, has that handler.
        """
        found = [f for f in self.functions.values() if f.handler == handler]
        if len(found) != 1:
            raise TemplateError(f"{len(found)} functions have the handler {handler!r}")
        return found[0]

    def mapping_of(self, function_id: str) -> EventSourceMappingSpec:
        """Return the one event source mapping of a function.

        Raises
        ------
        TemplateError
            When the function has none or several.
        """
        found = [m for m in self.mappings if m.function_id == function_id]
        if len(found) != 1:
            raise TemplateError(f"{len(found)} event source mappings invoke {function_id}")
        return found[0]


_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_UNIT_S = {"minute": 60, "hour": 3600, "day": 86400}


def rate_seconds(expression: str) -> float:
    """Return the period of an EventBridge ``rate()`` expression, seconds.

    Parameters
    ----------
    expression : str
        E.g. ``rate(1 minute)`` or ``rate(5 minutes)``.

    Returns
    -------
    float
        Seconds between invocations.

    Raises
    ------
    TemplateError
        For a ``cron()`` expression or a malformed rate (the twin runs rates only).

    Examples
    --------
    >>> rate_seconds("rate(5 minutes)")
    300.0
    """
    match = _RATE.match(expression.strip())
    if match is None:
        raise TemplateError(f"schedule {expression!r}: only rate() expressions run locally")
    return float(int(match.group(1)) * _UNIT_S[match.group(2).rstrip("s")])


def _handler(repo_root: PurePath, logical_id: str, resource: Mapping[str, Any]) -> str:
    asset = resource.get("Metadata", {}).get("aws:asset:path")
    if not asset:
        raise TemplateError(
            f"{logical_id}: no aws:asset:path metadata; synthesize with "
            "aws:cdk:enable-asset-metadata and aws:cdk:disable-asset-staging"
        )
    folder = PurePath(asset)
    try:
        package = folder.relative_to(repo_root).parts
    except ValueError as exc:
        raise TemplateError(f"{logical_id}: code asset {asset} is outside the repository") from exc
    module, _, attribute = str(resource["Properties"]["Handler"]).rpartition(".")
    return f"{'.'.join((*package, module))}:{attribute}"


def _routes(resources: Mapping[str, Mapping[str, Any]]) -> list[RouteSpec]:
    parts = {
        rid: r["Properties"]
        for rid, r in resources.items()
        if r["Type"] == "AWS::ApiGateway::Resource"
    }

    def path(rid: str) -> str:
        props = parts[rid]
        parent = props["ParentId"]
        prefix = path(parent["Ref"]) if isinstance(parent, Mapping) and "Ref" in parent else ""
        return f"{prefix}/{props['PathPart']}"

    routes = []
    for rid, r in resources.items():
        if r["Type"] != "AWS::ApiGateway::Method":
            continue
        props = r["Properties"]
        if props["HttpMethod"] == "OPTIONS":
            continue
        target = props.get("ResourceId", {})
        resource = path(target["Ref"]) if "Ref" in target else "/"
        uri = props.get("Integration", {}).get("Uri")
        functions = [
            fid
            for fid, f in resources.items()
            if f["Type"] == "AWS::Lambda::Function" and fid in repr(uri)
        ]
        if not functions:  # SnapStart: the method invokes an alias of a published version
            functions = [
                a["Properties"]["FunctionName"]["Ref"]
                for aid, a in resources.items()
                if a["Type"] == "AWS::Lambda::Alias" and aid in repr(uri)
            ]
        if len(functions) != 1:
            raise TemplateError(f"{rid}: {props['HttpMethod']} {resource} has no function")
        routes.append(RouteSpec(props["HttpMethod"], resource, functions[0]))
    return routes


def read_stack(template: Mapping[str, Any], repo_root: PurePath) -> StackSpec:
    """Read a synthesized template into a :class:`StackSpec`.

    Parameters
    ----------
    template : mapping
        The template's JSON.
    repo_root : pathlib.PurePath
        The repository the code assets are in (handlers become dotted module paths
        relative to it).

    Returns
    -------
    StackSpec
        Everything the twin runs, and what it does not.

    Raises
    ------
    TemplateError
        When a function has no code asset path or a route no function.
    """
    resources: Mapping[str, Mapping[str, Any]] = template["Resources"]
    spec = StackSpec(unmodelled=list(KNOWN_GAPS))
    skipped: dict[str, int] = {}
    for rid, r in resources.items():
        kind, props = r["Type"], r.get("Properties", {})
        if kind not in MODELLED_TYPES:
            skipped[kind] = skipped.get(kind, 0) + 1
        elif kind in {"AWS::DynamoDB::GlobalTable", "AWS::DynamoDB::Table"}:
            spec.tables[rid] = dict(props)
        elif kind == "AWS::Lambda::Function":
            log_group = props.get("LoggingConfig", {}).get("LogGroup")
            spec.functions[rid] = FunctionSpec(
                logical_id=rid,
                handler=_handler(repo_root, rid, r),
                environment=dict(props.get("Environment", {}).get("Variables", {})),
                timeout_s=int(props.get("Timeout", 3)),
                memory_mb=int(props.get("MemorySize", 128)),
                role_id=_id(props["Role"]),
                log_group_id=_id(log_group) if log_group else None,
                reserved_concurrency=props.get("ReservedConcurrentExecutions"),
            )
        elif kind == "AWS::Lambda::EventSourceMapping":
            on_failure = props.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
            spec.mappings.append(
                EventSourceMappingSpec(
                    logical_id=rid,
                    function_id=_id(props["FunctionName"]),
                    source_id=_id(props["EventSourceArn"]),
                    batch_size=int(props.get("BatchSize", 0)),
                    maximum_batching_window_s=int(props.get("MaximumBatchingWindowInSeconds", 0)),
                    bisect_batch_on_function_error=bool(
                        props.get("BisectBatchOnFunctionError", False)
                    ),
                    maximum_retry_attempts=int(props.get("MaximumRetryAttempts", -1)),
                    maximum_record_age_s=int(props.get("MaximumRecordAgeInSeconds", -1)),
                    report_batch_item_failures="ReportBatchItemFailures"
                    in props.get("FunctionResponseTypes", []),
                    maximum_concurrency=props.get("ScalingConfig", {}).get("MaximumConcurrency"),
                    on_failure_id=_id(on_failure) if on_failure else None,
                    starting_position=props.get("StartingPosition"),
                )
            )
        elif kind == "AWS::Lambda::EventInvokeConfig":
            on_failure = props.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
            function_id = _id(props["FunctionName"])
            spec.invoke_configs[function_id] = InvokeConfigSpec(
                function_id,
                int(props.get("MaximumRetryAttempts", 2)),
                _id(on_failure) if on_failure else None,
            )
        elif kind == "AWS::SQS::Queue":
            redrive = props.get("RedrivePolicy") or {}
            spec.queues[rid] = QueueSpec(
                logical_id=rid,
                visibility_timeout_s=int(props.get("VisibilityTimeout", 30)),
                fifo=bool(props.get("FifoQueue", False)),
                content_based_deduplication=bool(props.get("ContentBasedDeduplication", False)),
                dead_letter_id=_id(redrive["deadLetterTargetArn"]) if redrive else None,
                max_receive_count=int(redrive["maxReceiveCount"]) if redrive else None,
            )
        elif kind == "AWS::Kinesis::Stream":
            on_demand = props.get("StreamModeDetails", {}).get("StreamMode") == "ON_DEMAND"
            shards = ON_DEMAND_INITIAL_SHARDS if on_demand else int(props.get("ShardCount", 1))
            spec.streams[rid] = StreamSpec(rid, shards, on_demand)
        elif kind == "AWS::CloudWatch::Alarm":
            spec.alarms.append(AlarmTemplate(rid, dict(props)))
        elif kind == "AWS::CloudWatch::InsightRule":
            spec.insight_rules[rid] = props["RuleBody"]
        elif kind == "AWS::Events::Rule" and "ScheduleExpression" in props:
            spec.schedules.append(
                ScheduleSpec(
                    logical_id=rid,
                    rate_s=rate_seconds(props["ScheduleExpression"]),
                    target_ids=tuple(_id(t["Arn"]) for t in props.get("Targets", [])),
                    enabled=props.get("State", "ENABLED") == "ENABLED",
                )
            )
        elif kind == "AWS::SecretsManager::Secret":
            # Generated locally by the twin (LocalTwin.secrets), for the dynamic references
            # of the functions' environment; no Secrets Manager API is run.
            spec.unmodelled.append(
                f"{rid}: a secret generated locally for the functions' environment "
                "(a new value each run); the Secrets Manager API is not run"
            )
        elif kind == "AWS::IAM::Policy":
            for role in props.get("Roles", []):
                spec.policies.setdefault(_id(role), []).append(props["PolicyDocument"])
        elif kind == "AWS::IAM::Role":
            spec.policies.setdefault(rid, [])
            spec.policies[rid].extend(p["PolicyDocument"] for p in props.get("Policies", []))
            if props.get("ManagedPolicyArns"):
                spec.unmodelled.append(
                    f"{rid}: managed policies are not evaluated (only inline and "
                    "AWS::IAM::Policy statements are)"
                )
    spec.routes = _routes(resources)
    spec.unmodelled += [f"{kind} ({n}): not run locally" for kind, n in sorted(skipped.items())]
    return spec
