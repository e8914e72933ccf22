"""The model of the whole library (tests/model/machine.py) against moto, bounded.

A derandomized hypothesis run: the same sequences every run, so a failure reproduces.
The soak (``make soak``) runs the same machine on DynamoDB Local, thousands of sequences.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from infra.table_specs import DATA_TABLE, METADATA_TABLE
from tests.model.machine import Backend, Report, machine_for

MODEL_SETTINGS = settings(
    max_examples=50,
    stateful_step_count=25,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def test_the_library_matches_its_model(ddb_client: Any) -> None:
    # Given the library's facade over moto's tables, and a plain in-memory model
    report = Report()
    machine = machine_for(
        Backend(ddb_client, DATA_TABLE.default_name, METADATA_TABLE.default_name), report=report
    )
    # When hypothesis drives random interleavings of every operation
    # Then every read, counter and resize agrees with the model (no Divergence)
    run_state_machine_as_test(machine, settings=MODEL_SETTINGS)
    assert report.sequences >= 50
