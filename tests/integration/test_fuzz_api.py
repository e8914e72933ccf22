"""Fuzz the HTTP API from its OpenAPI document: schemathesis through the local gateway.

Every operation of ``functions/openapi.py``'s document is called with examples that
schemathesis generates from it, valid and invalid (``positive`` and ``negative`` modes),
through :class:`sandbox.local_aws.gateway.GatewayServer` (API Gateway proxy events) to the real
handlers on DynamoDB Local. Every check schemathesis has for OpenAPI runs on each answer
(no 5xx, status codes, content types, headers and bodies the document declares,
invalid input refused, valid input accepted ...), and one of ours: a 4xx is a JSON
error that says what was wrong. The example count is bounded (``MAX_EXAMPLES`` per
operation and mode) so that it adds well under a minute to ``make test``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from sandbox.local_aws.gateway import GatewayServer
from tests.fuzz import fuzz_document

pytestmark = pytest.mark.integration

#: Examples per operation (hypothesis ``max_examples``), all modes together.
MAX_EXAMPLES = 40


schema = schemathesis.openapi.from_dict(fuzz_document())

#: Operations whose bodies carry rules a JSON schema cannot state, so that a body valid
#: by the schema may be a 400 naming the field: boundaries normalised and strictly
#: increasing, N distinct sample values (a layout); distinct ids (index entries); a key
#: configured as an ordered index takes no events (the fuzzer's own layouts make some);
#: rules between query parameters: ``prefix`` excludes ``from``/``to``; ``from`` before
#: ``to``; ``path=gsi1`` needs a window and ``consistent=false``; an ``Idempotency-Key``
#: already applied with another ``by`` (422). "Valid input accepted" is not checked there;
#: every other check is, and on every operation (``tests/fuzz/schemathesis.toml`` says the
#: same for the command-line run against ``make sandbox``).
SEMANTIC_RULES = {
    "POST /counters/{name}",
    "PUT /index/{key}/layout",
    "POST /index/{key}",
    "POST /events",
    "GET /index/{key}",
    "GET /events",
}


@pytest.fixture(scope="module")
def gateway(function_env: dict[str, str]) -> Iterator[str]:
    """The gateway in front of the real handlers, on this module's tables."""
    with GatewayServer(max_workers=2) as server:
        yield server.base_url


def _error_says_what_was_wrong(ctx: Any, response: Any, case: Any) -> bool | None:
    """A 4xx answer is a JSON object whose ``message`` says what was wrong."""
    if not 400 <= response.status_code < 500:
        return None
    try:
        body = response.json()
    except ValueError:
        body = None
    assert isinstance(body, dict), f"a {response.status_code} body is not a JSON object"
    message = body.get("message")
    assert isinstance(message, str) and message, f"a {response.status_code} without message"
    return None


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_the_api_does_what_its_document_says(case: Any, gateway: str) -> None:
    from schemathesis.specs.openapi.checks import positive_data_acceptance

    excluded = [positive_data_acceptance] if case.operation.label in SEMANTIC_RULES else []
    case.call_and_validate(
        base_url=gateway, additional_checks=[_error_says_what_was_wrong], excluded_checks=excluded
    )
