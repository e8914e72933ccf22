"""The write-load rules: Contributor Insights on the ingest logs, one rule per part of the keys.

The ingest functions log one ``write load`` line per logical key and invocation with the
write units it was offered and its key's part of the key space
(:mod:`dynashard.core.load`). One Contributor Insights rule per part ranks the logical
keys of that part by their sum; the scaler reads every part's report (growth plans from
the offered load, the shrink sweep bounds the keys a report leaves out by that part's
100th contributor).

Why parts: ``GetInsightRuleReport`` names at most 100 contributors and cannot page, so
one rule over a fleet names the 100 busiest keys and nothing else; with hundreds of keys
hot, a key that cooled down is never named and never shrinks (``docs/benchmarks.md``,
fleet simulation, "Shrinking fails under churn"). ``P`` rules of about ``1/P`` of the keys
each name ``100 x P`` keys, and a key left out is bounded by its own part's 100th. Each
log line matches exactly one part's rule, so the matched log events (charged per event)
are as many as with one rule; each rule is one of the account's 100 per Region, and the
sweep reads each part once a minute (``GetInsightRuleReport``, 20 calls per second per
Region; CloudWatch User Guide, "CloudWatch service quotas").

The rules have names of their own (``{name prefix}-offered-write-units``, or
``...-offered-write-units-{i}-of-{P}`` per part) so that the scaler's environment and
policy can name them without a reference to this construct.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from dynashard.core.load import MAX_WRITE_LOAD_PARTS, WRITE_LOAD_RULE_SUFFIX, write_load_rules

from .functions import DynashardFunction

#: Longest Contributor Insights rule name CloudWatch accepts (``PutInsightRule``).
MAX_INSIGHT_RULE_NAME_LENGTH = 128


def write_load_rule_names(name_prefix: str, parts: int = 1) -> list[str]:
    """Return the names of the write-load rules, part 0 first.

    Parameters
    ----------
    name_prefix : str
        The names of one :class:`~infra.constructs.dynashard.Dynashard` construct's
        resources start with it: its stack's name unless told otherwise.
    parts : int
        Parts of the key space, 1 to :data:`~dynashard.core.load.MAX_WRITE_LOAD_PARTS`.

    Returns
    -------
    list of str
        ``[{name_prefix}-{WRITE_LOAD_RULE_SUFFIX}]`` for one part (e.g.
        ``dynashard-dev-offered-write-units``), else
        ``{name_prefix}-{WRITE_LOAD_RULE_SUFFIX}-{i}-of-{parts}`` for each part ``i``. The
        count is in the names: a stack that changes it replaces every rule, as the
        writers' parts change with it.

    Raises
    ------
    ValueError
        If a name is longer than the 128 characters CloudWatch allows for a rule name
        (``PutInsightRule``, CloudWatch API Reference), holds a comma (the scaler's
        environment lists the names comma-separated), or ``parts`` is out of range.
    """
    if not 1 <= parts <= MAX_WRITE_LOAD_PARTS:
        raise ValueError(f"write_load_parts must be in 1..{MAX_WRITE_LOAD_PARTS}, got {parts}")
    base = f"{name_prefix}-{WRITE_LOAD_RULE_SUFFIX}"
    names = [base] if parts == 1 else [f"{base}-{i}-of-{parts}" for i in range(parts)]
    for name in names:
        if len(name) > MAX_INSIGHT_RULE_NAME_LENGTH:
            raise ValueError(
                f"Contributor Insights rule name {name!r} is longer than "
                f"{MAX_INSIGHT_RULE_NAME_LENGTH} characters; use a shorter stack name or prefix"
            )
        if "," in name:
            raise ValueError(f"Contributor Insights rule name {name!r} holds a comma")
    return names


class WriteLoadRules(Construct):
    """The write-load Contributor Insights rules on the writers' log groups, one per part.

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct.
    construct_id : str
        Construct id.
    functions : sequence of DynashardFunction
        The functions whose ``write load`` lines the rules read (the ingest functions).
    parts : int
        Parts of the key space (the stack's ``write_load_parts``; the writers'
        ``DYNASHARD_WRITE_LOAD_PARTS`` must be the same).
    name_prefix : str
        First part of the rules' names (:func:`write_load_rule_names`).

    Attributes
    ----------
    rule_names : list of str
        The rules' names, part 0 first (plain strings): the scaler's
        ``DYNASHARD_WRITE_LOAD_RULE``, comma-separated.
    rules : list of aws_cdk.aws_cloudwatch.CfnInsightRule
        The enabled rules, part 0 first: rule ``i`` sums ``offered_wcu`` per
        ``logical_key`` over the lines of part ``i``
        (:func:`dynashard.core.load.write_load_rules`).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Sequence[DynashardFunction],
        parts: int,
        name_prefix: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.rule_names = write_load_rule_names(name_prefix, parts)
        bodies = write_load_rules([fn.log_group.log_group_name for fn in functions], parts)
        self.rules = [
            cloudwatch.CfnInsightRule(
                self,
                "Rule" if parts == 1 else f"Part{i}",
                rule_name=name,
                rule_state="ENABLED",
                rule_body=json.dumps(body, sort_keys=True),
            )
            for i, (name, body) in enumerate(zip(self.rule_names, bodies, strict=True))
        ]
