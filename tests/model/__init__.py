"""A stateful model of the whole library (issue 26), shared by the moto test and the soak.

:mod:`tests.model.machine` holds the in-memory model of what was acknowledged and the
hypothesis state machine that drives :class:`dynashard.Dynashard` against it; the moto
runner is ``tests/unit/library/test_model.py`` and the DynamoDB Local soak is
``python -m tests.model.soak`` (``make soak``).
"""
