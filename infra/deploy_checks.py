"""checkov and cfn-lint suppressions, written into the template by the owning constructs.

The deploy checks (``tests/infrastructure/test_deploy_checks.py``) run checkov and
cfn-lint on the synthesized template. A finding that is accepted, not fixed, is
suppressed on the one resource it concerns, in the resource's ``Metadata``, by the
construct that builds that resource, with the reason beside the rule id:

- checkov: ``Metadata.checkov.skip = [{"id": "CKV_AWS_…", "comment": reason}]``
  (checkov's documented CloudFormation suppression);
- cfn-lint: ``Metadata.cfn-lint.config.ignore_checks = ["W…"]`` (cfn-lint's
  documented resource-level configuration); cfn-lint has no field for a reason, so the
  reason goes beside it in ``Metadata.cfn-lint.reasons`` (cfn-lint ignores that key).

A reason must say why the check does not apply or what covers its risk; the tests
check that every suppression carries one. The reasons the stack uses are the
constants below (one per finding, shared by the resources it concerns); cdk-nag's are
in :mod:`infra.nag`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnResource
from constructs import IConstruct

#: The key of checkov's suppressions in a resource's ``Metadata``.
CHECKOV_METADATA_KEY = "checkov"
#: The key of cfn-lint's resource configuration in a resource's ``Metadata``.
CFN_LINT_METADATA_KEY = "cfn-lint"
#: Shortest reason accepted: as for cdk-nag's (tests/infrastructure/test_nag_and_outputs.py),
#: a reviewer should not have to guess from a few words.
MIN_REASON_LENGTH = 120


@dataclass(frozen=True)
class Suppression:
    """One accepted finding of a deploy check and the reason it is accepted.

    Parameters
    ----------
    id : str
        The rule id: ``CKV_AWS_…`` (checkov) or ``W…``/``E…`` (cfn-lint).
    reason : str
        Why the finding does not apply, or what covers its risk (at least
        :data:`MIN_REASON_LENGTH` characters).

    Raises
    ------
    ValueError
        If the reason is shorter than :data:`MIN_REASON_LENGTH`.
    """

    id: str
    reason: str

    def __post_init__(self) -> None:
        if len(self.reason.strip()) < MIN_REASON_LENGTH:
            raise ValueError(f"the reason to suppress {self.id} is too short: {self.reason!r}")


def _cfn_resource(target: IConstruct) -> CfnResource:
    """Return the CloudFormation resource of an L1 or L2 construct."""
    if isinstance(target, CfnResource):
        return target
    child = target.node.default_child
    if not isinstance(child, CfnResource):
        raise TypeError(f"{target.node.path} has no CloudFormation resource to annotate")
    return child


def skip_checkov(target: IConstruct, *suppressions: Suppression) -> None:
    """Suppress checkov checks on one resource, each with its reason.

    Parameters
    ----------
    target : constructs.IConstruct
        The resource: an L1 ``CfnResource`` or an L2 construct whose default child is.
    *suppressions : Suppression
        ``CKV_…`` ids and their reasons; added to any already on the resource.

    Examples
    --------
    >>> from aws_cdk import Stack, aws_sqs as sqs
    >>> queue = sqs.Queue(Stack(), "Q")
    >>> skip_checkov(queue, SSE_SQS)
    >>> queue.node.default_child.get_metadata("checkov")["skip"][0]["id"]
    'CKV_AWS_27'
    """
    resource = _cfn_resource(target)
    current: dict[str, Any] = resource.get_metadata(CHECKOV_METADATA_KEY) or {}
    skips = list(current.get("skip", []))
    skips.extend({"id": s.id, "comment": s.reason} for s in suppressions)
    resource.add_metadata(CHECKOV_METADATA_KEY, {**current, "skip": skips})


def ignore_cfn_lint(target: IConstruct, *suppressions: Suppression) -> None:
    """Ignore cfn-lint rules on one resource, each with its reason.

    Parameters
    ----------
    target : constructs.IConstruct
        The resource: an L1 ``CfnResource`` or an L2 construct whose default child is.
    *suppressions : Suppression
        cfn-lint rule ids and their reasons; added to any already on the resource.
    """
    resource = _cfn_resource(target)
    current: dict[str, Any] = resource.get_metadata(CFN_LINT_METADATA_KEY) or {}
    config = dict(current.get("config", {}))
    ignored = list(config.get("ignore_checks", []))
    reasons = dict(current.get("reasons", {}))
    for s in suppressions:
        ignored.append(s.id)
        reasons[s.id] = s.reason
    config["ignore_checks"] = ignored
    resource.add_metadata(CFN_LINT_METADATA_KEY, {**current, "config": config, "reasons": reasons})


# --- every function (infra.constructs.functions) ---------------------------------------

NO_VPC = Suppression(
    "CKV_AWS_117",
    "The function reaches only AWS service endpoints (DynamoDB, CloudWatch, X-Ray), each "
    "call signed with its own least-privilege role; it has no private resource to reach. "
    "A VPC would add NAT or interface endpoints (cost, another failure point) and "
    "protect nothing here.",
)
ENVIRONMENT_NOT_SECRET = Suppression(
    "CKV_AWS_173",
    "The environment holds table, alarm and rule names and tuning numbers, no secret; "
    "Lambda encrypts it at rest with its AWS managed key anyway. A customer managed key "
    "would add a key policy and KMS calls at every cold start for no confidentiality gain.",
)
LOGS_SERVICE_ENCRYPTED = Suppression(
    "CKV_AWS_158",
    "CloudWatch Logs encrypts every log group at rest (service-managed keys). The logs "
    "hold request ids, logical keys and counts, no credentials, and the data table itself "
    "uses the AWS managed key; a customer managed key would add a key policy for the "
    "logs service principal and a per-key cost without a data classification requiring it.",
)
ROLE_DEPENDENCY = Suppression(
    "W3005",
    "CDK adds DependsOn on the function's role and its default policy so that the policy "
    "exists before the function can run; the role half is redundant with the GetAtt on "
    "Role, which is harmless (CloudFormation orders the same way). CDK owns that "
    "DependsOn; overriding it would risk dropping the policy's half.",
)

# --- synchronously invoked functions (API, SQS and Kinesis event sources) ---------------

SYNC_NO_DLQ = Suppression(
    "CKV_AWS_116",
    "Invoked synchronously (API Gateway proxy integration): a failure is returned to the "
    "caller as a 5xx, and Lambda keeps no event to dead-letter. A DLQ applies only to "
    "asynchronous invocations, which this function never receives.",
)
SQS_SOURCE_NO_DLQ = Suppression(
    "CKV_AWS_116",
    "Invoked synchronously by the SQS event source mapping: a failed message stays on the "
    "ingest queue and moves to its redrive dead-letter queue (IngestDeadLetterQueue, "
    "alarmed) after queue_max_receive_count receives. A function DLQ applies only to "
    "asynchronous invocations.",
)
KINESIS_SOURCE_NO_DLQ = Suppression(
    "CKV_AWS_116",
    "Invoked synchronously by the Kinesis event source mapping, whose on-failure "
    "destination (IngestStreamFailureQueue, alarmed) receives every batch given up on "
    "after kinesis_retry_attempts bisected retries. A function DLQ applies only to "
    "asynchronous invocations.",
)
API_CONCURRENCY = Suppression(
    "CKV_AWS_115",
    "Behind the API stage, whose throttling (api_rate_limit, api_burst_limit) bounds the "
    "concurrency; a reserved slice of the account's pool would turn a burst into 429s "
    "below the stage's limits and take capacity from every other function.",
)
SQS_CONCURRENCY = Suppression(
    "CKV_AWS_115",
    "Concurrency is driven by the SQS event source mapping, which scales pollers with the "
    "backlog and retries throttled batches (messages stay on the queue); a reserved cap "
    "would only slow draining and cannot lose data. The table's on-demand maximum "
    "throughput is the stack's cap on write load.",
)
KINESIS_CONCURRENCY = Suppression(
    "CKV_AWS_115",
    "Concurrency is bounded by the stream: one batch per shard at a time "
    "(parallelization factor 1), so it follows the on-demand stream's shard count; "
    "records wait in the stream (24 h retention) when invocations are throttled.",
)

# --- queues, the API stage ---------------------------------------------------------------

SSE_SQS = Suppression(
    "CKV_AWS_27",
    "Encrypted at rest with SSE-SQS (SqsManagedSseEnabled: true, checked by "
    "tests/infrastructure/test_deploy_checks.py); checkov 3 reads only KmsMasterKeyId. A "
    "customer managed key would need kms:GenerateDataKey for every producer (Lambda's "
    "destinations, the event source mappings) for no added protection.",
)
NO_API_CACHE = Suppression(
    "CKV_AWS_120",
    "Reads return the latest merged shard state and counters, and the POST methods are "
    "never cacheable; a stage cache would serve stale reads and costs per hour. Stage "
    "throttling, not a cache, protects the functions.",
)
