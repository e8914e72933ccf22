"""A real local SQS and Kinesis API: moto in server mode, run as its own process.

The event-source pollers (:mod:`sandbox.local_aws.pollers`) need queues and streams that behave
as AWS's do over the wire: visibility timeouts, receive counts, redrive to a dead-letter
queue after ``maxReceiveCount``, FIFO message groups, shards with sequence numbers and
iterators. moto's server (``python -m moto.server``, the ``moto[server]`` extra) serves
them. :class:`MotoServer` starts it on a free port, as :class:`~sandbox.engines.dynamodb_local.
DynamoDBLocal` starts DynamoDB Local, waits until ``ListQueues`` answers and always
stops it on exit. A separate process keeps moto's CPU off the process that runs the
handlers (the machine has few cores; one Python process has one GIL).

Examples
--------
>>> with MotoServer() as moto:  # doctest: +SKIP
...     moto.client("sqs").list_queues().get("QueueUrls", [])
[]
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.engines.dynamodb_local import (
    LOCAL_ACCESS_KEY_ID,
    LOCAL_REGION,
    LOCAL_SECRET_ACCESS_KEY,
    LocalServerProcess,
    SandboxError,
)
from sandbox.twin.intrinsics import LOCAL_ACCOUNT_ID

if TYPE_CHECKING:
    from collections.abc import Callable

_REPO_ROOT = Path(__file__).resolve().parents[2]


class MotoServerStartError(SandboxError):
    """moto's server is not installed, exited early or did not answer in time."""


def patch_fifo_redelivery_order() -> None:
    """Make moto's FIFO queues hand a group's messages out again in order.

    moto 5.2.5's ``SQSBackend.receive_message`` frees a message whose visibility timeout
    expired only when its loop reaches it, and skips every message of a group that still
    has a pending one. After a batch whose ``a2`` and ``a3`` both failed, ``a2`` is
    skipped (``a3`` still counts as pending) and ``a3`` is delivered first: the group's
    order is broken, which SQS FIFO never does. Freeing every expired message before
    the loop restores SQS's order. Applied in the server process only.
    """
    from moto.sqs.models import SQSBackend

    original = SQSBackend.receive_message
    if getattr(original, "_dynashard_patched", False):
        return

    def receive_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        queue = self.get_queue(queue_name)
        for message in list(queue.pending_messages):
            if message.visible:
                queue.pending_messages.remove(message)
        return original(self, queue_name, *args, **kwargs)

    receive_message._dynashard_patched = True  # type: ignore[attr-defined]
    SQSBackend.receive_message = receive_message  # type: ignore[method-assign]


def patch_sqs_atomic_delete() -> None:
    """Make moto's SQS delete a message without undoing a send or delete beside it.

    moto 5.2.5's ``Queue.delete_message`` rebuilds the queue's message list from a walk
    over it and then assigns it, without the queue's lock that ``add_message`` takes. A
    ``SendMessage`` or another delete served by another of the server's threads in
    between is undone: a sent message is lost, or a deleted batch comes back after its
    visibility timeout (the demo's first act waited a whole visibility timeout, about
    157 s, for ten such messages in one run of three). SQS does neither. The delete
    here runs under the queue's own lock (``Queue._messages_lock``, a
    ``threading.Condition``). Applied in the server process only; the answers are
    unchanged.
    """
    from moto.sqs.models import Queue

    original = Queue.delete_message
    if getattr(original, "_dynashard_patched", False):
        return

    def delete_message(self: Any, receipt_handle: str) -> None:
        with self._messages_lock:
            original(self, receipt_handle)

    delete_message._dynashard_patched = True  # type: ignore[attr-defined]
    Queue.delete_message = delete_message  # type: ignore[method-assign]


def patch_kinesis_shard_lookups() -> None:
    """Make moto's Kinesis shards find records by sequence number in constant time.

    moto 5.2.5's ``Shard.put_record`` copies every key of the shard to find the last
    sequence number, and ``Shard.get_records`` walks the shard from its first record on
    every call, so putting and reading ``n`` records costs ``O(n^2)``: about an hour
    of CPU for the demo's 336,776 records. A shard's sequence numbers are consecutive
    integers (each is the last plus one), so both are direct lookups here. Applied in
    the server process only; the records and answers are unchanged.
    """
    from moto.kinesis.models import Shard

    if getattr(Shard.get_records, "_dynashard_patched", False):
        return

    def get_max_sequence_number(self: Any) -> int:
        return next(reversed(self.records)) if self.records else 0

    def get_min_sequence_number(self: Any) -> int:
        return next(iter(self.records)) if self.records else 0

    def get_records(self: Any, last_sequence_id: str, limit: int | None) -> Any:
        last = int(last_sequence_id)
        if not self.records:
            return [], last, 0
        first, top = next(iter(self.records)), next(reversed(self.records))
        start = max(last + 1, first)
        stop = top if limit is None else min(top, start + limit - 1)
        results = [self.records[n] for n in range(start, stop + 1) if n in self.records]
        if not results:
            return [], last, 0
        behind_s = self.records[top].created_at - results[-1].created_at
        return results, results[-1].sequence_number, int(behind_s * 1000)

    get_records._dynashard_patched = True  # type: ignore[attr-defined]
    Shard.get_max_sequence_number = get_max_sequence_number  # type: ignore[method-assign]
    Shard.get_min_sequence_number = get_min_sequence_number  # type: ignore[method-assign]
    Shard.get_records = get_records  # type: ignore[method-assign]


def patch_sqs_clock_and_retention() -> None:
    """Make moto's SQS cost O(1), not O(queue length), per message it sends or receives.

    moto 5.2.5 checks each received message's retention through
    ``get_queue_attributes``, which builds every attribute of the queue, the
    ``ApproximateNumberOf...`` counts among them: a walk over every message in the queue,
    per message received (``O(n^2)`` for a backlog of ``n``); ``SendMessage`` builds the
    same attributes to read ``ContentBasedDeduplication``. Each step of those walks asks
    the time through ``datetime`` arithmetic (``moto.core.utils.unix_time``). A py-spy
    profile of the demo's replay had the server spend 53 % of its time in
    ``Queue.attributes`` and 39 % in ``utcnow``. Here the retention check reads the
    queue's retention period directly, and ``unix_time`` / ``unix_time_millis`` without
    an argument read ``time.time()`` (the same instant, as a float). Applied in the
    server process only; the answers are unchanged.
    """
    sqs_models: Any = importlib.import_module("moto.sqs.models")
    if getattr(sqs_models.unix_time, "_dynashard_patched", False):
        return
    original_unix_time = sqs_models.unix_time

    def unix_time(dt: Any = None) -> float:
        return time.time() if dt is None else float(original_unix_time(dt))

    def unix_time_millis(dt: Any = None) -> float:
        return unix_time(dt) * 1000.0

    def is_message_valid_based_on_retention_period(
        self: Any, queue_name: str, message: Any
    ) -> bool:
        retention_s = int(self.get_queue(queue_name).message_retention_period)
        return bool(retention_s + message.sent_timestamp / 1000 > time.time())

    unix_time._dynashard_patched = True  # type: ignore[attr-defined]
    sqs_models.unix_time = unix_time
    sqs_models.unix_time_millis = unix_time_millis
    sqs_models.SQSBackend.is_message_valid_based_on_retention_period = (
        is_message_valid_based_on_retention_period
    )


def main(argv: list[str] | None = None) -> None:
    """Run moto's server (``moto.server.main``) with the patches of this module.

    :func:`patch_fifo_redelivery_order`, :func:`patch_sqs_atomic_delete`,
    :func:`patch_kinesis_shard_lookups` and :func:`patch_sqs_clock_and_retention`.

    Parameters
    ----------
    argv : list of str, optional
        moto's server arguments (``-H host -p port``); ``sys.argv[1:]`` when None.
    """
    from moto.server import main as moto_main

    patch_fifo_redelivery_order()
    patch_sqs_atomic_delete()
    patch_kinesis_shard_lookups()
    patch_sqs_clock_and_retention()
    moto_main(argv)


def aws_client(service: str, endpoint_url: str, *, max_pool_connections: int = 16) -> Any:
    """Create a boto3 client of a local endpoint with the sandbox's dummy credentials.

    Parameters
    ----------
    service : str
        ``sqs`` or ``kinesis`` (any service moto serves).
    endpoint_url : str
        ``http://host:port`` of the moto server.
    max_pool_connections : int
        HTTP connections the client may hold (threads sharing it).

    Returns
    -------
    botocore.client.BaseClient
        The client; botocore retries refused connections and 5xx answers (standard mode,
        4 attempts).
    """
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,
        endpoint_url=endpoint_url,
        region_name=LOCAL_REGION,
        aws_access_key_id=LOCAL_ACCESS_KEY_ID,
        aws_secret_access_key=LOCAL_SECRET_ACCESS_KEY,
        config=Config(
            retries={"mode": "standard", "total_max_attempts": 4},
            max_pool_connections=max_pool_connections,
            connect_timeout=2.0,
            read_timeout=60.0,
        ),
    )


class MotoServer(LocalServerProcess):
    """Run moto's server (SQS, Kinesis, ...) for the duration of a ``with`` block.

    Parameters
    ----------
    port : int, optional
        TCP port; a free one is chosen when None.
    host : str
        Interface to listen on.
    startup_timeout_s : float
        Seconds to wait for ``ListQueues`` to answer.

    Attributes
    ----------
    endpoint_url : str
        ``http://host:port``, valid inside the ``with`` block.

    Raises
    ------
    MotoServerStartError
        On entry, when the ``moto[server]`` extra is not installed, or the process exits
        early or does not answer in time (its output is in the message).
    """

    server_name = "moto server"
    probe_request = "ListQueues"
    start_error = MotoServerStartError

    def __init__(
        self, port: int | None = None, *, host: str = "127.0.0.1", startup_timeout_s: float = 30.0
    ) -> None:
        super().__init__(port, host=host, startup_timeout_s=startup_timeout_s)

    def client(self, service: str, **kwargs: Any) -> Any:
        """Create a boto3 client of this server (see :func:`aws_client`).

        Parameters
        ----------
        service : str
            ``sqs`` or ``kinesis``.
        **kwargs
            Passed to :func:`aws_client`.

        Returns
        -------
        botocore.client.BaseClient
            A client bound to :attr:`endpoint_url`.
        """
        return aws_client(service, self.endpoint_url, **kwargs)

    def command(self) -> tuple[list[str], Path, dict[str, str] | None]:
        """Return ``python -m sandbox.engines.moto_server`` (this module's patches), from the repo.

        Returns
        -------
        tuple of (list of str, Path, dict)
            The argv, the repository root, and the environment with the repository on
            ``PYTHONPATH`` and ``MOTO_ACCOUNT_ID`` the local account
            (:data:`sandbox.twin.intrinsics.LOCAL_ACCOUNT_ID`).

        Raises
        ------
        MotoServerStartError
            When the ``moto[server]`` extra (flask) is not installed.
        """
        if importlib.util.find_spec("flask") is None:
            raise MotoServerStartError(
                "moto's server needs the moto[server] extra (flask, flask-cors): run `make install`"
            )
        assert self.port is not None
        argv = [
            sys.executable,
            "-m",
            "sandbox.engines.moto_server",
            "-H",
            self.host,
            "-p",
            str(self.port),
        ]
        path = [str(_REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(path),
            # Queues and streams in the account every local ARN is written in (the twin
            # resolves the template's ARNs and checks each role's statements in it);
            # moto's default, 123456789012, names ARNs no policy of the twin matches.
            "MOTO_ACCOUNT_ID": LOCAL_ACCOUNT_ID,
        }
        return argv, _REPO_ROOT, env

    def probe(self) -> Callable[[], object]:
        """Return a ``ListQueues`` call with one attempt and short timeouts.

        Returns
        -------
        callable
            Raises until moto's server answers.
        """
        import boto3
        from botocore.config import Config

        client = boto3.client(
            "sqs",
            endpoint_url=self.endpoint_url,
            region_name=LOCAL_REGION,
            aws_access_key_id=LOCAL_ACCESS_KEY_ID,
            aws_secret_access_key=LOCAL_SECRET_ACCESS_KEY,
            config=Config(retries={"total_max_attempts": 1}, connect_timeout=1, read_timeout=5),
        )
        return lambda: client.list_queues()


if __name__ == "__main__":
    main()
