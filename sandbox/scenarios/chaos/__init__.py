"""The chaos run: real events through the pollers while the system is hurt, then an audit.

``python -m sandbox.scenarios.chaos`` (``make chaos``); what it does and checks is told
in :mod:`sandbox.scenarios.chaos.cli`. Parts, one concern each:

- :mod:`~sandbox.scenarios.chaos.poison`: records no ingest accepts, and why;
- :mod:`~sandbox.scenarios.chaos.ledger`: acknowledgements, and the readers' checks;
- :mod:`~sandbox.scenarios.chaos.faults`: the schedule, and each fault;
- :mod:`~sandbox.scenarios.chaos.replay`: the producer, the counter client, the injector;
- :mod:`~sandbox.scenarios.chaos.audit`: the checks after the run, and the report;
- :mod:`~sandbox.scenarios.chaos.cli`: the command line (``__main__`` runs it).
"""
