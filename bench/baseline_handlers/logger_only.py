"""Baseline (a) of the cold-start benchmark: a handler that imports only Powertools' Logger."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Log one line and answer.

    Parameters
    ----------
    event : dict
        Any event.
    context : LambdaContext
        The Lambda context.

    Returns
    -------
    dict
        ``{"ok": True}``.
    """
    logger.info("baseline", extra={"keys": len(event)})
    return {"ok": True}
