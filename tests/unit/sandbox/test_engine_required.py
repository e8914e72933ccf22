"""A test that needs an engine fails when the engine is missing; it never skips.

CI that turned green because Java was missing would prove nothing: the integration and
e2e tests must fail the run instead (tests/conftest.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_integration_test_fails_when_java_is_missing(tmp_path: Path) -> None:
    # Given an environment with no java (no JAVA_HOME, nothing on PATH)
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)
    # When one integration test runs there
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
            "tests/integration/test_library.py",
            "-k",
            "test_",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Then the run fails, saying why, rather than skipping to green
    assert run.returncode == 1, run.stdout[-2000:]
    assert "needs Java" in run.stdout
    assert " skipped" not in run.stdout.splitlines()[-1]
