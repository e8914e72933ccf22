"""The pure core: values and rules of sharding, with no AWS SDK.

Keys and their formats (:mod:`~dynashard.core.keys`), write strategies
(:mod:`~dynashard.core.strategies`), time buckets (:mod:`~dynashard.core.buckets`) and
time-bucketed key families (:mod:`~dynashard.core.families`), a key's shard counts over
time (:mod:`~dynashard.core.shard_info`), DynamoDB's capacity rules
(:mod:`~dynashard.core.capacity`), the k-way merge and its cursors
(:mod:`~dynashard.core.merge`), range layouts (:mod:`~dynashard.core.ordered`),
throttling reasons (:mod:`~dynashard.core.throttling`), the data table's key schema and
sort-key codecs (:mod:`~dynashard.core.schema`), load records
(:mod:`~dynashard.core.load`) and back-off (:mod:`~dynashard.core.retry`).

Every module of this package takes data and returns data: none loads boto3, botocore or
pydantic, or a module of :mod:`dynashard.dynamodb`, :mod:`dynashard.cloudwatch`,
:mod:`dynashard.lambda_kit` or :mod:`dynashard.cli` (``tests/unit/library/test_layers.py``).
"""
