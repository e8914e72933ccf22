"""The REST API: routes, authorization, request validation, usage plan option."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infrastructure.conftest import Synth

pytestmark = pytest.mark.infra

ROUTES = {
    ("POST", "/events"): "ingest",
    ("POST", "/counters/{name}"): "ingest",
    ("GET", "/events"): "query",
    ("GET", "/counters/{name}"): "query",
    ("GET", "/shards/{key}"): "query",
    ("PUT", "/index/{key}/layout"): "ingest",
    ("POST", "/index/{key}"): "ingest",
    ("GET", "/index/{key}"): "query",
    ("PUT", "/shards/{key}/strategy"): "ingest",
    ("PUT", "/shards/{key}/max-shards"): "ingest",
}


def _paths(s: Synth) -> dict[str, str]:
    """Logical id of each API resource -> its full path."""
    resources = s.of_type("AWS::ApiGateway::Resource")
    root_id = s.logical_id(s.stack.api.api)

    def path(rid: str) -> str:
        props = resources[rid]["Properties"]
        parent = props["ParentId"]
        prefix = (
            "" if parent == {"Fn::GetAtt": [root_id, "RootResourceId"]} else path(parent["Ref"])
        )
        return f"{prefix}/{props['PathPart']}"

    return {rid: path(rid) for rid in resources}


def _methods(s: Synth) -> dict[tuple[str, str], dict[str, Any]]:
    paths = _paths(s)
    return {
        (m["Properties"]["HttpMethod"], paths[m["Properties"]["ResourceId"]["Ref"]]): m[
            "Properties"
        ]
        for m in s.of_type("AWS::ApiGateway::Method").values()
    }


def _target(s: Synth, method: dict[str, Any]) -> str:
    uri = str(method["Integration"]["Uri"])
    stack = s.stack
    if s.logical_id(stack.ingest.api_function.function) in uri:
        return "ingest"
    if s.logical_id(stack.query.function.function) in uri:
        return "query"
    return "other"


def test_the_sandbox_gateway_serves_every_route_of_the_template(dev: Synth) -> None:
    # The local gateway built from the twin of the dev template serves exactly the
    # synthesized API's methods, each with the template's function of that method's
    # integration: its name, its role, and serialized as every resolver handler is.
    from sandbox.env_vars import local_twin
    from sandbox.local_aws.gateway import Gateway
    from sandbox.local_aws.lambda_runtime import API_RESOLVER_LOCK, LocalFunction

    twin = local_twin()  # the dev template, synthesized with the twin's switches
    gateway = Gateway(twin=twin)
    function_id = {
        "ingest": dev.logical_id(dev.stack.ingest.api_function.function),
        "query": dev.logical_id(dev.stack.query.function.function),
    }
    deployed = {route: function_id[_target(dev, m)] for route, m in _methods(dev).items()}
    by_name = {twin.function_name(f): f for f in twin.spec.functions}
    served: dict[tuple[str, str], str] = {}
    for route in gateway.routes:
        fn = gateway.handler_for(route.handler)
        assert isinstance(fn, LocalFunction), route
        assert fn._serialize_with is API_RESOLVER_LOCK, route
        fid = by_name.get(fn.name)
        assert fid is not None, f"{route}: {fn.name} is no function of the template"
        assert fn.ref == twin.spec.functions[fid].handler, route
        assert fn.role is twin.role(fid), route
        served[(route.method, route.resource)] = fid
    assert len(served) == len(gateway.routes)  # no (method, resource) served twice
    assert served == deployed


def test_routes_and_their_functions(dev: Synth) -> None:
    methods = _methods(dev)
    assert set(methods) == set(ROUTES)
    for route, fn in ROUTES.items():
        assert methods[route]["Integration"]["Type"] == "AWS_PROXY"
        assert _target(dev, methods[route]) == fn, route


def test_iam_authorization_by_default(dev: Synth) -> None:
    for route, method in _methods(dev).items():
        assert method["AuthorizationType"] == "AWS_IAM", route
        assert not method.get("ApiKeyRequired"), route
    assert not dev.of_type("AWS::ApiGateway::ApiKey")


def test_api_key_with_usage_plan_as_option(prod: Synth) -> None:
    for route, method in _methods(prod).items():
        assert method["ApiKeyRequired"] is True, route
    (plan,) = prod.of_type("AWS::ApiGateway::UsagePlan").values()
    assert plan["Properties"]["Throttle"] == {"BurstLimit": 2000, "RateLimit": 1000}
    assert len(prod.of_type("AWS::ApiGateway::ApiKey")) == 1
    assert len(prod.of_type("AWS::ApiGateway::UsagePlanKey")) == 1


def test_request_validation(dev: Synth) -> None:
    validators = {
        rid: v["Properties"] for rid, v in dev.of_type("AWS::ApiGateway::RequestValidator").items()
    }
    methods = _methods(dev)
    for route, method in methods.items():
        validator = validators[method["RequestValidatorId"]["Ref"]]
        assert validator["ValidateRequestParameters"] is True, route
        if route[0] in ("POST", "PUT"):
            assert validator["ValidateRequestBody"] is True, route
            assert "application/json" in method["RequestModels"], route
    assert methods[("GET", "/events")]["RequestParameters"] == {
        "method.request.querystring.key": True
    }
    assert methods[("GET", "/shards/{key}")]["RequestParameters"] == {
        "method.request.path.key": True
    }
    assert methods[("POST", "/counters/{name}")]["RequestParameters"] == {
        "method.request.path.name": True
    }


def test_ordered_index_routes_are_iam_authorized_and_validated(dev: Synth) -> None:
    # PUT /index/{key}/layout and POST /index/{key} to ingest, GET /index/{key} to query,
    # each SigV4-signed, with its path parameter required and JSON bodies as objects.
    methods = _methods(dev)
    index_routes = [r for r in ROUTES if r[1].startswith("/index/")]
    assert sorted(index_routes) == [
        ("GET", "/index/{key}"),
        ("POST", "/index/{key}"),
        ("PUT", "/index/{key}/layout"),
    ]
    for route in index_routes:
        method = methods[route]
        assert _target(dev, method) == ROUTES[route], route
        assert method["AuthorizationType"] == "AWS_IAM", route
        assert method["RequestParameters"] == {"method.request.path.key": True}, route
        assert ("RequestModels" in method) == (route[0] != "GET"), route


def test_stage_access_logs_tracing_throttling(dev: Synth) -> None:
    (stage,) = dev.of_type("AWS::ApiGateway::Stage").values()
    props = stage["Properties"]
    assert props["StageName"] == "dev"
    assert props["TracingEnabled"] is True
    assert "DestinationArn" in props["AccessLogSetting"]
    (settings,) = props["MethodSettings"]
    assert settings["ThrottlingRateLimit"] == 1000
    assert settings["ThrottlingBurstLimit"] == 2000


def test_post_body_model_is_a_json_object(dev: Synth) -> None:
    (model,) = dev.of_type("AWS::ApiGateway::Model").values()
    assert model["Properties"]["ContentType"] == "application/json"
    assert model["Properties"]["Schema"]["type"] == "object"
