"""cdk.json sets every feature flag the pinned aws-cdk-lib recommends (issue 39).

Without them every ``npx cdk synth`` warned "85 feature flags are not configured", and
the stack was built with the behaviours of CDK's first v2 release instead of the ones
``cdk init`` gives a new app today.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import aws_cdk
import pytest

from tests.infrastructure.conftest import CDK_JSON_CONTEXT, Synth

pytestmark = pytest.mark.infra

#: Flags the CDK CLI never asks about (``OBSOLETE_FLAGS`` of the CLI's ``cdk flags``).
OBSOLETE_FLAGS = {
    "@aws-cdk/core:enableStackNameDuplicates",
    "@aws-cdk/aws-s3:grantWriteWithoutAcl",
    "@aws-cdk/aws-kms:defaultKeyPolicies",
}


def _recommended_flags() -> dict[str, Any]:
    """Return aws-cdk-lib's ``recommended-feature-flags.json`` (what ``cdk init`` writes)."""
    jsii_dir = Path(aws_cdk.__file__).parent / "_jsii"
    (bundle,) = jsii_dir.glob("aws-cdk-lib@*.jsii.tgz")
    with tarfile.open(bundle) as tar:
        member = tar.extractfile("package/recommended-feature-flags.json")
        assert member is not None
        return dict(json.load(member))


def test_cdk_json_sets_every_recommended_flag_of_the_pinned_aws_cdk_lib() -> None:
    # Given the flags the pinned aws-cdk-lib recommends for a new app
    recommended = _recommended_flags()
    assert len(recommended) > 50  # the file was found and read
    # Then cdk.json sets each of them, to its recommended value
    differing = {
        flag: (CDK_JSON_CONTEXT.get(flag, "<unset>"), value)
        for flag, value in recommended.items()
        if CDK_JSON_CONTEXT.get(flag, "<unset>") != value
    }
    assert not differing, f"cdk.json (set, recommended): {differing}"


def test_the_synth_leaves_no_feature_flag_unconfigured(dev: Synth) -> None:
    # Given the cloud assembly of the stack synthesized with cdk.json's context
    outdir = Path(dev.stack.node.root.outdir)  # type: ignore[attr-defined]
    manifest = json.loads((outdir / "manifest.json").read_text())
    (report,) = [
        artifact
        for artifact in manifest["artifacts"].values()
        if artifact["type"] == "cdk:feature-flag-report"
    ]
    flags: dict[str, dict[str, Any]] = report["properties"]["flags"]
    # Then no flag is one the CLI warns about: unset, not obsolete, and with a default
    # other than its recommended value (the CLI's ``FlagOperations.filterNeedsAttention``)
    unconfigured = sorted(
        name
        for name, flag in flags.items()
        if name not in OBSOLETE_FLAGS
        and "userValue" not in flag
        and flag.get("unconfiguredBehavesLike", {}).get("v2", False) != flag.get("recommendedValue")
    )
    assert unconfigured == [], f"{len(unconfigured)} feature flags are not configured"
