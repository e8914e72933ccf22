"""One pass over each Query response: botocore leaves the items as they came.

botocore's JSON response parser walks every value of a response against the API model
(``AttributeValue`` is a structure: every attribute of every item is a dict visited
member by member, every ``B`` base64-decoded) before the library walks the same items
again to turn them into plain values (:func:`dynashard.model.plain_value`). On the read
path that first walk was about 40 % of a reading process's CPU (issue 29's profile)
and produced nothing the second walk needed: DynamoDB's wire JSON already is the typed
form, the same dicts, tags and number strings.

This module gives the library's client a botocore session whose response parser
factory (``Session.register_component("response_parser_factory", ...)``, botocore's
public hook) makes a JSON parser that, for a *successful* response of the operations in
:data:`RAW_MEMBERS`, leaves that member (``Items`` of ``Query``) as ``json.loads`` gave
it, and walks every other member (``Count``, ``ScannedCount``, ``LastEvaluatedKey``,
``ConsumedCapacity``) against the model as before. The result differs from botocore's
in one way only: a ``B`` value (and each ``BS`` member) of an item is the base64 text of
the wire, not ``bytes``. :func:`~dynashard.model.plain_value` accepts both and gives the
same ``Binary`` for either.

What does not change: signing, retries (and their ``RetryAttempts``), the
``before-send`` hook (the in-process emulator and the tracer), ``ResponseMetadata``
(``RequestId``, ``HTTPStatusCode``, ``HTTPHeaders``), every other operation's response,
and errors: a response with status >= 301 never reaches the overridden method for its
output shape, and its modeled fields (``ThrottlingReasons`` of
``ProvisionedThroughputExceededException``, ``CancellationReasons``) are parsed against
the error shape, which is not in :data:`RAW_MEMBERS`.

The overridden method, ``JSONParser._handle_json_body(raw_body, shape)``, is not
public; ``tests/unit/library/dynamodb/test_raw_items.py`` pins the contract this module relies
on, so that a botocore release that moves it fails a test instead of silently turning
the fast path off.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final

from botocore.parsers import JSONParser, ResponseParserFactory

if TYPE_CHECKING:
    import boto3
    from botocore.model import Shape

#: Output shape name -> the member left as the wire JSON had it (typed items).
RAW_MEMBERS: Final[dict[str, str]] = {"QueryOutput": "Items"}


def _raw_member(shape: Shape | None) -> str | None:
    """Return the member of ``shape`` left raw: DynamoDB's list of items, else None.

    The session is the process's one (:func:`raw_items_session`), so its clients of
    other services (CloudWatch) share this parser too: a shape qualifies only when its
    name is in :data:`RAW_MEMBERS` and that member is a list of maps of DynamoDB's
    ``AttributeValue``, so that another service's ``QueryOutput`` is parsed as botocore
    parses it.
    """
    if shape is None:
        return None
    member = RAW_MEMBERS.get(shape.name)
    if member is None:
        return None
    items = shape.members.get(member)
    value = getattr(getattr(items, "member", None), "value", None)
    return member if getattr(value, "name", None) == "AttributeValue" else None


class RawItemsJSONParser(JSONParser):  # type: ignore[misc]
    """botocore's ``json`` protocol parser, leaving a Query's ``Items`` unwalked.

    Every response other than a successful one of :data:`RAW_MEMBERS`'s shapes is
    parsed exactly as :class:`botocore.parsers.JSONParser` parses it.
    """

    def _handle_json_body(self, raw_body: bytes, shape: Shape | None) -> Any:
        member = _raw_member(shape)
        if member is None:
            return super()._handle_json_body(raw_body, shape)
        body = self._parse_body_as_json(raw_body)
        if not isinstance(body, dict):  # not an object: botocore's own handling
            return self._parse_shape(shape, body)
        raw = body.pop(member, None)
        parsed = self._parse_shape(shape, body)
        if raw is not None and parsed is not None:
            parsed[member] = raw
        return parsed


class RawItemsParserFactory(ResponseParserFactory):  # type: ignore[misc]
    """A response parser factory whose ``json`` parser is :class:`RawItemsJSONParser`."""

    def create_parser(self, protocol_name: str) -> Any:
        """Return the parser of a protocol: the raw-items one for ``json``.

        Parameters
        ----------
        protocol_name : str
            botocore's resolved protocol of the service (DynamoDB: ``json``).

        Returns
        -------
        ResponseParser
            :class:`RawItemsJSONParser` for ``json``, botocore's own otherwise.
        """
        if protocol_name != "json":
            return super().create_parser(protocol_name)
        return RawItemsJSONParser(**self._defaults)


_lock = threading.Lock()
_session: boto3.Session | None = None


def raw_items_session() -> boto3.Session:
    """Return the process's boto3 session whose Query responses keep their items raw.

    Created on first use (never at import time) and shared, as boto3's default session
    is: credentials, region and configuration come from the environment the same way,
    and from the profile and region of boto3's default session when the program set
    one up (``boto3.setup_default_session(profile_name=..., region_name=...)``) before
    the first use. Credentials passed to ``setup_default_session`` as keys are not
    carried over: pass such a program's own client to :class:`~dynashard.Dynashard`.
    Every client the library creates for itself comes from it, DynamoDB's and
    CloudWatch's alike (:func:`dynashard.facade.make_client`, the adapters of
    :mod:`dynashard.cloudwatch`): one botocore session, so one loader, one endpoint
    resolver and one credential chain per process. A second session (boto3's default)
    would load botocore's data files and resolve the configuration again, about 50 ms
    of a cold start (``bench/cold_start.py``).

    Returns
    -------
    boto3.Session
        A session over a botocore session with :class:`RawItemsParserFactory`
        registered as its ``response_parser_factory``.
    """
    global _session
    with _lock:
        if _session is None:
            import boto3
            import botocore.session

            core = botocore.session.get_session()
            core.register_component("response_parser_factory", RawItemsParserFactory())
            default = boto3.DEFAULT_SESSION
            _session = boto3.Session(
                botocore_session=core,
                profile_name=None if default is None else _profile(default),
                region_name=None if default is None else default.region_name,
            )
        return _session


def _profile(session: boto3.Session) -> str | None:
    """Return the profile a boto3 session was set up with, None for the environment's."""
    name = session.profile_name  # boto3 says "default" when none was named
    return None if name == "default" else name


__all__ = ["RAW_MEMBERS", "RawItemsJSONParser", "RawItemsParserFactory", "raw_items_session"]
