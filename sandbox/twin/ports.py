"""The scaler's CloudWatch stand-ins, checked against its role as the real calls would be.

Locally the scaler reads alarm states, Contributor Insights reports and its write-load
rule from in-process stand-ins (:mod:`sandbox.local_aws.alarms`,
:mod:`sandbox.local_aws.logs`, :mod:`sandbox.emulator.insights`) instead of calling
CloudWatch. :class:`CheckedPort` puts the IAM check of the call each method stands
for in front of it, so a scaler role without ``cloudwatch:DescribeAlarms`` or
``cloudwatch:GetInsightRuleReport`` fails locally as it would in AWS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sandbox.twin.iam import RolePolicy, request_checks

#: What a stand-in method's call is, as an AWS request: (service, operation, params)
#: built from the method's arguments.
Request = Callable[..., Sequence[tuple[str, str, Mapping[str, Any]]]]


class CheckedPort:
    """A proxy that checks each listed method's AWS request before delegating.

    Parameters
    ----------
    target : object
        The stand-in.
    role : RolePolicy
        The role of the function that calls it.
    requests : mapping of str to callable
        Method name to a function of the method's arguments returning the requests it
        stands for, each ``(service, operation, params)``.

    Examples
    --------
    >>> port = CheckedPort(states, role, {"alarms_in_alarm": lambda names, now: [
    ...     ("cloudwatch", "DescribeAlarms", {"AlarmNames": list(names)})]})  # doctest: +SKIP
    """

    def __init__(self, target: Any, role: RolePolicy, requests: Mapping[str, Request]) -> None:
        self._target = target
        self._role = role
        self._requests = dict(requests)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        requests = self._requests.get(name)
        if requests is None:
            return attribute

        def checked(*args: Any, **kwargs: Any) -> Any:
            for service, operation, params in requests(*args, **kwargs):
                self._role.check(
                    request_checks(
                        service, operation, params, self._role.region, self._role.account_id
                    )
                )
            return attribute(*args, **kwargs)

        return checked


def contributor_insights_requests(
    table_name: str, index_name: str | None, *_: Any, **__: Any
) -> list[tuple[str, str, Mapping[str, Any]]]:
    """Return the calls DynamoDB's Contributor Insights hot-key adapter makes.

    ``DescribeContributorInsights`` on the table (or GSI) for the rule names, then
    ``GetInsightRuleReport`` on each, named as DynamoDB names them
    (``DynamoDBContributorInsights-PKT-{table}-{creation timestamp}``, DynamoDB
    Developer Guide, "Using Contributor Insights").

    Parameters
    ----------
    table_name : str
        The table.
    index_name : str or None
        The GSI, if any.

    Returns
    -------
    list of tuple
        ``(service, operation, params)`` each.
    """
    describe: dict[str, Any] = {"TableName": table_name}
    if index_name:
        describe["IndexName"] = index_name
    rule = f"DynamoDBContributorInsights-PKT-{table_name}-0"
    return [
        ("dynamodb", "DescribeContributorInsights", describe),
        ("cloudwatch", "GetInsightRuleReport", {"RuleName": rule}),
    ]
