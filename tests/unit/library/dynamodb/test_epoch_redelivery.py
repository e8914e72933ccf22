"""A redelivery of a stored ``epoch_ms_number`` event is acknowledged (issue 38, bug 8).

The sort key is the millisecond alone, so each item is a conditional put and an event
whose millisecond is taken moves to another shard. After a shrink, or at a writer
whose cached count is older, a redelivery's shards (those of the count it sees) may
not include the one its event went to: when they all held other events of that
millisecond, the event already stored was refused as permanent ("the event was not
written"), sent to the DLQ or answered 400, although every read returned it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from dynashard import Dynashard, DynashardConfig
from dynashard.core.strategies import Strategy, shard_for
from dynashard.model import Event
from infra.table_specs import METADATA_TABLE, create_table_request
from tests.unit.library.core.test_exact_times import SCHEMA

T0 = datetime(2013, 1, 1, 10, 0, 0, 250_000, tzinfo=UTC)
KEY = "DEVICE#7"


@pytest.fixture
def client(atomic_calls: Callable[[Any], Any]) -> Iterator[Any]:
    with mock_aws():
        ddb = atomic_calls(boto3.client("dynamodb", region_name="us-east-1"))
        ddb.create_table(**create_table_request(METADATA_TABLE))
        ddb.create_table(
            TableName="devices",
            KeySchema=[
                {"AttributeName": "device", "KeyType": "HASH"},
                {"AttributeName": "at", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "device", "AttributeType": "S"},
                {"AttributeName": "at", "AttributeType": "N"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield ddb


def facade(client: Any, **options: Any) -> Dynashard:
    config = DynashardConfig(
        "devices", METADATA_TABLE.default_name, schema=SCHEMA, cooldown_s=0.0, **options
    )
    return Dynashard(config, client=client)


def reading(event_id: str, **data: Any) -> Event:
    return Event(key=KEY, id=event_id, ts=T0, data={"temp": 21, **data})


def stored_ids(client: Any) -> list[str]:
    items = client.scan(TableName="devices", ConsistentRead=True)["Items"]
    return sorted(item["reading_id"]["S"] for item in items)


def test_a_random_key_s_redelivery_after_a_shrink_is_acknowledged(client: Any) -> None:
    # Given four shards each holding an event of one millisecond
    ds = facade(client, default_shards=4)
    first = ds.put_events([reading(f"e{i}") for i in range(4)])
    assert all(o.ok for o in first), first
    far = next(o for o in first if o.physical_key in (f"{KEY}#2", f"{KEY}#3"))
    # When the key shrinks to two shards, and an event stored on shard 2 or 3 comes again
    assert ds.set_shard_count(KEY, 2).changed
    (again,) = ds.put_events([reading(far.event_id)])
    # Then it is acknowledged where it is stored, and nothing is stored twice
    assert again.ok and not again.permanent, again
    assert again.physical_key == far.physical_key
    assert stored_ids(client) == ["e0", "e1", "e2", "e3"]
    # And a new event of that millisecond is still refused: every shard tried is taken
    (new,) = ds.put_events([reading("e4")])
    assert not new.ok and new.permanent and new.field == "ts"


def test_a_calculated_key_s_redelivery_after_a_shrink_is_acknowledged(client: Any) -> None:
    # Given a calculated key of four shards, x on a shard the count of 2 does not have,
    # and y on the shard the count of 2 gives x, at the same millisecond
    ds = facade(client, default_shards=4)
    ds.set_strategy(KEY, Strategy.CALCULATED, attribute="site")
    sites = [f"s{i}" for i in range(200)]
    x = next(s for s in sites if shard_for(s, 4) >= 2)
    y = next(s for s in sites if shard_for(s, 4) == shard_for(x, 2))
    written = ds.put_events([reading("x", site=x), reading("y", site=y)])
    assert all(o.ok for o in written), written
    # When the key shrinks to 2 and x comes again
    assert ds.set_shard_count(KEY, 2).changed
    (again,) = ds.put_events([reading("x", site=x)])
    # Then it is acknowledged on the shard it was written to
    assert again.ok, again
    assert again.physical_key == written[0].physical_key == f"{KEY}#{shard_for(x, 4)}"
    assert stored_ids(client) == ["x", "y"]


def test_a_redelivery_at_a_writer_with_an_older_cached_count_is_acknowledged(
    client: Any,
) -> None:
    # Given a writer that cached the key at two shards (both holding an event of T0)
    old = facade(client, default_shards=2, metadata_cache_ttl_s=3600.0)
    assert all(o.ok for o in old.put_events([reading("a"), reading("b")]))
    # and another that grew the key to four and wrote c on shard 2 or 3
    new = facade(client, default_shards=2)
    new.set_shard_count(KEY, 4)
    (c,) = new.put_events([reading("c")])
    assert c.ok and c.physical_key in (f"{KEY}#2", f"{KEY}#3"), c
    # When c is redelivered to the writer with the older count
    (again,) = old.put_events([reading("c")])
    # Then it is acknowledged where it is stored
    assert again.ok, again
    assert again.physical_key == c.physical_key
    assert stored_ids(client) == ["a", "b", "c"]


class Faulty:
    """The client, with the next calls of one operation answered by errors first."""

    def __init__(self, client: Any, operation: str, errors: list[dict[str, Any]]) -> None:
        self._client, self._operation, self.errors = client, operation, errors

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._client, name)
        if name != self._operation:
            return call

        def failing(**kwargs: Any) -> Any:
            if self.errors:
                raise ClientError(self.errors.pop(0), name)
            return call(**kwargs)

        return failing


def shrunk_with_an_event_beyond(client: Any) -> tuple[Dynashard, str, str]:
    """Four shards holding e0..e3 at T0, shrunk to two: (facade, id, key) of one on 2 or 3."""
    ds = facade(client, default_shards=4)
    first = ds.put_events([reading(f"e{i}") for i in range(4)])
    assert all(o.ok for o in first), first
    far = next(o for o in first if o.physical_key in (f"{KEY}#2", f"{KEY}#3"))
    assert ds.set_shard_count(KEY, 2).changed
    assert far.physical_key is not None
    return ds, far.event_id, far.physical_key


def test_a_throttled_lookup_is_asked_again_not_taken_for_absence(client: Any) -> None:
    # Given a redelivery whose shards all hold other events, and a first BatchGetItem throttled
    ds, event_id, stored_on = shrunk_with_an_event_beyond(client)
    throttled = {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}
    faulty = Faulty(client, "batch_get_item", [{"Error": throttled}])
    ds = facade(faulty, default_shards=4)
    # When it is written again
    (again,) = ds.put_events([reading(event_id)])
    # Then the lookup is retried and finds it: acknowledged where it is stored
    assert faulty.errors == []
    assert again.ok, again
    assert again.physical_key == stored_on


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            {"Code": "AccessDeniedException", "Message": "no dynamodb:BatchGetItem"},
            "AccessDeniedException: no dynamodb:BatchGetItem",
        ),
        ({"Code": "AccessDeniedException"}, "AccessDeniedException: "),
    ],
)
def test_a_failed_lookup_fails_the_event_for_now_naming_the_error(
    client: Any, error: dict[str, str], reason: str
) -> None:
    # Given a redelivery whose shards all hold other events, and a lookup that is refused
    _, event_id, _ = shrunk_with_an_event_beyond(client)
    ds = facade(Faulty(client, "batch_get_item", [{"Error": error}]), default_shards=4)
    # When it is written again
    (again,) = ds.put_events([reading(event_id)])
    # Then it fails for now (whether it is stored is not known), naming DynamoDB's error
    assert not again.ok and not again.permanent, again
    assert again.error == reason


def test_a_condition_failure_without_the_old_item_is_named_so(client: Any) -> None:
    # Given a one-shard key holding e0 at T0, and a PutItem whose ConditionalCheckFailed
    # carries no item (ReturnValuesOnConditionCheckFailure not honoured)
    assert all(o.ok for o in facade(client, default_shards=1).put_events([reading("e0")]))
    failed = {
        "Code": "ConditionalCheckFailedException",
        "Message": "The conditional request failed",
    }
    ds = facade(Faulty(client, "put_item", [{"Error": failed}]), default_shards=1)
    # When e1 of the same millisecond is written
    (new,) = ds.put_events([reading("e1")])
    # Then it is refused for good, naming the holder as an item without an event id
    assert not new.ok and new.permanent and new.field == "ts", new
    assert new.error is not None and "an item without an event id" in new.error
    assert stored_ids(client) == ["e0"]


class Recorded:
    """The client, recording the requests of one operation; the first ``fake`` calls are
    answered by ``fake(request)`` instead (a response DynamoDB may send)."""

    def __init__(self, client: Any, operation: str, fake: list[Any] | None = None) -> None:
        self._client, self._operation = client, operation
        self.requests: list[dict[str, Any]] = []
        self.fake = list(fake or [])

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._client, name)
        if name != self._operation:
            return call

        def recorded(**kwargs: Any) -> Any:
            self.requests.append(kwargs)
            return self.fake.pop(0)(kwargs) if self.fake else call(**kwargs)

        return recorded


def test_the_lookup_reads_strongly_consistent_only_the_shards_not_tried(client: Any) -> None:
    # Given a redelivery of an event stored on shard 2 or 3 after a shrink to 2
    _, event_id, stored_on = shrunk_with_an_event_beyond(client)
    recorded = Recorded(client, "batch_get_item")
    (again,) = facade(recorded, default_shards=4).put_events([reading(event_id)])
    assert again.ok and again.physical_key == stored_on, again
    # Then one strongly consistent BatchGetItem asked shards 2 and 3, nothing else
    [request] = recorded.requests
    [(table, ask)] = request["RequestItems"].items()
    assert table == "devices" and ask["ConsistentRead"] is True
    assert sorted(k["device"]["S"] for k in ask["Keys"]) == [f"{KEY}#2", f"{KEY}#3"]


def test_a_lookup_answered_with_unprocessed_keys_only_asks_them_again(client: Any) -> None:
    # Given a first BatchGetItem answered with every key unprocessed and no Responses
    _, event_id, stored_on = shrunk_with_an_event_beyond(client)
    recorded = Recorded(
        client, "batch_get_item", [lambda r: {"UnprocessedKeys": r["RequestItems"]}]
    )
    (again,) = facade(recorded, default_shards=4).put_events([reading(event_id)])
    # Then the keys are asked again and the event is found where it is stored
    assert len(recorded.requests) == 2
    assert again.ok and again.physical_key == stored_on, again


def test_a_one_shard_key_whose_slot_is_taken_looks_nowhere_else(client: Any) -> None:
    # Given a one-shard key holding e0 at T0
    assert all(o.ok for o in facade(client, default_shards=1).put_events([reading("e0")]))
    recorded = Recorded(client, "batch_get_item")
    # When e1 of the same millisecond is written, it is refused without a lookup: the
    # key never had another shard
    (new,) = facade(recorded, default_shards=1).put_events([reading("e1")])
    assert not new.ok and new.permanent and new.field == "ts", new
    assert recorded.requests == []


def test_a_refused_put_fails_the_event_naming_dynamodb_s_error(client: Any) -> None:
    # Given a key with its metadata (e0 written), and a PutItem refused with a
    # ValidationException
    assert all(o.ok for o in facade(client, default_shards=1).put_events([reading("e0")]))
    error = {"Code": "ValidationException", "Message": "One or more parameter values were invalid"}
    ds = facade(Faulty(client, "put_item", [{"Error": error}]), default_shards=1)
    # When another event is written, it fails for good with DynamoDB's code and message
    (new,) = ds.put_events([reading("e1")])
    assert not new.ok and new.permanent, new
    assert new.error == "ValidationException: One or more parameter values were invalid"
    assert stored_ids(client) == ["e0"]
