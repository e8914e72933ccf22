"""dynashard's CDK app, and the ``dynashard-cdk`` package (installed as ``dynashard_cdk``).

A CDK app adds dynashard to its own stack with the construct::

    from dynashard_cdk import Dynashard, DynashardParameters

    shards = Dynashard(self, "Shards", table=table)
    shards.grant_write(service_role)

The names below are imported on first use (PEP 562), so that importing a module of
the package that needs no CDK (:mod:`infra.table_specs`, say) does not load it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import DynashardParameters, StackParameters
    from .constructs.dynashard import CONTRIBUTOR_INSIGHTS_WARNING, Dynashard

__all__ = ["CONTRIBUTOR_INSIGHTS_WARNING", "Dynashard", "DynashardParameters", "StackParameters"]

_WHERE = {
    "CONTRIBUTOR_INSIGHTS_WARNING": ".constructs.dynashard",
    "Dynashard": ".constructs.dynashard",
    "DynashardParameters": ".config",
    "StackParameters": ".config",
}


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name], __name__), name)
