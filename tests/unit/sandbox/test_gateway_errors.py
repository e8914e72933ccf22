"""The gateway's own answers (no route, wrong method) are documented JSON errors."""

from __future__ import annotations

import asyncio
import json

from aiohttp.test_utils import make_mocked_request

from sandbox.local_aws.gateway import Gateway, Route

#: Two methods on one resource, as the template has them (the gateway's own answers do
#: not depend on where its routes come from).
ROUTES = (
    Route("GET", "/counters/{name}", "functions.query.app:handler"),
    Route("POST", "/counters/{name}", "functions.ingest.app:api_handler"),
)


def _answer(method: str, path: str) -> tuple[int, dict[str, str], dict[str, object]]:
    gateway = Gateway(handlers={}, routes=ROUTES)
    response = asyncio.run(gateway.handle(make_mocked_request(method, path)))
    return response.status, dict(response.headers), json.loads(response.text or "{}")


def test_a_method_the_resource_lacks_is_a_405_with_an_allow_header() -> None:
    status, headers, body = _answer("DELETE", "/counters/CARRIER%23UA")
    assert status == 405
    assert headers["Allow"] == "GET, POST"
    assert "DELETE" in str(body["message"])


def test_an_unknown_path_is_a_json_404() -> None:
    status, headers, body = _answer("GET", "/nowhere")
    assert status == 404
    assert headers["Content-Type"].startswith("application/json")
    assert body["field"] == "path"


def test_a_declared_body_above_api_gateways_quota_is_its_413_before_any_route() -> None:
    # Given a request whose Content-Length is one byte above 10 MB (on a path with no route)
    from sandbox.local_aws.gateway import MAX_PAYLOAD_BYTES, PAYLOAD_TOO_LARGE

    request = make_mocked_request(
        "POST", "/nowhere", headers={"Content-Length": str(MAX_PAYLOAD_BYTES + 1)}
    )
    # When the gateway answers it
    response = asyncio.run(Gateway(handlers={}, routes=ROUTES).handle(request))
    # Then it is API Gateway's 413, in API Gateway's words
    assert (response.status, response.text) == (413, PAYLOAD_TOO_LARGE)
    assert PAYLOAD_TOO_LARGE == "HTTP content length exceeded 10485760 bytes."
    assert response.content_type == "text/plain"
