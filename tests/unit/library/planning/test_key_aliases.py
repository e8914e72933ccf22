"""Physical keys never alias (issue 26, defect 5).

Physical keys are ``{logical}#{shard}``: the bare partition key of an adopted ``L#7`` is
also shard 7 of ``L``. Adoption must refuse that, and the scaler must map a reported
``SENSOR#42`` back to ``SENSOR`` only when ``SENSOR`` has (had) a shard 42.
"""

from __future__ import annotations

from typing import Any

import pytest

from dynashard import Dynashard
from dynashard.errors import InvalidInputError
from dynashard.planning.scaling import HotKey, handle_alarm

from ..dynamodb.test_adoption import legacy_events, read_ids, write_bare
from .test_scaling import FakeHotKeys, FakeShards, Limits, write_alarm


# --- adoption ---------------------------------------------------------------------------------
def test_adopting_a_shard_of_a_sharded_key_is_refused(facade: Dynashard, ddb_client: Any) -> None:
    # Given L on 8 shards, and legacy items under the bare key "L#7" (also L's shard 7)
    facade.set_shard_count("L", 8)
    write_bare(ddb_client, legacy_events(3, key="L#7"))
    # When "L#7" is adopted, Then it is refused, naming the shard it would alias
    with pytest.raises(InvalidInputError, match="shard 7 of the logical key 'L'"):
        facade.adopt("L#7")
    assert not facade.shard_info("L#7").stored


def test_reads_of_a_key_leave_out_another_keys_items_under_its_shard_keys(
    facade: Dynashard, ddb_client: Any
) -> None:
    # Given L's own events on 8 shards, and another program's items under the partition
    # key "L#7" (its bare key L#7, never adopted: nothing tells dynashard it exists)
    from dynashard import Event

    ours = [Event(key="L", id=f"l{i}", ts=f"2013-01-01T10:0{i}:00Z") for i in range(6)]
    facade.set_shard_count("L", 8)
    assert all(outcome.ok for outcome in facade.put_events(ours))
    write_bare(ddb_client, legacy_events(3, key="L#7"))
    # When L is read, page by page and whole, in both orders
    for descending in (False, True):
        seen, cursor = [], None
        while True:
            page = facade.query_events("L", limit=2, descending=descending, cursor=cursor)
            seen += [(item["key"], item["id"]) for item in page.items]
            if (cursor := page.cursor) is None:
                break
        # Then exactly L's events come back: the items whose key attribute is L#7 are not L's
        assert sorted(seen) == sorted(("L", e.id) for e in ours), seen


def test_adopting_a_key_whose_prefix_could_grow_onto_it_needs_a_cap(
    facade: Dynashard, ddb_client: Any
) -> None:
    # Given legacy items under "SENSOR#42" and a SENSOR on 2 shards, no cap of its own
    write_bare(ddb_client, legacy_events(4, key="SENSOR#42"))
    facade.set_shard_count("SENSOR", 2)
    # When it is adopted, Then it is refused: SENSOR could grow to 43 shards
    with pytest.raises(InvalidInputError, match=r"set_max_shards\('SENSOR', 42\)"):
        facade.adopt("SENSOR#42")
    # and once SENSOR is capped at 42, the adoption goes through
    facade.set_max_shards("SENSOR", 42)
    assert facade.adopt("SENSOR#42").adopted
    # and SENSOR never grows onto it, nor reads it
    assert facade.grow("SENSOR", 100).current == 42
    assert read_ids(facade, "SENSOR") == []
    assert len(read_ids(facade, "SENSOR#42")) == 4


def test_a_cap_is_not_raised_onto_an_adopted_key(facade: Dynashard) -> None:
    facade.set_max_shards("SENSOR", 42)
    facade.adopt("SENSOR#42")
    with pytest.raises(InvalidInputError, match="'SENSOR#42', the bare partition key"):
        facade.set_max_shards("SENSOR", 50)
    with pytest.raises(InvalidInputError, match="'SENSOR#42', the bare partition key"):
        facade.set_max_shards("SENSOR", None)
    with pytest.raises(InvalidInputError, match="'SENSOR#42', the bare partition key"):
        facade.set_shard_count("SENSOR", 43, force=True)
    assert facade.set_shard_count("SENSOR", 42).current == 42
    assert facade.shard_info("SENSOR").max_shards == 42


def test_a_key_without_a_numeric_suffix_is_adopted_as_before(facade: Dynashard) -> None:
    assert facade.adopt("OPS_LOG#2026-06-22").adopted
    assert facade.adopt("DEPARTURES#JFK").adopted


# --- the scaler's mapping back to logical keys -------------------------------------------------
def sensor_hot() -> FakeHotKeys:
    # SENSOR#42 is throttled hard; SENSOR's own shard 0 is warm and not throttled
    return FakeHotKeys([HotKey("SENSOR#42", 0.0, 50_000), HotKey("SENSOR#0", 100.0, 0)])


def test_heat_of_sensor_42_is_not_credited_to_sensor() -> None:
    # Given SENSOR on 2 shards (its physical keys are SENSOR#0 and SENSOR#1)
    shards = FakeShards({"SENSOR": 2})
    # When an alarm reports SENSOR#42 as the throttled key
    outcome = handle_alarm(write_alarm(), shards, sensor_hot(), Limits())
    # Then SENSOR is not grown for it, and SENSOR#42 is reported as unmapped
    assert shards.grow_calls == []
    assert ("SENSOR#42", "not a partition key dynashard writes") in [
        (s.key, s.reason) for s in outcome.skipped
    ]


def test_heat_of_sensor_42_is_not_credited_to_sensor_over_moto(facade: Dynashard) -> None:
    facade.set_shard_count("SENSOR", 2)
    outcome = handle_alarm(write_alarm(), facade, sensor_hot(), Limits())
    assert outcome.grown == ()
    assert facade.shard_info("SENSOR").number_of_shards == 2
    assert "SENSOR#42" in [s.key for s in outcome.skipped]


def test_a_shard_the_key_really_has_is_still_credited_to_it() -> None:
    # Given SENSOR on 43 shards: SENSOR#42 is its shard 42
    shards = FakeShards({"SENSOR": 43})
    hot = FakeHotKeys(
        [HotKey("SENSOR#42", 0.0, 50_000)]
        + [HotKey(f"SENSOR#{s}", 1000.0, 50_000) for s in range(43)]
    )
    outcome = handle_alarm(write_alarm(), shards, hot, Limits())
    assert [g.key for g in outcome.grown] == ["SENSOR"]


def test_a_key_with_no_metadata_is_not_credited() -> None:
    class Unstored(FakeShards):
        def shard_info(self, key: str) -> Any:
            from dataclasses import replace

            return replace(super().shard_info(key), stored=False)

    shards = Unstored()
    outcome = handle_alarm(write_alarm(), shards, sensor_hot(), Limits())
    assert shards.grow_calls == [] and outcome.grown == ()
    assert {s.key for s in outcome.skipped} == {"SENSOR#42", "SENSOR#0"}
