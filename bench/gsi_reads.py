"""GSI1 reads benchmark: base-table shard fan-out against GSI1 bucket fan-out.

Run with ``python -m bench.gsi_reads``. It starts DynamoDB Local, writes one logical key
cool (N = 1) for a day, then grows it to N = 32 and writes two hot days, and reads
three window classes on both paths (``path=base`` strongly consistent, ``path=gsi1``
eventually consistent) and on the planner's choice (``consistent=False, path=auto``):

- ``cool-hour``: one hour of the cool day (its bucket has G = 1);
- ``hot-hour``: one hour of a hot day (G = 32);
- ``3-days-asc`` / ``3-days-desc``: the whole three days, oldest or newest first.

For each it measures Query calls, read capacity (``ReturnConsumedCapacity=TOTAL``, as
DynamoDB Local reports it) and wall time (median of the repetitions), reading every page
of the window. It writes ``bench/results/gsi_reads.json`` and prints a table. DynamoDB
Local's latency is not DynamoDB's; the request counts and RCU are the figures that carry
over.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from dynashard import Dynashard, DynashardConfig, Event
from sandbox.engines.dynamodb_local import DynamoDBLocal
from sandbox.lifecycle import exit_on_sigterm
from sandbox.tables import create_tables, data_and_metadata

RESULTS = Path(__file__).resolve().parent / "results" / "gsi_reads.json"
KEY = "DEPARTURES#BENCH"
DAY0 = datetime(2013, 1, 1, tzinfo=UTC)


class MeteredClient:
    """Delegates to a boto3 client; counts Query calls and sums their consumed RCU."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.queries = 0
        self.rcu = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def query(self, **request: Any) -> Any:
        response = self.inner.query(ReturnConsumedCapacity="TOTAL", **request)
        self.queries += 1
        self.rcu += float(response.get("ConsumedCapacity", {}).get("CapacityUnits", 0.0))
        return response

    def reset(self) -> None:
        self.queries, self.rcu = 0, 0.0


def _events(day: int, n: int, prefix: str) -> list[Event]:
    start = DAY0 + timedelta(days=day)
    step = timedelta(days=1) / n
    return [
        Event(key=KEY, id=f"{prefix}{i:06d}", ts=start + i * step, data={"i": i, "pad": "x" * 200})
        for i in range(n)
    ]


def _read_window(ds: Dynashard, **options: Any) -> tuple[int, str]:
    count, cursor, path = 0, None, ""
    while True:
        page = ds.query_events(KEY, cursor=cursor, limit=100, **options)
        count += len(page.items)
        path = page.plan.path.value if page.plan else "?"
        cursor = page.cursor
        if cursor is None:
            return count, path


def run(repeat: int, per_day: int) -> dict[str, Any]:
    """Write the data set, read every window class on every path, return the figures."""
    with DynamoDBLocal() as ddb:
        client = ddb.client(max_pool_connections=40)
        data, meta = data_and_metadata(create_tables(client, suffix=f"-{uuid.uuid4().hex[:6]}"))
        metered = MeteredClient(client)
        config = DynashardConfig(data, meta, endpoint_url=ddb.endpoint_url, max_workers=32)
        ds = Dynashard(config, client=metered)  # type: ignore[arg-type]
        assert all(o.ok for o in ds.put_events(_events(0, per_day, "c")))
        ds.set_shard_count(KEY, 32)
        ds.metadata.invalidate(KEY)
        for day in (1, 2):
            assert all(o.ok for o in ds.put_events(_events(day, per_day, f"h{day}")))
        windows = {
            "cool-hour": (DAY0 + timedelta(hours=10), DAY0 + timedelta(hours=11), False),
            "hot-hour": (
                DAY0 + timedelta(days=1, hours=10),
                DAY0 + timedelta(days=1, hours=11),
                False,
            ),
            "3-days-asc": (DAY0, DAY0 + timedelta(days=3), False),
            "3-days-desc": (DAY0, DAY0 + timedelta(days=3), True),
        }
        modes: dict[str, dict[str, Any]] = {
            "base": {"path": "base"},
            "gsi1": {"path": "gsi1", "consistent": False},
            "auto": {"path": "auto", "consistent": False},
        }
        rows = []
        for window, (start, end, descending) in windows.items():
            for mode, options in modes.items():
                walls = []
                for _ in range(repeat):
                    metered.reset()
                    began = time.perf_counter()
                    items, path = _read_window(
                        ds, start=start, end=end, descending=descending, **options
                    )
                    walls.append((time.perf_counter() - began) * 1000)
                rows.append(
                    {
                        "window": window,
                        "mode": mode,
                        "path": path,
                        "items": items,
                        "queries": metered.queries,
                        "rcu": round(metered.rcu, 1),
                        "median_ms": round(statistics.median(walls), 1),
                    }
                )
        ds.close()
    return {"per_day": per_day, "repeat": repeat, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print and save its table; return the exit code (0)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--per-day", type=int, default=2400)
    args = parser.parse_args(argv)
    with exit_on_sigterm():
        result = run(args.repeat, args.per_day)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"{'window':<12} {'mode':<5} {'path':<5} {'items':>6} {'queries':>8} {'RCU':>7} {'ms':>7}"
    )
    for r in result["rows"]:
        print(
            f"{r['window']:<12} {r['mode']:<5} {r['path']:<5} {r['items']:>6} "
            f"{r['queries']:>8} {r['rcu']:>7} {r['median_ms']:>7}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
