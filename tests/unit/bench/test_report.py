"""bench.report: REPORT.md from small synthetic benchmark JSONs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench import report

#: An absolute POSIX path: a slash starting a word, followed by a name.
ABSOLUTE = re.compile(r"(^|[\s(`\[])/[A-Za-z_.]")
MACHINE = {
    "cpus": 2,
    "python": "3.11.7",
    "loadavg_start": [1.0, 2.0, 3.0],
    "loadavg_end": [1.5, 2.0, 3.0],
}


def emulator_doc(in_process_ms: float = 1.1) -> dict[str, Any]:
    measured = round(in_process_ms / 1.0, 3)
    return {
        "benchmark": "emulator_overhead",
        "date": "2026-11-24T12:00:00Z",
        "machine": MACHINE,
        "operations": {
            "Query": {
                "direct": {"requests": 10, "median_ms": 1.0, "p90_ms": 2.0, "ratio": 1.0},
                "in_process": {"requests": 10, "median_ms": in_process_ms, "p90_ms": 2.2},
            }
        },
        "targets": {
            "in_process_query_ratio": {"target": 1.2, "measured": measured, "met": measured <= 1.2}
        },
        "total_wall_s": 12.5,
    }


def ingest_doc() -> dict[str, Any]:
    return {
        "benchmark": "ingest",
        "date": "2026-11-24T12:10:00Z",
        "machine": {
            "cpus": 2,
            "python": "3.11.7",
            "load_average_1m": [0.5, 0.7],
            "platform": "Linux-x86_64",
        },
        "runs": [
            {
                "backend": "dynamodb-local",
                "batch_size": 1000,
                "records_per_s": 3000.0,
                "baseline_records_per_s": 750.0,
                "speedup": 4.0,
                "cpu_ms_per_record": 0.2,
                "baseline_cpu_ms_per_record": 0.8,
            }
        ],
        "targets": {
            "speedup_at_batch_1000_dynamodb-local": {
                "target": ">= 5.0",
                "measured": 4.0,
                "met": False,
            }
        },
        "total_wall_s": 30.0,
    }


def write(results: Path, name: str, doc: dict[str, Any]) -> None:
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    path = tmp_path / "bench" / "results"
    write(path, "emulator_overhead", emulator_doc())
    write(path, "ingest", ingest_doc())
    (path / "emulator_overhead.png").write_bytes(b"\x89PNG\r\n")
    return path


def run(results: Path, *extra: str) -> tuple[int, str]:
    out = results.parent / "REPORT.md"
    code = report.main(["--results", str(results), "--output", str(out), *extra])
    return code, out.read_text(encoding="utf-8")


def section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no section {title!r}"
    return match.group(1)


def test_a_missing_benchmark_is_not_run_and_fails_require_all(results: Path) -> None:
    code, text = run(results)
    assert code == 0
    assert "Not run: no current `bench/results/hot_key.json`" in section(text, "Hot key")
    code, _ = run(results, "--require-all")
    assert code == 1


def test_require_all_passes_when_every_benchmark_ran(results: Path) -> None:
    for b in report.BENCHMARKS:
        if not (results / f"{b.name}.json").exists():
            write(results, b.name, {"benchmark": b.name, "date": "2026-11-24T12:00:00Z"})
    code, text = run(results, "--require-all")
    assert code == 0
    assert "Not run" not in text


def test_a_missed_target_shows_its_margin(results: Path) -> None:
    _, text = run(results)
    ingest = section(text, "Ingest")
    assert "`speedup_at_batch_1000_dynamodb-local`: 4 (target >= 5.0)" in ingest
    assert "**missed**: 1 under the bound of 5 (20 %)" in ingest
    # The summary lists it too, and counts the met ones.
    summary = section(text, "Summary")
    assert "| ingest | speedup_at_batch_1000_dynamodb-local | >= 5.0 | 4 | **missed**" in summary
    assert "1 of 7 targets met." in summary  # the emulator's; five benchmarks not run


def test_a_bare_number_target_is_a_maximum(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write(results, "emulator_overhead", emulator_doc(in_process_ms=1.5))
    _, text = run(results)
    line = next(line for line in text.splitlines() if "`in_process_query_ratio`" in line)
    assert "1.5 (target <= 1.2)" in line
    assert "0.3 over the bound of 1.2 (25 %)" in line


def test_figures_are_ratios_against_the_same_runs_baseline(results: Path) -> None:
    _, text = run(results)
    ingest = section(text, "Ingest")
    row = next(line for line in ingest.splitlines() if line.startswith("| dynamodb-local"))
    # 3000 / 750 records/s; 0.2 / 0.8 CPU ms per record.
    assert "| 4.00x |" in row and "| 0.25x |" in row
    emulator = section(text, "Emulator overhead")
    assert "| Query | in_process | 1.10x | 1.10x |" in emulator


def test_chart_link_is_relative_and_no_absolute_path_appears(results: Path) -> None:
    _, text = run(results)
    assert "![Emulator overhead chart](results/emulator_overhead.png)" in text
    assert "ingest.png" not in text  # no chart, no link
    assert str(results.parent) not in text
    assert not ABSOLUTE.search(text)


def test_header_has_machine_load_and_wall_times(results: Path) -> None:
    _, text = run(results)
    assert "Machine: 2 CPUs, Python 3.11.7, Linux-x86_64." in text
    loads = "1.00 / 2.00 / 3.00 -> 1.50 / 2.00 / 3.00"
    assert f"| Emulator overhead | 2026-11-24T12:00:00Z | 12.5 | {loads} |" in text
    assert "| Ingest | 2026-11-24T12:10:00Z | 30.0 | 0.50 -> 0.70 (1 min) |" in text
    assert "**42.5**" in text


def test_since_treats_older_results_as_not_run(results: Path) -> None:
    code, text = run(results, "--since", "2026-11-24T12:05:00Z", "--require-all")
    assert code == 1
    assert "Not run" in section(text, "Emulator overhead")
    assert "Not run" not in section(text, "Ingest")


def test_demo_elapsed_against_ten_minutes(results: Path, tmp_path: Path) -> None:
    demo = tmp_path / "demo-report.json"
    demo.write_text(
        json.dumps(
            {
                "ok": True,
                "events": 336776,
                "elapsed_s": 660.0,
                "first_act": {"ok": True, "elapsed_s": 300.0},
                "second_act": {"ok": True, "elapsed_s": 350.0},
            }
        ),
        encoding="utf-8",
    )
    _, text = run(results, "--demo", str(demo))
    part = section(text, "Demo")
    assert "| whole run | 660.0 | 1.10x | yes |" in part
    assert "| first act | 300.0 | 0.50x | yes |" in part
    assert "**missed**: 60 over the bound of 600 (10 %)" in part
    assert str(tmp_path) not in text


def test_committed_results_render_every_section() -> None:
    # The JSON committed under bench/results: every section renders without error.
    docs = report.load(report.RESULTS)
    text = report.render(docs, report.RESULTS, report.REPORT)
    for b in report.BENCHMARKS:
        assert f"## {b.title}" in text
    assert str(report.ROOT) not in text
    assert not ABSOLUTE.search(text)


def test_a_result_of_another_shape_is_reported_not_fatal(results: Path) -> None:
    write(results, "hot_key", {"benchmark": "hot_key", "runs": [{"mode": "naive"}]})
    code, text = run(results)
    assert code == 0
    assert "Could not read `hot_key.json`'s figures (KeyError" in section(text, "Hot key")
    assert "| hot_key | (all) |  | unreadable | **missed**: unreadable result |" in text


def test_a_file_that_is_not_json_is_unreadable_not_absent(results: Path) -> None:
    # Given a result cut short (a benchmark killed while writing it)
    (results / "hot_key.json").write_text('{"benchmark": "hot_key", "runs": [', encoding="utf-8")
    code, text = run(results)
    # Then the report says why it could not be read, not that the benchmark did not run
    hot_key = section(text, "Hot key")
    assert "Could not read `hot_key.json` (JSONDecodeError:" in hot_key
    assert "Not run" not in hot_key
    assert "| hot_key | (all) |  | unreadable | **missed**: unreadable file |" in text
    assert code == 0
    # And --require-all fails on it, as on a missing one
    code, _ = run(results, "--require-all")
    assert code == 1


def test_a_missed_read_or_cold_start_target_says_why_from_the_same_runs_figures(
    results: Path,
) -> None:
    # Given a reads result whose p50 target is missed above its fan-out floor, and a
    # cold-start result missed by a handler's first call
    write(
        results,
        "reads",
        {
            "targets": {
                "shards": 32,
                "p50_over_unsharded_max": 1.5,
                "p50_over_unsharded": {"day": 3.1, "month": 1.2},
                "fanout_floor_p50_over_unsharded": {"day": 2.9, "month": 3.0},
            },
            "runs": [],
        },
    )
    write(
        results,
        "cold_start",
        {
            "baselines": {"boto3": {"import_ms": 200.0, "first_invoke_ms": 10.0}},
            "runs": [
                {"handler": "ingest.sqs_handler", "import_ms": 210.0, "first_invoke_ms": 150.0}
            ],
            "targets": {
                "ratio_vs_boto3[ingest.sqs_handler]": {
                    "target": 1.3,
                    "measured": 1.71,
                    "met": False,
                }
            },
        },
    )
    _, text = run(results)
    summary = section(text, "Summary")
    # Then each missed row gives its reason with that run's figures; a met one has none
    day = next(line for line in summary.splitlines() if "[day@32]" in line)
    assert "Why: the fan-out floor of this run" in day and "is 2.90 x unsharded" in day
    month = next(line for line in summary.splitlines() if "[month@32]" in line)
    assert month.endswith("| met |")
    sqs = next(line for line in summary.splitlines() if "ingest.sqs_handler" in line)
    assert "Why: the first call takes 150.0 ms against the baseline's 10.0" in sqs
    assert "the import takes 210.0 ms against 200.0" in sqs
