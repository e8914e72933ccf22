"""The botocore sessions the stack's code creates its clients from.

The functions' own clients (``boto3.client``) come from boto3's default session; the
library's (:func:`dynashard.facade.make_client`, the CloudWatch adapters) from its own
process-wide session (:func:`dynashard.dynamodb.raw_items.raw_items_session`), whose
Query responses keep their items raw. A hook the sandbox puts on the clients a session
creates (the in-process emulator's ``before-send``, the twin's IAM check on
``creating-client-class``) must be put on both, or the library's calls would go
unemulated and unchecked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from botocore.session import Session as BotocoreSession


def client_sessions() -> list[BotocoreSession]:
    """Return the botocore sessions behind every client the stack's code creates.

    Returns
    -------
    list of botocore.session.Session
        boto3's default session's (set up if none is) and the library's own.
    """
    import boto3

    from dynashard.dynamodb.raw_items import raw_items_session

    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    default = boto3.DEFAULT_SESSION
    if default is None:  # setup_default_session always sets it
        raise RuntimeError("boto3 has no default session")
    return [default._session, raw_items_session()._session]
