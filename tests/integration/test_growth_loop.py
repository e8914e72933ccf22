"""Act one of issue 3 on one machine: a hot key is throttled, the alarm fires, the scaler
grows the key, and every acknowledged event reads back in order.

DynamoDB Local behind the partition emulator at scale 0.005 (5 WCU per emulated second
per key). The emulator, the local alarm and the shard metadata share one accelerated
clock (10 emulated seconds per wall second), so the CloudWatch minute the alarm
evaluates passes in 6 wall seconds and the load fills it, as a hot key's sustained load
fills a real one. Rates below are per emulated second unless they say "wall".

The data table has GSI1, as deployed: the writer shards the GSI1 partition key with
the item's shard (``{logical}#{bucket}#{shard}``), so growing the base-table shards
also spreads the GSI writes (a GSI partition's key-range throttling would otherwise
throttle the base-table write, whatever its shard count).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event, names
from dynashard.core.retry import Backoff
from dynashard.dynamodb.writer import WriteOutcome
from infra.alarm_specs import SCALER_ALARMS
from sandbox.clock import AcceleratedClock
from sandbox.emulator import EmulatorConfig, EmulatorServer
from sandbox.emulator.limits import Operation, Resource
from sandbox.engines.dynamodb_local import DynamoDBLocal, local_client
from sandbox.env_vars import function_environment, patched_environ, reset_function_caches
from sandbox.local_aws.alarms import LocalAlarm, scaler_action
from sandbox.tables import create_tables, data_and_metadata, delete_tables

pytestmark = pytest.mark.integration

SPEED = 10.0  # emulated seconds per wall second
SCALE = 0.005  # 1,000 WCU -> 5 WCU per emulated second per key
LIMIT = 1000.0 * SCALE
LOAD_FACTOR = 4  # offered load: 4 x the key's limit
OFFERED = LOAD_FACTOR * LIMIT  # events (1 WCU each) per emulated second
TICK_WALL_S = 0.1
MAX_ATTEMPTS = 4  # writer attempts per batch
UTILIZATION = 0.8
COOLDOWN_S = 30.0  # emulated
KEY = "HOT#GROWTH"
TS0 = datetime(2013, 1, 1, tzinfo=UTC)
WRITE_KEY_RANGE = SCALER_ALARMS[0]


def make_client(endpoint: str) -> Any:
    """A client without botocore retries: the writer's own back-off is the only one."""
    return local_client(endpoint, total_max_attempts=1)


@pytest.fixture(scope="module")
def tables(dynamodb_local: DynamoDBLocal) -> Iterator[tuple[str, str]]:
    """Fresh data (with GSI1) and metadata tables."""
    client = dynamodb_local.client()
    created = create_tables(client, suffix=f"-g{uuid.uuid4().hex[:8]}")
    yield data_and_metadata(created)
    delete_tables(client, created.values())


@pytest.fixture
def clock() -> AcceleratedClock:
    return AcceleratedClock(speed=SPEED)


@pytest.fixture
def emulator(dynamodb_local: DynamoDBLocal, clock: AcceleratedClock) -> Iterator[EmulatorServer]:
    with EmulatorServer(dynamodb_local.endpoint_url, EmulatorConfig(scale=SCALE, clock=clock)) as s:
        yield s


def facade(
    endpoint: str, tables: tuple[str, str], clock: AcceleratedClock, *, alarm_driven: bool = False
) -> Dynashard:
    """A facade on the accelerated clock.

    ``alarm_driven`` turns in-band growth off, so only the alarm and the scaler grow
    keys, and gives the writers a short retry budget (a few hundred wall
    milliseconds), so the open-loop load does not queue behind long back-offs; an event
    they give up on is reported failed and is not expected back.
    """
    config = DynashardConfig(
        *tables,
        cooldown_s=COOLDOWN_S,
        metadata_cache_ttl_s=5.0,
        endpoint_url=endpoint,
        partition_wcu=LIMIT,
        target_utilization=UTILIZATION,
        max_workers=16,
        in_band_growth=not alarm_driven,
        write_backoff=Backoff(base_s=0.02, cap_s=0.2, max_attempts=MAX_ATTEMPTS)
        if alarm_driven
        else Backoff(),
    )
    ds = Dynashard(config, client=make_client(endpoint))
    ds.metadata.clock = clock  # cooldown and cache lifetime in emulated seconds
    return ds


def event(i: int) -> Event:
    return Event(key=KEY, id=f"e{i:07d}", ts=TS0 + timedelta(milliseconds=i), data={"i": i})


def read_all(ds: Dynashard) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(10_000):
        page = ds.query_events(KEY, limit=1000, cursor=cursor)
        items.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            return items
    raise AssertionError("read did not end")


def test_alarm_and_scaler_grow_a_hot_key_and_nothing_acknowledged_is_lost(
    dynamodb_local: DynamoDBLocal,
    tables: tuple[str, str],
    emulator: EmulatorServer,
    clock: AcceleratedClock,
) -> None:
    env = function_environment(
        emulator.endpoint_url,
        data_table=tables[0],
        metadata_table=tables[1],
        extra={
            names.ENV_PARTITION_WCU: str(LIMIT),
            names.ENV_TARGET_UTILIZATION: str(UTILIZATION),
            names.ENV_COOLDOWN_S: str(COOLDOWN_S),
            names.ENV_WRITE_MAX_ATTEMPTS: str(MAX_ATTEMPTS),
        },
    )
    writer = facade(emulator.endpoint_url, tables, clock, alarm_driven=True)
    grower = facade(emulator.endpoint_url, tables, clock)
    reader = facade(dynamodb_local.endpoint_url, tables, clock)
    alarm = LocalAlarm(
        WRITE_KEY_RANGE,
        tables[0],
        emulator.emulator.metrics,
        scaler_action(emulator.emulator, grower),
        clock=clock,
    )
    per_tick = round(OFFERED * TICK_WALL_S * SPEED)
    offered: list[tuple[float, Event]] = []
    futures: list[tuple[list[Event], Future[list[WriteOutcome]]]] = []
    grown_at: float | None = None
    start = clock()
    with patched_environ(env), ThreadPoolExecutor(16) as pool:
        reset_function_caches()
        # Given one logical key offered 4 x its limit, open loop (a batch every tick)
        wall0 = time.monotonic()
        for tick in range(int(20.0 / TICK_WALL_S)):  # at most 20 wall seconds
            batch = [event(len(offered) + j) for j in range(per_tick)]
            offered.extend((clock(), e) for e in batch)
            futures.append((batch, pool.submit(writer.put_events, batch)))
            # When the alarm is evaluated as time passes
            if alarm.evaluate(clock()).fired and grown_at is None:
                grown_at = clock()
            if grown_at is not None and clock() - grown_at >= 30.0:
                break  # 30 emulated seconds of load after the growth
            time.sleep(max(0.0, wall0 + (tick + 1) * TICK_WALL_S - time.monotonic()))
        outcomes = [o for batch, f in futures for o in f.result(timeout=60)]
        reset_function_caches()

    # Then the key was throttled by key range in the first minute
    table = Resource(tables[0])
    throttles = emulator.emulator.metrics.total(
        WRITE_KEY_RANGE.metric_name, table, start, start + 60
    )
    assert throttles > 0
    # And the alarm fired once or twice, and the scaler grew the key from 1 to what the
    # offered load needs: ceil(20 / (5 x 0.8)) = 5 shards, at least
    assert grown_at is not None, [e.state for e in alarm.history]
    assert 1 <= alarm.actions_invoked <= 2
    fired = [e for e in alarm.history if e.fired]
    assert fired[0].error is None
    growth = fired[0].action_result["grown"]
    needed = math.ceil(OFFERED / (LIMIT * UTILIZATION))
    assert [g["key"] for g in growth] == [KEY]
    assert growth[0]["previous"] == 1
    final = reader.shard_info(KEY).number_of_shards
    # (and not much more: the scaler discounts the writers' retries, so its estimate is
    # at most the limit plus every offered write, where counting each throttled
    # attempt as demand would give up to LIMIT + OFFERED x MAX_ATTEMPTS)
    most = math.ceil((LIMIT + OFFERED) / (LIMIT * UTILIZATION))
    assert needed <= final <= most
    # And once writers see the new count, the key takes the offered load
    settled = grown_at + 5.0  # the writers' cache lifetime
    before = [
        ok for (t, _), ok in zip(offered, (o.ok for o in outcomes), strict=True) if t < start + 60
    ]
    after = [
        ok for (t, _), ok in zip(offered, (o.ok for o in outcomes), strict=True) if t >= settled
    ]
    assert after, "no load after the growth"
    assert sum(before) / len(before) < 0.75  # at N = 1 most of 4 x the limit is refused
    assert sum(after) / len(after) >= 0.95
    # And every acknowledged event reads back exactly, in sort-key order, nothing else
    acknowledged = [e.id for (_, e), o in zip(offered, outcomes, strict=True) if o.ok]
    read = read_all(reader)
    assert [item["id"] for item in read] == acknowledged
    by_shard = emulator.emulator.metrics.key_figures(Operation.WRITE, table, start, clock() + 60)
    assert len([k for k in by_shard if k.key.startswith(f"{KEY}#") and k.requests]) >= needed
