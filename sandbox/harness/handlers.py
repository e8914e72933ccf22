"""The handler driver: the real Lambda handlers, invoked as Lambda would.

:class:`Handlers` loads ``functions.ingest.app`` (SQS and API handlers) and
``functions.query.app``, each as a function with execution environments of its own
(:mod:`sandbox.local_aws.lambda_runtime`), and counts invocations; :func:`api_call` invokes an API
handler with an API Gateway REST proxy event and decodes its JSON answer.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sandbox.local_aws.aws_events import LambdaContext, api_gateway_event

if TYPE_CHECKING:
    from sandbox.twin import LocalTwin

Handler = Callable[..., Any]


@dataclass
class Handlers:
    """The real handlers, and a count of invocations (thread-safe).

    Attributes
    ----------
    sqs, api, query, kinesis : callable
        ``functions.ingest.app.sqs_handler``, ``...api_handler``,
        ``functions.query.app.handler``, ``functions.ingest.app.kinesis_handler``, each a
        :class:`~sandbox.local_aws.lambda_runtime.LocalFunction`.
    twin : LocalTwin or None
        The stack's twin they come from (its event source mappings feed them).
    """

    sqs: Handler
    api: Handler
    query: Handler
    kinesis: Handler | None = None
    twin: LocalTwin | None = None
    invocations: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, twin: LocalTwin | None = None) -> Handlers:
        """Load the real handlers, each as the template's function with its own environments.

        Parameters
        ----------
        twin : LocalTwin, optional
            The stack's twin; default :func:`sandbox.env_vars.environ_twin` (bound to
            the tables the environment names, ``DYNASHARD_DATA_TABLE``, ...).

        Returns
        -------
        Handlers
            Bound to ``functions.ingest.app`` and ``functions.query.app`` through
            :class:`sandbox.local_aws.lambda_runtime.LocalFunction` (from
            :meth:`sandbox.twin.LocalTwin.function`: the template's name, timeout and
            role, every call checked against it): concurrent invocations never share a
            module's globals, and API invocations never overlap, as on Lambda.
        """
        from sandbox.env_vars import environ_twin
        from sandbox.local_aws.gateway import INGEST_API_HANDLER, QUERY_HANDLER
        from sandbox.twin.iam import install_default

        if twin is None:
            twin = environ_twin()
        install_default()
        return cls(
            sqs=twin.function("functions.ingest.app:sqs_handler"),
            api=twin.function(INGEST_API_HANDLER),
            query=twin.function(QUERY_HANDLER),
            kinesis=twin.function("functions.ingest.app:kinesis_handler"),
            twin=twin,
        )

    def invoke(self, name: str, event: dict[str, Any]) -> Any:
        """Invoke a handler with a fresh Lambda context, counting the invocation.

        Parameters
        ----------
        name : str
            ``sqs``, ``kinesis``, ``api`` or ``query``.
        event : dict
            The Lambda event.

        Returns
        -------
        Any
            What the handler returned.
        """
        with self._lock:
            self.invocations[name] += 1
        handler: Handler | None = getattr(self, name)
        if handler is None:
            raise ValueError(f"no {name} handler loaded")
        if hasattr(handler, "context"):  # a LocalFunction: its own context, made when it runs
            return handler(event)
        return handler(event, LambdaContext(function_name=f"dynashard-{name}"))

    def count(self, name: str, invocations: int) -> None:
        """Add invocations made elsewhere (a reading process's) to the count.

        Parameters
        ----------
        name : str
            The handler's name.
        invocations : int
            How many.
        """
        with self._lock:
            self.invocations[name] += invocations

    @property
    def total(self) -> int:
        """int: Invocations so far, all handlers."""
        with self._lock:
            return sum(self.invocations.values())


def api_call(
    handlers: Handlers,
    handler: str,
    method: str,
    resource: str,
    path_parameters: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """Call an API handler with a REST proxy event and decode the JSON answer.

    Parameters
    ----------
    handlers : Handlers
        The handlers.
    handler : str
        ``api`` or ``query``.
    method : str
        HTTP method.
    resource : str
        Resource template (``/counters/{name}``); the path is it with the parameters
        filled in, percent-encoded as a client sends them.
    path_parameters, query, headers : dict, optional
        Request parts.
    body : Any
        JSON body.

    Returns
    -------
    tuple of (int, Any)
        Status code and decoded body (None when empty).
    """
    path = resource
    for name, value in (path_parameters or {}).items():
        path = path.replace("{" + name + "}", quote(value, safe=""))
    event = api_gateway_event(
        method,
        path,
        resource=resource,
        path_parameters=path_parameters,
        query=query,
        headers=headers,
        body=body,
    )
    response = handlers.invoke(handler, event)
    text = response.get("body")
    return int(response["statusCode"]), json.loads(text) if text else None
