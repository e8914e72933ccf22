"""The moto fixture of the CLI's tests (``aws``: the project's tables, the environment cleared)."""

from tests.unit.cli.test_cli import aws  # noqa: F401  (shared with test_aws_cli_style)
