"""Synthesize the stack once per session per parameter set, without bundling.

``aws:cdk:bundling-stacks = []`` is CDK's own switch (``cdk synth --bundling-stacks``)
to skip asset bundling, so these fixtures do not run pip; the real layer build is
exercised by tests/infrastructure/test_layer.py and by ``make synth``.
"""

from __future__ import annotations

import os

os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Template

from infra.app import build_app
from infra.stack import DynashardStack

SKIP_BUNDLING = {"aws:cdk:bundling-stacks": []}
#: The repository's cdk.json, whose context (the recommended feature flags) the CDK CLI
#: gives the app on every ``npx cdk synth``: the fixtures synthesize with it too, so the
#: templates asserted are the ones that deploy.
CDK_JSON = Path(__file__).resolve().parents[2] / "cdk.json"
CDK_JSON_CONTEXT: dict[str, Any] = json.loads(CDK_JSON.read_text(encoding="utf-8"))["context"]

#: A production-like parameter set: every option away from its default.
PROD_CONTEXT: dict[str, Any] = {
    "stage": "prod",
    "snap_start": "true",
    "api_auth": "api_key",
    "contributor_insights_mode": "THROTTLED_KEYS",
    "max_read_request_units": "20000",
    "max_write_request_units": "8000",
    "warm_read_units_per_second": "15000",
    "warm_write_units_per_second": "6000",
    "queue_max_receive_count": "7",
    "kinesis_retry_attempts": "4",
    "max_shards": "64",
    "shrink_utilization": "0.3",
    "shrink_cool_period_s": "3600",
    "write_load_parts": "3",
    "log_retention_days": "90",
    "bucketed_keys": "OPS_LOG=day,THREAT#=month",
    "fifo_ingest_queue": "true",
    # As typed on a command line (-c key_settings=...): JSON text
    "key_settings": json.dumps(
        [
            {
                "key": "DEPARTURES#JFK",
                "strategy": "calculated",
                "attribute": "carrier",
                "shards": 4,
                "max_shards": 16,
            },
            {"key": "OPS_LOG", "max_shards": 8},
        ]
    ),
}


@dataclass
class Synth:
    """One synthesized stack and what tests read from it."""

    stack: DynashardStack
    template: Template
    annotations: Annotations

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return dict(self.template.to_json()["Resources"])

    def of_type(self, cfn_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == cfn_type}

    def logical_id(self, construct: Any) -> str:
        return str(self.stack.get_logical_id(construct.node.default_child))


def _synth(context: dict[str, Any], outdir: Path) -> Synth:
    _, stack = build_app({**CDK_JSON_CONTEXT, **SKIP_BUNDLING, **context}, outdir=str(outdir))
    template = Template.from_stack(stack)
    return Synth(stack=stack, template=template, annotations=Annotations.from_stack(stack))


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The stack with every parameter at its default (stage ``dev``, IAM auth)."""
    return _synth({}, tmp_path_factory.mktemp("cdk-dev"))


@pytest.fixture(scope="session")
def prod(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The stack with :data:`PROD_CONTEXT` (retained tables, API key, caps)."""
    return _synth(PROD_CONTEXT, tmp_path_factory.mktemp("cdk-prod"))
