"""The chaos run's poison: records no ingest can accept, and why the library refuses each."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Poison:
    """A record no ingest can accept.

    Attributes
    ----------
    tag : str
        ``poison-NNNN``, found in the payload.
    kind : str
        What is wrong with it.
    payload : str
        The record's body (SQS) or data (Kinesis).
    """

    tag: str
    kind: str
    payload: str


def make_poison(n: int, key: str) -> Poison:
    """Build the ``n``-th poison record, cycling through four kinds.

    Parameters
    ----------
    n : int
        Its number.
    key : str
        A logical key to put in it.

    Returns
    -------
    Poison
        Not JSON, no ``id``, a ``ts`` that is no time, or an empty ``key``.
    """
    tag = f"poison-{n:04d}"
    kind = ("not JSON", "no id", "ts is not a time", "empty key")[n % 4]
    if kind == "not JSON":
        payload = f"{{{tag} this is not JSON"
    elif kind == "no id":
        payload = json.dumps({"key": key, "tag": tag, "ts": "2013-01-01T00:00:00Z"})
    elif kind == "ts is not a time":
        payload = json.dumps({"key": key, "id": tag, "ts": "not a time"})
    else:
        payload = json.dumps({"key": "", "id": tag, "ts": "2013-01-01T00:00:00Z"})
    return Poison(tag, kind, payload)


def refusal_reason(payload: str | bytes) -> str | None:
    """Say why the library refuses a record, or None if it accepts it.

    Parameters
    ----------
    payload : str or bytes
        A record's body or data.

    Returns
    -------
    str or None
        :func:`dynashard.lambda_kit.ingest.describe_error` of the parse error.
    """
    from dynashard.lambda_kit.ingest import describe_error, parse_event

    try:
        parse_event(payload)
    except ValueError as exc:
        return describe_error(exc)
    return None
