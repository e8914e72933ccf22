"""Write load per logical key, as the writers know it (pure).

A writer knows exactly what it was asked to write and what DynamoDB refused, per
logical key. The ingest function publishes that as structured log lines per logical
key and invocation (Powertools Logger, JSON): ``write load`` before it writes, so the
line's timestamp is when the load arrived, however long throttled retries then take,
and ``write refused`` after it, for the keys where something was refused. A CloudWatch Contributor
Insights rule on the function's log group ranks logical keys by the write units they
were offered: the way AWS handles a high-cardinality key (a metric dimension per
logical key would be a metric of its own; a Contributor Insights rule is one rule for
all of them). The scaler reads the rule's report for an alarm's window and plans the
shard count from the load offered, instead of estimating it from throttle counts,
which under producers that retry until they get through are only a lower bound.

The sandbox evaluates the same rule (:func:`write_load_rule_body`) on the same log
lines.

One rule or several parts. ``GetInsightRuleReport`` names at most 100 contributors
and cannot page, so one rule over a fleet of keys only ever names the 100 busiest; a
key it leaves out is bounded by the 100th's total, which while hundreds of keys are
hot says nothing useful. The stack can split the key space into ``P`` parts by a
stable hash of the logical key (:func:`write_load_part`): every line carries its key's
part (:data:`FIELD_PART`), and part ``i``'s rule counts only the lines of part ``i``
(:func:`write_load_rule` with ``part=i``). Each part's report then names its own top
100, and a key it leaves out is bounded by its own part's 100th contributor
(:meth:`dynashard.planning.shrinking.LoadHistory.bound`). Each line matches exactly
one part's rule, so the matched log events (what Contributor Insights charges per
event) are as many as with one rule.

Units: write capacity units (WCU) of the base table, one per started KB of the item
("Item sizes and formats" and "Read/write capacity mode", DynamoDB Developer Guide).

Offered load counts a record's first delivery only. A record that an event source
delivers again (SQS ``ApproximateReceiveCount`` above 1) is counted in
``redelivered_wcu``: it is load the last throttling sent back, which the headroom of
the planned count drains, not new demand; planning on it would grow a key for a
backlog that is gone a minute later. Sources that cannot tell a redelivery (Kinesis
retries, API clients resending a 503) count it as offered, an overestimate.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dynashard import defaults
from dynashard.core import capacity

#: The ``message`` of the log line that carries what one invocation was offered on one
#: logical key, written before the write, so that it is stamped when the load arrived.
WRITE_LOAD_MESSAGE: Final = "write load"
#: The ``message`` of the log line that says what the write then refused on a key.
WRITE_REFUSED_MESSAGE: Final = "write refused"
#: JSON fields of that log line.
FIELD_KEY: Final = "logical_key"
FIELD_OFFERED_WCU: Final = "offered_wcu"
FIELD_REDELIVERED_WCU: Final = "redelivered_wcu"
FIELD_REFUSED_WCU: Final = "refused_wcu"
FIELD_EVENTS: Final = "events"
#: The key's part of the key space (:func:`write_load_part`), what each part's rule filters on.
FIELD_PART: Final = "part"
#: Contributor Insights allows at most this many contributors in a report
#: (``GetInsightRuleReport`` ``MaxContributorCount``, CloudWatch API Reference).
MAX_CONTRIBUTORS: Final = 100
#: Rule name suffix (the stack prefixes the stack name; rule names are at most 128
#: characters, CloudWatch ``PutInsightRule``).
WRITE_LOAD_RULE_SUFFIX: Final = "offered-write-units"
#: Most parts the write-load rule may be split into: a shrink sweep reads every part's
#: report, one ``GetInsightRuleReport`` each, and that call's quota is 20 per second
#: per Region (CloudWatch User Guide, "CloudWatch service quotas"); the account's
#: Contributor Insights rules are 100 per Region (same page).
MAX_WRITE_LOAD_PARTS: Final = defaults.MAX_WRITE_LOAD_PARTS


def write_load_part(key: str, parts: int) -> int:
    """Return the part of the key space a logical key's write load is counted in.

    A stable hash (CRC-32 of the key's UTF-8 bytes, :func:`zlib.crc32`), the same in
    every process and Python version: the writers put it in their ``write load`` lines
    and the scaler computes it again to know which part's report speaks for a key.

    Parameters
    ----------
    key : str
        Logical key.
    parts : int
        Parts of the key space, ``>= 1`` (one rule per part).

    Returns
    -------
    int
        In ``0 .. parts - 1``; always 0 when ``parts`` is 1.

    Raises
    ------
    ValueError
        If ``parts < 1``.

    Examples
    --------
    >>> write_load_part("DEPARTURES#JFK", 1), write_load_part("DEPARTURES#JFK", 8)
    (0, 4)
    """
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    return 0 if parts == 1 else zlib.crc32(key.encode("utf-8")) % parts


@dataclass
class KeyWriteLoad:
    """What one invocation was offered on one logical key (before it writes).

    Attributes
    ----------
    key : str
        Logical key.
    events : int
        Events to write (each once; the writer's own retries are not counted).
    offered_wcu : int
        Write units of the events delivered for the first time.
    redelivered_wcu : int
        Write units of the events an event source delivered again.
    part : int
        The key's part of the key space (:func:`write_load_part`); 0 with one part.
    """

    key: str
    events: int = 0
    offered_wcu: int = 0
    redelivered_wcu: int = 0
    part: int = 0

    def log_fields(self) -> dict[str, Any]:
        """Return the fields of the ``write load`` log line.

        Returns
        -------
        dict
            ``{"logical_key", "events", "offered_wcu", "redelivered_wcu", "part"}``.

        Examples
        --------
        >>> KeyWriteLoad("DEPARTURES#JFK", 2, 2, 0).log_fields()["offered_wcu"]
        2
        """
        return {
            FIELD_KEY: self.key,
            FIELD_EVENTS: self.events,
            FIELD_OFFERED_WCU: self.offered_wcu,
            FIELD_REDELIVERED_WCU: self.redelivered_wcu,
            FIELD_PART: self.part,
        }


def summarize_write_load(
    writes: Iterable[tuple[str, int, bool]], parts: int = 1
) -> list[KeyWriteLoad]:
    """Add up what one invocation was offered, per logical key.

    Parameters
    ----------
    writes : iterable of (str, int, bool)
        Per event: logical key, write units (WCU, ``>= 0``), and whether its source
        delivered it before.
    parts : int
        Parts of the key space the stack's write-load rule is split into
        (``DYNASHARD_WRITE_LOAD_PARTS``): each key's :attr:`KeyWriteLoad.part`.

    Returns
    -------
    list of KeyWriteLoad
        One per logical key, in order of first appearance.

    Examples
    --------
    >>> [load] = summarize_write_load([("K", 1, False), ("K", 2, True)])
    >>> (load.events, load.offered_wcu, load.redelivered_wcu)
    (2, 1, 2)
    """
    loads: dict[str, KeyWriteLoad] = {}
    for key, units, redelivered in writes:
        load = loads.get(key)
        if load is None:
            load = loads[key] = KeyWriteLoad(key, part=write_load_part(key, parts))
        load.events += 1
        if redelivered:
            load.redelivered_wcu += units
        else:
            load.offered_wcu += units
    return list(loads.values())


def refused_write_load(outcomes: Iterable[tuple[str, int, bool]]) -> dict[str, dict[str, Any]]:
    """Add up, per logical key, what a bulk write did not write (the source sends it again).

    Parameters
    ----------
    outcomes : iterable of (str, int, bool)
        Per event: logical key, write units, and whether it was written.

    Returns
    -------
    dict of str to dict
        Logical key -> the fields of its ``write refused`` log line (``logical_key``,
        ``events``, ``refused_wcu``), for the keys with a refused event only.

    Examples
    --------
    >>> refused_write_load([("K", 1, True), ("K", 2, False), ("L", 1, True)])
    {'K': {'logical_key': 'K', 'events': 1, 'refused_wcu': 2}}
    """
    refused: dict[str, dict[str, Any]] = {}
    for key, units, written in outcomes:
        if written:
            continue
        fields = refused.setdefault(key, {FIELD_KEY: key, FIELD_EVENTS: 0, FIELD_REFUSED_WCU: 0})
        fields[FIELD_EVENTS] += 1
        fields[FIELD_REFUSED_WCU] += units
    return refused


def write_load_rule_body(log_group_names: Sequence[str], part: int | None = None) -> str:
    """Return the Contributor Insights rule that ranks logical keys by offered WCU.

    The rule reads the ingest function's JSON log lines whose ``message`` is
    :data:`WRITE_LOAD_MESSAGE`, takes :data:`FIELD_KEY` as the contributor and sums
    :data:`FIELD_OFFERED_WCU` (CloudWatch User Guide, "Contributor Insights rule
    syntax": ``Schema`` ``CloudWatchLogRule`` version 1, ``LogFormat`` JSON,
    ``Contribution`` ``Keys`` / ``ValueOf`` / ``Filters``, ``AggregateOn`` ``Sum``).

    Parameters
    ----------
    log_group_names : sequence of str
        The ingest functions' log groups (CDK tokens in the stack).
    part : int, optional
        Count only the lines of this part of the key space (:data:`FIELD_PART`, a
        second filter, ``EqualTo``: the syntax's numeric match); None: every line (the
        rule of a stack that does not split it).

    Returns
    -------
    str
        The rule body, JSON.

    Examples
    --------
    >>> json.loads(write_load_rule_body(["/aws/lambda/ingest"]))["Contribution"]["ValueOf"]
    '$.offered_wcu'
    """
    return json.dumps(write_load_rule(log_group_names, part), sort_keys=True)


def write_load_rule(log_group_names: Sequence[str], part: int | None = None) -> dict[str, Any]:
    """Return :func:`write_load_rule_body` as a dict.

    Parameters
    ----------
    log_group_names : sequence of str
        The ingest functions' log groups.
    part : int, optional
        The part of the key space the rule counts (see :func:`write_load_rule_body`).

    Returns
    -------
    dict
        The rule (``Schema``, ``LogGroupNames``, ``LogFormat``, ``Contribution``,
        ``AggregateOn``).

    Raises
    ------
    ValueError
        If ``part`` is negative.

    Examples
    --------
    >>> rule = write_load_rule(["/aws/lambda/ingest"])
    >>> rule["Contribution"]["Keys"], rule["AggregateOn"]
    (['$.logical_key'], 'Sum')
    >>> write_load_rule(["/aws/lambda/ingest"], part=3)["Contribution"]["Filters"][1]
    {'Match': '$.part', 'EqualTo': 3}
    """
    filters: list[dict[str, Any]] = [{"Match": "$.message", "In": [WRITE_LOAD_MESSAGE]}]
    if part is not None:
        if part < 0:
            raise ValueError(f"part must be >= 0, got {part}")
        filters.append({"Match": f"$.{FIELD_PART}", "EqualTo": part})
    return {
        "Schema": {"Name": "CloudWatchLogRule", "Version": 1},
        "LogGroupNames": list(log_group_names),
        "LogFormat": "JSON",
        "Contribution": {
            "Keys": [f"$.{FIELD_KEY}"],
            "ValueOf": f"$.{FIELD_OFFERED_WCU}",
            "Filters": filters,
        },
        "AggregateOn": "Sum",
    }


def write_load_rules(log_group_names: Sequence[str], parts: int) -> list[dict[str, Any]]:
    """Return the write-load rule of each part of the key space, part 0 first.

    Parameters
    ----------
    log_group_names : sequence of str
        The ingest functions' log groups.
    parts : int
        Parts, 1 to :data:`MAX_WRITE_LOAD_PARTS`. One part is the single rule over every
        line, without a part filter (:func:`write_load_rule`), as before the split.

    Returns
    -------
    list of dict
        ``parts`` rules; rule ``i`` counts the lines whose :data:`FIELD_PART` is ``i``.

    Raises
    ------
    ValueError
        If ``parts`` is out of range.

    Examples
    --------
    >>> [r["Contribution"]["Filters"][-1] for r in write_load_rules(["g"], 2)]
    [{'Match': '$.part', 'EqualTo': 0}, {'Match': '$.part', 'EqualTo': 1}]
    """
    if not 1 <= parts <= MAX_WRITE_LOAD_PARTS:
        raise ValueError(f"parts must be in 1..{MAX_WRITE_LOAD_PARTS}, got {parts}")
    if parts == 1:
        return [write_load_rule(log_group_names)]
    return [write_load_rule(log_group_names, i) for i in range(parts)]


def write_units(size_bytes: int) -> int:
    """Return the write capacity units of a standard write of an item.

    Parameters
    ----------
    size_bytes : int
        Item size, bytes (:func:`dynashard.core.capacity.item_size`).

    Returns
    -------
    int
        :func:`dynashard.core.capacity.write_units`: ``ceil(size / 1024)``, at least 1 (one
        WCU per started KB; DynamoDB Developer Guide, "Read/write capacity mode").

    Examples
    --------
    >>> write_units(400), write_units(1024), write_units(1025)
    (1, 1, 2)
    """
    return capacity.write_units(size_bytes)
