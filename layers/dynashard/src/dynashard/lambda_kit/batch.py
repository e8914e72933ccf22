"""Partial batch responses for SQS, Kinesis and DynamoDB streams, from fates decided up front.

A queue or stream record is either durable or reported back for redelivery
(``batchItemFailures``, "Handling errors for an SQS event source in Lambda" and "...
Kinesis ..." in the AWS Lambda Developer Guide). The ingest function decides every
record's fate in one bulk write, then :func:`partial_batch_response` answers with
Powertools' batch processor, so a FIFO batch stops at its first failure as Lambda
requires (:func:`is_fifo_batch`). :func:`batch_payloads` decodes the records' bodies;
a record that cannot be decoded is a :class:`RecordRejectedError`.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.utilities.batch import EventType
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.typing import LambdaContext


# --- batches -------------------------------------------------------------------------------
class RecordRejectedError(Exception):
    """A batch record that is reported back as a batch item failure.

    Parameters
    ----------
    item_id : str
        SQS message id, or Kinesis / DynamoDB stream sequence number.
    reason : str
        Why: the validation error, or the write error of its event.
    """

    def __init__(self, item_id: str, reason: str) -> None:
        self.item_id = item_id
        self.reason = reason
        super().__init__(f"{item_id}: {reason}")


def _kinesis_data(data: str) -> bytes:
    return base64.b64decode(data, validate=True)


def batch_payloads(
    event: Mapping[str, Any], event_type: EventType
) -> tuple[list[tuple[str, Callable[[], str | bytes]]], set[str]]:
    """Take the payloads out of an SQS or Kinesis event, each decoded when asked for.

    Parameters
    ----------
    event : mapping
        The Lambda event (``Records``).
    event_type : EventType
        Powertools' event type: ``SQS`` or ``KinesisDataStreams``.

    Returns
    -------
    items : list of (str, callable)
        Per record, in batch order: its item identifier (SQS ``messageId``, Kinesis
        ``sequenceNumber``) and a function returning its payload (the SQS body; the
        Kinesis data, base64-decoded: the function raises ``binascii.Error`` when the
        data is not base64, so that one record fails, not the batch).
    redelivered : set of str
        Item identifiers of records delivered before (SQS ``ApproximateReceiveCount``
        above 1); always empty for Kinesis, which does not say.

    Raises
    ------
    ValueError
        If ``event_type`` is another.
    """
    records = event.get("Records") or []
    if event_type.value == "SQS":
        items = [(r["messageId"], functools.partial(str, r.get("body", ""))) for r in records]
        redelivered = {
            r["messageId"]
            for r in records
            if int((r.get("attributes") or {}).get("ApproximateReceiveCount") or 1) > 1
        }
        return list(items), redelivered
    if event_type.value == "KinesisDataStreams":
        return [
            (
                r["kinesis"]["sequenceNumber"],
                functools.partial(_kinesis_data, r["kinesis"].get("data", "")),
            )
            for r in records
        ], set()
    raise ValueError(f"no payloads for {event_type}: expected SQS or KinesisDataStreams")


def is_fifo_batch(event: Mapping[str, Any], event_type: EventType) -> bool:
    """Tell whether a batch comes from an SQS FIFO queue (its ARN ends in ``.fifo``).

    Parameters
    ----------
    event : mapping
        The Lambda event (``Records``).
    event_type : EventType
        Powertools' event type of the source.

    Returns
    -------
    bool
        True for an SQS batch whose records' ``eventSourceARN`` names a FIFO queue.

    Examples
    --------
    >>> from aws_lambda_powertools.utilities.batch import EventType
    >>> arn = "arn:aws:sqs:us-east-1:123456789012:q.fifo"
    >>> is_fifo_batch({"Records": [{"eventSourceARN": arn}]}, EventType.SQS)
    True
    >>> is_fifo_batch({"Records": []}, EventType.SQS)
    False
    """
    records = event.get("Records") or []
    return (
        event_type.value == "SQS"
        and bool(records)
        and str(records[0].get("eventSourceARN", "")).endswith(".fifo")
    )


#: Reason of a record the fates do not name.
NOT_SEEN = "record not seen by the bulk write"


def _item_id(record: Any) -> str:
    # Powertools' record classes: SQSRecord, KinesisStreamRecord, DynamoDBRecord.
    if hasattr(record, "message_id"):
        return str(record.message_id)
    if hasattr(record, "kinesis"):
        return str(record.kinesis.sequence_number)
    return str(record.dynamodb.sequence_number)


def partial_batch_response(
    event: dict[str, Any],
    context: LambdaContext,
    event_type: EventType,
    fates: Mapping[str, str | None],
    logger: Logger,
    permanent: Collection[str] = (),
) -> PartialItemFailureResponse:
    """Answer a batch from each record's fate, decided before (e.g. by one bulk write).

    Each record whose fate is a reason (or that the fates do not name) is logged as
    ``record rejected`` (warning, with ``item_id``, ``reason`` and ``permanent``) and
    reported as a batch item failure. An all-failed batch is still a partial response
    listing every record, so each one is retried, and reaches its DLQ, on its own. A
    permanent failure is reported the same way (a partial batch response can only say
    "failed"): redrive moves it to the DLQ after ``maxReceiveCount``, and this log line,
    ``permanent: true`` with the message id, says why it is there. A FIFO queue's batch
    (:func:`is_fifo_batch`) stops each message group at its first failure, as Powertools'
    ``SqsFifoPartialProcessor(skip_group_on_error=True)`` does: the group's later
    messages are reported failed too, so that none of them is done before the one that
    failed.

    Parameters
    ----------
    event : dict
        The SQS, Kinesis or DynamoDB stream event.
    context : LambdaContext
        Lambda context.
    event_type : EventType
        Powertools' event type of the source.
    fates : mapping of str to (str or None)
        Item identifier (message id or sequence number) -> None if the record is done,
        else why it is not.
    logger : Logger
        The function's logger.
    permanent : collection of str
        Item identifiers whose failure is permanent (an invalid event, one DynamoDB can
        never store): logged with ``permanent: true``.

    Returns
    -------
    dict
        ``{"batchItemFailures": [{"itemIdentifier": ...}, ...]}``, in batch order.
    """
    from aws_lambda_powertools.utilities.batch import (
        BatchProcessor,
        SqsFifoPartialProcessor,
        process_partial_response,
    )

    def record_handler(record: Any) -> None:
        item_id = _item_id(record)
        reason = fates.get(item_id, NOT_SEEN)
        if reason is not None:
            fields = {"item_id": item_id, "reason": reason, "permanent": item_id in permanent}
            logger.warning("record rejected", extra=fields)
            raise RecordRejectedError(item_id, reason)

    processor: BatchProcessor
    if is_fifo_batch(event, event_type):
        # A group stops at its first failure: its later messages are reported too, so
        # SQS hands them out again after it, in order (the other groups go on).
        processor = SqsFifoPartialProcessor(skip_group_on_error=True)
        processor.raise_on_entire_batch_failure = False
    else:
        processor = BatchProcessor(event_type=event_type, raise_on_entire_batch_failure=False)
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
