"""Typed parameters of the stack, read from CDK context.

:class:`DynashardParameters` are dynashard's own (the shard planning, the functions, the
API, the queue and stream), all a :class:`~infra.constructs.dynashard.Dynashard`
construct needs on a table it is given; :class:`StackParameters` adds the project's own
data table (capacity caps, warm throughput, Contributor Insights mode).

Every field of :class:`StackParameters` is a CDK context key of the same name, set on the
command line (``npx cdk deploy -c stage=prod -c max_shards=500``) or in ``cdk.json``
/ ``cdk.context.json``. Values given on the command line arrive as strings and are
validated and converted by pydantic once, when the app starts; a bad value stops the
synth with a message naming the key. docs/DEPLOY.md lists the same parameters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dynashard import defaults, names
from dynashard.core.buckets import TimeBucket, parse_time_buckets
from dynashard.core.families import parse_bucketed_keys
from dynashard.core.schema import Payload, TableSchema, codec_named
from dynashard.lambda_kit.key_settings import KeySetting, check_key_settings, parse_key_settings

if TYPE_CHECKING:
    from constructs import Node

#: The stack's functions, by the name their memory parameter starts with
#: (``{name}_memory_mb``).
FunctionName = Literal["ingest_api", "ingest_queue", "ingest_stream", "query", "scaler"]

#: Default memory of each function, MB: the sizes :mod:`bench.memory` derives from its
#: measured peak RSS and CPU time (``bench/results/memory.json``, ``sizes``): at least
#: 1.5 times the peak RSS of the function's largest workload, and at least the memory
#: whose CPU share (Lambda allocates CPU in proportion to memory, one vCPU at 1,769 MB:
#: "Configure Lambda function memory", AWS Lambda Developer Guide) runs a cold
#: invocation of that workload's CPU work in one second; rounded up to 128 MB. Every
#: function's peak is under 80 MiB, so CPU decides each size; where runs on the shared
#: machine gave two sizes (a CPU figure moved by up to 20 %, a size by one 128 MB
#: step), the larger one. A run (``make bench-memory``) reports in its ``targets``
#: whether these still hold the sizes it derives.
FUNCTION_MEMORY_MB: dict[str, int] = {
    "ingest_api": 768,
    "ingest_queue": 1280,
    "ingest_stream": 1280,
    "query": 1152,
    "scaler": 640,
}

#: The data table's key schema (:class:`dynashard.core.schema.TableSchema`): each
#: :class:`DynashardParameters` field and the environment variable it is rendered into.
SCHEMA_ENV: dict[str, str] = {
    "partition_key_attr": names.ENV_PARTITION_KEY_ATTR,
    "sort_key_attr": names.ENV_SORT_KEY_ATTR,
    "sort_key_codec": names.ENV_SORT_KEY_CODEC,
    "gsi_name": names.ENV_GSI_NAME,
    "gsi_partition_key_attr": names.ENV_GSI_PARTITION_KEY_ATTR,
    "gsi_sort_key_attr": names.ENV_GSI_SORT_KEY_ATTR,
    "key_attr": names.ENV_KEY_ATTR,
    "id_attr": names.ENV_ID_ATTR,
    "ts_attr": names.ENV_TS_ATTR,
    "shard_attr": names.ENV_SHARD_ATTR,
    "data_attr": names.ENV_DATA_ATTR,
    "payload": names.ENV_PAYLOAD,
}

#: Stages treated as throw-away: tables are destroyed with the stack, no deletion
#: protection. Every other stage keeps its tables (retain + deletion protection).
DEV_STAGES = frozenset({"dev", "test", "sandbox"})

#: Retention periods CloudWatch Logs accepts, days (``PutRetentionPolicy``), with the
#: name of the matching ``aws_logs.RetentionDays`` member.
RETENTION_DAYS: dict[int, str] = {
    1: "ONE_DAY",
    3: "THREE_DAYS",
    5: "FIVE_DAYS",
    7: "ONE_WEEK",
    14: "TWO_WEEKS",
    30: "ONE_MONTH",
    60: "TWO_MONTHS",
    90: "THREE_MONTHS",
    120: "FOUR_MONTHS",
    150: "FIVE_MONTHS",
    180: "SIX_MONTHS",
    365: "ONE_YEAR",
    400: "THIRTEEN_MONTHS",
    545: "EIGHTEEN_MONTHS",
    731: "TWO_YEARS",
    1096: "THREE_YEARS",
    1827: "FIVE_YEARS",
    2192: "SIX_YEARS",
    2557: "SEVEN_YEARS",
    2922: "EIGHT_YEARS",
    3288: "NINE_YEARS",
    3653: "TEN_YEARS",
}


class DynashardParameters(BaseModel):
    """Parameters of dynashard on one data table (the ``Dynashard`` construct's).

    Everything but the data table itself: a stack that brings its own table declares its
    capacity, warm throughput and Contributor Insights on that table;
    :class:`StackParameters` adds them for the project's own. Each field is a CDK context
    key of the same name in the project's app (:meth:`from_context`).

    Parameters
    ----------
    stage : str
        Deployment stage, the API stage name. ``dev``, ``test`` and ``sandbox`` are
        throw-away stages (the metadata table and the log groups are destroyed with the
        stack); any other stage retains them and turns on the metadata table's deletion
        protection.
    default_shards : int
        Shard count N of a logical key never seen before (``DYNASHARD_DEFAULT_SHARDS``).
    max_shards : int
        Upper bound on N per logical key (``DYNASHARD_MAX_SHARDS``), 1 to the library's
        :data:`~dynashard.core.keys.MAX_SHARD_COUNT` (1,000): a value above it stops the
        synth, as the functions would refuse it.
    cooldown_s : float
        Seconds between two changes of N for one key (``DYNASHARD_COOLDOWN_S``).
    metadata_cache_ttl_s : float
        Seconds a writer may cache a key's shard count (``DYNASHARD_METADATA_CACHE_TTL_S``).
    time_bucket : TimeBucket
        Time bucket of the GSI1 keys: ``hour``, ``day`` or ``month``.
    time_buckets : str
        Per key family, ``PREFIX=unit,...`` (``DYNASHARD_TIME_BUCKETS``): the GSI1 time
        bucket of the logical keys with that prefix; empty: ``time_bucket`` for all.
    bucketed_keys : str
        Time-bucketed key families, ``NAME=unit,...`` (``DYNASHARD_BUCKETED_KEYS``, e.g.
        ``OPS_LOG=day,THREAT#=month``): events under them are written to the logical key
        of their time bucket; empty: none.
    partition_wcu, partition_rcu : float
        Per-partition ceilings the scaler plans against, WCU/s and RCU/s (1,000 and
        3,000 per the DynamoDB Developer Guide, "Best practices for designing and
        using partition keys effectively").
    target_utilization : float
        Fraction of a partition's ceiling a shard should carry after growth, in (0, 1].
    shrink_utilization : float or None
        The scaler's low-water mark (``DYNASHARD_SHRINK_UTILIZATION``): a key whose peak
        load per shard stays below this share of the partition ceiling for
        ``shrink_cool_period_s`` shrinks; 0 turns shrinking off; None (default) is half
        of ``target_utilization``. Must be below ``target_utilization`` (hysteresis).
    shrink_cool_period_s : float
        Seconds a key must stay below the low-water mark before it shrinks, >= 60
        (``DYNASHARD_SHRINK_COOL_PERIOD_S``).
    write_load_parts : int
        Parts of the key space the write-load Contributor Insights rule is split into,
        one rule each (1 to 20; ``DYNASHARD_WRITE_LOAD_PARTS`` of the ingest functions,
        which put each key's part in its ``write load`` line; the scaler reads every
        part's report). A report names at most 100 keys; a key it leaves out is
        bounded by its part's 100th, and the shrink sweep acts on that bound only when
        it is below the key's low-water mark, so a part must have fewer than 100 keys
        busy within one cool period: ``P`` above the keys hot within
        ``shrink_cool_period_s`` / 100, with room for an uneven hash. 8 by measurement
        (``docs/benchmarks.md``, fleet simulation: churn with 500 keys hot within a cool
        period shrinks its cooled keys at 8, not at 4). Costs: one rule per part (of the
        account's 100 per Region), one ``GetInsightRuleReport`` per part per sweep
        minute and per alarm run (20 per second per Region), the same matched log
        events (each line matches one part's rule).
    in_band_growth : bool
        Whether a writer that meets key-range throttling grows the key itself
        (``DYNASHARD_IN_BAND_GROWTH``, doubling N, under the cooldown) besides the
        alarm-driven scaler. Off by default, chosen by measurement
        (``bench/results/growth_config.json``): with it on, the writers' doubling takes
        the cooldown the scaler's one-step growth to the planned count then waits on,
        and a second doubling overshoots (1 -> 2 -> 7 -> 14 for a key that needs 6).
        The library's own default stays on: without a deployed scaler it is the only
        growth there is.
    write_max_attempts : int
        Attempts a writer makes on throttled items, the first included, 1-20
        (``DYNASHARD_WRITE_MAX_ATTEMPTS``). Set once for every function: the scaler
        divides the throttle count by it to tell retries from demand.
    api_auth : str
        ``iam`` (SigV4, the default) or ``api_key`` (an API key with a usage plan).
    api_rate_limit : float
        Steady-state request rate of the API stage (and of the usage plan), requests/s.
    api_burst_limit : int
        Burst of the API stage (and of the usage plan), requests.
    queue_max_receive_count : int
        Receives of one SQS message before it moves to the dead-letter queue.
    snap_start : bool
        Lambda SnapStart for the two API functions (ingest's REST routes and the query
        function): each is published as a version with SnapStart on
        (``ON_PUBLISHED_VERSIONS``) behind an alias ``live``, which the API integrations
        invoke, so a cold start resumes a snapshot taken after the module's import
        instead of importing it. False (default): SnapStart has a price per cached
        snapshot and per restore, every deployment publishes a version and waits for
        its snapshot, and the queue and stream functions do not take it (batches
        absorb a cold start); turn it on where the API's cold-start tail matters.
        dynashard's random draws are safe under it (:mod:`dynashard.core.entropy`).
    fifo_ingest_queue : bool
        Make the ingest queue and its dead-letter queue FIFO queues (``.fifo``): events
        of one message group (send each logical key as its group) are written in order,
        a group stopping at its first failure. Content-based deduplication is off:
        producers send the event's ``id`` as ``MessageDeduplicationId``. False (default):
        standard queues.
    key_settings : list of KeySetting
        Keys known at deploy time, each ``{"key", "strategy", "attribute", "shards",
        "max_shards"}`` (:class:`~dynashard.lambda_kit.key_settings.KeySetting`; on the
        command line as JSON, ``-c 'key_settings=[{"key": "DEPARTURES#JFK", ...}]'``):
        the ingest functions create each key that has no metadata yet with them before
        their first write (``DYNASHARD_KEY_SETTINGS``); a stored key is never changed,
        a difference is logged. At most 2,048 bytes as JSON.
    sqs_batch_size : int
        Records per ingest invocation from SQS (1-10 without a batching window; 10 at
        most for a FIFO queue).
    kinesis_batch_size : int
        Records per ingest invocation from Kinesis (1-10,000).
    kinesis_retry_attempts : int
        Retries of a failing Kinesis batch before it goes to the on-failure destination
        (0-10,000; bisect-on-error splits it on every retry). 8 by measurement: with 3,
        the chaos run (``make chaos``: DynamoDB Local killed and restarted, 4 to 6 s)
        sent good records to the on-failure destination, because a bisected record's
        three retries came and went within the outage; with 8 only the poison record
        went there. A poison record costs its shard 8 retries before it is set aside.
    kinesis_max_record_age_s : int
        Age after which a Kinesis record is sent to the on-failure destination, seconds
        (60-604,800).
    log_retention_days : int
        Retention of every log group, days (a value CloudWatch Logs accepts).
    ingest_api_memory_mb, ingest_queue_memory_mb, ingest_stream_memory_mb : int
        Memory of the three ingest functions (REST API, SQS, Kinesis), MB; defaults
        :data:`FUNCTION_MEMORY_MB` (measured, see there). 1,769 MB = one vCPU.
    query_memory_mb, scaler_memory_mb : int
        Memory of the query and scaler functions, MB; defaults as above.
    function_memory_mb : int or None
        Memory of every function whose own ``{name}_memory_mb`` is not given, MB; None
        (default): each function's own size. See :meth:`memory_mb`.
    function_timeout_s : int
        Timeout of every function, seconds.
    scaler_reserved_concurrency : int
        Reserved concurrency of the scaler function (1-1,000): alarm actions and the
        sweep always find room in the account's pool, and no more than this many scaler
        runs race on the metadata table. Lambda keeps at least 100 of an account's
        concurrency unreserved, so an account whose limit is the new-account 10 must
        raise its quota first ("Lambda quotas", AWS Lambda Developer Guide).
    partition_key_attr, sort_key_attr : str or None
        The data table's partition and sort key attributes
        (``DYNASHARD_PARTITION_KEY_ATTR``, ``DYNASHARD_SORT_KEY_ATTR``); None (default):
        dynashard's own ``PK`` and ``SK``. The schema fields below are for a table brought
        by its owner (:class:`dynashard.core.schema.TableSchema`); each is rendered into
        the functions' environment only when set, and a schema other than the default
        makes the functions check the table's key schema at cold start
        (``DescribeTable``, which their roles are then allowed).
    sort_key_codec : str or None
        How the sort key orders items (``DYNASHARD_SORT_KEY_CODEC``):
        ``iso_time_then_id`` (``S``, ``{ts}#{id}``; the default), ``iso_ms_then_id`` /
        ``iso_s_then_id`` (the same with milliseconds or whole seconds, the forms other
        programs write), ``epoch_ms_number`` (``N``, epoch milliseconds) or
        ``plain_string`` (``S``, the event id).
    gsi_name : str or None
        The time-bucket GSI (``DYNASHARD_GSI_NAME``); ``""``: the table has none; None
        (default): ``GSI1``. Its alarms, grants and graphs use this name.
    gsi_partition_key_attr, gsi_sort_key_attr : str or None
        The GSI's key attributes (``DYNASHARD_GSI_PARTITION_KEY_ATTR``,
        ``DYNASHARD_GSI_SORT_KEY_ATTR``); None (default): ``GSI1PK``, ``GSI1SK``.
    key_attr, id_attr, ts_attr, shard_attr : str or None
        Attributes of an event's logical key, id, time and shard (``DYNASHARD_KEY_ATTR``,
        ``DYNASHARD_ID_ATTR``, ``DYNASHARD_TS_ATTR``, ``DYNASHARD_SHARD_ATTR``); None
        (default): ``key``, ``id``, ``ts``, ``shard``.
    data_attr : str or None
        The payload's map attribute when ``payload`` is ``nested``
        (``DYNASHARD_DATA_ATTR``); None (default): ``data``.
    payload : str or None
        ``nested`` (the event's ``data`` in one map attribute; the default) or ``flat``
        (each field an attribute of the item) (``DYNASHARD_PAYLOAD``).

    Raises
    ------
    pydantic.ValidationError
        When a context value does not parse or is out of range.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: str = Field(default="dev", pattern=r"^[a-z][a-z0-9-]{0,19}$")
    default_shards: int = defaults.DEFAULT_SHARDS.field(stack=True)
    # The library's bound, not a copy of it: a stack above it deployed functions that
    # refused every request (issue 39).
    max_shards: int = defaults.MAX_SHARDS.field(stack=True)
    cooldown_s: float = defaults.COOLDOWN_S.field(stack=True)
    metadata_cache_ttl_s: float = defaults.METADATA_CACHE_TTL_S.field(stack=True)
    time_bucket: TimeBucket = TimeBucket.DAY
    time_buckets: str = ""
    bucketed_keys: str = ""
    partition_wcu: float = defaults.PARTITION_WCU.field(stack=True)
    partition_rcu: float = defaults.PARTITION_RCU.field(stack=True)
    target_utilization: float = defaults.TARGET_UTILIZATION.field(stack=True)
    shrink_utilization: float | None = Field(default=None, ge=0, lt=1)
    shrink_cool_period_s: float = defaults.SHRINK_COOL_PERIOD_S.field(stack=True)
    write_load_parts: int = defaults.WRITE_LOAD_PARTS.field(stack=True)
    in_band_growth: bool = defaults.IN_BAND_GROWTH.field(stack=True)
    write_max_attempts: int = defaults.WRITE_MAX_ATTEMPTS.field(stack=True)
    api_auth: Literal["iam", "api_key"] = "iam"
    api_rate_limit: float = Field(default=1000.0, gt=0)
    api_burst_limit: int = Field(default=2000, ge=1)
    queue_max_receive_count: int = Field(default=5, ge=1, le=1000)
    fifo_ingest_queue: bool = False
    snap_start: bool = False
    key_settings: tuple[KeySetting, ...] = ()
    sqs_batch_size: int = Field(default=10, ge=1, le=10)
    kinesis_batch_size: int = Field(default=100, ge=1, le=10_000)
    kinesis_retry_attempts: int = Field(default=8, ge=0, le=10_000)
    kinesis_max_record_age_s: int = Field(default=86_400, ge=60, le=604_800)
    log_retention_days: int = 30
    ingest_api_memory_mb: int = Field(default=FUNCTION_MEMORY_MB["ingest_api"], ge=128, le=10_240)
    ingest_queue_memory_mb: int = Field(
        default=FUNCTION_MEMORY_MB["ingest_queue"], ge=128, le=10_240
    )
    ingest_stream_memory_mb: int = Field(
        default=FUNCTION_MEMORY_MB["ingest_stream"], ge=128, le=10_240
    )
    query_memory_mb: int = Field(default=FUNCTION_MEMORY_MB["query"], ge=128, le=10_240)
    scaler_memory_mb: int = Field(default=FUNCTION_MEMORY_MB["scaler"], ge=128, le=10_240)
    function_memory_mb: int | None = Field(default=None, ge=128, le=10_240)
    function_timeout_s: int = Field(default=30, ge=1, le=900)
    scaler_reserved_concurrency: int = Field(default=2, ge=1, le=1000)
    partition_key_attr: str | None = None
    sort_key_attr: str | None = None
    sort_key_codec: str | None = None
    gsi_name: str | None = None
    gsi_partition_key_attr: str | None = None
    gsi_sort_key_attr: str | None = None
    key_attr: str | None = None
    id_attr: str | None = None
    ts_attr: str | None = None
    shard_attr: str | None = None
    data_attr: str | None = None
    payload: Literal["nested", "flat"] | None = None

    @field_validator(
        "function_memory_mb",
        "shrink_utilization",
        "partition_key_attr",
        "sort_key_attr",
        "sort_key_codec",
        "gsi_partition_key_attr",
        "gsi_sort_key_attr",
        "key_attr",
        "id_attr",
        "ts_attr",
        "shard_attr",
        "data_attr",
        "payload",
        mode="before",
    )
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        """Read ``""`` or ``none`` (as typed on a command line) as "not set"."""
        return _none_if_empty(value)

    @field_validator("key_settings", mode="before")
    @classmethod
    def _key_settings_json(cls, value: Any) -> Any:
        """Read JSON text (a command line's ``-c key_settings=[...]``) as the list."""
        if isinstance(value, str):
            return [s.model_dump(exclude_none=True) for s in parse_key_settings(value)]
        return value

    @field_validator("log_retention_days")
    @classmethod
    def _valid_retention(cls, value: int) -> int:
        """Accept only retention periods CloudWatch Logs supports."""
        if value not in RETENTION_DAYS:
            raise ValueError(f"log_retention_days must be one of {sorted(RETENTION_DAYS)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> DynashardParameters:
        """Check the parameters against each other."""
        if self.default_shards > self.max_shards:
            raise ValueError("default_shards must not exceed max_shards")
        if self.shrink_utilization is not None and (
            self.shrink_utilization >= self.target_utilization
        ):
            raise ValueError("shrink_utilization must be below target_utilization")
        parse_time_buckets(self.time_buckets)  # InvalidInputError is a ValueError
        self.table_schema  # noqa: B018 -- the library's own checks, its own message
        parse_bucketed_keys(self.bucketed_keys)
        check_key_settings(self.key_settings)
        for i, setting in enumerate(self.key_settings):
            for name in ("shards", "max_shards"):
                value = getattr(setting, name)
                if value is not None and value > self.max_shards:
                    raise ValueError(
                        f"key_settings[{i}].{name} ({value}) exceeds max_shards ({self.max_shards})"
                    )
            initial = self.default_shards if setting.shards is None else setting.shards
            if setting.max_shards is not None and initial > setting.max_shards:
                raise ValueError(
                    f"key_settings[{i}].max_shards ({setting.max_shards}) is below the N the "
                    f"key is created with ({initial}); give shards"
                )
        return self

    @property
    def is_dev(self) -> bool:
        """Whether the stage is throw-away (tables destroyed with the stack)."""
        return self.stage in DEV_STAGES

    def memory_mb(self, function: FunctionName) -> int:
        """Return the memory of one function, MB.

        Its own ``{function}_memory_mb`` when given, else ``function_memory_mb`` when
        given, else its measured default (:data:`FUNCTION_MEMORY_MB`).

        Parameters
        ----------
        function : FunctionName
            ``ingest_api``, ``ingest_queue``, ``ingest_stream``, ``query`` or ``scaler``.

        Returns
        -------
        int
            Memory size, MB (128-10,240).

        Examples
        --------
        >>> StackParameters().memory_mb("query") == FUNCTION_MEMORY_MB["query"]
        True
        >>> StackParameters(function_memory_mb=2048, query_memory_mb=512).memory_mb("query")
        512
        >>> StackParameters(function_memory_mb=2048).memory_mb("scaler")
        2048
        """
        own = f"{function}_memory_mb"
        if own not in self.model_fields_set and self.function_memory_mb is not None:
            return self.function_memory_mb
        size: int = getattr(self, own)
        return size

    @property
    def table_schema(self) -> TableSchema:
        """The data table's key schema: each field not set is the library's default.

        Raises
        ------
        dynashard.errors.InvalidInputError
            As :class:`~dynashard.core.schema.TableSchema` and
            :func:`~dynashard.core.schema.codec_named` do (an unknown codec, an empty
            name, two roles on one attribute).

        Examples
        --------
        >>> DynashardParameters().table_schema.is_default
        True
        >>> DynashardParameters(sort_key_codec="epoch_ms_number").table_schema.sort_key_type
        'N'
        """
        given: dict[str, Any] = {}
        fields = {
            "partition_key_attr": "partition_key",
            "sort_key_attr": "sort_key",
            "gsi_partition_key_attr": "gsi_partition_key",
            "gsi_sort_key_attr": "gsi_sort_key",
            "key_attr": "key_attr",
            "id_attr": "id_attr",
            "ts_attr": "ts_attr",
            "shard_attr": "shard_attr",
            "data_attr": "data_attr",
        }
        for name, role in fields.items():
            value = getattr(self, name)
            if value is not None:
                given[role] = value
        if self.sort_key_codec is not None:
            given["sort_key_codec"] = codec_named(self.sort_key_codec)
        if self.gsi_name is not None:
            given["gsi_name"] = self.gsi_name or None
        if self.payload is not None:
            given["payload"] = Payload(self.payload)
        return TableSchema(**given)

    @property
    def schema_environment(self) -> dict[str, str]:
        """The schema's environment variables, each only when its field is set.

        Returns
        -------
        dict of str to str
            ``{DYNASHARD_...: value}`` (:data:`SCHEMA_ENV`); empty for the defaults.
        """
        return {
            env: str(getattr(self, name))
            for name, env in SCHEMA_ENV.items()
            if getattr(self, name) is not None
        }

    @property
    def log_retention_name(self) -> str:
        """Name of the ``aws_logs.RetentionDays`` member for ``log_retention_days``."""
        return RETENTION_DAYS[self.log_retention_days]

    @classmethod
    def from_context(cls, node: Node) -> Self:
        """Build the config from the CDK context of a construct node.

        Parameters
        ----------
        node : constructs.Node
            Any node of the app; context keys are looked up by field name.

        Returns
        -------
        DynashardParameters or StackParameters
            Validated parameters of the class it is called on; fields without a context
            value keep their default.

        Raises
        ------
        pydantic.ValidationError
            When a context value is invalid.
        """
        values = {}
        for name in cls.model_fields:
            value = node.try_get_context(name)
            if value is not None:
                values[name] = value
        return cls.model_validate(values)


class StackParameters(DynashardParameters):
    """Parameters of the project's stack: :class:`DynashardParameters` and its data table.

    The stack (:class:`infra.stack.DynashardStack`) declares its own data table and adds
    the :class:`~infra.constructs.dynashard.Dynashard` construct on it; these fields are
    that table's. Every field is a CDK context key of the same name, set on the command
    line (``npx cdk deploy -c stage=prod -c max_shards=500``) or in ``cdk.json``.

    Parameters
    ----------
    max_read_request_units, max_write_request_units : int or None
        On-demand maximum throughput of the data table (``OnDemandThroughput``), request
        units per second; None leaves the table uncapped.
    warm_read_units_per_second, warm_write_units_per_second : int or None
        Warm throughput of the data table (``WarmThroughput``), units per second;
        None keeps DynamoDB's default for a new on-demand table.
    contributor_insights_mode : str
        ``ACCESSED_AND_THROTTLED_KEYS`` (the scaler sees the hottest keys' load, which it
        uses to size N) or ``THROTTLED_KEYS`` (cheaper, throttled keys only), on the data
        table and GSI1.
    **kwargs
        Every field of :class:`DynashardParameters`.

    Raises
    ------
    pydantic.ValidationError
        When a context value does not parse or is out of range.
    """

    max_read_request_units: int | None = Field(default=None, ge=1)
    max_write_request_units: int | None = Field(default=None, ge=1)
    warm_read_units_per_second: int | None = Field(default=None, ge=1)
    warm_write_units_per_second: int | None = Field(default=None, ge=1)
    contributor_insights_mode: Literal["ACCESSED_AND_THROTTLED_KEYS", "THROTTLED_KEYS"] = (
        "ACCESSED_AND_THROTTLED_KEYS"
    )

    @field_validator(
        "max_read_request_units",
        "max_write_request_units",
        "warm_read_units_per_second",
        "warm_write_units_per_second",
        mode="before",
    )
    @classmethod
    def _empty_table_setting_is_none(cls, value: Any) -> Any:
        """Read ``""`` or ``none`` (as typed on a command line) as "not set"."""
        return _none_if_empty(value)


def _none_if_empty(value: Any) -> Any:
    """Return None for ``""``, ``none`` or ``null`` (as typed on a command line), else ``value``."""
    if isinstance(value, str) and value.strip().lower() in {"", "none", "null"}:
        return None
    return value
