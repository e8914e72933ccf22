"""Deploy checks: checkov and cfn-lint on the synthesized templates, bandit on the code.

Each check fails with the finding's id, resource (or file and line) and message. Each
is also shown able to fail: a copy of the template with a suppression removed, a fix
undone and a bad resource added makes checkov and cfn-lint report exactly those, and a
file with a shell call makes bandit report it.

checkov runs once per session on the dev and prod templates and on the broken copy, in
one process, from its own environment (``.venv-checks``, see pyproject's ``checks``
group), offline: ``--skip-download`` and ``BC_SKIP_MAPPING`` keep it from fetching
policies and guidelines from its vendor's platform, ``CKV_SKIP_PACKAGE_UPDATE_CHECK``
from asking the package index for a newer version, and no ``BC_API_KEY`` reaches it.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint

from infra.constructs.scaler import ON_FAILURE_DESTINATION
from infra.deploy_checks import (
    CFN_LINT_METADATA_KEY,
    CHECKOV_METADATA_KEY,
    MIN_REASON_LENGTH,
    SSE_SQS,
)
from tests.infrastructure.conftest import Synth

pytestmark = pytest.mark.infra

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKOV = REPO_ROOT / ".venv-checks" / "bin" / "checkov"
#: What bandit scans: the library, the functions and the CDK app.
BANDIT_PATHS = ("layers/dynashard/src", "functions", "infra")
#: cfn-lint needs a region for its resource schemas; the stack is region-agnostic.
CFN_LINT_REGIONS = ["us-east-1"]
#: Environment that keeps checkov offline (see the module docstring).
CHECKOV_OFFLINE_ENV = {"BC_SKIP_MAPPING": "TRUE", "CKV_SKIP_PACKAGE_UPDATE_CHECK": "TRUE"}


@pytest.fixture
def synths(dev: Synth, prod: Synth) -> dict[str, Synth]:
    """Both synths by name; named fixtures (not getfixturevalue) keep these tests in the
    xdist group of the synth (tests/conftest.py), so no other worker synthesizes."""
    return {"dev": dev, "prod": prod}


# --- checkov ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckovFinding:
    """One check result of checkov on one resource of one template file."""

    check_id: str
    resource: str
    file: str
    message: str
    comment: str | None = None

    def __str__(self) -> str:
        return f"{self.check_id} {self.resource} ({self.file}): {self.message}"


@dataclass(frozen=True)
class CheckovRun:
    """checkov's results, by template file name."""

    failed: list[CheckovFinding]
    skipped: list[CheckovFinding]
    passed: list[CheckovFinding]
    parsing_errors: list[str]

    def failed_in(self, file: str) -> list[CheckovFinding]:
        return [f for f in self.failed if f.file == file]

    def skipped_in(self, file: str) -> list[CheckovFinding]:
        return [f for f in self.skipped if f.file == file]

    def passed_in(self, file: str) -> list[CheckovFinding]:
        return [f for f in self.passed if f.file == file]


def _finding(raw: dict[str, Any]) -> CheckovFinding:
    return CheckovFinding(
        check_id=raw["check_id"],
        resource=raw["resource"],
        file=Path(raw["file_path"]).name,
        message=raw["check_name"],
        comment=(raw.get("check_result") or {}).get("suppress_comment"),
    )


def run_checkov(files: list[Path]) -> CheckovRun:
    """Run checkov (CloudFormation checks, offline) on template files; return its results."""
    if not CHECKOV.exists():
        pytest.fail(f"{CHECKOV.relative_to(REPO_ROOT)} is missing: run `make install`")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BC_API")}
    env.update(CHECKOV_OFFLINE_ENV)
    command = [str(CHECKOV), "--framework", "cloudformation", "--skip-download", "-o", "json"]
    for file in files:
        command += ["-f", file.name]
    result = subprocess.run(
        command, cwd=files[0].parent, env=env, capture_output=True, text=True, timeout=300
    )
    # 0: no failed check, 1: some failed; anything else is checkov itself failing.
    assert result.returncode in (0, 1), result.stderr[-2000:]
    reports = json.loads(result.stdout)
    results: dict[str, list[Any]] = {}
    for report in reports if isinstance(reports, list) else [reports]:
        for kind, items in report["results"].items():
            results.setdefault(kind, []).extend(items)
    return CheckovRun(
        failed=[_finding(r) for r in results.get("failed_checks", [])],
        skipped=[_finding(r) for r in results.get("skipped_checks", [])],
        passed=[_finding(r) for r in results.get("passed_checks", [])],
        parsing_errors=[str(e) for e in results.get("parsing_errors", [])],
    )


def _resource_id(resources: dict[str, Any], cfn_type: str, prefix: str) -> str:
    (logical_id,) = [
        k for k, v in resources.items() if v["Type"] == cfn_type and k.startswith(prefix)
    ]
    return logical_id


#: The checkov findings the broken copy must produce: (check id, logical id prefix).
BROKEN_FOR_CHECKOV = {
    ("CKV_AWS_27", "IngestQueue"),  # the SSE_SQS skip removed from the ingest queue
    ("CKV_AWS_115", "ScalerFunction"),  # the scaler's reserved concurrency removed
    ("CKV_AWS_116", "ScalerFunction"),  # and its skip for the on-failure destination
    ("CKV_AWS_27", "UnencryptedQueue"),  # a queue added without any encryption
}


def broken_copy(template: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of a template with findings checkov and cfn-lint must report."""
    broken = copy.deepcopy(template)
    resources = broken["Resources"]
    queue = resources[_resource_id(resources, "AWS::SQS::Queue", "IngestQueue")]
    del queue["Metadata"][CHECKOV_METADATA_KEY]
    scaler = resources[_resource_id(resources, "AWS::Lambda::Function", "ScalerFunction")]
    del scaler["Properties"]["ReservedConcurrentExecutions"]
    scaler["Metadata"][CHECKOV_METADATA_KEY]["skip"] = [
        s
        for s in scaler["Metadata"][CHECKOV_METADATA_KEY]["skip"]
        if s["id"] != ON_FAILURE_DESTINATION.id
    ]
    del scaler["Metadata"][CFN_LINT_METADATA_KEY]  # W3005 comes back
    # 43,200 s (12 h) is SQS's largest visibility timeout: cfn-lint E3034.
    resources["UnencryptedQueue"] = {
        "Type": "AWS::SQS::Queue",
        "Properties": {"VisibilityTimeout": 50_000},
    }
    return broken


@pytest.fixture(scope="session")
def checkov_run(dev: Synth, prod: Synth, tmp_path_factory: pytest.TempPathFactory) -> CheckovRun:
    """checkov on dev.template.json, prod.template.json and broken.template.json, once."""
    folder = tmp_path_factory.mktemp("checkov")
    templates = {
        "dev": dev.template.to_json(),
        "prod": prod.template.to_json(),
        "broken": broken_copy(dev.template.to_json()),
    }
    files = []
    for name, template in templates.items():
        path = folder / f"{name}.template.json"
        path.write_text(json.dumps(template))
        files.append(path)
    return run_checkov(files)


@pytest.mark.parametrize("variant", ["dev", "prod"])
def test_checkov_passes_on_the_template(variant: str, checkov_run: CheckovRun) -> None:
    file = f"{variant}.template.json"
    assert checkov_run.parsing_errors == []
    # A run that checked nothing would pass too: the template must have been read.
    assert len(checkov_run.passed_in(file)) > 100
    failed = checkov_run.failed_in(file)
    assert failed == [], "checkov findings:\n" + "\n".join(map(str, failed))


@pytest.mark.parametrize("variant", ["dev", "prod"])
def test_every_checkov_skip_is_applied_with_its_reason(
    variant: str, checkov_run: CheckovRun, synths: dict[str, Synth]
) -> None:
    s: Synth = synths[variant]
    declared = {
        (logical_id, skip["id"])
        for logical_id, resource in s.resources.items()
        for skip in resource.get("Metadata", {}).get(CHECKOV_METADATA_KEY, {}).get("skip", [])
    }
    skipped = checkov_run.skipped_in(f"{variant}.template.json")
    applied = {(f.resource.split(".", 1)[1], f.check_id) for f in skipped}
    # A skip checkov did not use (a typo in an id, a check that now passes) is dead weight.
    assert declared == applied, {"declared only": declared - applied}
    for finding in skipped:
        assert finding.comment and len(finding.comment) >= MIN_REASON_LENGTH, str(finding)


def test_checkov_reports_a_removed_suppression_an_undone_fix_and_a_bad_resource(
    checkov_run: CheckovRun,
) -> None:
    failed = checkov_run.failed_in("broken.template.json")
    found = {(f.check_id, f.resource.split(".", 1)[1]) for f in failed}
    for check_id, prefix in BROKEN_FOR_CHECKOV:
        assert any(c == check_id and r.startswith(prefix) for c, r in found), (check_id, prefix)
    assert len(failed) == len(BROKEN_FOR_CHECKOV), "\n".join(map(str, failed))
    # The failure message names the check, the resource and what is wrong.
    assert any(
        re.fullmatch(
            r"CKV_AWS_27 AWS::SQS::Queue\.UnencryptedQueue \(broken\.template\.json\): .+", str(f)
        )
        for f in failed
    )


@pytest.mark.parametrize("variant", ["dev", "prod"])
def test_queues_skipping_the_kms_check_are_encrypted_with_sse_sqs(
    variant: str, synths: dict[str, Synth]
) -> None:
    s: Synth = synths[variant]
    queues = s.of_type("AWS::SQS::Queue")
    assert len(queues) == 4
    for logical_id, queue in queues.items():
        skips = queue.get("Metadata", {}).get(CHECKOV_METADATA_KEY, {}).get("skip", [])
        assert [sk["id"] for sk in skips] == [SSE_SQS.id], logical_id
        assert queue["Properties"]["SqsManagedSseEnabled"] is True, logical_id


# --- cfn-lint ---------------------------------------------------------------------------


def run_cfn_lint(template: dict[str, Any]) -> list[str]:
    """Return cfn-lint's findings on a template as ``ID path: message`` lines."""
    matches = lint(json.dumps(template), config=ManualArgs(regions=CFN_LINT_REGIONS))
    return [f"{m.rule.id} {'/'.join(map(str, m.path))}: {m.message}" for m in matches]


@pytest.mark.parametrize("variant", ["dev", "prod"])
def test_cfn_lint_passes_on_the_template(variant: str, synths: dict[str, Synth]) -> None:
    s: Synth = synths[variant]
    findings = run_cfn_lint(s.template.to_json())
    assert findings == [], "cfn-lint findings:\n" + "\n".join(findings)


def test_cfn_lint_reports_a_removed_suppression_and_a_bad_resource(dev: Synth) -> None:
    findings = run_cfn_lint(broken_copy(dev.template.to_json()))
    assert len(findings) == 2, findings
    assert any(re.match(r"W3005 Resources/ScalerFunction[0-9A-F]+/DependsOn", f) for f in findings)
    assert any(
        f.startswith("E3034 Resources/UnencryptedQueue/Properties/VisibilityTimeout: ")
        for f in findings
    )


@pytest.mark.parametrize("variant", ["dev", "prod"])
def test_every_cfn_lint_ignore_has_its_reason(variant: str, synths: dict[str, Synth]) -> None:
    s: Synth = synths[variant]
    ignored = 0
    for logical_id, resource in s.resources.items():
        meta = resource.get("Metadata", {}).get(CFN_LINT_METADATA_KEY)
        if meta is None:
            continue
        for rule in meta["config"]["ignore_checks"]:
            ignored += 1
            assert len(meta["reasons"].get(rule, "")) >= MIN_REASON_LENGTH, (logical_id, rule)
    assert ignored == len(s.of_type("AWS::Lambda::Function"))  # W3005, once per function


# --- bandit -----------------------------------------------------------------------------


def run_bandit(*paths: str | Path) -> list[str]:
    """Run bandit on paths; return its findings as ``ID file:line: message`` lines."""
    result = subprocess.run(
        [sys.executable, "-m", "bandit", "-r", *map(str, paths), "-f", "json", "-q"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode in (0, 1), result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["errors"] == [], report["errors"]
    return [
        f"{r['test_id']} {Path(r['filename']).as_posix()}:{r['line_number']}: {r['issue_text']}"
        for r in report["results"]
    ]


def test_bandit_finds_nothing_in_the_library_functions_and_infra() -> None:
    findings = run_bandit(*BANDIT_PATHS)
    assert findings == [], "bandit findings:\n" + "\n".join(findings)


def test_bandit_reports_a_shell_call(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import subprocess\n\n\ndef run(name):\n    subprocess.call('ls ' + name, shell=True)\n"
    )
    findings = run_bandit(bad)
    assert any(f.startswith(f"B602 {bad.as_posix()}:5: ") for f in findings), findings


def _python_files() -> Iterator[Path]:
    for folder in BANDIT_PATHS:
        yield from (REPO_ROOT / folder).rglob("*.py")


def test_every_nosec_names_its_test_and_says_why() -> None:
    """``# nosec BXXX`` on the line; ``# BXXX: reason`` in the comment just above it."""
    marked = 0
    for path in _python_files():
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if "# nosec" not in line:
                continue
            marked += 1
            where = f"{path.relative_to(REPO_ROOT)}:{number + 1}"
            ids = re.findall(r"B\d{3}", line.split("# nosec", 1)[1])
            assert ids, f"{where}: a bare # nosec silences every test"
            above = []
            for prior in reversed(lines[:number]):
                if not prior.strip().startswith("#"):
                    break
                above.insert(0, prior.strip().lstrip("# "))
            reason = " ".join(above)
            for test_id in ids:
                assert re.search(rf"{test_id}: \S.{{30,}}", reason), (
                    f"{where}: no reason for {test_id}"
                )
    assert marked > 0
