"""The shard-metadata service: cached counts for writers, fresh ones for readers, the cooldown.

Over a :class:`~dynashard.dynamodb.metadata_store.MetadataStore` (the table's port),
:class:`ShardMetadata` gives writers a per-container cache whose entries live at most
``ttl_s`` seconds, gives readers the item read fresh (strongly consistent ``GetItem``),
and changes N only through the store's conditional updates, never within the cooldown,
with random back-off between racing writers (invariant 3: a reader queries every shard
of every count in ``shard_history``, so a writer still using an older count always
writes to a shard the reader queries). It also sets a key's strategy, range layout and
``max_shards``, and adopts a key whose items sit under its bare partition key
(:meth:`ShardMetadata.adopt`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dynashard import defaults
from dynashard.core.entropy import SYSTEM_RANDOM
from dynashard.core.keys import MAX_SHARD_COUNT, physical_key, split_physical_key
from dynashard.core.shard_info import GrowthReason, GrowthResult, ShardInfo
from dynashard.core.strategies import MAX_SHARD_ATTRIBUTE_LENGTH, Strategy
from dynashard.dynamodb.metadata_store import MetadataStore
from dynashard.errors import (
    InvalidInputError,
    MetadataError,
    StateConflictError,
    StrategyConflictError,
)

if TYPE_CHECKING:
    pass


@dataclass
class _CacheEntry:
    info: ShardInfo
    expires_at: float


@dataclass
class ShardMetadata:
    """Shard counts for writers (cached) and readers (fresh), and shard-count changes.

    Parameters
    ----------
    store : MetadataStore
        Where metadata lives.
    default_shards : int
        N of a key never seen (stored on a writer's first use).
    max_shards : int
        Upper bound of any key's N (at most 1,000).
    cooldown_s : float
        Minimum seconds between two changes of one key's N.
    cache_ttl_s : float
        Lifetime of a writer's cached entry, seconds. Readers never use the cache.
    clock : callable
        Returns epoch seconds (float); injectable for tests.
    sleep : callable
        Sleeps for the random back-off between racing growers; injectable for tests.
    throttle_refresh_s : float
        After throttling on a key, a writer drops its cached entry once it is this
        many seconds old (:meth:`refresh_after_throttle`), so a count the scaler just
        raised reaches a throttled writer within this many seconds rather than within
        ``cache_ttl_s``; at most one ``GetItem`` per throttled key per container per
        this many seconds. 5 s by default.

    Examples
    --------
    Against moto's in-process DynamoDB (no network), with a clock the example moves
    by hand: a key is created with one shard on first write, grows at once (its
    creation is not a change), then not again within the cooldown.

    >>> import boto3
    >>> from moto import mock_aws
    >>> from dynashard.dynamodb.metadata_store import DynamoDBMetadataStore
    >>> with mock_aws():
    ...     client = boto3.client("dynamodb", region_name="us-east-1")
    ...     _ = client.create_table(
    ...         TableName="shards",
    ...         AttributeDefinitions=[{"AttributeName": "key", "AttributeType": "S"}],
    ...         KeySchema=[{"AttributeName": "key", "KeyType": "HASH"}],
    ...         BillingMode="PAY_PER_REQUEST",
    ...     )
    ...     now = [1_357_000_000.0]
    ...     store = DynamoDBMetadataStore("shards", client)
    ...     meta = ShardMetadata(store, cooldown_s=60.0, clock=lambda: now[0])
    ...     first = meta.for_writer("DEPARTURES#JFK")
    ...     grown = meta.grow("DEPARTURES#JFK", 4)
    ...     too_soon = meta.grow("DEPARTURES#JFK", 8)
    ...     now[0] += 120
    ...     later = meta.grow("DEPARTURES#JFK", 8)
    ...     fresh = meta.for_reader("DEPARTURES#JFK")
    >>> first.number_of_shards, grown.reason, too_soon.reason, later.current
    (1, 'grown', 'cooldown', 8)
    >>> sorted(fresh.counts)
    [1, 4, 8]
    """

    store: MetadataStore
    default_shards: int = defaults.DEFAULT_SHARDS.default
    max_shards: int = defaults.MAX_SHARDS.default
    cooldown_s: float = defaults.COOLDOWN_S.default
    cache_ttl_s: float = defaults.METADATA_CACHE_TTL_S.default
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    throttle_refresh_s: float = 5.0
    _cache: dict[str, _CacheEntry] = field(default_factory=dict, init=False, repr=False)
    _growth_requested: dict[str, float] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= self.default_shards <= self.max_shards <= MAX_SHARD_COUNT:
            raise InvalidInputError(
                "shard counts",
                f"need 1 <= default_shards ({self.default_shards}) <= max_shards "
                f"({self.max_shards}) <= {MAX_SHARD_COUNT}",
            )

    def for_reader(self, key: str) -> ShardInfo:
        """Return a key's metadata read fresh, without creating it (readers only read).

        Parameters
        ----------
        key : str
            Logical key.

        Returns
        -------
        ShardInfo
            With ``stored=False`` and N = ``default_shards`` for a key never seen.

        Raises
        ------
        MetadataError
            If the metadata table cannot be read.
        """
        info = self.store.get(key)
        if info is None:
            return ShardInfo(key, self.default_shards, 0, ((0, self.default_shards),), stored=False)
        return info

    def for_writer(self, key: str, *, gsi1: tuple[str, str] | None = None) -> ShardInfo:
        """Return a key's metadata for a writer: cached up to ``cache_ttl_s`` seconds.

        A key never seen is created with N = ``default_shards`` (get-or-create).

        Parameters
        ----------
        key : str
            Logical key.
        gsi1 : tuple of (str, str), optional
            ``(unit, bucket)`` of the writer's item: a key created here is created with
            its GSI1 unit and that bucket's record (:meth:`MetadataStore.create`), so
            the key's first batch takes no ``UpdateItem`` for them.

        Returns
        -------
        ShardInfo
            The metadata in force, at most ``cache_ttl_s`` old.

        Raises
        ------
        MetadataError
            If the metadata table cannot be read or written.
        """
        now = self.clock()
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None and entry.expires_at > now:
                return entry.info
        info = self.store.get(key)
        if info is None:
            created = (
                self.store.create(key, self.default_shards, int(now))
                if gsi1 is None
                else self.store.create(key, self.default_shards, int(now), gsi1=gsi1)
            )
            info = created or self.store.get(key)
            if info is None:
                raise MetadataError(f"shard metadata of {key!r} vanished while being created")
        self._remember(info, now)
        return info

    def _remember(self, info: ShardInfo, now: float) -> None:
        with self._lock:
            self._cache[info.key] = _CacheEntry(info, now + self.cache_ttl_s)

    def invalidate(self, key: str) -> None:
        """Drop a key from the writer cache so the next write reads it fresh.

        Parameters
        ----------
        key : str
            Logical key.
        """
        with self._lock:
            self._cache.pop(key, None)

    def refresh_after_throttle(self, key: str) -> bool:
        """Drop a throttled key's cached entry once it is ``throttle_refresh_s`` old.

        A writer whose writes of ``key`` were throttled calls this, so its next write
        of the key reads the metadata again: when the scaler (or another writer) has
        just raised N, the throttled writer spreads over the new count within
        ``throttle_refresh_s`` seconds instead of within ``cache_ttl_s``. An entry
        read more recently is kept, which bounds the extra reads to one ``GetItem``
        per throttled key per container per ``throttle_refresh_s`` seconds (the fleet
        simulation's figures: docs/fleet-scale.md). Readers are unaffected: they never
        use the cache.

        Parameters
        ----------
        key : str
            Logical key whose writes were throttled (``UnprocessedItems`` or a
            throttling error).

        Returns
        -------
        bool
            True when the entry was dropped (the next write reads the table).
        """
        now = self.clock()
        with self._lock:
            entry = self._cache.get(key)
            if (
                entry is None
                or now - (entry.expires_at - self.cache_ttl_s) < self.throttle_refresh_s
            ):
                return False
            del self._cache[key]
            return True

    def grow(
        self,
        key: str,
        target: int,
        max_attempts: int = 5,
        *,
        reason: GrowthReason | None = None,
    ) -> GrowthResult:
        """Raise a key's N to ``target`` (never lowers it), honouring the cooldown.

        The change is a conditional ``UpdateItem`` on ``last_updated``; a grower that
        loses the race re-reads after a random back-off and stops if the key changed
        within the cooldown, so racing growers make one change per cooldown window.

        Parameters
        ----------
        key : str
            Logical key.
        target : int
            Wanted N; capped at the key's cap (:meth:`ShardInfo.cap`: its own
            ``max_shards``, :meth:`set_max_shards`, at most the configured
            ``max_shards``).
        max_attempts : int
            Conditional-update attempts before giving up.
        reason : {"read", "write", "write-load"}, optional
            The throttling the growth is for (the scaler's alarm kind, ``write-load``
            for a write growth sized on the write-load report), added to the key's
            ``grown_for`` when N changes: a key grown for reads shrinks only on
            read-load evidence (:func:`dynashard.planning.shrinking.plan_shrink`).

        Returns
        -------
        GrowthResult
            What happened; ``reason`` says why nothing changed when ``changed`` is False
            (``capped`` when the key is at its cap).

        Raises
        ------
        InvalidInputError
            If ``target < 1``.
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        if target < 1:
            raise InvalidInputError("target", f"must be >= 1, got {target}")
        return self._change(
            key, target, grow_only=True, max_attempts=max_attempts, grown_for=reason
        )

    def request_growth(self, key: str, factor: int = 2) -> GrowthResult | None:
        """Ask in-band for more shards after key-range throttling on ``key``.

        Doubles N (by default) through :meth:`grow`, so the same conditional update
        and cooldown apply as for the scaler. A container asks at most once per
        cooldown per key: later requests in the window return None without I/O.

        Parameters
        ----------
        key : str
            Logical key whose writes met ``...KeyRangeThroughputExceeded``.
        factor : int
            Growth factor, ``>= 2``.

        Returns
        -------
        GrowthResult or None
            None when this container already asked within the cooldown.

        Raises
        ------
        MetadataError
            If the metadata table fails.
        """
        now = self.clock()
        with self._lock:
            last = self._growth_requested.get(key)
            if last is not None and now - last < self.cooldown_s:
                return None
            self._growth_requested[key] = now
        current = self.for_writer(key).number_of_shards
        result = self.grow(key, max(current + 1, current * factor))
        if result.changed:
            self.invalidate(key)
        return result

    def adopt(self, key: str, max_attempts: int = 5) -> ShardInfo:
        """Adopt a key whose items already sit under its bare partition key.

        An application that used DynamoDB before dynashard has items under
        ``PK = {key}`` itself. Adoption keeps them where they are: it sets ``adopted``
        in the key's metadata (conditional writes; a key never seen is created with
        N = ``default_shards``), after which every read also queries the bare key
        (:func:`dynashard.dynamodb.reader.physical_keys_to_query`) and every counter read adds
        its bare item; writers keep writing to shards ``0..N-1`` only, and N grows from
        there as for any key. Idempotent; adoption is never undone.

        The application's own writer may keep writing the bare key during a cut-over:
        reads include what it writes, and a read paging with a cursor resumes the bare
        key after the cursor's position, as it does every shard (an item written behind
        the cursor is not shown, as on a shard). Items in another program's shape are
        read through the table's codec (:func:`dynashard.dynamodb.reader.foreign_event`);
        :meth:`dynashard.Dynashard.adopt` surveys them first.

        A key of the physical-key form ``{prefix}#{d}`` (``SENSOR#42``) is refused
        unless its bare partition key can never be one of ``prefix``'s shards
        (physical keys are ``{logical}#{shard}``, :func:`dynashard.core.keys.physical_key`):
        ``prefix`` must have a cap of its own of at most ``d`` (:meth:`set_max_shards`;
        it creates ``prefix``'s item if needed) and never have had more than ``d``
        shards. Otherwise reads of ``prefix`` would return the adopted key's items and
        the scaler could not tell their heat apart. Raising ``prefix``'s cap past ``d``
        later is refused in turn (:meth:`set_max_shards`, :meth:`set_count`).

        Parameters
        ----------
        key : str
            Logical key (the bare partition key of the existing items).
        max_attempts : int
            Conditional-write attempts before giving up.

        Returns
        -------
        ShardInfo
            The metadata, ``adopted`` True.

        Raises
        ------
        InvalidInputError
            If the key's bare partition key is, or could become, a shard of another
            logical key (field ``key``; the message says which and how to cap it).
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        self._refuse_alias(key)
        for attempt in range(max_attempts):
            now = self.clock()
            info = self.store.adopt(key, self.default_shards, int(now))
            if info is not None:
                self._remember(info, now)
                return info
            self.sleep(SYSTEM_RANDOM.uniform(0.0, 0.1 * (2**attempt)))
        raise MetadataError(f"adopting {key!r} lost {max_attempts} races in a row")

    def _refuse_alias(self, key: str) -> None:
        """Refuse to adopt ``key`` when its bare partition key is or may become a shard."""
        try:
            prefix, shard = split_physical_key(key)
        except InvalidInputError:
            return  # not of the form {logical}#{shard}: no shard can alias it
        info = self.store.get(prefix)
        if info is not None and shard < info.max_count:
            raise InvalidInputError(
                "key",
                f"adopting {key!r} is refused: its bare partition key is shard {shard} of the "
                f"logical key {prefix!r} (physical keys are {{logical}}#{{shard}}), which has "
                f"had {info.max_count} shards, so reads of {prefix!r} would return its items",
            )
        cap = None if info is None else info.max_shards
        if cap is None or cap > shard:
            raise InvalidInputError(
                "key",
                f"adopting {key!r} is refused: its bare partition key would be shard {shard} of "
                f"the logical key {prefix!r} if {prefix!r} grew past {shard} shards; cap it "
                f"first with set_max_shards({prefix!r}, {shard})",
            )

    def _refuse_growth_onto_adopted(self, key: str, start: int, stop: int) -> None:
        """Refuse to let ``key`` use shards ``start..stop-1`` when one is an adopted key."""
        if stop <= start:
            return
        candidates = [physical_key(key, shard) for shard in range(start, stop)]
        adopted = self.store.adopted_keys(candidates)
        if adopted:
            first = min(adopted, key=lambda k: split_physical_key(k)[1])
            raise InvalidInputError(
                "max_shards",
                f"{key!r} may not use {stop} shards: shard {split_physical_key(first)[1]} "
                f"would be {first!r}, the bare partition key of an adopted key",
            )

    def set_count(
        self,
        key: str,
        count: int,
        max_attempts: int = 5,
        *,
        honour_cooldown: bool = False,
        force: bool = False,
    ) -> GrowthResult:
        """Set a key's N (operator path; may shrink), with the same conditional update.

        Data written under a larger N stays where it is; readers keep querying every
        shard in ``shard_history``. By default the cooldown does not apply to an
        operator's set; with ``honour_cooldown`` it does, as for the scaler's growth
        (it runs from the key's last change of N, not from its creation). A count
        above the key's own ``max_shards`` (:meth:`set_max_shards`) is refused unless
        ``force`` is True.

        Parameters
        ----------
        key : str
            Logical key.
        count : int
            New N, ``1 <= count <= max_shards``.
        max_attempts : int
            Conditional-update attempts before giving up.
        honour_cooldown : bool
            Refuse (reason ``cooldown``) within ``cooldown_s`` of the key's last change.
        force : bool
            Set a count above the key's own ``max_shards`` (the cap stays; growth by
            the scaler or in-band stops at it).

        Returns
        -------
        GrowthResult
            ``reason`` is ``set`` when changed, ``already_sufficient`` when N already was
            ``count``, ``cooldown`` when refused by the cooldown, ``ordered`` for an
            ordered key (its N is its range layout's).

        Raises
        ------
        InvalidInputError
            If ``count`` is out of range: below 1, above the configured ``max_shards``,
            or above the key's own ``max_shards`` without ``force`` (the message names
            the cap).
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        if not 1 <= count <= self.max_shards:
            raise InvalidInputError("count", f"must be within 1..{self.max_shards}, got {count}")
        return self._change(
            key,
            count,
            grow_only=False,
            max_attempts=max_attempts,
            honour_cooldown=honour_cooldown,
            force=force,
        )

    def set_max_shards(self, key: str, cap: int | None, max_attempts: int = 5) -> ShardInfo:
        """Set a key's own cap on N (attribute ``max_shards``), or remove it with None.

        Every growth path stops at the cap: :meth:`grow` (the scaler and the
        facade), :meth:`request_growth` (in-band growth of a throttled writer), the
        scaler's plan (:func:`dynashard.planning.scaling.grow_keys`), and
        :meth:`set_count` unless forced. The configured ``max_shards`` still bounds
        every key; a key's cap can only lower it. A key never seen is created with
        N = ``default_shards`` and the cap. The change is a compare-and-set on N
        (re-read after a random back-off on a lost race); it leaves N, ``last_updated``
        (the cooldown clock) and ``shard_history`` as they are.

        Parameters
        ----------
        key : str
            Logical key.
        cap : int or None
            The key's cap, ``1..max_shards`` (configured), and not below the key's N in
            force; None removes the key's cap.
        max_attempts : int
            Conditional-write attempts before giving up.

        Returns
        -------
        ShardInfo
            The key's metadata with the cap in force (``stored`` False only when
            removing the cap of a key never seen, which writes nothing).

        Raises
        ------
        InvalidInputError
            If ``cap`` is out of range, or below the key's N in force (lower N first
            with :meth:`set_count`; data already written stays where it is).
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        if cap is not None and not 1 <= cap <= self.max_shards:
            raise InvalidInputError(
                "max_shards", f"must be within 1..{self.max_shards} or None, got {cap}"
            )
        for attempt in range(max_attempts):
            now = self.clock()
            info = self.store.get(key)
            count = self.default_shards if info is None else info.number_of_shards
            if cap is not None and count > cap:
                raise InvalidInputError(
                    "max_shards",
                    f"{cap} is below the {count} shard(s) of {key!r} in force; lower its "
                    "count first (set_count)",
                )
            if info is not None:  # a raised cap must not reach an adopted {key}#{d}
                new_cap = self.max_shards if cap is None else cap
                self._refuse_growth_onto_adopted(key, info.cap(self.max_shards), new_cap)
            if info is None and cap is None:
                return self.for_reader(key)
            if info is not None and info.max_shards == cap:
                self._remember(info, now)
                return info
            stored = self.store.put_max_shards(key, cap, info, self.default_shards, int(now))
            if stored is not None:
                self._remember(stored, now)
                return stored
            self.sleep(SYSTEM_RANDOM.uniform(0.0, 0.1 * (2**attempt)))
        raise MetadataError(f"max_shards of {key!r} kept changing under {max_attempts} attempts")

    def shrink(self, key: str, target: int, max_attempts: int = 5) -> GrowthResult:
        """Lower a key's N to ``target`` (never raises it), honouring the cooldown.

        The scaler's shrink sweep calls this (:mod:`dynashard.planning.shrinking`). The same
        conditional ``UpdateItem`` on ``last_updated`` as :meth:`grow`, and the new
        count joins ``shard_history``, so readers keep querying every shard any count
        in force could have used; data written under the larger N stays where it is.
        Unlike a growth, a shrink is refused within ``cooldown_s`` of the key's
        creation too.

        Parameters
        ----------
        key : str
            Logical key.
        target : int
            Wanted N; raised to ``default_shards`` when below it.
        max_attempts : int
            Conditional-update attempts before giving up.

        Returns
        -------
        GrowthResult
            ``reason`` is ``shrunk`` when changed, else ``already_smaller``,
            ``cooldown`` or ``not_stored``.

        Raises
        ------
        InvalidInputError
            If ``target < 1``.
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        if target < 1:
            raise InvalidInputError("target", f"must be >= 1, got {target}")
        target = max(target, self.default_shards)
        return self._change(
            key, target, grow_only=False, max_attempts=max_attempts, shrink_only=True
        )

    def sharded_keys(self) -> list[ShardInfo]:
        """Return every key whose N is above ``default_shards`` (a Scan of the table).

        Returns
        -------
        list of ShardInfo
            See :meth:`DynamoDBMetadataStore.scan_sharded` for the cost.

        Raises
        ------
        MetadataError
            If the metadata table cannot be scanned.
        """
        return self.store.scan_sharded(self.default_shards)

    def set_strategy(
        self,
        key: str,
        strategy: Strategy | str,
        attribute: str | None = None,
        *,
        force: bool = False,
        initial_shards: int | None = None,
        max_attempts: int = 5,
    ) -> ShardInfo:
        """Set how writers pick a key's shard: ``random``, or ``calculated`` by an attribute.

        A key never seen is created with the strategy and N = ``initial_shards``
        (default ``default_shards``), so that its ``shard_history`` starts there. A key
        that already has the same strategy (and attribute) is left alone. A key that
        has a different one, including a stored key without a ``strategy`` attribute,
        which is ``random`` and may hold data written so, is **refused** with
        :class:`~dynashard.errors.StrategyConflictError` unless ``force`` is True:
        events already written stay on the shards their strategy chose, so a targeted
        read after a silent change would miss them. Set the strategy before the key's
        first write (or its first :meth:`set_count`).

        The change is a compare-and-set on the strategy read (conditional
        ``PutItem``/``UpdateItem``, re-read after a random back-off on a lost race), like
        the shard-count changes; it leaves ``number_of_shards``, ``last_updated`` (the
        cooldown clock) and ``shard_history`` as they are. This container's writer cache
        takes the new strategy at once; other writers within ``cache_ttl_s`` seconds.

        Parameters
        ----------
        key : str
            Logical key.
        strategy : Strategy or str
            ``random`` or ``calculated``.
        attribute : str, optional
            The ``data`` attribute a ``calculated`` key shards by (e.g. ``carrier``),
            1 to 255 characters; must be omitted for ``random``.
        force : bool
            Change a key that already has a different strategy.
        initial_shards : int, optional
            N of the key when this call creates it, ``1..max_shards``; a stored key
            keeps its N (change it with :meth:`set_count`).
        max_attempts : int
            Conditional-write attempts before giving up.

        Returns
        -------
        ShardInfo
            The key's metadata with the strategy in force.

        Raises
        ------
        InvalidInputError
            If the strategy is not ``random`` or ``calculated`` (field ``strategy``), or
            the attribute is missing, too long or given for ``random`` (``attribute``),
            or ``initial_shards`` is out of range.
        StrategyConflictError
            If the key has a different strategy and ``force`` is False.
        StateConflictError
            Naming ``strategy``, if the key is an ordered index (its layout is fixed;
            ``force`` does not apply).
        MetadataError
            If the metadata table fails, or every attempt lost its race.
        """
        wanted, attribute = _check_strategy(strategy, attribute)
        count = self.default_shards if initial_shards is None else initial_shards
        if not 1 <= count <= self.max_shards:
            raise InvalidInputError(
                "initial_shards", f"must be within 1..{self.max_shards}, got {count}"
            )
        for attempt in range(max_attempts):
            now = self.clock()
            info = self.store.get(key)
            if info is not None and (info.strategy, info.shard_attribute) == (wanted, attribute):
                self._remember(info, now)
                return info
            if info is not None and info.strategy is Strategy.ORDERED:
                # Its items are index entries under range shards, not events: a random or
                # calculated strategy would send event reads to them (never, even forced).
                raise StateConflictError(
                    "strategy",
                    f"{key!r} is an ordered index: its range layout is fixed and its strategy "
                    "cannot change, even with force",
                )
            if info is not None and not force:
                label = wanted.value if attribute is None else f"{wanted.value}({attribute})"
                raise StrategyConflictError(key, info.strategy_label, label)
            stored = self.store.put_strategy(
                key, wanted, attribute, expected=info, count=count, now=int(now)
            )
            if stored is not None:
                self._remember(stored, now)
                return stored
            self.sleep(SYSTEM_RANDOM.uniform(0.0, 0.1 * (2**attempt)))
        raise MetadataError(f"strategy of {key!r} kept changing under {max_attempts} attempts")

    def _change(
        self,
        key: str,
        target: int,
        *,
        grow_only: bool,
        max_attempts: int,
        shrink_only: bool = False,
        honour_cooldown: bool = False,
        force: bool = False,
        grown_for: str | None = None,
    ) -> GrowthResult:
        first: int | None = None
        wanted = target  # a growth's wish, before the caps
        if grow_only:
            target = min(target, self.max_shards)
        done = "grown" if grow_only else "shrunk" if shrink_only else "set"
        for attempt in range(max_attempts):
            now = self.clock()
            info = self.store.get(key)
            if info is None and shrink_only:
                return GrowthResult(
                    key, self.default_shards, self.default_shards, False, "not_stored"
                )
            if info is None:
                created = self.store.create(key, target, int(now))
                if created is not None:
                    self._remember(created, now)
                    return GrowthResult(key, self.default_shards, target, True, done)
                continue
            if first is None:
                first = info.number_of_shards
            if info.strategy is Strategy.ORDERED:  # N is its range layout's, not load's
                self._remember(info, now)
                return GrowthResult(key, first, info.number_of_shards, False, "ordered")
            cap = info.cap(self.max_shards)
            if grow_only:
                target = min(wanted, cap)
            elif not shrink_only and not force and target > cap:
                raise InvalidInputError(
                    "count",
                    f"{target} is above the max_shards of {key!r}, {cap}; raise the cap "
                    "(set_max_shards) or force the count",
                )
            elif not shrink_only and target > cap:  # forced: never onto an adopted key
                self._refuse_growth_onto_adopted(key, max(cap, info.max_count), target)
            if shrink_only and info.number_of_shards <= target:
                self._remember(info, now)
                return GrowthResult(key, first, info.number_of_shards, False, "already_smaller")
            if info.number_of_shards == target or (grow_only and info.number_of_shards > target):
                self._remember(info, now)
                at_cap = grow_only and info.number_of_shards < wanted
                reason = "capped" if at_cap else "already_sufficient"
                return GrowthResult(key, first, info.number_of_shards, False, reason)
            # The cooldown runs from the last change of N; a key's creation is not one,
            # so a key that is hot from its first write can grow at once.
            # last_updated may run up to a second ahead of the clock (two changes within
            # one second get distinct epochs), so a zero cooldown must not compare it.
            changed_before = len(info.history) > 1
            in_cooldown = self.cooldown_s > 0 and now - info.last_updated < self.cooldown_s
            if ((grow_only or honour_cooldown) and changed_before and in_cooldown) or (
                shrink_only and in_cooldown
            ):
                self._remember(info, now)
                return GrowthResult(key, first, info.number_of_shards, False, "cooldown")
            epoch = max(int(now), info.last_updated + 1)
            updated = (
                self.store.update(key, target, info.last_updated, epoch)
                if grown_for is None
                else self.store.update(key, target, info.last_updated, epoch, grown_for=grown_for)
            )
            if updated is not None:
                self._remember(updated, now)
                return GrowthResult(key, first, target, True, done)
            # Lost the race: back off a random fraction of a second, then re-read.
            self.sleep(SYSTEM_RANDOM.uniform(0.0, 0.1 * (2**attempt)))
        raise MetadataError(f"shard count of {key!r} kept changing under {max_attempts} attempts")


def _check_strategy(strategy: Strategy | str, attribute: str | None) -> tuple[Strategy, str | None]:
    """Validate a strategy and its attribute; return them normalized."""
    try:
        wanted = Strategy(strategy)
    except ValueError as exc:
        raise InvalidInputError(
            "strategy", f"must be random or calculated, got {strategy!r}"
        ) from exc
    if wanted is Strategy.RANDOM:
        if attribute is not None:
            raise InvalidInputError("attribute", "only the calculated strategy takes one")
        return wanted, None
    if wanted is not Strategy.CALCULATED:
        raise InvalidInputError("strategy", f"must be random or calculated, got {strategy!r}")
    if not attribute or len(attribute) > MAX_SHARD_ATTRIBUTE_LENGTH:
        raise InvalidInputError(
            "attribute",
            f"the calculated strategy needs a data attribute name of 1 to "
            f"{MAX_SHARD_ATTRIBUTE_LENGTH} characters, got {attribute!r}",
        )
    return wanted, attribute
