"""dynashard.lambda_kit.ingest: one bulk write decides every record's fate; write-load log lines."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from dynashard.core.buckets import TimeBucket
from dynashard.core.schema import EPOCH_MS_NUMBER, Payload, TableSchema
from dynashard.dynamodb.writer import event_write_units
from dynashard.errors import MetadataError
from dynashard.lambda_kit.ingest import (
    BatchResult,
    describe_error,
    log_write_load,
    log_write_refused,
    parse_event,
    write_batch,
    write_events,
)
from dynashard.model import Event


@dataclass
class Line:
    level: str
    message: str
    extra: dict[str, Any]


@dataclass
class RecordingLogger:
    """A LogSink that keeps every line, in order."""

    lines: list[Line] = field(default_factory=list)

    def info(self, msg: object, *args: object, extra: Mapping[str, object] | None = None) -> None:
        self.lines.append(Line("info", str(msg), dict(extra or {})))

    def exception(
        self, msg: object, *args: object, extra: Mapping[str, object] | None = None
    ) -> None:
        self.lines.append(Line("exception", str(msg), dict(extra or {})))

    def named(self, message: str) -> list[Line]:
        return [line for line in self.lines if line.message == message]


@dataclass
class Outcome:
    event_id: str
    key: str
    ok: bool
    error: str | None = None
    write_units: int = 1
    permanent: bool = False
    field: str | None = None


class FakeWriter:
    """Fails the event ids in ``fail_ids``; raises ``raises``; or returns ``short`` outcomes."""

    def __init__(
        self, fail_ids: Sequence[str] = (), raises: Exception | None = None, short: bool = False
    ) -> None:
        self.fail_ids = set(fail_ids)
        self.raises = raises
        self.short = short
        self.calls: list[list[Event]] = []

    def put_events(self, events: Sequence[Event]) -> list[Outcome]:
        self.calls.append(list(events))
        if self.raises is not None:
            raise self.raises
        outcomes = [
            Outcome(
                e.id,
                e.key,
                e.id not in self.fail_ids,
                "Throttled" if e.id in self.fail_ids else None,
            )
            for e in events
        ]
        return outcomes[:-1] if self.short else outcomes


def _record(event_id: str, key: str = "DEPARTURES#JFK", ts: Any = "2013-01-01T05:40:00Z") -> str:
    return json.dumps({"key": key, "id": event_id, "ts": ts, "data": {"flight": 1}})


def _items(*bodies: str) -> list[tuple[str, Callable[[], str | bytes]]]:
    return [(f"m{i}", lambda body=body: body) for i, body in enumerate(bodies)]


def _day() -> TimeBucket:
    return TimeBucket.DAY


# --- parsing ------------------------------------------------------------------------------
def test_parse_event_validates_the_json_event() -> None:
    event = parse_event(_record("e1"))
    assert (event.key, event.id, event.ts.isoformat()) == (
        "DEPARTURES#JFK",
        "e1",
        "2013-01-01T05:40:00+00:00",
    )
    with pytest.raises(ValueError, match="ts"):
        parse_event(_record("e1", ts="yesterday"))


def test_describe_error_names_the_pydantic_fields_and_else_the_type() -> None:
    with pytest.raises(ValueError) as caught:
        parse_event(json.dumps({"key": "K", "ts": "yesterday"}))
    described = describe_error(caught.value)
    assert "id: Field required" in described
    assert "ts: must be ISO-8601" in described
    assert "; " in described
    assert describe_error(KeyError("x")) == "KeyError: 'x'"


# --- write_batch ----------------------------------------------------------------------------
def test_invalid_records_are_failed_and_the_valid_ones_are_one_write() -> None:
    # Given two valid records around one with an unparseable ts and one not JSON
    writer, logger = FakeWriter(), RecordingLogger()
    items = _items(_record("e1"), _record("e2", ts="yesterday"), "{nope", _record("e3"))
    # When the batch is written
    result = write_batch(items, writer, logger=logger, bucket=_day)
    # Then the valid events went in one call, and only the invalid records failed
    assert [[e.id for e in call] for call in writer.calls] == [["e1", "e3"]]
    assert result.fates["m0"] is None and result.fates["m3"] is None
    assert str(result.fates["m1"]).startswith("invalid event: ts: must be ISO-8601")
    assert str(result.fates["m2"]).startswith("invalid event: ")
    assert (result.written, result.failed) == (2, 2)


def test_an_event_the_write_refuses_fails_its_record_with_the_reason() -> None:
    writer = FakeWriter(fail_ids=["e2"])
    result = write_batch(
        _items(_record("e1"), _record("e2")), writer, logger=RecordingLogger(), bucket=_day
    )
    assert result.fates == {"m0": None, "m1": "write failed: Throttled"}


def test_an_outcome_without_an_error_says_unknown() -> None:
    class Silent(FakeWriter):
        def put_events(self, events: Sequence[Event]) -> list[Outcome]:
            return [Outcome(e.id, e.key, False) for e in events]

    result = write_batch(_items(_record("e1")), Silent(), logger=RecordingLogger(), bucket=_day)
    assert result.fates == {"m0": "write failed: unknown"}


def test_a_write_that_fails_as_a_whole_fails_every_valid_record_and_is_logged() -> None:
    # Given a writer whose bulk write raises a library error
    writer, logger = FakeWriter(raises=MetadataError()), RecordingLogger()
    # When a batch with one invalid record is written
    result = write_batch(
        _items(_record("e1"), "{nope", _record("e2")), writer, logger=logger, bucket=_day
    )
    # Then it does not raise: every valid record says why, the invalid one too
    assert result.fates["m0"] == result.fates["m2"] == "write failed: shard metadata unavailable"
    assert str(result.fates["m1"]).startswith("invalid event")
    assert result.written == 0
    assert [line.level for line in logger.named("bulk write failed")] == ["exception"]


def test_a_writer_that_breaks_the_one_outcome_per_event_contract_acknowledges_nothing() -> None:
    with pytest.raises(RuntimeError, match="1 outcomes for 2 events"):
        write_batch(
            _items(_record("e1"), _record("e2")),
            FakeWriter(short=True),
            logger=RecordingLogger(),
            bucket=_day,
        )


def test_a_batch_of_only_invalid_records_writes_nothing_and_reads_no_bucket() -> None:
    writer, logger = FakeWriter(), RecordingLogger()

    def no_bucket() -> TimeBucket:
        raise AssertionError("the settings were read for a batch with nothing to write")

    result = write_batch(_items("{a", "{b"), writer, logger=logger, bucket=no_bucket)
    assert writer.calls == [] and logger.lines == []
    assert result.failed == 2 and result.written == 0


def test_a_payload_that_fails_to_decode_is_an_invalid_event() -> None:
    import base64

    def bad_base64() -> bytes:
        return base64.b64decode("%%% not base64 %%%", validate=True)

    result = write_batch([("s1", bad_base64)], FakeWriter(), logger=RecordingLogger(), bucket=_day)
    assert str(result.fates["s1"]).startswith("invalid event: Error: ")


def test_write_load_is_logged_per_key_before_the_write_and_refusals_after_it() -> None:
    # Given two JFK records, the second delivered before, and one EWR record refused
    writer, logger = FakeWriter(fail_ids=["e3"]), RecordingLogger()
    items = _items(_record("e1"), _record("e2"), _record("e3", key="DEPARTURES#EWR"))
    # When the batch is written
    write_batch(items, writer, logger=logger, bucket=_day, redelivered={"m1"})
    # Then one "write load" line per logical key says what was offered and redelivered
    loads = {line.extra["logical_key"]: line.extra for line in logger.named("write load")}
    assert set(loads) == {"DEPARTURES#JFK", "DEPARTURES#EWR"}
    jfk, ewr = loads["DEPARTURES#JFK"], loads["DEPARTURES#EWR"]
    assert (jfk["events"], jfk["offered_wcu"], jfk["redelivered_wcu"]) == (2, 1, 1)
    assert (ewr["events"], ewr["offered_wcu"], ewr["redelivered_wcu"]) == (1, 1, 0)
    # and one "write refused" line, after them, for the key where the write refused one
    refused = logger.named("write refused")
    assert [
        (r.extra["logical_key"], r.extra["events"], r.extra["refused_wcu"]) for r in refused
    ] == [("DEPARTURES#EWR", 1, 1)]
    messages = [line.message for line in logger.lines]
    assert messages.index("write refused") > max(
        i for i, m in enumerate(messages) if m == "write load"
    )


def test_an_event_too_large_for_an_item_counts_no_write_units() -> None:
    # Given a JFK event over DynamoDB's 400 KB item limit next to a normal one
    big = json.dumps(
        {"key": "DEPARTURES#JFK", "id": "big", "ts": 1357035300000, "data": {"blob": "x" * 420_000}}
    )
    logger = RecordingLogger()
    # When the write load is logged
    log_write_load(logger, [parse_event(big), parse_event(_record("e1"))], TimeBucket.DAY)
    # Then both are counted as events, but only the normal one's unit is offered
    [line] = logger.named("write load")
    assert (line.extra["events"], line.extra["offered_wcu"]) == (2, 1)


#: A table of another layout: attributes of its own, a flat payload, no GSI.
FLAT = TableSchema(
    partition_key="device",
    sort_key="at",
    sort_key_codec=EPOCH_MS_NUMBER,
    gsi_name=None,
    id_attr="reading_id",
    payload=Payload.FLAT,
)


def _sized_apart() -> Event:
    """An event whose item takes more write units in the default layout than in FLAT."""
    for pad in range(600, 1100):
        event = parse_event(_record("e1").replace('{"flight": 1}', f'{{"note": "{"x" * pad}"}}'))
        if event_write_units(event, TimeBucket.DAY) != event_write_units(
            event, TimeBucket.DAY, schema=FLAT
        ):
            return event
    raise AssertionError("no payload size tells the two layouts apart")


def test_the_write_load_is_sized_with_the_tables_schema() -> None:
    # Given an event whose item is over 1 KB in dynashard's layout, under it in FLAT
    event = _sized_apart()
    flat_units = event_write_units(event, TimeBucket.DAY, schema=FLAT)
    default_units = event_write_units(event, TimeBucket.DAY)
    assert flat_units < default_units
    # When the write load is logged for the FLAT table, by each entry point
    logged = RecordingLogger()
    log_write_load(logged, [event], TimeBucket.DAY, schema=FLAT)
    api = RecordingLogger()
    write_events([event], FakeWriter(), logger=api, bucket=TimeBucket.DAY, schema=FLAT)
    batch = RecordingLogger()
    body = json.dumps(event.to_json())
    write_batch(_items(body), FakeWriter(), logger=batch, bucket=_day, schema=lambda: FLAT)
    # Then each line offers the units the writer's sizing of that schema says
    for logger in (logged, api, batch):
        [line] = logger.named("write load")
        assert line.extra["offered_wcu"] == flat_units
    # And without a schema, dynashard's own layout sizes it (as before)
    default = RecordingLogger()
    log_write_load(default, [event], TimeBucket.DAY)
    assert default.named("write load")[0].extra["offered_wcu"] == default_units


def test_log_write_refused_is_silent_when_nothing_was_refused() -> None:
    logger = RecordingLogger()
    log_write_refused(logger, [Outcome("e1", "K", True)])
    assert logger.lines == []


# --- write_events (the API's bulk write) ----------------------------------------------------
def test_write_events_returns_one_outcome_per_event_logging_load_then_refusals() -> None:
    writer, logger = FakeWriter(fail_ids=["e2"]), RecordingLogger()
    events = [parse_event(_record("e1")), parse_event(_record("e2"))]
    outcomes = write_events(events, writer, logger=logger, bucket=TimeBucket.DAY)
    assert [(o.event_id, o.ok) for o in outcomes] == [("e1", True), ("e2", False)]
    assert [line.message for line in logger.lines] == ["write load", "write refused"]


def test_write_events_lets_a_whole_write_failure_propagate() -> None:
    with pytest.raises(MetadataError):
        write_events(
            [parse_event(_record("e1"))],
            FakeWriter(raises=MetadataError()),
            logger=RecordingLogger(),
            bucket=TimeBucket.DAY,
        )


def test_batch_result_counts() -> None:
    result = BatchResult({"a": None, "b": "write failed: x", "c": None})
    assert (result.written, result.failed) == (2, 1)
    assert BatchResult().written == 0
