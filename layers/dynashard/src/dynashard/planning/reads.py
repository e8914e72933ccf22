"""Read planning: which path serves a page, and what each shard is asked for (pure).

A time-window read of a logical key can be served two ways:

- **base**: one Query per shard of the data table (every shard any count in
  ``shard_history`` may have used, invariant 3), strongly consistent;
- **gsi1**: one Query per time bucket in the window and per GSI1 shard of that bucket,
  on the index GSI1 (``GSI1PK = {logical}#{bucket}#{g}``). GSI reads are always
  eventually consistent: "Queries on global secondary indexes support eventual
  consistency only" (DynamoDB Developer Guide, "Using Global Secondary Indexes in
  DynamoDB", and "Read consistency"); an index is updated asynchronously, "within a
  fraction of a second" under normal conditions.

:func:`plan_read` compares the two by the number of Query requests (each one a round
trip and a minimum charge) and by the expected read capacity: a Query is charged for
the total size of the items it reads, rounded up to the next 4 KB, at 1 RCU per 4 KB
strongly consistent and 0.5 RCU eventually consistent, and at least one 4 KB unit even
when it returns nothing (Developer Guide, "Read consumption" in "DynamoDB read and
write operations" / "Query operations": "the minimum ... is one read capacity unit" of
4 KB). ``consistent=True`` always plans the base table: only base-table Queries can be
strongly consistent.

The GSI1 shard count of a bucket, ``G(bucket)``, comes from :func:`gsi1_shard_count`:
the GSI1 shard of an item is its own base shard
(:func:`dynashard.core.keys.gsi1_partition_key`), and writers record per bucket the largest
shard count they used for it (:mod:`dynashard.dynamodb.gsi_buckets`). A bucket written while the
key was cool has ``G = 1`` however many shards the key has had since, so a narrow window
in it is one GSI1 Query against ``max_count`` base-table Queries; a window inside one
bucket of a key that is hot now wins by half the RCU (eventually consistent) at the same
request count; a window over many buckets goes to the base table. docs/GSI_READS.md
says why and what is next.

:func:`shard_page_limit` sets the ``Limit`` of each shard's first Query of a page: its
share of the page, rounded up to the items that fill the read units it is billed for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from dynashard.core.buckets import TimeBucket, unit_of_label
from dynashard.core.capacity import READ_UNIT_BYTES, query_read_units
from dynashard.errors import InvalidInputError

if TYPE_CHECKING:
    from dynashard.core.shard_info import ShardInfo

#: Average item size the planner assumes when the caller knows none, bytes (a departure
#: event of the demo is about 400 bytes; 1 KB is the size one WCU writes).
DEFAULT_ITEM_BYTES: Final = 1024
#: Most GSI1 Query requests a plan may make for one page; a window over more buckets
#: (say a year of hour buckets) is served by the base table. A project bound: it keeps
#: a page's fan-out within what the worker pool serves in a few rounds.
MAX_GSI1_REQUESTS: Final = 1000


class ReadPath(StrEnum):
    """Where a read is served from."""

    BASE = "base"
    GSI1 = "gsi1"
    AUTO = "auto"


@dataclass(frozen=True)
class PathCost:
    """The expected cost of serving a page on one path.

    Attributes
    ----------
    requests : int
        Query requests of the page's first round (one per stream).
    expected_rcu : float
        Read capacity units expected, RCU.
    """

    requests: int
    expected_rcu: float


@dataclass(frozen=True)
class ReadPlan:
    """The path a read takes and why.

    Attributes
    ----------
    path : ReadPath
        ``base`` or ``gsi1``.
    requests : int
        Query requests of the chosen path's first round.
    expected_rcu : float
        Expected read capacity of the chosen path, RCU.
    reason : str
        Why this path, in words (for the response and the log).
    buckets : tuple of str
        Time-bucket labels of the window, oldest first (empty when not planned on GSI1).
    gsi1_shards : tuple of int
        ``G(bucket)`` of each bucket in ``buckets``.
    alternative : PathCost or None
        The cost of the path not taken, when it was available.
    """

    path: ReadPath
    requests: int
    expected_rcu: float
    reason: str
    buckets: tuple[str, ...] = ()
    gsi1_shards: tuple[int, ...] = ()
    alternative: PathCost | None = None

    def to_json(self) -> dict[str, Any]:
        """Return ``{"path", "requests", "expected_rcu", "reason"}`` for the response.

        Returns
        -------
        dict
            JSON-ready; ``expected_rcu`` rounded to 0.1 RCU.
        """
        return {
            "path": self.path.value,
            "requests": self.requests,
            "expected_rcu": round(self.expected_rcu, 1),
            "reason": self.reason,
        }


def path_cost(requests: int, expected_bytes: float, consistent: bool) -> PathCost:
    """Return the cost of reading ``expected_bytes`` spread evenly over ``requests`` Queries.

    Parameters
    ----------
    requests : int
        Query requests, >= 1.
    expected_bytes : float
        Bytes of items the page reads in all.
    consistent : bool
        Strongly consistent reads when True.

    Returns
    -------
    PathCost
        ``requests`` and ``requests * query_read_units(expected_bytes / requests)``
        (:func:`dynashard.core.capacity.query_read_units`, the one copy of the rule).

    Examples
    --------
    32 strongly consistent Queries reading 100 KB in all cost 32 RCU (each reads 3.2 KB,
    one unit); one eventually consistent Query reading it all costs 12.5 RCU:

    >>> path_cost(32, 102_400, True), path_cost(1, 102_400, False)
    (PathCost(requests=32, expected_rcu=32.0), PathCost(requests=1, expected_rcu=12.5))
    """
    requests = max(1, requests)
    per_query = query_read_units(expected_bytes / requests, consistent=consistent)
    return PathCost(requests, requests * per_query)


def gsi1_shard_count(info: ShardInfo, bucket: str) -> int:
    """Return ``G(bucket)``: how many GSI1 partition keys a bucket of a key may span.

    The GSI1 shard of an item is its own base shard (``{logical}#{bucket}#{shard}``).
    Writers record, per bucket, the largest shard count they used for it
    (:mod:`dynashard.dynamodb.gsi_buckets`, attribute ``gsi1_shards#{bucket}``); a bucket with
    no record may hold items of any base shard the key ever had (the shard history is
    in wall-clock time, buckets in event time, and events may be replayed late), so
    its ``G`` is the key's largest count.

    Parameters
    ----------
    info : ShardInfo
        The key's shard metadata, read fresh.
    bucket : str
        A bucket label.

    Returns
    -------
    int
        GSI1 shards ``0..G-1`` a reader of the bucket must query.

    Examples
    --------
    >>> from dynashard.dynamodb.metadata_store import ShardInfo
    >>> info = ShardInfo("K", 32, 10, ((0, 1), (10, 32)), gsi1_shards=(("2013-01-01", 1),))
    >>> gsi1_shard_count(info, "2013-01-01"), gsi1_shard_count(info, "2013-01-02")
    (1, 32)
    """
    return gsi1_shard_counts(info, [bucket])[0]


def gsi1_shard_counts(info: ShardInfo, buckets: Sequence[str]) -> list[int]:
    """Return G of each bucket, reading the key's records once (see :func:`gsi1_shard_count`).

    Parameters
    ----------
    info : ShardInfo
        The key's metadata, with its ``gsi1_shards`` records.
    buckets : sequence of str
        Time-bucket labels.

    Returns
    -------
    list of int
        One count per bucket: its record, else ``info.max_count``. A record of a label
        at or before ``info.gsi1_pruned`` (the newest label ever pruned) is not trusted:
        the bucket's record was removed once, so a writer may have used a count larger
        than what is recorded now; its count is ``info.max_count`` too.

    Examples
    --------
    >>> from dynashard.dynamodb.metadata_store import ShardInfo
    >>> info = ShardInfo("K", 32, 10, ((0, 1), (10, 32)), gsi1_shards=(("2013-01-01", 1),))
    >>> gsi1_shard_counts(info, ["2013-01-01", "2013-01-02"])
    [1, 32]
    >>> pruned = ShardInfo("K", 1, 10, ((0, 32), (10, 1)),
    ...                    gsi1_shards=(("2013-01-01", 1), ("2013-01-09", 1)),
    ...                    gsi1_pruned="2013-01-05")
    >>> gsi1_shard_counts(pruned, ["2013-01-01", "2013-01-09"])
    [32, 1]
    """
    pruned = info.gsi1_pruned
    recorded = {
        label: count
        for label, count in info.gsi1_shards
        if pruned is None or label > pruned  # labels sort in time order
    }
    return [recorded.get(bucket, info.max_count) for bucket in buckets]


def gsi1_unit(info: ShardInfo, configured: TimeBucket) -> tuple[TimeBucket | None, str]:
    """Return the time-bucket unit of a key's GSI1 partition keys, or why there is none.

    The unit is stored with the key: writers add the unit they use to the key's
    ``gsi1_units`` before writing items under it (:mod:`dynashard.dynamodb.gsi_buckets`),
    so a change of ``DynashardConfig.time_bucket`` / ``time_buckets`` applies to new data
    only and never hides the old. Keys written before units were stored are known by the
    labels of their bucket records (:func:`~dynashard.core.buckets.unit_of_label`).

    Parameters
    ----------
    info : ShardInfo
        The key's metadata, read fresh.
    configured : TimeBucket
        The unit configured now: the key's unit when it has none stored (no GSI1 item
        written yet, or none recorded by this version).

    Returns
    -------
    tuple of (TimeBucket or None, str)
        The unit and ``""``; or None and the reason GSI1 cannot serve the key: its GSI1
        keys were written under more than one unit, and a bucket of one unit overlaps
        buckets of another, so only the base table (whose keys do not depend on the
        unit) reads them all, in order.

    Examples
    --------
    >>> from dynashard.core.shard_info import ShardInfo
    >>> info = ShardInfo("K", 1, 0, ((0, 1),), gsi1_units=frozenset({"day"}))
    >>> gsi1_unit(info, TimeBucket.HOUR)
    (<TimeBucket.DAY: 'day'>, '')
    >>> gsi1_unit(ShardInfo("K", 1, 0, ((0, 1),), gsi1_units=frozenset({"day", "hour"})),
    ...           TimeBucket.DAY)[1]
    'its GSI1 keys were written under more than one time-bucket unit (day, hour)'
    """
    units = {TimeBucket(u) for u in info.gsi1_units if u in {b.value for b in TimeBucket}}
    units |= {u for label, _ in info.gsi1_shards if (u := unit_of_label(label)) is not None}
    if not units:
        return configured, ""
    if len(units) == 1:
        return units.pop(), ""
    listed = ", ".join(sorted(u.value for u in units))
    return None, f"its GSI1 keys were written under more than one time-bucket unit ({listed})"


def plan_read(
    *,
    base_shards: int,
    buckets: Sequence[str] | None,
    gsi1_shards: Sequence[int] = (),
    consistent: bool,
    path: ReadPath | str = ReadPath.AUTO,
    expected_bytes: float = 100 * DEFAULT_ITEM_BYTES,
    gsi1_unavailable: str = "",
    descending: bool = False,
) -> ReadPlan:
    """Choose the base table or GSI1 for one page of a read, and say why.

    GSI1 is chosen when it makes fewer Query requests, or as many for less expected
    RCU; ties go to the base table (strongly consistent, never behind the writes).

    Requests are those of one page. The base table queries every shard for every
    page. GSI1 reads the window's buckets one after the other in the page's order
    (:class:`~dynashard.dynamodb.gsi_reader.GsiBucketReader`), so a page costs the ``G`` of the
    first bucket it reads, plus at least one Query for each further bucket it reaches:
    the estimate is ``G(first) + (buckets - 1)``, between the dense case (the page
    fills in its first bucket) and the sparse one (it crosses every bucket, each
    possibly with more shards; ``sum(G)`` bounds it and the reason states it).

    Parameters
    ----------
    base_shards : int
        Shards a base-table read queries (the key's largest count in its history), >= 1.
    buckets : sequence of str or None
        Time buckets of the window; None when GSI1 cannot serve the read (no bounded
        window, a targeted read, too many buckets), ``gsi1_unavailable`` saying why.
    gsi1_shards : sequence of int
        ``G(bucket)`` of each bucket, same length as ``buckets``.
    consistent : bool
        A strongly consistent read was asked for: always the base table.
    path : ReadPath or str
        ``auto`` (plan), or ``base`` / ``gsi1`` to force one (tests, benchmarks).
    expected_bytes : float
        Bytes of items the page is expected to read (page size times item size).
    gsi1_unavailable : str
        Why GSI1 cannot serve the read, when ``buckets`` is None.
    descending : bool
        The page's order: its first bucket is the newest when True.

    Returns
    -------
    ReadPlan
        The path, its requests, expected RCU and the reason.

    Raises
    ------
    InvalidInputError
        If ``path`` is not one of the three (field ``path``); if ``path=gsi1`` with
        ``consistent=True`` (field ``consistent``: GSI reads are eventually consistent)
        or where GSI1 cannot serve the read (field ``path``).

    Examples
    --------
    A key with 32 base shards, read over one cool bucket (G = 1):

    >>> plan = plan_read(base_shards=32, buckets=["2013-01-01"], gsi1_shards=[1],
    ...                  consistent=False)
    >>> plan.path.value, plan.requests, plan.expected_rcu
    ('gsi1', 1, 12.5)
    >>> plan_read(base_shards=32, buckets=["2013-01-01"], gsi1_shards=[1],
    ...           consistent=True).path.value
    'base'
    """
    try:
        wanted = ReadPath(path)
    except ValueError as exc:
        raise InvalidInputError("path", f"must be base, gsi1 or auto, got {path!r}") from exc
    base = path_cost(base_shards, expected_bytes, consistent=True)
    base_note = f"{base.requests} strongly consistent base-table shard queries"
    if consistent:
        if wanted is ReadPath.GSI1:
            raise InvalidInputError(
                "consistent", "GSI1 reads are eventually consistent; drop consistent or path"
            )
        return ReadPlan(
            ReadPath.BASE, *_cost(base), f"consistent=true: {base_note} (GSIs are EC only)"
        )
    if buckets is None:
        if wanted is ReadPath.GSI1:
            raise InvalidInputError("path", f"gsi1 cannot serve this read: {gsi1_unavailable}")
        return ReadPlan(ReadPath.BASE, *_cost(base), f"{base_note}; gsi1 n/a: {gsi1_unavailable}")
    if not buckets:  # no bucket to compare (e.g. validating a forced path=base)
        if wanted is ReadPath.GSI1:
            raise InvalidInputError("path", "gsi1 cannot serve this read: no time bucket")
        return ReadPlan(ReadPath.BASE, *_cost(base), f"path={wanted.value}: {base_note}")
    if len(gsi1_shards) != len(buckets):
        raise InvalidInputError("gsi1_shards", "needs one count per bucket")
    first = gsi1_shards[-1] if descending else gsi1_shards[0]
    gsi = path_cost(first + len(buckets) - 1, expected_bytes, consistent=False)
    gsi_note = (
        f"{gsi.requests} eventually consistent GSI1 queries (up to {sum(gsi1_shards)} over "
        f"{len(buckets)} bucket(s))"
    )
    versus = (
        f"{gsi_note} (~{gsi.expected_rcu:.1f} RCU) vs {base_note} (~{base.expected_rcu:.1f} RCU)"
    )
    layout = (tuple(buckets), tuple(gsi1_shards))
    if wanted is ReadPath.BASE:
        return ReadPlan(ReadPath.BASE, *_cost(base), f"path=base: {versus}", alternative=gsi)
    if wanted is ReadPath.GSI1:
        return ReadPlan(ReadPath.GSI1, *_cost(gsi), f"path=gsi1: {versus}", *layout, base)
    if (gsi.requests, gsi.expected_rcu) < (base.requests, base.expected_rcu):
        return ReadPlan(ReadPath.GSI1, *_cost(gsi), f"cheaper: {versus}", *layout, base)
    return ReadPlan(ReadPath.BASE, *_cost(base), f"cheaper: {versus}", alternative=gsi)


def _cost(cost: PathCost) -> tuple[int, float]:
    return cost.requests, cost.expected_rcu


#: Largest page a caller may ask for.
MAX_PAGE_LIMIT: Final = 1000


def shard_page_limit(
    limit: int, shards: int, item_bytes: float = DEFAULT_ITEM_BYTES, consistent: bool = True
) -> int:
    """Return the ``Limit`` of each shard's first Query for a page of ``limit`` items.

    Pushing the whole page limit to each of N shards reads up to N times the page
    (N-fold read amplification, billed in RCU); a page of a key spread evenly needs
    about ``limit / N`` items per shard. Each shard is asked for that share plus one
    item (so a shard whose share fits shows it is exhausted without a second query),
    rounded up to fill the read units the share is billed for anyway: a Query is
    charged on the total size of the items it reads, rounded up to 4 KB strongly
    consistent or 8 KB eventually consistent per unit (Developer Guide, "Read
    consistency" and "Query operations: read capacity units"), so the items that fill
    the last unit cost nothing more. A shard that runs short is read further during
    the merge, asked for what the page can still need (:class:`_ReadAhead`), so the
    result is the same either way and a page costs at most the unsharded read plus
    about one minimum Query charge per shard.

    Parameters
    ----------
    limit : int
        Page size, ``>= 1``.
    shards : int
        Shards queried, ``>= 0``.
    item_bytes : float
        Expected item size, bytes (the reader learns it per key from the consumed
        capacity of earlier pages; :data:`DEFAULT_ITEM_BYTES` before that).
    consistent : bool
        Strongly consistent Queries (4 KB units) or eventually consistent (8 KB).

    Returns
    -------
    int
        ``limit + 1`` for one shard; else ``ceil(limit / shards) + 1`` rounded up to the
        items that fill its read units, at most ``limit + 1``.

    Examples
    --------
    A page of 100 over 8 shards of 410-byte items asks each for 18 (its share of 13 plus
    one, rounded up to the 18 that fill two 4 KB units), not 100; one shard gets the page:

    >>> shard_page_limit(100, 8, item_bytes=410), shard_page_limit(100, 1)
    (18, 101)
    >>> shard_page_limit(100, 32, item_bytes=410)  # 5 items; 9 fit in the 1-unit minimum
    9
    """
    if shards <= 1:
        return limit + 1
    return _fill_read_units(math.ceil(limit / shards) + 1, limit + 1, item_bytes, consistent)


def _fill_read_units(wanted: int, cap: int, item_bytes: float, consistent: bool) -> int:
    """Round ``wanted`` items up to the items that fill the read units they are billed."""
    unit = READ_UNIT_BYTES if consistent else 2 * READ_UNIT_BYTES
    per_unit = max(1, int(unit // max(item_bytes, 1.0)))
    return min(cap, max(wanted, math.ceil(wanted / per_unit) * per_unit))
