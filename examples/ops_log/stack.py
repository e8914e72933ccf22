"""The operation-log service's CDK app, with dynashard added for the table it already has.

The service's table, ``ops-service`` (:mod:`examples.ops_log.service`), was created
outside this stack and keeps its own layout: ``PK`` / ``SK`` strings, ``SK`` JavaScript's
``toISOString()`` then ``#`` and an id, and a ``GSI1`` that the service uses for other
entities. This stack imports it and adds the :class:`Dynashard` construct with that
schema, and lets the role the service runs as write and read the log through the
library. docs/add-to-your-service.md shows the part between the ``--8<--`` markers;
tests/integration/test_guide.py checks that it shows it as it is, and
tests/infrastructure/test_ops_log_stack.py synthesizes this app.

Synthesize it from the repository root (no AWS account needed)::

    npx cdk synth --app ".venv/bin/python -m examples.ops_log.stack"
"""

from __future__ import annotations

from typing import Any

from aws_cdk import App, CfnOutput, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.config import DynashardParameters
from infra.constructs.dynashard import Dynashard


# --8<-- [start:stack]
class OpsServiceStack(Stack):
    """The service's stack, with dynashard added for its ``ops-service`` table."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        # The table the service already has, imported by name. Its GSI1 is the
        # service's own: dynashard's schema names no GSI, so it writes no GSI keys.
        table = dynamodb.Table.from_table_attributes(self, "OpsTable", table_name="ops-service")
        dynashard = Dynashard(
            self,
            "Dynashard",
            table=table,
            parameters=DynashardParameters(
                stage="prod",
                max_shards=64,
                sort_key_codec="iso_ms_then_id",  # SK = toISOString() + "#" + id
                gsi_name="",  # no GSI of dynashard's
                payload="flat",  # an entry's fields are attributes of its item
            ),
            # Enabled with `aws dynamodb update-contributor-insights`: CloudFormation
            # cannot do it for a table it does not manage.
            contributor_insights_enabled=True,
        )
        # The service writes and reads the log with the library, as this role.
        service = iam.Role.from_role_name(self, "ServiceRole", "ops-service")
        dynashard.grant_write(service)  # put_events, in-band growth, the schema check
        dynashard.grant_read(service)  # query_events, shard_info
        CfnOutput(self, "MetadataTableName", value=dynashard.tables.metadata_table.table_name)


# --8<-- [end:stack]


def build_app(context: dict[str, Any] | None = None) -> tuple[App, OpsServiceStack]:
    """Create the app and its stack, ``ops-service-prod``, not yet synthesized.

    Parameters
    ----------
    context : dict, optional
        CDK context (the tests pass ``aws:cdk:bundling-stacks`` to skip the layer build).

    Returns
    -------
    tuple of (aws_cdk.App, OpsServiceStack)
        The app and the stack.
    """
    app = App(context=context)
    return app, OpsServiceStack(app, "ops-service-prod")


if __name__ == "__main__":
    build_app()[0].synth()
