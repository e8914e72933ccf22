"""An existing CDK app that adds dynashard to a DynamoDB table it already has.

The application's table, ``orders``, was created outside this stack (another stack, the
console, another tool) and is written by the application's own code with the dynashard
library (the layer). This stack imports it and adds the :class:`Dynashard` construct:
the shard-metadata table, the scaler with its throttle alarms and sweep, the layer, the
dashboard, and the query function behind a REST API. docs/DEPLOY.md ("Add dynashard to
an existing stack") shows the part between the ``--8<--`` markers, and
tests/infrastructure/test_construct.py synthesizes this app and checks that the page
shows it as it is.

Synthesize it from the repository root (no AWS account needed)::

    npx cdk synth --app ".venv/bin/python -m examples.existing_stack.app"
"""

from __future__ import annotations

from typing import Any

from aws_cdk import App, CfnOutput, Stack
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from infra.config import DynashardParameters
from infra.constructs.dynashard import Dynashard


# --8<-- [start:stack]
class OrdersStack(Stack):
    """The application's stack, with dynashard added for its ``orders`` table."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        # The table the application already has, imported by name with its GSI1
        # (PK/SK and GSI1PK/GSI1SK, the attributes the dynashard library writes).
        orders = dynamodb.Table.from_table_attributes(
            self, "Orders", table_name="orders", global_indexes=["GSI1"]
        )
        dynashard = Dynashard(
            self,
            "Dynashard",
            table=orders,
            parameters=DynashardParameters(stage="prod", max_shards=64),
            with_query=True,  # GET /events, /counters, /shards, /index
            # Enabled on the table and on GSI1 with `aws dynamodb
            # update-contributor-insights`: CloudFormation cannot do it for a table it
            # does not manage, and the scaler finds hot keys only in its reports.
            contributor_insights_enabled=True,
        )
        CfnOutput(self, "MetadataTableName", value=dynashard.tables.metadata_table.table_name)
        CfnOutput(self, "LayerArn", value=dynashard.layer.layer_version_arn)
        if dynashard.api is not None:  # built for the query function
            CfnOutput(self, "ApiUrl", value=dynashard.api.api.url)


# --8<-- [end:stack]


def build_app(context: dict[str, Any] | None = None) -> tuple[App, OrdersStack]:
    """Create the app and its stack, ``orders-prod``, not yet synthesized.

    Parameters
    ----------
    context : dict, optional
        CDK context (the tests pass ``aws:cdk:bundling-stacks`` to skip the layer build).

    Returns
    -------
    tuple of (aws_cdk.App, OrdersStack)
        The app and the stack.
    """
    app = App(context=context)
    return app, OrdersStack(app, "orders-prod")


if __name__ == "__main__":
    build_app()[0].synth()
