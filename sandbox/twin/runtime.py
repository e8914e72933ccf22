"""The local twin: the synthesized stack's functions, sources, alarms and routes, run here.

:class:`LocalTwin` reads a synthesized template (:mod:`sandbox.twin.synth`,
:func:`sandbox.twin.stack.read_stack`) and, as the sandbox creates the local tables,
queues and stream, resolves every reference of the template to them
(:class:`sandbox.twin.intrinsics.Resolver`). From then on it hands out what the
sandbox runs, each taken from the template:

- :meth:`LocalTwin.function`: a :class:`sandbox.local_aws.lambda_runtime.LocalFunction`
  with the function's handler, name, timeout, memory, its own environment variables
  where they differ between functions, and its role (every call checked,
  :mod:`sandbox.twin.iam`);
- :meth:`LocalTwin.environment`: the variables the functions share, resolved, with the
  local overrides (endpoint, credentials, metrics and tracing off, scaled limits) named
  in :attr:`LocalTwin.overrides`;
- :meth:`LocalTwin.sqs_mapping`, :meth:`LocalTwin.kinesis_mapping`,
  :meth:`LocalTwin.queue_attributes`, :meth:`LocalTwin.stream`: the event source
  mappings and their sources;
- :meth:`LocalTwin.scaler_alarms`, :meth:`LocalTwin.sweep_rate_s`,
  :meth:`LocalTwin.insight_rule_body`, :meth:`LocalTwin.routes`.

What it does not run is listed by :meth:`LocalTwin.describe`, which the sandbox prints
at start-up.
"""

from __future__ import annotations

import re
import secrets
import string
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from sandbox.twin.iam import RolePolicy
from sandbox.twin.intrinsics import LOCAL_ACCOUNT_ID, LocalResource, Resolver
from sandbox.twin.stack import (
    AlarmTemplate,
    EventSourceMappingSpec,
    FunctionSpec,
    StackSpec,
    TemplateError,
    read_stack,
)
from sandbox.twin.synth import REPO_ROOT, SynthesizedTemplate, synthesized_template

if TYPE_CHECKING:
    from infra.alarm_specs import AlarmSpec
    from infra.table_specs import TableSpec
    from sandbox.local_aws.lambda_runtime import LocalFunction
    from sandbox.local_aws.pollers import KinesisEventSourceMapping, SqsEventSourceMapping

#: Variables set by Lambda itself or meaningful per function: never shared.
PER_FUNCTION: Final = frozenset({"POWERTOOLS_SERVICE_NAME"})


def _key_shape(props: Mapping[str, Any]) -> tuple[Any, ...]:
    gsis = sorted(
        (g["IndexName"], tuple((k["AttributeName"], k["KeyType"]) for k in g["KeySchema"]))
        for g in props.get("GlobalSecondaryIndexes", [])
    )
    keys = tuple((k["AttributeName"], k["KeyType"]) for k in props["KeySchema"])
    return keys, tuple(gsis)


def match_tables(
    template_tables: Mapping[str, Mapping[str, Any]], specs: Sequence[TableSpec]
) -> dict[str, TableSpec]:
    """Pair each table of the template with the local table spec of the same keys.

    Parameters
    ----------
    template_tables : mapping
        Template logical id to the table's ``Properties``.
    specs : sequence of TableSpec
        The tables the sandbox creates (:data:`infra.table_specs.ALL_TABLES`).

    Returns
    -------
    dict of str to TableSpec
        Template logical id to spec.

    Raises
    ------
    TemplateError
        When a template table's key schema or GSIs match no spec, or two.
    """
    from infra.table_specs import create_table_request

    shapes = {spec.logical_id: _key_shape(create_table_request(spec)) for spec in specs}
    matched: dict[str, TableSpec] = {}
    for rid, props in template_tables.items():
        found = [s for s in specs if shapes[s.logical_id] == _key_shape(props)]
        if len(found) != 1:
            raise TemplateError(f"table {rid}: its keys match {len(found)} local table specs")
        matched[rid] = found[0]
    return matched


#: The template type of a secret the sandbox generates a local value for.
SECRET_TYPE: Final = "AWS::SecretsManager::Secret"
#: A CloudFormation dynamic reference to a Secrets Manager secret ("Using dynamic
#: references to specify template values", CloudFormation User Guide):
#: ``{{resolve:secretsmanager:secret-id:SecretString:json-key:version-stage:version-id}}``.
_SECRET_REFERENCE: Final = re.compile(r"\{\{resolve:secretsmanager:(.+?)\}\}")
#: One local value per stack and secret in this process, whichever twin asks.
_LOCAL_SECRETS: dict[tuple[str, str], str] = {}
_LOCAL_SECRETS_LOCK = threading.Lock()


def local_secret_value(owner: tuple[str, str], generate: Mapping[str, Any]) -> str:
    """Return the local value of a generated secret, as ``GenerateSecretString`` describes it.

    Parameters
    ----------
    owner : tuple of str
        (stack name, logical id): the same value for every twin of this process.
    generate : mapping
        The secret's ``GenerateSecretString`` (``PasswordLength``, default 32;
        ``ExcludePunctuation``; ``ExcludeCharacters``); a secret without one gets 32
        letters and digits.

    Returns
    -------
    str
        Random text from :mod:`secrets`, new in each process (as a new stack's).
    """
    alphabet = string.ascii_letters + string.digits
    if not generate.get("ExcludePunctuation", False):
        alphabet += string.punctuation
    alphabet = "".join(c for c in alphabet if c not in str(generate.get("ExcludeCharacters", "")))
    length = int(generate.get("PasswordLength", 32))
    with _LOCAL_SECRETS_LOCK:
        if owner not in _LOCAL_SECRETS:
            _LOCAL_SECRETS[owner] = "".join(secrets.choice(alphabet) for _ in range(length))
        return _LOCAL_SECRETS[owner]


def resolve_dynamic_references(value: str, values: Mapping[str, str]) -> str:
    """Replace each ``{{resolve:secretsmanager:...}}`` in ``value`` with the secret's value.

    Parameters
    ----------
    value : str
        A resolved template value.
    values : mapping of str to str
        Secret id (its ``Ref``) to its local value.

    Returns
    -------
    str
        The value with every reference resolved, as CloudFormation does at deploy time.

    Raises
    ------
    TemplateError
        For a reference to a secret the twin did not generate, or one that selects a
        JSON key, a version stage or a version id (not modelled).

    Examples
    --------
    >>> resolve_dynamic_references("{{resolve:secretsmanager:s:SecretString:::}}", {"s": "v"})
    'v'
    """

    def replace(match: re.Match[str]) -> str:
        secret_id, sep, selectors = match.group(1).rpartition(":SecretString:")
        if not sep or secret_id not in values or selectors.strip(":"):
            raise TemplateError(f"dynamic reference {match.group(0)!r} is not modelled locally")
        return values[secret_id]

    return _SECRET_REFERENCE.sub(replace, value)


@dataclass
class LocalTwin:
    """The synthesized stack, resolved against the local resources (module docstring).

    Parameters
    ----------
    source : SynthesizedTemplate
        The template run.
    spec : StackSpec
        What it deploys.
    region : str
        The local region.

    Attributes
    ----------
    resolver : Resolver
        Each bound resource's ``Ref`` and attributes.
    overrides : dict of str to str
        Variables the sandbox sets on top of the template's (and why, see
        :meth:`environment`).
    roles : dict of str to RolePolicy
        Function logical id to its role, built on first use.
    secrets : dict of str to str
        Each generated secret of the template (``AWS::SecretsManager::Secret``, its
        ``Ref``, a local ARN) to its local value (:func:`local_secret_value`), which
        the dynamic references of the functions' environment resolve to.
    """

    source: SynthesizedTemplate
    spec: StackSpec
    region: str
    resolver: Resolver = field(init=False)
    overrides: dict[str, str] = field(default_factory=dict)
    roles: dict[str, RolePolicy] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.resolver = Resolver(self.region)
        prefix = self.source.stack_name
        for fid in self.spec.functions:
            name = f"{prefix}-{fid}"[:64]
            arn = f"arn:aws:lambda:{self.region}:{LOCAL_ACCOUNT_ID}:function:{name}"
            self.resolver.resources[fid] = LocalResource(name, {"Arn": arn})
        for fn in self.spec.functions.values():
            if fn.log_group_id:
                group = f"/aws/lambda/{self.resolver.ref(fn.logical_id)}"
                arn = f"arn:aws:logs:{self.region}:{LOCAL_ACCOUNT_ID}:log-group:{group}:*"
                self.resolver.resources[fn.log_group_id] = LocalResource(group, {"Arn": arn})
        for rid, resource in self.source.template.get("Resources", {}).items():
            if resource.get("Type") == SECRET_TYPE:
                name = f"{prefix}-{rid}"
                arn = f"arn:aws:secretsmanager:{self.region}:{LOCAL_ACCOUNT_ID}:secret:{name}"
                self.resolver.resources[rid] = LocalResource(arn, {"Id": arn})
                self.secrets[arn] = local_secret_value(
                    (prefix, rid), resource.get("Properties", {}).get("GenerateSecretString", {})
                )

    @classmethod
    def load(
        cls,
        context: Mapping[str, Any] | None = None,
        *,
        region: str = "us-east-1",
        template: Any = None,
    ) -> LocalTwin:
        """Synthesize (or reuse) the stack's template and read it.

        Parameters
        ----------
        context : mapping, optional
            CDK context: the stack parameters (``-c name=value``).
        region : str
            The local region.
        template : pathlib.Path, optional
            A template file to run instead of synthesizing.

        Returns
        -------
        LocalTwin
            Not yet bound to local resources.

        Raises
        ------
        sandbox.twin.synth.SynthError
            When the synthesis fails.
        TemplateError
            When the template lacks what the twin needs.
        """
        source = synthesized_template(context, template=template)
        return cls(source, read_stack(source.template, REPO_ROOT), region)

    # --- binding local resources ---------------------------------------------------------
    def bind_tables(self, local_names: Mapping[str, str]) -> None:
        """Bind the template's tables to the local ones.

        Parameters
        ----------
        local_names : mapping of str to str
            Spec logical id (``DataTable``, ``MetadataTable``) to the local table name,
            as :func:`sandbox.tables.create_tables` returns.

        Raises
        ------
        TemplateError
            When a template table has no local counterpart.
        """
        from infra.table_specs import ALL_TABLES

        for rid, table_spec in match_tables(self.spec.tables, ALL_TABLES).items():
            name = local_names[table_spec.logical_id]
            arn = f"arn:aws:dynamodb:{self.region}:{LOCAL_ACCOUNT_ID}:table/{name}"
            self._bind(rid, LocalResource(name, {"Arn": arn}))

    def bind_queue(self, logical_id: str, url: str) -> None:
        """Bind a template queue to a local queue URL (``Ref`` is the URL).

        Parameters
        ----------
        logical_id : str
            The queue's logical id.
        url : str
            Its local URL.
        """
        name = url.rstrip("/").rsplit("/", 1)[-1]
        arn = f"arn:aws:sqs:{self.region}:{LOCAL_ACCOUNT_ID}:{name}"
        self._bind(logical_id, LocalResource(url, {"Arn": arn, "QueueName": name, "QueueUrl": url}))

    def bind_stream(self, logical_id: str, name: str) -> None:
        """Bind a template stream to a local stream (``Ref`` is the name).

        Parameters
        ----------
        logical_id : str
            The stream's logical id.
        name : str
            Its local name.
        """
        arn = f"arn:aws:kinesis:{self.region}:{LOCAL_ACCOUNT_ID}:stream/{name}"
        self._bind(logical_id, LocalResource(name, {"Arn": arn}))

    def _bind(self, logical_id: str, resource: LocalResource) -> None:
        """Record a local resource for a logical id and re-resolve the roles handed out."""
        self.resolver.resources[logical_id] = resource
        self._refresh_roles()

    # --- functions -------------------------------------------------------------------------
    def function_spec(self, handler: str) -> FunctionSpec:
        """Return the template's function with this handler (``module:attribute``).

        Raises
        ------
        TemplateError
            When none or several have it.
        """
        return self.spec.function_by_handler(handler)

    def function_name(self, function_id: str) -> str:
        """Return a function's local name (``Ref``).

        Parameters
        ----------
        function_id : str
            Its logical id.

        Returns
        -------
        str
            ``<stack>-<logical id>``.
        """
        return str(self.resolver.ref(function_id))

    def function_environment(self, function_id: str) -> dict[str, str]:
        """Return one function's ``Environment.Variables``, resolved.

        Parameters
        ----------
        function_id : str
            Its logical id.

        Returns
        -------
        dict of str to str
            Name to value.
        """
        env = self.resolver.resolve(self.spec.functions[function_id].environment)
        return {k: resolve_dynamic_references(str(v), self.secrets) for k, v in env.items()}

    def environment(self, overrides: Mapping[str, str]) -> dict[str, str]:
        """Return the process environment: every function's variables, with ``overrides``.

        The functions run in one process, so they share one environment: it holds the
        union of their template variables, which must agree wherever two functions
        both set one, except :data:`PER_FUNCTION` (set per module copy, see
        :meth:`function`).

        Parameters
        ----------
        overrides : mapping of str to str
            What the sandbox sets on top (kept in :attr:`overrides`, printed).

        Returns
        -------
        dict of str to str
            The variables.

        Raises
        ------
        TemplateError
            When two functions set a shared variable to different values.
        """
        merged: dict[str, str] = {}
        owner: dict[str, str] = {}
        for fid in self.spec.functions:
            for name, value in self.function_environment(fid).items():
                if name in PER_FUNCTION:
                    continue
                if name in merged and merged[name] != value:
                    raise TemplateError(
                        f"{name} is {merged[name]!r} in {owner[name]} and {value!r} in {fid}: "
                        "one process cannot give both"
                    )
                merged[name], owner[name] = value, fid
        self.overrides = {k: v for k, v in overrides.items() if merged.get(k) != v}
        return {**merged, **overrides}

    def role(self, function_id: str) -> RolePolicy:
        """Return a function's role: its policy documents resolved (built once).

        Parameters
        ----------
        function_id : str
            Its logical id.

        Returns
        -------
        RolePolicy
            What :mod:`sandbox.twin.iam` checks its calls against.
        """
        with self._lock:
            if function_id not in self.roles:
                fn = self.spec.functions[function_id]
                self.roles[function_id] = RolePolicy(
                    role_name=fn.role_id,
                    session_name=self.function_name(function_id),
                    documents=self._documents(function_id),
                    region=self.region,
                    account_id=LOCAL_ACCOUNT_ID,
                )
            return self.roles[function_id]

    def _documents(self, function_id: str) -> list[dict[str, Any]]:
        resolver = self._with_placeholders()
        role_id = self.spec.functions[function_id].role_id
        return [resolver.resolve(d) for d in self.spec.policies[role_id]]

    def _refresh_roles(self) -> None:
        """Resolve the roles handed out so far again, after a resource was bound.

        A function may be made before its queue or stream exists (the handlers are
        loaded, then the sources created): its statements about them named no
        resource until now.
        """
        with self._lock:
            for function_id, role in self.roles.items():
                role.set_documents(self._documents(function_id))

    def _with_placeholders(self) -> Resolver:
        """Return a resolver that also resolves the resources the sandbox did not create.

        Their ARNs (``arn:aws:twin-unbound:::<logical id>``) match no request, so
        statements about them (a run without queues) allow nothing.
        """
        resources = {
            rid: LocalResource(
                f"twin-unbound-{rid}",
                {
                    attribute: f"arn:aws:twin-unbound:::{rid}"
                    for attribute in ("Arn", "QueueName", "QueueUrl", "StreamArn")
                },
            )
            for rid in self.source.template["Resources"]
        }
        resources.update(self.resolver.resources)
        return Resolver(self.region, resources, self.resolver.account_id)

    def function(self, handler: str, *, check_iam: bool = True) -> LocalFunction:
        """Return the template's function with this handler, ready to invoke.

        Parameters
        ----------
        handler : str
            ``module:attribute`` (e.g. ``functions.query.app:handler``).
        check_iam : bool
            Check its calls against its role (default).

        Returns
        -------
        LocalFunction
            Named, timed out and sized as the template says; API handlers serialized
            on :data:`sandbox.local_aws.lambda_runtime.API_RESOLVER_LOCK`.
        """
        from sandbox.local_aws.lambda_runtime import API_RESOLVER_LOCK, LocalFunction

        fn = self.function_spec(handler)
        per_function = {
            k: v for k, v in self.function_environment(fn.logical_id).items() if k in PER_FUNCTION
        }
        api = any(route.function_id == fn.logical_id for route in self.spec.routes)
        return LocalFunction(
            handler,
            serialize_with=API_RESOLVER_LOCK if api else None,
            name=self.function_name(fn.logical_id),
            timeout_s=fn.timeout_s,
            memory_mb=fn.memory_mb,
            environment=per_function,
            role=self.role(fn.logical_id) if check_iam else None,
        )

    # --- event sources ---------------------------------------------------------------------
    def _mapping(self, handler: str) -> EventSourceMappingSpec:
        return self.spec.mapping_of(self.function_spec(handler).logical_id)

    def sqs_mapping(self, handler: str, **local: Any) -> SqsEventSourceMapping:
        """Return the SQS event source mapping that invokes ``handler``.

        Parameters
        ----------
        handler : str
            ``module:attribute``.
        **local
            Settings AWS does not publish (``wait_time_s``).

        Returns
        -------
        SqsEventSourceMapping
            Batch size, batching window, partial responses and maximum concurrency
            from the template (concurrency 5 without one: Lambda's starting pollers).
        """
        from sandbox.local_aws.pollers import SqsEventSourceMapping

        m = self._mapping(handler)
        return SqsEventSourceMapping(
            batch_size=m.batch_size or 10,
            maximum_batching_window_s=m.maximum_batching_window_s,
            report_batch_item_failures=m.report_batch_item_failures,
            concurrency=m.maximum_concurrency or 5,
            **local,
        )

    def kinesis_mapping(self, handler: str, **local: Any) -> KinesisEventSourceMapping:
        """Return the Kinesis event source mapping that invokes ``handler``.

        Parameters
        ----------
        handler : str
            ``module:attribute``.
        **local
            Settings AWS does not publish (back-off, idle poll).

        Returns
        -------
        KinesisEventSourceMapping
            Batch size, window, starting position, bisect, retry attempts and partial
            responses from the template.
        """
        from sandbox.local_aws.pollers import KinesisEventSourceMapping

        m = self._mapping(handler)
        return KinesisEventSourceMapping(
            batch_size=m.batch_size or 100,
            maximum_batching_window_s=m.maximum_batching_window_s,
            starting_position=m.starting_position or "TRIM_HORIZON",  # type: ignore[arg-type]
            bisect_batch_on_function_error=m.bisect_batch_on_function_error,
            maximum_retry_attempts=m.maximum_retry_attempts,
            report_batch_item_failures=m.report_batch_item_failures,
            **local,
        )

    def source_of(self, handler: str) -> str:
        """Return the logical id of the queue or stream that feeds ``handler``."""
        return self._mapping(handler).source_id

    def on_failure_of(self, handler: str) -> str | None:
        """Return the logical id of the on-failure destination of ``handler``'s mapping."""
        return self._mapping(handler).on_failure_id

    def queue_attributes(self, logical_id: str) -> dict[str, str]:
        """Return the ``CreateQueue`` attributes of a template queue.

        The dead-letter queue, if any, must be bound first (its ARN is in the
        ``RedrivePolicy``).

        Parameters
        ----------
        logical_id : str
            The queue.

        Returns
        -------
        dict of str to str
            ``VisibilityTimeout``, ``RedrivePolicy``, ``FifoQueue`` and
            ``ContentBasedDeduplication`` as the template sets them.
        """
        import json

        q = self.spec.queues[logical_id]
        attributes = {"VisibilityTimeout": str(q.visibility_timeout_s)}
        if q.dead_letter_id is not None:
            dlq_arn = self.resolver.get_att(q.dead_letter_id, "Arn")
            attributes["RedrivePolicy"] = json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": q.max_receive_count}
            )
        if q.fifo:
            attributes["FifoQueue"] = "true"
            attributes["ContentBasedDeduplication"] = str(q.content_based_deduplication).lower()
        return attributes

    # --- alarms, schedule, rules, routes -----------------------------------------------------
    def scaler_alarms(self, handler: str) -> list[tuple[str, AlarmSpec]]:
        """Return the alarms whose action invokes ``handler``, as the sandbox evaluates them.

        Parameters
        ----------
        handler : str
            The scaler's ``module:attribute``.

        Returns
        -------
        list of (str, AlarmSpec)
            Each alarm's name and its metric, dimensions, statistic, period, M out of
            N, threshold, comparison and missing-data treatment from the template.

        Raises
        ------
        TemplateError
            When an alarm's dimensions name another table than a bound one.
        """
        target = self.function_spec(handler).logical_id
        return [self._alarm_spec(a) for a in self.spec.alarms if target in a.action_ids]

    def _alarm_spec(self, alarm: AlarmTemplate) -> tuple[str, AlarmSpec]:
        from infra.alarm_specs import AlarmSpec, Comparison, MissingData

        p = self.resolver.resolve(alarm.properties)
        dims = {d["Name"]: d["Value"] for d in p.get("Dimensions", [])}
        spec = AlarmSpec(
            id=alarm.logical_id,
            metric_name=p["MetricName"],
            index_name=dims.get("GlobalSecondaryIndexName"),
            namespace=p["Namespace"],
            statistic=p["Statistic"],
            period_s=int(p["Period"]),
            evaluation_periods=int(p["EvaluationPeriods"]),
            datapoints_to_alarm=int(p.get("DatapointsToAlarm", p["EvaluationPeriods"])),
            threshold=float(p["Threshold"]),
            comparison=Comparison(p["ComparisonOperator"]),
            treat_missing_data=MissingData(p.get("TreatMissingData", "missing")),
        )
        return str(p["AlarmName"]), spec

    def alarm_table(self, alarm_id: str) -> str:
        """Return the ``TableName`` dimension of an alarm, resolved."""
        (alarm,) = [a for a in self.spec.alarms if a.logical_id == alarm_id]
        dims = self.resolver.resolve(alarm.properties.get("Dimensions", []))
        return str({d["Name"]: d["Value"] for d in dims}["TableName"])

    def sweep_rate_s(self, handler: str) -> float:
        """Return the period of the schedule that invokes ``handler``, seconds.

        Raises
        ------
        TemplateError
            When no enabled schedule targets it.
        """
        target = self.function_spec(handler).logical_id
        rates = [s.rate_s for s in self.spec.schedules if s.enabled and target in s.target_ids]
        if len(rates) != 1:
            raise TemplateError(f"{len(rates)} enabled schedules invoke {handler}")
        return rates[0]

    def insight_rule_body(self, rule_name: str) -> tuple[str, tuple[str, ...]]:
        """Return a Contributor Insights rule's body, resolved, and its log groups' functions.

        Parameters
        ----------
        rule_name : str
            The rule's ``RuleName`` as deployed (e.g. the scaler's
            ``DYNASHARD_WRITE_LOAD_RULE``).

        Returns
        -------
        tuple of (str, tuple of str)
            The JSON body, and the handler (``module:attribute``) of each function whose
            log group the rule reads.

        Raises
        ------
        TemplateError
            When no rule has that name.
        """
        import json

        for rid, body in self.spec.insight_rules.items():
            props = self.source.template["Resources"][rid]["Properties"]
            if self.resolver.resolve(props.get("RuleName")) != rule_name:
                continue
            text = str(self.resolver.resolve(body))
            groups = set(json.loads(text).get("LogGroupNames", []))
            handlers = tuple(
                fn.handler
                for fn in self.spec.functions.values()
                if fn.log_group_id and self.resolver.ref(fn.log_group_id) in groups
            )
            return text, handlers
        raise TemplateError(f"no Contributor Insights rule named {rule_name!r}")

    def routes(self) -> list[tuple[str, str, str]]:
        """Return the API's routes: ``(method, resource, handler)`` each.

        Returns
        -------
        list of tuple of (str, str, str)
            E.g. ``("GET", "/events", "functions.query.app:handler")``.
        """
        return [
            (r.method, r.resource, self.spec.functions[r.function_id].handler)
            for r in self.spec.routes
        ]

    def describe(self) -> list[str]:
        """Return the start-up lines: the template run, the local overrides, the gaps.

        Returns
        -------
        list of str
            Human-readable lines.
        """
        path = self.source.path
        shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
        lines = [
            f"Template:       {shown} ({self.source.stack_name}, "
            f"{len(self.spec.functions)} functions, {len(self.spec.routes)} routes)"
        ]
        if self.overrides:
            lines.append("Local overrides of the template's environment:")
            lines += [f"  {k}={v}" for k, v in sorted(self.overrides.items())]
        lines.append("Not modelled locally:")
        lines += [f"  - {gap}" for gap in self.spec.unmodelled]
        return lines
