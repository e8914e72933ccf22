"""Each function folder is its own Lambda code asset: it must import without its siblings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FUNCTIONS = Path(__file__).resolve().parents[3] / "functions"


@pytest.mark.parametrize(
    ("folder", "handlers"),
    [
        ("ingest", ["api_handler", "sqs_handler", "kinesis_handler"]),
        ("query", ["handler"]),
        ("scaler", ["handler"]),
    ],
)
def test_function_imports_as_top_level_app_module(folder: str, handlers: list[str]) -> None:
    # Given the folder as Lambda unpacks it: app.py at the root, the library on the path,
    # and no `functions` package to fall back on
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["POWERTOOLS_TRACE_DISABLED"] = "1"
    code = (
        "import sys, app\n"
        "assert 'functions' not in sys.modules, 'imported the functions package'\n"
        f"for name in {handlers!r}: assert callable(getattr(app, name)), name\n"
    )
    # When `app` is imported there (the handler string is app.<handler>)
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=FUNCTIONS / folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Then it loads, with every handler the stack names
    assert result.returncode == 0, result.stderr
