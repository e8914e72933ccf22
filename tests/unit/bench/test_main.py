"""``python -m bench``: every name runs a module's ``main(argv)``; report and charts.

Moved from tests/unit/cli/test_cli.py when ``dynashard bench`` became ``python -m bench``.
"""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import types
from pathlib import Path

import pytest

from bench import __main__ as bench_main

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", sorted(bench_main.COMMANDS))
def test_every_name_is_a_module_with_main_taking_argv(name: str) -> None:
    module = importlib.import_module(bench_main.COMMANDS[name])
    assert callable(module.main)
    assert "argv" in inspect.signature(module.main).parameters


def test_the_arguments_after_the_name_go_to_the_job_and_its_code_comes_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[str]] = []
    job = types.ModuleType("fake_bench")
    job.main = lambda argv: seen.append(list(argv)) or 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_bench", job)
    monkeypatch.setitem(bench_main.COMMANDS, "reads", "fake_bench")
    assert bench_main.main(["reads", "--quick", "--reps", "2", "--help"]) == 3
    assert seen == [["--quick", "--reps", "2", "--help"]]


def test_an_unknown_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench_main.main(["nope"])
    assert exit_.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_help_lists_every_benchmark_the_report_and_the_charts_without_importing_them() -> None:
    # In a fresh interpreter: --help imports no benchmark (nor the library, nor matplotlib)
    probe = (
        "import sys\n"
        "from bench.__main__ import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith(('bench.', 'dynashard', "
        "'matplotlib', 'sandbox'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    output = result.stdout
    for name in bench_main.BENCHMARKS:
        assert name in output
    assert "  report  write bench/REPORT.md" in output and "  charts  redraw" in output
    assert "LOADED ['bench.__main__']" in output, output


def test_charts_draws_pngs_beside_the_json(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    for name in ("hot_key.json", "reads.json"):
        (results / name).write_text((ROOT / "bench" / "results" / name).read_text())
    assert bench_main.main(["charts", "--results", str(results)]) == 0
    for name in ("hot_key.png", "reads.png"):
        assert (results / name).read_bytes()[:4] == b"\x89PNG"


def test_report_writes_the_report_from_the_results(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    for name in ("ingest.json", "emulator_overhead.json"):
        (results / name).write_text((ROOT / "bench" / "results" / name).read_text())
    out = tmp_path / "REPORT.md"
    assert bench_main.main(["report", "--results", str(results), "--output", str(out)]) == 0
    text = out.read_text()
    assert "## Ingest" in text and "records/s vs put_item loop" in text
    assert "Not run: no current `bench/results/hot_key.json`" in text
    argv = ["report", "--results", str(results), "--output", str(out), "--require-all"]
    assert bench_main.main(argv) == 1
