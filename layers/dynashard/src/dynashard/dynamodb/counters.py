"""Sharded atomic counters: increment one shard, read by summing every shard.

An increment is an ``UpdateItem`` with ``ADD`` on one random shard of the counter's
logical key ``COUNTER#{name}``; a read is ``BatchGetItem`` over every shard the
counter's ``shard_history`` names (at most 100 keys per call, BatchGetItem API
reference), with ``UnprocessedKeys`` retried with back-off, summed.

``ADD`` is not idempotent (Developer Guide, "Atomic counters"): a redelivered message
would count twice. Pass an ``idempotency_key`` to make the increment a transaction
(TransactWriteItems) that also writes a marker item conditional on its absence, so a
replay applies once (two write units more per increment). The marker has its own
partition key, a hash of the counter and the idempotency key
(``#APPLIED#{sha256}``), not the counter's shard: the shard an increment lands on
depends on the shard count in force, so a redelivery after a resize would find no
marker on its new shard and count twice. Markers spread over as many partitions as
there are keys, and carry the table's TTL attribute (:data:`dynashard.names.ATTR_EXPIRES_AT`,
:data:`MARKER_TTL_S` ahead by default) so that DynamoDB deletes them once no
redelivery can come.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from dynashard import names
from dynashard.core.entropy import SYSTEM_RANDOM
from dynashard.core.keys import physical_key, validate_logical_key
from dynashard.core.retry import Backoff
from dynashard.core.strategies import shard_for
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.errors import (
    CounterError,
    CounterOverflowError,
    IdempotentParameterMismatchError,
    InvalidInputError,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: Prefix of a counter's logical key (:func:`counter_key`).
COUNTER_PREFIX: Final = names.COUNTER_PREFIX
#: Sort key of a counter shard's item.
COUNTER_SORT_KEY: Final = "#COUNTER"
#: Partition-key prefix of the markers of applied idempotent increments.
APPLIED_PREFIX: Final = "#APPLIED#"
#: Sort key of a marker item.
APPLIED_SORT_KEY: Final = "#APPLIED"
#: How long a marker is kept, seconds: 14 days, the longest an SQS message can be
#: retained (SQS quotas, ``MessageRetentionPeriod``), so no redelivery outlives it.
MARKER_TTL_S: Final = 14 * 86_400
#: Largest number of keys in one BatchGetItem call (DynamoDB quota).
BATCH_GET_MAX_KEYS: Final = 100
#: Largest magnitude of an increment and of a counter shard's value: 38 digits, the
#: precision of a DynamoDB number (Developer Guide, "Data types", Number). A shard's
#: ``ADD`` past it would fail on DynamoDB, so it is refused before, by a condition.
MAX_COUNTER_VALUE: Final = 10**38 - 1


def counter_key(name: str) -> str:
    """Return the logical key of a counter: ``COUNTER#{name}``.

    Parameters
    ----------
    name : str
        Counter name, non-empty.

    Returns
    -------
    str
        The logical key used in the metadata table and physical keys.

    Raises
    ------
    KeyLimitExceededError
        If the name is empty or too long for a partition key.
    """
    logical = f"{COUNTER_PREFIX}{name}"
    if not name:
        raise InvalidInputError("name", "must not be empty")
    validate_logical_key(logical, field="name")
    return logical


def marker_key(logical: str, idempotency_key: str) -> str:
    """Return the partition key of an idempotent increment's marker.

    Parameters
    ----------
    logical : str
        The counter's logical key, ``COUNTER#{name}``.
    idempotency_key : str
        The increment's idempotency key.

    Returns
    -------
    str
        ``#APPLIED#`` and 32 hex digits of SHA-256 over both (41 bytes whatever their
        length, so within the 2,048-byte partition key limit); the same for every
        shard count, so a redelivery after a resize finds it.

    Examples
    --------
    >>> marker_key("COUNTER#UA", "msg-1") == marker_key("COUNTER#UA", "msg-1")
    True
    >>> marker_key("COUNTER#UA", "msg-1") != marker_key("COUNTER#AA", "msg-1")
    True
    >>> len(marker_key("COUNTER#UA", "msg-1"))
    41
    """
    digest = hashlib.sha256(f"{logical}\n{idempotency_key}".encode()).hexdigest()[:32]
    return f"{APPLIED_PREFIX}{digest}"


@dataclass(frozen=True)
class CounterValue:
    """The value of a sharded counter.

    Attributes
    ----------
    name : str
        Counter name.
    value : int
        Sum over every shard.
    shards : int
        Shards read.
    """

    name: str
    value: int
    shards: int


class ShardedCounter:
    """Sharded atomic counters in the data table.

    Parameters
    ----------
    client : DynamoDBClient
        A boto3 DynamoDB client.
    table_name : str
        The data table.
    metadata : ShardMetadata
        Shard counts of counters (writers use the cache, reads read fresh).
    backoff : Backoff, optional
        Retry policy for ``UnprocessedKeys``.
    sleep : callable
        Sleeps between retries; injectable for tests.
    marker_ttl_s : float
        Seconds an idempotency marker is kept (its ``expires_at``), default
        :data:`MARKER_TTL_S`; a redelivery later than that counts again.
    clock : callable
        Epoch seconds now; injectable for tests.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        metadata: ShardMetadata,
        backoff: Backoff | None = None,
        sleep: Callable[[float], None] = time.sleep,
        marker_ttl_s: float = MARKER_TTL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.table_name = table_name
        self.metadata = metadata
        self.backoff = backoff or Backoff()
        self.sleep = sleep
        self.marker_ttl_s = marker_ttl_s
        self.clock = clock

    def increment(self, name: str, by: int = 1, idempotency_key: str | None = None) -> bool:
        """Add ``by`` to a counter.

        Parameters
        ----------
        name : str
            Counter name.
        by : int
            Any non-zero integer (negative decrements).
        idempotency_key : str, optional
            When given, the increment applies at most once per key, whatever shard
            count is in force when it is sent again (its marker: :func:`marker_key`),
            for :attr:`marker_ttl_s`.

        Returns
        -------
        bool
            True when applied; False when ``idempotency_key`` was already applied with
            the same ``by``, whatever the value of the shard it lands on (a redelivery
            to a shard at the 38-digit bound is "already applied", not an overflow).

        Raises
        ------
        InvalidInputError
            Naming ``by`` if it is 0, not an int, or more than 38 digits
            (:data:`MAX_COUNTER_VALUE`); naming ``name`` if the name is invalid.
        IdempotentParameterMismatchError
            Naming ``idempotency_key``, if the key was already applied with another
            ``by`` (nothing is applied; as DynamoDB's own
            ``IdempotentParameterMismatchException`` for a ``ClientRequestToken`` reused
            with another request, and the IETF Idempotency-Key draft's 422).
        CounterOverflowError
            Naming ``by``, if a fresh increment (not a redelivery) would take the shard
            it lands on past 38 digits, the precision of a DynamoDB number (the shard is
            left as it was, and no marker is written).
        CounterError
            If DynamoDB fails the update.
        """
        if isinstance(by, bool) or not isinstance(by, int) or by == 0:
            raise InvalidInputError("by", f"must be a non-zero integer, got {by!r}")
        if abs(by) > MAX_COUNTER_VALUE:
            raise InvalidInputError(
                "by", "has more than 38 digits, the precision of a DynamoDB number"
            )
        logical = counter_key(name)
        count = self.metadata.for_writer(logical).number_of_shards
        # Uniform, from the system's generator (no state a SnapStart snapshot copies).
        shard = (
            shard_for(idempotency_key, count) if idempotency_key else SYSTEM_RANDOM.randrange(count)
        )
        key = {
            names.ATTR_PK: {"S": physical_key(logical, shard)},
            names.ATTR_SK: {"S": COUNTER_SORT_KEY},
        }
        # The shard's value stays within 38 digits: the bound minus by is itself within.
        bound = MAX_COUNTER_VALUE - by if by > 0 else -MAX_COUNTER_VALUE - by
        within = f"attribute_not_exists(#c) OR #c {'<=' if by > 0 else '>='} :bound"
        update: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": key,
            "UpdateExpression": "ADD #c :by SET #k = :name, #s = :shard",
            "ConditionExpression": within,
            "ExpressionAttributeNames": {
                "#c": names.ATTR_COUNT,
                "#k": names.ATTR_KEY,
                "#s": names.ATTR_SHARD,
            },
            "ExpressionAttributeValues": {
                ":by": {"N": str(by)},
                ":name": {"S": logical},
                ":shard": {"N": str(shard)},
                ":bound": {"N": str(bound)},
            },
        }
        try:
            if idempotency_key is None:
                self.client.update_item(**update)
                return True
            expires = int(self.clock() + self.marker_ttl_s)
            marker = {
                names.ATTR_PK: {"S": marker_key(logical, idempotency_key)},
                names.ATTR_SK: {"S": APPLIED_SORT_KEY},
                names.ATTR_KEY: {"S": logical},
                names.ATTR_IDEMPOTENCY_KEY: {"S": idempotency_key},
                names.ATTR_COUNT: {"N": str(by)},
                names.ATTR_SHARD: {"N": str(shard)},
                names.ATTR_EXPIRES_AT: {"N": str(expires)},
            }
            self.client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self.table_name,
                            "Item": marker,
                            "ConditionExpression": "attribute_not_exists(#pk)",
                            "ExpressionAttributeNames": {"#pk": names.ATTR_PK},
                        }
                    },
                    {"Update": update},  # type: ignore[typeddict-item]
                ]
            )
            return True
        except ClientError as exc:
            error = exc.response["Error"]
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            failed = error["Code"] == "ConditionalCheckFailedException" or (
                error["Code"] == "TransactionCanceledException"
                and "ConditionalCheckFailed" in reasons
            )
            if not failed:
                raise CounterError(
                    f"incrementing counter {name!r} failed: {error['Code']}: "
                    f"{error.get('Message', '')}"
                ) from exc
            # The marker's condition is asked first: a redelivery is "already applied"
            # whatever the shard's value, even when the shard's bound failed too (both
            # conditions fail on a redelivery to a shard at the bound). The marker is
            # read (strongly consistent, 0.5 RCU, only on this path): it says whether
            # the key was applied where the cancellation reasons do not (an engine that
            # stops at the first failed condition), and with which ``by``.
            stored, applied_by = (
                self._marker(logical, idempotency_key)
                if idempotency_key is not None
                else (False, None)
            )
            if idempotency_key is not None and (
                reasons[:1] == ["ConditionalCheckFailed"] or stored
            ):
                if applied_by is not None and applied_by != by:
                    raise IdempotentParameterMismatchError(
                        "idempotency_key",
                        f"{idempotency_key!r} was applied to counter {name!r} with by="
                        f"{applied_by}, not {by}: a new increment needs a new key",
                    ) from exc
                return False
            raise CounterOverflowError(
                "by",
                f"would take shard {shard} of counter {name!r} past 38 digits "
                f"(|value| <= {MAX_COUNTER_VALUE}), the precision of a DynamoDB number "
                "(Developer Guide, 'Supported data types': Number); the shard is unchanged",
            ) from exc
        except BotoCoreError as exc:
            raise CounterError(f"incrementing counter {name!r} failed: {exc}") from exc

    def _marker(self, logical: str, idempotency_key: str) -> tuple[bool, int | None]:
        """Return whether an idempotency key's marker is stored, and its ``by`` (consistent read).

        The ``by`` is None when no marker is stored, or one without its ``count`` (none is
        written so), which is taken as applied with any ``by``.
        """
        try:
            response = self.client.get_item(
                TableName=self.table_name,
                Key={
                    names.ATTR_PK: {"S": marker_key(logical, idempotency_key)},
                    names.ATTR_SK: {"S": APPLIED_SORT_KEY},
                },
                ConsistentRead=True,
                ProjectionExpression="#pk, #c",
                ExpressionAttributeNames={"#pk": names.ATTR_PK, "#c": names.ATTR_COUNT},
            )
        except (ClientError, BotoCoreError) as exc:
            raise CounterError(f"reading the marker of {idempotency_key!r} failed: {exc}") from exc
        item = response.get("Item")
        if item is None:
            return False, None
        applied_by = item.get(names.ATTR_COUNT, {}).get("N")
        return True, None if applied_by is None else int(applied_by)

    def get(self, name: str) -> CounterValue:
        """Read a counter: BatchGetItem over every shard it ever had, summed.

        For an adopted counter (:meth:`ShardMetadata.adopt` on ``COUNTER#{name}``) the
        item under the bare key ``COUNTER#{name}`` (sort key ``#COUNTER``) is added in.

        Parameters
        ----------
        name : str
            Counter name.

        Returns
        -------
        CounterValue
            The sum and the number of shards read; 0 for a counter never incremented.

        Raises
        ------
        CounterError
            If DynamoDB fails, or keys stay unprocessed after every retry.
        """
        logical = counter_key(name)
        info = self.metadata.for_reader(logical)
        shards = info.max_count
        keys = [
            {names.ATTR_PK: {"S": physical_key(logical, s)}, names.ATTR_SK: {"S": COUNTER_SORT_KEY}}
            for s in range(shards)
        ]
        if info.adopted:  # a counter kept under its bare key before adoption counts too
            keys.append({names.ATTR_PK: {"S": logical}, names.ATTR_SK: {"S": COUNTER_SORT_KEY}})
        total = 0
        for start in range(0, len(keys), BATCH_GET_MAX_KEYS):
            for item in self._batch_get(name, keys[start : start + BATCH_GET_MAX_KEYS]):
                total += int(item.get(names.ATTR_COUNT, {}).get("N", "0"))
        return CounterValue(name, total, shards)

    def _batch_get(self, name: str, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        pending: list[dict[str, Any]] = keys
        for attempt in range(self.backoff.max_attempts):
            if attempt:
                self.sleep(self.backoff.delay(attempt - 1))
            try:
                response = self.client.batch_get_item(
                    RequestItems={self.table_name: {"Keys": pending, "ConsistentRead": True}}
                )
            except (ClientError, BotoCoreError) as exc:
                raise CounterError(f"reading counter {name!r} failed: {exc}") from exc
            found.extend(response.get("Responses", {}).get(self.table_name, []))
            unprocessed: dict[str, Any] = dict(response.get("UnprocessedKeys", {}))
            pending = list(unprocessed.get(self.table_name, {}).get("Keys", []))
            if not pending:
                return found
        raise CounterError(
            f"reading counter {name!r} failed: {len(pending)} shard(s) stayed unprocessed"
        )
