"""A small existing service whose operation log throttles: the user dynashard is for.

The shape is the one of the daily-bucketed-keys article (see docs/add-to-your-service.md): every
operation log entry is written under one partition key, ``PK = "OPS_LOG"``, with
``SK = "{timestamp}#{agent}"`` (JavaScript's ``Date.prototype.toISOString()``, so
milliseconds) and the entry's own attributes (``agent``, ``latencyMs``, ``aiSeverity``).
This package is that service, written as its authors wrote it, without dynashard: a
table, a writer and the dashboard's read. The guide and the end-to-end story adopt its
key without copying an item.
"""
