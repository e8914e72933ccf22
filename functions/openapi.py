"""The OpenAPI document of the dynashard HTTP API (ingest and query functions together).

Run ``python -m functions.openapi`` (``make openapi``) to print it. The two functions
serve different routes of one REST API, so their Powertools resolvers' documents are
merged with Powertools' ``OpenAPIMerge``; a route served by both would be an error.
Each route names its ``operationId`` and tag (a generated client's method and module);
here the document gets what no single route knows: the SigV4 security scheme, the
servers (the deployed stage, ``make sandbox``), and every answer the server can send
that a route does not declare itself (API Gateway's 403, 413 and 429; the functions'
500; ``Retry-After`` on each 503).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from aws_lambda_powertools.event_handler.openapi.merge import OpenAPIMerge
from aws_lambda_powertools.event_handler.openapi.models import APIKey, Server, ServerVariable, Tag

from dynashard.lambda_kit import bodies as api
from dynashard.lambda_kit.rest import (
    ERROR_DESCRIPTIONS,
    RETRY_AFTER_HEADER,
    RETRY_AFTER_S,
)
from infra.config import DynashardParameters

#: Title of the merged document.
TITLE = "dynashard API"
#: Version of the API the document describes.
API_VERSION = "0.1.0"
DESCRIPTION = (
    "Adaptive write sharding for DynamoDB hot partitions: write events and counters "
    "(ingest function) and read them back merged over their shards (query function). "
    "Logical keys in a path are percent-encoded (`#` as `%23`). Requests are signed with "
    "AWS Signature Version 4 (the stack's default, API Gateway IAM authorization; "
    "`api_auth=api_key` deploys an API key instead). Invalid input is a 400 whichever "
    "check notices it; every error body is `ErrorResponse`."
)

#: The operations' groups (``tags`` of each route): a generated client's modules.
TAGS = (
    Tag(name="events", description="Write events and read them back in sort-key order"),
    Tag(name="counters", description="Sharded counters: add, read the sum"),
    Tag(name="shards", description="A key's shard metadata: read it, set its strategy and cap"),
    Tag(name="ordered index", description="A key's ordered index (range shards)"),
)

#: The deployed default: API Gateway's IAM authorization, requests signed with SigV4
#: (``x-amazon-apigateway-authtype``, API Gateway's extension for it).
SECURITY_SCHEME = "sigv4"
SECURITY_SCHEMES = {
    SECURITY_SCHEME: APIKey.model_validate(
        {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "AWS Signature Version 4 (service execute-api) of a principal "
            "allowed execute-api:Invoke on the API (API Gateway IAM authorization)",
            "x-amazon-apigateway-authtype": "awsSigv4",
        }
    )
}

#: The default port of ``make sandbox``'s gateway (``python -m sandbox up --port``).
SANDBOX_PORT = 8080
SERVERS = [
    Server(
        url="https://{restApiId}.execute-api.{region}.amazonaws.com/{stage}",
        description="The deployed stack's REST API (the stack's ApiUrl output)",
        variables={
            "restApiId": ServerVariable(default="restApiId", description="The REST API's id"),
            "region": ServerVariable(default="us-east-1", description="The stack's region"),
            "stage": ServerVariable(
                default=DynashardParameters.model_fields["stage"].default,
                description="The stack's stage (`-c stage=...`)",
            ),
        },
    ),
    Server(
        url="http://127.0.0.1:{port}",
        description="`make sandbox`: the stack run locally (no signature checked)",
        variables={"port": ServerVariable(default=str(SANDBOX_PORT))},
    ),
]

#: Answers every operation can get, whoever sends them: API Gateway (403, 429, 413 for a
#: body) or the function (500: a dynashard error, or the function's own
#: misconfiguration).
COMMON_ERRORS: dict[str, str] = {
    "403": "API Gateway refused the request: not signed, or signed by a principal not "
    "allowed execute-api:Invoke (IAM authorization)",
    "429": "API Gateway's stage throttling (the stack's api_rate_limit and api_burst_limit)",
    "500": ERROR_DESCRIPTIONS[500],
}
#: Answers of an operation that takes a body.
BODY_ERRORS: dict[str, str] = {
    "413": "The body is over API Gateway's payload limit, 10 MB",
    "415": "The body is not application/json: `field` is Content-Type",
}
#: A numpydoc section heading: a model's docstring is cut there for its description.
_SECTION = re.compile(
    r"\n\s*(?:Parameters|Attributes|Returns|Raises|Examples|Notes|See Also)\n\s*-{3,}\n"
)


def _merge() -> OpenAPIMerge:
    from functions.ingest.app import app as ingest_app
    from functions.query.app import app as query_app

    merge = OpenAPIMerge(
        title=TITLE,
        version=API_VERSION,
        description=DESCRIPTION,
        tags=list(TAGS),
        servers=SERVERS,
        security_schemes=dict(SECURITY_SCHEMES),
        security=[{SECURITY_SCHEME: []}],
        on_conflict="error",
    )
    for app in (ingest_app, query_app):
        merge.add_schema(json.loads(app.get_openapi_json_schema()))
    return merge


def _plain_descriptions(node: Any) -> None:
    # Descriptions are for a reader of the document, not the docstring's numpydoc sections
    # and examples (doctests): keep what comes before the first section, and Markdown's
    # single backticks for reStructuredText's double ones.
    if isinstance(node, list):
        for value in node:
            _plain_descriptions(value)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                node[key] = _SECTION.split(value, 1)[0].strip().replace("``", "`")
            else:
                _plain_descriptions(value)


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
    # route with the ErrorResponse body and kept. Every 503 carries Retry-After. Bodies
    # parsed by dynashard.lambda_kit.bodies (api.REQUEST_MODELS) join the components here,
    # as Powertools never saw them.
    ref = {"$ref": "#/components/schemas/ErrorResponse"}
    retry_after = {
        RETRY_AFTER_HEADER: {
            "description": "Seconds to wait before sending again what failed",
            "schema": {"type": "integer", "minimum": 0, "example": RETRY_AFTER_S},
            "required": True,
        }
    }
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            errors = dict(COMMON_ERRORS)
            if "requestBody" in operation:
                errors.update(BODY_ERRORS)
            for status, description in errors.items():
                responses.setdefault(
                    status,
                    {"description": description, "content": {"application/json": {"schema": ref}}},
                )
            if "HTTPValidationError" in json.dumps(responses.get("422", {})):
                responses.pop("422")
            invalid = responses.setdefault("400", {"description": ERROR_DESCRIPTIONS[400]})
            _error_body_too(invalid, ref)
            if "503" in responses:
                responses["503"]["headers"] = retry_after
            operation["responses"] = dict(sorted(responses.items()))
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(api.request_schemas())
    # Powertools' own error bodies (and the ValidationError they refer to) go when no
    # answer uses them: a generated client found ResponseValidationError's reference
    # dangling once ValidationError was gone.
    paths = json.dumps(schema["paths"])
    unused = [n for n in ("HTTPValidationError", "ResponseValidationError") if n not in paths]
    for name in unused:
        schemas.pop(name, None)
    if len(unused) == 2:
        schemas.pop("ValidationError", None)
    _plain_descriptions(schema)
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
    return _document_errors(json.loads(_merge().get_openapi_json_schema()))


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
