"""The one table of dynashard's tunable defaults: each one's value, unit, bounds and meaning.

Every layer reads its defaults from here, none writes one again: the library
(:class:`~dynashard.DynashardConfig`, :class:`~dynashard.dynamodb.shard_metadata.ShardMetadata`,
:class:`~dynashard.core.retry.Backoff`, the planning functions), the functions' settings
(:class:`~dynashard.lambda_kit.settings.FunctionSettings`, through :meth:`Tunable.field`),
the stack's parameters (``infra.config.DynashardParameters``, the same, with the stack's
own choice where it deploys another value: :attr:`Tunable.deployed`), the ``dynashard``
command and the sandbox. ``docs/configuration.md`` shows :func:`markdown_table`'s output,
and a test fails when it differs, or when a default's literal is written again outside
this module (``tests/unit/library/test_defaults.py``).

The caps the bounds name live here too, each with its source, and are re-exported where
they were defined before (:data:`dynashard.core.keys.MAX_SHARD_COUNT`,
:data:`dynashard.core.capacity.PARTITION_WCU_LIMIT`, ...): this module imports nothing
of the library but :mod:`dynashard.names`, so any module can read it without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from dynashard import names

T = TypeVar("T", int, float, bool)

# --- caps ------------------------------------------------------------------------------------
#: Largest shard count any key may have; keeps the physical-key suffix at most 4 digits
#: (``{key}#999``), so a key's shards fit DynamoDB's key-size checks made for shard 999.
MAX_SHARD_COUNT: Final = 1000
#: Per-partition write ceiling, WCU/s (Amazon DynamoDB Developer Guide, "Best practices
#: for designing and using partition keys effectively").
PARTITION_WCU_LIMIT: Final = 1000.0
#: Per-partition read ceiling, RCU/s (same source).
PARTITION_RCU_LIMIT: Final = 3000.0
#: Most parts the write-load rule may be split into: a shrink sweep reads every part's
#: report, one ``GetInsightRuleReport`` each, and that call's quota is 20 per second
#: per Region (CloudWatch User Guide, "CloudWatch service quotas"); the account's
#: Contributor Insights rules are 100 per Region (same page).
MAX_WRITE_LOAD_PARTS: Final = 20
#: Most attempts a writer may make on throttled items, a project bound: with
#: :class:`~dynashard.core.retry.Backoff`'s 5 s cap, 20 attempts may wait about 66 s in
#: all, already past most functions' timeouts.
MAX_WRITE_ATTEMPTS: Final = 20
#: Shortest shrink cool period, seconds: one Contributor Insights period.
MIN_SHRINK_COOL_PERIOD_S: Final = 60.0


@dataclass(frozen=True)
class Tunable(Generic[T]):
    """One tunable setting: its default, unit, bounds and meaning.

    Parameters
    ----------
    name : str
        The field's name in every layer (``DynashardConfig``, ``FunctionSettings``, the
        stack's parameters: the CDK context key).
    default : int, float or bool
        The library's default.
    unit : str
        Unit of the value (``s``, ``WCU/s``, ``shards``, ``fraction``...).
    description : str
        One line: what it does.
    env : str or None
        The functions' environment variable (:mod:`dynashard.names`); None: the library
        only.
    ge, gt, le, lt : int, float or None
        Bounds (pydantic's names): at least, above, at most, below.
    deployed : int, float, bool or None
        The stack's default where it deploys another value than the library's (the
        reason is in the description); None: the library's.
    aliases : tuple of str
        Other names the same setting has in the library (e.g. ``ShardMetadata``'s
        ``cache_ttl_s``).
    """

    name: str
    default: T
    unit: str
    description: str
    env: str | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    deployed: T | None = None
    aliases: tuple[str, ...] = ()

    @property
    def stack_default(self) -> T:
        """The value the stack deploys when its parameter is not given."""
        return self.default if self.deployed is None else self.deployed

    def field(self, *, stack: bool = False, from_env: bool = False, **kwargs: Any) -> Any:
        """Return the pydantic ``Field`` of this setting: its default and its bounds.

        Parameters
        ----------
        stack : bool
            Default to :attr:`stack_default` (the stack's parameters) instead of
            :attr:`default`.
        from_env : bool
            Read the field from :attr:`env` (``validation_alias``; the functions'
            settings, :class:`~dynashard.lambda_kit.settings.EnvSettings`).
        **kwargs : Any
            More ``Field`` arguments, e.g. ``validation_alias``.

        Returns
        -------
        pydantic.fields.FieldInfo
            Typed ``Any``, as ``pydantic.Field`` is, so that it stands as a default.
        """
        from pydantic import Field

        if from_env:
            kwargs["validation_alias"] = self.env
        default = self.stack_default if stack else self.default
        # A bound of None is no bound, as pydantic reads it.
        return Field(default, ge=self.ge, gt=self.gt, le=self.le, lt=self.lt, **kwargs)

    @property
    def bounds(self) -> str:
        """The bounds as text, e.g. ``> 0 and <= 1``; ``""`` for none."""
        parts = [
            f"{op} {_number(v)}"
            for op, v in ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt))
            if v is not None
        ]
        return " and ".join(parts)


def _number(value: float | bool) -> str:
    """Write a value as the docs do: ``60``, ``0.8``, ``1,000``, ``true``."""
    if isinstance(value, bool):
        return str(value).lower()
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:g}"


DEFAULT_SHARDS: Final = Tunable[int](
    "default_shards",
    1,
    "shards",
    "N of a logical key never seen before.",
    env=names.ENV_DEFAULT_SHARDS,
    ge=1,
)
MAX_SHARDS: Final = Tunable[int](
    "max_shards",
    MAX_SHARD_COUNT,
    "shards",
    "Upper bound of any key's N (a key may have a lower cap of its own).",
    env=names.ENV_MAX_SHARDS,
    ge=1,
    le=MAX_SHARD_COUNT,
)
COOLDOWN_S: Final = Tunable[float](
    "cooldown_s",
    60.0,
    "s",
    "Minimum time between two changes of one key's N.",
    env=names.ENV_COOLDOWN_S,
    ge=0,
)
METADATA_CACHE_TTL_S: Final = Tunable[float](
    "metadata_cache_ttl_s",
    30.0,
    "s",
    "Lifetime of a writer's cached shard count of a key.",
    env=names.ENV_METADATA_CACHE_TTL_S,
    ge=0,
    aliases=("cache_ttl_s",),
)
TARGET_UTILIZATION: Final = Tunable[float](
    "target_utilization",
    0.8,
    "fraction",
    "Share of a partition's ceiling a shard is planned to carry after growth.",
    env=names.ENV_TARGET_UTILIZATION,
    gt=0,
    le=1,
)
SHRINK_COOL_PERIOD_S: Final = Tunable[float](
    "shrink_cool_period_s",
    1800.0,
    "s",
    "Time a key's load must stay below the low-water mark before the scaler shrinks it.",
    env=names.ENV_SHRINK_COOL_PERIOD_S,
    ge=MIN_SHRINK_COOL_PERIOD_S,
)
PARTITION_WCU: Final = Tunable[float](
    "partition_wcu",
    PARTITION_WCU_LIMIT,
    "WCU/s",
    "Per-partition write ceiling the shard counts are planned against (DynamoDB's).",
    env=names.ENV_PARTITION_WCU,
    gt=0,
)
PARTITION_RCU: Final = Tunable[float](
    "partition_rcu",
    PARTITION_RCU_LIMIT,
    "RCU/s",
    "Per-partition read ceiling the shard counts are planned against (DynamoDB's).",
    env=names.ENV_PARTITION_RCU,
    gt=0,
)
WRITE_MAX_ATTEMPTS: Final = Tunable[int](
    "write_max_attempts",
    8,
    "attempts",
    "Attempts a writer makes on throttled items, the first included (its retry budget).",
    env=names.ENV_WRITE_MAX_ATTEMPTS,
    ge=1,
    le=MAX_WRITE_ATTEMPTS,
)
WRITE_LOAD_PARTS: Final = Tunable[int](
    "write_load_parts",
    1,
    "rules",
    "Parts of the key space the write-load rule is split into; the stack's default is "
    "measured to let the fleet simulation's 500 busy keys shrink (docs/benchmarks.md).",
    env=names.ENV_WRITE_LOAD_PARTS,
    ge=1,
    le=MAX_WRITE_LOAD_PARTS,
    deployed=8,
)
IN_BAND_GROWTH: Final = Tunable[bool](
    "in_band_growth",
    True,
    "",
    "Whether a writer throttled by key range doubles the key's N itself; the stack, "
    "which deploys the scaler, turns it off (the growth benchmark measured why).",
    env=names.ENV_IN_BAND_GROWTH,
    deployed=False,
)
MAX_WORKERS: Final = Tunable[int](
    "max_workers",
    16,
    "threads",
    "Threads of a facade's parallel BatchWriteItem calls and shard Queries.",
    ge=1,
)

#: Every tunable, in the order the docs list them.
TUNABLES: Final[tuple[Tunable[Any], ...]] = (
    DEFAULT_SHARDS,
    MAX_SHARDS,
    COOLDOWN_S,
    METADATA_CACHE_TTL_S,
    TARGET_UTILIZATION,
    SHRINK_COOL_PERIOD_S,
    PARTITION_WCU,
    PARTITION_RCU,
    WRITE_MAX_ATTEMPTS,
    WRITE_LOAD_PARTS,
    IN_BAND_GROWTH,
    MAX_WORKERS,
)


def markdown_table() -> str:
    """Return the table of :data:`TUNABLES` as Markdown (``docs/configuration.md``'s).

    Returns
    -------
    str
        One row per tunable: name, variable, default, the stack's default, unit,
        bounds and description; ends with a newline.

    Examples
    --------
    >>> markdown_table().splitlines()[4].split(" | ")[:6]
    ['| `cooldown_s`', '`DYNASHARD_COOLDOWN_S`', '`60`', '`60`', 's', '>= 0']
    """
    rows = [
        "| setting | variable | default | stack | unit | bounds | description |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for t in TUNABLES:
        env = f"`{t.env}`" if t.env else "(library only)"
        stack = f"`{_number(t.stack_default)}`" if t.env else ""
        rows.append(
            f"| `{t.name}` | {env} | `{_number(t.default)}` | {stack} | {t.unit} | "
            f"{t.bounds} | {t.description} |"
        )
    return "\n".join(rows) + "\n"
