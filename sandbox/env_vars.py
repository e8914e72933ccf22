"""The environment variables the Lambda functions read, set up for the local sandbox.

The functions take their settings from the variables named in :mod:`dynashard.names`
(validated once per container). In the sandbox they run in this process, so the
variables are set here, before the first invocation: the synthesized template's
(:mod:`sandbox.twin`: every function's ``Environment.Variables``, its table references
resolved to the local tables), with the local endpoint, dummy credentials and the
switches that keep metrics and traces in the process on top.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from dynashard import names
from sandbox.engines.dynamodb_local import (
    LOCAL_ACCESS_KEY_ID,
    LOCAL_REGION,
    LOCAL_SECRET_ACCESS_KEY,
)

if TYPE_CHECKING:
    from sandbox.twin import LocalTwin

#: Powertools service name of every function in the sandbox (one logger for all).
SERVICE_NAME = "dynashard-local"


def local_twin(
    data_table: str = names.DEFAULT_DATA_TABLE,
    metadata_table: str = names.DEFAULT_METADATA_TABLE,
    context: Mapping[str, Any] | None = None,
) -> LocalTwin:
    """Return the stack's twin with its tables bound to the local ones.

    Parameters
    ----------
    data_table, metadata_table : str
        Physical names of the local tables.
    context : mapping, optional
        CDK context (stack parameters); default the stack's defaults.

    Returns
    -------
    LocalTwin
        Read from the synthesized template (synthesized once, then kept).
    """
    from sandbox.twin import LocalTwin

    twin = LocalTwin.load(context, region=LOCAL_REGION)
    twin.bind_tables({"DataTable": data_table, "MetadataTable": metadata_table})
    return twin


def environ_twin(context: Mapping[str, Any] | None = None) -> LocalTwin:
    """Return the stack's twin bound to the tables the environment names.

    For code that runs inside an environment :func:`function_environment` set up (the
    handler driver, the gateway): ``DYNASHARD_DATA_TABLE`` and
    ``DYNASHARD_METADATA_TABLE``, else the default table names.

    Parameters
    ----------
    context : mapping, optional
        CDK context (stack parameters).

    Returns
    -------
    LocalTwin
        See :func:`local_twin`.
    """
    return local_twin(
        os.environ.get(names.ENV_DATA_TABLE, names.DEFAULT_DATA_TABLE),
        os.environ.get(names.ENV_METADATA_TABLE, names.DEFAULT_METADATA_TABLE),
        context,
    )


def deployed_in_band_growth(context: Mapping[str, Any] | None = None) -> bool:
    """Tell whether the stack deploys its writers with in-band growth on.

    Parameters
    ----------
    context : mapping, optional
        CDK context (stack parameters).

    Returns
    -------
    bool
        ``DYNASHARD_IN_BAND_GROWTH`` of the stack's ingest function (the template's),
        for code that runs the library as a writer outside the handlers (the
        benchmarks).
    """
    twin = local_twin(context=context)
    fid = twin.function_spec("functions.ingest.app:sqs_handler").logical_id
    return twin.function_environment(fid)[names.ENV_IN_BAND_GROWTH] == "true"


def function_environment(
    endpoint_url: str,
    *,
    data_table: str = names.DEFAULT_DATA_TABLE,
    metadata_table: str = names.DEFAULT_METADATA_TABLE,
    extra: Mapping[str, str] | None = None,
    twin: LocalTwin | None = None,
) -> dict[str, str]:
    """Build the environment variables of the functions for a local endpoint.

    Parameters
    ----------
    endpoint_url : str
        DynamoDB endpoint (DynamoDB Local or the partition emulator).
    data_table, metadata_table : str
        Physical table names (ignored when ``twin`` is given: it is bound already).
    extra : mapping, optional
        More variables (e.g. ``DYNASHARD_DEFAULT_SHARDS``), overriding the above; each
        one that differs from the template is a local override the twin reports.
    twin : LocalTwin, optional
        The twin whose template the variables come from; default :func:`local_twin`.

    Returns
    -------
    dict of str to str
        The template's variables (every function's, resolved), then the endpoint,
        region and dummy credentials, the Powertools service name of functions started
        outside the twin and the metrics and tracing switches, then ``extra``.
    """
    twin = twin or local_twin(data_table, metadata_table)
    local = {
        names.ENV_DYNAMODB_ENDPOINT: endpoint_url,
        names.ENV_POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        "AWS_DEFAULT_REGION": LOCAL_REGION,
        "AWS_REGION": LOCAL_REGION,
        "AWS_ACCESS_KEY_ID": LOCAL_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": LOCAL_SECRET_ACCESS_KEY,
        # Metrics are printed as EMF on stdout in Lambda; locally they would flood it.
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
        # INFO, as the stack: the ingest functions' write-load lines are INFO, and the
        # growth loop's Contributor Insights rule reads them (sandbox.local_aws.logs).
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }
    return twin.environment({**local, **(extra or {})})


@contextmanager
def patched_environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the duration of a ``with`` block, then restore.

    Parameters
    ----------
    values : mapping of str to str
        Variables to set.

    Yields
    ------
    None
        Inside the block the variables are set; ``AWS_SESSION_TOKEN`` and
        ``AWS_PROFILE`` are removed so the dummy credentials are used.
    """
    with environ_set(values, drop=("AWS_SESSION_TOKEN", "AWS_PROFILE")):
        yield


@contextmanager
def environ_set(values: Mapping[str, str], drop: Sequence[str] = ()) -> Iterator[None]:
    """Set ``values`` and remove ``drop`` in ``os.environ`` for a block, then restore both.

    Parameters
    ----------
    values : mapping of str to str
        Variables to set.
    drop : sequence of str
        Variables to remove.

    Yields
    ------
    None
        Inside the block.
    """
    saved = {k: os.environ.get(k) for k in [*values, *drop]}
    for key in drop:
        os.environ.pop(key, None)
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def reset_function_caches() -> list[str]:
    """Drop the per-container caches of the functions loaded in this process.

    The functions validate their settings and build their facade once per container.
    The sandbox runs every "container" in one process (and each execution environment
    as a module copy, :mod:`sandbox.local_aws.lambda_runtime`), so after pointing the environment at
    other tables it must start them cold again, as a new Lambda container would.

    Every function keeps its caches in the handler kit's registry
    (:func:`dynashard.lambda_kit.cache.container_cache`), so this is
    :func:`dynashard.lambda_kit.cache.reset_all`.

    Returns
    -------
    list of str
        Dotted name (``module.getter``) of each cache that held a value.
    """
    from dynashard.lambda_kit.cache import reset_all

    return reset_all()
