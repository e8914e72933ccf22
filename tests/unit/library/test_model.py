"""The model of the whole library (tests/model/machine.py) against moto, bounded.

A derandomized hypothesis run: the same sequences every run, so a failure reproduces.
The table's key schema is a dimension of the model (each sequence has one table
layout); here each layout is its own run, so every one is covered and a failure names
its layout. The examples are split across the layouts, not multiplied by them: the
other layouts' sequences are cheap (no counters, ordered index or compaction), so 40 of
dynashard's own table and 10 of each other take about the wall time the 50 of the
default alone took before the dimension.
The soak (``make soak``) runs the same machine on DynamoDB Local, thousands of sequences,
each drawing its layout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from infra.table_specs import DATA_TABLE, METADATA_TABLE
from tests.model.machine import (
    LAYOUTS,
    Backend,
    Report,
    create_layout_tables,
    layout_named,
    machine_for,
)

MODEL_SETTINGS = settings(
    max_examples=50,
    stateful_step_count=25,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
#: Examples per table layout (tests/model/machine.py, LAYOUTS).
EXAMPLES = {"default": 40, "ops_log": 10, "renamed": 10, "seconds": 10, "epoch": 10, "plain": 10}


@pytest.fixture
def library_client(ddb_client: Any, atomic_calls: Callable[[Any], Any]) -> Any:
    """A client of the library's own session (Query pages parsed once) on moto's tables."""
    from dynashard.dynamodb.raw_items import raw_items_session

    return atomic_calls(raw_items_session().client("dynamodb", region_name="us-east-1"))


@pytest.mark.parametrize("layout", [x.name for x in LAYOUTS])
def test_the_library_matches_its_model(library_client: Any, layout: str) -> None:
    # Given the library's facade over moto's tables (the layout's data table: dynashard's
    # own, or one with the layout's key schema) through the library's own kind of client,
    # and a plain in-memory model
    report = Report()
    tables = create_layout_tables(library_client, layouts=(layout_named(layout),))
    backend = Backend(
        library_client, DATA_TABLE.default_name, METADATA_TABLE.default_name, tables=tables
    )
    machine = machine_for(backend, report=report, layouts=(layout,))
    # When hypothesis drives random interleavings of every operation
    # Then every read, counter and resize agrees with the model (no Divergence)
    run_state_machine_as_test(
        machine, settings=settings(MODEL_SETTINGS, max_examples=EXAMPLES[layout])
    )
    assert report.sequences >= EXAMPLES[layout]
    assert report.observations[f"layout:{layout}"] == report.sequences
    # ... half of them read with hedged shard queries
    assert 0 < report.observations["hedged"] < report.sequences
    if layout == "default":  # the most reads: some Queries ran late and were hedged
        assert report.observations.get("hedges sent", 0) > 0
        # issue 39's rules ran: epoch seconds refused, a reused idempotency key refused
        assert report.observations.get("epoch seconds sent", 0) > 0
        assert report.observations.get("idempotency key reused", 0) > 0
