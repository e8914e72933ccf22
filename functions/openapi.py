"""The OpenAPI document of the dynashard HTTP API (ingest and query functions together).

Run ``python -m functions.openapi`` (``make openapi``) to print it. The two functions
serve different routes of one REST API, so their Powertools resolvers' documents are
merged with Powertools' ``OpenAPIMerge``; a route served by both would be an error.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from aws_lambda_powertools.event_handler.openapi.merge import OpenAPIMerge

from dynashard.lambda_kit import bodies as api
from dynashard.lambda_kit.rest import ERROR_DESCRIPTIONS

#: Title of the merged document.
TITLE = "dynashard API"
#: Version of the API the document describes.
API_VERSION = "0.1.0"
DESCRIPTION = (
    "Adaptive write sharding for DynamoDB hot partitions: write events and counters "
    "(ingest function) and read them back merged over their shards (query function). "
    "Logical keys in a path are percent-encoded (`#` as `%23`)."
)


def _merge() -> OpenAPIMerge:
    from functions.ingest.app import app as ingest_app
    from functions.query.app import app as query_app

    merge = OpenAPIMerge(
        title=TITLE, version=API_VERSION, description=DESCRIPTION, on_conflict="error"
    )
    for app in (ingest_app, query_app):
        merge.add_schema(json.loads(app.get_openapi_json_schema()))
    return merge


def _error_body_too(response: dict[str, Any] | None, ref: dict[str, str]) -> None:
    # A 400 documented with its own body (POST /events: the events' fates) can also be
    # the error body itself (a body that is not UTF-8, nested past the parser).
    if response is None:
        return
    content = response.setdefault("content", {}).setdefault("application/json", {})
    schema = content.get("schema")
    if schema is None:
        content["schema"] = ref
    elif schema != ref and "anyOf" not in schema:
        content["schema"] = {"anyOf": [schema, ref]}


def _document_errors(schema: dict[str, Any]) -> dict[str, Any]:
    # Powertools documents its own 422 body (HTTPValidationError) on every validated
    # route; both functions answer invalid input, whichever layer notices it, with 400
    # and {"message", "field", "errors"} (dynashard.lambda_kit.rest.INVALID_INPUT_STATUS).
    # A route's own 422 (an Idempotency-Key reused with another body) is declared by the
    # route with the ErrorResponse body and kept. Bodies parsed by
    # dynashard.lambda_kit.bodies (api.REQUEST_MODELS) join the components here, as
    # Powertools never saw them.
    ref = {"$ref": "#/components/schemas/ErrorResponse"}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            if "requestBody" in operation:
                responses["415"] = {
                    "description": "The body is not application/json: `field` is Content-Type",
                    "content": {"application/json": {"schema": ref}},
                }
            if "HTTPValidationError" in json.dumps(responses.get("422", {})):
                responses.pop("422")
            invalid = responses.setdefault("400", {"description": ERROR_DESCRIPTIONS[400]})
            _error_body_too(invalid, ref)
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(api.request_schemas())
    if "HTTPValidationError" not in json.dumps(schema["paths"]):
        schemas.pop("HTTPValidationError", None)
    return schema


def openapi_schema() -> dict[str, Any]:
    """Build the merged OpenAPI document.

    Returns
    -------
    dict
        The OpenAPI 3.1 document with every route of both functions.

    Raises
    ------
    aws_lambda_powertools.event_handler.openapi.exceptions.OpenAPIMergeError
        If both functions declare the same method and path.
    """
    return _document_errors(_merge().get_openapi_schema())


def openapi_json() -> str:
    """Build the merged OpenAPI document as indented JSON.

    Returns
    -------
    str
        JSON text of :func:`openapi_schema`.
    """
    return json.dumps(openapi_schema(), indent=2)


def main() -> int:
    """Print the OpenAPI document to standard output.

    Returns
    -------
    int
        Exit status 0.
    """
    sys.stdout.write(openapi_json() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
