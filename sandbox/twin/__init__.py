"""The local twin: the sandbox built from the synthesized CloudFormation template.

:mod:`sandbox.twin.synth` synthesizes the stack (no bundling) and keeps the template;
:mod:`sandbox.twin.stack` reads it; :mod:`sandbox.twin.intrinsics` resolves its
references to the local tables, queues and stream; :mod:`sandbox.twin.runtime` hands
out the functions, event source mappings, alarms, schedule, Contributor Insights rules
and routes the sandbox runs; :mod:`sandbox.twin.iam` checks every call a function makes
against its role; :mod:`sandbox.twin.sources` creates the queues and the stream.
"""

from __future__ import annotations

from sandbox.twin.runtime import LocalTwin

__all__ = ["LocalTwin"]
