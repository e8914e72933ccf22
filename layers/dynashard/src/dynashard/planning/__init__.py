"""Pure decisions: how many shards, what a workload costs, how to read, when to grow.

Shard counts from load (:mod:`~dynashard.planning.shards`), capacity plans
(:mod:`~dynashard.planning.capacity`), read plans and per-shard page limits
(:mod:`~dynashard.planning.reads`), growth from alarms and hot keys
(:mod:`~dynashard.planning.scaling`) and shrinking of cool keys
(:mod:`~dynashard.planning.shrinking`). The I/O these decisions need is behind the
Protocols they declare; like :mod:`dynashard.core`, nothing here loads the AWS SDK.
"""
