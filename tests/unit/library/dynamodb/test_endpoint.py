"""The library's clients reach the endpoint the AWS SDKs read (issue 39).

``AWS_ENDPOINT_URL_DYNAMODB`` (and ``AWS_ENDPOINT_URL``) are the SDKs' own variables,
read by boto3 1.28 and later when a client is created; the library passes no endpoint
of its own unless the program gives one, so they reach every client it makes. Each test
sends a real request through the client and records where botocore sends it (a
``before-send`` hook answers in place of the network: unit tests have sockets off).
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from pydantic import ValidationError

from dynashard import names
from dynashard.facade import Dynashard, DynashardConfig, make_client
from dynashard.lambda_kit.settings import FunctionSettings

LOCAL = "http://127.0.0.1:8000"


class _Headers(dict[str, str]):
    pass


class _Raw:
    def stream(self, **_: Any) -> Any:
        yield b'{"TableNames": []}'


def sent_to(client: Any) -> str:
    """Send ListTables through ``client`` and return the URL botocore sent it to."""
    urls: list[str] = []

    def answer(request: Any, **_: Any) -> AWSResponse:
        urls.append(request.url)
        return AWSResponse(request.url, 200, _Headers(), _Raw())

    client.meta.events.register_first("before-send.dynamodb", answer)
    client.list_tables()
    assert len(urls) == 1
    return urls[0].rstrip("/")


@pytest.fixture
def sdk_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No endpoint variable set, credentials and region as a local run has them."""
    for name in (
        names.ENV_DYNAMODB_ENDPOINT,
        names.ENV_ENDPOINT_URL,
        names.LEGACY_ENV_DYNAMODB_ENDPOINT,
        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "local")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    return monkeypatch


def test_the_default_client_talks_to_aws_endpoint_url_dynamodb(sdk_env: pytest.MonkeyPatch) -> None:
    # Given only the SDK's DynamoDB endpoint variable
    sdk_env.setenv("AWS_ENDPOINT_URL_DYNAMODB", LOCAL)
    # When the library builds its own clients (the facade's and the writer's)
    ds = Dynashard(DynashardConfig("T", "M"))
    # Then both send their requests there
    assert sent_to(ds.client) == LOCAL
    assert sent_to(ds.write_client) == LOCAL


def test_without_it_the_client_talks_to_aws(sdk_env: pytest.MonkeyPatch) -> None:
    assert sent_to(make_client(DynashardConfig("T", "M"))) == (
        "https://dynamodb.us-east-1.amazonaws.com"
    )


def test_the_global_variable_counts_and_the_service_one_wins(sdk_env: pytest.MonkeyPatch) -> None:
    sdk_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
    assert sent_to(make_client(DynashardConfig("T", "M"))) == "http://127.0.0.1:4566"
    sdk_env.setenv("AWS_ENDPOINT_URL_DYNAMODB", LOCAL)
    assert sent_to(make_client(DynashardConfig("T", "M"))) == LOCAL


def test_an_explicit_endpoint_beats_the_variable(sdk_env: pytest.MonkeyPatch) -> None:
    sdk_env.setenv("AWS_ENDPOINT_URL_DYNAMODB", LOCAL)
    config = DynashardConfig("T", "M", endpoint_url="http://127.0.0.1:8001")
    assert sent_to(make_client(config)) == "http://127.0.0.1:8001"


def test_the_functions_settings_leave_the_endpoint_to_the_sdk(sdk_env: pytest.MonkeyPatch) -> None:
    # Given a function's environment as the sandbox sets it
    env = {
        names.ENV_DATA_TABLE: "events-data",
        names.ENV_METADATA_TABLE: "events-shards",
        names.ENV_DYNAMODB_ENDPOINT: LOCAL,
    }
    for name, value in env.items():
        sdk_env.setenv(name, value)
    # When the function builds its facade from its settings
    config = FunctionSettings().to_config()
    # Then the endpoint is not fixed in the configuration, and the client goes there
    assert config.endpoint_url is None
    assert sent_to(Dynashard(config).client) == LOCAL


def test_the_old_variable_is_refused_naming_both() -> None:
    env = {
        names.ENV_DATA_TABLE: "events-data",
        names.ENV_METADATA_TABLE: "events-shards",
        names.LEGACY_ENV_DYNAMODB_ENDPOINT: LOCAL,
    }
    with pytest.raises(ValidationError) as raised:
        FunctionSettings(_environ=env)
    message = str(raised.value)
    assert "DYNASHARD_DYNAMODB_ENDPOINT is not read" in message
    assert "AWS_ENDPOINT_URL_DYNAMODB" in message
