"""SnapStart as a stack option for the two API functions (issue 29).

``snap_start`` on (the production-like parameters): the ingest API and query functions
take SnapStart on published versions and the API invokes their alias ``live``; the
queue, stream and scaler functions do not. Off (the default): no version, no alias, and
the API invokes the functions themselves.
"""

from __future__ import annotations

import json
from typing import Any

from infra.constructs.functions import LIVE_ALIAS, DynashardFunction
from infra.stack import DynashardStack

from .conftest import Synth


def _api_functions(stack: DynashardStack) -> list[DynashardFunction]:
    return [stack.ingest.api_function, stack.query.function]


def _other_functions(stack: DynashardStack) -> list[DynashardFunction]:
    return [stack.ingest.queue_function, stack.ingest.stream_function, stack.scaler.function]


def _integration_uris(synth: Synth) -> list[str]:
    methods = synth.of_type("AWS::ApiGateway::Method").values()
    return [json.dumps(m["Properties"]["Integration"]["Uri"]) for m in methods]


def test_snap_start_on_serves_the_api_from_published_versions(prod: Synth) -> None:
    resources = prod.resources
    aliases: dict[str, dict[str, Any]] = prod.of_type("AWS::Lambda::Alias")
    for fn in _api_functions(prod.stack):
        # Each API function takes SnapStart on its published versions
        props = resources[prod.logical_id(fn.function)]["Properties"]
        assert props["SnapStart"] == {"ApplyOn": "PublishedVersions"}
        assert props["Runtime"] == "python3.12"  # SnapStart's first Python runtime
        # behind the alias live, on a version of this function
        assert fn.alias is not None and fn.invoke_target is fn.alias
        alias = aliases[prod.logical_id(fn.alias)]["Properties"]
        assert alias["Name"] == LIVE_ALIAS
        version_id = alias["FunctionVersion"]["Fn::GetAtt"][0]
        version = resources[version_id]
        assert version["Type"] == "AWS::Lambda::Version"
        assert version["Properties"]["FunctionName"] == {"Ref": prod.logical_id(fn.function)}
    # And every API method invokes an alias, never $LATEST of an API function
    uris = _integration_uris(prod)
    alias_ids = {prod.logical_id(fn.alias) for fn in _api_functions(prod.stack) if fn.alias}
    assert uris and all(any(a in uri for a in alias_ids) for uri in uris)
    # And the API may invoke the aliases (the permissions name them)
    permitted = {
        json.dumps(p["Properties"]["FunctionName"])
        for p in prod.of_type("AWS::Lambda::Permission").values()
    }
    assert all(any(a in f for f in permitted) for a in alias_ids)


def test_snap_start_is_only_for_the_api_functions(prod: Synth) -> None:
    for fn in _other_functions(prod.stack):
        props = prod.resources[prod.logical_id(fn.function)]["Properties"]
        assert "SnapStart" not in props
        assert fn.alias is None
    assert len(prod.of_type("AWS::Lambda::Alias")) == 2


def test_snap_start_is_off_by_default(dev: Synth) -> None:
    for fn in _api_functions(dev.stack) + _other_functions(dev.stack):
        assert "SnapStart" not in dev.resources[dev.logical_id(fn.function)]["Properties"]
        assert fn.invoke_target is fn.function
    assert dev.of_type("AWS::Lambda::Alias") == {}
    assert dev.of_type("AWS::Lambda::Version") == {}
