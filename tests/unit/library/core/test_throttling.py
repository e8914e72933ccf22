from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from dynashard import Dynashard, DynashardConfig
from dynashard.core.retry import Backoff
from dynashard.core.throttling import ThrottleKind, classify, throttling_reasons
from dynashard.dynamodb.writer import ShardedWriter
from infra.table_specs import DATA_TABLE, METADATA_TABLE

from ..dynamodb.test_writer_reader import make_events
from ..fakes import FlakyClient

TABLE_ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/dynashard-data"


def throttle(*reasons: str) -> ClientError:
    response: dict[str, Any] = {
        "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "throttled"},
        "ThrottlingReasons": [{"reason": r, "resource": TABLE_ARN} for r in reasons],
    }
    return ClientError(response, "BatchWriteItem")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reasons", "kind"),
    [
        (["TableWriteKeyRangeThroughputExceeded"], ThrottleKind.KEY_RANGE),
        (["IndexWriteKeyRangeThroughputExceeded"], ThrottleKind.KEY_RANGE),
        (["TableWriteProvisionedThroughputExceeded"], ThrottleKind.CAPACITY),
        (["TableWriteAccountLimitExceeded"], ThrottleKind.CAPACITY),
        (["IndexWriteMaxOnDemandThroughputExceeded"], ThrottleKind.CAPACITY),
        ([], ThrottleKind.UNKNOWN),
    ],
)
def test_classification(reasons: list[str], kind: ThrottleKind) -> None:
    assert classify(throttling_reasons(throttle(*reasons).response)) is kind  # type: ignore[arg-type]


class ThrottlesFirst(FlakyClient):
    def __init__(self, inner: Any, error: ClientError, times: int) -> None:
        super().__init__(inner)
        self.error, self.times = error, times

    def batch_write_item(self, RequestItems: dict[str, Any], **kw: Any) -> dict[str, Any]:
        if self.times > 0:
            self.times -= 1
            raise self.error
        return super().batch_write_item(RequestItems, **kw)


def writer_for(client: Any, ds: Dynashard) -> ShardedWriter:
    return ShardedWriter(
        client,
        DATA_TABLE.default_name,
        ds.metadata,
        ds.executor,
        backoff=Backoff(max_attempts=4),
        sleep=lambda s: None,
    )


def build(ddb_client: Any, error: ClientError, times: int) -> tuple[Dynashard, ShardedWriter]:
    client = ThrottlesFirst(ddb_client, error, times)
    ds = Dynashard(
        DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name, cooldown_s=0),
        client=client,  # type: ignore[arg-type]
    )
    return ds, writer_for(client, ds)


def test_throttling_exception_reasons_are_read_under_botocores_lowercase_member() -> None:
    # Given botocore's DynamoDB model: ThrottlingException's member is throttlingReasons
    import botocore.session

    model = botocore.session.get_session().get_service_model("dynamodb")
    assert "throttlingReasons" in model.shape_for("ThrottlingException").members
    assert "ThrottlingReasons" in model.shape_for("ProvisionedThroughputExceededException").members
    # When a ThrottlingException as botocore parses it is read
    response = {
        "Error": {"Code": "ThrottlingException", "Message": "Throughput exceeds the limit"},
        "throttlingReasons": [
            {"reason": "TableWriteKeyRangeThroughputExceeded", "resource": "arn:t"}
        ],
    }
    reasons = throttling_reasons(response)
    # Then its reasons are found, and the throttle is a hot key
    assert [r.reason for r in reasons] == ["TableWriteKeyRangeThroughputExceeded"]
    assert classify(reasons) is ThrottleKind.KEY_RANGE


def test_a_parsed_throttling_exception_carries_its_reasons_to_throttling_reasons() -> None:
    # Given the wire response of a ThrottlingException, parsed by botocore's own parser
    import json

    import botocore.session
    from botocore.parsers import create_parser

    model = botocore.session.get_session().get_service_model("dynamodb")
    body = {
        "__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
        "message": "Throughput exceeds the limit",
        "throttlingReasons": [{"reason": "IndexWriteKeyRangeThroughputExceeded", "resource": "a"}],
    }
    raw = {"status_code": 400, "headers": {}, "body": json.dumps(body).encode()}
    output = model.operation_model("PutItem").output_shape
    parsed = create_parser("json").parse(raw, output)
    # as botocore's endpoint then adds the modelled error's members
    # (botocore/endpoint.py, Endpoint._add_modeled_error_fields)
    shape = model.shape_for_error_code(parsed["Error"]["Code"])
    assert shape is not None
    parsed.update(create_parser("json").parse(raw, shape))
    assert [r.reason for r in throttling_reasons(parsed)] == [
        "IndexWriteKeyRangeThroughputExceeded"
    ]


def test_key_range_throttling_grows_the_key_and_the_write_lands(ddb_client: Any) -> None:
    ds, writer = build(ddb_client, throttle("TableWriteKeyRangeThroughputExceeded"), times=1)
    outcomes = writer.write(make_events(10))
    assert all(o.ok for o in outcomes)
    assert ds.shard_info("K").number_of_shards == 2
    assert writer.throttles == {"TableWriteKeyRangeThroughputExceeded": 1}


@pytest.mark.parametrize(
    "reason", ["TableWriteProvisionedThroughputExceeded", "TableWriteAccountLimitExceeded"]
)
def test_capacity_throttling_only_backs_off(ddb_client: Any, reason: str) -> None:
    ds, writer = build(ddb_client, throttle(reason), times=2)
    assert all(o.ok for o in writer.write(make_events(10)))
    assert ds.shard_info("K").number_of_shards == 1
    assert writer.throttles == {reason: 2}


def test_throttling_without_reasons_does_not_grow(ddb_client: Any) -> None:
    ds, writer = build(ddb_client, throttle(), times=1)
    assert all(o.ok for o in writer.write(make_events(5)))
    assert ds.shard_info("K").number_of_shards == 1
    assert writer.throttles == {"ProvisionedThroughputExceededException": 1}


def test_a_container_asks_for_growth_once_per_cooldown(ddb_client: Any) -> None:
    client = ThrottlesFirst(ddb_client, throttle("TableWriteKeyRangeThroughputExceeded"), 3)
    ds = Dynashard(
        DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name, cooldown_s=3600),
        client=client,  # type: ignore[arg-type]
    )
    ds.metadata.clock = lambda: 10_000_000.0  # the key was created long ago
    ds.set_shard_count("K", 1)
    ds.metadata.clock = lambda: 20_000_000.0
    writer = writer_for(client, ds)
    assert all(o.ok for o in writer.write(make_events(10)))
    info = ds.shard_info("K")
    assert info.number_of_shards == 2 and len(info.history) == 2


@pytest.mark.parametrize(("in_band", "shards"), [(True, 2), (False, 1)])
def test_the_facade_switch_turns_in_band_growth_on_and_off(
    ddb_client: Any, in_band: bool, shards: int
) -> None:
    client = ThrottlesFirst(ddb_client, throttle("TableWriteKeyRangeThroughputExceeded"), 1)
    ds = Dynashard(
        DynashardConfig(
            DATA_TABLE.default_name,
            METADATA_TABLE.default_name,
            cooldown_s=0,
            in_band_growth=in_band,
            write_backoff=Backoff(base_s=0.0, max_attempts=3),
        ),
        client=client,  # type: ignore[arg-type]
    )
    assert all(o.ok for o in ds.put_events(make_events(10)))
    assert ds.shard_info("K").number_of_shards == shards


def test_the_facade_writer_owns_its_retries(ddb_client: Any) -> None:
    # Given a facade that builds its own clients
    config = DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name)
    own = Dynashard(config)
    # Then the writer's client leaves every retry to the writer's back-off (which reads
    # the ThrottlingReasons of each attempt), and the other calls keep botocore's
    assert own.write_client is not own.client
    assert own.write_client.meta.config.retries["total_max_attempts"] == 1
    assert own.client.meta.config.retries["total_max_attempts"] == 4
    assert own._writer().client is own.write_client
    # And a caller's client serves both
    given = Dynashard(config, client=ddb_client)
    assert given.write_client is ddb_client
