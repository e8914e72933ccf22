"""The Lambda kit: what every dynashard Lambda function needs around its domain call.

Needs the ``lambda`` extra (Powertools for AWS Lambda); the layer ships it. One package
for the pieces each function used to copy, one module per concern:

- :mod:`~dynashard.lambda_kit.cache`: per-container caches that register themselves, so
  the sandbox and the tests start every function cold again with one call
  (:func:`reset_all`);
- :mod:`~dynashard.lambda_kit.kit`: the Powertools singletons (Logger, Tracer, Metrics),
  the decorators of an entry point, the settings and facade of a function built once per
  execution environment (:func:`function_kit`), and injected dependencies
  (:class:`Dependency`);
- :mod:`~dynashard.lambda_kit.rest`: the HTTP contract's plumbing: the JSON error body
  (:class:`ErrorResponse`), the one mapping of library errors to HTTP statuses
  (:func:`~dynashard.lambda_kit.rest.register_error_handlers`), OpenAPI responses, path
  decoding;
- :mod:`~dynashard.lambda_kit.bodies`: the request and response bodies of the APIs
  (pydantic models);
- :mod:`~dynashard.lambda_kit.batch`: partial batch responses for SQS, Kinesis and
  DynamoDB streams (:func:`partial_batch_response`);
- :mod:`~dynashard.lambda_kit.settings`: each function's typed settings;
- :mod:`~dynashard.lambda_kit.ingest`: the ingest service behind the three triggers.

The names below are those ``dynashard.lambda_kit`` has always exported; each loads its
module on first use (PEP 562), so that the sandbox and the tests can use the cache
registry without loading Powertools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dynashard._lazy import lazy_exports

if TYPE_CHECKING:
    from dynashard.lambda_kit.batch import (
        NOT_SEEN,
        RecordRejectedError,
        batch_payloads,
        is_fifo_batch,
        partial_batch_response,
    )
    from dynashard.lambda_kit.cache import (
        ContainerCache,
        container_cache,
        register,
        registered_caches,
        reset_all,
    )
    from dynashard.lambda_kit.kit import (
        API_GATEWAY_REST_REQUEST_ID,
        TRACED_MODULES,
        Dependency,
        FunctionKit,
        Handler,
        Powertools,
        function_kit,
        powertools,
    )
    from dynashard.lambda_kit.rest import (
        ERROR_CONTENT,
        ERROR_DESCRIPTIONS,
        JSON_CONTENT_TYPE,
        ErrorResponse,
        exact_json_response,
        json_response,
        not_json,
        openapi_responses,
        path_value,
        routable,
    )

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "NOT_SEEN",
            "RecordRejectedError",
            "batch_payloads",
            "is_fifo_batch",
            "partial_batch_response",
        ),
        "dynashard.lambda_kit.batch",
    ),
    **dict.fromkeys(
        ("ContainerCache", "container_cache", "register", "registered_caches", "reset_all"),
        "dynashard.lambda_kit.cache",
    ),
    **dict.fromkeys(
        (
            "API_GATEWAY_REST_REQUEST_ID",
            "TRACED_MODULES",
            "Dependency",
            "FunctionKit",
            "Handler",
            "Powertools",
            "function_kit",
            "powertools",
        ),
        "dynashard.lambda_kit.kit",
    ),
    **dict.fromkeys(
        (
            "ERROR_CONTENT",
            "ERROR_DESCRIPTIONS",
            "JSON_CONTENT_TYPE",
            "ErrorResponse",
            "exact_json_response",
            "json_response",
            "not_json",
            "openapi_responses",
            "path_value",
            "routable",
        ),
        "dynashard.lambda_kit.rest",
    ),
}

#: Written out for type checkers and linters; a test keeps it equal to ``_EXPORTS``.
__all__ = [
    "API_GATEWAY_REST_REQUEST_ID",
    "ERROR_CONTENT",
    "ERROR_DESCRIPTIONS",
    "JSON_CONTENT_TYPE",
    "NOT_SEEN",
    "TRACED_MODULES",
    "ContainerCache",
    "Dependency",
    "ErrorResponse",
    "FunctionKit",
    "Handler",
    "Powertools",
    "RecordRejectedError",
    "batch_payloads",
    "container_cache",
    "exact_json_response",
    "function_kit",
    "is_fifo_batch",
    "json_response",
    "not_json",
    "openapi_responses",
    "partial_batch_response",
    "path_value",
    "powertools",
    "register",
    "registered_caches",
    "reset_all",
    "routable",
]


#: Loads a public name's module on first use (PEP 562).
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
