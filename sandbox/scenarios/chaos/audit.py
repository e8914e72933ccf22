"""The chaos run's audit: the store, the dead letters, the counters and the reads."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sandbox.harness.dataset import CARRIER_COUNTER, Departure
from sandbox.scenarios.chaos.poison import refusal_reason

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from dynashard import Dynashard
    from sandbox.engines.moto_server import MotoServer
    from sandbox.local_aws.pollers import EventSources
    from sandbox.scenarios.chaos.faults import Faults
    from sandbox.scenarios.chaos.ledger import ReadCheck
    from sandbox.scenarios.chaos.replay import ReplayResult


def stored_ids(client: DynamoDBClient, data_table: str) -> Counter[str]:
    """Count every stored event id of the ``DEPARTURES#`` keys (a full ``Scan``).

    Parameters
    ----------
    client : DynamoDBClient
        DynamoDB Local.
    data_table : str
        The data table.

    Returns
    -------
    Counter
        Event id -> items stored (1 when stored once).
    """
    from dynashard import names

    seen: Counter[str] = Counter()
    kwargs: dict[str, Any] = {
        "TableName": data_table,
        "ProjectionExpression": "#k, #i",
        "ExpressionAttributeNames": {"#k": names.ATTR_KEY, "#i": names.ATTR_ID},
        "ConsistentRead": True,
    }
    while True:
        page = client.scan(**kwargs)
        for item in page["Items"]:
            key = item.get(names.ATTR_KEY, {}).get("S", "")
            if key.startswith("DEPARTURES#"):
                seen[item[names.ATTR_ID]["S"]] += 1
        if "LastEvaluatedKey" not in page:
            return seen
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def read_all_ids(facade: Dynashard, keys: Sequence[str]) -> Counter[str]:
    """Read every event of the keys through the library's read path, counting ids.

    Parameters
    ----------
    facade : Dynashard
        The library on DynamoDB Local.
    keys : sequence of str
        Logical keys.

    Returns
    -------
    Counter
        Event id -> times a read returned it (1 when once).
    """
    from dynashard.planning.reads import MAX_PAGE_LIMIT

    seen: Counter[str] = Counter()
    for key in keys:
        cursor: str | None = None
        while True:
            page = facade.query_events(key, limit=MAX_PAGE_LIMIT, cursor=cursor)
            seen.update(str(item["id"]) for item in page.items)
            cursor = page.cursor
            if cursor is None:
                break
    return seen


def dead_letters(moto: MotoServer, sources: EventSources) -> list[tuple[str, str]]:
    """Collect what ended in the DLQ and the on-failure destination.

    SQS messages are the records themselves; a Kinesis on-failure record names a range
    of sequence numbers on a shard, read back from the stream.

    Parameters
    ----------
    moto : MotoServer
        The server.
    sources : EventSources
        The queues and the stream.

    Returns
    -------
    list of (str, str)
        ``(where, payload)`` with ``where`` ``sqs-dlq`` or ``kinesis-on-failure``.
    """
    sqs, kinesis = moto.client("sqs"), moto.client("kinesis")

    def drain(url: str) -> list[str]:
        bodies: list[str] = []
        while True:
            msgs = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            if not msgs:
                return bodies
            bodies.extend(m["Body"] for m in msgs)
            sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)
                ],
            )

    found = [("sqs-dlq", body) for body in drain(sources.dlq_url)]
    for body in drain(sources.on_failure_url):
        info = json.loads(body)["KinesisBatchInfo"]
        iterator = kinesis.get_shard_iterator(
            StreamName=sources.stream,
            ShardId=info["shardId"],
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            StartingSequenceNumber=info["startSequenceNumber"],
        )["ShardIterator"]
        end = int(info["endSequenceNumber"])
        done = False
        while not done:
            answer = kinesis.get_records(ShardIterator=iterator, Limit=10_000)
            for record in answer["Records"]:
                if int(record["SequenceNumber"]) > end:
                    done = True
                    break
                found.append(("kinesis-on-failure", record["Data"].decode("utf-8", "replace")))
            iterator = answer["NextShardIterator"]
            done = done or not answer["Records"]
    return found


def audit(
    departures: Sequence[Departure],
    result: ReplayResult,
    *,
    direct: Dynashard,
    data_table: str,
    client: DynamoDBClient,
    moto: MotoServer,
    check: ReadCheck,
    faults: Faults,
) -> dict[str, Any]:
    """Check the store, the dead letters, the counters and the reads; build the report.

    Parameters
    ----------
    departures : sequence of Departure
        The good events.
    result : ReplayResult
        What the replay offered.
    direct : Dynashard
        The library on DynamoDB Local (counters).
    data_table : str
        The data table.
    client : DynamoDBClient
        DynamoDB Local.
    moto : MotoServer
        The SQS and Kinesis server.
    check : ReadCheck
        The readers' figures.
    faults : Faults
        What was injected.

    Returns
    -------
    dict
        ``events_offered``, ``events_lost``, ``events_duplicated``, ``poison_offered``,
        ``poison_in_dlq``, ``faults_injected``, ``reads_checked``, ``stale_reads``,
        ``counter_mismatches``, ``recovery_s``, ``checks``, ``ok`` and details.
    """
    stored = stored_ids(client, data_table)
    read = read_all_ids(direct, sorted({d.key for d in departures}))
    good_ids = {d.event["id"] for d in departures}
    lost = sorted(good_ids - set(read))
    duplicated = sorted(i for i, n in read.items() if n > 1)
    unexpected = sorted((set(stored) | set(read)) - good_ids)
    # Design invariant 2: a redelivery after a resize may store an event on two shards;
    # reads collapse the two (identical sort keys), so it counts once above.
    stored_twice = sum(1 for n in stored.values() if n > 1)
    letters = dead_letters(moto, result.sources)
    poison_by_tag = {p.tag: p for p in result.poison}
    in_dlq: dict[str, dict[str, Any]] = {}
    for where, payload in letters:
        tag = next((t for t in poison_by_tag if t in payload), None)
        if tag is None:
            continue  # a good record of a discarded Kinesis range: stored (checked above)
        reason = refusal_reason(payload)
        if reason is not None:
            in_dlq[tag] = {"where": where, "kind": poison_by_tag[tag].kind, "reason": reason}
    expected_counts = Counter(d.carrier for d in departures)
    counters: dict[str, dict[str, int]] = {}
    for carrier, expected in sorted(expected_counts.items()):
        value = direct.get_counter(CARRIER_COUNTER.format(carrier=carrier)).value
        counters[carrier] = {"expected": expected, "stored": int(value)}
    mismatches = sum(1 for c in counters.values() if c["expected"] != c["stored"])
    faults_injected = dict(faults.injected) | {"poison": len(result.poison)}
    checks = {
        "no_event_lost": not lost and good_ids <= set(stored),
        "no_event_duplicated": not duplicated,
        "nothing_unexpected_stored": not unexpected,
        "every_poison_in_dlq_with_reason": len(in_dlq) == len(result.poison),
        "counters_exact": mismatches == 0 and not result.counter_errors,
        "no_stale_read": check.stale_reads == 0 and check.duplicate_reads == 0,
        "reads_checked": check.reads_checked > 0,
        "dynamodb_killed_and_restarted": faults.injected["kill"] >= 1,
        "throttling_storm_throttled": faults.throttled_requests > 0,
        "grown_and_shrunk": faults.injected["grow"] >= 1 and faults.injected["shrink"] >= 1,
    }
    return {
        "ok": all(checks.values()),
        "events_offered": len(departures),
        "events_lost": len(lost),
        "events_duplicated": len(duplicated),
        "events_not_in_storage": len(good_ids - set(stored)),
        "items_stored_twice_collapsed_by_reads": stored_twice,
        "poison_offered": len(result.poison),
        "poison_in_dlq": len(in_dlq),
        "faults_injected": faults_injected,
        "reads_checked": check.reads_checked,
        "stale_reads": check.stale_reads,
        "read_errors": check.read_errors,
        "counter_mismatches": mismatches,
        "recovery_s": max(faults.recovery_s, default=0.0),
        "throttled_requests": faults.throttled_requests,
        "ingest_s": round(result.ingest_s, 1),
        "checks": checks,
        "faults": faults.log,
        "lost_examples": lost[:10],
        "duplicated_examples": duplicated[:10],
        "unexpected_examples": unexpected[:10],
        "stale_examples": check.stale_examples,
        "poison": in_dlq,
        "counters": counters,
        "counter_errors": result.counter_errors[:10],
        "pollers": result.pollers,
    }
