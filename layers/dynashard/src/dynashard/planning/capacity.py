"""Capacity plan of one logical key (pure): shard count, read fan-out cost, monthly cost.

:func:`plan_capacity` answers an operator's question before a key goes hot: from its
peak writes and reads per second and its item size (or a sample of item sizes), how
many shards does it need, what does each scatter-gather page cost at that count, and
what does sharding add to the monthly bill at on-demand prices? Every figure comes with
the arithmetic that produced it (:attr:`CapacityPlan.steps`) and the limits it used
(:attr:`CapacityPlan.limits`), so the ``dynashard plan`` command can show its work.

The units are those of :mod:`dynashard.core.capacity`; the per-shard page limit of a
scatter-gather read is the reader's own (:func:`dynashard.planning.reads.shard_page_limit`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from dynashard import defaults
from dynashard.core.capacity import (
    PARTITION_RCU_LIMIT,
    PARTITION_WCU_LIMIT,
    query_read_units,
    read_units,
    shards_needed,
    write_units,
)
from dynashard.core.keys import MAX_ITEM_BYTES, MAX_SHARD_COUNT
from dynashard.errors import InvalidInputError
from dynashard.planning.reads import MAX_PAGE_LIMIT, shard_page_limit

#: Hours in a billing month, as the AWS Pricing Calculator counts them.
HOURS_PER_MONTH: Final = 730.0
#: On-demand price per million write request units, USD (us-east-1, Standard table
#: class; aws.amazon.com/dynamodb/pricing/on-demand/). Pass your region's price.
DEFAULT_WRU_PRICE_PER_MILLION: Final = 0.625
#: On-demand price per million read request units, USD (same page).
DEFAULT_RRU_PRICE_PER_MILLION: Final = 0.125
#: Size of a shard-metadata item as the reader fetches it, bytes (one strongly
#: consistent GetItem per page; well under 4 KB, so 1 RCU).
METADATA_ITEM_BYTES: Final = 256

_DG: Final = "DynamoDB Developer Guide"


@dataclass(frozen=True)
class Limit:
    """One limit or rule a plan used.

    Attributes
    ----------
    name : str
        What it bounds.
    value : str
        The figure, with its unit.
    source : str
        Where it is published.
    """

    name: str
    value: str
    source: str


@dataclass(frozen=True)
class CapacityPlan:
    """The result of :func:`plan_capacity`; every rate is per logical key.

    Attributes
    ----------
    writes_per_s, reads_per_s : float
        Peak items written and read per second (the inputs).
    item_bytes : float
        Mean item size, bytes.
    wcu_per_item : float
        Mean WCU of one item write, each item rounded up to 1 KB separately.
    peak_wcu : float
        ``writes_per_s x wcu_per_item``, WCU/s.
    queries_per_s : float
        ``reads_per_s / page_limit``: pages read per second.
    rcu_per_page_unsharded : float
        RCU of one page from one partition key (sum of the page's bytes, rounded once).
    peak_rcu : float
        ``queries_per_s x rcu_per_page_unsharded``, RCU/s.
    shards_for_writes, shards_for_reads : int
        ``ceil(peak / (limit x target_utilization))`` for each.
    shards : int
        The larger, capped at ``max_shards``.
    per_shard_page_limit : int
        ``Limit`` of each shard's Query in a scatter-gather page at ``shards``.
    requests_per_page : int
        Requests of one page at ``shards``: one Query per shard plus the metadata
        GetItem (1 Query and no GetItem unsharded).
    rcu_per_page : float
        RCU of one page at ``shards``: each shard's Query rounded up separately, plus
        the metadata GetItem.
    per_shard_rcu : float
        RCU/s each shard serves at peak (every page queries every shard).
    monthly_write_usd, monthly_read_usd_unsharded, monthly_read_usd : float
        On-demand cost of the peak rates held for a whole month, USD.
    monthly_difference_usd : float
        What sharding adds per month (reads; writes cost the same either way).
    steps : list of str
        The arithmetic, one line per figure.
    limits : list of Limit
        The limits and rules used, with their sources.
    warnings : list of str
        Conditions the operator should look at (a capped count, a per-shard read load
        over the target that more shards cannot lower).
    """

    writes_per_s: float
    reads_per_s: float
    item_bytes: float
    target_utilization: float
    consistent: bool
    page_limit: int
    wcu_per_item: float
    peak_wcu: float
    queries_per_s: float
    rcu_per_page_unsharded: float
    peak_rcu: float
    shards_for_writes: int
    shards_for_reads: int
    shards: int
    per_shard_page_limit: int
    requests_per_page: int
    rcu_per_page: float
    per_shard_rcu: float
    monthly_write_usd: float
    monthly_read_usd_unsharded: float
    monthly_read_usd: float
    monthly_difference_usd: float
    steps: list[str] = field(default_factory=list)
    limits: list[Limit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Return the plan as a JSON-ready dict (``limits`` as a list of dicts).

        Returns
        -------
        dict
            Every attribute by name.
        """
        return asdict(self)


def _usd(units_per_s: float, price_per_million: float, hours: float) -> float:
    return units_per_s * hours * 3600.0 * price_per_million / 1e6


def plan_capacity(
    *,
    writes_per_s: float,
    reads_per_s: float,
    item_sizes: Sequence[int],
    target_utilization: float = defaults.TARGET_UTILIZATION.default,
    consistent: bool = True,
    page_limit: int = 100,
    index_writes: int = 1,
    partition_wcu: float = PARTITION_WCU_LIMIT,
    partition_rcu: float = PARTITION_RCU_LIMIT,
    max_shards: int = MAX_SHARD_COUNT,
    wru_price_per_million: float = DEFAULT_WRU_PRICE_PER_MILLION,
    rru_price_per_million: float = DEFAULT_RRU_PRICE_PER_MILLION,
    hours_per_month: float = HOURS_PER_MONTH,
) -> CapacityPlan:
    """Plan one logical key's shard count and the cost of reading it back.

    Parameters
    ----------
    writes_per_s : float
        Peak items written per second on the key, ``>= 0``.
    reads_per_s : float
        Peak items read per second through pages of ``page_limit``, ``>= 0``.
    item_sizes : sequence of int
        Item sizes as stored, bytes (one size, or a sample); each ``1..400 KB``.
    target_utilization : float
        Share of a partition's ceiling each shard is planned to run at, ``(0, 1]``.
    consistent : bool
        Strongly consistent pages (the reader's base-table Queries are); False for
        eventually consistent (GSI1 pages), half the RCU.
    page_limit : int
        Items per page, ``1..MAX_PAGE_LIMIT``.
    index_writes : int
        Index entries each item write also writes (GSI1: 1), each as many WCU as the
        item (projection ``ALL``); counted in the cost, not the shard count (the GSI1
        key is sharded by the same N).
    partition_wcu, partition_rcu : float
        Per-partition ceilings, units/s (1,000 and 3,000; lower in a scaled sandbox).
    max_shards : int
        Cap on the count.
    wru_price_per_million, rru_price_per_million : float
        On-demand prices, USD per million request units (your region's).
    hours_per_month : float
        Hours the peak rates are held in the monthly figures (730: an upper bound).

    Returns
    -------
    CapacityPlan
        The figures, the arithmetic and the limits used.

    Raises
    ------
    InvalidInputError
        If a rate, size, utilization, page limit or price is out of range (naming it).

    Examples
    --------
    2,400 writes/s of 1.5 KB items (2 WCU each) need ``ceil(4800 / 800) = 6`` shards:

    >>> plan = plan_capacity(writes_per_s=2400, reads_per_s=500, item_sizes=[1536])
    >>> plan.peak_wcu, plan.shards_for_writes, plan.shards
    (4800.0, 6, 6)

    A page of 100 reads 100 x 1.5 KB = 150 KB, 38 RCU from one key; over 6 shards each
    Query reads its share plus one, 18 items (27 KB, 7 RCU), so 6 Queries and the metadata
    GetItem cost 43:

    >>> plan.rcu_per_page_unsharded, plan.per_shard_page_limit, plan.rcu_per_page
    (38.0, 18, 43.0)
    """
    _check(writes_per_s >= 0 and math.isfinite(writes_per_s), "writes_per_s", ">= 0")
    _check(reads_per_s >= 0 and math.isfinite(reads_per_s), "reads_per_s", ">= 0")
    _check(bool(item_sizes), "item_sizes", "at least one size")
    _check(
        all(1 <= s <= MAX_ITEM_BYTES for s in item_sizes),
        "item_sizes",
        f"each within 1..{MAX_ITEM_BYTES} bytes (400 KB)",
    )
    _check(0 < target_utilization <= 1, "target_utilization", "in (0, 1]")
    _check(1 <= page_limit <= MAX_PAGE_LIMIT, "page_limit", f"within 1..{MAX_PAGE_LIMIT}")
    _check(index_writes >= 0, "index_writes", ">= 0")
    _check(partition_wcu > 0 and partition_rcu > 0, "partition limits", "> 0")
    _check(1 <= max_shards <= MAX_SHARD_COUNT, "max_shards", f"within 1..{MAX_SHARD_COUNT}")
    _check(wru_price_per_million >= 0 and rru_price_per_million >= 0, "prices", ">= 0 USD/million")
    _check(hours_per_month > 0, "hours_per_month", "> 0")

    steps: list[str] = []
    warnings: list[str] = []
    n_items = len(item_sizes)
    mean_bytes = sum(item_sizes) / n_items
    wcu_per_item = sum(write_units(s) for s in item_sizes) / n_items
    if n_items == 1:
        steps.append(
            f"WCU per write = ceil({item_sizes[0]} B / 1024 B) = {wcu_per_item:g} "
            "(1 WCU per started KB)"
        )
    else:
        steps.append(
            f"WCU per write = mean over {n_items} items of ceil(size / 1024 B) = "
            f"{wcu_per_item:.3f} (each item rounded up separately; mean size "
            f"{mean_bytes:.0f} B)"
        )
    peak_wcu = writes_per_s * wcu_per_item
    steps.append(f"peak WCU = {writes_per_s:g} writes/s x {wcu_per_item:g} = {peak_wcu:g} WCU/s")
    n_write = shards_needed(peak_wcu, partition_wcu, target_utilization)
    steps.append(
        f"N(writes) = ceil({peak_wcu:g} / ({partition_wcu:g} x {target_utilization:g})) = {n_write}"
    )

    factor = "" if consistent else " x 0.5 (eventually consistent)"
    page_bytes = round(page_limit * mean_bytes)
    rcu_unsharded = query_read_units(page_bytes, consistent=consistent)
    steps.append(
        f"RCU per page of {page_limit} = ceil({page_limit} x {mean_bytes:.0f} B / 4096 B)"
        f"{factor} = {rcu_unsharded:g} (Query sums the bytes, then rounds once)"
    )
    queries_per_s = reads_per_s / page_limit
    peak_rcu = queries_per_s * rcu_unsharded
    steps.append(
        f"peak RCU = {reads_per_s:g} reads/s / {page_limit} per page x {rcu_unsharded:g} = "
        f"{peak_rcu:g} RCU/s"
    )
    n_read = shards_needed(peak_rcu, partition_rcu, target_utilization)
    steps.append(
        f"N(reads) = ceil({peak_rcu:g} / ({partition_rcu:g} x {target_utilization:g})) = {n_read}"
    )
    wanted = max(n_write, n_read)
    shards = min(max_shards, wanted)
    steps.append(
        f"N = max(N(writes), N(reads)) = {wanted}" + (f", capped at {shards}" * (wanted > shards))
    )
    if wanted > shards:
        warnings.append(f"the key needs {wanted} shards; max_shards caps it at {shards}")

    per_shard = (
        shard_page_limit(page_limit, shards, mean_bytes, consistent) if shards > 1 else page_limit
    )
    shard_rcu = query_read_units(round(per_shard * mean_bytes), consistent=consistent)
    meta_rcu = read_units(METADATA_ITEM_BYTES, consistent=True) if shards > 1 else 0.0
    rcu_per_page = shards * shard_rcu + meta_rcu
    requests = shards + (1 if shards > 1 else 0)
    if shards > 1:
        steps.append(
            f"per-shard Limit at N={shards} = ceil({page_limit} / {shards}) + 1, rounded up to "
            f"the items that fill its read units = {per_shard} "
            "(dynashard.planning.reads.shard_page_limit)"
        )
        steps.append(
            f"RCU per page at N={shards} = {shards} x ceil({per_shard} x {mean_bytes:.0f} B / "
            f"4096 B){factor} + {meta_rcu:g} (metadata GetItem) = {rcu_per_page:g}, in "
            f"{requests} requests"
        )
    per_shard_rcu = queries_per_s * shard_rcu
    if shards > 1 and per_shard_rcu > partition_rcu * target_utilization:
        warnings.append(
            f"every page queries every shard: each serves {per_shard_rcu:g} RCU/s, over "
            f"{target_utilization:g} x {partition_rcu:g}; more shards cannot lower it (read a "
            "time bucket through GSI1, or cache)"
        )

    write_usd = _usd(peak_wcu * (1 + index_writes), wru_price_per_million, hours_per_month)
    read_usd_1 = _usd(queries_per_s * rcu_unsharded, rru_price_per_million, hours_per_month)
    read_usd_n = _usd(queries_per_s * rcu_per_page, rru_price_per_million, hours_per_month)
    steps.append(
        f"writes/month = {peak_wcu:g} WCU/s x {1 + index_writes} (table + {index_writes} "
        f"index) x {hours_per_month:g} h x 3600 x ${wru_price_per_million:g}/M = "
        f"${write_usd:,.2f} (the same sharded or not)"
    )
    steps.append(
        f"reads/month = {queries_per_s:g} pages/s x RCU per page x {hours_per_month:g} h x "
        f"3600 x ${rru_price_per_million:g}/M: ${read_usd_1:,.2f} on one key, "
        f"${read_usd_n:,.2f} at N={shards}"
    )
    steps.append(f"difference = ${read_usd_n - read_usd_1:,.2f} per month")

    limits = [
        Limit(
            "per-partition write ceiling",
            f"{PARTITION_WCU_LIMIT:,.0f} WCU/s",
            f"{_DG}, 'Best practices for designing and using partition keys effectively'",
        ),
        Limit(
            "per-partition read ceiling",
            f"{PARTITION_RCU_LIMIT:,.0f} RCU/s",
            f"{_DG}, same page",
        ),
        Limit(
            "write unit",
            "1 KB per WCU, each item rounded up",
            f"{_DG}, 'DynamoDB read and write operations'",
        ),
        Limit(
            "read unit",
            "4 KB per RCU strongly consistent, half eventually consistent; a Query rounds "
            "the sum of its items once",
            f"{_DG}, 'DynamoDB read and write operations', 'Query operations'",
        ),
        Limit("item size", "400 KB", f"{_DG}, 'Quotas in Amazon DynamoDB'"),
        Limit(
            "shard count",
            f"1..{MAX_SHARD_COUNT}",
            "dynashard's cap, dynashard.core.keys.MAX_SHARD_COUNT",
        ),
        Limit(
            "on-demand prices",
            f"${wru_price_per_million:g} per million WRU, ${rru_price_per_million:g} per "
            "million RRU",
            "given; the defaults are us-east-1's, Standard table class, "
            "aws.amazon.com/dynamodb/pricing/on-demand/",
        ),
    ]
    if (partition_wcu, partition_rcu) != (PARTITION_WCU_LIMIT, PARTITION_RCU_LIMIT):
        limits.append(
            Limit(
                "ceilings used",
                f"{partition_wcu:g} WCU/s, {partition_rcu:g} RCU/s",
                "given: a scaled-down sandbox",
            )
        )
    return CapacityPlan(
        writes_per_s=writes_per_s,
        reads_per_s=reads_per_s,
        item_bytes=mean_bytes,
        target_utilization=target_utilization,
        consistent=consistent,
        page_limit=page_limit,
        wcu_per_item=wcu_per_item,
        peak_wcu=peak_wcu,
        queries_per_s=queries_per_s,
        rcu_per_page_unsharded=rcu_unsharded,
        peak_rcu=peak_rcu,
        shards_for_writes=n_write,
        shards_for_reads=n_read,
        shards=shards,
        per_shard_page_limit=per_shard,
        requests_per_page=requests,
        rcu_per_page=rcu_per_page,
        per_shard_rcu=per_shard_rcu,
        monthly_write_usd=write_usd,
        monthly_read_usd_unsharded=read_usd_1,
        monthly_read_usd=read_usd_n,
        monthly_difference_usd=read_usd_n - read_usd_1,
        steps=steps,
        limits=limits,
        warnings=warnings,
    )


def _check(ok: bool, field_name: str, expected: str) -> None:
    if not ok:
        raise InvalidInputError(field_name, f"must be {expected}")
