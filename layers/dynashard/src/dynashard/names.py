"""Names shared by the CDK app, the Lambda functions and the sandbox.

Environment variable names, logical resource names, index names and item attribute
names live here, and nowhere else, so that the stack and the functions cannot drift.
Nothing in this module reads the environment; it only names things.
"""

from __future__ import annotations

from typing import Final

#: Python runtime of every Lambda function (the CDK app maps it to ``Runtime``).
LAMBDA_PYTHON_RUNTIME: Final = "python3.12"

# --- environment variables read by the functions ---------------------------------
ENV_DATA_TABLE: Final = "DYNASHARD_DATA_TABLE"
ENV_METADATA_TABLE: Final = "DYNASHARD_METADATA_TABLE"
ENV_DEFAULT_SHARDS: Final = "DYNASHARD_DEFAULT_SHARDS"
ENV_MAX_SHARDS: Final = "DYNASHARD_MAX_SHARDS"
ENV_COOLDOWN_S: Final = "DYNASHARD_COOLDOWN_S"
ENV_METADATA_CACHE_TTL_S: Final = "DYNASHARD_METADATA_CACHE_TTL_S"
ENV_TIME_BUCKET: Final = "DYNASHARD_TIME_BUCKET"
#: Per key family: ``PREFIX=unit,...`` (e.g. ``DEPARTURES#=hour``); longest prefix wins,
#: ``DYNASHARD_TIME_BUCKET`` for the rest.
ENV_TIME_BUCKETS: Final = "DYNASHARD_TIME_BUCKETS"
#: Time-bucketed key families: ``NAME=unit,...`` (e.g. ``OPS_LOG=day,THREAT#=month``); a
#: name ending in ``#`` is a prefix, any other an exact key (:mod:`dynashard.core.families`).
ENV_BUCKETED_KEYS: Final = "DYNASHARD_BUCKETED_KEYS"
#: The DynamoDB endpoint as every AWS SDK and the AWS CLI read it (the service-specific
#: endpoint variable, boto3 1.28 and later): boto3 resolves it when a client is created,
#: so the library never reads it itself; the sandbox sets it for its functions and
#: prints it for ``dynashard`` and the user's own code.
ENV_DYNAMODB_ENDPOINT: Final = "AWS_ENDPOINT_URL_DYNAMODB"
#: The endpoint of every AWS service (the SDKs' global variable); the service-specific
#: one wins over it.
ENV_ENDPOINT_URL: Final = "AWS_ENDPOINT_URL"
#: The endpoint variable of dynashard before issue 39, which the library's own clients
#: never read: refused, named, where it is still set (the functions' settings, the
#: ``dynashard`` command), so a program that sets it cannot reach AWS by mistake.
LEGACY_ENV_DYNAMODB_ENDPOINT: Final = "DYNASHARD_DYNAMODB_ENDPOINT"
ENV_PARTITION_WCU: Final = "DYNASHARD_PARTITION_WCU"
ENV_PARTITION_RCU: Final = "DYNASHARD_PARTITION_RCU"
ENV_TARGET_UTILIZATION: Final = "DYNASHARD_TARGET_UTILIZATION"
ENV_IN_BAND_GROWTH: Final = "DYNASHARD_IN_BAND_GROWTH"
ENV_WRITE_MAX_ATTEMPTS: Final = "DYNASHARD_WRITE_MAX_ATTEMPTS"
#: ``true``: base-table reads hedge late shard Queries (:mod:`dynashard.dynamodb.hedging`).
ENV_HEDGE_READS: Final = "DYNASHARD_HEDGE_READS"
#: The scaler's alarms, comma-separated: what its scheduled sweep asks CloudWatch about.
ENV_SCALER_ALARM_NAMES: Final = "DYNASHARD_SCALER_ALARM_NAMES"
#: The Contributor Insights rule that ranks logical keys by the write units the ingest
#: function was offered (:mod:`dynashard.core.load`): its name, or the names of its parts
#: comma-separated, part 0 first (one rule per part of the key space); empty when the
#: stack has none.
ENV_WRITE_LOAD_RULE: Final = "DYNASHARD_WRITE_LOAD_RULE"
#: How many parts the writers split the key space into for the write-load rule: each
#: ``write load`` line carries its key's part (:func:`dynashard.core.load.write_load_part`).
ENV_WRITE_LOAD_PARTS: Final = "DYNASHARD_WRITE_LOAD_PARTS"
#: The scaler's low-water mark: a key shrinks when its load per shard stays below this
#: share of the partition limit (0 turns shrinking off).
ENV_SHRINK_UTILIZATION: Final = "DYNASHARD_SHRINK_UTILIZATION"
#: Seconds a key's load must stay below the low-water mark before the scaler shrinks it.
ENV_SHRINK_COOL_PERIOD_S: Final = "DYNASHARD_SHRINK_COOL_PERIOD_S"
#: The stack's settings of keys known at deploy time, JSON (``infra.config`` ``key_settings``):
#: the ingest functions create those keys with them before their first write.
ENV_KEY_SETTINGS: Final = "DYNASHARD_KEY_SETTINGS"
# The data table's own key schema (:class:`dynashard.core.schema.TableSchema`), for a
# table brought by its owner; unset, each is dynashard's own name below.
ENV_PARTITION_KEY_ATTR: Final = "DYNASHARD_PARTITION_KEY_ATTR"
ENV_SORT_KEY_ATTR: Final = "DYNASHARD_SORT_KEY_ATTR"
#: ``iso_time_then_id`` (default), ``iso_ms_then_id``, ``iso_s_then_id``,
#: ``epoch_ms_number`` or ``plain_string``.
ENV_SORT_KEY_CODEC: Final = "DYNASHARD_SORT_KEY_CODEC"
#: The time-bucket GSI's name; an empty value means the table has none.
ENV_GSI_NAME: Final = "DYNASHARD_GSI_NAME"
ENV_GSI_PARTITION_KEY_ATTR: Final = "DYNASHARD_GSI_PARTITION_KEY_ATTR"
ENV_GSI_SORT_KEY_ATTR: Final = "DYNASHARD_GSI_SORT_KEY_ATTR"
ENV_KEY_ATTR: Final = "DYNASHARD_KEY_ATTR"
ENV_ID_ATTR: Final = "DYNASHARD_ID_ATTR"
ENV_TS_ATTR: Final = "DYNASHARD_TS_ATTR"
ENV_SHARD_ATTR: Final = "DYNASHARD_SHARD_ATTR"
ENV_DATA_ATTR: Final = "DYNASHARD_DATA_ATTR"
#: ``nested`` (default: under the data attribute) or ``flat`` (the item's own attributes).
ENV_PAYLOAD: Final = "DYNASHARD_PAYLOAD"
#: The query function's key for signing the cursors it hands out
#: (:mod:`dynashard.lambda_kit.cursors`): the stack's generated secret.
ENV_CURSOR_KEY: Final = "DYNASHARD_CURSOR_KEY"
ENV_POWERTOOLS_SERVICE_NAME: Final = "POWERTOOLS_SERVICE_NAME"
ENV_POWERTOOLS_METRICS_NAMESPACE: Final = "POWERTOOLS_METRICS_NAMESPACE"

#: CloudWatch namespace of the functions' own metrics (Powertools Metrics, EMF).
METRICS_NAMESPACE: Final = "dynashard"
#: The functions' metric counting invocations that found their own configuration invalid
#: (:class:`~dynashard.errors.ConfigurationError`); the stack alarms on it.
METRIC_FUNCTION_MISCONFIGURED: Final = "FunctionMisconfigured"
#: The dimension Powertools Metrics adds to every metric: the function's service name.
METRICS_SERVICE_DIMENSION: Final = "service"

# --- default physical names (the sandbox uses them; the stack lets CloudFormation name)
DEFAULT_DATA_TABLE: Final = "dynashard-data"
DEFAULT_METADATA_TABLE: Final = "dynashard-shards"

# --- data table key schema --------------------------------------------------------
ATTR_PK: Final = "PK"
ATTR_SK: Final = "SK"
GSI1_NAME: Final = "GSI1"
ATTR_GSI1PK: Final = "GSI1PK"
ATTR_GSI1SK: Final = "GSI1SK"

# --- data table item attributes ---------------------------------------------------
ATTR_KEY: Final = "key"
ATTR_ID: Final = "id"
ATTR_TS: Final = "ts"
ATTR_SHARD: Final = "shard"
ATTR_DATA: Final = "data"
ATTR_COUNT: Final = "count"
#: The data table's TTL attribute (epoch seconds): DynamoDB deletes an item some time
#: after it passes ("Time to Live", Developer Guide). Counters' idempotency markers
#: carry it.
ATTR_EXPIRES_AT: Final = "expires_at"
#: The idempotency key an idempotency marker stands for.
ATTR_IDEMPOTENCY_KEY: Final = "idempotency_key"
#: Logical keys of counters start with this (``COUNTER#{name}``).
COUNTER_PREFIX: Final = "COUNTER#"

# --- metadata table (AWS Database Blog design) ------------------------------------
ATTR_META_KEY: Final = "key"
ATTR_NUMBER_OF_SHARDS: Final = "number_of_shards"
ATTR_LAST_UPDATED: Final = "last_updated"
ATTR_SHARD_HISTORY: Final = "shard_history"
ATTR_STRATEGY: Final = "strategy"
#: The ``data`` attribute a ``calculated`` key shards by (e.g. ``carrier``).
ATTR_SHARD_ATTRIBUTE: Final = "shard_attribute"
ATTR_MAX_SHARDS: Final = "max_shards"
#: String set of the throttling that grew a key (``read``, ``write``), added by the
#: scaler's growths: a key grown for reads shrinks only on read-load evidence.
ATTR_GROWN_FOR: Final = "grown_for"
#: True on a key adopted with items under its bare partition key (readers query it too).
ATTR_ADOPTED: Final = "adopted"
#: Ordered keys (:mod:`dynashard.core.ordered`): N - 1 range boundaries (list of strings) and
#: the sub-shard count of each range shard (list of numbers).
ATTR_BOUNDARIES: Final = "boundaries"
ATTR_SUB_SHARDS: Final = "sub_shards"
#: Prefix of the per-bucket GSI1 shard counts, ``gsi1_shards#{bucket}`` -> the largest
#: shard count any writer used for that time bucket (:mod:`dynashard.dynamodb.gsi_buckets`).
ATTR_GSI1_SHARDS_PREFIX: Final = "gsi1_shards#"
#: The newest bucket label whose ``gsi1_shards#`` record was ever pruned: a record of a
#: label at or before it is not trusted (readers use the key's largest count).
ATTR_GSI1_PRUNED: Final = "gsi1_pruned"
#: String set of the time-bucket units (``hour``, ``day``, ``month``) writers ever used in
#: the key's GSI1 partition keys.
ATTR_GSI1_UNITS: Final = "gsi1_units"
#: The unit (``hour``, ``day``, ``month``) of a time-bucketed family key's bucket keys,
#: stored on the family key's item at its first write (:mod:`dynashard.core.families`).
ATTR_BUCKET_UNIT: Final = "bucket_unit"
