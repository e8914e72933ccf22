"""The gateway takes bodies up to API Gateway's 10 MB and refuses larger as it does (issue 39).

API Gateway's payload quota is 10 MB, 10,485,760 bytes ("API Gateway quotas for
configuring and running a REST API", API Gateway Developer Guide); a larger body is
answered 413 with the plain-text ``HTTP content length exceeded 10485760 bytes.`` (the
``REQUEST_TOO_LARGE`` gateway response, not customisable on a REST API). aiohttp's own
default was 1 MiB with its own text. Over real HTTP, with a handler that echoes the
size of the body it was given.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import ClientSession
from aiohttp.test_utils import TestServer

from sandbox.local_aws.gateway import MAX_PAYLOAD_BYTES, Route, make_app

ROUTE = Route("POST", "/events", "echo:handler")
TOO_LARGE = "HTTP content length exceeded 10485760 bytes."


def _echo(event: dict[str, Any], _: Any) -> dict[str, Any]:
    body = event.get("body") or ""
    return {"statusCode": 200, "body": json.dumps({"bytes": len(body.encode())})}


async def _post(body: bytes | AsyncIterator[bytes]) -> tuple[int, str, str]:
    server = TestServer(make_app({"echo:handler": _echo}, routes=[ROUTE]))
    await server.start_server()
    try:
        async with (
            ClientSession() as session,
            session.post(server.make_url("/events"), data=body) as resp,
        ):
            return resp.status, resp.headers.get("Content-Type", ""), await resp.text()
    finally:
        await server.close()


def test_the_quota_is_api_gateways() -> None:
    assert MAX_PAYLOAD_BYTES == 10 * 1024 * 1024 == 10_485_760


def test_a_body_of_exactly_10_mb_reaches_the_function() -> None:
    status, _, text = asyncio.run(_post(b"x" * MAX_PAYLOAD_BYTES))
    assert status == 200, text[:200]
    assert json.loads(text) == {"bytes": MAX_PAYLOAD_BYTES}
    # a 2 MiB body, refused by aiohttp's 1 MiB default before, passes too
    assert asyncio.run(_post(b"y" * 2 * 1024 * 1024))[0] == 200


def test_one_byte_more_is_api_gateways_413() -> None:
    status, content_type, text = asyncio.run(_post(b"x" * (MAX_PAYLOAD_BYTES + 1)))
    assert (status, text) == (413, TOO_LARGE)
    assert content_type.startswith("text/plain")


def test_a_chunked_body_past_the_quota_is_the_same_413() -> None:
    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
        for _ in range(11):
            yield b"z" * (1024 * 1024)

    status, _, text = asyncio.run(_post(chunks()))
    assert (status, text) == (413, TOO_LARGE)
