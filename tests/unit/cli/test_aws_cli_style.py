"""The ``dynashard`` command behaves as the AWS CLI (issue 39): its global options and formats.

``--output json|table|text`` (``--json`` kept), ``--query`` (JMESPath), ``--version``,
``--debug``, global options after the command, shell completion, ``adopt --dry-run``
and the refusal of an adoption with nothing to adopt. Through typer's CliRunner against
moto, sockets off.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from dynashard import Dynashard, DynashardConfig, names
from dynashard.cli.app import SANDBOX_DYNAMODB, app
from dynashard.cli.context import ExitCode, hoist_global_options, text_lines
from infra.table_specs import DATA_TABLE, METADATA_TABLE

runner = CliRunner()
KEY = "DEPARTURES#JFK"


def run(*args: str) -> Any:
    return runner.invoke(app, list(args))


def resized(aws_client: Any, shards: int = 4) -> None:
    result = run("resize", KEY, str(shards))
    assert result.exit_code == 0, result.output


# --- --output, --json, --query --------------------------------------------------------------
def test_output_json_and_the_json_alias_print_the_same_document(aws: Any) -> None:
    resized(aws)
    as_output = run("status", KEY, "--output", "json")
    as_alias = run("status", KEY, "--json")
    before_the_command = run("--json", "status", KEY)
    assert as_output.exit_code == as_alias.exit_code == before_the_command.exit_code == 0
    docs = [json.loads(r.output) for r in (as_output, as_alias, before_the_command)]
    for doc in docs:
        doc.pop("last_change_age_s")  # seconds since the change: may tick between runs
    assert docs[0] == docs[1] == docs[2]
    assert docs[0]["number_of_shards"] == 4


def test_query_applies_jmespath_to_the_json_document(aws: Any) -> None:
    resized(aws)
    paths = run("status", KEY, "--output", "json", "--query", "read_paths[?available].path")
    assert paths.exit_code == 0, paths.output
    assert json.loads(paths.output) == ["base", "gsi1"]
    count = run("status", KEY, "--query", "number_of_shards", "--output", "text")
    assert count.output == "4\n"


def test_output_text_is_tab_separated_as_the_aws_clis(aws: Any) -> None:
    resized(aws)
    result = run("resize", KEY, "4", "--output", "text")
    assert result.exit_code == 0, result.output
    # the scalars of the document, by sorted key, on one line: changed, current, key,
    # previous, readers_query_shards, reason
    assert result.output.splitlines() == ["False\t4\tDEPARTURES#JFK\t4\t4\talready_sufficient"]


def test_text_lines_follow_the_aws_cli_layout() -> None:
    doc = {
        "name": "t",
        "history": [{"count": 1, "since": 10}, {"count": 4, "since": 20}],
        "tags": ["a", "b"],
        "empty": None,
    }
    assert text_lines(doc) == ["None\tt", "HISTORY\t1\t10", "HISTORY\t4\t20", "TAGS\ta\tb"]


def test_query_with_the_table_output_draws_the_result_as_a_table(aws: Any) -> None:
    resized(aws)
    result = run("status", KEY, "--query", "read_paths[].{path: path, ok: available}")
    assert result.exit_code == 0, result.output
    assert "path" in result.output and "targeted" in result.output and "False" in result.output


def test_a_bad_query_or_output_is_a_usage_error_naming_the_option() -> None:
    bad_query = run("status", KEY, "--query", "read_paths[?")
    assert bad_query.exit_code == ExitCode.USAGE
    assert "--query" in bad_query.output and "JMESPath" in bad_query.output
    bad_output = run("status", KEY, "--output", "yaml")
    assert bad_output.exit_code == ExitCode.USAGE
    assert "--output" in bad_output.output


# --- global options after the command -------------------------------------------------------
def test_global_options_are_accepted_after_the_command(aws: Any) -> None:
    resized(aws)
    after = run("status", KEY, "--region", "us-east-1", "--metadata-table=nowhere", "--json")
    # the metadata table option reached the root: the table it names does not exist
    assert after.exit_code == ExitCode.ERROR
    assert "ResourceNotFoundException" in after.output or "nowhere" in after.output


def test_hoisting_moves_only_global_options_and_their_values() -> None:
    root = app.registered_callback
    assert root is not None
    from typer.main import get_command

    params = get_command(app).params
    assert hoist_global_options(
        params, ["status", "K", "--output", "json", "--chart", "c.png", "--debug"]
    ) == ["--output", "json", "--debug", "status", "K", "--chart", "c.png"]
    # after "--" nothing is an option; a command-less line is left alone
    assert hoist_global_options(params, ["status", "--", "--json"]) == ["status", "--", "--json"]
    assert hoist_global_options(params, ["--json"]) == ["--json"]


# --- --version, --debug, completion ---------------------------------------------------------
def test_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    result = run("--version")
    assert result.exit_code == 0
    assert result.output == f"dynashard {version('dynashard')}\n"


def test_debug_logs_botocore_and_prints_the_traceback_of_an_error(aws: Any) -> None:
    failing = ("status", KEY, "--metadata-table", "nowhere")
    quiet = run(*failing)
    assert quiet.exit_code == ExitCode.ERROR
    assert "Traceback" not in quiet.output and "botocore" not in quiet.output
    loud = run(*failing, "--debug")
    assert loud.exit_code == ExitCode.ERROR
    assert "botocore" in loud.output and "DEBUG" in loud.output
    assert "Traceback (most recent call last)" in loud.output
    assert "error: " in loud.output  # the message still ends it


def test_shell_completion_is_on() -> None:
    assert "--install-completion" in run("--help").output
    script = run("--show-completion", "bash")
    assert script.exit_code == 0, script.output
    assert "_DYNASHARD_COMPLETE" in script.output


def test_the_help_example_points_at_the_plain_sandboxs_dynamodb_local() -> None:
    from sandbox.serve import parse_args

    assert f"http://127.0.0.1:{parse_args([]).ddb_port}" == SANDBOX_DYNAMODB
    assert f"--endpoint-url {SANDBOX_DYNAMODB}" in run("--help").output


def test_the_old_endpoint_variable_is_refused_naming_the_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(names.LEGACY_ENV_DYNAMODB_ENDPOINT, "http://127.0.0.1:8000")
    result = run("status", KEY)
    assert result.exit_code == ExitCode.USAGE
    assert "DYNASHARD_DYNAMODB_ENDPOINT is not read" in result.output
    assert "AWS_ENDPOINT_URL_DYNAMODB" in result.output


def test_the_sdks_endpoint_variable_is_the_endpoint_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from dynashard.cli.context import Options

    seen: list[Options] = []
    monkeypatch.setattr(Options, "facade", lambda self, **_: seen.append(self) or _Stop())
    monkeypatch.setenv(names.ENV_DYNAMODB_ENDPOINT, "http://127.0.0.1:8000")
    run("status", KEY)
    assert seen[0].endpoint_url == "http://127.0.0.1:8000"


class _Stop:
    def close(self) -> None:
        pass

    def shard_info(self, key: str) -> Any:
        raise OSError("stop here")


# --- adopt --dry-run, nothing to adopt ------------------------------------------------------
def _foreign_items(aws_client: Any, key: str = "OPS_LOG") -> None:
    for sk, agent in (
        ("2026-06-22T01:00:00.000000Z#a1", "scan"),
        ("2026-06-22T02:00:00.000000Z#a2", "rank"),
    ):
        aws_client.put_item(
            TableName=DATA_TABLE.default_name,
            Item={"PK": {"S": key}, "SK": {"S": sk}, "agent": {"S": agent}},
        )


def test_adopt_dry_run_surveys_and_checks_and_writes_nothing(aws: Any) -> None:
    # Given another program's items under a bare key
    _foreign_items(aws)
    # When the adoption is tried with --dry-run
    dry = run("adopt", "OPS_LOG", "--dry-run")
    # Then the survey and the outcome are shown, and no metadata item is written
    assert dry.exit_code == 0, dry.output
    assert "2 item(s) in another program's shape" in dry.output
    assert "would be adopted (dry run, nothing written)" in dry.output
    ds = Dynashard(DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name))
    assert not ds.shard_info("OPS_LOG").stored
    as_json = json.loads(run("adopt", "OPS_LOG", "--dry-run", "--json").output)
    assert as_json["dry_run"] is True and as_json["adopted"] is False
    assert as_json["survey"]["foreign_items"] == 2
    # And without --dry-run it is adopted
    assert run("adopt", "OPS_LOG").exit_code == 0
    assert ds.shard_info("OPS_LOG").adopted


def test_adopt_dry_run_refuses_what_the_adoption_would_refuse(aws: Any) -> None:
    _foreign_items(aws)
    aws.put_item(
        TableName=DATA_TABLE.default_name,
        Item={"PK": {"S": "OPS_LOG"}, "SK": {"S": "ALERT#2026-06-22#geo"}},
    )
    dry = run("adopt", "OPS_LOG", "--dry-run")
    assert dry.exit_code == ExitCode.USAGE
    assert "'ALERT#2026-06-22#geo'" in dry.output


def test_adopting_a_bare_key_with_no_item_is_refused_unless_forced(aws: Any) -> None:
    # Given a key whose bare partition key holds nothing (a typo: the items sit elsewhere)
    _foreign_items(aws, "OPS_LOG")
    # When it is adopted
    refused = run("adopt", "OPS-LOG")
    # Then it is refused (exit 3), saying there is nothing to adopt, and nothing is written
    assert refused.exit_code == ExitCode.REFUSED, refused.output
    assert "nothing to adopt" in refused.output and "'OPS-LOG'" in refused.output
    ds = Dynashard(DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name))
    assert not ds.shard_info("OPS-LOG").stored
    assert run("adopt", "OPS-LOG", "--dry-run").exit_code == ExitCode.REFUSED
    # And --force adopts it anyway
    forced = run("adopt", "OPS-LOG", "--force")
    assert forced.exit_code == 0, forced.output
    assert ds.shard_info("OPS-LOG").adopted
