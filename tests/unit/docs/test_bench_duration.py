"""One figure for how long ``make bench`` takes: the last run's, as bench/REPORT.md has it.

``python -m bench report`` writes the run's wall time into bench/REPORT.md's first table
(``| **all** |  | **1,039.8** (17.3 min) |``). docs/benchmarks.md quotes it ("the last
``make bench`` took 17.3 minutes"); the Makefile's comment and help, the README and
docs/commands.md give it rounded ("about 17 minutes") and point at that page. A line
that names ``make bench`` (or the Makefile's ``bench:`` target) and says how long it
takes ("about N minutes", "took N minutes" or "took N s") must agree with the report;
a run's own record ("One ``make bench`` run (18.2 min, ...)") is history, not a claim.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
REPORT = ROOT / "bench" / "REPORT.md"
#: Where the duration is stated; each must state it (a dropped mention fails too).
PLACES = ("Makefile", "README.md", "docs/commands.md", "docs/benchmarks.md")
_ALL_ROW = re.compile(r"^\| \*\*all\*\* \|.*\(([\d.]+) min\)", re.M)
_NAMES_BENCH = re.compile(r"make bench(?![-\w])|^bench:")
_CLAIM = re.compile(
    r"\babout (?P<about>\d+) minutes\b|\btook (?P<took_min>[\d.]+) minutes\b"
    r"|\btook (?P<took_s>[\d.,]+) s\b"
)


def report_minutes() -> float:
    """The last run's wall time in minutes, from bench/REPORT.md's **all** row."""
    match = _ALL_ROW.search(REPORT.read_text(encoding="utf-8"))
    assert match, "bench/REPORT.md has no '**all**' row with a time in minutes"
    return float(match.group(1))


def claims(text: str) -> list[tuple[int, str, float, bool]]:
    """``(line, text, minutes, rounded)`` of each duration claim about ``make bench``."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not _NAMES_BENCH.search(line):
            continue
        for match in _CLAIM.finditer(line):
            if match.group("about"):
                found.append((number, match.group(0), float(match.group("about")), True))
            elif match.group("took_min"):
                found.append((number, match.group(0), float(match.group("took_min")), False))
            else:
                seconds = float(match.group("took_s").replace(",", ""))
                found.append((number, match.group(0), seconds / 60, False))
    return found


def test_claims_are_recognised() -> None:
    text = (
        "bench: install ## every benchmark (about 12 minutes)\n"
        "the last `make bench` took 716.5 s (11.9 minutes)\n"
        "One `make bench` run (18.2 min, 2026-11-26)\n"
        "`make bench-hot-key` (about 6 minutes)\n"
    )
    assert claims(text) == [
        (1, "about 12 minutes", 12.0, True),
        (2, "took 716.5 s", 716.5 / 60, False),
    ]


def test_every_mention_of_make_bench_duration_agrees_with_the_report() -> None:
    measured = report_minutes()
    wrong = []
    for place in PLACES:
        found = claims((ROOT / place).read_text(encoding="utf-8"))
        assert found, f"{place} no longer says how long make bench takes"
        for line, said, minutes, rounded in found:
            agrees = round(minutes) == round(measured) if rounded else minutes == measured
            if not agrees:
                wrong.append(f"{place}:{line}: '{said}'")
    assert not wrong, f"bench/REPORT.md says {measured} min; these disagree: {wrong}"
