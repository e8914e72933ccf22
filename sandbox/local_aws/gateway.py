"""A local HTTP gateway in front of the API handlers, like API Gateway's REST proxy.

Each HTTP request becomes an API Gateway REST API proxy event (payload format 1.0,
see :func:`sandbox.local_aws.aws_events.api_gateway_event`), the handler that owns the route is
invoked in a worker thread exactly as Lambda would invoke it, and the proxy response
(``statusCode``, ``headers``, ``multiValueHeaders``, ``body``, ``isBase64Encoded``)
becomes the HTTP response. So ``curl``, load tools and fuzzers work locally.

The routes are the synthesized API's (:meth:`sandbox.twin.LocalTwin.routes`: each
``AWS::ApiGateway::Method`` of the template and the function of its proxy
integration), and each route's function is the template's
(:meth:`sandbox.twin.LocalTwin.function`: its name, timeout, memory and role, every
AWS call it makes checked against that role), so the gateway serves what the stack
deploys and nothing else: a route added to the stack is served at once, and one the
stack lacks is a 404 here too.

As on API Gateway, ``path`` keeps the percent-encoding the client sent (``#`` in a key
travels as ``%23``) while ``pathParameters`` and the query string parameters are
decoded.

Request bodies are taken up to API Gateway's payload quota, 10 MB (10,485,760 bytes;
"API Gateway quotas for configuring and running a REST API", API Gateway Developer
Guide), not aiohttp's default of 1 MiB; a larger body is answered as API Gateway
answers it, before any function runs: 413 with the plain-text body
``HTTP content length exceeded 10485760 bytes.`` (the ``REQUEST_TOO_LARGE`` gateway
response, which a REST API cannot customise: "Gateway response types for API
Gateway"). Lambda's own 6 MB quota on a synchronous invocation's event is not modelled.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from aiohttp import web

from sandbox.lifecycle import BackgroundServer
from sandbox.local_aws.aws_events import LambdaContext, api_gateway_event
from sandbox.local_aws.lambda_runtime import LocalFunction, api_function

if TYPE_CHECKING:
    from sandbox.twin import LocalTwin

#: API Gateway's payload quota, bytes: 10 MB, not adjustable ("API Gateway quotas for
#: configuring and running a REST API", API Gateway Developer Guide).
MAX_PAYLOAD_BYTES = 10_485_760
#: What API Gateway answers a larger request body with (status 413, text).
PAYLOAD_TOO_LARGE = f"HTTP content length exceeded {MAX_PAYLOAD_BYTES} bytes."

#: A Lambda handler: ``(event, context) -> response``.
Handler = Callable[[dict[str, Any], Any], Any]

#: Import paths of the real handlers, resolved on first use.
INGEST_API_HANDLER = "functions.ingest.app:api_handler"
QUERY_HANDLER = "functions.query.app:handler"


@dataclass(frozen=True)
class Route:
    """One API resource and method, and the handler that serves it.

    Parameters
    ----------
    method : str
        HTTP method.
    resource : str
        API Gateway resource template, e.g. ``/counters/{name}``.
    handler : str
        ``module:attribute`` of the handler (``functions.query.app:handler``).
    """

    method: str
    resource: str
    handler: str

    @property
    def pattern(self) -> re.Pattern[str]:
        """re.Pattern: Matches a raw (percent-encoded) path; one group per parameter."""
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.resource))
        return re.compile(f"^{regex}/?$")


def twin_routes(twin: LocalTwin) -> tuple[Route, ...]:
    """Return the routes of the twin's template: its API's methods, each to its function.

    Parameters
    ----------
    twin : LocalTwin
        The stack's twin.

    Returns
    -------
    tuple of Route
        One per ``AWS::ApiGateway::Method`` (``OPTIONS`` excluded), the handler of the
        function its proxy integration invokes.
    """
    return tuple(Route(method, resource, handler) for method, resource, handler in twin.routes())


def match_route(
    method: str, raw_path: str, routes: Sequence[Route]
) -> tuple[Route | None, dict[str, str], bool]:
    """Find the route of a request.

    Parameters
    ----------
    method : str
        HTTP method.
    raw_path : str
        Path as sent, percent-encoded.
    routes : sequence of Route
        The API's routes.

    Returns
    -------
    tuple of (Route or None, dict, bool)
        The route (None when nothing matches), its decoded path parameters, and whether
        the path matched some route under another method (405 rather than 404).
    """
    path_known = False
    for route in routes:
        m = route.pattern.match(raw_path)
        if m is None:
            continue
        path_known = True
        if route.method == method.upper():
            return route, {k: unquote(v) for k, v in m.groupdict().items()}, True
    return None, {}, path_known


def allowed_methods(raw_path: str, routes: Sequence[Route]) -> list[str]:
    """Return the methods the API serves on a path (the ``Allow`` header of a 405).

    Parameters
    ----------
    raw_path : str
        Path as sent, percent-encoded.
    routes : sequence of Route
        The API's routes.

    Returns
    -------
    list of str
        Sorted methods; empty when no route has the path.

    Examples
    --------
    >>> routes = [Route("GET", "/counters/{name}", "q:h"), Route("POST", "/counters/{name}", "i:h")]
    >>> allowed_methods("/counters/UA", routes), allowed_methods("/nowhere", routes)
    (['GET', 'POST'], [])
    """
    return sorted({r.method for r in routes if r.pattern.match(raw_path)})


def _json_response(
    status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.Response(
        status=status, text=json.dumps(body), content_type="application/json", headers=headers
    )


def _too_large() -> web.Response:
    """Return API Gateway's answer to a request body above its payload quota."""
    return web.Response(status=413, text=PAYLOAD_TOO_LARGE, content_type="text/plain")


def proxy_response(result: Any) -> web.Response:
    """Turn a Lambda proxy integration result into an HTTP response.

    Parameters
    ----------
    result : Any
        What the handler returned: ``{"statusCode", "headers", "multiValueHeaders",
        "body", "isBase64Encoded"}``.

    Returns
    -------
    aiohttp.web.Response
        The response; 502 with ``{"message": "Internal server error"}`` when the result
        is not a valid proxy response, as API Gateway answers.
    """
    if not isinstance(result, Mapping) or not isinstance(result.get("statusCode"), int):
        return _json_response(502, {"message": "Internal server error"})
    body = result.get("body") or ""
    raw = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode()
    response = web.Response(status=result["statusCode"], body=raw)
    for name, value in (result.get("headers") or {}).items():
        response.headers[name] = str(value)
    for name, values in (result.get("multiValueHeaders") or {}).items():
        if name in response.headers:
            del response.headers[name]
        for value in values:
            response.headers.add(name, str(value))
    return response


class Gateway:
    """The aiohttp application that proxies requests to the handlers.

    Parameters
    ----------
    handlers : mapping of str to callable, optional
        Handlers by ``module:attribute`` reference, overriding the template's functions
        (tests inject fakes here).
    twin : LocalTwin, optional
        The stack's twin: the routes are its template's (:func:`twin_routes`) and each
        route's function is :meth:`LocalTwin.function` of its handler, with IAM checks
        on (:func:`sandbox.twin.iam.install_default`). Default (without ``routes``):
        :func:`sandbox.env_vars.environ_twin`, the twin bound to the tables the
        environment names.
    routes : sequence of Route, optional
        Other routes than the template's (tests); a route whose handler is neither
        injected nor the twin's is served by :func:`api_function`, unchecked.
    max_workers : int
        Threads that run handler invocations (concurrent Lambda invocations).
    stage : str
        Stage name put in the events.
    """

    def __init__(
        self,
        handlers: Mapping[str, Handler] | None = None,
        *,
        twin: LocalTwin | None = None,
        routes: Sequence[Route] | None = None,
        max_workers: int = 8,
        stage: str = "local",
    ) -> None:
        if routes is None:
            if twin is None:
                from sandbox.env_vars import environ_twin

                twin = environ_twin()
            routes = twin_routes(twin)
        self.routes: tuple[Route, ...] = tuple(routes)
        self._handlers: dict[str, Handler] = dict(handlers or {})
        if twin is not None:
            from sandbox.twin.iam import install_default

            install_default()
            for ref in sorted({r.handler for r in self.routes} - set(self._handlers)):
                self._handlers[ref] = twin.function(ref)
        self.stage = stage
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="lambda")
        #: Handler invocations so far.
        self.invocations = 0

    def handler_for(self, ref: str) -> Handler:
        """Return the function that serves a handler reference.

        Every route is a Powertools REST resolver, so invocations run one at a time in
        execution environments of their own (:mod:`sandbox.local_aws.lambda_runtime`):
        :meth:`sandbox.twin.LocalTwin.function` serializes the template's API functions,
        and a handler outside the twin is made on first use by :func:`api_function`.

        Parameters
        ----------
        ref : str
            ``module:attribute``.

        Returns
        -------
        callable
            The injected handler, the template's function, or a pool of environments.
        """
        if ref not in self._handlers:
            self._handlers[ref] = api_function(ref)
        return self._handlers[ref]

    async def handle(self, request: web.Request) -> web.Response:
        """Serve one request: build the proxy event, invoke the handler, map the result.

        Parameters
        ----------
        request : aiohttp.web.Request
            The HTTP request.

        Returns
        -------
        aiohttp.web.Response
            The handler's response; 404/405 (JSON ``message``, ``field``; a 405 with the
            ``Allow`` header) when no route matches; 413 (:data:`PAYLOAD_TOO_LARGE`) for
            a body above :data:`MAX_PAYLOAD_BYTES`, before any route is matched.
        """
        if (request.content_length or 0) > MAX_PAYLOAD_BYTES:
            return _too_large()
        raw_path = request.rel_url.raw_path
        route, params, path_known = match_route(request.method, raw_path, self.routes)
        if route is None:
            if path_known:  # RFC 9110 15.5.6: a 405 names the methods the resource has
                allow = ", ".join(allowed_methods(raw_path, self.routes))
                message = f"Method {request.method} not allowed on {raw_path}; allowed: {allow}"
                return _json_response(
                    405, {"message": message, "field": "method"}, {"Allow": allow}
                )
            return _json_response(
                404, {"message": f"No route for {request.method} {raw_path}", "field": "path"}
            )
        query: dict[str, list[str]] = {}
        for name, value in request.query.items():
            query.setdefault(name, []).append(value)
        headers: dict[str, list[str]] = {}
        for name, value in request.headers.items():
            headers.setdefault(name, []).append(value)
        try:
            body_bytes = await request.read() if request.can_read_body else b""
        except web.HTTPRequestEntityTooLarge:  # a chunked body past the quota
            return _too_large()
        body: str | bytes | None
        if not body_bytes:
            body = None
        else:
            try:
                body = body_bytes.decode("utf-8")
            except UnicodeDecodeError:
                body = body_bytes
        event = api_gateway_event(
            request.method,
            raw_path,
            resource=route.resource,
            path_parameters=params or None,
            query=query,
            headers=headers,
            body=body,
            source_ip=request.remote or "127.0.0.1",
            stage=self.stage,
        )
        handler = self.handler_for(route.handler)
        context = (
            handler.context()  # the function's name, timeout and memory
            if isinstance(handler, LocalFunction)
            else LambdaContext(function_name=route.handler.partition(":")[0])
        )
        self.invocations += 1
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self._executor, handler, event, context)
        except Exception as exc:  # Lambda reports an unhandled error as a 502
            return _json_response(502, {"message": "Internal server error", "error": repr(exc)})
        return proxy_response(result)

    def app(self) -> web.Application:
        """Build the aiohttp application (one catch-all route).

        Returns
        -------
        aiohttp.web.Application
            The application; its cleanup shuts the worker threads down.
        """
        # aiohttp refuses a body larger than client_max_size (chunked: no Content-Length)
        application = web.Application(client_max_size=MAX_PAYLOAD_BYTES)
        # [\s\S], not ".": a path with an encoded newline (%0A) is still the API's to answer
        application.router.add_route("*", r"/{tail:[\s\S]*}", self.handle)

        async def _close(_: web.Application) -> None:
            self._executor.shutdown(wait=True)

        application.on_cleanup.append(_close)
        return application


def make_app(
    handlers: Mapping[str, Handler] | None = None,
    *,
    twin: LocalTwin | None = None,
    **kwargs: Any,
) -> web.Application:
    """Build the gateway application (see :class:`Gateway`).

    Parameters
    ----------
    handlers : mapping of str to callable, optional
        Injected handlers by ``module:attribute`` reference.
    twin : LocalTwin, optional
        The stack's twin whose routes and functions the gateway serves (default: the
        twin of the tables the environment names).
    **kwargs
        Passed to :class:`Gateway`.

    Returns
    -------
    aiohttp.web.Application
        The application.
    """
    return Gateway(handlers, twin=twin, **kwargs).app()


class GatewayServer(BackgroundServer):
    """Serve the gateway over HTTP from a background thread.

    For synchronous callers (tests, fuzzers): HTTP clients talk to :attr:`base_url`.

    Parameters
    ----------
    handlers : mapping of str to callable, optional
        Injected handlers (see :class:`Gateway`).
    host : str
        Interface (loopback by default).
    port : int
        Port, 0 for a free one.
    **kwargs
        Passed to :class:`Gateway`.

    Examples
    --------
    >>> with GatewayServer() as gateway:  # doctest: +SKIP
    ...     requests.get(f"{gateway.base_url}/counters/UA")
    """

    def __init__(
        self,
        handlers: Mapping[str, Handler] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(host, port, name="gateway")
        self.gateway = Gateway(handlers, **kwargs)

    @property
    def base_url(self) -> str:
        """str: ``http://host:port`` (after :meth:`start`)."""
        return self.url

    def make_app(self) -> web.Application:
        """Build the gateway's application (see :meth:`Gateway.app`).

        Returns
        -------
        aiohttp.web.Application
            One catch-all route; its cleanup shuts the worker threads down.
        """
        return self.gateway.app()
