"""dynashard.__version__ is the installed distribution's, read on first use (issue 39)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import dynashard
from dynashard._version import UNKNOWN_VERSION, installed_version


def test_the_version_is_the_installed_metadatas() -> None:
    assert dynashard.__version__ == importlib.metadata.version("dynashard")


def test_an_uninstalled_distribution_reports_the_fallback() -> None:
    assert installed_version("dynashard-no-such-distribution") == UNKNOWN_VERSION


def test_importing_the_package_does_not_read_the_metadata() -> None:
    code = (
        "import sys, dynashard\n"
        "before = 'importlib.metadata' in sys.modules\n"
        "dynashard.__version__\n"
        "print(before, 'importlib.metadata' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]
