"""The DynamoDB adapters: every DynamoDB call of the library, each on an injected client.

The shard-metadata table (:mod:`~dynashard.dynamodb.metadata_store`, the port and its
adapter; :mod:`~dynashard.dynamodb.shard_metadata`, the caching and cooldown service
over it), sharded writes (:mod:`~dynashard.dynamodb.writer`) and the GSI1 bucket records
they keep (:mod:`~dynashard.dynamodb.gsi_buckets`), scatter-gather reads of the base
table (:mod:`~dynashard.dynamodb.reader`) and of GSI1
(:mod:`~dynashard.dynamodb.gsi_reader`), the reader that plans between them
(:mod:`~dynashard.dynamodb.planned_reader`), reads across time-bucketed keys
(:mod:`~dynashard.dynamodb.bucketed_reader`) and the families' writes, stored unit and
reads (:mod:`~dynashard.dynamodb.bucketed_family`, :mod:`~dynashard.dynamodb.family_units`),
sharded counters
(:mod:`~dynashard.dynamodb.counters`) and the range-sharded ordered index
(:mod:`~dynashard.dynamodb.ordered_index`).
"""
