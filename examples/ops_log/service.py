"""The operation-log service before dynashard: one partition key for every entry.

Its table has the article's single-table layout (``PK`` / ``SK`` strings and a ``GSI1``
on ``GSI1PK`` / ``GSI1SK`` that the service uses for other entities); the log's items carry
no GSI keys. Nothing here imports dynashard.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import boto3

#: The one partition key of every log entry: the hot key.
OPS_LOG: Final = "OPS_LOG"
AGENTS: Final = ("threat_detector", "image_matcher", "price_anomaly", "seller_risk")
SEVERITIES: Final = ("LOW", "MEDIUM", "HIGH")


def iso_ms(at: datetime) -> str:
    """Return ``at`` as JavaScript's ``toISOString()`` does: UTC, milliseconds, ``Z``.

    Examples
    --------
    >>> iso_ms(datetime(2026, 6, 22, 1, 0, 0, 123456, tzinfo=UTC))
    '2026-06-22T01:00:00.123Z'
    """
    utc = at.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def create_table(client: Any, table: str) -> None:
    """Create the service's table (on-demand) and wait until it is active.

    Parameters
    ----------
    client : DynamoDB client
        Any endpoint.
    table : str
        Table name.
    """
    strings = ("PK", "SK", "GSI1PK", "GSI1SK")
    client.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in strings],
        KeySchema=[
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "GSI1",
                "KeySchema": [
                    {"AttributeName": "GSI1PK", "KeyType": "HASH"},
                    {"AttributeName": "GSI1SK", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    client.get_waiter("table_exists").wait(TableName=table)


@dataclass
class OpsLog:
    """The service's log writer and the dashboard's read, as they were.

    Attributes
    ----------
    client : DynamoDB client
        The service's client.
    table : str
        The service's table.
    """

    client: Any
    table: str

    def log(
        self, agent: str, latency_ms: int, severity: str, at: datetime | None = None
    ) -> dict[str, Any]:
        """Write one entry under ``PK = OPS_LOG`` (PutItem; a throttle raises).

        Returns
        -------
        dict
            The item written, in DynamoDB's typed JSON.
        """
        when = at or datetime.now(UTC)
        item = {
            "PK": {"S": OPS_LOG},
            "SK": {"S": f"{iso_ms(when)}#{agent}"},
            "agent": {"S": agent},
            "latencyMs": {"N": str(latency_ms)},
            "aiSeverity": {"S": severity},
        }
        self.client.put_item(TableName=self.table, Item=item)
        return item

    def recent(self, limit: int = 50) -> list[dict[str, Any]]:
        """Return the newest ``limit`` entries of the bare key (the dashboard's read)."""
        response = self.client.query(
            TableName=self.table,
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": {"S": OPS_LOG}},
            ScanIndexForward=False,
            Limit=limit,
        )
        items: list[dict[str, Any]] = response["Items"]
        return items


def fill(log: OpsLog, entries: int, start: datetime, seed: int = 27) -> list[dict[str, Any]]:
    """Write ``entries`` log entries from ``start``, a few milliseconds apart.

    Returns
    -------
    list of dict
        The items written, in order.
    """
    rng = random.Random(seed)
    written = []
    at = start
    for _ in range(entries):
        at += timedelta(milliseconds=rng.randint(1, 50))
        written.append(
            log.log(rng.choice(AGENTS), rng.randint(40, 900), rng.choice(SEVERITIES), at)
        )
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m examples.ops_log.service``: create the table and fill the log."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--endpoint-url", required=True, help="DynamoDB endpoint")
    parser.add_argument("--table", default="ops-service", help="table name")
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--entries", type=int, default=1000, help="log entries to write")
    parser.add_argument("--create", action="store_true", help="create the table first")
    args = parser.parse_args(argv)
    client = boto3.client("dynamodb", endpoint_url=args.endpoint_url, region_name=args.region)
    if args.create:
        create_table(client, args.table)
    written = fill(OpsLog(client, args.table), args.entries, datetime(2026, 6, 22, tzinfo=UTC))
    print(f"{len(written)} entries under PK={OPS_LOG} in {args.table}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
