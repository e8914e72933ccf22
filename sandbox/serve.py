"""Run the local stack until Ctrl-C: DynamoDB Local, the tables, the gateway, the pollers.

Usage::

    python -m sandbox.serve [--port 8080] [--host 127.0.0.1]
                            [--ddb-port 8000] [--db-path DIR] | [--dynamodb-endpoint URL]
                            [--emulator [--emulator-port 8001] [--scale 1.0]]
                            [-c NAME=VALUE ...]

(``python -m sandbox up`` runs it.) What runs is the synthesized stack
(:mod:`sandbox.twin`): ``cdk synth`` of ``infra/`` with the stack parameters given by
``-c`` (as ``cdk synth -c``), kept under ``.twin/``. The gateway serves the template's
routes, each with its function; an SQS queue (with its dead-letter queue) and a
Kinesis stream on moto's server, created with the template's attributes, feed the
ingest functions through Lambda's pollers (:mod:`sandbox.local_aws.pollers`) with the
template's event source mappings; every function runs with the template's name,
timeout and environment, and every AWS call it makes is checked against its role.
With ``--emulator`` the partition emulator sits in front of DynamoDB Local and the
functions talk to it, so hot partitions throttle as on AWS. DynamoDB Local listens
on its own default port, 8000 (``--ddb-port 0``: a free one); ``--dynamodb-endpoint URL``
uses a DynamoDB Local that already runs instead (its tables are created if missing, and
it is left running).

The gateway takes request bodies up to API Gateway's payload quota, 10 MB (10,485,760
bytes), and answers a larger one as API Gateway does: 413 with the plain-text body
``HTTP content length exceeded 10485760 bytes.`` (:mod:`sandbox.local_aws.gateway`).

Prints the template it runs, the local overrides and what is not modelled, then the
endpoints, the environment to export (for ``dynashard`` and a user's own application)
and curl examples once everything answers (the gateway is listening by then). Ctrl-C
(or SIGTERM) stops the pollers, the gateway, moto's server, the emulator and DynamoDB
Local cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from dynashard import names
from dynashard.core.capacity import PARTITION_RCU_LIMIT, PARTITION_WCU_LIMIT
from sandbox.engines.dynamodb_local import DynamoDBLocal, SandboxError
from sandbox.engines.moto_server import MotoServer
from sandbox.env_vars import function_environment, local_twin, patched_environ
from sandbox.lifecycle import wait_for_stop_signal
from sandbox.tables import create_tables, data_and_metadata
from sandbox.twin.stack import TemplateError
from sandbox.twin.synth import SynthError

if TYPE_CHECKING:
    from sandbox.local_aws.pollers import EventSources
    from sandbox.twin import LocalTwin


#: DynamoDB Local's own default port (``java -jar DynamoDBLocal.jar`` listens there), the
#: sandbox's too, so ``dynashard --endpoint-url http://127.0.0.1:8000`` finds it.
DYNAMODB_LOCAL_PORT = 8000


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
        ``port``, ``host``, ``ddb_port``, ``db_path``, ``dynamodb_endpoint``, the
        emulator's options and ``context``.
    """
    parser = argparse.ArgumentParser(
        prog="python -m sandbox.serve",
        description="DynamoDB Local + tables + the local API gateway, until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=8080, help="gateway port (default 8080)")
    parser.add_argument("--host", default="127.0.0.1", help="gateway interface")
    parser.add_argument(
        "--ddb-port",
        type=int,
        default=DYNAMODB_LOCAL_PORT,
        help=f"DynamoDB Local port (default {DYNAMODB_LOCAL_PORT}, its own; 0: a free one)",
    )
    parser.add_argument(
        "--db-path", default=None, help="keep the data in this directory (default: in memory)"
    )
    parser.add_argument(
        "--dynamodb-endpoint",
        default=None,
        metavar="URL",
        help="use the DynamoDB Local already running there instead of starting one "
        "(its tables are created if missing; not with --ddb-port or --db-path)",
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
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a stack parameter, as cdk synth -c takes it (e.g. -c fifo_ingest_queue=true); "
        "repeatable",
    )
    return parser.parse_args(argv)


def parse_context(pairs: Sequence[str]) -> dict[str, str]:
    """Read ``-c NAME=VALUE`` arguments into CDK context, as ``cdk synth -c`` does.

    Parameters
    ----------
    pairs : sequence of str
        ``NAME=VALUE`` each (the value may hold ``=``).

    Returns
    -------
    dict of str to str
        Name to value (a later one wins).

    Raises
    ------
    ValueError
        For an argument without ``=`` or with an empty name.

    Examples
    --------
    >>> parse_context(["stage=prod", "bucketed_keys=OPS_LOG=day"])
    {'stage': 'prod', 'bucketed_keys': 'OPS_LOG=day'}
    """
    context: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"-c {pair!r}: expected NAME=VALUE")
        context[name.strip()] = value
    return context


def aws_cli_examples(endpoint_url: str, queue_url: str, stream: str, *, fifo: bool = False) -> str:
    """Return AWS CLI commands that send an event through the queue and the stream.

    They run as printed on AWS CLI v1 and v2 alike: ``--endpoint-url`` and the options
    of ``sqs send-message`` and ``kinesis put-record`` exist in both, and the record's
    data is read from a file with ``fileb://``, which both send as raw bytes (a value
    given inline is base64 to v2 and raw text to v1, and v2's ``--cli-binary-format``
    does not exist in v1).

    Parameters
    ----------
    endpoint_url : str
        moto's server.
    queue_url, stream : str
        The ingest queue and stream.
    fifo : bool
        The queue is a FIFO queue: the message names its group (the event's key) and
        its deduplication id (the event's id), as the stack's producers do.

    Returns
    -------
    str
        One command per line.
    """
    event = (
        '{"key":"DEPARTURES#JFK","id":"2013-01-01-AA-1141",'
        '"ts":"2013-01-01T10:20:00Z","data":{"carrier":"AA","dest":"MIA"}}'
    )
    fifo_options = (
        " --message-group-id 'DEPARTURES#JFK' --message-deduplication-id 2013-01-01-AA-1141"
        if fifo
        else ""
    )
    return "\n".join(
        [
            f"aws --endpoint-url {endpoint_url} sqs send-message --queue-url {queue_url} "
            f"--message-body '{event}'{fifo_options}",
            f"printf '%s' '{event}' > event.json",
            f"aws --endpoint-url {endpoint_url} kinesis put-record --stream-name {stream} "
            "--partition-key JFK --data fileb://event.json",
        ]
    )


def mapping_lines(twin: LocalTwin, sources: EventSources) -> list[str]:
    """Return one line per event source mapping the sandbox runs, as the template sets it.

    Parameters
    ----------
    twin : LocalTwin
        The stack's twin (its sources bound).
    sources : EventSources
        The queue and the stream.

    Returns
    -------
    list of str
        The function, its source and the mapping's settings.
    """
    from sandbox.twin.sources import KINESIS_HANDLER, SQS_HANDLER

    queue = twin.spec.queues[twin.source_of(SQS_HANDLER)]
    stream = twin.spec.streams[twin.source_of(KINESIS_HANDLER)]
    sqs, kinesis = twin.sqs_mapping(SQS_HANDLER), twin.kinesis_mapping(KINESIS_HANDLER)
    kind = "FIFO queue" if queue.fifo else "queue"
    return [
        f"  {twin.function_name(twin.function_spec(SQS_HANDLER).logical_id)} <- {kind} "
        f"(visibility {queue.visibility_timeout_s} s, dead letter after "
        f"{queue.max_receive_count} receives): batch {sqs.batch_size}, window "
        f"{sqs.maximum_batching_window_s:g} s, {sqs.concurrency} pollers",
        f"  {twin.function_name(twin.function_spec(KINESIS_HANDLER).logical_id)} <- stream "
        f"({stream.shard_count} shards): batch {kinesis.batch_size}, "
        f"{kinesis.starting_position}, {kinesis.maximum_retry_attempts} retries, bisect "
        f"{'on' if kinesis.bisect_batch_on_function_error else 'off'}, on failure "
        f"{sources.on_failure_url}",
    ]


@contextlib.contextmanager
def ingest_pollers(twin: LocalTwin, endpoint_url: str) -> Iterator[EventSources]:
    """Create the template's queues and stream on moto's server and poll them into its functions.

    The queues get the template's attributes (visibility timeout, ``RedrivePolicy``,
    FIFO) and the stream its shards (:func:`sandbox.twin.sources.create_sources`); the
    pollers run the template's event source mappings (:meth:`LocalTwin.sqs_mapping`,
    :meth:`LocalTwin.kinesis_mapping`) into the template's functions
    (:meth:`LocalTwin.function`, every call checked against the function's role), and
    the Kinesis mapping's on-failure destination is the template's.

    Parameters
    ----------
    twin : LocalTwin
        The stack's twin, its tables bound.
    endpoint_url : str
        moto's server.

    Yields
    ------
    EventSources
        The queue, its DLQ, the stream and the on-failure queue; the pollers run until
        the block ends.

    Raises
    ------
    sandbox.local_aws.pollers.PollerConfigError
        When a mapping of the template is one the pollers refuse (a FIFO queue's batch
        above 10).
    """
    from sandbox.engines.moto_server import aws_client
    from sandbox.local_aws.pollers import KinesisPoller, SqsPoller
    from sandbox.twin.sources import KINESIS_HANDLER, SQS_HANDLER, create_sources, poller_client

    sqs, kinesis = aws_client("sqs", endpoint_url), aws_client("kinesis", endpoint_url)
    sources = create_sources(twin, sqs, kinesis)
    # The pollers read and report failures with the functions' roles, as Lambda does.
    sqs_source = poller_client(twin, SQS_HANDLER, "sqs", endpoint_url)
    stream_source = poller_client(twin, KINESIS_HANDLER, "kinesis", endpoint_url)
    failures = poller_client(twin, KINESIS_HANDLER, "sqs", endpoint_url, on_failure=True)
    # The on-failure destination of the stream's mapping, as the template names it.
    on_failure_id = twin.on_failure_of(KINESIS_HANDLER)
    assert on_failure_id is not None  # create_sources refuses a template without one
    on_failure_url = twin.resolver.ref(on_failure_id)
    sqs_fn, kinesis_fn = twin.function(SQS_HANDLER), twin.function(KINESIS_HANDLER)
    with (
        SqsPoller(sqs_source, sources.queue_url, sqs_fn, twin.sqs_mapping(SQS_HANDLER)),
        KinesisPoller(
            stream_source,
            sources.stream,
            kinesis_fn,
            twin.kinesis_mapping(KINESIS_HANDLER),
            on_failure=(failures, on_failure_url),
            function_name=kinesis_fn.name,
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


def _port_in_use(host: str, port: int) -> bool:
    """Tell whether something already listens on ``host:port``."""
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex((host, port)) == 0


@contextlib.contextmanager
def dynamodb_endpoint(args: argparse.Namespace) -> Iterator[str]:
    """Yield the DynamoDB endpoint the sandbox uses: its own DynamoDB Local, or the one given.

    Parameters
    ----------
    args : argparse.Namespace
        The command line: ``dynamodb_endpoint`` (reuse that one, left running), else
        ``ddb_port`` (0: a free one) and ``db_path``.

    Yields
    ------
    str
        The endpoint URL; a DynamoDB Local started here stops when the block ends.

    Raises
    ------
    SandboxError
        When the given endpoint does not answer ``ListTables``, when it is given with
        ``--ddb-port`` or ``--db-path``, or when the port is taken (the message says
        how to reuse what listens there).
    """
    if args.dynamodb_endpoint is not None:
        if args.db_path is not None or args.ddb_port != DYNAMODB_LOCAL_PORT:
            raise SandboxError(
                "--dynamodb-endpoint uses a running DynamoDB Local: --ddb-port and --db-path "
                "are that one's own settings"
            )
        url = args.dynamodb_endpoint.rstrip("/")
        from botocore.exceptions import BotoCoreError, ClientError

        from sandbox.engines.dynamodb_local import local_client

        try:
            local_client(url, total_max_attempts=1, connect_timeout=2.0).list_tables(Limit=1)
        except (BotoCoreError, ClientError, ValueError) as exc:
            raise SandboxError(
                f"--dynamodb-endpoint {url} did not answer ListTables: {exc}"
            ) from exc
        yield url
        return
    port = args.ddb_port or None
    if port is not None and _port_in_use("127.0.0.1", port):
        raise SandboxError(
            f"port {port} is taken (a DynamoDB Local already running?): reuse it with "
            f"--dynamodb-endpoint http://127.0.0.1:{port}, or pass --ddb-port 0 for a free port"
        )
    with DynamoDBLocal(port=port, in_memory=args.db_path is None, db_path=args.db_path) as ddb:
        yield ddb.endpoint_url


async def serve_gateway(twin: LocalTwin, host: str, port: int, banner: str) -> None:
    """Serve the gateway until SIGINT or SIGTERM, printing ``banner`` once it listens.

    Parameters
    ----------
    twin : LocalTwin
        The stack's twin: the gateway serves its routes with its functions.
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

    runner = web.AppRunner(make_app(twin=twin))
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
        Exit status: 0 after Ctrl-C (or SIGTERM), 2 when the sandbox cannot start (an
        engine, the synthesis, or a template the sandbox cannot run).
    """
    from sandbox.local_aws.pollers import PollerConfigError
    from sandbox.twin.iam import install_default
    from sandbox.twin.intrinsics import UnresolvedReferenceError

    args = parse_args(argv)
    try:
        context = parse_context(args.context)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        with dynamodb_endpoint(args) as ddb:
            from sandbox.engines.dynamodb_local import local_client

            data_table, metadata_table = data_and_metadata(create_tables(local_client(ddb)))
            twin = local_twin(data_table, metadata_table, context)
            with _endpoint(ddb, args.emulator, args.emulator_port, args.scale) as emu:
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
                env = function_environment(emu or ddb, extra=limits, twin=twin)
                # Before any function makes a client: each call is checked against its role.
                install_default()
                with (
                    patched_environ(env),
                    MotoServer() as moto,
                    ingest_pollers(twin, moto.endpoint_url) as sources,
                ):
                    asyncio.run(
                        serve_gateway(
                            twin,
                            args.host,
                            args.port,
                            banner(args, twin, env, ddb, emu, moto, sources),
                        )
                    )
    except SandboxError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    except SynthError as exc:
        print(f"error: the stack could not be synthesized: {exc}", file=sys.stderr)
        return 2
    except (TemplateError, UnresolvedReferenceError, PollerConfigError) as exc:
        print(f"error: the synthesized template cannot run locally: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a second Ctrl-C during shutdown
        pass
    print("stopped", file=sys.stderr)
    return 0


def banner(
    args: argparse.Namespace,
    twin: LocalTwin,
    env: Mapping[str, str],
    ddb: str,
    emu: str | None,
    moto: MotoServer,
    sources: EventSources,
) -> str:
    """Return what ``python -m sandbox up`` prints once the gateway listens.

    Parameters
    ----------
    args : argparse.Namespace
        The command line.
    twin : LocalTwin
        The stack's twin (:meth:`LocalTwin.describe` comes first: the template run, the
        local overrides, what is not modelled).
    env : mapping of str to str
        The functions' environment.
    ddb : str
        DynamoDB Local's endpoint.
    emu : str or None
        The emulator's endpoint.
    moto : MotoServer
        moto's server.
    sources : EventSources
        The queue and the stream.

    Returns
    -------
    str
        The lines.
    """
    from sandbox.twin.sources import SQS_HANDLER

    base_url = f"http://{args.host}:{args.port}"
    fifo = twin.spec.queues[twin.source_of(SQS_HANDLER)].fifo
    lines = [
        *twin.describe(),
        "",
        f"DynamoDB Local: {ddb}  tables: {env[names.ENV_DATA_TABLE]}, "
        f"{env[names.ENV_METADATA_TABLE]}"
        + ("  (--dynamodb-endpoint: reused, left running)" if args.dynamodb_endpoint else ""),
        f"SQS, Kinesis:   {moto.endpoint_url}  queue: {sources.queue_url}  "
        f"stream: {sources.stream}  (polled into the ingest functions)",
        *mapping_lines(twin, sources),
    ]
    if emu:
        lines.append(
            f"Emulator:       {emu}  (scale {args.scale:g}; admin: "
            f"{emu}/_emulator/metrics, {emu}/_emulator/contributors)"
        )
    lines += [
        f"Gateway:        {base_url}  ({len(twin.spec.routes)} routes of the template; "
        "Ctrl-C to stop)",
        "",
        "# the environment for dynashard and your own application:",
        export_lines(env),
        "",
        curl_examples(base_url),
        aws_cli_examples(moto.endpoint_url, sources.queue_url, sources.stream, fifo=fifo),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
