"""The patches sandbox.engines.moto_server applies to moto's server keep moto's answers."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import boto3
from moto import mock_aws
from moto.sqs.models import sqs_backends

from sandbox.engines.moto_server import patch_sqs_atomic_delete, patch_sqs_clock_and_retention


def test_sqs_patch_keeps_send_receive_delete_and_the_retention_rule() -> None:
    patch_sqs_clock_and_retention()
    import moto.sqs.models as models

    # Given the patched clock, it reads the same instant as time.time()
    before = time.time()
    assert before <= models.unix_time() <= time.time()
    assert abs(models.unix_time_millis() / 1000.0 - time.time()) < 1.0
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="q", Attributes={"MessageRetentionPeriod": "60"})[
            "QueueUrl"
        ]
        # When messages are sent, received and deleted
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(5)]
        )
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        assert sorted(m["Body"] for m in got) == [f"m{i}" for i in range(5)]
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)
            ],
        )
        assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)
        # Then the retention rule reads the queue's own period (60 s)
        backend = sqs_backends["123456789012"]["us-east-1"]
        fresh = SimpleNamespace(sent_timestamp=int(time.time() * 1000) - 59_000)
        stale = SimpleNamespace(sent_timestamp=int(time.time() * 1000) - 61_000)
        assert backend.is_message_valid_based_on_retention_period("q", fresh) is True
        assert backend.is_message_valid_based_on_retention_period("q", stale) is False


def test_a_delete_does_not_undo_a_delete_served_meanwhile() -> None:
    patch_sqs_atomic_delete()
    from moto.sqs.models import Queue

    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)]
        )
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3)["Messages"]
        handles = {m["Body"]: m["ReceiptHandle"] for m in got}
        queue: Queue = sqs_backends["123456789012"]["us-east-1"].get_queue("q")
        by_body = {m.body: m for m in queue._messages}
        last = by_body["m2"]
        original = last.had_receipt_handle
        other_deleted = threading.Event()
        threads: list[threading.Thread] = []

        def delete_other() -> None:
            queue.delete_message(handles["m1"])
            other_deleted.set()

        def delete_served_meanwhile(handle: str) -> bool:
            # Given a delete of m1 served by another thread while the delete of m0 walks
            # the queue (the first call on m2 is that walk's)
            if not threads:
                threads.append(threading.Thread(target=delete_other))
                threads[0].start()
                other_deleted.wait(0.5)  # the patched delete holds the queue's lock
            return bool(original(handle))

        last.had_receipt_handle = delete_served_meanwhile  # type: ignore[method-assign]
        # When m0 is deleted
        queue.delete_message(handles["m0"])
        threads[0].join(5)
        # Then both deletes hold: only m2 is left
        assert [m.body for m in queue._messages] == ["m2"]
