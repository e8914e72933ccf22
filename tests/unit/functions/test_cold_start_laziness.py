"""What the functions' cold start leaves out: the write path, a second client, extra patches.

Each import check runs in a fresh interpreter, since this one has loaded everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, facade
from dynashard.lambda_kit.kit import TRACED_MODULES


def probe(code: str, **env: str) -> Any:
    """Run ``code`` in a fresh interpreter; it prints one JSON value, returned here."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, **env},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


LOADED = (
    "import json, sys\n{statement}\n"
    "print(json.dumps(sorted(m for m in sys.modules if m in {modules!r})))"
)
WRITE_PATH = ("dynashard.dynamodb.writer", "dynashard.lambda_kit.ingest")


@pytest.mark.parametrize("module", ["functions.query.app", "functions.scaler.app"])
def test_a_reading_function_does_not_import_the_write_path(module: str) -> None:
    loaded = probe(LOADED.format(statement=f"import {module}", modules=set(WRITE_PATH)))
    assert loaded == []


def test_the_probe_sees_the_write_path_of_the_ingest_function() -> None:
    # The check above could not fail if the probe never saw the write path; the ingest
    # function builds it at init (kit.warm: the writer's module and client)
    loaded = probe(LOADED.format(statement="import functions.ingest.app", modules=set(WRITE_PATH)))
    assert loaded == sorted(WRITE_PATH)


#: Whether a function module's import built its settings and facade (kit.warm), and the
#: ingest facade its writer's client.
WARMED = (
    "import json\n"
    "from functions.{name} import app as m\n"
    "f = m.get_facade() if m.get_facade.cached else None\n"
    "print(json.dumps([m.get_settings.cached, m.get_facade.cached,"
    " f is not None and f._write_client is not None]))"
)


@pytest.mark.parametrize(
    ("name", "built"),
    [
        ("ingest", [True, True, True]),  # both clients: the first write's too
        ("query", [True, True, False]),  # one client: it only reads
        ("scaler", [True, False, False]),  # a sweep with nothing due needs no DynamoDB
    ],
)
def test_each_function_builds_its_settings_and_clients_at_init(
    name: str, built: list[bool]
) -> None:
    # Given the environment of a function (tables and region set by the fixtures)
    # When its module is imported, as Lambda's Init phase does
    # Then what every invocation needs is built and cached before the first one
    assert probe(WARMED.format(name=name)) == built


def test_a_misconfigured_function_still_imports_and_builds_on_first_use() -> None:
    # Given no region (botocore cannot make a client): the import logs it and goes on,
    # and the first invocation builds again (and would raise through its error path)
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_DEFAULT_REGION", "AWS_REGION")}
    out = subprocess.run(
        [sys.executable, "-c", WARMED.format(name="query")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [True, False, False]
    assert "init: build deferred" in out.stdout and "NoRegionError" in out.stdout


def test_the_ingest_function_does_not_build_powertools_batch_parser_models() -> None:
    # Powertools' batch utility builds its pydantic parser models only when pydantic is
    # loaded before it; the ingest module imports it first, and never passes a model
    parser = "aws_lambda_powertools.utilities.parser.models"
    statement = "import functions.ingest.app"
    assert probe(LOADED.format(statement=statement, modules={parser})) == []
    # (the probe sees them when pydantic comes first)
    statement = "import pydantic, aws_lambda_powertools.utilities.batch"
    assert probe(LOADED.format(statement=statement, modules={parser})) == [parser]


def test_the_api_models_are_built_on_first_use_not_at_import() -> None:
    # Given the ingest function imported (it imports every request and response model)
    code = (
        "import json\n"
        "import functions.ingest.app\n"
        "from dynashard.lambda_kit import bodies as api\n"
        "before = [api.EventBatch.__pydantic_complete__, api.EventsPage.__pydantic_complete__]\n"
        "api.EventBatch.model_validate("
        "{'events': [{'key': 'K', 'id': '1', 'ts': '2013-01-01T10:00:00Z'}]})\n"
        "print(json.dumps(before + [api.EventBatch.__pydantic_complete__]))"
    )
    # Then no model has its validator yet, and the first validation builds it
    assert probe(code) == [False, False, True]


def test_a_facade_that_only_reads_builds_one_client(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given make_client counted
    made: list[int] = []

    def fake_make_client(
        config: DynashardConfig, *, total_max_attempts: int = 4, parameter_validation: bool = True
    ) -> object:
        made.append((total_max_attempts, parameter_validation))
        return object()

    monkeypatch.setattr(facade, "make_client", fake_make_client)
    # When a facade is built without clients
    ds = Dynashard(DynashardConfig("dynashard-data", "dynashard-shards"))
    # Then only the read client exists, with botocore's retries
    assert made == [(4, True)]
    # And the writer's client (botocore's retries and parameter validation off) is made
    # on first use, once
    write_client = ds.write_client
    assert made == [(4, True), (1, False)]
    assert ds.write_client is write_client
    assert made == [(4, True), (1, False)]


def test_a_given_client_is_also_the_writers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(facade, "make_client", lambda *a, **k: pytest.fail("client made"))
    client = object()
    ds = Dynashard(DynashardConfig("dynashard-data", "dynashard-shards"), client=client)  # type: ignore[arg-type]
    assert ds.write_client is client


def test_the_tracer_patches_botocore_only_when_tracing_is_on() -> None:
    # Given the variables of a Lambda execution environment (the Tracer is on there)
    code = (
        "import json, sys\n"
        "import functions.query.app\n"
        "from aws_xray_sdk.core import patcher\n"
        "print(json.dumps([sorted(patcher._PATCHED_MODULES), 'requests' in sys.modules]))"
    )
    patched, requests_loaded = probe(
        code,
        POWERTOOLS_TRACE_DISABLED="false",
        LAMBDA_TASK_ROOT=os.getcwd(),
        AWS_LAMBDA_FUNCTION_NAME="dynashard-query",
        AWS_XRAY_CONTEXT_MISSING="LOG_ERROR",
    )
    # Then botocore, which carries every AWS call of the functions, is traced, and
    # nothing else is imported to be patched
    assert patched == sorted(TRACED_MODULES) == ["botocore"]
    assert requests_loaded is False


#: What a queue or stream function does not use: HTTP routing, OpenAPI, the API models,
#: pydantic-settings (issue 29).
API_ONLY = (
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.event_handler.openapi.params",
    "dynashard.lambda_kit.bodies",
    "dynashard.lambda_kit.rest",
    "pydantic_settings",
)


def test_the_queue_and_stream_handlers_load_nothing_of_the_api() -> None:
    # Given the ingest module imported and its queue handler found as Lambda finds it
    statement = "import functions.ingest.app as m\nm.sqs_handler, m.kinesis_handler, m.get_settings"
    # Then nothing only the API uses is loaded
    assert probe(LOADED.format(statement=statement, modules=set(API_ONLY))) == []


def test_the_api_handler_builds_its_routes_when_lambda_asks_for_it() -> None:
    # The check above could not fail if the API half were never loaded: getattr, as the
    # Lambda runtime does, builds it
    statement = "import functions.ingest.app as m\ngetattr(m, 'api_handler')"
    loaded = probe(LOADED.format(statement=statement, modules=set(API_ONLY)))
    assert loaded == sorted(set(API_ONLY) - {"pydantic_settings"})
