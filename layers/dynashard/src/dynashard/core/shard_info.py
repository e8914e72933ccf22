"""What the shard-metadata table says of one logical key: its counts over time (pure values).

After the AWS Database Blog post "Choosing the right number of shards for your
large-scale Amazon DynamoDB table": ``number_of_shards`` (N in force for writers),
``last_updated`` (epoch seconds; the optimistic lock and the cooldown clock) and
``shard_history`` (every ``"{epoch}:{count}"`` ever in force, :func:`parse_history`).
:class:`ShardInfo` is that item as the planners, the readers and the scaler speak it;
:class:`GrowthResult` what a conditional change of N did. Reading and writing the item
is :mod:`dynashard.dynamodb.metadata_store`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from dynashard.core.strategies import Strategy
from dynashard.errors import MetadataError

if TYPE_CHECKING:
    pass

#: What the scaler records in a key's ``grown_for`` when it grows it: the throttling the
#: growth is for, ``read`` or ``write``, or :data:`WRITE_LOAD_GROWTH`.
GrowthReason = Literal["read", "write", "write-load"]
#: A growth for write throttling sized on the stack's write-load report, which named the
#: key: the ingest functions log its writes, so a later report that leaves it out bounds
#: its load (:func:`dynashard.planning.shrinking.shrink_cool_keys`) instead of saying
#: nothing of it.
WRITE_LOAD_GROWTH: Final = "write-load"


@dataclass(frozen=True)
class ShardInfo:
    """The shard metadata of one logical key.

    Attributes
    ----------
    key : str
        Logical key.
    number_of_shards : int
        N in force for writers.
    last_updated : int
        Epoch seconds of the last change (0 for a key never stored).
    history : tuple of (int, int)
        ``(since_epoch_s, count)`` for every count ever in force, oldest first.
    stored : bool
        False when the key has no metadata item yet (N is the default).
    strategy : Strategy
        How writers pick a shard (attribute ``strategy``; ``random`` when absent).
    shard_attribute : str or None
        The ``data`` attribute a ``calculated`` key shards by (attribute
        ``shard_attribute``); None for other strategies.
    adopted : bool
        True when the key was adopted with items under its bare partition key
        (:meth:`ShardMetadata.adopt`): readers query that key too.
    gsi1_shards : tuple of (str, int)
        ``(bucket, count)``: the largest shard count writers used for each time bucket
        they recorded (attributes ``gsi1_shards#{bucket}``, :mod:`dynashard.dynamodb.gsi_buckets`).
    gsi1_pruned : str or None
        The newest bucket label whose record was ever pruned (attribute
        ``gsi1_pruned``): records of labels at or before it are not trusted.
    gsi1_units : frozenset of str
        Every time-bucket unit writers used in the key's GSI1 partition keys (attribute
        ``gsi1_units``).
    bucket_unit : str or None
        The unit of a time-bucketed family key's bucket keys, fixed at its first write
        (attribute ``bucket_unit``; :mod:`dynashard.core.families`).
    max_shards : int or None
        The key's own cap on N (attribute ``max_shards``, set with
        :meth:`dynashard.dynamodb.shard_metadata.ShardMetadata.set_max_shards`); None when
        the key has none and only the configured cap applies (:meth:`cap`).
    grown_for : frozenset of str
        The throttling the scaler grew the key for, ``read`` and/or ``write``, and
        ``write-load`` (:data:`WRITE_LOAD_GROWTH`) when a write growth was sized on the
        write-load report (attribute ``grown_for``): a key grown for reads shrinks only
        on read-load evidence (:func:`dynashard.planning.shrinking.plan_shrink`); a key
        grown on the write-load report may shrink on the bound a report that leaves it
        out gives (:func:`dynashard.planning.shrinking.shrink_cool_keys`).

    Examples
    --------
    A key that grew from 1 to 8 shards and shrank to 2: readers still query 8 shards.

    >>> history = ((1_357_000_000, 1), (1_357_050_000, 8), (1_357_100_000, 2))
    >>> info = ShardInfo("DEPARTURES#JFK", 2, 1_357_100_000, history)
    >>> sorted(info.counts), info.max_count
    ([1, 2, 8], 8)
    """

    key: str
    number_of_shards: int
    last_updated: int
    history: tuple[tuple[int, int], ...]
    stored: bool = True
    strategy: Strategy = Strategy.RANDOM
    shard_attribute: str | None = None
    adopted: bool = False
    gsi1_shards: tuple[tuple[str, int], ...] = ()
    gsi1_pruned: str | None = None
    gsi1_units: frozenset[str] = frozenset()
    bucket_unit: str | None = None
    max_shards: int | None = None
    grown_for: frozenset[str] = frozenset()

    def cap(self, configured: int) -> int:
        """Return the cap on this key's N: its own ``max_shards``, at most ``configured``.

        Parameters
        ----------
        configured : int
            The cap of every key (``DYNASHARD_MAX_SHARDS``, at most 1,000).

        Returns
        -------
        int
            ``min(configured, max_shards)``; ``configured`` when the key has no cap.

        Examples
        --------
        >>> ShardInfo("K", 1, 0, (), max_shards=2).cap(1000), ShardInfo("K", 1, 0, ()).cap(64)
        (2, 64)
        """
        return configured if self.max_shards is None else min(configured, self.max_shards)

    @property
    def counts(self) -> frozenset[int]:
        """Frozenset of int: Every shard count in ``history`` and the current one."""
        return frozenset(c for _, c in self.history) | {self.number_of_shards}

    @property
    def max_count(self) -> int:
        """int: The largest count ever in force; readers query shards ``0..max_count-1``."""
        return max(self.counts)

    @property
    def strategy_label(self) -> str:
        """str: ``random``, or ``calculated({shard_attribute})``, for messages."""
        if self.shard_attribute is None:
            return self.strategy.value
        return f"{self.strategy.value}({self.shard_attribute})"

    def to_json(self) -> dict[str, Any]:
        """Return the key's metadata as JSON (the body of ``GET /shards/{key}``).

        Returns
        -------
        dict
            ``{"key", "number_of_shards", "last_updated", "shard_history", "strategy",
            "shard_attribute", "adopted", "max_shards"}``; ``shard_history`` (the metadata table's
            attribute name) is a list of ``{"since": epoch_s, "count": n}``, oldest
            first; ``shard_attribute`` is None unless the strategy is ``calculated``;
            ``max_shards`` is None unless the key has a cap of its own.
        """
        return {
            "key": self.key,
            "number_of_shards": self.number_of_shards,
            "last_updated": self.last_updated,
            "shard_history": [{"since": since, "count": count} for since, count in self.history],
            "strategy": self.strategy.value,
            "shard_attribute": self.shard_attribute,
            "adopted": self.adopted,
            "max_shards": self.max_shards,
        }


@dataclass(frozen=True)
class GrowthResult:
    """What a shard-count change did.

    Attributes
    ----------
    key : str
        Logical key.
    previous : int
        N before.
    current : int
        N after (equal to ``previous`` when nothing changed).
    changed : bool
        True when this call changed N.
    reason : str
        ``grown``, ``shrunk``, ``set``, ``already_sufficient``, ``already_smaller`` (a
        shrink to a count N is already at or below), ``not_stored`` (a shrink of a key
        never stored), ``cooldown`` (changed less than ``cooldown_s`` ago, by this or
        another grower), ``capped`` (at ``max_shards``, the configured one or the key's
        own, :meth:`ShardInfo.cap`) or ``ordered`` (an ordered
        index keeps the count of its range layout).
    """

    key: str
    previous: int
    current: int
    changed: bool
    reason: str


def parse_history(entries: set[str] | list[str] | tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    """Parse ``shard_history`` strings ``"{epoch}:{count}"``, oldest first.

    Parameters
    ----------
    entries : iterable of str
        The string set as stored.

    Returns
    -------
    tuple of (int, int)
        Sorted ``(epoch_s, count)`` pairs.

    Raises
    ------
    MetadataError
        If an entry is not of the form ``"{int}:{int}"``.

    Examples
    --------
    >>> parse_history({"1357050000:8", "1357000000:1"})
    ((1357000000, 1), (1357050000, 8))
    """
    parsed = []
    for entry in entries:
        since, sep, count = entry.partition(":")
        if not sep or not since.isdigit() or not count.isdigit():
            raise MetadataError(f"shard_history entry {entry!r} is not '{{epoch}}:{{count}}'")
        parsed.append((int(since), int(count)))
    return tuple(sorted(parsed))
