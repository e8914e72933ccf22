"""Signed cursors: the HTTP API hands out only cursors it can recognise as its own.

The library's cursors (:class:`~dynashard.core.merge.Cursor` and its kin) are opaque
but unsigned: a cursor is base64 of a small JSON document naming the query and the
position to resume after, and the library checks the query, not the position. A library
user runs trusted code with their own credentials; an HTTP client does not, and a forged
or edited position reached DynamoDB, whose ``ValidationException`` ("The provided
starting key is invalid") came back as a retryable 503. The HTTP layer therefore wraps
each cursor it sends with an HMAC (:class:`CursorSigner`) and refuses, as a 400 naming
``cursor``, any cursor whose signature does not verify: forged, edited, truncated, or
issued by another deployment (another key). The library's own cursor API is unchanged:
what the routes pass to the library, and what library users pass, is the library's
cursor.

Why the standard library (:mod:`hmac`, :mod:`hashlib`) and not ``itsdangerous``: the
whole need is one HMAC-SHA256 over the library's cursor text and a constant-time
comparison (:func:`hmac.compare_digest`), which is what ``itsdangerous.Signer`` does
underneath; the cursor is already a serialized document, so its serializers and
timestamps would go unused, and the Lambda layer and the library's ``lambda`` extra stay
without one more package (and one more import at every cold start).

The key comes from the stack (a Secrets Manager secret the stack generates, handed to
the query function as ``DYNASHARD_CURSOR_KEY``, :data:`dynashard.names.ENV_CURSOR_KEY`;
the sandbox takes it from the same template). Rotating it invalidates the cursors
handed out before: their clients get a 400 naming ``cursor`` and start the read again.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Final

from dynashard.errors import CursorError

#: Bytes of the HMAC-SHA256 kept in a signed cursor: 128 bits, 22 base64 characters
#: (NIST SP 800-107 rev. 1, section 5.3.4: a truncated MAC of at least 64 bits).
SIGNATURE_BYTES: Final = 16
#: Shortest key accepted, characters: the stack's generated secret is 64.
MIN_KEY_LENGTH: Final = 32
#: Separates the library's cursor from its signature (never in URL-safe base64).
_SEPARATOR: Final = "."
#: Domain separation: the MAC of a cursor is no MAC of anything else signed with the key.
_CONTEXT: Final = b"dynashard-http-cursor-v1\x00"


class CursorSigner:
    """Sign the library's cursors for an HTTP client, and verify them when they return.

    Parameters
    ----------
    key : str
        The secret key, at least :data:`MIN_KEY_LENGTH` characters.

    Raises
    ------
    ValueError
        If the key is shorter than :data:`MIN_KEY_LENGTH` (a misconfigured function).

    Examples
    --------
    >>> signer = CursorSigner("k" * 32)
    >>> token = signer.sign("eyJ2IjoxfQ")
    >>> token.startswith("eyJ2IjoxfQ."), signer.open(token)
    (True, 'eyJ2IjoxfQ')
    >>> signer.open("eyJ2IjoyfQ" + token[10:])
    Traceback (most recent call last):
    ...
    dynashard.errors.CursorError: cursor: was not issued by this API (or not for this deployment)
    """

    def __init__(self, key: str) -> None:
        if len(key) < MIN_KEY_LENGTH:
            raise ValueError(
                f"cursor key: {len(key)} characters, at least {MIN_KEY_LENGTH} are needed"
            )
        self._key = key.encode("utf-8")

    def _mac(self, cursor: str) -> str:
        digest = hmac.new(self._key, _CONTEXT + cursor.encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:SIGNATURE_BYTES]).decode("ascii").rstrip("=")

    def sign(self, cursor: str) -> str:
        """Return ``cursor`` with its signature appended (``{cursor}.{mac}``).

        Parameters
        ----------
        cursor : str
            A cursor the library returned.

        Returns
        -------
        str
            URL-safe text, 23 characters longer.
        """
        return f"{cursor}{_SEPARATOR}{self._mac(cursor)}"

    def open(self, token: str) -> str:
        """Return the library's cursor inside a signed cursor, once its signature verifies.

        Parameters
        ----------
        token : str
            A cursor as the client sent it.

        Returns
        -------
        str
            The library's cursor, to pass to the read.

        Raises
        ------
        CursorError
            Naming ``cursor``, if the token carries no signature or one this key did not
            make (forged, edited, truncated, or issued with another key).
        """
        # Every cursor the library makes is URL-safe base64, so ASCII (and compare_digest
        # compares str of ASCII only).
        cursor, separator, mac = token.rpartition(_SEPARATOR)
        if (
            not token.isascii()
            or not separator
            or not cursor
            or not hmac.compare_digest(mac, self._mac(cursor))
        ):
            raise CursorError("was not issued by this API (or not for this deployment)")
        return cursor
