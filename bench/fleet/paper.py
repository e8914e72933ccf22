"""``python -m bench fleet-paper``: the arithmetic of docs/fleet-scale.md, and the planner timed.

The page "dynashard at 1,000,000 WCU/s over 100,000 logical keys" quotes this command's
output. Every figure comes from the library's own formulas (shard counts,
:func:`dynashard.core.capacity.shards_needed`; a Query's read units,
:func:`~dynashard.core.capacity.query_read_units`; the reader's per-shard ``Limit``,
:func:`dynashard.planning.reads.shard_page_limit`; an item's size,
:func:`~dynashard.core.capacity.item_size`) applied to a Zipf load, from measured
figures already in ``bench/results/`` (the ingest handler's batch durations,
``ingest.json``), or from a measurement made here: the scaler's planning
(:func:`dynashard.planning.sweep.sweep` over the library's
:class:`~dynashard.dynamodb.shard_metadata.ShardMetadata` on an in-memory table) timed on
100,000 synthetic keys, and the size of one ``write load`` log line as Powertools prints it.

Nothing reaches AWS and nothing is written; the output is text. The AWS quotas the page
sets these figures against are cited there, not here.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import logging
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.machine import load_average, machine
from dynashard import names
from dynashard.core.capacity import (
    PARTITION_WCU_LIMIT,
    item_size,
    query_read_units,
    read_units,
    shards_needed,
    write_units,
)
from dynashard.core.load import MAX_CONTRIBUTORS, KeyWriteLoad
from dynashard.core.throttling import WRITE_KEY_RANGE_METRIC
from dynashard.planning import scaling, shards, sweep
from dynashard.planning.reads import shard_page_limit
from dynashard.planning.shrinking import LoadHistory

RESULTS = Path(__file__).resolve().parents[1] / "results"
#: The page's deployment: write units per second over logical keys, Zipf exponent.
TOTAL_WCU, KEYS, EXPONENT = 1_000_000.0, 100_000, 1.1
#: Target utilization as the stack deploys it (``infra/config.py``).
TARGET_UTILIZATION = 0.8
#: Writer containers and their cache lifetime (``metadata_cache_ttl_s``), the page's case.
CONTAINERS, CACHE_TTL_S, KEYS_PER_CONTAINER = 1_000, 30.0, 100
#: A page of a read, items; item sizes: the 1 KB bound of a 1-WCU item, and the ~410 B
#: of the reads benchmark's departures (``bench/results/reads.json``).
PAGE, ITEM_SIZES = 100, (1024, 410)
#: Shard counts the read table shows.
READ_SHARDS = (1, 2, 4, 8, 16, 32, 64, 128)
#: Day-bucket records a metadata item holds after a year, and at most
#: (``dynashard.dynamodb.gsi_buckets.MAX_RECORDS``).
RECORDS = (0, 365, 500)
#: Batches an SQS event source mapping processes at once, at most ("Configuring scaling
#: behavior for SQS event source mappings", AWS Lambda Developer Guide).
SQS_BATCHES = 1_000
#: A new on-demand table's write throughput (Developer Guide, "Pre-warming a table for
#: on-demand capacity mode"), and the minutes in which it may double.
NEW_TABLE_WRITES, DOUBLING_MINUTES = 4_000, 30


def zipf_loads(keys: int, total: float, exponent: float) -> np.ndarray:
    """Return each key's WCU/s, hottest first: ``total x r^-s / sum(r^-s)``."""
    ranks = np.arange(1, keys + 1, dtype=float)
    weights = ranks**-exponent
    return np.asarray(total * weights / weights.sum())


def shard_counts(loads: np.ndarray, limit: float, utilization: float) -> np.ndarray:
    """Return N per key with the library's formula (:func:`shards_needed`)."""
    return np.array([shards_needed(float(x), limit, utilization) for x in loads], dtype=np.int64)


def page_read_units(n: int, item_bytes: int, consistent: bool, page: int = PAGE) -> float:
    """Return the RCU of one page of ``page`` items over ``n`` shards of a well-filled key.

    Each shard's first Query asks for :func:`shard_page_limit` items and is billed on
    their total size (:func:`query_read_units`, at least one unit each); the metadata
    GetItem the reader makes first is not included.
    """
    per_shard = shard_page_limit(page, n, item_bytes, consistent)
    return n * query_read_units(per_shard * item_bytes, consistent=consistent)


def distinct(p: np.ndarray, draws: float) -> float:
    """Return the expected number of distinct keys in ``draws`` events drawn with shares ``p``."""
    return float((1.0 - (1.0 - p) ** draws).sum())


def measured_batch_ms(path: Path = RESULTS / "ingest.json") -> dict[int, float]:
    """Return the ingest handler's median batch duration per SQS batch size, emulator rows.

    ``bench/results/ingest.json`` (``python -m bench ingest``): the handler in process,
    warm, against the partition emulator with a lognormal latency of median 4 ms.
    """
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {
        int(r["batch_size"]): float(r["batch_ms_median"])
        for r in doc["runs"]
        if r["backend"] == "emulator"
    }


def metadata_item(key: str, count: int, records: int) -> dict[str, Any]:
    """Return a metadata item with ``records`` day-bucket records (its size is what counts)."""
    now = 1_767_225_600
    item: dict[str, Any] = {
        names.ATTR_META_KEY: key,
        names.ATTR_NUMBER_OF_SHARDS: count,
        names.ATTR_LAST_UPDATED: now,
        names.ATTR_SHARD_HISTORY: {f"{now - 86_400 * i}:{count}" for i in range(4)},
    }
    day = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(records):
        label = (day + timedelta(days=i)).strftime("%Y-%m-%d")
        item[f"{names.ATTR_GSI1_SHARDS_PREFIX}{label}"] = count
    return item


@functools.cache
def write_load_line_bytes() -> int:
    """Return the bytes of one ``write load`` line as Powertools' Logger prints it in Lambda.

    The ingest functions log through Powertools' Logger with the Lambda context injected
    (:mod:`dynashard.lambda_kit.kit`); the context here has the shape of a deployed
    function's (a CloudFormation-generated name, its ARN, a request id) and the X-Ray
    trace header Lambda sets with active tracing.
    """
    from aws_lambda_powertools import Logger

    @dataclass
    class _Context:
        function_name: str = "dynashard-prod-IngestQueueFunction8C2E7F1A-Xq3LmN0pR2sT"
        function_version: str = "$LATEST"
        invoked_function_arn: str = (
            "arn:aws:lambda:eu-west-1:123456789012:function:"
            "dynashard-prod-IngestQueueFunction8C2E7F1A-Xq3LmN0pR2sT"
        )
        memory_limit_in_mb: int = 1280
        aws_request_id: str = "3f1c2b5e-8d4a-4e6b-9a7c-1d2e3f4a5b6c"

    trace = "Root=1-6745a1b2-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1"
    out = io.StringIO()
    old = os.environ.get("_X_AMZN_TRACE_ID")
    os.environ["_X_AMZN_TRACE_ID"] = trace
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            logger = Logger(service="ingest", level="INFO")
            # The line as the logger's own formatter writes it, wherever its handler goes.
            capture = logging.StreamHandler(out)
            capture.setFormatter(logger.registered_formatter)
            logger.addHandler(capture)

            @logger.inject_lambda_context
            def handler(event: Any, context: Any) -> None:
                load = KeyWriteLoad("TENANT#000042", events=3, offered_wcu=3, redelivered_wcu=0)
                logger.info("write load", extra=load.log_fields())

            try:
                handler({}, _Context())
            finally:
                logger.removeHandler(capture)
    finally:
        if old is None:
            os.environ.pop("_X_AMZN_TRACE_ID", None)
        else:
            os.environ["_X_AMZN_TRACE_ID"] = old
    lines = [line for line in out.getvalue().splitlines() if '"write load"' in line]
    return len(lines[-1].encode()) + 1  # the newline


# --- the planner, timed ---------------------------------------------------------------------
def time_planning(keys: int, loads: np.ndarray) -> dict[str, dict[str, float]]:
    """Time the library's planning on ``keys`` synthetic keys, in memory.

    The scaler's own :func:`dynashard.planning.sweep.sweep` runs over the library's
    ``ShardMetadata`` on the fleet simulation's in-memory metadata table, with reports
    that name either every key (no top-N cut) or the hottest 100 (the report's limit):

    - ``loads_by_logical_key`` and ``plan_shard_count``: one reported physical key per
      logical key, one plan per key;
    - ``growth``: one run on a write alarm, every key at N = 1: every named key's
      metadata read (twice: to map its shards, then to plan), the keys whose load needs
      more shards grown with the conditional update;
    - ``shrink``: one scheduled sweep, every key at N = 2 and cool for a day: the scan,
      then every named key planned and shrunk (a key the history does not name is kept).

    Returns
    -------
    dict
        Per step: ``seconds``, and for the sweeps the keys changed and the metadata
        table's ``GetItem``, ``UpdateItem`` and ``Scan`` calls (a scan counted once).
    """
    from bench.fleet.cloud import EPOCH0, MemoryMetadataStore
    from bench.fleet.run import default_settings
    from bench.fleet.sim import _Port
    from dynashard.dynamodb.shard_metadata import ShardMetadata

    settings = default_settings()
    ids = [f"K{i:06d}" for i in range(keys)]
    load = [float(x) for x in loads[:keys]]
    now = datetime.fromtimestamp(EPOCH0 + 86_400, UTC)
    window = 60
    out: dict[str, dict[str, float]] = {}

    hot = [scaling.HotKey(f"{k}#0", x, 1) for k, x in zip(ids, load, strict=True)]
    t0 = time.perf_counter()
    grouped, _ = shards.loads_by_logical_key(hot)
    out["loads_by_logical_key"] = {"seconds": time.perf_counter() - t0}
    t0 = time.perf_counter()
    for x in load:
        shards.plan_shard_count(1, x, PARTITION_WCU_LIMIT, TARGET_UTILIZATION, 1000)
    out["plan_shard_count"] = {"seconds": time.perf_counter() - t0}
    assert len(grouped) == keys

    class Store(MemoryMetadataStore):
        """The in-memory metadata table, counting requests (a Scan is one, paged or not)."""

        def __init__(self) -> None:
            super().__init__(lambda *_: None)
            self.calls = {"GetItem": 0, "UpdateItem": 0, "Scan": 0}

        def get(self, key: str) -> Any:
            self.calls["GetItem"] += 1
            return super().get(key)

        def update(self, *args: Any, **kwargs: Any) -> Any:
            self.calls["UpdateItem"] += 1
            return super().update(*args, **kwargs)

        def scan_sharded(self, min_count: int) -> Any:
            self.calls["Scan"] += 1
            return super().scan_sharded(min_count)

    def port(count: int) -> tuple[Store, _Port]:
        store = Store()
        for k in ids:
            store.create(k, count, EPOCH0)  # a day before `now`: past every cooldown
        meta = ShardMetadata(
            store,
            default_shards=settings.default_shards,
            max_shards=settings.max_shards,
            cooldown_s=settings.cooldown_s,
            cache_ttl_s=settings.metadata_cache_ttl_s,
            clock=lambda: float(now.timestamp()),
            sleep=lambda _s: None,
        )
        return store, _Port(meta)

    class Reports:
        """Hot keys, offered load and load history naming the hottest ``named`` keys."""

        def __init__(self, named: int, peak: float = 0.0) -> None:
            self.named, self.peak = named, peak

        def hot_keys(self, *_: Any) -> list[scaling.HotKey]:
            return hot[: self.named]

        def offered_wcu(self, *_: Any) -> dict[str, float]:
            return {k: x * window for k, x in zip(ids[: self.named], load, strict=False)}

        def peak_offered_wcu(self, start: datetime, end: datetime, period: int) -> LoadHistory:
            return LoadHistory(start, end, period, dict.fromkeys(ids[: self.named], self.peak))

    alarm = scaling.Alarm(
        name="paper-TableWriteKeyRange",
        state=scaling.ALARM_STATE,
        timestamp=now,
        window_s=window,
        metric_names=(WRITE_KEY_RANGE_METRIC,),
        table_name=settings.data_table,
    )
    for named in (keys, min(keys, MAX_CONTRIBUTORS)):
        suffix = "" if named == keys else f"_top{named}"
        store, meta = port(1)
        reports = Reports(named)
        t0 = time.perf_counter()
        run = sweep.sweep(
            now,
            [alarm],
            port=lambda meta=meta: meta,
            hot_keys=lambda reports=reports: reports,
            offered_load=lambda reports=reports: reports,
            history=None,
            shrinker=lambda meta=meta: meta,
            settings=settings,
        )
        seconds = time.perf_counter() - t0
        out[f"growth{suffix}"] = {"seconds": seconds, "changed": len(run.grown), **store.calls}
        store, meta = port(2)
        cool = Reports(named, peak=10.0)
        t0 = time.perf_counter()
        run = sweep.sweep(
            now,
            [],
            port=lambda meta=meta: meta,
            hot_keys=lambda cool=cool: cool,
            offered_load=lambda cool=cool: cool,
            history=cool,
            shrinker=lambda meta=meta: meta,
            settings=settings,
        )
        seconds = time.perf_counter() - t0
        out[f"shrink{suffix}"] = {
            "seconds": seconds,
            "changed": len(run.shrink.shrunk),
            **store.calls,
        }
    return out


# --- the report -----------------------------------------------------------------------------
def _n(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def report(ns: argparse.Namespace) -> list[str]:
    """Return the lines the command prints."""
    lines: list[str] = []
    say = lines.append
    loads = zipf_loads(ns.keys, ns.total, ns.exponent)
    p = loads / loads.sum()
    n = shard_counts(loads, PARTITION_WCU_LIMIT, TARGET_UTILIZATION)
    multi = n > 1
    top = MAX_CONTRIBUTORS

    say(f"workload: {_n(ns.keys)} logical keys, Zipf {ns.exponent}, {_n(ns.total)} WCU/s in all")
    say(f"  hottest key            {_n(loads[0])} WCU/s")
    say(f"  key {top} / key {top + 1}     {_n(loads[top - 1])} / {_n(loads[top])} WCU/s")
    say(f"  load on the top {top}    {loads[:top].sum() / ns.total:.3f} of the total")
    say("")
    say(f"shards (N = ceil(load / (1,000 x {TARGET_UTILIZATION})), shards_needed):")
    say(f"  sum of N over all keys          {_n(n.sum())}")
    say(f"  keys with N > 1                 {_n(multi.sum())} (their N: {_n(n[multi].sum())})")
    say(f"  keys above one partition        {_n((loads > PARTITION_WCU_LIMIT).sum())}")
    say(f"  N of the hottest key            {_n(n[0])}")
    say(f"  keys with N > 1 beyond the top {top}: {_n(multi[top:].sum())}")
    say(
        f"  partitions at full use          {_n(ns.total / PARTITION_WCU_LIMIT)}; "
        f"at {TARGET_UTILIZATION}: {_n(ns.total / (PARTITION_WCU_LIMIT * TARGET_UTILIZATION))}"
    )
    doublings = math.ceil(math.log2(ns.total / NEW_TABLE_WRITES))
    say(
        f"  from a new table's {_n(NEW_TABLE_WRITES)} writes/s, doubling every "
        f"{DOUBLING_MINUTES} min: {doublings} doublings, {doublings * DOUBLING_MINUTES} min"
    )
    say("")
    say(f"reads: RCU of one page of {PAGE} items over N shards (first Query round, no metadata)")
    header = "  N      " + "  ".join(f"{s:>4} B SC  {s:>4} B EC" for s in ITEM_SIZES)
    say(header)
    for shards_n in (*READ_SHARDS, int(n[0])):
        cells = "  ".join(
            f"{page_read_units(shards_n, s, True):>9.1f}  "
            f"{page_read_units(shards_n, s, False):>9.1f}"
            for s in ITEM_SIZES
        )
        say(f"  {shards_n:<5}  {cells}")
    say("  plus the reader's metadata GetItem (strongly consistent): see the item sizes below")
    say("")

    batch_ms = measured_batch_ms()
    say("writers: Lambda concurrency = events/s x batch duration / batch size")
    say("  (durations: bench/results/ingest.json, emulator rows, median ms per batch)")
    for b, ms in sorted(batch_ms.items()):
        invocations = ns.total / b
        say(
            f"  batch {b:>5}: {ms:6.1f} ms -> {_n(invocations)} invocations/s, "
            f"concurrency {_n(invocations * ms / 1000)}"
        )
    if 10 in batch_ms:
        say(
            f"  SQS as deployed (batch 10, at most {_n(SQS_BATCHES)} batches at once): "
            f"{_n(SQS_BATCHES * 10 / (batch_ms[10] / 1000))} messages/s at most"
        )
    say(f"  Kinesis shards at 1,000 records/s each: {_n(ns.total / 1000)}")
    say(f"  POST /events requests/s at 100 events each: {_n(ns.total / 100)}")
    say("")

    c, ttl = ns.containers, ns.ttl
    by_key = c * ns.keys_per_container / ttl
    per_container = float((1.0 - np.exp(-loads * ttl / c)).sum())
    random_reads = c * per_container / ttl
    say(f"metadata reads: {_n(c)} containers, cache lifetime {ttl:g} s")
    say(f"  routed by key ({ns.keys_per_container} keys a container): {_n(by_key)} GetItem/s")
    say(
        f"  routed at random (SQS, API): {_n(per_container)} distinct keys a container "
        f"per {ttl:g} s -> {_n(random_reads)} GetItem/s"
    )
    say(f"  hottest key's item, cached (every container): {_n(c / ttl, 1)} GetItem/s")
    for b in sorted(batch_ms):
        invocations = ns.total / b
        say(
            f"  no cache, batch {b:>5}: {_n(invocations * distinct(p, b))} GetItem/s, "
            f"hottest item {_n(invocations * (1 - (1 - p[0]) ** b))}/s"
        )
    for records in RECORDS:
        size = item_size(metadata_item("TENANT#000042", int(n[0]), records))
        say(
            f"  metadata item with {records:>3} day records: {_n(size)} B, "
            f"{read_units(size, consistent=True):g} RRU per read, "
            f"{write_units(size)} WRU per update"
        )
    for records in RECORDS[:2]:
        size = item_size(metadata_item("TENANT#000042", 1, records))
        table = ns.keys * size
        per_read = read_units(size, consistent=True)
        say(
            f"  with {records:>3} day records a key: the sweep's Scan reads "
            f"{table / 2**20:,.0f} MiB "
            f"({math.ceil(table / 2**20):,} pages of 1 MB, "
            f"{query_read_units(table, consistent=False):,.0f} RRU eventually consistent) "
            f"every minute; writers' GetItem {_n(random_reads * per_read)} RRU/s at random "
            f"routing, {_n(by_key * per_read)} routed by key"
        )
    say(
        f"  day-bucket records: one conditional UpdateItem per (container, key, day): "
        f"up to {_n(c * ns.keys)} a day at random routing"
    )
    year = item_size(metadata_item("TENANT#000042", int(n[0]), 365))
    say(
        f"  hottest item at the day's first second: {_n(c)} updates x {write_units(year)} WRU "
        f"= {_n(c * write_units(year))} WRU on one item (1,000 WCU/s a partition)"
    )
    say("")

    line = write_load_line_bytes()
    say(f"overhead: one 'write load' line per key and invocation, {line} B each (measured)")
    for b in sorted(batch_ms):
        invocations = ns.total / b
        lines_s = invocations * distinct(p, b)
        say(
            f"  batch {b:>5}: {distinct(p, b):7.2f} keys an invocation -> {_n(lines_s)} lines/s, "
            f"{lines_s * line / 1e6:,.1f} MB/s, {lines_s / ns.total:.3f} per write"
        )
    say(
        "  DynamoDB Contributor Insights events per written item: 2 on the table "
        "(PK and PK+SK) + 2 on GSI1 = 4"
    )
    say("")

    if ns.plan_keys:
        load_start = load_average()
        timing = time_planning(ns.plan_keys, loads)
        m = machine(load_start)
        say(
            f"planner on {_n(ns.plan_keys)} synthetic keys, in memory "
            f"({m['cpus']} CPUs, Python {m['python']}, load {m['loadavg_start']} -> "
            f"{m['loadavg_end']}):"
        )
        for step, fig in timing.items():
            calls = ", ".join(
                f"{fig[c]:,.0f} {c}" for c in ("GetItem", "UpdateItem", "Scan") if c in fig
            )
            changed = f", {fig['changed']:,.0f} keys changed" if "changed" in fig else ""
            say(f"  {step:<22} {fig['seconds']:6.3f} s{changed}{'; ' + calls if calls else ''}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Print the page's figures (``python -m bench fleet-paper``)."""
    ap = argparse.ArgumentParser(prog="python -m bench fleet-paper", description=__doc__)
    ap.add_argument("--keys", type=int, default=KEYS, help="logical keys")
    ap.add_argument("--total", type=float, default=TOTAL_WCU, help="WCU/s over every key")
    ap.add_argument("--exponent", type=float, default=EXPONENT, help="Zipf exponent")
    ap.add_argument("--containers", type=int, default=CONTAINERS, help="writer containers")
    ap.add_argument("--ttl", type=float, default=CACHE_TTL_S, help="metadata cache lifetime, s")
    ap.add_argument(
        "--keys-per-container", type=int, default=KEYS_PER_CONTAINER, help="keys routed by key"
    )
    ap.add_argument(
        "--plan-keys", type=int, default=KEYS, help="keys the planner is timed on (0: skip)"
    )
    ns = ap.parse_args(argv)
    if ns.plan_keys > ns.keys:
        ap.error("--plan-keys must not exceed --keys")
    for line in report(ns):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
