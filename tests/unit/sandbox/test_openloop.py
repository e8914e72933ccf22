"""The open-loop replay: schedule, target shard count, deliveries and redeliveries."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from sandbox.harness.delivery import IngestStats
from sandbox.scenarios.demo.openloop import (
    Delivery,
    OfferSchedule,
    OpenLoopReplay,
    plan_deliveries,
    target_shards,
)


@dataclass(frozen=True)
class FakeDeparture:
    """What plan_deliveries and OfferSchedule.dues read of a Departure."""

    key: str
    event: dict[str, Any]


def dep(key: str, event_id: str) -> FakeDeparture:
    return FakeDeparture(key, {"key": key, "id": event_id})


def ev(key: str, event_id: str) -> dict[str, Any]:
    return {"key": key, "id": event_id}


@dataclass
class FakeHandlers:
    """Ingest handlers that fail chosen ids a chosen number of times.

    ``fail_times[id]`` is how many deliveries of that id fail (a large number: always).
    ``api_status`` is answered by the API handler when one of its ids fails.
    """

    fail_times: dict[str, int] = field(default_factory=dict)
    api_status: int = 503
    raise_on: str | None = None
    calls: list[tuple[str, float, list[dict[str, Any]]]] = field(default_factory=list)
    _seen: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _failing(self, event_id: str) -> bool:
        with self._lock:
            self._seen[event_id] = self._seen.get(event_id, 0) + 1
            return self._seen[event_id] <= self.fail_times.get(event_id, 0)

    def invoke(self, name: str, event: dict[str, Any]) -> dict[str, Any]:
        now = time.monotonic()
        if name == self.raise_on:
            raise RuntimeError("handler blew up")
        if name == "sqs":
            with self._lock:
                self.calls.append((name, now, event["Records"]))
            bodies = [json.loads(r["body"]) for r in event["Records"]]
            failed = [
                r["messageId"]
                for r, b in zip(event["Records"], bodies, strict=True)
                if self._failing(b["id"])
            ]
            return {"batchItemFailures": [{"itemIdentifier": i} for i in failed]}
        assert name == "api"
        assert (event["httpMethod"], event["path"]) == ("POST", "/events")
        events = json.loads(event["body"])["events"]
        with self._lock:
            self.calls.append((name, now, events))
        failed = [e["id"] for e in events if self._failing(e["id"])]
        if not failed:
            return {"statusCode": 200, "body": json.dumps({"written": len(events)})}
        body = {"failed": [{"id": i} for i in failed]}
        return {"statusCode": self.api_status, "body": json.dumps(body)}


def replay(handlers: FakeHandlers, stats: IngestStats, **overrides: Any) -> OpenLoopReplay:
    options: dict[str, Any] = {
        "speed": 100.0,
        "visibility_timeout_s": 5.0,  # 0.05 wall s at x100
        "max_receives": 3,
        "max_lag_s": 50.0,  # 0.5 wall s at x100
        "workers": 4,
        "api_workers": 2,
    }
    options.update(overrides)
    return OpenLoopReplay(handlers, stats, **options)


# --- OfferSchedule -----------------------------------------------------------------------
def test_an_events_due_time_is_its_position_over_its_keys_rate() -> None:
    # Given a schedule of 4 events/s for K and 0.5 for L
    schedule = OfferSchedule({"K": 4.0, "L": 0.5})
    # When / Then the n-th event of a key is due at n / rate
    assert schedule.due_s("K", 0) == 0.0
    assert schedule.due_s("K", 2) == pytest.approx(0.5)
    assert schedule.due_s("L", 3) == pytest.approx(6.0)


def test_dues_count_positions_per_key_in_replay_order() -> None:
    # Given interleaved departures of two keys
    schedule = OfferSchedule({"A": 2.0, "B": 1.0})
    departures = [dep("A", "a0"), dep("B", "b0"), dep("A", "a1"), dep("B", "b1"), dep("A", "a2")]
    # When their due times are computed
    dues = schedule.dues(departures)
    # Then each key's events are due at their own position, in the order given
    assert dues == pytest.approx([0.0, 0.0, 0.5, 1.0, 1.0])


@pytest.mark.parametrize("rate", [0.0, -1.0])
def test_a_rate_that_is_not_positive_is_rejected(rate: float) -> None:
    # Given / When / Then a schedule with a non-positive rate cannot be built
    with pytest.raises(ValueError, match="rates must be > 0"):
        OfferSchedule({"K": 1.0, "Z": rate})


# --- target_shards -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("offered", "limit", "utilization", "expected"),
    [
        (300.0, 100.0, 0.5, 6),  # exactly on the boundary: 6, not 7
        (301.0, 100.0, 0.5, 7),
        (0.3, 0.1, 1.0, 3),  # 0.3 / 0.1 is 2.9999999999999996 in floats
        (0.7, 0.1, 1.0, 7),  # 0.7 / 0.1 is 6.999999999999999
        (1.1, 0.1, 1.0, 11),  # 1.1 / 0.1 is 11.000000000000002: 11, not 12
        (10.0, 100.0, 0.5, 1),
        (0.0, 100.0, 0.5, 1),  # at least one shard
    ],
)
def test_target_shards_is_the_ceiling_of_offered_over_planned_share(
    offered: float, limit: float, utilization: float, expected: int
) -> None:
    # Given an offered load, a partition limit and a target utilization
    # When the shard count is computed
    # Then it is ceil(offered / (limit x utilization)), at least 1
    assert target_shards(offered, limit, utilization) == expected


# --- plan_deliveries ---------------------------------------------------------------------
def test_batches_close_at_batch_size_and_are_due_with_their_last_record() -> None:
    # Given 5 events of one key at 1/s, batches of 2, a wide window, x2 speed
    departures = [dep("K", f"k{i}") for i in range(5)]
    # When the deliveries are planned from wall time 100
    deliveries = plan_deliveries(
        departures,
        OfferSchedule({"K": 1.0}),
        start_wall=100.0,
        speed=2.0,
        batch_size=2,
        api_every=1000,
        window_s=10.0,
    )
    # Then batches hold 2 records and are due when their last record is (due / speed)
    assert [[e["id"] for e in d.events] for d in deliveries] == [["k0", "k1"], ["k2", "k3"], ["k4"]]
    assert [d.due_wall for d in deliveries] == pytest.approx([100.5, 101.5, 102.0])
    assert all(d.receive == 1 and d.scheduled for d in deliveries)


def test_a_batch_closes_when_its_batching_window_has_passed() -> None:
    # Given 5 events at 1/s, a large batch size and a 3 s window
    departures = [dep("K", f"k{i}") for i in range(5)]
    # When the deliveries are planned
    deliveries = plan_deliveries(
        departures,
        OfferSchedule({"K": 1.0}),
        start_wall=0.0,
        speed=1.0,
        batch_size=100,
        api_every=1000,
        window_s=3.0,
    )
    # Then the record due 3 s after the batch's first opens a new batch
    assert [[e["id"] for e in d.events] for d in deliveries] == [["k0", "k1", "k2"], ["k3", "k4"]]
    assert [d.due_wall for d in deliveries] == pytest.approx([2.0, 4.0])


def test_the_window_is_in_emulated_seconds() -> None:
    # Given the same events replayed ten times faster than real time
    departures = [dep("K", f"k{i}") for i in range(5)]
    # When the deliveries are planned with a 3 emulated-second window
    deliveries = plan_deliveries(
        departures,
        OfferSchedule({"K": 1.0}),
        start_wall=0.0,
        speed=10.0,
        batch_size=100,
        api_every=1000,
        window_s=3.0,
    )
    # Then the batches are cut as at x1, only due sooner in wall time
    assert [len(d.events) for d in deliveries] == [3, 2]
    assert [d.due_wall for d in deliveries] == pytest.approx([0.2, 0.4])


def test_one_delivery_in_api_every_goes_through_the_api() -> None:
    # Given 7 batches of one record
    departures = [dep("K", f"k{i}") for i in range(7)]
    # When one in 3 is sent through the API
    deliveries = plan_deliveries(
        departures,
        OfferSchedule({"K": 1.0}),
        start_wall=0.0,
        speed=1.0,
        batch_size=1,
        api_every=3,
    )
    # Then the 1st, 4th and 7th go via "api", the others via "sqs"
    assert [d.via for d in deliveries] == ["api", "sqs", "sqs", "api", "sqs", "sqs", "api"]


def test_every_event_is_delivered_once_in_order_of_due_time() -> None:
    # Given a fast key and a slow key, interleaved in replay order
    departures = [dep("F", f"f{i}") for i in range(6)] + [dep("S", f"s{i}") for i in range(3)]
    departures = departures[::2] + departures[1::2]  # shuffle the replay order
    schedule = OfferSchedule({"F": 4.0, "S": 1.0})
    # When the deliveries are planned
    deliveries = plan_deliveries(
        departures, schedule, start_wall=0.0, speed=1.0, batch_size=3, api_every=2
    )
    # Then each event appears exactly once
    delivered = [e for d in deliveries for e in d.events]
    assert sorted(e["id"] for e in delivered) == sorted(d.event["id"] for d in departures)
    assert len(delivered) == len(departures)
    # And in order of due time, each key's events in their replay order
    due_by_id = dict(
        zip([d.event["id"] for d in departures], schedule.dues(departures), strict=True)
    )
    dues = [due_by_id[e["id"]] for e in delivered]
    assert dues == sorted(dues)
    for key in ("F", "S"):
        replayed = [d.event["id"] for d in departures if d.key == key]
        assert [e["id"] for e in delivered if e["key"] == key] == replayed
    # And the deliveries are due in order
    assert [d.due_wall for d in deliveries] == sorted(d.due_wall for d in deliveries)


# --- OpenLoopReplay ----------------------------------------------------------------------
def test_a_record_failed_once_is_redelivered_after_the_visibility_timeout() -> None:
    # Given an SQS handler that fails e1 once, and a replay at x100 with a 5 s timeout
    handlers = FakeHandlers(fail_times={"e1": 1})
    stats = IngestStats(offered=3)
    events = [ev("K", "e0"), ev("K", "e1"), ev("L", "e2")]
    # When one SQS delivery of the three is offered now
    started = time.monotonic()
    replay(handlers, stats).run([Delivery(time.monotonic(), events, "sqs")])
    elapsed = time.monotonic() - started
    # Then the first call carried all three records as the handler gets them from SQS
    first, second = handlers.calls
    assert [r["messageId"] for r in first[2]] == ["e0", "e1", "e2"]
    assert [json.loads(r["body"]) for r in first[2]] == events
    assert {r["attributes"]["ApproximateReceiveCount"] for r in first[2]} == {"1"}
    # And e1 alone came back after 5 / 100 wall seconds, as its second receive
    assert [r["messageId"] for r in second[2]] == ["e1"]
    assert second[2][0]["attributes"]["ApproximateReceiveCount"] == "2"
    assert 0.05 <= second[1] - first[1] < 1.0
    # And every record ends written
    assert (stats.written, stats.redelivered, stats.failed) == (3, 1, 0)
    assert (stats.delivered, stats.via_sqs) == (4, 3)
    assert stats.errors == []
    assert elapsed < 2.0


def test_a_record_that_always_fails_counts_as_failed_after_max_receives() -> None:
    # Given a handler that always fails e1
    handlers = FakeHandlers(fail_times={"e1": 10**6})
    stats = IngestStats(offered=2)
    # When it is offered with two others, with at most 3 receives
    replay(handlers, stats, max_receives=3).run(
        [Delivery(time.monotonic(), [ev("K", "e0"), ev("K", "e1")], "sqs")]
    )
    # Then e1 was delivered 3 times, with increasing receive counts, and then given up
    counts = [
        r["attributes"]["ApproximateReceiveCount"]
        for _, _, records in handlers.calls
        for r in records
        if r["messageId"] == "e1"
    ]
    assert counts == ["1", "2", "3"]
    assert (stats.written, stats.redelivered, stats.failed) == (1, 2, 1)
    assert stats.delivered == 4
    assert any("after 3 receives" in e for e in stats.errors)


def test_counts_are_kept_per_logical_key() -> None:
    # Given two deliveries over keys K and L, where one L record fails for good
    handlers = FakeHandlers(fail_times={"l1": 10**6})
    stats = IngestStats(offered=5)
    now = time.monotonic()
    deliveries = [
        Delivery(now, [ev("K", "k0"), ev("L", "l0"), ev("K", "k1")], "sqs"),
        Delivery(now + 0.01, [ev("K", "k2"), ev("L", "l1")], "sqs"),
    ]
    # When they are replayed with at most 2 receives
    loop_stats = replay(handlers, stats, max_receives=2).run(deliveries)
    # Then each key's offered events are counted once, and its written ones
    assert loop_stats.key_counts() == {"K": (3, 3), "L": (2, 1)}
    assert loop_stats.scheduled_deliveries == 2
    assert stats.written == 4


def test_a_delivery_started_far_past_its_due_time_is_late() -> None:
    # Given one delivery due 10 wall s ago (1000 emulated s at x100) and one due now
    handlers = FakeHandlers()
    stats = IngestStats(offered=2)
    now = time.monotonic()
    deliveries = [
        Delivery(now - 10.0, [ev("K", "e0")], "sqs"),
        Delivery(now + 0.01, [ev("K", "e1")], "sqs"),
    ]
    # When they are replayed, with 50 emulated s of lateness allowed
    loop_stats = replay(handlers, stats, max_lag_s=50.0).run(deliveries)
    # Then the first counts as late, by at least 1000 emulated seconds; the second not
    assert loop_stats.late_deliveries == 1
    assert loop_stats.scheduled_deliveries == 2
    assert loop_stats.max_lag_s >= 1000.0
    assert stats.written == 2


def test_redeliveries_are_not_measured_against_the_schedule() -> None:
    # Given a record that fails twice, its redeliveries being unscheduled
    handlers = FakeHandlers(fail_times={"e0": 2})
    stats = IngestStats(offered=1)
    progress: list[int] = []
    # When it is replayed
    loop_stats = replay(handlers, stats).run(
        [Delivery(time.monotonic(), [ev("K", "e0")], "sqs")], on_progress=progress.append
    )
    # Then only its first delivery counts as scheduled, offered and in progress
    assert loop_stats.scheduled_deliveries == 1
    assert loop_stats.key_counts() == {"K": (1, 1)}
    assert progress == [1]
    assert (stats.delivered, stats.via_sqs, stats.redelivered) == (3, 1, 2)


def test_an_api_delivery_redelivers_the_ids_a_503_names() -> None:
    # Given an API handler answering 503 for e1 once
    handlers = FakeHandlers(fail_times={"e1": 1}, api_status=503)
    stats = IngestStats(offered=2)
    # When a delivery of two goes via the API
    replay(handlers, stats).run([Delivery(time.monotonic(), [ev("K", "e0"), ev("K", "e1")], "api")])
    # Then e1 alone is posted again, through the API, and both end written
    assert [[e["id"] for e in events] for _, _, events in handlers.calls] == [
        ["e0", "e1"],
        ["e1"],
    ]
    assert {name for name, _, _ in handlers.calls} == {"api"}
    assert (stats.written, stats.redelivered, stats.failed, stats.via_api) == (2, 1, 0, 2)
    assert stats.errors == []


def test_an_unexpected_api_answer_fails_the_whole_delivery() -> None:
    # Given an API handler answering 500 when an id fails, always for e1
    handlers = FakeHandlers(fail_times={"e1": 10**6}, api_status=500)
    stats = IngestStats(offered=2)
    # When a delivery of two goes via the API with one receive
    replay(handlers, stats, max_receives=1).run(
        [Delivery(time.monotonic(), [ev("K", "e0"), ev("K", "e1")], "api")]
    )
    # Then neither record counts as written and the answer is recorded
    assert (stats.written, stats.failed) == (0, 2)
    assert any("answered 500" in e for e in stats.errors)


def test_a_handler_that_raises_sends_the_whole_delivery_back() -> None:
    # Given an SQS handler that raises
    handlers = FakeHandlers(raise_on="sqs")
    stats = IngestStats(offered=2)
    # When a delivery of two is replayed with two receives
    replay(handlers, stats, max_receives=2).run(
        [Delivery(time.monotonic(), [ev("K", "e0"), ev("K", "e1")], "sqs")]
    )
    # Then both records were redelivered once, then failed, and the error recorded
    assert (stats.delivered, stats.redelivered, stats.failed, stats.written) == (4, 2, 2, 0)
    assert any("sqs delivery raised" in e and "handler blew up" in e for e in stats.errors)


def test_extra_calls_are_run_on_the_api_pool_at_their_due_time() -> None:
    # Given two extra calls, one due now and one shortly after
    handlers = FakeHandlers()
    stats = IngestStats(offered=1)
    called: list[tuple[str, float, str]] = []
    now = time.monotonic()

    def call(name: str) -> Any:
        return lambda: called.append((name, time.monotonic(), threading.current_thread().name))

    # When they are passed to run() beside one delivery
    replay(handlers, stats).run(
        [Delivery(now, [ev("K", "e0")], "sqs")],
        extra=[(now, call("first")), (now + 0.05, call("second"))],
    )
    # Then both were called, not before they were due, on the API pool's threads
    assert sorted(name for name, _, _ in called) == ["first", "second"]
    at = {name: t for name, t, _ in called}
    assert at["second"] >= now + 0.05
    assert all(thread.startswith("api") for _, _, thread in called)
    assert stats.written == 1


def test_an_extra_call_that_raises_is_recorded_as_an_error() -> None:
    # Given an extra call that raises
    def boom() -> None:
        raise RuntimeError("increment failed")

    stats = IngestStats(offered=0)
    # When it is run
    replay(FakeHandlers(), stats).run([], extra=[(time.monotonic(), boom)])
    # Then its error is kept
    assert any("increment failed" in e for e in stats.errors)


def test_unknown_ids_in_batch_item_failures_are_reported() -> None:
    # Given an SQS handler that names a message id it was not given
    class Stray(FakeHandlers):
        def invoke(self, name: str, event: dict[str, Any]) -> dict[str, Any]:
            return {"batchItemFailures": [{"itemIdentifier": "nope"}]}

    stats = IngestStats(offered=1)
    # When a delivery is replayed
    replay(Stray(), stats).run([Delivery(time.monotonic(), [ev("K", "e0")], "sqs")])
    # Then the record counts as written and the stray id is reported
    assert stats.written == 1
    assert any("unknown message ids ['nope']" in e for e in stats.errors)
