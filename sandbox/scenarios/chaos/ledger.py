"""What the chaos run saw: acknowledgements of the handlers, and the readers' checks.

The :class:`Ledger` stamps every event a handler reported durable; the readers
(:func:`reader`) read random day windows all along and count a read stale when it misses
an event acknowledged before the read began (design invariant 3).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sandbox.harness.dataset import Departure, local_day_window

if TYPE_CHECKING:
    from dynashard import Dynashard


@dataclass
class Ledger:
    """Acknowledgement times of events (monotonic seconds), the first per event id."""

    acked: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def ack(self, ids: Sequence[str], at: float) -> None:
        """Record that the handler reported these events durable at ``at``.

        Parameters
        ----------
        ids : sequence of str
            Event ids.
        at : float
            ``time.monotonic()`` when the handler returned.
        """
        with self._lock:
            for event_id in ids:
                self.acked.setdefault(event_id, at)

    def count(self) -> int:
        """Return the events acknowledged so far.

        Returns
        -------
        int
            Distinct ids.
        """
        with self._lock:
            return len(self.acked)

    def snapshot(self) -> dict[str, float]:
        """Return a copy of the acknowledgement times.

        Returns
        -------
        dict of str to float
            Event id -> monotonic seconds.
        """
        with self._lock:
            return dict(self.acked)


def event_id(payload: str | bytes) -> str | None:
    """Return a record's event ``id``, or None when it is not JSON or has none."""
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    event_id = value.get("id") if isinstance(value, dict) else None
    return event_id if isinstance(event_id, str) else None


def tracked(invoke: Callable[[dict[str, Any]], Any], ledger: Ledger) -> Callable[..., Any]:
    """Wrap a batch handler so that the records it reports done are acknowledged.

    Parameters
    ----------
    invoke : callable
        ``invoke(event) -> response`` of an SQS or Kinesis handler.
    ledger : Ledger
        Where acknowledgements go, stamped when the handler returned.

    Returns
    -------
    callable
        The same call, recording each record not named in ``batchItemFailures``.
    """
    import base64

    from sandbox.local_aws.aws_events import batch_item_failures

    def call(event: dict[str, Any]) -> Any:
        response = invoke(event)
        at = time.monotonic()
        failed = batch_item_failures(response)
        ids: list[str] = []
        for record in event["Records"]:
            if "kinesis" in record:
                ident = record["kinesis"]["sequenceNumber"]
                payload: str | bytes = base64.b64decode(record["kinesis"]["data"])
            else:
                ident, payload = record["messageId"], record["body"]
            found = event_id(payload)
            if ident not in failed and found is not None:
                ids.append(found)
        ledger.ack(ids, at)
        return response

    return call


@dataclass
class ReadCheck:
    """Figures of the readers."""

    reads_checked: int = 0
    stale_reads: int = 0
    read_errors: int = 0
    duplicate_reads: int = 0
    stale_examples: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def read_window(facade: Dynashard, key: str, start: datetime, end: datetime) -> list[str]:
    """Read every event id of a key in ``[start, end)``, page by page (strongly consistent).

    Parameters
    ----------
    facade : Dynashard
        The library, on DynamoDB Local.
    key : str
        Logical key.
    start, end : datetime
        The window (UTC).

    Returns
    -------
    list of str
        Ids in read order.
    """
    ids: list[str] = []
    cursor: str | None = None
    while True:
        page = facade.query_events(key, start=start, end=end, limit=100, cursor=cursor)
        ids.extend(str(item["id"]) for item in page.items)
        cursor = page.cursor
        if cursor is None:
            return ids


def reader(
    facade: Dynashard,
    departures: Sequence[Departure],
    ledger: Ledger,
    check: ReadCheck,
    stop: threading.Event,
    seed: int,
) -> None:
    """Read random day windows until ``stop``; check each against the acknowledgements.

    A read is stale when an event of its key and window, acknowledged before the read
    began, is missing from it (design invariant 3).

    Parameters
    ----------
    facade : Dynashard
        The library, on DynamoDB Local.
    departures : sequence of Departure
        The good events.
    ledger : Ledger
        Acknowledgement times.
    check : ReadCheck
        Updated.
    stop : threading.Event
        Set to end.
    seed : int
        Seed of the reader's choices.
    """
    rng = random.Random(seed)
    by_window: dict[tuple[str, Any], list[Departure]] = {}
    for d in departures:
        by_window.setdefault((d.key, d.local_day), []).append(d)
    windows = sorted(by_window, key=str)
    while not stop.is_set():
        key, day = windows[rng.randrange(len(windows))]
        start, end = local_day_window(day)
        began = time.monotonic()
        acked = ledger.snapshot()
        try:
            got = read_window(facade, key, start, end)
        except Exception:  # DynamoDB Local down or a shard refused: not a read
            with check._lock:
                check.read_errors += 1
            stop.wait(0.2)
            continue
        expected = {
            d.event["id"] for d in by_window[(key, day)] if acked.get(d.event["id"], 1e18) < began
        }
        missing = expected - set(got)
        with check._lock:
            check.reads_checked += 1
            check.duplicate_reads += int(len(got) != len(set(got)))
            if missing:
                check.stale_reads += 1
                if len(check.stale_examples) < 10:
                    check.stale_examples.append(
                        {"key": key, "day": str(day), "missing": sorted(missing)[:5]}
                    )
