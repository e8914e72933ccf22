"""Baseline (b) of the cold-start benchmark: Powertools' Logger, boto3, one DynamoDB client.

The client is created at import, outside the handler, as the Lambda Developer Guide
recommends ("Best practices for working with AWS Lambda functions": initialize SDK
clients outside the function handler). Its first invocation makes one DynamoDB call,
a ``GetItem`` on the data table; the endpoint and table come from the variables the
dynashard functions read (:mod:`dynashard.names`), spelled out here so that this module
imports nothing of dynashard.
"""

from __future__ import annotations

import os
from typing import Any

import boto3
from aws_lambda_powertools import Logger

logger = Logger()
client = boto3.client("dynamodb", endpoint_url=os.environ.get("DYNASHARD_DYNAMODB_ENDPOINT"))
TABLE = os.environ.get("DYNASHARD_DATA_TABLE", "dynashard-data")


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Read one item by its key and answer whether it exists.

    Parameters
    ----------
    event : dict
        ``{"pk": str, "sk": str}``: the item's partition and sort key.
    context : LambdaContext
        The Lambda context.

    Returns
    -------
    dict
        ``{"found": bool}``.
    """
    key = {"PK": {"S": str(event.get("pk", "none"))}, "SK": {"S": str(event.get("sk", "none"))}}
    found = "Item" in client.get_item(TableName=TABLE, Key=key)
    logger.info("baseline", extra={"found": found})
    return {"found": found}
