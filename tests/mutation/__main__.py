"""Mutation testing of the read and write paths: ``make mutate`` (``python -m tests.mutation``).

The proof of the library is its unit tests and its model (tests/model). This measures how
strong that proof is: mutmut 3 changes one thing at a time in the library's read and write
modules (an operator, a constant, a condition, a returned value, an argument), and runs
the tests that cover the changed function against each such mutant. A mutant the tests
fail on is killed; one they pass on survived: either a test is missing or the change is
equivalent (no observable difference), which tests/mutation/equivalent.toml then says,
with a reason.

How it runs:

1. **Staging.** mutmut names a mutant after the module its path spells, stripping only a
   leading ``src/``, and puts ``mutants/src`` first on ``sys.path``. The library lives in
   ``layers/dynashard/src``, so the run is staged in ``.mutation/``: ``src`` there links
   to the library's sources, ``tests``, ``infra``, ``sandbox``, ``functions`` and
   ``pyproject.toml`` to the repository's. mutmut copies them into ``.mutation/mutants/``
   and the tests import that mutated copy (never the editable install; ``PYTHONPATH`` is
   cleared). Its configuration is ``[tool.mutmut]`` in pyproject.toml.
2. **Generation.** Every mutant of the modules of ``only_mutate`` (a function's mutants sit
   beside it in the copied module, behind a trampoline that calls the one under test).
3. **Sampling.** ``--sample N`` tests N mutants per module: the first N of the module's
   sorted mutant ids shuffled by ``random.Random(f"{seed}:{module}")``, so a seed names
   the sample and a larger sample holds a smaller one (default 20 per module, what 45
   minutes on 2 cores holds; ``--sample 0`` tests every mutant). A run resumes:
   a mutant killed or timed out in an earlier run of the same code is not run again
   unless ``--fresh``; a survivor always is (a test added since may kill it).
4. **The run.** ``mutmut run`` first runs the selected tests once with every function
   traced, recording which tests call which function (cached in ``mutants/`` until the
   code changes), then forks one warm process per mutant (``--max-children`` at a time)
   that runs only the tests calling the mutated function, fastest first, to the first
   failure. A mutant whose tests run past 5 times their traced time is *timed out*; one
   no selected test reaches has *no tests*.
5. **The report.** ``mutation-report.json``: per module the mutants generated, tested,
   killed, timed out, survived, with no tests, equivalent, and the score
   ``(killed + timed out) / (tested - equivalent)`` (a timed-out mutant is detected: the
   suite hangs on it, and CI fails by its timeout; mutmut's own badge counts it so).
   The run fails (exit 1) when a module scores under ``--goal`` (0.90) or has untested
   sampled mutants. ``--survivors FILE`` writes each survivor's id and diff as Markdown.

``--report-only`` rewrites the report from the results in ``.mutation/mutants`` without
running anything; ``--modules`` limits a run to some of the modules (paths relative to
the package, e.g. ``core/merge.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STAGING = ROOT / ".mutation"
LIBRARY_SRC = ROOT / "layers" / "dynashard" / "src"
#: What the staging directory links to (name in .mutation/ -> path in the repository).
LINKS = {
    "src": LIBRARY_SRC,
    "tests": ROOT / "tests",
    "infra": ROOT / "infra",
    "sandbox": ROOT / "sandbox",
    "functions": ROOT / "functions",
    "pyproject.toml": ROOT / "pyproject.toml",
}
EQUIVALENT_FILE = ROOT / "tests" / "mutation" / "equivalent.toml"
REPORT_FILE = ROOT / "mutation-report.json"
GOAL = 0.90
#: Mutants tested per module by default: what 45 minutes on 2 cores holds. A survivor
#: costs every test that calls its function (about 3 minutes of one core for most
#: functions of the reader, writer, merge and keys: the model among them), a killed
#: mutant seconds, and the run starts with a traced and a clean run of the tests (about
#: 6 minutes each on a busy machine). Every mutant (``--sample 0``) takes hours.
DEFAULT_SAMPLE = 20
#: mutmut's exit codes (mutmut.stats.status_by_exit_code) grouped as the report counts them.
KILLED = {1, 3}
TIMED_OUT = {24, -24, 152, 255, 36}
SURVIVED = {0}
NO_TESTS = {5, 33}


def config() -> dict[str, Any]:
    """``[tool.mutmut]`` of pyproject.toml."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    result: dict[str, Any] = data["tool"]["mutmut"]
    return result


def module_paths(selected: list[str] | None) -> list[str]:
    """The staged paths to mutate (``src/dynashard/...``), all or those ``selected`` names."""
    paths: list[str] = list(config()["only_mutate"])
    if not selected:
        return paths
    chosen = []
    for name in selected:
        matches = [p for p in paths if p.endswith("/" + name.lstrip("/"))]
        if len(matches) != 1:
            raise SystemExit(f"--modules {name}: not one of {paths}")
        chosen.append(matches[0])
    return chosen


def stage() -> None:
    """Create .mutation/ with its links (relative, so the tree can move)."""
    STAGING.mkdir(exist_ok=True)
    for name, target in LINKS.items():
        link = STAGING / name
        if link.is_symlink() or link.exists():
            if link.resolve() == target.resolve():
                continue
            link.unlink()
        link.symlink_to(os.path.relpath(target, STAGING))


def mutmut_env() -> dict[str, str]:
    """The environment of mutmut's processes: no PYTHONPATH (it would put another copy of
    the library or the tests within reach)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MUTANT_UNDER_TEST")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


#: Generates the mutants (what ``mutmut run`` does first), without running anything.
#: mutmut has no command for this step alone; these are the functions its ``run`` calls.
GENERATE = """
from mutmut.__main__ import copy_also_copy_files, copy_src_dir, create_mutants
from mutmut.utils.file_utils import setup_source_paths
import os
os.makedirs("mutants", exist_ok=True)
copy_src_dir()
copy_also_copy_files()
setup_source_paths()
stats = create_mutants({children})
print(f"mutants: {{stats.mutated}} files mutated, {{stats.unmodified}} unchanged")
"""


def generate(children: int, log: Path) -> None:
    """Write every mutant of every module of ``only_mutate`` into .mutation/mutants/."""
    code = GENERATE.format(children=children)
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%S')} generating mutants\n")
        out.flush()
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=STAGING,
            env=mutmut_env(),
            check=True,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def load_meta(path: str) -> dict[str, Any]:
    """mutmut's record of a module's mutants: ``exit_code_by_key`` and durations."""
    meta = STAGING / "mutants" / (path + ".meta")
    if not meta.exists():
        return {"exit_code_by_key": {}, "durations_by_key": {}}
    result: dict[str, Any] = json.loads(meta.read_text("utf-8"))
    return result


def module_name(path: str) -> str:
    """``src/dynashard/core/merge.py`` -> ``dynashard.core.merge``."""
    return path.removeprefix("src/").removesuffix(".py").replace("/", ".")


def sample(path: str, ids: list[str], size: int, seed: int) -> list[str]:
    """The mutants of one module to test: all (size 0 or at least as many), or the first
    ``size`` of its sorted ids shuffled by ``random.Random(f"{seed}:{module}")``.

    The samples of one seed nest: a larger one holds every mutant of a smaller one, so a
    run with a larger sample resumes from the results of the smaller.
    """
    ordered = sorted(ids)
    if size <= 0 or size >= len(ordered):
        return ordered
    random.Random(f"{seed}:{module_name(path)}").shuffle(ordered)
    return sorted(ordered[:size])


def equivalents() -> dict[str, str]:
    """Mutant id -> the reason it is equivalent (tests/mutation/equivalent.toml)."""
    if not EQUIVALENT_FILE.exists():
        return {}
    data = tomllib.loads(EQUIVALENT_FILE.read_text("utf-8"))
    listed: dict[str, str] = data.get("equivalent", {})
    return listed


@dataclass
class ModuleResult:
    """One module's counts in the report."""

    module: str
    generated: int
    sampled: int
    counts: Counter[str] = field(default_factory=Counter)
    survivors: list[str] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)
    equivalent: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        """The module's entry of mutation-report.json."""
        tested = self.sampled - self.counts["not checked"]
        detected = self.counts["killed"] + self.counts["timed out"]
        denominator = tested - len(self.equivalent)
        return {
            "generated": self.generated,
            "sampled": self.sampled,
            "tested": tested,
            "killed": self.counts["killed"],
            "timed_out": self.counts["timed out"],
            "survived": self.counts["survived"],
            "no_tests": self.counts["no tests"],
            "other": self.counts["other"],
            "not_checked": self.counts["not checked"],
            "equivalent": len(self.equivalent),
            "score": round(detected / denominator, 4) if denominator > 0 else None,
            # The score of every mutant of the module lies here with 95 % confidence
            # when a sample was tested (Wilson's interval; exact when all were).
            "score_95_interval": wilson(
                detected, denominator, exact=self.sampled == self.generated
            ),
            "mutant_seconds": round(self.seconds, 1),
            "survivors": self.survivors,
        }


def wilson(detected: int, tested: int, *, exact: bool) -> list[float] | None:
    """Wilson's 95 % score interval of a proportion ``detected / tested`` of a sample."""
    if tested <= 0:
        return None
    p = detected / tested
    if exact:
        return [round(p, 4), round(p, 4)]
    z = 1.959964
    centre = (p + z * z / (2 * tested)) / (1 + z * z / tested)
    half = z * math.sqrt(p * (1 - p) / tested + z * z / (4 * tested * tested))
    half /= 1 + z * z / tested
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def status(code: int | None) -> str:
    """The report's name for one of mutmut's exit codes."""
    if code is None:
        return "not checked"
    if code in KILLED:
        return "killed"
    if code in TIMED_OUT:
        return "timed out"
    if code in SURVIVED:
        return "survived"
    if code in NO_TESTS:
        return "no tests"
    return "other"


def collect(paths: list[str], size: int, seed: int) -> list[ModuleResult]:
    """Each module's counts over its sample, from mutmut's records."""
    listed = equivalents()
    results = []
    for path in paths:
        meta = load_meta(path)
        codes: dict[str, int | None] = meta["exit_code_by_key"]
        chosen = sample(path, list(codes), size, seed)
        result = ModuleResult(module=module_name(path), generated=len(codes), sampled=len(chosen))
        for mutant in chosen:
            state = status(codes[mutant])
            result.seconds += meta["durations_by_key"].get(mutant, 0.0)
            if state in ("survived", "no tests") and mutant in listed:
                result.equivalent.append(mutant)
                continue
            result.counts[state] += 1
            if state in ("survived", "no tests", "other"):
                result.survivors.append(mutant)
                result.states[mutant] = state
        results.append(result)
    return results


def to_run(paths: list[str], size: int, seed: int, fresh: bool) -> list[str]:
    """The sampled mutants to run: those without a result, or whose result is stale.

    A survivor is always run again: its result was got from the tests of that day, and a
    test added since (to kill it) is only seen by running it again; a killed or timed-out
    result stands while its function is unchanged (mutmut regenerates a changed function's
    mutants without a result). With ``fresh``, every sampled mutant is run.
    """
    names = []
    for path in paths:
        codes: dict[str, int | None] = load_meta(path)["exit_code_by_key"]
        for mutant in sample(path, list(codes), size, seed):
            if fresh or codes[mutant] is None or codes[mutant] in SURVIVED:
                names.append(mutant)
    return names


def run(names: list[str], children: int, log: Path) -> int:
    """``mutmut run`` on ``names`` in the staging directory; its output goes to ``log``."""
    command = [str(Path(sys.executable).with_name("mutmut")), "run", "--max-children"]
    command += [str(children), *names]
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%S')} mutmut run: {len(names)} mutants\n")
        out.flush()
        return subprocess.run(
            command, cwd=STAGING, env=mutmut_env(), stdout=out, stderr=subprocess.STDOUT
        ).returncode


def diffs(names: list[str]) -> dict[str, str]:
    """Each mutant's diff against the original function (``mutmut show``), in one process."""
    code = (
        "import json, sys\n"
        "from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant\n"
        "out = {}\n"
        "for name in json.load(sys.stdin):\n"
        "    out[name] = get_diff_for_mutant(name, path=find_mutant(name).path)\n"
        "json.dump(out, sys.stdout)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=STAGING,
        env=mutmut_env(),
        input=json.dumps(names),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, str] = json.loads(done.stdout)
    return result


def write_survivors(results: list[ModuleResult], target: Path) -> None:
    """Markdown: per module, each survivor's id and diff (what a killing test must see)."""
    lines = [
        "# Surviving mutants",
        "",
        "Written by `python -m tests.mutation --survivors FILE` (tests/mutation/__main__.py):",
        "each mutant the tests passed on, with the change it makes. A survivor is killed by",
        "a test that fails on it, or listed in tests/mutation/equivalent.toml with the reason",
        "it cannot be told apart.",
        "",
    ]
    lines += [
        "| module | generated | tested | killed | timed out | survived | no tests | score |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for result in results:
        m = result.as_json()
        score = "-" if m["score"] is None else f"{m['score']:.0%}"
        if m["score_95_interval"] and m["sampled"] < m["generated"]:
            low, high = m["score_95_interval"]
            score += f" (95 %: {low:.0%}-{high:.0%})"
        lines.append(
            f"| {result.module} | {m['generated']} | {m['tested']} | {m['killed']} | "
            f"{m['timed_out']} | {m['survived']} | {m['no_tests']} | {score} |"
        )
    lines.append("")
    every = diffs([name for r in results for name in r.survivors])
    for result in results:
        if not result.survivors:
            continue
        lines += [f"## {result.module} ({len(result.survivors)})", ""]
        for name in result.survivors:
            body = "\n".join(
                line for line in every[name].splitlines() if not line.startswith(("---", "+++"))
            )
            title = f"### `{name}` ({result.states[name]})"
            lines += [title, "", "```diff", body.strip("\n"), "```", ""]
    target.write_text("\n".join(lines), encoding="utf-8")


def report(results: list[ModuleResult], settings: dict[str, Any], goal: float) -> bool:
    """Write mutation-report.json; print a table; True when every module meets the goal."""
    modules = {r.module: r.as_json() for r in results}
    passed = all(
        m["score"] is not None and m["score"] >= goal and m["not_checked"] == 0
        for m in modules.values()
    )
    document = {"goal": goal, "passed": passed, **settings, "modules": modules}
    REPORT_FILE.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(
        f"{'module':38} {'gen':>5} {'tested':>6} {'killed':>6} {'t/o':>4} {'surv':>5} "
        f"{'none':>5} {'equiv':>5} {'score':>6}"
    )
    for name, m in modules.items():
        score = "-" if m["score"] is None else f"{m['score']:.1%}"
        print(
            f"{name:38} {m['generated']:5} {m['tested']:6} {m['killed']:6} {m['timed_out']:4} "
            f"{m['survived']:5} {m['no_tests']:5} {m['equivalent']:5} {score:>6}"
        )
    print(f"{REPORT_FILE.name}: {'every module' if passed else 'NOT every module'} >= {goal:.0%}")
    return passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.mutation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--modules", nargs="+", help="e.g. core/merge.py (default: all)")
    parser.add_argument(
        "--sample",
        type=int,
        default=DEFAULT_SAMPLE,
        help=f"mutants per module (default {DEFAULT_SAMPLE}; 0: all)",
    )
    parser.add_argument("--seed", type=int, default=38, help="the sample's seed")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--fresh", action="store_true", help="rerun mutants already run")
    parser.add_argument("--report-only", action="store_true", help="run nothing")
    parser.add_argument("--goal", type=float, default=GOAL)
    parser.add_argument("--survivors", type=Path, help="write the survivors' diffs (Markdown)")
    args = parser.parse_args(argv)

    paths = module_paths(args.modules)
    started = time.monotonic()
    stage()
    log = STAGING / "mutmut.log"
    if not args.report_only:
        generate(args.max_children, log)
        names = to_run(paths, args.sample, args.seed, args.fresh)
        print(f"running {len(names)} mutants (log: {log.relative_to(ROOT)})", flush=True)
        if names and run(names, args.max_children, log) != 0:
            print(f"mutmut run failed: see {log.relative_to(ROOT)}", file=sys.stderr)
            return 2
    results = collect(paths, args.sample, args.seed)
    settings = {
        "tool": "mutmut 3 (pyproject.toml [tool.mutmut])",
        "sample_per_module": args.sample or "all",
        "seed": args.seed,
        "wall_seconds": round(time.monotonic() - started, 1),
        "score": "(killed + timed_out) / (tested - equivalent)",
    }
    passed = report(results, settings, args.goal)
    if args.survivors:
        write_survivors(results, args.survivors)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
