"""The library's exceptions: one base class, ``DynashardError``, and its subclasses.

Every exception carries a default message and, where one exists, the cause
(``raise ... from exc`` at the adapter that caught a botocore error).
"""

from __future__ import annotations

from collections.abc import Sequence


class DynashardError(Exception):
    """Base class of every error dynashard raises."""

    default_message = "dynashard error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.default_message)

    @property
    def message(self) -> str:
        """str: The human-readable message."""
        return str(self.args[0])


class InvalidInputError(DynashardError, ValueError):
    """Input broke a rule of dynashard or of DynamoDB.

    Parameters
    ----------
    field : str
        The offending field, e.g. ``key`` or ``events[3].ts``.
    message : str
        What was wrong, naming the limit where there is one.

    Examples
    --------
    It is a ``ValueError`` too, so callers that only know the standard library still
    catch it:

    >>> error = InvalidInputError("events[3].ts", "must be ISO-8601")
    >>> error.message, error.field, isinstance(error, ValueError)
    ('events[3].ts: must be ISO-8601', 'events[3].ts', True)
    """

    default_message = "invalid input"

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


class KeyLimitExceededError(InvalidInputError):
    """A key or item is over a DynamoDB size limit or is empty.

    Limits (DynamoDB Developer Guide, "Quotas in Amazon DynamoDB", attributes and
    items): partition key value 1 to 2,048 bytes, sort key value 1 to 1,024 bytes,
    item at most 400 KB (409,600 bytes) including attribute names.
    """


class CursorError(InvalidInputError):
    """A pagination cursor is malformed or belongs to another query."""

    def __init__(self, message: str) -> None:
        super().__init__("cursor", message)


class StateConflictError(InvalidInputError):
    """A request valid on its own contradicts what is stored (an HTTP 409 Conflict)."""


class LayoutConflictError(StateConflictError):
    """A logical key already has another ordered layout (its boundaries are fixed).

    An HTTP API answers it with 409 Conflict rather than 400: the request is valid on
    its own, but contradicts what is stored.
    """


class CounterOverflowError(StateConflictError):
    """An increment would take a counter shard past 38 digits (an HTTP 409 Conflict).

    ``by`` is within bounds on its own; what is stored makes the sum unrepresentable as
    a DynamoDB number (38 digits of precision).
    """


class IdempotentParameterMismatchError(StateConflictError):
    """An idempotency key was reused with another request (an HTTP 422 Unprocessable Content).

    Named after DynamoDB's ``IdempotentParameterMismatchException`` (a
    ``ClientRequestToken`` of ``TransactWriteItems`` reused with another request); the
    IETF Idempotency-Key draft (draft-ietf-httpapi-idempotency-key-header, "Error
    Scenarios") answers it 422, as Powertools' idempotency utility with
    ``payload_validation_jmespath`` raises ``IdempotencyValidationError``. Nothing was
    applied: the earlier request stands.
    """


class NotAnIndexError(InvalidInputError):
    """A logical key has no ordered layout, so no ordered index (an HTTP 404 Not Found)."""


class MetadataError(DynashardError):
    """The shard metadata table could not be read or written."""

    default_message = "shard metadata unavailable"


class CooldownActiveError(DynashardError):
    """A shard-count change was refused because the key's cooldown has not elapsed.

    Parameters
    ----------
    key : str
        The logical key.
    retry_after_s : float
        Seconds until the cooldown ends.

    Examples
    --------
    >>> CooldownActiveError("DEPARTURES#JFK", 12.34).message
    "shard count of 'DEPARTURES#JFK' changed recently; cooldown ends in 12.3 s"
    """

    def __init__(self, key: str, retry_after_s: float) -> None:
        self.key = key
        self.retry_after_s = retry_after_s
        super().__init__(
            f"shard count of {key!r} changed recently; cooldown ends in {retry_after_s:.1f} s"
        )


class ShardQueryError(DynashardError):
    """One or more shard queries of a scatter-gather read failed.

    Parameters
    ----------
    failures : dict of str to str
        Physical key of each failed shard -> the reason (error code and message).

    Examples
    --------
    >>> error = ShardQueryError({"K#1": "ProvisionedThroughputExceededException", "K#0": "x"})
    >>> error.shards
    ['K#0', 'K#1']
    >>> error.message
    '2 shard quer(y/ies) failed: K#0: x; K#1: ProvisionedThroughputExceededException'
    """

    def __init__(self, failures: dict[str, str]) -> None:
        self.failures = dict(failures)
        detail = "; ".join(f"{pk}: {why}" for pk, why in sorted(self.failures.items()))
        super().__init__(f"{len(self.failures)} shard quer(y/ies) failed: {detail}")

    @property
    def shards(self) -> Sequence[str]:
        """List of str: Physical keys of the failed shards, sorted."""
        return sorted(self.failures)


class WriteFailedError(DynashardError):
    """A write could not be made durable after the retries allowed."""

    default_message = "write failed"


class CounterError(DynashardError):
    """A sharded counter could not be read or incremented."""

    default_message = "counter operation failed"


class StrategyConflictError(DynashardError):
    """A key's shard strategy was not changed: it already has a different one.

    Data written under one strategy stays where that strategy put it, so a change
    under existing data would hide it from targeted reads; the change is made only
    when forced (``force=True``) by a caller who knows no data is there.

    Parameters
    ----------
    key : str
        The logical key.
    current : str
        The strategy in force, e.g. ``random`` or ``calculated(carrier)``.
    wanted : str
        The strategy asked for.

    Examples
    --------
    >>> error = StrategyConflictError("DEPARTURES#JFK", "random", "calculated(carrier)")
    >>> error.message.startswith("'DEPARTURES#JFK' already has strategy random, not calc")
    True
    >>> error.message.endswith("pass force=True to change it")
    True
    """

    def __init__(self, key: str, current: str, wanted: str) -> None:
        self.key = key
        self.current = current
        self.wanted = wanted
        super().__init__(
            f"{key!r} already has strategy {current}, not {wanted}; pass force=True to change it"
        )


class TableSchemaError(DynashardError):
    """The data table does not have the key schema dynashard is configured for.

    Raised at start-up by :func:`dynashard.dynamodb.table_check.check_table_schema`,
    before any item is written or read with the wrong keys.

    Parameters
    ----------
    mismatches : sequence of str
        One sentence per mismatch (missing table, a key attribute's name or type, the
        GSI missing or its keys differing).

    Examples
    --------
    >>> error = TableSchemaError(["table 't': has no GSI 'GSI1'"])
    >>> error.message
    "the data table does not match the configured schema: table 't': has no GSI 'GSI1'"
    """

    default_message = "the data table does not match the configured schema"

    def __init__(self, mismatches: Sequence[str]) -> None:
        self.mismatches = list(mismatches)
        super().__init__(f"{self.default_message}: {'; '.join(self.mismatches)}")


class ConfigurationError(DynashardError):
    """A function's own configuration (its environment) is invalid: the operator's error.

    Raised by a function kit's settings and facade getters
    (:func:`dynashard.lambda_kit.kit.function_kit`) when the variables the stack set do
    not validate, or validate but make no facade (``DYNASHARD_MAX_SHARDS`` above
    :data:`~dynashard.core.keys.MAX_SHARD_COUNT`, ``default_shards`` above
    ``max_shards``). It is no ``InvalidInputError``: no request could be right, so an
    HTTP API answers it with a 500 and the function's alarm fires, never a client's 400.
    The cause (``pydantic.ValidationError`` or ``InvalidInputError``) is chained.

    Parameters
    ----------
    settings : sequence of str
        The offending settings, by the name the operator sets (the variable, e.g.
        ``DYNASHARD_MAX_SHARDS``, or the library's field when no variable is known).
    detail : str
        What was wrong, naming the limit where there is one.

    Examples
    --------
    >>> error = ConfigurationError(["DYNASHARD_MAX_SHARDS"], "must be <= 1000, got 2000")
    >>> error.message
    'function configuration invalid (DYNASHARD_MAX_SHARDS): must be <= 1000, got 2000'
    >>> isinstance(error, ValueError)
    False
    """

    default_message = "function configuration invalid"

    def __init__(self, settings: Sequence[str], detail: str) -> None:
        self.settings = list(settings)
        self.detail = detail
        super().__init__(f"{self.default_message} ({', '.join(self.settings)}): {detail}")
