"""Shrinking in the sandbox: the minute sweep lowers a key that went cool, not a busy one.

DynamoDB Local, the real ingest function (its ``write load`` log lines feed the stack's
Contributor Insights rule, evaluated locally by :class:`sandbox.local_aws.logs.LocalInsightRule`)
and the real scaler handler invoked by the sandbox's minute sweep
(:class:`sandbox.local_aws.alarms.LocalSchedule` over
:func:`sandbox.local_aws.alarms.scaler_action`), all on one accelerated clock (30 emulated
seconds per wall second). Rates are per emulated second.

The scaler plans with a limit of 0.5 WCU/s per partition key value, so a key at N = 8
has a low-water mark of 8 x 0.5 x 0.4 = 1.6 WCU/s (half of the growth target 0.8). Two
keys start at N = 8: BUSY is offered 3 WCU/s throughout (0.375 per shard, above the
mark); COOL is offered as much for the first minute, then 0.5 WCU/s, which needs
ceil(0.5 / (0.5 x 0.8)) = 2 shards. Cool period 3 minutes, cooldown 2 minutes.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from dynashard import Dynashard, DynashardConfig, Event, names
from dynashard.core.load import write_load_rule_body
from sandbox.clock import AcceleratedClock
from sandbox.emulator.core import PartitionEmulator
from sandbox.engines.dynamodb_local import DynamoDBLocal, local_client
from sandbox.env_vars import (
    SERVICE_NAME,
    function_environment,
    patched_environ,
    reset_function_caches,
)
from sandbox.local_aws.alarms import LocalSchedule, scaler_action
from sandbox.local_aws.aws_events import LambdaContext, batch_item_failures, sqs_event, sqs_record
from sandbox.local_aws.lambda_runtime import LocalFunction
from sandbox.local_aws.logs import LocalInsightRule, LogTap
from sandbox.tables import create_tables, data_and_metadata, delete_tables

pytestmark = pytest.mark.integration

SPEED = 30.0  # emulated seconds per wall second
LIMIT = 0.5  # WCU/s per partition key value, as the scaler plans
UTILIZATION = 0.8
COOL_PERIOD_S = 180.0  # emulated
COOLDOWN_S = 120.0  # emulated
BUSY_WCU, COOL_WCU = 3.0, 0.5  # offered, WCU/s (one WCU per event)
BUSY_PHASE_S = 60.0  # COOL is offered BUSY_WCU in its first minute
RUN_S = 330.0  # emulated seconds of load
TICK_WALL_S = 0.1
BUSY, COOL = "SHRINK#BUSY", "SHRINK#COOL"
TS0 = datetime(2013, 1, 1, tzinfo=UTC)


@pytest.fixture
def tables(dynamodb_local: DynamoDBLocal) -> Iterator[tuple[str, str]]:
    """Fresh data (with GSI1) and metadata tables."""
    client = dynamodb_local.client()
    created = create_tables(client, suffix=f"-s{uuid.uuid4().hex[:8]}")
    yield data_and_metadata(created)
    delete_tables(client, created.values())


def read_ids(ds: Dynashard, key: str) -> list[str]:
    ids: list[str] = []
    cursor = None
    for _ in range(1000):
        page = ds.query_events(key, limit=500, cursor=cursor)
        ids.extend(item["id"] for item in page.items)
        cursor = page.cursor
        if cursor is None:
            return ids
    raise AssertionError("read did not end")


def test_the_sweep_shrinks_a_key_that_stayed_cool_and_keeps_a_busy_one(
    dynamodb_local: DynamoDBLocal, tables: tuple[str, str]
) -> None:
    endpoint = dynamodb_local.endpoint_url
    clock = AcceleratedClock(speed=SPEED)
    env = function_environment(
        endpoint,
        data_table=tables[0],
        metadata_table=tables[1],
        extra={
            names.ENV_PARTITION_WCU: str(LIMIT),
            names.ENV_TARGET_UTILIZATION: str(UTILIZATION),
            names.ENV_COOLDOWN_S: str(COOLDOWN_S),
            names.ENV_SHRINK_COOL_PERIOD_S: str(COOL_PERIOD_S),
            names.ENV_METADATA_CACHE_TTL_S: "1",  # wall seconds: writers see the shrink
        },
    )
    # The scaler's facade on the emulated clock: the cooldown is emulated seconds
    shrinker = Dynashard(
        DynashardConfig(*tables, cooldown_s=COOLDOWN_S, endpoint_url=endpoint, partition_wcu=LIMIT),
        client=local_client(endpoint),
    )
    shrinker.metadata.clock = clock
    reader = Dynashard(
        DynashardConfig(*tables, endpoint_url=endpoint), client=local_client(endpoint)
    )
    rule = LocalInsightRule(write_load_rule_body([SERVICE_NAME]), clock=clock)
    # No alarm is in ALARM, so the sweep reads no hot keys: an emulator object suffices
    action = scaler_action(
        PartitionEmulator("http://127.0.0.1:9"),
        shrinker,
        offered_load=rule,
        load_history=rule,
        shrinker=shrinker,
    )
    sweep = LocalSchedule(action, rate_s=60.0, clock=clock)
    ingest = LocalFunction("functions.ingest.app:sqs_handler")
    # Given two keys held at N = 8
    for key in (BUSY, COOL):
        assert shrinker.set_shard_count(key, 8).current == 8
    t0 = clock()
    sent: dict[str, list[str]] = {BUSY: [], COOL: []}
    owed = {BUSY: 0.0, COOL: 0.0}
    failed: set[str] = set()
    with patched_environ(env), LogTap(SERVICE_NAME, [rule]) as tap:
        reset_function_caches()
        last = t0
        wall0 = time.monotonic()
        tick = 0
        # When their writers offer BUSY 3 WCU/s throughout, and COOL 3 WCU/s for a minute,
        # then 0.5 WCU/s, through the ingest function, with the sweep every minute
        while (now := clock()) < t0 + RUN_S:
            cool_rate = BUSY_WCU if now < t0 + BUSY_PHASE_S else COOL_WCU
            owed[BUSY] += BUSY_WCU * (now - last)
            owed[COOL] += cool_rate * (now - last)
            last = now
            records = []
            for key in (BUSY, COOL):
                n = math.floor(owed[key])
                owed[key] -= n
                for _ in range(n):
                    i = len(sent[BUSY]) + len(sent[COOL])
                    e = Event(key=key, id=f"e{i:06d}", ts=TS0 + timedelta(milliseconds=i))
                    sent[key].append(e.id)
                    records.append(sqs_record(e.to_json(), message_id=e.id))
            if records:
                response = ingest(sqs_event(records), LambdaContext("dynashard-ingest"))
                failed |= batch_item_failures(response)
            sweep.tick()
            tick += 1
            time.sleep(max(0.0, wall0 + tick * TICK_WALL_S - time.monotonic()))
        reset_function_caches()
    assert tap.errors == []
    assert failed == set()
    runs = sweep.history
    assert runs and all(r.error is None for r in runs), [r.error for r in runs]
    # Then one sweep shrank COOL from 8 to what 0.5 WCU/s needs, ceil(0.5 / 0.4) = 2: the
    # first whose cool period (3 minutes back) no longer held its busy minute, and not
    # before the rule had watched a whole cool period
    shrinks = [(r.timestamp, s) for r in runs for s in r.result["shrink"]["shrunk"]]
    assert [(s["key"], s["previous"], s["current"]) for _, s in shrinks] == [(COOL, 8, 2)]
    shrunk_at = shrinks[0][0]
    assert rule.started + COOL_PERIOD_S <= shrunk_at <= t0 + BUSY_PHASE_S + COOL_PERIOD_S + 61
    assert all(not r.result["shrink"]["shrunk"] for r in runs if r.timestamp < shrunk_at)
    assert shrinks[0][1]["peak_units_per_s"] <= 2 * LIMIT * UTILIZATION
    info = reader.shard_info(COOL)
    assert info.number_of_shards == 2
    assert sorted(info.counts) == [2, 8]
    # And BUSY, at 3 WCU/s over 8 shards (above the 1.6 WCU/s mark), was kept at 8
    assert reader.shard_info(BUSY).number_of_shards == 8
    assert runs[-1].result["shrink"]["candidates"] == 2  # COOL at 2 is still above 1
    kept = {k["key"]: k["reason"] for r in runs for k in r.result["shrink"]["kept"]}
    assert "low-water" in kept[BUSY]
    # And the writers kept writing COOL after the shrink, and every event reads back
    assert len(sent[COOL]) > COOL_WCU * (t0 + RUN_S - shrunk_at) * 0.5
    for key in (BUSY, COOL):
        assert read_ids(reader, key) == sent[key]
