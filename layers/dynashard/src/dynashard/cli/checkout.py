"""The commands that need a checkout of the repository: ``sandbox up``, ``demo``, ``bench``.

The sandbox (``sandbox/``) and the benchmarks (``bench/``) are not part of the installed
library: they ship with the repository. :func:`find_checkout` finds it (the current
directory or one of its parents, ``$DYNASHARD_CHECKOUT``, or the checkout an editable
install points into) and puts it on ``sys.path``; without one the commands say so and
exit 1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from dynashard.cli.context import ExitCode, fail

#: Environment variable naming a checkout of the repository.
ENV_CHECKOUT = "DYNASHARD_CHECKOUT"
#: Benchmarks ``dynashard bench NAME`` runs: name -> module.
BENCHMARKS = {
    "hot-key": "bench.hot_key",
    "reads": "bench.reads",
    "ingest": "bench.ingest",
    "cold-start": "bench.cold_start",
    "memory": "bench.memory",
    "emulator-overhead": "bench.emulator_overhead",
    "gsi-reads": "bench.gsi_reads",
    "bucketed-reads": "bench.bucketed_reads",
    # Not a benchmark: bench/REPORT.md from the results the others wrote.
    "report": "bench.report",
}


def is_checkout(path: Path) -> bool:
    """Tell whether ``path`` is the root of a dynashard checkout."""
    return (path / "sandbox" / "scenarios" / "demo" / "__main__.py").is_file() and (
        path / "bench" / "__init__.py"
    ).is_file()


def find_checkout(start: Path | None = None) -> Path | None:
    """Find the repository's root and put it on ``sys.path``.

    Parameters
    ----------
    start : Path, optional
        Where to start looking (default: the current directory).

    Returns
    -------
    Path or None
        The root: ``$DYNASHARD_CHECKOUT`` if set and valid, else the first of ``start``
        and its parents that is one, else the checkout of an editable install of this
        package (``layers/dynashard/src/dynashard`` -> the root); None when none is.
    """
    candidates: list[Path] = []
    if os.environ.get(ENV_CHECKOUT):
        candidates.append(Path(os.environ[ENV_CHECKOUT]).expanduser())
    here = (start or Path.cwd()).resolve()
    candidates.extend([here, *here.parents])
    package = Path(__file__).resolve().parents[1]
    if len(package.parents) > 3:
        candidates.append(package.parents[3])
    for candidate in candidates:
        if is_checkout(candidate):
            root = str(candidate)
            if root not in sys.path:
                sys.path.insert(0, root)
            return candidate
    return None


def require_checkout(command: str) -> Path:
    """Return the checkout, or exit 1 with a message that says what is missing."""
    root = find_checkout()
    if root is None:
        fail(
            ExitCode.ERROR,
            f"dynashard {command} needs a checkout of the dynashard repository (its sandbox/ "
            f"and bench/ packages are not installed with the library): run it from the "
            f"checkout, or set {ENV_CHECKOUT} to its root",
        )
    return root


sandbox_app = typer.Typer(
    help="The local sandbox: DynamoDB Local, the partition emulator and the HTTP gateway.",
    no_args_is_help=True,
)


@sandbox_app.command(
    "up",
    help=(
        "Start DynamoDB Local (with the tables), the partition emulator (--emulator) and "
        "the local HTTP gateway; print the endpoints and the environment to export; stay "
        "up until Ctrl-C. Needs a checkout of the repository and Java."
    ),
    epilog="Example: dynashard sandbox up --emulator --scale 0.05",
)
def sandbox_up(
    port: Annotated[int, typer.Option(help="Gateway port.")] = 8080,
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    ddb_port: Annotated[
        int | None, typer.Option(help="DynamoDB Local port (default: a free one).")
    ] = None,
    db_path: Annotated[
        Path | None, typer.Option(help="Keep the data in this directory (default: in memory).")
    ] = None,
    emulator: Annotated[
        bool, typer.Option(help="Put the partition emulator in front of DynamoDB Local.")
    ] = False,
    emulator_port: Annotated[int, typer.Option(help="Emulator port (0: a free one).")] = 8001,
    scale: Annotated[
        float, typer.Option(help="Emulator: factor on the per-partition limits.")
    ] = 1.0,
) -> None:
    """Run the local sandbox until interrupted."""
    require_checkout("sandbox up")
    from sandbox import serve

    argv = ["--port", str(port), "--host", host]
    if ddb_port is not None:
        argv += ["--ddb-port", str(ddb_port)]
    if db_path is not None:
        argv += ["--db-path", str(db_path)]
    if emulator:
        argv += ["--emulator", "--emulator-port", str(emulator_port), "--scale", str(scale)]
    raise typer.Exit(serve.main(argv))


def demo(ctx: typer.Context) -> None:
    """Run ``python -m sandbox.scenarios.demo`` with the extra arguments; exit with its code."""
    require_checkout("demo")
    from sandbox.scenarios.demo.cli import main as demo_main

    argv = ["--help" if a == "--help-demo" else a for a in ctx.args]
    raise typer.Exit(demo_main(argv))


def bench(
    ctx: typer.Context,
    name: Annotated[
        str,
        typer.Argument(help=f"{', '.join(BENCHMARKS)}, or charts (PNG from bench/results/*.json)."),
    ] = "hot-key",
) -> None:
    """Run one benchmark and chart its JSON; exit with its code."""
    root = require_checkout("bench")
    import importlib

    if name == "charts":
        from bench.charts import render_all

        for path in render_all(root / "bench" / "results"):
            typer.echo(f"wrote {path.relative_to(root)}")
        return
    if name not in BENCHMARKS:
        fail(
            ExitCode.USAGE, f"unknown benchmark {name!r}: choose {', '.join(BENCHMARKS)} or charts"
        )
    import inspect

    module = importlib.import_module(BENCHMARKS[name])
    if inspect.signature(module.main).parameters:
        raise typer.Exit(module.main(list(ctx.args)) or 0)
    sys.argv = [f"dynashard bench {name}", *ctx.args]  # a main() that reads sys.argv
    raise typer.Exit(module.main() or 0)
