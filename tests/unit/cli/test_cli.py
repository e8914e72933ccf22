"""The ``dynashard`` command through typer's CliRunner, against moto (sockets off)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from dynashard import Dynashard, DynashardConfig, names
from dynashard.cli.app import app
from dynashard.cli.context import ExitCode
from dynashard.core.ordered import OrderedLayout
from dynashard.planning.scaling import HotKey
from infra.table_specs import ALL_TABLES, DATA_TABLE, METADATA_TABLE, create_table_request

runner = CliRunner()
#: The variables of the data table's key schema, as the functions read them.
SCHEMA_VARIABLES = (
    names.ENV_PARTITION_KEY_ATTR,
    names.ENV_SORT_KEY_ATTR,
    names.ENV_SORT_KEY_CODEC,
    names.ENV_GSI_NAME,
    names.ENV_GSI_PARTITION_KEY_ATTR,
    names.ENV_GSI_SORT_KEY_ATTR,
    names.ENV_KEY_ATTR,
    names.ENV_ID_ATTR,
    names.ENV_TS_ATTR,
    names.ENV_SHARD_ATTR,
    names.ENV_DATA_ATTR,
    names.ENV_PAYLOAD,
)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto in process, with the project's tables; the DYNASHARD_* environment cleared."""
    for var in (
        names.ENV_DATA_TABLE,
        names.ENV_METADATA_TABLE,
        names.ENV_DYNAMODB_ENDPOINT,
        names.ENV_ENDPOINT_URL,
        names.LEGACY_ENV_DYNAMODB_ENDPOINT,
        names.ENV_COOLDOWN_S,
        names.ENV_BUCKETED_KEYS,
        names.ENV_PARTITION_WCU,
        names.ENV_TARGET_UTILIZATION,
        *SCHEMA_VARIABLES,
    ):
        monkeypatch.delenv(var, raising=False)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for spec in ALL_TABLES:
            client.create_table(**create_table_request(spec))
        yield client


def run(*args: str) -> Any:
    return runner.invoke(app, list(args))


# --- help ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["hot"],
        ["plan"],
        ["resize"],
        ["adopt"],
        ["boundaries"],
        ["count"],
        ["compact"],
        ["strategy"],
        ["cap"],
    ],
)
def test_every_command_has_help_with_an_example(command: list[str]) -> None:
    result = run(*command, "--help")
    assert result.exit_code == 0, result.output
    assert "Example: dynashard " in result.output


def test_root_help_documents_the_exit_codes() -> None:
    result = run("--help")
    assert result.exit_code == 0
    for code in ("0 done", "1 error", "2 usage", "3 refused", "4 not found"):
        assert code in result.output


# --- status and resize -----------------------------------------------------------------------
def test_status_of_a_key_without_metadata_exits_4(aws: Any) -> None:
    result = run("status", "DEPARTURES#JFK")
    assert result.exit_code == ExitCode.NOT_FOUND
    assert "has no item in dynashard-shards" in result.output


def test_resize_creates_then_status_shows_count_history_and_read_paths(aws: Any) -> None:
    # Given a key resized to 4
    resized = run("resize", "DEPARTURES#JFK", "4", "--json")
    assert resized.exit_code == 0, resized.output
    assert json.loads(resized.output)["current"] == 4
    # When its status is asked
    result = run("status", "DEPARTURES#JFK", "--json")
    # Then it shows N, the history and the read paths of a random key
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["number_of_shards"] == 4 and doc["stored"] is True
    assert [h["count"] for h in doc["shard_history"]] == [4]
    paths = {p["path"]: p["available"] for p in doc["read_paths"]}
    assert paths == {
        "base": True,
        "gsi1": True,
        "targeted": False,
        "ordered": False,
        "bucketed": False,
    }
    text = run("status", "DEPARTURES#JFK")
    assert "shard count    4" in text.output and "read paths" in text.output


def test_strategy_sets_a_new_key_and_refuses_another_one_without_force(aws: Any) -> None:
    # Given a key set to calculated by carrier with 4 shards
    result = run(
        "strategy", "DEPARTURES#JFK", "calculated", "--attribute", "carrier",
        "--initial-shards", "4", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert (doc["strategy"], doc["shard_attribute"], doc["number_of_shards"]) == (
        "calculated",
        "carrier",
        4,
    )
    # When another strategy is asked without --force, Then it is refused (exit 3)
    refused = run("strategy", "DEPARTURES#JFK", "random")
    assert refused.exit_code == ExitCode.REFUSED
    assert "--force" in refused.output and "calculated(carrier)" in refused.output
    # A bad strategy or a calculated one without attribute is a usage error
    assert run("strategy", "K", "sideways").exit_code == ExitCode.USAGE
    assert run("strategy", "K", "calculated").exit_code == ExitCode.USAGE
    # With --force it changes; status shows strategy, attribute and cap
    assert run("strategy", "DEPARTURES#JFK", "random", "--force").exit_code == 0
    status = run("status", "DEPARTURES#JFK")
    assert "strategy       random" in status.output
    assert "max_shards     none" in status.output


def test_cap_sets_shows_and_removes_a_keys_max_shards(aws: Any) -> None:
    assert run("resize", "K", "4").exit_code == 0
    capped = run("cap", "K", "8", "--json")
    assert capped.exit_code == 0, capped.output
    assert json.loads(capped.output)["max_shards"] == 8
    assert json.loads(run("status", "K", "--json").output)["max_shards"] == 8
    assert "max_shards     8" in run("status", "K").output
    # below N in force, or not a number: usage errors
    assert run("cap", "K", "2").exit_code == ExitCode.USAGE
    assert run("cap", "K", "many").exit_code == ExitCode.USAGE
    removed = run("cap", "K", "none")
    assert removed.exit_code == 0 and "max_shards none" in removed.output
    assert json.loads(run("status", "K", "--json").output)["max_shards"] is None


def test_adopt_keeps_bare_items_readable_after_the_key_is_sharded(aws: Any) -> None:
    # Given an item written under the bare partition key, before dynashard
    aws.put_item(
        TableName=DATA_TABLE.default_name,
        Item={
            "PK": {"S": "LEGACY"},
            "SK": {"S": "2013-01-01T05:00:00.000000Z#old"},
            "key": {"S": "LEGACY"},
            "id": {"S": "old"},
            "ts": {"S": "2013-01-01T05:00:00.000000Z"},
            "data": {"M": {}},
        },
    )
    # When the operator adopts the key, then shards it
    adopted = run("adopt", "LEGACY", "--json")
    assert adopted.exit_code == 0, adopted.output
    assert json.loads(adopted.output)["adopted"] is True
    assert run("resize", "LEGACY", "4", "--force").exit_code == 0
    # Then reads still include the bare item, and status says the key is adopted
    ds = Dynashard(DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name))
    assert [e["id"] for e in ds.query_events("LEGACY").items] == ["old"]
    text = run("adopt", "LEGACY")
    assert "reads include the bare partition key 'LEGACY'" in text.output
    assert "N = 4" in text.output


def test_adopt_surveys_another_programs_items_and_refuses_ones_it_cannot_read(aws: Any) -> None:
    table = DATA_TABLE.default_name
    # Given another program's operation log under one key, in its own shape (no key,
    # id, ts or data attribute), and one item whose sort key is of another form
    for sk, agent in (
        ("2026-06-22T01:00:00.000000Z#a1", "scan"),
        ("2026-06-22T02:00:00.000000Z#a2", "rank"),
    ):
        aws.put_item(
            TableName=table,
            Item={"PK": {"S": "OPS_LOG"}, "SK": {"S": sk}, "agent": {"S": agent}},
        )
    aws.put_item(
        TableName=table, Item={"PK": {"S": "OPS_LOG"}, "SK": {"S": "ALERT#2026-06-22#geo"}}
    )
    # When the operator adopts the key, it is refused, naming the item and the codec
    refused = run("adopt", "OPS_LOG")
    assert refused.exit_code != 0
    assert "'ALERT#2026-06-22#geo'" in refused.output and "iso_time_then_id" in refused.output
    # each unreadable sort key named once, with why (the message names its own field)
    assert (
        "e.g. 'ALERT#2026-06-22#geo': sort_key: 'ALERT#2026-06-22#geo' is not in the form of "
        "codec iso_time_then_id"
    ) in refused.output
    ds = Dynashard(DynashardConfig(table, METADATA_TABLE.default_name))
    assert not ds.metadata.for_reader("OPS_LOG").adopted
    # And once that item is moved out, adoption reports the survey and reads the log
    aws.delete_item(
        TableName=table, Key={"PK": {"S": "OPS_LOG"}, "SK": {"S": "ALERT#2026-06-22#geo"}}
    )
    adopted = run("adopt", "OPS_LOG", "--json")
    assert adopted.exit_code == 0, adopted.output
    survey = json.loads(adopted.output)["survey"]
    assert (survey["foreign_items"], survey["unreadable_items"]) == (2, 0)
    assert survey["first_ts"] == "2026-06-22T01:00:00.000000Z"
    events = ds.query_events("OPS_LOG").items
    assert [(e["id"], e["data"]) for e in events] == [
        ("a1", {"agent": "scan"}),
        ("a2", {"agent": "rank"}),
    ]


def test_the_table_schema_comes_from_the_functions_variables(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given another program's log under one key, its sort keys JavaScript's toISOString()
    # (milliseconds) then an agent, and no GSI keys on its items
    for sk, agent in (
        ("2026-06-22T01:00:00.123Z#scan", "scan"),
        ("2026-06-22T01:00:00.456Z#rank", "rank"),
    ):
        aws.put_item(
            TableName=DATA_TABLE.default_name,
            Item={"PK": {"S": "OPS_LOG"}, "SK": {"S": sk}, "agent": {"S": agent}},
        )
    # When the command is not told the table's schema, the default codec cannot read them
    refused = run("adopt", "OPS_LOG")
    assert refused.exit_code == ExitCode.USAGE
    assert "codec iso_time_then_id cannot read" in refused.output
    # When it is told, with the functions' variables, the survey reads them and adopts
    for name, value in {
        names.ENV_SORT_KEY_CODEC: "iso_ms_then_id",
        names.ENV_GSI_NAME: "",
        names.ENV_PAYLOAD: "flat",
    }.items():
        monkeypatch.setenv(name, value)
    adopted = run("adopt", "OPS_LOG", "--json")
    assert adopted.exit_code == 0, adopted.output
    survey = json.loads(adopted.output)["survey"]
    assert (survey["foreign_items"], survey["first_ts"]) == (2, "2026-06-22T01:00:00.123000Z")
    # And status says the table has no GSI to read from, whatever the key's state
    doc = json.loads(run("status", "OPS_LOG", "--json").output)
    (gsi1,) = [p for p in doc["read_paths"] if p["path"] == "gsi1"]
    assert gsi1 == {
        "path": "gsi1",
        "available": False,
        "detail": "the table has no GSI configured",
    }
    # And the paths that need dynashard's own layout refuse this one, as usage errors
    counted = run("count", "OPS_LOG")
    assert counted.exit_code == ExitCode.USAGE
    assert "counting events supports dynashard's own table layout only" in counted.output
    # And a schema the table does not have is found by DescribeTable before any read
    monkeypatch.setenv(names.ENV_SORT_KEY_CODEC, "epoch_ms_number")
    mismatch = run("adopt", "OPS_LOG")
    assert mismatch.exit_code == ExitCode.ERROR
    assert "sort key is 'SK' (S), the schema says 'SK' (N)" in mismatch.output
    # And a value that makes no schema is a usage error naming the variable
    monkeypatch.setenv(names.ENV_SORT_KEY_CODEC, "iso")
    bad = run("adopt", "OPS_LOG")
    assert bad.exit_code == ExitCode.USAGE
    assert bad.output.startswith(f"error: {names.ENV_SORT_KEY_CODEC}: Input should be")
    monkeypatch.setenv(names.ENV_SORT_KEY_CODEC, "iso_ms_then_id")
    monkeypatch.setenv(names.ENV_TS_ATTR, "SK")
    clash = run("status", "OPS_LOG")
    assert clash.exit_code == ExitCode.USAGE
    assert "error: schema: sort_key and ts_attr are both 'SK'" in clash.output


def test_resize_inside_the_cooldown_is_refused_unless_forced(aws: Any) -> None:
    assert run("resize", "K", "2").exit_code == 0  # creation: not a change of N
    assert run("resize", "K", "4").exit_code == 0  # first change, no earlier change
    # Given a key changed a moment ago, when it is resized again without --force
    refused = run("resize", "K", "8")
    # Then it is refused with exit 3 and N stays
    assert refused.exit_code == ExitCode.REFUSED, refused.output
    assert "inside its 60 s cooldown" in refused.output
    status = json.loads(run("status", "K", "--json").output)
    assert status["number_of_shards"] == 4
    # And --force changes it, through the same conditional update (history grows)
    forced = run("resize", "K", "8", "--force", "--json")
    assert forced.exit_code == 0, forced.output
    status = json.loads(run("status", "K", "--json").output)
    assert status["number_of_shards"] == 8
    assert [h["count"] for h in status["shard_history"]] == [2, 4, 8]


def test_resize_with_a_zero_cooldown_is_not_refused(aws: Any) -> None:
    for n in ("2", "4", "3"):
        assert run("resize", "K", n, "--cooldown", "0").exit_code == 0


def test_resize_of_an_ordered_key_is_refused(aws: Any) -> None:
    from dynashard import Dynashard, DynashardConfig

    ds = Dynashard(
        DynashardConfig(names.DEFAULT_DATA_TABLE, names.DEFAULT_METADATA_TABLE), client=aws
    )
    ds.ordered_index("TAILNUM").configure(OrderedLayout.uniform(["n5"]))
    ds.close()
    result = run("resize", "TAILNUM", "4")
    assert result.exit_code == ExitCode.REFUSED
    assert "ordered key" in result.output
    status = json.loads(run("status", "TAILNUM", "--json").output)
    ordered = next(p for p in status["read_paths"] if p["path"] == "ordered")
    assert ordered["available"] and "['n5']" in ordered["detail"]


def test_resize_out_of_range_is_a_usage_error(aws: Any) -> None:
    assert run("resize", "K", "0").exit_code == ExitCode.USAGE
    result = run("resize", "K", "1001")
    assert result.exit_code == ExitCode.USAGE
    assert "count: must be within 1..1000" in result.output


def test_status_chart_writes_a_png(aws: Any, tmp_path: Path) -> None:
    run("resize", "K", "2")
    run("resize", "K", "6", "--force")
    png = tmp_path / "k.png"
    result = run("status", "K", "--chart", str(png), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["chart"] == str(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_status_chart_without_matplotlib_names_the_extra_to_install(
    aws: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a key with a history, and matplotlib not installed (the `chart` extra left out)
    run("resize", "K", "2")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # find_spec: None, import fails
    png = tmp_path / "k.png"
    # When the chart is asked for
    result = run("status", "K", "--chart", str(png))
    # Then it fails saying what to install, and draws nothing
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "--chart needs matplotlib, which is not installed" in result.output
    assert "pip install 'dynashard[chart]'" in result.output
    assert not png.exists()
    # while status without --chart still works
    assert run("status", "K", "--json").exit_code == 0


def test_a_dynamodb_error_exits_1_with_its_code(aws: Any) -> None:
    result = run("--metadata-table", "missing-table", "status", "K")
    assert result.exit_code == ExitCode.ERROR
    assert "ResourceNotFoundException" in result.output


# --- count and compact -----------------------------------------------------------------------
def test_count_and_compact_remove_the_copy_a_redelivery_across_a_resize_left(aws: Any) -> None:
    from dynashard import Event
    from dynashard.core.strategies import shard_for

    # Given an event written at N = 4 and redelivered after a resize to 8 (two copies)
    event_id = next(f"m{i}" for i in range(1000) if shard_for(f"m{i}", 4) != shard_for(f"m{i}", 8))
    event = Event(key="K", id=event_id, ts="2013-01-01T10:00:00Z")
    ds = Dynashard(DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name))
    ds.set_shard_count("K", 4)
    ds.put_events([event])
    ds.set_shard_count("K", 8)
    ds.metadata.invalidate("K")
    ds.put_events([event])
    old, new = f"K#{shard_for(event_id, 4)}", f"K#{shard_for(event_id, 8)}"
    # When it is counted, then the count is exact and the copy named
    counted = run("count", "K", "--json")
    assert counted.exit_code == 0, counted.output
    assert json.loads(counted.output) == {
        "key": "K",
        "distinct": 1,
        "stored": 2,
        "duplicates": 1,
        "shards_read": 8,
    }
    text = run("count", "K")
    assert "K: 1 distinct events, 2 items stored, 1 extra copy (8 physical keys read)" in (
        text.output
    )
    assert "dynashard compact 'K'" in text.output
    # And a dry run lists the copy on the old shard and deletes nothing
    dry = run("compact", "K", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    doc = json.loads(dry.output)
    assert (
        doc["would_delete"] == [{"sort_key": event.sort_key, "physical_key": old, "kept": new}]
        and doc["deleted"] == []
    )
    assert json.loads(run("count", "K", "--json").output)["stored"] == 2
    # When it is compacted, then that copy is deleted and the count is clean
    done = run("compact", "K")
    assert done.exit_code == 0, done.output
    assert "deleted 1" in done.output and f"{old}  {event.sort_key}  (kept on {new})" in done.output
    assert json.loads(run("count", "K", "--json").output)["duplicates"] == 0
    assert [e["id"] for e in ds.query_events("K").items] == [event_id]
    ds.close()


def test_count_with_a_window_and_a_bad_time_is_a_usage_error(aws: Any) -> None:
    result = run("count", "K", "--from", "yesterday")
    assert result.exit_code == ExitCode.USAGE
    assert "--from: not an ISO-8601 time" in result.output
    empty = run("count", "K", "--from", "2013-01-01T00:00:00Z", "--to", "2013-01-02", "--json")
    assert empty.exit_code == 0, empty.output
    assert json.loads(empty.output)["distinct"] == 0


def test_compact_that_leaves_copies_exits_3_naming_them(aws: Any) -> None:
    from dynashard import Event
    from dynashard.core.strategies import shard_for

    # Given two copies of one event that differ (a redelivery with another payload)
    event_id = next(f"m{i}" for i in range(1000) if shard_for(f"m{i}", 4) != shard_for(f"m{i}", 8))
    event = Event(key="K", id=event_id, ts="2013-01-01T10:00:00Z", data={"v": 1})
    ds = Dynashard(DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name))
    ds.set_shard_count("K", 4)
    ds.put_events([event])
    ds.set_shard_count("K", 8)
    ds.metadata.invalidate("K")
    ds.put_events([event.model_copy(update={"data": {"v": 2}})])
    ds.close()
    result = run("compact", "K")
    assert result.exit_code == ExitCode.REFUSED
    assert "1 extra copy left in place" in result.output and "differs in data" in result.output


# --- plan --------------------------------------------------------------------------------------
def test_plan_shows_n_for_writes_and_reads_and_the_fan_out(aws: Any) -> None:
    result = run("plan", "--writes", "2400", "--reads", "500", "--item-bytes", "1536", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    # 1.5 KB rounds up to 2 WCU: 4,800 WCU/s over 800 per shard
    assert (doc["wcu_per_item"], doc["peak_wcu"], doc["shards"]) == (2.0, 4800.0, 6)
    assert doc["requests_per_page"] == 7  # 6 Queries + the metadata GetItem
    assert doc["rcu_per_page"] > doc["rcu_per_page_unsharded"]
    assert doc["monthly_difference_usd"] > 0
    text = run("plan", "--writes", "2400", "--reads", "500", "--item-bytes", "1536")
    assert "N(writes) = ceil(4800 / (1000 x 0.8)) = 6" in text.output
    assert "Best practices for designing and using partition keys effectively" in text.output


def test_plan_from_a_sample_of_events_uses_the_stored_item_size(tmp_path: Path) -> None:
    sample = tmp_path / "events.jsonl"
    sample.write_text(
        "\n".join(
            json.dumps(
                {
                    "key": "DEPARTURES#JFK",
                    "id": f"e{i}",
                    "ts": "2013-01-01T10:00:00Z",
                    "data": {"pad": "x" * (900 + 100 * i)},
                }
            )
            for i in range(4)
        )
    )
    result = run("plan", "--writes", "1000", "--sample", str(sample), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    # Payloads of 900..1,200 bytes plus the item's keys: every stored item is over 1 KB
    assert doc["item_bytes"] > 1150
    assert doc["wcu_per_item"] == 2.0
    assert doc["shards_for_writes"] == 3


def test_plan_from_dynamodb_json_items(tmp_path: Path) -> None:
    sample = tmp_path / "items.jsonl"
    sample.write_text(json.dumps({"PK": {"S": "a" * 3000}, "n": {"N": "1"}}) + "\n")
    doc = json.loads(run("plan", "--writes", "10", "--sample", str(sample), "--json").output)
    assert doc["item_bytes"] == 2 + 3000 + 1 + 2
    assert doc["wcu_per_item"] == 3.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--writes", "10"], "give exactly one of them"),
        (["--writes", "10", "--item-bytes", "10", "--sample", "x"], "give exactly one"),
        (["--writes", "-1", "--item-bytes", "10"], "writes_per_s: must be >= 0"),
        (["--writes", "1", "--item-bytes", "500000"], "item_sizes: must be each within"),
        (["--writes", "1", "--item-bytes", "10", "--page-limit", "0"], "page_limit"),
    ],
)
def test_plan_refuses_bad_input_with_exit_2(args: list[str], message: str) -> None:
    result = run("plan", *args)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert message in result.output


def test_plan_of_a_missing_sample_file_exits_1(tmp_path: Path) -> None:
    result = run("plan", "--writes", "1", "--sample", str(tmp_path / "none.jsonl"))
    assert result.exit_code == ExitCode.ERROR
    assert "none.jsonl" in result.output


# --- boundaries -----------------------------------------------------------------------------
def test_boundaries_split_a_sample_into_equal_ranges(tmp_path: Path) -> None:
    values = [f"N{i:05d}" for i in range(1000)]
    sample = tmp_path / "tailnums.txt"
    sample.write_text("\n".join(values) + "\n")
    result = run("boundaries", "--sample", str(sample), "--shards", "4", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["shards"] == 4 and len(doc["boundaries"]) == 3
    assert doc["boundaries"] == sorted(doc["boundaries"])
    assert [r["sample_values"] for r in doc["ranges"]] == [250, 250, 250, 250]
    text = run("boundaries", "--sample", str(sample), "--shards", "4")
    assert "4 range shards from 1000 values" in text.output


def test_boundaries_from_a_json_field_and_too_few_values(tmp_path: Path) -> None:
    sample = tmp_path / "rows.jsonl"
    sample.write_text("\n".join(json.dumps({"tailnum": t}) for t in ["N1", "N2", "N3"]))
    ok = run("boundaries", "--sample", str(sample), "--shards", "3", "--field", "tailnum")
    assert ok.exit_code == 0, ok.output
    too_many = run("boundaries", "--sample", str(sample), "--shards", "4", "--field", "tailnum")
    assert too_many.exit_code == ExitCode.USAGE
    assert "4 ranges need 4" in too_many.output
    missing = run("boundaries", "--sample", str(sample), "--shards", "2", "--field", "nope")
    assert missing.exit_code == ExitCode.USAGE and "no string field 'nope'" in missing.output


# --- hot --------------------------------------------------------------------------------------
def _stubbed_insights(
    monkeypatch: pytest.MonkeyPatch, status: str, reports: dict[str, list[tuple[str, float]]]
) -> None:
    """Point the hot command's Contributor Insights adapter at stubbed clients.

    moto implements neither DescribeContributorInsights nor GetInsightRuleReport, so the
    two AWS answers come from botocore's Stubber; the metadata reads stay on moto.
    """
    from botocore.stub import ANY, Stubber

    from dynashard.cloudwatch.insights import ContributorInsightsHotKeySource

    ddb = boto3.client("dynamodb", region_name="us-east-1")
    cw = boto3.client("cloudwatch", region_name="us-east-1")
    ddb_stub, cw_stub = Stubber(ddb), Stubber(cw)
    rules = [f"DynamoDBContributorInsights-{kind}-dynashard-data-1700000000000" for kind in reports]
    ddb_stub.add_response(
        "describe_contributor_insights",
        {
            "TableName": "dynashard-data",
            "ContributorInsightsStatus": status,
            "ContributorInsightsRuleList": rules if status == "ENABLED" else [],
        },
        {"TableName": "dynashard-data"},
    )
    for rule, rows in zip(rules, reports.values(), strict=True):
        cw_stub.add_response(
            "get_insight_rule_report",
            {
                "Contributors": [
                    {"Keys": [k], "ApproximateAggregateValue": v, "Datapoints": []} for k, v in rows
                ]
            },
            {
                "RuleName": rule,
                "StartTime": ANY,
                "EndTime": ANY,
                "Period": ANY,
                "MaxContributorCount": ANY,
                "OrderBy": "Sum",
            },
        )
    ddb_stub.activate()
    cw_stub.activate()
    monkeypatch.setattr(
        "dynashard.cli.hot.ContributorInsightsHotKeySource",
        lambda **kw: ContributorInsightsHotKeySource(
            client=cw, dynamodb_client=ddb, max_contributors=kw["max_contributors"]
        ),
    )


def test_hot_without_contributor_insights_exits_4(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stubbed_insights(monkeypatch, "DISABLED", {})
    result = run("hot", "--source", "insights")
    assert result.exit_code == ExitCode.NOT_FOUND, result.output
    assert "Contributor Insights is not enabled on dynashard-data" in result.output


def test_hot_from_contributor_insights_reports(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given PKT and PKC reports over 5 minutes: two shards of JFK throttled (the keys are
    # stored: the metadata, not the key format, says whose a reported key is)
    assert run("resize", "DEPARTURES#JFK", "2").exit_code == 0
    assert run("resize", "DEPARTURES#EWR", "1").exit_code == 0
    _stubbed_insights(
        monkeypatch,
        "ENABLED",
        {
            "PKT": [("DEPARTURES#JFK#0", 900.0), ("DEPARTURES#JFK#1", 300.0)],
            "PKC": [("DEPARTURES#JFK#0", 300_000.0), ("DEPARTURES#EWR#0", 60.0)],
        },
    )
    result = run("hot", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["source"] == "Contributor Insights"
    rows = {r["key"]: r for r in doc["logical_keys"]}
    assert rows["DEPARTURES#JFK"]["throttled_events"] == 1200
    assert rows["DEPARTURES#JFK"]["consumed_units_per_s"] == pytest.approx(1000.0)
    # Two shards at their ceiling: at least 2,000 WCU/s offered, 3 shards at 80 %
    assert rows["DEPARTURES#JFK"]["planned_shards"] >= 3
    assert rows["DEPARTURES#EWR"]["throttled_events"] == 0
    assert rows["DEPARTURES#EWR"]["planned_shards"] == 1


def test_hot_maps_physical_keys_to_logical_keys_and_plans_them(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the emulator reports two throttled shards of one key and a key it cannot map
    seen: dict[str, Any] = {}

    def fake_emulator(endpoint: str, table: str, index: str | None, *rest: Any) -> list[HotKey]:
        seen.update(endpoint=endpoint, table=table, index=index)
        return [
            HotKey("DEPARTURES#JFK#0", 1000.0, 600),
            HotKey("DEPARTURES#JFK#1", 1000.0, 600),
            HotKey("plain-key", 5.0, 0),
        ]

    monkeypatch.setattr("dynashard.cli.hot.emulator_hot_keys", fake_emulator)
    # the emulator's DynamoDB endpoint is moto's here (sockets are off)
    monkeypatch.setattr("dynashard.cli.context.Options.dynamodb", lambda _self: aws)
    assert run("resize", "DEPARTURES#JFK", "2").exit_code == 0
    # When hot is asked against an endpoint
    result = run("--endpoint-url", "http://emulator.invalid", "hot", "--json")
    # Then the key is one row, with its N and the planner's larger N
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert seen == {"endpoint": "http://emulator.invalid", "table": "dynashard-data", "index": None}
    [row] = doc["logical_keys"]
    assert row["key"] == "DEPARTURES#JFK" and row["throttled_events"] == 1200
    assert row["shards"] == 2 and row["planned_shards"] > 2
    assert row["physical_keys"] == ["DEPARTURES#JFK#0", "DEPARTURES#JFK#1"]
    assert doc["unmapped"] == ["plain-key"]


def test_hot_maps_the_keys_of_a_renamed_time_bucket_gsi(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a table whose time-bucket GSI is "ByTime" (DYNASHARD_GSI_NAME), and the
    # emulator reporting two throttled shards of one key's bucket on that index
    monkeypatch.setenv(names.ENV_GSI_NAME, "ByTime")

    def fake_emulator(endpoint: str, table: str, index: str | None, *rest: Any) -> list[HotKey]:
        assert index == "ByTime"
        return [
            HotKey("DEPARTURES#JFK#2013-01-01#0", 1000.0, 600),
            HotKey("DEPARTURES#JFK#2013-01-01#1", 1000.0, 600),
        ]

    monkeypatch.setattr("dynashard.cli.hot.emulator_hot_keys", fake_emulator)
    monkeypatch.setattr("dynashard.cli.context.Options.dynamodb", lambda _self: aws)
    assert run("resize", "DEPARTURES#JFK", "2").exit_code == 0
    # When hot is asked for that index
    result = run("--endpoint-url", "http://emulator.invalid", "hot", "--index", "ByTime", "--json")
    # Then both keys map to the logical key, none is left unmapped
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    [row] = doc["logical_keys"]
    assert row["key"] == "DEPARTURES#JFK" and row["throttled_events"] == 1200
    assert row["physical_keys"] == ["DEPARTURES#JFK#2013-01-01#0", "DEPARTURES#JFK#2013-01-01#1"]
    assert doc["unmapped"] == []


def test_hot_source_emulator_needs_an_endpoint(aws: Any) -> None:
    result = run("hot", "--source", "emulator")
    assert result.exit_code == ExitCode.ERROR
    assert "needs --endpoint-url" in result.output


# --- only operator commands ------------------------------------------------------------------
@pytest.mark.parametrize("command", [["demo"], ["bench", "reads"], ["sandbox", "up"]])
def test_the_repository_jobs_are_not_dynashard_commands(command: list[str]) -> None:
    # The sandbox, the demo and the benchmarks are python -m sandbox / python -m bench in
    # the repository (tests/unit/sandbox/test_main.py, tests/unit/bench/test_main.py).
    result = run(*command)
    assert result.exit_code == ExitCode.USAGE
    assert "No such command" in result.output


def test_the_command_holds_only_operator_commands() -> None:
    import typer.main

    group = typer.main.get_command(app)
    assert set(group.commands) == {  # type: ignore[attr-defined]
        "status",
        "resize",
        "adopt",
        "count",
        "compact",
        "plan",
        "boundaries",
        "hot",
        "strategy",
        "cap",
    }
