"""CDK entry point: ``npx cdk synth`` runs ``python -m infra.app`` (see cdk.json)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import App

from .config import StackParameters
from .stack import DynashardStack


def build_app(
    context: Mapping[str, Any] | None = None, outdir: str | None = None
) -> tuple[App, DynashardStack]:
    """Create the app and its one stack, ``dynashard-<stage>``.

    Parameters
    ----------
    context : mapping, optional
        Extra CDK context (tests pass parameters here; the CLI passes ``-c`` values).
    outdir : str, optional
        Cloud assembly directory; the CLI sets it through the environment.

    Returns
    -------
    tuple of (aws_cdk.App, DynashardStack)
        The app and the stack, not yet synthesized.

    Raises
    ------
    pydantic.ValidationError
        When a context parameter is invalid.
    """
    app = App(context=dict(context) if context else None, outdir=outdir)
    config = StackParameters.from_context(app.node)
    stack = DynashardStack(
        app,
        f"dynashard-{config.stage}",
        config=config,
        description="dynashard: adaptive write sharding for DynamoDB hot partitions",
    )
    return app, stack


def main() -> None:
    """Synthesize the app (the CLI reads the cloud assembly)."""
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()
