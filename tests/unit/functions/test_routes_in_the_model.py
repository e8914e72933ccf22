"""Every parameter of every route is in the model's docstring (issue 38).

The routes are not drawn by the model of the library (``tests/model/machine.py``): each
maps its parameters onto one facade call, tested in this folder. The model's docstring
section "Public options and how the model covers them" lists each route's parameters
(query, path, header, and the top-level properties of its body) with that reason and
the tests; this test reads the OpenAPI document (``python -m functions.openapi``) and
fails when a parameter is missing from the section, or listed there but gone.
"""

from __future__ import annotations

import json

from tests.unit.library.test_model_options import Options, documented


def route_options() -> Options:
    """(``METHOD /path``, parameter or top-level body property) of every route."""
    from functions import openapi

    document = json.loads(openapi.openapi_json())
    schemas = document["components"]["schemas"]
    found: Options = set()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if not isinstance(operation, dict):
                continue
            subject = f"{method.upper()} {path}"
            names = [p["name"] for p in operation.get("parameters", [])]
            body = operation.get("requestBody", {}).get("content", {})
            for content in body.values():
                schema = content["schema"]
                for ref in [schema, *schema.get("oneOf", []), *schema.get("anyOf", [])]:
                    if "$ref" in ref:
                        names += list(schemas[ref["$ref"].rsplit("/", 1)[1]]["properties"])
            found |= {(subject, name) for name in names}
            if not names:
                found.add((subject, ""))
    return found


def test_every_route_parameter_is_listed_with_its_reason() -> None:
    actual = route_options()
    listed = {e for e in documented() if e[0].split(" ")[0] in ("GET", "POST", "PUT", "DELETE")}
    missing, stale = sorted(actual - listed), sorted(listed - actual)
    assert not missing, f"route parameters missing from the model's docstring: {missing}"
    assert not stale, f"route parameters listed in the model's docstring that do not exist: {stale}"
