"""Settings of the dynashard functions, read from the environment (a pydantic model).

One model serves every function (each validates it once per container): the names of
the variables come from :mod:`dynashard.names`, shared with the CDK stack, so the
stack and the functions cannot drift. Each field names its variable
(``validation_alias``); :class:`EnvSettings` reads exactly those variables from
``os.environ`` and pydantic validates them, so a missing or bad value is a
``pydantic.ValidationError`` whose location is the variable's name.

pydantic-settings did the same until issue 29; its import (its sources, dotenv and
their typing machinery) cost more of every cold start than all the rest of the settings,
for one feature used here: reading named variables. pydantic's own lax mode already
parses environment strings (``"8"``, ``"0.5"``, ``"true"``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dynashard import defaults, names
from dynashard.core.retry import Backoff

if TYPE_CHECKING:
    from dynashard.core.schema import TableSchema
    from dynashard.facade import DynashardConfig
    from dynashard.lambda_kit.key_settings import KeySetting


def environment_values(model: type[BaseModel], environ: Mapping[str, str]) -> dict[str, str]:
    """Return the variables of ``environ`` that ``model``'s fields name, by variable name.

    Parameters
    ----------
    model : type of BaseModel
        A settings model whose fields carry their variable as ``validation_alias``.
    environ : mapping of str to str
        The environment (``os.environ``).

    Returns
    -------
    dict of str to str
        Variable name -> value, for each field whose variable is set.
    """
    aliases = (f.validation_alias for f in model.model_fields.values())
    return {a: environ[a] for a in aliases if isinstance(a, str) and a in environ}


class EnvSettings(BaseModel):
    """A frozen model whose fields are read from the variables they name.

    ``EnvSettings()`` reads ``os.environ``; a keyword argument (by field name) beats its
    variable, which beats the field's default. The variable names live on the fields
    (``Field(..., validation_alias=names.ENV_...)``), the one list of them.

    Raises
    ------
    pydantic.ValidationError
        If a variable is missing or invalid; each error's location is the variable.
    """

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    def __init__(self, /, _environ: Mapping[str, str] | None = None, **values: Any) -> None:
        from_env = environment_values(type(self), os.environ if _environ is None else _environ)
        for name in values:  # an explicit value beats the variable
            field = type(self).model_fields.get(name)
            if field is not None and isinstance(field.validation_alias, str):
                from_env.pop(field.validation_alias, None)
        super().__init__(**from_env, **values)


class TableSchemaSettings(EnvSettings):
    """The data table's key schema, read from the environment.

    The functions read it as part of :class:`FunctionSettings`; the ``dynashard`` command
    reads it alone (:meth:`dynashard.cli.context.Options.facade`), so that an operator
    points the command at a table brought by its owner with the same variables the
    functions are given.

    Attributes
    ----------
    partition_key_attr, sort_key_attr, sort_key_codec, gsi_name : str
        The data table's key attributes, its sort-key codec and its time-bucket GSI
        (``DYNASHARD_PARTITION_KEY_ATTR``, ``DYNASHARD_SORT_KEY_ATTR``,
        ``DYNASHARD_SORT_KEY_CODEC``, ``DYNASHARD_GSI_NAME``;
        :class:`~dynashard.core.schema.TableSchema`); an empty ``gsi_name`` means the
        table has none.
    gsi_partition_key_attr, gsi_sort_key_attr : str
        The GSI's key attributes.
    key_attr, id_attr, ts_attr, shard_attr, data_attr, payload : str
        How an event maps onto an item: its attributes, and ``nested`` (under
        ``data_attr``) or ``flat`` payload. Every schema setting defaults to dynashard's
        own table; with any other, a function checks the table with ``DescribeTable``
        at cold start, and the command before its first read or write
        (:meth:`~dynashard.Dynashard.check`).

    Raises
    ------
    pydantic.ValidationError
        If a value is not one of its choices, or the settings do not make a schema (one
        attribute in two roles).
    """

    partition_key_attr: str = Field(
        names.ATTR_PK, min_length=1, validation_alias=names.ENV_PARTITION_KEY_ATTR
    )
    sort_key_attr: str = Field(
        names.ATTR_SK, min_length=1, validation_alias=names.ENV_SORT_KEY_ATTR
    )
    sort_key_codec: Literal[
        "iso_time_then_id", "iso_ms_then_id", "iso_s_then_id", "epoch_ms_number", "plain_string"
    ] = Field("iso_time_then_id", validation_alias=names.ENV_SORT_KEY_CODEC)
    gsi_name: str = Field(names.GSI1_NAME, validation_alias=names.ENV_GSI_NAME)
    gsi_partition_key_attr: str = Field(
        names.ATTR_GSI1PK, min_length=1, validation_alias=names.ENV_GSI_PARTITION_KEY_ATTR
    )
    gsi_sort_key_attr: str = Field(
        names.ATTR_GSI1SK, min_length=1, validation_alias=names.ENV_GSI_SORT_KEY_ATTR
    )
    key_attr: str = Field(names.ATTR_KEY, min_length=1, validation_alias=names.ENV_KEY_ATTR)
    id_attr: str = Field(names.ATTR_ID, min_length=1, validation_alias=names.ENV_ID_ATTR)
    ts_attr: str = Field(names.ATTR_TS, min_length=1, validation_alias=names.ENV_TS_ATTR)
    shard_attr: str = Field(names.ATTR_SHARD, min_length=1, validation_alias=names.ENV_SHARD_ATTR)
    data_attr: str = Field(names.ATTR_DATA, min_length=1, validation_alias=names.ENV_DATA_ATTR)
    payload: Literal["nested", "flat"] = Field("nested", validation_alias=names.ENV_PAYLOAD)

    @model_validator(mode="after")
    def _schema(self) -> TableSchemaSettings:
        """Build the schema once, so that a bad one fails where the settings are read."""
        self.table_schema  # noqa: B018
        return self

    @property
    def table_schema(self) -> TableSchema:
        """The data table's key schema these settings name (InvalidInputError if not one)."""
        from dynashard.core.schema import Payload, TableSchema, codec_named

        return TableSchema(
            partition_key=self.partition_key_attr,
            sort_key=self.sort_key_attr,
            sort_key_codec=codec_named(self.sort_key_codec),
            gsi_name=self.gsi_name or None,
            gsi_partition_key=self.gsi_partition_key_attr,
            gsi_sort_key=self.gsi_sort_key_attr,
            key_attr=self.key_attr,
            id_attr=self.id_attr,
            ts_attr=self.ts_attr,
            shard_attr=self.shard_attr,
            data_attr=self.data_attr,
            payload=Payload(self.payload),
        )


class FunctionSettings(TableSchemaSettings):
    """Settings of a dynashard function, read from the environment once per container.

    Settings are read from the environment; the library's configuration
    (:class:`~dynashard.DynashardConfig`) is built in code, here by :meth:`to_config`;
    the stack's CDK context values are its parameters (``infra.config.StackParameters``).

    Attributes
    ----------
    data_table, metadata_table : str
        Table names (required; the stack sets them).
    default_shards : int
        Shard count of a key never seen (>= 1).
    max_shards : int
        Upper bound of any key's shard count, 1 to
        :data:`~dynashard.core.keys.MAX_SHARD_COUNT` (1,000).
    cooldown_s : float
        Seconds between two shard-count changes of one key.
    metadata_cache_ttl_s : float
        Seconds a writer may cache a key's shard count.
    time_bucket : str
        ``hour``, ``day`` or ``month``: the GSI time bucket of keys no family names.
    time_buckets : str
        Per key family, ``PREFIX=unit,...`` (e.g. ``DEPARTURES#=hour``): the GSI time
        bucket of the logical keys with that prefix (longest prefix wins).
    bucketed_keys : str
        Time-bucketed key families, ``NAME=unit,...`` (e.g. ``OPS_LOG=day,THREAT#=month``;
        a name ending in ``#`` is a prefix, any other an exact key): events under them
        are written to the logical key of their time bucket
        (:mod:`dynashard.core.families`).
    legacy_dynamodb_endpoint : str or None
        ``DYNASHARD_DYNAMODB_ENDPOINT``, refused when set: the endpoint is
        ``AWS_ENDPOINT_URL_DYNAMODB`` (or ``AWS_ENDPOINT_URL``), which boto3 reads
        itself when the client is created, as every AWS SDK does.
    partition_wcu, partition_rcu : float
        Per-partition limits, WCU/s and RCU/s (1,000 and 3,000 on DynamoDB).
    target_utilization : float
        Fraction of a partition's limit a shard is planned to use, in (0, 1].
    in_band_growth : bool
        Whether writers throttled by key range ask for more shards themselves
        (``true``/``false``); false leaves growth to the alarm-driven scaler.
    write_max_attempts : int
        Attempts a writer makes on a batch of throttled or unprocessed items, the first
        included (its whole retry budget: the write client has botocore's retries off).
        The scaler reads the same value to tell retries from demand. At most 20, a
        project bound: with :class:`~dynashard.core.retry.Backoff`'s 5 s cap, 20 attempts may
        wait about 66 s in all, already past most functions' timeouts.
    shrink_utilization : float or None
        The scaler's low-water mark, in [0, ``target_utilization``): a key whose peak
        load per shard stays below this share of the partition limit for
        ``shrink_cool_period_s`` is shrunk (:mod:`dynashard.planning.shrinking`); 0 turns
        shrinking off; unset (None) is half of ``target_utilization`` (0.4 at 0.8).
        Below ``target_utilization``, so that growth and shrink thresholds differ
        (hysteresis).
    shrink_cool_period_s : float
        Seconds a key's load must stay below the low-water mark, at least 60 (one
        Contributor Insights period).
    write_load_parts : int
        Parts of the key space the stack's write-load rule is split into, one rule each
        (``DYNASHARD_WRITE_LOAD_PARTS``, 1 to
        :data:`~dynashard.core.load.MAX_WRITE_LOAD_PARTS`): the ingest functions put
        each key's part (:func:`~dynashard.core.load.write_load_part`) in its ``write
        load`` line.
    key_settings : str
        The stack's settings of keys known at deploy time, JSON
        (``DYNASHARD_KEY_SETTINGS``; :mod:`dynashard.lambda_kit.key_settings`); empty:
        none. The ingest functions create those keys with them before their first write.
    hedge_reads : bool
        Whether base-table reads hedge late shard Queries (``DYNASHARD_HEDGE_READS``,
        :class:`~dynashard.dynamodb.hedging.HedgePolicy`'s defaults: p95 delay, at most
        5 % of Queries hedged); off by default (bench/results/reads.json, ``hedging``).
        The stack does not set it: set it on a function to try it.
    partition_key_attr, sort_key_attr, sort_key_codec, gsi_name, ... : str
        The data table's key schema, as :class:`TableSchemaSettings` reads it.

    Raises
    ------
    pydantic.ValidationError
        If a value is out of range, ``shrink_utilization >= target_utilization``,
        ``key_settings`` does not parse, or the schema settings do not make a schema
        (one attribute in two roles).
    """

    data_table: str = Field(min_length=3, validation_alias=names.ENV_DATA_TABLE)
    metadata_table: str = Field(min_length=3, validation_alias=names.ENV_METADATA_TABLE)
    default_shards: int = defaults.DEFAULT_SHARDS.field(from_env=True)
    max_shards: int = defaults.MAX_SHARDS.field(from_env=True)
    cooldown_s: float = defaults.COOLDOWN_S.field(from_env=True)
    metadata_cache_ttl_s: float = defaults.METADATA_CACHE_TTL_S.field(from_env=True)
    time_bucket: Literal["hour", "day", "month"] = Field(
        "day", validation_alias=names.ENV_TIME_BUCKET
    )
    time_buckets: str = Field("", validation_alias=names.ENV_TIME_BUCKETS)
    bucketed_keys: str = Field("", validation_alias=names.ENV_BUCKETED_KEYS)
    legacy_dynamodb_endpoint: str | None = Field(
        None, validation_alias=names.LEGACY_ENV_DYNAMODB_ENDPOINT, exclude=True
    )
    partition_wcu: float = defaults.PARTITION_WCU.field(from_env=True)
    partition_rcu: float = defaults.PARTITION_RCU.field(from_env=True)
    target_utilization: float = defaults.TARGET_UTILIZATION.field(from_env=True)
    in_band_growth: bool = defaults.IN_BAND_GROWTH.field(from_env=True)
    write_max_attempts: int = defaults.WRITE_MAX_ATTEMPTS.field(from_env=True)

    shrink_utilization: float | None = Field(
        None, ge=0, lt=1, validation_alias=names.ENV_SHRINK_UTILIZATION
    )
    shrink_cool_period_s: float = defaults.SHRINK_COOL_PERIOD_S.field(from_env=True)

    write_load_parts: int = defaults.WRITE_LOAD_PARTS.field(from_env=True)

    key_settings: str = Field("", validation_alias=names.ENV_KEY_SETTINGS)

    hedge_reads: bool = Field(False, validation_alias=names.ENV_HEDGE_READS)

    @model_validator(mode="after")
    def _hysteresis(self) -> FunctionSettings:
        """Keep the shrink threshold below the growth one; refuse the old endpoint variable."""
        if self.legacy_dynamodb_endpoint is not None:
            raise ValueError(
                f"{names.LEGACY_ENV_DYNAMODB_ENDPOINT} is not read: set "
                f"{names.ENV_DYNAMODB_ENDPOINT} (the AWS SDKs' own variable) to "
                f"{self.legacy_dynamodb_endpoint!r} instead"
            )
        if self.shrink_utilization is not None and (
            self.shrink_utilization >= self.target_utilization
        ):
            raise ValueError(
                f"{names.ENV_SHRINK_UTILIZATION} ({self.shrink_utilization}) must be below "
                f"{names.ENV_TARGET_UTILIZATION} ({self.target_utilization})"
            )
        self.key_setting_list  # noqa: B018 -- parsed once here, so a bad value fails the cold start
        return self

    @property
    def key_setting_list(self) -> tuple[KeySetting, ...]:
        """Tuple of KeySetting: :attr:`key_settings` parsed (InvalidInputError if malformed)."""
        from dynashard.lambda_kit.key_settings import parse_key_settings

        return parse_key_settings(self.key_settings)

    def to_config(self) -> DynashardConfig:
        """Build the library configuration.

        Returns
        -------
        DynashardConfig
            The same values, for :class:`~dynashard.Dynashard`.

        Raises
        ------
        InvalidInputError
            If ``time_buckets`` or ``bucketed_keys`` is malformed (that field).
        """
        from dynashard.core.buckets import TimeBucket, parse_time_buckets
        from dynashard.core.families import parse_bucketed_keys
        from dynashard.dynamodb.hedging import HedgePolicy
        from dynashard.facade import DynashardConfig

        schema = self.table_schema
        return DynashardConfig(
            data_table=self.data_table,
            metadata_table=self.metadata_table,
            default_shards=self.default_shards,
            max_shards=self.max_shards,
            cooldown_s=self.cooldown_s,
            metadata_cache_ttl_s=self.metadata_cache_ttl_s,
            time_bucket=TimeBucket(self.time_bucket),
            time_buckets=parse_time_buckets(self.time_buckets),
            bucketed_keys=parse_bucketed_keys(self.bucketed_keys),
            endpoint_url=None,  # boto3 reads AWS_ENDPOINT_URL_DYNAMODB itself, as the SDKs do
            partition_wcu=self.partition_wcu,
            partition_rcu=self.partition_rcu,
            target_utilization=self.target_utilization,
            in_band_growth=self.in_band_growth,
            write_backoff=Backoff(max_attempts=self.write_max_attempts),
            schema=schema,
            check_schema=not schema.is_default,
            hedging=HedgePolicy() if self.hedge_reads else None,
        )
