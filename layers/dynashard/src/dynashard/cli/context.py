"""What every command shares: the global options, the AWS session, the exit codes.

Nothing here runs at import time; clients are created when a command asks for them.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from botocore.exceptions import BotoCoreError, ClientError

from dynashard import defaults, names
from dynashard.errors import DynashardError, InvalidInputError

if TYPE_CHECKING:
    import boto3
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from rich.console import Console

    from dynashard.core.schema import TableSchema
    from dynashard.defaults import Tunable
    from dynashard.facade import Dynashard

#: Region used against a local endpoint when none is configured (DynamoDB Local and
#: the emulator accept any).
LOCAL_REGION = "us-east-1"


class ExitCode(enum.IntEnum):
    """The exit codes scripts can rely on (see :mod:`dynashard.cli`)."""

    OK = 0
    ERROR = 1
    USAGE = 2
    REFUSED = 3
    NOT_FOUND = 4


@dataclass
class Options:
    """The global options of a ``dynashard`` invocation.

    Attributes
    ----------
    profile, region : str or None
        AWS profile and region, as the AWS CLI takes them (None: boto3's chain).
    endpoint_url : str or None
        DynamoDB endpoint (the sandbox's DynamoDB Local or partition emulator).
    data_table, metadata_table : str
        Table names.
    """

    profile: str | None = None
    region: str | None = None
    endpoint_url: str | None = None
    data_table: str = names.DEFAULT_DATA_TABLE
    metadata_table: str = names.DEFAULT_METADATA_TABLE
    _session: boto3.Session | None = field(default=None, repr=False)

    def session(self) -> boto3.Session:
        """Return the boto3 session of the profile and region (created on first use).

        Returns
        -------
        boto3.Session
            Against a local endpoint without a region or credentials, region
            ``us-east-1`` and dummy credentials (local engines accept any).
        """
        if self._session is None:
            import boto3

            session = boto3.Session(profile_name=self.profile, region_name=self.region)
            if self.endpoint_url and (
                session.region_name is None or session.get_credentials() is None
            ):
                # B106: placeholder keys for a local endpoint (DynamoDB Local, the
                # emulator) that accepts any; used only without real credentials.
                session = boto3.Session(  # nosec B106
                    aws_access_key_id="local",
                    aws_secret_access_key="local",
                    region_name=session.region_name or LOCAL_REGION,
                )
            self._session = session
        return self._session

    def dynamodb(self) -> DynamoDBClient:
        """Return a DynamoDB client for the endpoint (AWS when none)."""
        client: DynamoDBClient = self.session().client("dynamodb", endpoint_url=self.endpoint_url)
        return client

    def cloudwatch(self) -> CloudWatchClient:
        """Return a CloudWatch client (always AWS: the sandbox has no CloudWatch endpoint)."""
        client: CloudWatchClient = self.session().client("cloudwatch")
        return client

    def facade(
        self, *, cooldown_s: float | None = None, max_shards: int | None = None
    ) -> Dynashard:
        """Return a :class:`~dynashard.facade.Dynashard` over the tables, one worker.

        Parameters
        ----------
        cooldown_s : float, optional
            Cooldown of shard-count changes (default: ``DYNASHARD_COOLDOWN_S`` or the
            library's, :data:`dynashard.defaults.COOLDOWN_S`).
        max_shards : int, optional
            Cap on N (default: ``DYNASHARD_MAX_SHARDS`` or the library's,
            :data:`dynashard.defaults.MAX_SHARDS`).

        Returns
        -------
        Dynashard
            The facade; the caller closes it. The data table's key schema is the one
            the functions' variables name (:func:`table_schema`).
        """
        from dynashard.core.families import parse_bucketed_keys
        from dynashard.facade import Dynashard, DynashardConfig

        schema = table_schema()
        config = DynashardConfig(
            data_table=self.data_table,
            metadata_table=self.metadata_table,
            cooldown_s=cooldown_s if cooldown_s is not None else env_default(defaults.COOLDOWN_S),
            max_shards=max_shards
            if max_shards is not None
            else int(env_default(defaults.MAX_SHARDS)),
            bucketed_keys=parse_bucketed_keys(os.environ.get(names.ENV_BUCKETED_KEYS, "")),
            endpoint_url=self.endpoint_url,
            max_workers=1,
            schema=schema,
            check_schema=not schema.is_default,
        )
        return Dynashard(config, client=self.dynamodb())


def table_schema() -> TableSchema:
    """Return the data table's key schema the environment names, as the functions read it.

    The variables are the functions' (``DYNASHARD_PARTITION_KEY_ATTR`` ...
    ``DYNASHARD_PAYLOAD``, :class:`~dynashard.lambda_kit.settings.TableSchemaSettings`);
    unset, dynashard's own table. A facade built with another schema checks the table
    against it (``DescribeTable``) before its first read or write.

    Returns
    -------
    TableSchema
        The schema.

    Raises
    ------
    InvalidInputError
        Naming the variable, if a value is not one of its choices or the values do not
        make a schema (field ``schema``).
    """
    from pydantic import ValidationError

    from dynashard.lambda_kit.settings import TableSchemaSettings

    try:
        return TableSchemaSettings().table_schema  # type: ignore[call-arg]  # from the environment
    except ValidationError as exc:
        error = exc.errors()[0]
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, InvalidInputError):  # the schema's own check, its own field
            raise cause from None
        where = ".".join(str(part) for part in error["loc"]) or "schema"
        raise InvalidInputError(where, error["msg"]) from None


def env_float(name: str, default: float) -> float:
    """Return a number from the environment, or ``default`` when unset.

    Parameters
    ----------
    name : str
        Variable name.
    default : float
        Value when unset or empty.

    Returns
    -------
    float
        The value.

    Raises
    ------
    InvalidInputError
        If the variable is set to something that is not a number.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise InvalidInputError(name, f"must be a number, got {raw!r}") from None


def env_default(tunable: Tunable[Any]) -> float:
    """Return a tunable from its environment variable, or its library default when unset.

    Parameters
    ----------
    tunable : Tunable
        A numeric entry of :mod:`dynashard.defaults` that has a variable.

    Returns
    -------
    float
        The value (:func:`env_float` of its variable, its default as fallback).

    Raises
    ------
    InvalidInputError
        If the variable is set to something that is not a number.
    """
    if tunable.env is None:  # a caller's mistake: MAX_WORKERS has no variable
        raise ValueError(f"{tunable.name} is not read from the environment")
    return env_float(tunable.env, float(tunable.default))


def options(ctx: typer.Context) -> Options:
    """Return the global options stored on the root context."""
    obj = ctx.find_root().obj
    return obj if isinstance(obj, Options) else Options()


def console(*, stderr: bool = False) -> Console:
    """Return a rich console on stdout (or stderr), resolved when printing."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout; a ``Decimal`` as an exact JSON number."""
    from dynashard.model import dumps

    typer.echo(dumps(value, indent=2, default=str))


def fail(code: ExitCode, message: str) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(int(code))


@contextmanager
def failures() -> Iterator[None]:
    """Map the library's, boto3's and the file system's errors to exit codes.

    Yields
    ------
    None
        Inside the block, :class:`~dynashard.errors.InvalidInputError` exits 2 and
        every other :class:`~dynashard.errors.DynashardError`, boto3 error or
        ``OSError`` exits 1, each with its message on stderr; nothing is swallowed.
    """
    try:
        yield
    except InvalidInputError as exc:
        fail(ExitCode.USAGE, exc.message)
    except DynashardError as exc:
        fail(ExitCode.ERROR, exc.message)
    except ClientError as exc:
        error = exc.response.get("Error", {})
        fail(ExitCode.ERROR, f"{error.get('Code', 'ClientError')}: {error.get('Message', exc)}")
    except BotoCoreError as exc:
        fail(ExitCode.ERROR, str(exc))
    except OSError as exc:
        fail(ExitCode.ERROR, str(exc))


def guarded(command: Callable[..., None]) -> Callable[..., None]:
    """Run a command inside :func:`failures` (keeps its signature for typer)."""
    import functools

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        with failures():
            command(*args, **kwargs)

    return run


def is_interactive() -> bool:
    """Tell whether stderr is a terminal (progress bars show only then)."""
    return sys.stderr.isatty()
