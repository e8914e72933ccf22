"""Emulator-overhead benchmark: what the partition emulator adds to a request's latency.

Run with ``python -m bench.emulator_overhead`` (or ``make bench-emulator``). It starts
DynamoDB Local and sends the same sequential requests four ways, in one run:

- ``direct``: a boto3 client of DynamoDB Local;
- ``passthrough``: through a bare aiohttp reverse proxy (the extra HTTP hop alone);
- ``http``: through the partition emulator's HTTP endpoint (another process's view);
- ``in_process``: a client of DynamoDB Local with the emulator attached in process
  (:class:`sandbox.emulator.InProcessEmulator`, a botocore ``before-send`` handler).

The emulator runs unscaled with no added latency, so nothing is throttled or delayed:
what is measured is its own cost. The paths take turns request by request (the order
rotated each time), so whatever else runs on a shared machine hits every path alike.
Operations: ``PutItem`` of a small item (the target) and ``Query`` of one small item
collection (a read, charged from the response's size).

It writes ``bench/results/emulator_overhead.json`` and prints a table. Every figure is
measured in the run; ratios are against ``direct`` in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import aiohttp
from aiohttp import web

from bench.machine import load_average, machine, print_targets, utc_now, write_result
from infra.table_specs import DATA_TABLE, METADATA_TABLE
from sandbox.emulator import EmulatorConfig, EmulatorServer
from sandbox.engines.dynamodb_local import DynamoDBLocal, local_client
from sandbox.lifecycle import exit_on_sigterm
from sandbox.tables import create_tables, data_and_metadata

RESULTS = Path(__file__).resolve().parent / "results" / "emulator_overhead.json"
PATHS: Final = ("direct", "passthrough", "http", "in_process")
OPERATIONS: Final = ("PutItem", "Query")
WARM_UP: Final = 50
#: Largest in-process / direct median latency ratio (issue 17).
TARGET_RATIO: Final = 1.2

_HOP_HEADERS = frozenset({"host", "content-length", "connection", "accept-encoding"})
_RELAY = ("Content-Type", "x-amzn-RequestId", "x-amz-crc32")


class Passthrough:
    """A bare aiohttp reverse proxy to DynamoDB Local: the cost of the extra HTTP hop alone.

    The same stack as the emulator (``aiohttp.web`` server, one keep-alive
    ``ClientSession``, on its own event loop in a thread of this process) with nothing
    in between, so ``http / passthrough`` is what the emulator's own work adds.

    Parameters
    ----------
    upstream : str
        DynamoDB Local's endpoint URL; ``url`` holds the proxy's own once it started.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def _handle(self, request: web.Request) -> web.Response:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        body = await request.read()
        async with self._session.post(self.upstream, data=body, headers=headers) as resp:
            data = await resp.read()
            relay = {k: resp.headers[k] for k in _RELAY if k in resp.headers}
            return web.Response(status=resp.status, body=data, headers=relay)

    async def _start(self) -> str:
        self._session = aiohttp.ClientSession(auto_decompress=False)
        app = web.Application()
        app.router.add_post("/", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    async def _stop(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def __enter__(self) -> Passthrough:
        self._thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *_exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


def _client(endpoint: str) -> Any:
    """A client with botocore's retries off (nothing is throttled here anyway)."""
    return local_client(endpoint, total_max_attempts=1)


def _requests(table: str, operation: str) -> Callable[[Any, int], None]:
    """Return ``send(client, i)``: one request of ``operation`` (small items, 50 keys)."""
    prefix = uuid.uuid4().hex[:8]
    if operation == "PutItem":

        def put(client: Any, i: int) -> None:
            item = {"PK": {"S": f"LAT#{prefix}#{i % 50}"}, "SK": {"S": f"{i:08d}"}}
            client.put_item(TableName=table, Item=item)

        return put

    def query(client: Any, i: int) -> None:
        client.query(
            TableName=table,
            KeyConditionExpression="PK = :p",
            ExpressionAttributeValues={":p": {"S": f"READ#{i % 10}"}},
            Limit=10,
        )

    return query


def latency_ms(send: Callable[[Any, int], None], client: Any, n: int) -> list[float]:
    """Send ``n`` requests one after another; return each one's latency, ms."""
    samples: list[float] = []
    for i in range(n):
        t0 = time.perf_counter()
        send(client, i)
        samples.append((time.perf_counter() - t0) * 1000.0)
    return samples


def p90(values: list[float]) -> float:
    """Return the 90th percentile (``statistics.quantiles``, exclusive method)."""
    return statistics.quantiles(values, n=10)[-1]


def measure(ddb: DynamoDBLocal, table: str, n: int) -> dict[str, dict[str, Any]]:
    """Measure every path and operation, interleaved; return figures per operation.

    Parameters
    ----------
    ddb : DynamoDBLocal
        A running DynamoDB Local.
    table : str
        The data table (deployed shape, GSI1 included).
    n : int
        Requests per path and operation, the paths taking turns request by request.

    Returns
    -------
    dict
        Operation -> path -> ``{"requests", "median_ms", "p90_ms", "ratio"}`` (ratio of
        medians against ``direct``).
    """
    with (
        EmulatorServer(ddb.endpoint_url, EmulatorConfig(scale=1.0)) as server,
        Passthrough(ddb.endpoint_url) as proxy,
    ):
        # One emulator model for both emulator paths, as the sandbox would run them.
        clients = {
            "direct": _client(ddb.endpoint_url),
            "passthrough": _client(proxy.url),
            "http": _client(server.endpoint_url),
            "in_process": server.in_process().attach(_client(ddb.endpoint_url)),
        }
        seed = clients["direct"]
        for k in range(10):
            for j in range(3):
                item = {"PK": {"S": f"READ#{k}"}, "SK": {"S": f"{j}"}, "v": {"S": "x" * 100}}
                seed.put_item(TableName=table, Item=item)
        out: dict[str, dict[str, Any]] = {}
        for operation in OPERATIONS:
            send = _requests(table, operation)
            samples: dict[str, list[float]] = {name: [] for name in clients}
            for client in clients.values():
                latency_ms(send, client, WARM_UP)  # connections, JIT, table metadata
            names = list(clients)
            for i in range(n):
                # One request per path in turn, the order rotated, so that whatever else
                # runs on the machine hits every path alike.
                shift = i % len(names)
                for name in names[shift:] + names[:shift]:
                    t0 = time.perf_counter()
                    send(clients[name], i)
                    samples[name].append((time.perf_counter() - t0) * 1000.0)
            direct = statistics.median(samples["direct"])
            out[operation] = {
                name: {
                    "requests": len(values),
                    "median_ms": round(statistics.median(values), 3),
                    "p90_ms": round(p90(values), 3),
                    "ratio": round(statistics.median(values) / direct, 3),
                }
                for name, values in samples.items()
            }
        unparsed = dict(server.emulator.unparsed)
    if unparsed:
        raise RuntimeError(f"the emulator forwarded requests unparsed: {unparsed}")
    return out


def print_table(figures: dict[str, dict[str, Any]]) -> None:
    """Print one line per operation and path: median and p90 latency, ms, and the ratio.

    Parameters
    ----------
    figures : dict
        Operation -> path -> ``{"median_ms", "p90_ms", "ratio"}`` (ratio of medians
        against ``direct``).
    """
    head = f"{'operation':<10}{'path':<13}{'median_ms':>10}{'p90_ms':>9}{'ratio':>8}"
    print(head)
    print("-" * len(head))
    for operation, paths in figures.items():
        for name, f in paths.items():
            print(
                f"{operation:<10}{name:<13}{f['median_ms']:>10.3f}{f['p90_ms']:>9.3f}"
                f"{f['ratio']:>8.3f}"
            )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and write its JSON.

    Parameters
    ----------
    argv : list of str, optional
        ``--requests N`` (per path and operation, default 1,000), ``--quick`` (200),
        ``--output PATH``.

    Returns
    -------
    int
        0.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--requests", type=int, default=1000, help="per path and operation")
    parser.add_argument("--quick", action="store_true", help="200 requests each (smoke run)")
    args = parser.parse_args(argv)
    n = 200 if args.quick else args.requests
    wall0 = time.monotonic()
    load_start = load_average()
    with exit_on_sigterm(), DynamoDBLocal() as ddb:
        tables = data_and_metadata(
            create_tables(
                ddb.client(),
                suffix=f"-bench{uuid.uuid4().hex[:6]}",
                specs=(DATA_TABLE, METADATA_TABLE),
            )
        )
        figures = measure(ddb, tables[0], n)
    put, query = figures["PutItem"], figures["Query"]
    result: dict[str, Any] = {
        "benchmark": "emulator_overhead",
        "date": utc_now(),
        "machine": machine(load_start),
        "definitions": {
            "ratio": (
                "median latency of sequential requests on that path / median latency of "
                "the same requests direct to DynamoDB Local, same run, interleaved request "
                "by request"
            ),
            "paths": {
                "direct": "boto3 client of DynamoDB Local",
                "passthrough": "through a bare aiohttp reverse proxy (the HTTP hop alone)",
                "http": "through the partition emulator's HTTP endpoint",
                "in_process": (
                    "boto3 client of DynamoDB Local with the emulator attached in process "
                    "(botocore before-send handler, InProcessEmulator)"
                ),
            },
        },
        "setup": {
            "emulator": "scale 1, no added latency: nothing throttled or delayed",
            "interleaving": "one request per path in turn, the order rotated each time",
            "warm_up_requests": WARM_UP,
            "put_item": "one small item (two string keys), 50 partition keys",
            "query": "one item collection of 3 items of about 110 bytes, Limit 10",
        },
        "operations": figures,
        "targets": {
            "in_process_put_item_ratio": {
                "target": TARGET_RATIO,
                "measured": put["in_process"]["ratio"],
                "met": put["in_process"]["ratio"] <= TARGET_RATIO,
            },
            "in_process_query_ratio": {
                "target": TARGET_RATIO,
                "measured": query["in_process"]["ratio"],
                "met": query["in_process"]["ratio"] <= TARGET_RATIO,
            },
        },
        "total_wall_s": round(time.monotonic() - wall0, 1),
    }
    write_result(args.output, result)
    print_table(figures)
    print_targets(result["targets"], args.output, result["total_wall_s"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
