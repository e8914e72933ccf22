"""Hedged shard queries: the first answer wins, the page is what was written (invariants
4 and 5 unchanged), hedges wait for the estimate and stay within their budget."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynashard.core.keys import physical_key
from dynashard.core.shard_info import ShardInfo
from dynashard.dynamodb.hedging import HedgeBudget, HedgePolicy, QueryHedger
from dynashard.dynamodb.reader import ShardedReader
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.errors import InvalidInputError, ShardQueryError

from ..fakes import client_error
from .test_reader_fanout import TABLE, FixedStore, MemoryQueryClient, sk_of

#: Longest a gated copy waits for its twin before the test fails (never a hang).
GATE_S = 10.0


@pytest.fixture(scope="module")
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(32) as executor:
        yield executor


def eager_hedger(**policy: Any) -> QueryHedger:
    """A hedger whose estimate is warm (1 sample of 0.1 ms) and whose budget is ample."""
    options: dict[str, Any] = {"min_samples": 1, "budget": 1.0, "burst": 1000.0, **policy}
    hedger = QueryHedger(HedgePolicy(**options))
    hedger.latency.record(0.0001)
    for _ in range(1000):
        hedger._budget.earn()
    return hedger


class GatedClient(MemoryQueryClient):
    """Answers from memory; the two copies of a chosen shard's Queries are ordered.

    Modes per physical key, for each request (the same request sent twice is the same
    Query):

    - ``slow``: the first copy waits until the second has answered, then answers too
      (its answer must be ignored);
    - ``fail_first``: the first copy fails once the second has started; the second
      answers only after that failure;
    - ``throttled_hedge``: the second copy is throttled; the first answers after that;
    - ``both_fail``: the first copy fails once the second has failed.
    """

    def __init__(self, page_cap: int | None = None) -> None:
        super().__init__(page_cap=page_cap)
        self.modes: dict[str, str] = {}
        self.copies: dict[str, int] = {}
        self.gates: dict[str, dict[str, threading.Event]] = {}
        self.first_copy_answers: list[str] = []
        self.released = False

    def release_all(self) -> None:
        """Open every gate: a read-ahead the page cancelled while its copy waited ends."""
        self.released = True
        with self.lock:
            for events in self.gates.values():
                for event in events.values():
                    event.set()

    def _gate(self, request_id: str, name: str) -> threading.Event:
        with self.lock:
            events = self.gates.setdefault(request_id, {})
            event = events.setdefault(name, threading.Event())
            if self.released:
                event.set()
            return event

    def query(self, **request: Any) -> dict[str, Any]:
        pk = request["ExpressionAttributeValues"][":pk"]["S"]
        start = request.get("ExclusiveStartKey")
        request_id = f"{pk}|{start and start['SK']['S']}|{request['Limit']}"
        with self.lock:
            copy = self.copies[request_id] = self.copies.get(request_id, 0) + 1
        mode = self.modes.get(pk)
        if mode is None or copy > 2:
            return super().query(**request)
        second_started = self._gate(request_id, "second started")
        done = self._gate(request_id, "done")
        if copy == 2:
            second_started.set()
        if mode == "slow":
            if copy == 1:
                assert done.wait(GATE_S), f"no hedge of {request_id}"
                self.first_copy_answers.append(request_id)
                return super().query(**request)
            try:
                return super().query(**request)
            finally:
                done.set()
        if mode == "fail_first":
            if copy == 1:
                assert second_started.wait(GATE_S), f"no hedge of {request_id}"
                done.set()
                raise client_error("InternalServerError", f"injected failure of {pk}")
            assert done.wait(GATE_S)
            return super().query(**request)
        if mode == "throttled_hedge":
            if copy == 1:
                assert done.wait(GATE_S), f"no hedge of {request_id}"
                return super().query(**request)
            done.set()
            raise client_error("ProvisionedThroughputExceededException", "hedge throttled")
        assert mode == "both_fail"
        if copy == 1:
            assert done.wait(GATE_S), f"no hedge of {request_id}"
            raise client_error("InternalServerError", f"injected failure of {pk}")
        done.set()
        raise client_error("InternalServerError", f"injected failure of the hedge of {pk}")


def reader_of(
    client: MemoryQueryClient, pool: ThreadPoolExecutor, shards: int, hedger: QueryHedger
) -> ShardedReader:
    info = ShardInfo("K", shards, 1, ((1, shards),))
    metadata = ShardMetadata(FixedStore(info))  # type: ignore[arg-type]
    return ShardedReader(client, TABLE, metadata, pool, hedger=hedger)  # type: ignore[arg-type]


def read_all(reader: ShardedReader, limit: int, descending: bool) -> tuple[list[str], int]:
    items: list[str] = []
    hedges, cursor = 0, None
    try:
        for _ in range(1000):
            page = reader.query("K", limit=limit, descending=descending, cursor=cursor)
            items.extend(f"{i['ts']}#{i['id']}" for i in page.items)
            hedges += page.hedges
            cursor = page.cursor
            if cursor is None:
                return items, hedges
    finally:
        if isinstance(reader.client, GatedClient):
            reader.client.release_all()
    raise AssertionError("paging did not end")


def written(client: MemoryQueryClient, shards: int, count: int) -> list[str]:
    for i in range(count):
        client.put(physical_key("K", (i * 7) % shards), sk_of(i))
    return [sk_of(i) for i in range(count)]


@pytest.mark.parametrize("mode", ["slow", "fail_first", "throttled_hedge"])
def test_a_late_shard_query_is_hedged_and_the_page_is_exact(
    pool: ThreadPoolExecutor, mode: str
) -> None:
    # Given 4 shards whose shard 2 answers each Query only through the order the mode sets
    client = GatedClient(page_cap=7)
    model = written(client, 4, 60)
    client.modes[physical_key("K", 2)] = mode
    hedger = eager_hedger()
    # When every page is read
    items, hedges = read_all(reader_of(client, pool, 4, hedger), limit=25, descending=False)
    # Then the pages hold exactly what was written, in order, and each of shard 2's
    # Queries was hedged (a throttled or failed copy did not fail the read)
    assert items == model
    stats = hedger.stats()
    hedged = [r for r, copies in client.copies.items() if r.startswith("K#2|") and copies == 2]
    assert hedged and hedges == stats.hedges >= len(hedged)
    if mode == "throttled_hedge":
        assert stats.hedges_won == 0
    else:
        assert stats.hedges_won >= len(hedged) - 1  # a read-ahead's hedge may be dropped
        assert stats.hedge_read_units >= stats.hedges_won  # >= 1 RCU per answered hedge


def test_the_first_copys_error_fails_the_read_when_the_hedge_fails_too(
    pool: ThreadPoolExecutor,
) -> None:
    client = GatedClient()
    written(client, 3, 30)
    client.modes[physical_key("K", 1)] = "both_fail"
    reader = reader_of(client, pool, 3, eager_hedger())
    with pytest.raises(ShardQueryError, match=r"K#1.*injected failure of K#1\b"):
        reader.query("K", limit=30)
    client.copies.clear()  # the same Queries again, gated afresh
    client.gates.clear()
    partial = reader.query("K", limit=30, allow_partial=True)
    assert partial.missing_shards == ["K#1"]


def test_no_hedge_before_the_estimate_has_its_minimum_samples(pool: ThreadPoolExecutor) -> None:
    # Given a hedger that needs 1,000 timed Queries before its first hedge
    client = MemoryQueryClient(delay_s=0.002)
    model = written(client, 4, 40)
    hedger = QueryHedger(HedgePolicy(min_samples=1000, window=1000, budget=1.0))
    # When a few pages are read
    items, hedges = read_all(reader_of(client, pool, 4, hedger), limit=10, descending=True)
    # Then nothing was hedged and the estimate is still cold
    assert items == model[::-1]
    assert hedges == 0 and hedger.stats().hedges == 0
    assert hedger.stats().threshold_ms is None and hedger.stats().queries == len(client.calls)


def test_the_budget_refuses_hedges_beyond_it(pool: ThreadPoolExecutor) -> None:
    # Given an empty budget (no Query earns a hedge) and a shard that is always late
    client = GatedClient()
    client.modes[physical_key("K", 0)] = "slow"
    model = written(client, 2, 10)
    hedger = QueryHedger(HedgePolicy(min_samples=1, budget=0.0))
    hedger.latency.record(0.0001)
    # When shard 0 is late: it cannot be released by a hedge, so release it by hand
    reader = reader_of(client, pool, 2, hedger)
    releaser = threading.Timer(0.2, client.release_all)
    releaser.start()
    page = reader.query("K", limit=10)
    releaser.join()
    # Then the page waited for the first copy: the hedge was denied, not sent
    assert [f"{i['ts']}#{i['id']}" for i in page.items] == model
    stats = hedger.stats()
    assert (stats.hedges, page.hedges) == (0, 0) and stats.hedges_denied >= 1


def test_hedges_stay_within_the_budget_over_any_run() -> None:
    # A token bucket of 5 % with a burst of 3: over q Queries at most 0.05 q + 3 hedges
    budget = HedgeBudget(rate=0.05, capacity=3.0)
    spent = 0
    for q in range(1, 2001):
        budget.earn()
        spent += budget.spend()  # a hedge wanted after every Query
        assert spent <= 0.05 * q + 3
    assert spent == 100


def test_the_estimate_is_the_recent_quantile_of_a_bounded_window() -> None:
    hedger = QueryHedger(HedgePolicy(window=100, min_samples=50))
    for _ in range(100):
        hedger.latency.record(1.0)  # an old, slow regime
    for ms in range(1, 101):
        hedger.latency.record(ms / 1000)  # the last 100 Queries: 1..100 ms
    assert hedger.stats().threshold_ms == 95.0


@pytest.mark.parametrize(
    "policy",
    [{"quantile": 1.0}, {"window": 0}, {"min_samples": 300}, {"budget": 1.5}, {"burst": 0.5}],
)
def test_a_bad_policy_is_refused(policy: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError, match="hedging"):
        HedgePolicy(**policy)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shards=st.integers(1, 6),
    count=st.integers(0, 80),
    limit=st.integers(1, 40),
    page_cap=st.integers(2, 12),
    descending=st.booleans(),
    modes=st.lists(st.sampled_from(["slow", "fail_first", "throttled_hedge", None]), max_size=6),
)
def test_hedged_reads_return_exactly_what_was_written(
    shards: int,
    count: int,
    limit: int,
    page_cap: int,
    descending: bool,
    modes: list[str | None],
) -> None:
    # Given items written over N shards, some of whose Queries are late, fail first or
    # have their hedge throttled
    client = GatedClient(page_cap=page_cap)
    model = written(client, shards, count)
    for shard, mode in enumerate(modes[:shards]):
        if mode is not None:
            client.modes[physical_key("K", shard)] = mode
    with ThreadPoolExecutor(4 * shards + 4) as pool:
        # When every page is read with hedging
        items, _ = read_all(reader_of(client, pool, shards, eager_hedger()), limit, descending)
    # Then the pages are exactly the model, in order: no item lost, none twice
    assert items == sorted(model, reverse=descending)


@pytest.mark.parametrize(("value", "hedged"), [(None, False), ("true", True), ("false", False)])
def test_the_functions_setting_turns_hedging_on(
    monkeypatch: pytest.MonkeyPatch, value: str | None, hedged: bool
) -> None:
    from dynashard import Dynashard, names
    from dynashard.lambda_kit.settings import FunctionSettings

    monkeypatch.setenv(names.ENV_DATA_TABLE, "data")
    monkeypatch.setenv(names.ENV_METADATA_TABLE, "meta")
    if value is not None:
        monkeypatch.setenv(names.ENV_HEDGE_READS, value)
    config = FunctionSettings().to_config()  # type: ignore[call-arg]
    assert (config.hedging == HedgePolicy()) is hedged and (config.hedging is None) is not hedged
    facade = Dynashard(config, client=object())  # type: ignore[arg-type]
    assert (facade.hedger is not None) is hedged
