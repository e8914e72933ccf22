"""The document schemathesis fuzzes the sandbox with, and its configuration (schemathesis.toml).

``python -m tests.fuzz > fuzz-openapi.json`` writes it; ``tests/integration/test_fuzz_api.py``
and the command line run of docs/api.md ("Fuzzing the API") use the same one.
"""

from __future__ import annotations

from typing import Any

from functions.openapi import openapi_schema


def fuzz_document() -> dict[str, Any]:
    """Return the API's document less what only the API, stored state or AWS can fill.

    ``cursor`` is an opaque token: only one the API signed is valid (a forged one is a
    400, tested in ``tests/unit/functions/test_query.py``); ``attr`` reads a
    ``calculated`` key only, which no generated key is. The security requirement (SigV4)
    is dropped: the sandbox calls the functions directly and does not model API Gateway's
    IAM authorization (it says so at start-up), so a request without a signature is
    served there and refused (403) only when deployed.

    Returns
    -------
    dict
        The OpenAPI document, changed as above.
    """
    document = openapi_schema()
    document.pop("security", None)
    for operations in document["paths"].values():
        for operation in operations.values():
            operation["parameters"] = [
                p
                for p in operation.get("parameters", [])
                if not (p.get("in") == "query" and p.get("name") in ("cursor", "attr"))
            ]
    return document
