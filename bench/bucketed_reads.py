"""Bucketed reads benchmark: a year of day buckets, sparse, read with and without read-ahead.

Run with ``python -m bench.bucketed_reads``. It starts DynamoDB Local, writes ``OPS_LOG``
(bucketed by day) on 6 days of one year, 20 events each, and reads the 365-day window
in pages of 50, once with buckets read strictly one after another
(``MAX_PARALLEL_BUCKETS = 1``) and once with the read-ahead of sparse buckets (2, 4, then
8 at once). Each bucket costs a metadata GetItem and a Query whether it holds events or
not. It writes ``bench/results/bucketed_reads.json`` and prints a table (best of
``--repeat`` wall times). DynamoDB Local's latency is not DynamoDB's: the request counts
carry over; ``--latency-ms`` adds a modelled network round trip to every GetItem and
Query (DynamoDB Local answers in well under a millisecond on the same machine and
serves requests largely one at a time, so without it the read-ahead has little to hide).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dynashard.dynamodb.bucketed_reader as bucketed
from dynashard import Dynashard, DynashardConfig, Event
from dynashard.core.families import parse_bucketed_keys
from sandbox.engines.dynamodb_local import DynamoDBLocal
from sandbox.lifecycle import exit_on_sigterm
from sandbox.tables import create_tables, data_and_metadata

RESULTS = Path(__file__).resolve().parent / "results" / "bucketed_reads.json"
T0 = datetime(2025, 1, 1, tzinfo=UTC)
DAYS = (3, 90, 91, 200, 300, 360)


class DelayedClient:
    """Delegates to a boto3 client; GetItem and Query wait ``delay_s`` first (a round trip)."""

    def __init__(self, inner: Any, delay_s: float) -> None:
        self.inner = inner
        self.delay_s = delay_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get_item(self, **request: Any) -> Any:
        time.sleep(self.delay_s)
        return self.inner.get_item(**request)

    def query(self, **request: Any) -> Any:
        time.sleep(self.delay_s)
        return self.inner.query(**request)


def read_window(ds: Dynashard, limit: int) -> tuple[int, int, int, float]:
    """Read every page of the year; return items, pages, Query calls and seconds."""
    started, cursor, pages, queries, items = time.perf_counter(), None, 0, 0, 0
    while True:
        page = ds.query_events(
            "OPS_LOG", start=T0, end=T0 + timedelta(days=365), limit=limit, cursor=cursor
        )
        pages, queries, items = pages + 1, queries + page.queries, items + len(page.items)
        cursor = page.cursor
        if cursor is None:
            return items, pages, queries, time.perf_counter() - started


def run(repeat: int, per_day: int, limit: int, latency_ms: float) -> dict[str, Any]:
    """Write the sparse year and read it both ways."""
    rows = []
    default = bucketed.MAX_PARALLEL_BUCKETS
    with DynamoDBLocal() as ddb:
        suffix = f"-{uuid.uuid4().hex[:6]}"
        data, meta = data_and_metadata(create_tables(ddb.client(), suffix=suffix))
        config = DynashardConfig(
            data,
            meta,
            endpoint_url=ddb.endpoint_url,
            bucketed_keys=parse_bucketed_keys("OPS_LOG=day"),
        )
        client = DelayedClient(ddb.client(max_pool_connections=32), latency_ms / 1000)
        ds = Dynashard(config, client=client)
        events = [
            Event(key="OPS_LOG", id=f"d{d}-{i}", ts=T0 + timedelta(days=d, minutes=i))
            for d in DAYS
            for i in range(per_day)
        ]
        if not all(o.ok for o in ds.put_events(events)):
            raise RuntimeError("write failed")
        try:
            for width in (1, default):
                bucketed.MAX_PARALLEL_BUCKETS = width
                runs = [read_window(ds, limit) for _ in range(repeat)]
                items, pages, queries, _ = runs[0]
                if items != len(events):
                    raise RuntimeError(f"read {items} of {len(events)} events")
                best = min(r[3] for r in runs)
                rows.append(
                    {
                        "max_parallel_buckets": width,
                        "items": items,
                        "pages": pages,
                        "queries": queries,
                        "best_ms": round(best * 1000),
                    }
                )
        finally:
            bucketed.MAX_PARALLEL_BUCKETS = default
            ds.close()
    return {
        "buckets": 365,
        "event_days": len(DAYS),
        "per_day": per_day,
        "latency_ms": latency_ms,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print and save its table; return the exit code (0)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--per-day", type=int, default=20)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    args = parser.parse_args(argv)
    with exit_on_sigterm():
        result = run(args.repeat, args.per_day, args.limit, args.latency_ms)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'parallel':>8} {'items':>6} {'pages':>6} {'queries':>8} {'best ms':>8}")
    for r in result["rows"]:
        print(
            f"{r['max_parallel_buckets']:>8} {r['items']:>6} {r['pages']:>6} "
            f"{r['queries']:>8} {r['best_ms']:>8}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
