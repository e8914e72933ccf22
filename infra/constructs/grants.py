"""What the library needs of IAM: one list per use, for the functions and for ``grant_*``.

Every DynamoDB operation the library calls is listed here once, as the IAM actions it
needs (``TransactWriteItems`` needs the action of each item it holds: ``PutItem``,
``UpdateItem``, ``DeleteItem``, ``ConditionCheckItem``; "Using IAM with DynamoDB
transactions", Amazon DynamoDB Developer Guide). The functions' roles
(:mod:`infra.constructs.ingest`, :mod:`~infra.constructs.query`,
:mod:`~infra.constructs.scaler`) are built from these lists, and so are the three
roles a user's own code may take (:data:`WRITE`, :data:`READ`, :data:`ADMIN`), which
:meth:`infra.constructs.dynashard.Dynashard.grant_write` and its siblings grant.
``tests/infrastructure/test_grants.py`` scans the library for its client calls and fails
when one of them is not covered by the role that makes it.

The library emits no CloudWatch metric itself (the functions' metrics go through
Powertools' embedded metric format, in their logs), so no role needs
``cloudwatch:PutMetricData``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam

#: Writing events and counters on the data table: ``BatchWriteItem`` for events (25 a
#: call), ``PutItem`` for an event written only if its slot is free and the marker of an
#: idempotent counter increment, ``UpdateItem`` (``ADD``) for counters and the GSI
#: bucket and family-unit markers, ``ConditionCheckItem`` for the idempotent counter
#: variant, ``GetItem`` for its marker (when a cancelled transaction does not say which
#: condition failed), ``BatchGetItem`` for a writer whose sort key holds no event id
#: (``epoch_ms_number``): it looks for a redelivered event on the key's other shards
#: (``ShardedWriter._find_stored``), in every ingest function (API, queue, stream), since
#: any of them may run on such a table. No Query, no Scan, no deletes.
DATA_WRITE_ACTIONS: Final = (
    "dynamodb:BatchWriteItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
)
#: What a writer needs more for an ordered index (``POST /index/{key}``): ``BatchGetItem``
#: reads the per-id pointers (already a writer's, above), ``DeleteItem`` (inside
#: ``TransactWriteItems``) removes an entry that moved.
ORDERED_INDEX_ACTIONS: Final = ("dynamodb:BatchGetItem", "dynamodb:DeleteItem")
#: Reads of the data table and its GSI: ``Query`` for scatter-gather reads and the GSI
#: bucket fan-out, ``GetItem``/``BatchGetItem`` for sharded counters (100 keys a call).
DATA_READ_ACTIONS: Final = ("dynamodb:Query", "dynamodb:GetItem", "dynamodb:BatchGetItem")
#: The operator's commands on the data table: ``Query`` for the survey of a bare key
#: before it is adopted and for exact counts, ``GetItem``, ``ConditionCheckItem`` and
#: ``DeleteItem`` for compaction (each extra copy is deleted in a transaction with a
#: condition check on the kept one).
DATA_ADMIN_ACTIONS: Final = (
    "dynamodb:Query",
    "dynamodb:GetItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
)
#: The key-schema check (``check_schema=True``, and every function whose schema is not
#: the default, when it starts): ``DescribeTable`` on the data table.
SCHEMA_CHECK_ACTIONS: Final = ("dynamodb:DescribeTable",)

#: The metadata table, for a reader: fresh shard counts and their history.
METADATA_READ_ACTIONS: Final = ("dynamodb:GetItem", "dynamodb:BatchGetItem")
#: The metadata table, for code that may change N: read the shard count, create it
#: conditionally on first use, grow it with a conditional update (optimistic lock on
#: ``last_updated``). The ingest functions and the scaler.
METADATA_READ_UPDATE_ACTIONS: Final = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
)
#: The metadata table, more for a cap raised or a key's bare partition key checked:
#: whether any shard a key would open is an adopted key's bare partition key (one
#: ``BatchGetItem`` of those keys).
CAP_ACTIONS: Final = ("dynamodb:BatchGetItem",)
#: The metadata table, more for the operator: ``Scan`` lists the sharded keys.
METADATA_ADMIN_ACTIONS: Final = ("dynamodb:Scan",)


#: The actions that change an item: a customer managed key of a table a role changes is
#: granted encrypt and decrypt, else decrypt only.
_ITEM_WRITES: Final = frozenset(
    {
        "dynamodb:BatchWriteItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
    }
)


def _union(*lists: tuple[str, ...]) -> tuple[str, ...]:
    """Return the actions of ``lists`` once each, in their first order."""
    return tuple(dict.fromkeys(action for actions in lists for action in actions))


@dataclass(frozen=True)
class LibraryRole:
    """What one use of the library needs: actions on the data and on the metadata table.

    Parameters
    ----------
    name : str
        ``write``, ``read`` or ``admin``.
    data : tuple of str
        IAM actions on the data table.
    metadata : tuple of str
        IAM actions on the shard-metadata table.
    indexes : bool
        Whether the data actions extend to the table's GSI (its ARN ``.../index/<name>``).
    """

    name: str
    data: tuple[str, ...]
    metadata: tuple[str, ...]
    indexes: bool


#: Writing with the library: ``put_events``, ``increment_counter``, an ordered index's
#: writes, the in-band growth of N, the schema check.
WRITE: Final = LibraryRole(
    "write",
    data=_union(DATA_WRITE_ACTIONS, ORDERED_INDEX_ACTIONS, SCHEMA_CHECK_ACTIONS),
    metadata=_union(METADATA_READ_UPDATE_ACTIONS, CAP_ACTIONS),
    indexes=False,
)
#: Reading with the library: ``query_events``, ``get_counter``, ``shard_info``, an ordered
#: index's reads (of the table and its GSI), the schema check.
READ: Final = LibraryRole(
    "read",
    data=_union(DATA_READ_ACTIONS, SCHEMA_CHECK_ACTIONS),
    metadata=METADATA_READ_ACTIONS,
    indexes=True,
)
#: The operator's commands (the ``dynashard`` CLI): everything a reader does, plus
#: ``grow``, ``shrink``, ``set_shard_count``, ``set_max_shards``, ``set_strategy``,
#: ``survey_bare_key``, ``adopt``, ``sharded_keys``, ``count_events`` and ``compact``.
ADMIN: Final = LibraryRole(
    "admin",
    data=_union(DATA_READ_ACTIONS, DATA_ADMIN_ACTIONS, SCHEMA_CHECK_ACTIONS),
    metadata=_union(METADATA_READ_UPDATE_ACTIONS, CAP_ACTIONS, METADATA_ADMIN_ACTIONS),
    indexes=True,
)


def grant_library_role(
    grantee: iam.IGrantable,
    role: LibraryRole,
    *,
    data_table: dynamodb.ITable,
    metadata_table: dynamodb.ITable,
    gsi_name: str | None,
) -> iam.Grant:
    """Grant ``grantee`` what ``role`` needs, on the exact table (and GSI) ARNs.

    Parameters
    ----------
    grantee : aws_cdk.aws_iam.IGrantable
        The principal (a role, a function, a user).
    role : LibraryRole
        :data:`WRITE`, :data:`READ` or :data:`ADMIN`.
    data_table, metadata_table : aws_cdk.aws_dynamodb.ITable
        The tables. A customer managed key of either is granted too (decrypt, and
        encrypt when the role writes that table), as ``Table.grant_read_data`` does.
    gsi_name : str or None
        The data table's GSI, for a role whose reads extend to it; None: no GSI.

    Returns
    -------
    aws_cdk.aws_iam.Grant
        The grant (its statements are added to the grantee's policy).
    """
    index_arns = [f"{data_table.table_arn}/index/{gsi_name}"] if role.indexes and gsi_name else []
    grant = iam.Grant.add_to_principal(
        grantee=grantee, actions=list(role.data), resource_arns=[data_table.table_arn, *index_arns]
    ).combine(
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=list(role.metadata),
            resource_arns=[metadata_table.table_arn],
        )
    )
    for table, actions in ((data_table, role.data), (metadata_table, role.metadata)):
        key = table.encryption_key
        if key is not None:
            writes = not _ITEM_WRITES.isdisjoint(actions)
            key_grant = key.grant_encrypt_decrypt(grantee) if writes else key.grant_decrypt(grantee)
            grant = grant.combine(key_grant)
    return grant
