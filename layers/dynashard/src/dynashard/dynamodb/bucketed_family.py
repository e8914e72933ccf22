"""Time-bucketed key families: their writes under bucket keys, their unit, their reads.

A family configured as bucketed (``DynashardConfig.bucketed_keys``,
:mod:`dynashard.core.families`) writes each event under the logical key of its event
time's bucket, ``{key}#{label}``, and reads a window of the family bucket by bucket
(:class:`~dynashard.dynamodb.bucketed_reader.BucketedReader`). The bucket size, the
family's *unit*, is stored with the family key at its first write and never changes
after (:mod:`dynashard.dynamodb.family_units`): reads build bucket keys with the stored
unit, and a write whose configured unit differs is refused, not split over two bucket
layouts.

:class:`BucketedFamilies` holds that logic behind a port, :class:`FamilyUnitStore`
(the DynamoDB adapter is :class:`~dynashard.dynamodb.family_units.DynamoDBFamilyUnits`),
so that :class:`~dynashard.facade.Dynashard` only wires it: the facade builds one per
call over its current client and metadata, and keeps the units it learnt in one
:class:`FamilyUnitCache` for good (a stored unit never changes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from dynashard.core.buckets import TimeBucket
from dynashard.core.families import BucketFamily, bucket_key, family_of
from dynashard.dynamodb.bucketed_reader import BucketedReader, BucketPageReader
from dynashard.errors import DynashardError, InvalidInputError, MetadataError

if TYPE_CHECKING:
    from typing import Unpack

    from dynashard.dynamodb.planned_reader import ReadOptions
    from dynashard.dynamodb.reader import Page
    from dynashard.dynamodb.writer import WriteOutcome
    from dynashard.model import Event


class FamilyUnitStore(Protocol):
    """Port: where a family's unit is stored (the family key's metadata item)."""

    def stored(self, key: str) -> str | None:
        """Return the family's stored unit, read fresh; None when none is stored yet."""
        ...

    def pin(self, key: str, unit: TimeBucket) -> str:
        """Store ``unit`` unless the family has one (its first write); return the stored one.

        Creates the family key's metadata item when it has none.
        """
        ...


@dataclass
class FamilyUnitCache:
    """The units writers learnt, per family key: stored once, they never change.

    Attributes
    ----------
    units : dict of str to TimeBucket
        Family key -> its stored unit.
    """

    units: dict[str, TimeBucket] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def get(self, key: str) -> TimeBucket | None:
        """Return the unit learnt for ``key``, or None."""
        with self.lock:
            return self.units.get(key)

    def put(self, key: str, unit: TimeBucket) -> None:
        """Remember ``key``'s stored unit."""
        with self.lock:
            self.units[key] = unit


def stored_unit(key: str, stored: str) -> TimeBucket:
    """Parse a family's stored ``bucket_unit``.

    Parameters
    ----------
    key : str
        Family key (named in the error).
    stored : str
        The stored text.

    Returns
    -------
    TimeBucket
        The unit.

    Raises
    ------
    MetadataError
        If the text is not ``hour``, ``day`` or ``month``.
    """
    try:
        return TimeBucket(stored)
    except ValueError as exc:
        raise MetadataError(f"family {key!r} has an unknown bucket_unit {stored!r}") from exc


class BucketedFamilies:
    """Writes and reads of time-bucketed key families, over a store of their units.

    Parameters
    ----------
    families : tuple of BucketFamily
        The configured families (``DynashardConfig.bucketed_keys``).
    units : FamilyUnitStore
        Where each family's unit is stored.
    cache : FamilyUnitCache, optional
        Units already learnt (shared by the facade across calls); a new one if None.
    """

    def __init__(
        self,
        families: tuple[BucketFamily, ...],
        units: FamilyUnitStore,
        cache: FamilyUnitCache | None = None,
    ) -> None:
        self.families = families
        self.units = units
        self.cache = cache if cache is not None else FamilyUnitCache()

    def put_events(
        self, events: Sequence[Event], write: Callable[[Sequence[Event]], list[WriteOutcome]]
    ) -> list[WriteOutcome]:
        """Write events, each of a family under its bucket key; the rest as they are.

        Parameters
        ----------
        events : sequence of Event
            Validated events.
        write : callable
            Writes events to their shards and returns one outcome each, in order
            (:meth:`~dynashard.dynamodb.writer.ShardedWriter.write`).

        Returns
        -------
        list of WriteOutcome
            One per event, in input order. An event of a family whose stored unit is not
            the configured one fails ``permanent`` with ``InvalidInputError`` (field
            ``bucketed_keys``); one whose family unit cannot be read or stored
            (``MetadataError``) fails not permanent (send it again).
        """
        if not events:
            return []
        if not self.families:
            return write(events)
        from dynashard.dynamodb.writer import WriteOutcome

        refused: dict[int, WriteOutcome] = {}
        to_write: list[Event] = []
        for index, event in enumerate(events):
            try:
                to_write.append(self._to_bucket(event))
            except DynashardError as exc:
                refused[index] = WriteOutcome.refused(event, exc)
        written = iter(write(to_write))
        return [refused[i] if i in refused else next(written) for i in range(len(events))]

    def write_key(self, event: Event) -> str:
        """Return the logical key an event is written under: its bucket key, or its own.

        Parameters
        ----------
        event : Event
            An event.

        Returns
        -------
        str
            ``{key}#{label}`` for a time-bucketed family, the label in the family's
            stored unit (stored now at the family's first use), else ``event.key``.

        Raises
        ------
        InvalidInputError
            If the family was first written under another unit than the configured one
            (field ``bucketed_keys``).
        MetadataError
            If the family's unit cannot be read or stored.
        """
        family = family_of(event.key, self.families)
        if family is None:
            return event.key
        return bucket_key(event.key, event.ts, self.write_unit(event.key, family.unit))

    def _to_bucket(self, event: Event) -> Event:
        key = self.write_key(event)
        return event if key == event.key else event.model_copy(update={"key": key})

    def write_unit(self, key: str, configured: TimeBucket) -> TimeBucket:
        """Return the unit a family is written with: the stored one, which must be ``configured``.

        Parameters
        ----------
        key : str
            Family key.
        configured : TimeBucket
            The unit the configuration gives it now.

        Returns
        -------
        TimeBucket
            The stored unit (``configured``, stored now at the family's first write).

        Raises
        ------
        InvalidInputError
            If the family was first written under another unit (field
            ``bucketed_keys``, both units named).
        MetadataError
            If the unit cannot be read or stored, or the stored one is unknown.
        """
        stored = self.cache.get(key)
        if stored is None:
            stored = stored_unit(key, self.units.pin(key, configured))
            self.cache.put(key, stored)  # a stored unit never changes: cached for good
        if stored is not configured:
            raise InvalidInputError(
                "bucketed_keys",
                f"{key!r} has been time-bucketed by {stored} since its first write (bucket "
                f"keys {key}#<{stored} label>), the configuration says {configured}; events "
                f"are not split over two bucket layouts: restore {stored} for this family, "
                "or write under a new family name",
            )
        return stored

    def read_unit(self, key: str, family: BucketFamily) -> TimeBucket:
        """Return the unit a family's reads use: the one stored at its first write.

        Parameters
        ----------
        key : str
            Family key.
        family : BucketFamily
            Its configured family.

        Returns
        -------
        TimeBucket
            The stored ``bucket_unit`` (read fresh), else the configured unit (a family
            never written).

        Raises
        ------
        MetadataError
            If the metadata cannot be read or holds an unknown unit.
        """
        stored = self.units.stored(key)
        return family.unit if stored is None else stored_unit(key, stored)

    def query(
        self,
        key: str,
        family: BucketFamily,
        reader: BucketPageReader,
        **options: Unpack[ReadOptions],
    ) -> Page:
        """Read one page of a family's window, bucket by bucket, in its stored unit.

        Parameters
        ----------
        key : str
            Family key.
        family : BucketFamily
            Its configured family.
        reader : BucketPageReader
            Reads one bucket key (a :class:`~dynashard.dynamodb.reader.ShardedReader`).
        **options : ReadOptions
            As :meth:`~dynashard.dynamodb.bucketed_reader.BucketedReader.query` takes them.

        Returns
        -------
        Page
            See :meth:`~dynashard.dynamodb.bucketed_reader.BucketedReader.query`.

        Raises
        ------
        InvalidInputError, CursorError, ShardQueryError, MetadataError
            See :meth:`~dynashard.dynamodb.bucketed_reader.BucketedReader.query`;
            MetadataError also when the family's unit cannot be read.
        """
        return BucketedReader(reader).query(key, self.read_unit(key, family), **options)


__all__ = [
    "BucketedFamilies",
    "FamilyUnitCache",
    "FamilyUnitStore",
    "stored_unit",
]
