"""The ingest benchmark's pure parts: the article's put_item baseline, targets, CPU."""

from __future__ import annotations

import json
import os
import random
from typing import Any

from bench.ingest import ArticlePutItemWriter, Cell, add_cpu, evaluate_targets, process_cpu_s
from sandbox.local_aws.aws_events import sqs_event, sqs_record


class RecordingTable:
    """A boto3 Table stand-in: keeps every ``put_item`` Item; refuses ids listed in ``refuse``."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.items: list[dict[str, Any]] = []
        self.refuse = refuse

    def put_item(self, Item: dict[str, Any]) -> None:  # boto3 names it Item
        if Item["payload"].get("id") in self.refuse:
            raise RuntimeError("refused")
        self.items.append(Item)


def _event(i: int) -> dict[str, Any]:
    return {
        "key": f"DEPARTURES#{'JFK' if i % 2 else 'EWR'}",
        "id": f"f{i}",
        "ts": i,
        "data": {"id": f"f{i}"},
    }


def test_the_baseline_puts_one_item_per_record_on_a_random_suffix_shard() -> None:
    # Given an SQS batch of 200 records and the article's writer over 10 shards
    table = RecordingTable()
    writer = ArticlePutItemWriter(table, 10, random.Random(1))
    event = sqs_event(sqs_record(json.dumps(_event(i))) for i in range(200))
    # When it writes the batch
    failed = writer.write_batch(event)
    # Then each record is one item on "{key}#_{shard}", shards spread over 0..9
    assert failed == 0
    assert len(table.items) == 200
    shards = {item["PK"].rsplit("#_", 1)[1] for item in table.items}
    assert shards == {str(s) for s in range(10)}
    assert all(
        item["PK"].rsplit("#_", 1)[0] in {"DEPARTURES#JFK", "DEPARTURES#EWR"}
        for item in table.items
    )
    # with a unique sort key of the write time and a UUID, and the payload as a map
    assert len({item["SK"] for item in table.items}) == 200
    assert table.items[0]["payload"] == {"id": "f0"}


def test_the_baseline_counts_a_refused_put_and_goes_on() -> None:
    table = RecordingTable(refuse=frozenset({"f3"}))
    writer = ArticlePutItemWriter(table, 4, random.Random(1))
    failed = writer.write_batch(sqs_event(sqs_record(json.dumps(_event(i))) for i in range(6)))
    assert failed == 1
    assert len(table.items) == 5


def _row(backend: str, batch: int, speedup: float) -> dict[str, Any]:
    cell = Cell(backend, batch, records=100, wall_s=1.0, cpu_s=0.01)
    cell.baseline_records, cell.baseline_wall_s, cell.batch_ms = 100, speedup, [1.0]
    return cell.summary()


def test_targets_are_the_speedup_at_batch_1000_per_backend() -> None:
    runs = [
        _row("dynamodb-local", 1000, 4.9),
        _row("emulator", 1000, 5.0),
        _row("emulator", 10, 1.0),
    ]
    targets = evaluate_targets(runs)
    assert targets == {
        "speedup_at_batch_1000_dynamodb-local": {"target": ">= 5.0", "measured": 4.9, "met": False},
        "speedup_at_batch_1000_emulator": {"target": ">= 5.0", "measured": 5.0, "met": True},
    }
    assert runs[0]["cpu_ms_per_record"] == 0.1


def test_process_cpu_reads_this_process_and_says_unknown_for_a_gone_one() -> None:
    assert (process_cpu_s(os.getpid()) or 0) > 0
    assert process_cpu_s(None) is None
    assert process_cpu_s(2**22 + 12345) is None


def test_an_unknown_cpu_reading_is_not_measured_rather_than_zero() -> None:
    # Given a cell whose DynamoDB Local readings were known once, then not (no /proc)
    cell = Cell("dynamodb-local", 10, records=10, wall_s=1.0, baseline_records=10)
    cell.baseline_wall_s, cell.batch_ms = 2.0, [100.0]
    cell.ddb_cpu_s = add_cpu(cell.ddb_cpu_s, 1.0, 1.5)
    cell.baseline_ddb_cpu_s = add_cpu(cell.baseline_ddb_cpu_s, 1.5, 2.0)
    cell.baseline_ddb_cpu_s = add_cpu(cell.baseline_ddb_cpu_s, None, 2.5)
    # Then the known one is per record and the unknown one is None, never 0
    row = cell.summary()
    assert row["ddb_local_cpu_ms_per_record"] == 50.0
    assert row["baseline_ddb_local_cpu_ms_per_record"] is None
    # And a later known reading does not bring an unknown total back
    assert add_cpu(None, 1.0, 2.0) is None
