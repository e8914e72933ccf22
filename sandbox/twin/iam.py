"""Every AWS call a local function makes, checked against its role's policy first.

A function that calls an action its role lacks fails in AWS with
``AccessDeniedException``; without a check it passes every local run. The twin binds
each botocore client a function creates to that function's role
(:func:`role_scope` around the invocation, :func:`install` on the session the
functions' clients come from) and, before the client builds a request, asks moto's IAM
policy evaluator (``moto.iam.access_control.IAMPolicy``: explicit deny wins, then any
allow, else an implicit deny) whether the role's identity-based policies allow the
action on each resource the request names. A denied call raises the
``ClientError`` AWS answers, with AWS's message::

    User: arn:aws:sts::000000000000:assumed-role/<role>/<function> is not authorized
    to perform: dynamodb:PutItem on resource: arn:aws:dynamodb:...:table/<name>
    because no identity-based policy allows the dynamodb:PutItem action

Clients created outside any function (the sandbox's own observers) are not checked.
Why moto's evaluator: it is the one the project already depends on, maintained with
moto's IAM emulation, and does the matching this needs (wildcards in actions and
resources, ``NotAction``/``NotResource``, deny precedence); conditions are not
evaluated (listed in :data:`sandbox.twin.stack.KNOWN_GAPS`).

Sources: "Policy evaluation logic" and "Actions, resources, and condition keys for
Amazon DynamoDB / Amazon SQS / Amazon Kinesis / Amazon CloudWatch" in the IAM User
Guide (which resource each action is authorized on; a batch or transaction is
authorized per table it names).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlparse

from botocore.exceptions import ClientError
from moto.iam.access_control import IAMPolicy, PermissionResult

#: IAM's service prefix where botocore's service name differs.
_PREFIX: Final = {"monitoring": "cloudwatch"}
#: HTTP status of AccessDeniedException.
ACCESS_DENIED_STATUS: Final = 400


@dataclass
class RolePolicy:
    """A function's execution role: its identity-based policy documents, resolved.

    Parameters
    ----------
    role_name : str
        The role's name (in the assumed-role ARN of a denial).
    session_name : str
        The function's name (the assumed role's session, as Lambda names it).
    documents : sequence of dict
        Policy documents (``Version``, ``Statement``) with every reference resolved.
    region, account_id : str
        Where the ARNs of the requests are written.

    Attributes
    ----------
    checked : int
        Calls checked so far (a denial included).
    """

    role_name: str
    session_name: str
    documents: Sequence[Mapping[str, Any]]
    region: str
    account_id: str
    checked: int = 0
    _policies: list[IAMPolicy] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self._policies = [IAMPolicy(json.dumps(d)) for d in self.documents]

    def set_documents(self, documents: Sequence[Mapping[str, Any]]) -> None:
        """Replace the policy documents (re-resolved once more resources are bound).

        Parameters
        ----------
        documents : sequence of dict
            Policy documents, every reference resolved.
        """
        policies = [IAMPolicy(json.dumps(d)) for d in documents]
        with self._lock:
            self.documents, self._policies = documents, policies

    @property
    def principal(self) -> str:
        """str: The assumed-role ARN AWS names in a denial."""
        return f"arn:aws:sts::{self.account_id}:assumed-role/{self.role_name}/{self.session_name}"

    def allows(self, action: str, resource: str) -> bool:
        """Tell whether the role's policies allow ``action`` on ``resource``.

        Parameters
        ----------
        action : str
            ``service:Operation``, e.g. ``dynamodb:Query``.
        resource : str
            The resource's ARN, or ``*`` for an action without resource-level permissions.

        Returns
        -------
        bool
            True when some statement allows it and none denies it.
        """
        with self._lock:
            policies = self._policies
        results = [p.is_action_permitted(action, resource) for p in policies]
        if PermissionResult.DENIED in results:
            return False
        return PermissionResult.PERMITTED in results

    def check(self, checks: Sequence[tuple[str, str]]) -> None:
        """Raise AWS's ``AccessDeniedException`` unless every (action, resource) is allowed.

        Parameters
        ----------
        checks : sequence of tuple of (str, str)
            What :func:`request_checks` returns for one request.

        Raises
        ------
        botocore.exceptions.ClientError
            ``AccessDeniedException`` naming the principal, the first action denied and
            its resource.
        """
        with self._lock:
            self.checked += 1
        for action, resource in checks:
            if not self.allows(action, resource):
                raise access_denied(self.principal, action, resource)


def access_denied(principal: str, action: str, resource: str) -> ClientError:
    """Build the ``ClientError`` AWS returns for an action the caller may not perform.

    Parameters
    ----------
    principal : str
        The caller's ARN.
    action : str
        ``service:Operation``.
    resource : str
        The resource's ARN.

    Returns
    -------
    botocore.exceptions.ClientError
        Code ``AccessDeniedException``, HTTP 400, AWS's message.
    """
    message = (
        f"User: {principal} is not authorized to perform: {action} on resource: {resource} "
        f"because no identity-based policy allows the {action} action"
    )
    return ClientError(
        {
            "Error": {"Code": "AccessDeniedException", "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": ACCESS_DENIED_STATUS},
        },
        action.split(":", 1)[1],
    )


def _table_arn(region: str, account: str, table: str, index: str | None = None) -> str:
    if table.startswith("arn:"):
        base = table
    else:
        base = f"arn:aws:dynamodb:{region}:{account}:table/{table}"
    return f"{base}/index/{index}" if index else base


#: A transaction's item kinds and the IAM action each is authorized as ("Using IAM with
#: DynamoDB transactions", DynamoDB Developer Guide: there is no TransactWriteItems or
#: TransactGetItems action to allow).
_TRANSACT_ACTIONS: Final = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


def _dynamodb(
    operation: str, params: Mapping[str, Any], region: str, account: str
) -> list[tuple[str, str]]:
    if "TransactItems" in params:  # TransactGetItems, TransactWriteItems
        checks = {
            (f"dynamodb:{_TRANSACT_ACTIONS[kind]}", _table_arn(region, account, op["TableName"]))
            for item in params["TransactItems"]
            for kind, op in item.items()
        }
        return sorted(checks)
    action = f"dynamodb:{operation}"
    if "TableName" in params:
        return [(action, _table_arn(region, account, params["TableName"], params.get("IndexName")))]
    if "RequestItems" in params:  # BatchGetItem, BatchWriteItem
        return [(action, _table_arn(region, account, t)) for t in params["RequestItems"]]
    if "ResourceArn" in params:
        return [(action, str(params["ResourceArn"]))]
    return [(action, "*")]


def _queue_arn(region: str, account: str, url: str) -> str:
    return f"arn:aws:sqs:{region}:{account}:{urlparse(url).path.rsplit('/', 1)[-1]}"


#: SQS batch operations are authorized as their single action ("Amazon SQS API
#: permissions: Actions and resource reference", SQS Developer Guide).
_BATCH_AS: Final = {
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
    "SendMessageBatch": "SendMessage",
}


def request_checks(
    service: str, operation: str, params: Mapping[str, Any], region: str, account: str
) -> list[tuple[str, str]]:
    """Return the (action, resource ARN) pairs a request is authorized on.

    Parameters
    ----------
    service : str
        botocore's service name (``dynamodb``, ``sqs``, ``kinesis``, ``cloudwatch``).
    operation : str
        The API operation, e.g. ``Query``.
    params : mapping
        The operation's parameters, as the caller passed them.
    region, account : str
        Where the ARNs are written.

    Returns
    -------
    list of tuple of (str, str)
        One pair per table, index, queue, stream, alarm or rule the request names
        (a transaction: one per item kind and table, as its underlying action); the
        resource is ``*`` for an action without resource-level permissions
        (``PutMetricData``).

    Examples
    --------
    >>> request_checks("dynamodb", "Query", {"TableName": "t", "IndexName": "G"}, "r", "1")
    [('dynamodb:Query', 'arn:aws:dynamodb:r:1:table/t/index/G')]
    """
    if service == "dynamodb":
        return _dynamodb(operation, params, region, account)
    action = f"{_PREFIX.get(service, service)}:{_BATCH_AS.get(operation, operation)}"
    if service == "sqs" and "QueueUrl" in params:
        return [(action, _queue_arn(region, account, params["QueueUrl"]))]
    if service == "kinesis":
        if "StreamARN" in params:
            return [(action, str(params["StreamARN"]))]
        if "StreamName" in params:
            return [(action, f"arn:aws:kinesis:{region}:{account}:stream/{params['StreamName']}")]
    if service == "cloudwatch":
        if "RuleName" in params:
            rule = f"arn:aws:cloudwatch:{region}:{account}:insight-rule/{params['RuleName']}"
            return [(action, rule)]
        if params.get("AlarmNames"):
            alarm = f"arn:aws:cloudwatch:{region}:{account}:alarm:"
            return [(action, alarm + name) for name in params["AlarmNames"]]
    return [(action, "*")]


#: The role of the function whose invocation is running in this context.
_CURRENT_ROLE: contextvars.ContextVar[RolePolicy | None] = contextvars.ContextVar(
    "twin_role", default=None
)
#: The one resource a client created in this context reads (an event source mapping's
#: queue or stream): the resource of its requests that name none (``GetRecords`` names
#: only a shard iterator).
_CURRENT_SOURCE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "twin_source", default=None
)


@contextlib.contextmanager
def role_scope(role: RolePolicy | None, source_arn: str | None = None) -> Iterator[None]:
    """Run a block as a function with ``role``: clients it creates are checked against it.

    Parameters
    ----------
    role : RolePolicy or None
        The role; None runs the block unchecked.
    source_arn : str, optional
        For the clients of an event source mapping (Lambda polls with the function's
        role): its queue or stream, the resource of the requests that name none.

    Yields
    ------
    None
        Inside the block.
    """
    token = _CURRENT_ROLE.set(role)
    source = _CURRENT_SOURCE.set(source_arn)
    try:
        yield
    finally:
        _CURRENT_SOURCE.reset(source)
        _CURRENT_ROLE.reset(token)


#: Registration id of the per-client check (distinct from the session hook's: a client's
#: emitter is a copy of the session's, and an id registered twice is ignored).
_CHECK_ID: Final = "dynashard-twin-iam-check"


class _RoleCheckedClient:
    """Mixin botocore adds to every client class it creates on an installed session."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        role, source_arn = _CURRENT_ROLE.get(), _CURRENT_SOURCE.get()
        if role is not None:
            meta = self.meta  # type: ignore[attr-defined]
            service = meta.service_model.service_name

            def check(params: Mapping[str, Any], model: Any, **_: Any) -> None:
                checks = request_checks(service, model.name, params, role.region, role.account_id)
                if source_arn is not None:
                    checks = [(a, source_arn if r == "*" else r) for a, r in checks]
                role.check(checks)

            meta.events.register("before-parameter-build", check, unique_id=_CHECK_ID)


def _add_mixin(base_classes: list[type], **_: Any) -> None:
    if _RoleCheckedClient not in base_classes:
        base_classes.insert(0, _RoleCheckedClient)


def install(session: Any) -> None:
    """Check every call of the clients ``session`` creates inside a :func:`role_scope`.

    Parameters
    ----------
    session : botocore.session.Session
        The session the functions' clients come from (boto3's default session's
        ``_session``); ``creating-client-class`` is botocore's documented hook for
        extending client classes.
    """
    session.register("creating-client-class", _add_mixin, unique_id="dynashard-twin-iam")


def install_default() -> None:
    """Run :func:`install` on every session the functions' clients come from.

    ``boto3.client`` (the functions' own clients, the metadata and CloudWatch adapters)
    creates clients from boto3's default session; the facade's DynamoDB client comes
    from the library's own session (:func:`dynashard.dynamodb.raw_items.raw_items_session`,
    whose Query responses keep their items raw). Both are checked: a session left out
    would let its clients' calls through unchecked.
    """
    import boto3

    from dynashard.dynamodb.raw_items import raw_items_session

    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    assert boto3.DEFAULT_SESSION is not None
    install(boto3.DEFAULT_SESSION._session)
    install(raw_items_session()._session)


def uninstall(session: Any) -> None:
    """Undo :func:`install` (clients created before keep their check).

    Parameters
    ----------
    session : botocore.session.Session
        The session.
    """
    session.unregister("creating-client-class", _add_mixin, unique_id="dynashard-twin-iam")
