"""Settings of keys known at deploy time: strategy, attribute, initial N and ``max_shards``.

The stack lists them (``infra.config.StackParameters.key_settings``) and hands them to
the ingest functions as JSON (``DYNASHARD_KEY_SETTINGS``). Before its first write, each
ingest container creates every listed key that has no metadata item yet with its
settings (:class:`KeySettingsApplier`), through the library's own conditional writes
(:meth:`~dynashard.Dynashard.set_strategy`, :meth:`~dynashard.Dynashard.set_max_shards`).
So a ``calculated`` key is ``calculated`` before any event is written to it, whichever
trigger writes first, and racing containers agree (the same strategy again is a no-op).

A key that already has a metadata item is **never changed** from here: it may hold data
written under its stored strategy, and its cap may have been set since by an operator.
Where the stored settings differ from the stack's, the container logs a warning naming
both, once; the operator changes the key with ``PUT /shards/{key}/strategy`` (``force``)
or ``PUT /shards/{key}/max-shards`` (``dynashard strategy`` / ``dynashard cap``).

The model and :func:`parse_key_settings` are pure; the stack validates the same model at
synth time, so a bad setting stops the synth rather than a cold start.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from dynashard.core.keys import MAX_SHARD_COUNT
from dynashard.core.strategies import MAX_SHARD_ATTRIBUTE_LENGTH
from dynashard.errors import DynashardError, InvalidInputError, MetadataError

if TYPE_CHECKING:
    from dynashard.core.shard_info import ShardInfo

#: Longest ``DYNASHARD_KEY_SETTINGS`` value, bytes of compact JSON. Lambda allows 4 KB
#: for all of a function's environment variables together ("Lambda quotas", AWS Lambda
#: Developer Guide); the other variables of the stack take well under 2 KB.
MAX_KEY_SETTINGS_BYTES: Final = 2048


class KeySetting(BaseModel):
    """The settings of one logical key known at deploy time.

    Attributes
    ----------
    key : str
        Logical key, e.g. ``DEPARTURES#JFK`` (1 to 1,024 characters).
    strategy : {"random", "calculated"} or None
        How writers pick the key's shard; None leaves the default (``random``).
    attribute : str or None
        The ``data`` attribute a ``calculated`` key shards by (e.g. ``carrier``);
        required for ``calculated``, refused otherwise.
    shards : int or None
        N the key is created with, ``1..1000``; None: the stack's ``default_shards``.
    max_shards : int or None
        The key's own cap on N, ``1..1000`` and not below ``shards``; None: only the
        stack's ``max_shards``.

    Raises
    ------
    pydantic.ValidationError
        If a value is out of range, ``attribute`` does not go with ``strategy``, or
        the setting sets nothing.

    Examples
    --------
    >>> KeySetting(key="DEPARTURES#JFK", strategy="calculated", attribute="carrier").label
    'calculated(carrier)'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(min_length=1, max_length=1024)
    strategy: Literal["random", "calculated"] | None = None
    attribute: str | None = Field(None, min_length=1, max_length=MAX_SHARD_ATTRIBUTE_LENGTH)
    shards: int | None = Field(None, ge=1, le=MAX_SHARD_COUNT)
    max_shards: int | None = Field(None, ge=1, le=MAX_SHARD_COUNT)

    @model_validator(mode="after")
    def _consistent(self) -> KeySetting:
        """Check the attribute against the strategy and N against the cap."""
        if self.strategy == "calculated" and self.attribute is None:
            raise ValueError("strategy calculated needs an attribute (the data field to shard by)")
        if self.strategy != "calculated" and self.attribute is not None:
            raise ValueError("attribute goes with strategy calculated only")
        capped = self.shards is not None and self.max_shards is not None
        if capped and self.shards > self.max_shards:  # type: ignore[operator]
            raise ValueError(f"shards ({self.shards}) exceeds max_shards ({self.max_shards})")
        if self.strategy is None and self.shards is None and self.max_shards is None:
            raise ValueError("sets nothing: give strategy, shards or max_shards")
        return self

    @property
    def label(self) -> str:
        """str: The strategy as :attr:`ShardInfo.strategy_label` writes it."""
        strategy = self.strategy or "random"
        return strategy if self.attribute is None else f"{strategy}({self.attribute})"


_SETTINGS: Final = TypeAdapter(list[KeySetting])


def check_key_settings(settings: Sequence[KeySetting]) -> tuple[KeySetting, ...]:
    """Refuse a list that names a key twice or does not fit its environment variable.

    Parameters
    ----------
    settings : sequence of KeySetting
        The stack's settings.

    Returns
    -------
    tuple of KeySetting
        The same settings.

    Raises
    ------
    InvalidInputError
        Field ``key_settings[i].key`` for a key listed twice; ``key_settings`` when the
        JSON is longer than :data:`MAX_KEY_SETTINGS_BYTES`.
    """
    seen: set[str] = set()
    for i, setting in enumerate(settings):
        if setting.key in seen:
            raise InvalidInputError(f"key_settings[{i}].key", f"{setting.key!r} is listed twice")
        seen.add(setting.key)
    size = len(dump_key_settings(settings).encode())
    if size > MAX_KEY_SETTINGS_BYTES:
        raise InvalidInputError(
            "key_settings",
            f"{size} bytes as JSON, over {MAX_KEY_SETTINGS_BYTES} (Lambda allows 4 KB of "
            "environment in all); set the other keys with the API or the CLI",
        )
    return tuple(settings)


def parse_key_settings(raw: str | Sequence[Mapping[str, Any]] | None) -> tuple[KeySetting, ...]:
    """Parse key settings from JSON text or a list of mappings.

    Parameters
    ----------
    raw : str, sequence of mapping, or None
        ``[{"key": ..., "strategy": ..., "attribute": ..., "shards": ...,
        "max_shards": ...}, ...]`` as JSON text or already decoded; empty or None: none.

    Returns
    -------
    tuple of KeySetting
        The settings, in the order given.

    Raises
    ------
    InvalidInputError
        Naming the first offending field (``key_settings[0].attribute``), when the text
        is not JSON, a setting is invalid, a key is listed twice, or the whole is too
        long for its environment variable.

    Examples
    --------
    >>> parse_key_settings('[{"key": "K", "max_shards": 16}]')[0].max_shards
    16
    >>> parse_key_settings("")
    ()
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return ()
    try:
        value = json.loads(raw) if isinstance(raw, str) else list(raw)
        settings = _SETTINGS.validate_python(value)
    except json.JSONDecodeError as exc:
        raise InvalidInputError("key_settings", f"not JSON ({exc})") from exc
    except ValidationError as exc:
        error = exc.errors()[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        raise InvalidInputError(f"key_settings{where}", message) from exc
    return check_key_settings(settings)


def dump_key_settings(settings: Sequence[KeySetting]) -> str:
    """Return settings as the compact JSON of ``DYNASHARD_KEY_SETTINGS`` (unset fields left out).

    Examples
    --------
    >>> dump_key_settings([KeySetting(key="K", max_shards=4)])
    '[{"key":"K","max_shards":4}]'
    """
    return json.dumps(
        [s.model_dump(exclude_none=True) for s in settings], separators=(",", ":"), sort_keys=False
    )


class KeySettingsPort(Protocol):
    """The part of :class:`~dynashard.Dynashard` that applies key settings."""

    def shard_info(self, key: str) -> ShardInfo:
        """Read a key's metadata, fresh."""
        ...

    def set_strategy(
        self,
        key: str,
        strategy: str,
        *,
        attribute: str | None = None,
        force: bool = False,
        initial_shards: int | None = None,
    ) -> ShardInfo:
        """Set a key's strategy (conditional write; refused on a different one)."""
        ...

    def set_max_shards(self, key: str, cap: int | None) -> ShardInfo:
        """Set or remove a key's cap on N."""
        ...


class WarnSink(Protocol):
    """The logger methods used here (``logging.Logger`` and Powertools' ``Logger`` fit)."""

    def info(self, msg: object, *args: object, extra: Mapping[str, object] | None = None) -> None:
        """Log an INFO line with structured ``extra`` fields."""
        ...

    def warning(
        self, msg: object, *args: object, extra: Mapping[str, object] | None = None
    ) -> None:
        """Log a WARNING line with structured ``extra`` fields."""
        ...


@dataclass(frozen=True)
class KeySettingOutcome:
    """What applying one key's settings did.

    Attributes
    ----------
    key : str
        Logical key.
    action : {"created", "in_force", "differs"}
        ``created``: the key had no metadata and now has the settings; ``in_force``: it
        had them already; ``differs``: it has other settings, left as they are.
    detail : str
        For ``differs``, what differs (stored vs. the stack's); else empty.
    """

    key: str
    action: Literal["created", "in_force", "differs"]
    detail: str = ""


def _differences(setting: KeySetting, info: ShardInfo) -> list[str]:
    found = []
    if setting.strategy is not None and info.strategy_label != setting.label:
        found.append(f"strategy {info.strategy_label} (stack: {setting.label})")
    if setting.max_shards is not None and info.max_shards != setting.max_shards:
        found.append(f"max_shards {info.max_shards} (stack: {setting.max_shards})")
    return found


def apply_key_setting(port: KeySettingsPort, setting: KeySetting) -> KeySettingOutcome:
    """Create a key never seen with its settings; compare those of a stored key.

    Parameters
    ----------
    port : KeySettingsPort
        The facade.
    setting : KeySetting
        The key's settings.

    Returns
    -------
    KeySettingOutcome
        ``created``, ``in_force`` or ``differs`` (a stored key is never changed; a key
        another writer created meanwhile with another strategy is ``differs`` too).

    Raises
    ------
    MetadataError
        If the metadata table fails (nothing is decided; try again).
    InvalidInputError
        If a setting is out of the facade's range (e.g. ``max_shards`` above the
        stack's), which the stack's validation should have caught.
    """
    from dynashard.errors import StrategyConflictError

    info = port.shard_info(setting.key)
    if info.stored:
        differences = _differences(setting, info)
        if differences:
            return KeySettingOutcome(setting.key, "differs", "; ".join(differences))
        return KeySettingOutcome(setting.key, "in_force")
    try:
        if setting.strategy is not None or setting.shards is not None:
            info = port.set_strategy(
                setting.key,
                setting.strategy or "random",
                attribute=setting.attribute,
                initial_shards=setting.shards,
            )
    except StrategyConflictError as exc:  # another writer created it first, otherwise
        return KeySettingOutcome(setting.key, "differs", exc.message)
    if setting.max_shards is not None and info.max_shards != setting.max_shards:
        port.set_max_shards(setting.key, setting.max_shards)
    return KeySettingOutcome(setting.key, "created")


class KeySettingsApplier:
    """Applies the stack's key settings once per container, before its first write.

    Parameters
    ----------
    settings : sequence of KeySetting
        The stack's settings (``FunctionSettings.key_setting_list``).

    Attributes
    ----------
    pending : list of KeySetting
        Settings not applied yet (a metadata failure leaves a setting pending, so the
        next invocation tries again before writing).
    """

    def __init__(self, settings: Sequence[KeySetting]) -> None:
        self.pending: list[KeySetting] = list(settings)

    def ensure(self, port: KeySettingsPort, logger: WarnSink) -> list[KeySettingOutcome]:
        """Apply every pending setting; log each outcome; return them.

        Parameters
        ----------
        port : KeySettingsPort
            The facade the writes go through.
        logger : WarnSink
            ``key setting applied`` (INFO) for ``created``; ``key setting differs from
            the stored one`` (WARNING, with ``detail``) for ``differs``.

        Returns
        -------
        list of KeySettingOutcome
            One per setting applied by this call (empty once all are done).

        Raises
        ------
        MetadataError
            If the metadata table fails; the failed setting and those after it stay
            pending, so no event is written before its key's settings.
        """
        outcomes: list[KeySettingOutcome] = []
        while self.pending:
            setting = self.pending[0]
            try:
                outcome = apply_key_setting(port, setting)
            except MetadataError:
                raise
            except DynashardError as exc:  # a range the stack let through: say so, go on
                outcome = KeySettingOutcome(setting.key, "differs", exc.message)
            self.pending.pop(0)
            outcomes.append(outcome)
            extra = {"key": outcome.key, "action": outcome.action}
            if outcome.action == "differs":
                logger.warning(
                    "key setting differs from the stored one",
                    extra={**extra, "detail": outcome.detail, "stack": setting.label},
                )
            elif outcome.action == "created":
                logger.info("key setting applied", extra=extra)
        return outcomes
