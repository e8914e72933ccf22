"""The synthesized template the local twin runs: ``cdk synth`` of ``infra/``, without bundling.

:func:`synthesized_template` synthesizes the stack the way ``cdk synth`` does
(:func:`infra.app.build_app`), in a child process (jsii starts Node), with three of
CDK's own context switches: ``aws:cdk:bundling-stacks = []`` (no layer build: the
twin runs the library from this checkout), ``aws:cdk:disable-asset-staging`` and
``aws:cdk:enable-asset-metadata`` (each function's ``aws:asset:path`` metadata then
names its source folder, which is how the twin finds the code of a handler, as SAM CLI
does for CDK templates). The template is kept under ``.twin/``, named by a hash of
everything it is synthesized from (``infra/``, the library, ``cdk.json`` and the
context), so a second start reuses it and any change to the stack synthesizes again.

Usage (what the parent runs)::

    python -m sandbox.twin.synth --out FILE [--context JSON]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

#: Repository root (``sandbox/twin/synth.py`` -> ``.``).
REPO_ROOT: Final = Path(__file__).resolve().parents[2]
#: Where synthesized templates are kept, one file per stack source and context.
CACHE_DIR: Final = REPO_ROOT / ".twin"
#: CDK's switches for a template the twin can run (see the module docstring).
TWIN_CONTEXT: Final[dict[str, Any]] = {
    "aws:cdk:bundling-stacks": [],
    "aws:cdk:disable-asset-staging": True,
    "aws:cdk:enable-asset-metadata": True,
}
#: What the template is synthesized from: a change to any of these synthesizes again.
SOURCES: Final = (
    "infra",
    "layers/dynashard/src/dynashard",
    "cdk.json",
    "sandbox/twin/synth.py",
)
#: Seconds a synthesis may take (about 7 s on a 2-core machine).
SYNTH_TIMEOUT_S: Final = 300


class SynthError(RuntimeError):
    """``cdk synth`` of the stack failed; the message carries its output."""


@dataclass(frozen=True)
class SynthesizedTemplate:
    """A synthesized CloudFormation template and where it came from.

    Attributes
    ----------
    path : pathlib.Path
        The template file.
    template : dict
        Its JSON.
    context : dict
        The CDK context it was synthesized with (the twin's switches excluded).
    """

    path: Path
    template: dict[str, Any]
    context: dict[str, Any]

    @property
    def stack_name(self) -> str:
        """str: ``dynashard-<stage>`` (the file's name without ``-<hash>.template.json``)."""
        return self.path.name.rsplit("-", 1)[0]


def source_hash(context: Mapping[str, Any]) -> str:
    """Return a digest of the stack's sources and ``context`` (16 hex digits).

    Parameters
    ----------
    context : mapping
        CDK context.

    Returns
    -------
    str
        SHA-256 over every ``.py``/``.json`` file of :data:`SOURCES` and the context.
    """
    digest = hashlib.sha256(json.dumps(dict(context), sort_keys=True).encode())
    for source in SOURCES:
        root = REPO_ROOT / source
        files = sorted(root.rglob("*")) if root.is_dir() else [root]
        for file in files:
            if file.suffix in {".py", ".json"} and "__pycache__" not in file.parts:
                digest.update(str(file.relative_to(REPO_ROOT)).encode())
                digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def synthesized_template(
    context: Mapping[str, Any] | None = None, *, template: Path | None = None
) -> SynthesizedTemplate:
    """Return the stack's synthesized template, synthesizing it when not kept yet.

    Parameters
    ----------
    context : mapping, optional
        CDK context (stack parameters, as ``cdk synth -c name=value``).
    template : pathlib.Path, optional
        Run this template file instead (synthesized elsewhere with the twin's switches).

    Returns
    -------
    SynthesizedTemplate
        The template.

    Raises
    ------
    SynthError
        When the synthesis fails.
    """
    context = dict(context or {})
    if template is not None:
        return SynthesizedTemplate(template, json.loads(template.read_text()), context)
    stage = str(context.get("stage", "dev"))
    path = CACHE_DIR / f"dynashard-{stage}-{source_hash(context)}.template.json"
    if path not in _READ:
        if not path.exists():
            _synthesize(context, path)
        _READ[path] = json.loads(path.read_text())
    return SynthesizedTemplate(path, copy.deepcopy(_READ[path]), context)


#: Templates read by this process, by path (the path names their sources' hash).
_READ: dict[Path, dict[str, Any]] = {}


def _synthesize(context: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    env = {
        **os.environ,
        "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    command = [
        sys.executable,
        "-m",
        "sandbox.twin.synth",
        "--out",
        str(partial),
        "--context",
        json.dumps(dict(context)),
    ]
    done = subprocess.run(
        command,
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SYNTH_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise SynthError(f"cdk synth failed ({done.returncode}):\n{done.stderr[-4000:]}")
    os.replace(partial, path)  # atomic: concurrent starts read a whole file


def main(argv: Sequence[str] | None = None) -> int:
    """Synthesize the stack with the twin's switches and write its template.

    Parameters
    ----------
    argv : sequence of str, optional
        ``--out FILE [--context JSON]``.

    Returns
    -------
    int
        0.
    """
    import tempfile

    from infra.app import build_app

    parser = argparse.ArgumentParser(prog="python -m sandbox.twin.synth")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--context", default="{}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="twin-cdk-") as outdir:
        app, stack = build_app({**json.loads(args.context), **TWIN_CONTEXT}, outdir=outdir)
        assembly = app.synth()
        template = assembly.get_stack_by_name(stack.stack_name).template
    args.out.write_text(json.dumps(template, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
