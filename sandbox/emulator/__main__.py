"""Run the partition emulator standalone: ``python -m sandbox.emulator --upstream URL``.

Examples
--------
``python -m sandbox.emulator --upstream http://127.0.0.1:8000 --port 8001 --scale 0.05``
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from sandbox.emulator.config import EmulatorConfig, LognormalLatency, OnDemand, Provisioned
from sandbox.emulator.core import PartitionEmulator
from sandbox.emulator.server import HttpTransport
from sandbox.lifecycle import serve_app, wait_for_stop_signal


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments; ``sys.argv[1:]`` when None.

    Returns
    -------
    argparse.Namespace
        The options.
    """
    p = argparse.ArgumentParser(prog="python -m sandbox.emulator", description=__doc__)
    p.add_argument("--upstream", required=True, help="DynamoDB Local endpoint URL")
    p.add_argument("--host", default="127.0.0.1", help="interface (default: loopback)")
    p.add_argument("--port", type=int, default=8001, help="port (0: any free one)")
    p.add_argument("--scale", type=float, default=1.0, help="factor on the partition limits")
    p.add_argument("--partition-wcu", type=float, default=1000.0, help="key-range WCU/s")
    p.add_argument("--partition-rcu", type=float, default=3000.0, help="key-range RCU/s")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--provisioned", nargs=2, type=float, metavar=("RCU", "WCU"))
    mode.add_argument("--on-demand-max", nargs=2, type=float, metavar=("RCU", "WCU"))
    p.add_argument("--latency-median-ms", type=float, help="add lognormal service latency")
    p.add_argument("--latency-sigma", type=float, default=0.5)
    p.add_argument(
        "--on-demand-error",
        choices=("ProvisionedThroughputExceededException", "ThrottlingException"),
        default="ProvisionedThroughputExceededException",
    )
    return p.parse_args(argv)


def config_from_args(args: argparse.Namespace) -> EmulatorConfig:
    """Build the configuration from parsed options.

    Parameters
    ----------
    args : argparse.Namespace
        From :func:`parse_args`.

    Returns
    -------
    EmulatorConfig
        The configuration.
    """
    table_mode: Provisioned | OnDemand | None = None
    if args.provisioned:
        table_mode = Provisioned(*args.provisioned)
    elif args.on_demand_max:
        table_mode = OnDemand(*args.on_demand_max)
    latency = (
        LognormalLatency(args.latency_median_ms, args.latency_sigma)
        if args.latency_median_ms
        else None
    )
    return EmulatorConfig(
        partition_wcu=args.partition_wcu,
        partition_rcu=args.partition_rcu,
        scale=args.scale,
        table_mode=table_mode,
        latency=latency,
        on_demand_error=args.on_demand_error,
    )


async def serve(upstream: str, config: EmulatorConfig, host: str, port: int) -> None:
    """Serve until SIGINT or SIGTERM.

    Parameters
    ----------
    upstream : str
        DynamoDB Local endpoint.
    config : EmulatorConfig
        Emulator configuration.
    host : str
        Interface.
    port : int
        Port.
    """
    app = HttpTransport(PartitionEmulator(upstream, config)).make_app()
    runner, url = await serve_app(app, host, port, access_log=False)
    try:
        await wait_for_stop_signal(
            f"partition emulator on {url} -> {upstream} (scale {config.scale})"
        )
    finally:
        await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``python -m sandbox.emulator``.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments.
    """
    args = parse_args(argv)
    asyncio.run(serve(args.upstream, config_from_args(args), args.host, args.port))


if __name__ == "__main__":
    main()
