"""The model of the whole library (tests/model/machine.py) against moto, bounded.

A derandomized hypothesis run: the same sequences every run, so a failure reproduces.
Each sequence draws its table layout (the schema dimension): the sequences are split
across the layouts, not multiplied by them. Sequences of another layout are cheaper
(counters, the ordered index and compaction are refused there), so 100 examples take
the wall time the 50 of the default alone took, with as many sequences of the default
as before (55 of the 116 hypothesis runs).
The soak (``make soak``) runs the same machine on DynamoDB Local, thousands of sequences.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from infra.table_specs import DATA_TABLE, METADATA_TABLE
from tests.model.machine import LAYOUTS, Backend, Report, create_layout_tables, machine_for

MODEL_SETTINGS = settings(
    max_examples=100,
    stateful_step_count=25,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def test_the_library_matches_its_model(ddb_client: Any) -> None:
    # Given the library's facade over moto's tables (dynashard's own, and one per other
    # table layout: each sequence draws one), and a plain in-memory model
    report = Report()
    backend = Backend(
        ddb_client,
        DATA_TABLE.default_name,
        METADATA_TABLE.default_name,
        tables=create_layout_tables(ddb_client),
    )
    machine = machine_for(backend, report=report)
    # When hypothesis drives random interleavings of every operation
    # Then every read, counter and resize agrees with the model (no Divergence)
    run_state_machine_as_test(machine, settings=MODEL_SETTINGS)
    assert report.sequences >= 100
    # And the sequences were split across the layouts (not multiplied by them)
    drawn = {x.name: report.observations.get(f"layout:{x.name}", 0) for x in LAYOUTS}
    assert all(drawn.values()), drawn
