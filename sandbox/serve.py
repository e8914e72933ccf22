"""Run the local stack until Ctrl-C: DynamoDB Local, the tables, the gateway, the pollers.

Usage::

    python -m sandbox.serve [--port 8080] [--host 127.0.0.1] [--db-path DIR]
                            [--emulator [--emulator-port 8001] [--scale 1.0]]

(``python -m sandbox up`` runs it.) With ``--emulator`` the partition emulator sits in
front of DynamoDB Local and the functions talk to it, so hot partitions throttle as on
AWS. Prints the endpoints, the environment to export (for ``dynashard`` and a user's
own application) and curl examples once everything answers (the gateway is listening
by then). Besides the HTTP gateway, an SQS queue (with its DLQ) and a Kinesis stream on
moto's server feed the ingest function through Lambda's pollers (:mod:`sandbox.local_aws.pollers`),
as the stack's event source mappings do. Ctrl-C (or SIGTERM) stops the pollers, the
gateway, moto's server, the emulator and DynamoDB Local cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from dynashard import names
from dynashard.core.capacity import PARTITION_RCU_LIMIT, PARTITION_WCU_LIMIT
from sandbox.engines.dynamodb_local import DynamoDBLocal, SandboxError
from sandbox.engines.moto_server import MotoServer
from sandbox.env_vars import function_environment, patched_environ
from sandbox.lifecycle import wait_for_stop_signal
from sandbox.tables import create_tables, data_and_metadata


def curl_examples(base_url: str) -> str:
    """Return curl commands that exercise every route of the gateway.

    Parameters
    ----------
    base_url : str
        E.g. ``http://127.0.0.1:8080``.

    Returns
    -------
    str
        One command per line (``#`` in keys is sent as ``%23``).
    """
    event = (
        '{"key":"DEPARTURES#JFK","id":"2013-01-01-UA-1545",'
        '"ts":"2013-01-01T10:15:00Z","data":{"carrier":"UA","dest":"IAH"}}'
    )
    return "\n".join(
        [
            f"curl -s -X POST {base_url}/events -H 'Content-Type: application/json' -d '{event}'",
            f"curl -s '{base_url}/events?key=DEPARTURES%23JFK&limit=10&order=asc'",
            f"curl -s -X POST {base_url}/counters/CARRIER%23UA "
            "-H 'Content-Type: application/json' -d '{\"by\": 5}'",
            f"curl -s {base_url}/counters/CARRIER%23UA",
            f"curl -s -X PUT {base_url}/index/TAILNUM/layout "
            "-H 'Content-Type: application/json' "
            """-d '{"shards": 2, "sample": ["N14228", "N24211", "N619AA", "N804JB"]}'""",
            f"curl -s -X POST {base_url}/index/TAILNUM -H 'Content-Type: application/json' "
            """-d '{"items": [{"id": "UA1545", "value": "N14228", "data": {"dest": "IAH"}}]}'""",
            f"curl -s '{base_url}/index/TAILNUM?prefix=n1&limit=10'",
            f"curl -s {base_url}/shards/DEPARTURES%23JFK",
        ]
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments; ``sys.argv[1:]`` when None.

    Returns
    -------
    argparse.Namespace
        ``port``, ``host``, ``ddb_port`` and ``db_path``.
    """
    parser = argparse.ArgumentParser(
        prog="python -m sandbox.serve",
        description="DynamoDB Local + tables + the local API gateway, until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=8080, help="gateway port (default 8080)")
    parser.add_argument("--host", default="127.0.0.1", help="gateway interface")
    parser.add_argument(
        "--ddb-port", type=int, default=None, help="DynamoDB Local port (default: a free one)"
    )
    parser.add_argument(
        "--db-path", default=None, help="keep the data in this directory (default: in memory)"
    )
    parser.add_argument(
        "--emulator", action="store_true", help="put the partition emulator in front"
    )
    parser.add_argument(
        "--emulator-port", type=int, default=8001, help="emulator port (0: a free one)"
    )
    parser.add_argument(
        "--scale", type=float, default=1.0, help="emulator: factor on the per-partition limits"
    )
    return parser.parse_args(argv)


def aws_cli_examples(endpoint_url: str, queue_url: str, stream: str) -> str:
    """Return AWS CLI commands that send an event through the queue and the stream.

    Parameters
    ----------
    endpoint_url : str
        moto's server.
    queue_url, stream : str
        The ingest queue and stream.

    Returns
    -------
    str
        One command per line.
    """
    event = (
        '{"key":"DEPARTURES#JFK","id":"2013-01-01-AA-1141",'
        '"ts":"2013-01-01T10:20:00Z","data":{"carrier":"AA","dest":"MIA"}}'
    )
    return "\n".join(
        [
            f"aws --endpoint-url {endpoint_url} sqs send-message --queue-url {queue_url} "
            f"--message-body '{event}'",
            f"aws --endpoint-url {endpoint_url} kinesis put-record --stream-name {stream} "
            f"--partition-key JFK --cli-binary-format raw-in-base64-out --data '{event}'",
        ]
    )


@contextlib.contextmanager
def ingest_pollers(endpoint_url: str) -> Iterator[Any]:
    """Create the ingest queue and stream on moto's server and poll them into the handlers.

    Parameters
    ----------
    endpoint_url : str
        moto's server.

    Yields
    ------
    EventSources
        The queue, its DLQ, the stream and the on-failure queue; the pollers run until
        the block ends.
    """
    from sandbox.engines.moto_server import aws_client
    from sandbox.local_aws.aws_events import LambdaContext
    from sandbox.local_aws.lambda_runtime import LocalFunction
    from sandbox.local_aws.pollers import (
        KinesisEventSourceMapping,
        KinesisPoller,
        SqsEventSourceMapping,
        SqsPoller,
        create_sources,
    )

    sqs, kinesis = aws_client("sqs", endpoint_url), aws_client("kinesis", endpoint_url)
    sources = create_sources(sqs, kinesis, shards=1)
    sqs_fn = LocalFunction("functions.ingest.app:sqs_handler")
    kinesis_fn = LocalFunction("functions.ingest.app:kinesis_handler")
    with (
        SqsPoller(
            sqs,
            sources.queue_url,
            lambda event: sqs_fn(event, LambdaContext(function_name="dynashard-ingest-sqs")),
            SqsEventSourceMapping(batch_size=10),
        ),
        KinesisPoller(
            kinesis,
            sources.stream,
            lambda event: kinesis_fn(event, LambdaContext(function_name="dynashard-ingest")),
            KinesisEventSourceMapping(
                batch_size=100, bisect_batch_on_function_error=True, maximum_retry_attempts=5
            ),
            on_failure=(sqs, sources.on_failure_url),
        ),
    ):
        yield sources


def export_lines(env: Mapping[str, str]) -> str:
    """Return ``export NAME=value`` lines for the variables a client of the sandbox needs.

    Parameters
    ----------
    env : mapping of str to str
        The functions' environment (:func:`sandbox.env_vars.function_environment`).

    Returns
    -------
    str
        One line per table, endpoint, region and credential variable, shell-quoted.
    """
    wanted = [k for k in env if k.startswith("DYNASHARD_") or k.startswith("AWS_")]
    return "\n".join(f"export {k}={shlex.quote(env[k])}" for k in wanted)


@contextlib.contextmanager
def _endpoint(ddb_url: str, emulator: bool, port: int, scale: float) -> Iterator[str | None]:
    """Yield the emulator's endpoint in front of ``ddb_url`` (None without ``emulator``)."""
    if not emulator:
        yield None
        return
    from sandbox.emulator import EmulatorConfig, EmulatorServer

    with EmulatorServer(ddb_url, EmulatorConfig(scale=scale), port=port) as server:
        yield server.endpoint_url


async def serve_gateway(host: str, port: int, banner: str) -> None:
    """Serve the gateway until SIGINT or SIGTERM, printing ``banner`` once it listens.

    Parameters
    ----------
    host : str
        Interface to bind.
    port : int
        TCP port.
    banner : str
        Printed (and flushed) after the socket is bound, so whoever reads it can send
        requests at once.
    """
    from aiohttp import web

    from sandbox.local_aws.gateway import make_app

    runner = web.AppRunner(make_app())
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        await wait_for_stop_signal(banner)
    finally:
        await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sandbox until interrupted.

    Parameters
    ----------
    argv : sequence of str, optional
        Command line arguments.

    Returns
    -------
    int
        Exit status: 0 after Ctrl-C (or SIGTERM), 2 when the sandbox cannot start.
    """
    args = parse_args(argv)
    try:
        with DynamoDBLocal(
            port=args.ddb_port, in_memory=args.db_path is None, db_path=args.db_path
        ) as ddb:
            data_table, metadata_table = data_and_metadata(create_tables(ddb.client()))
            with (
                _endpoint(ddb.endpoint_url, args.emulator, args.emulator_port, args.scale) as emu,
            ):
                # Behind the emulator the per-partition limits are scaled: the functions
                # and the dynashard command plan with the same figures.
                limits = (
                    {
                        names.ENV_PARTITION_WCU: f"{PARTITION_WCU_LIMIT * args.scale:g}",
                        names.ENV_PARTITION_RCU: f"{PARTITION_RCU_LIMIT * args.scale:g}",
                    }
                    if emu
                    else {}
                )
                env = function_environment(
                    emu or ddb.endpoint_url,
                    data_table=data_table,
                    metadata_table=metadata_table,
                    extra=limits,
                )
                with (
                    patched_environ(env),
                    MotoServer() as moto,
                    ingest_pollers(moto.endpoint_url) as sources,
                ):
                    base_url = f"http://{args.host}:{args.port}"
                    lines = [
                        f"DynamoDB Local: {ddb.endpoint_url}  tables: {data_table}, "
                        f"{metadata_table}",
                        f"SQS, Kinesis:   {moto.endpoint_url}  queue: {sources.queue_url}  "
                        f"stream: {sources.stream}  (polled into the ingest function)",
                    ]
                    if emu:
                        lines.append(
                            f"Emulator:       {emu}  (scale {args.scale:g}; admin: "
                            f"{emu}/_emulator/metrics, {emu}/_emulator/contributors)"
                        )
                    lines += [
                        f"Gateway:        {base_url}  (Ctrl-C to stop)",
                        "",
                        "# the environment for dynashard and your own application:",
                        export_lines(env),
                        "",
                        curl_examples(base_url),
                        aws_cli_examples(moto.endpoint_url, sources.queue_url, sources.stream),
                    ]
                    asyncio.run(serve_gateway(args.host, args.port, "\n".join(lines)))
    except SandboxError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a second Ctrl-C during shutdown
        pass
    print("stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
