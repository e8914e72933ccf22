"""What every command shares: the global options, the AWS session, the output, the exit codes.

Nothing here runs at import time; clients are created when a command asks for them.
The global options and the output formats are the AWS CLI's: ``--output json|table|text``
(``--json`` is ``--output json``), ``--query`` (a JMESPath expression applied to the JSON
document before it is printed), ``--debug`` (botocore's debug log and the traceback of an
error on stderr), each accepted before or after the command (:class:`GlobalOptionsGroup`).
"""

from __future__ import annotations

import enum
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from botocore.exceptions import BotoCoreError, ClientError
from typer.core import TyperGroup

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


class Output(enum.StrEnum):
    """The output formats, as the AWS CLI's ``--output`` names them."""

    JSON = "json"
    TABLE = "table"
    TEXT = "text"


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
    output : Output
        How a command prints its answer (``table``: the tables and lines for people).
    query : str or None
        A JMESPath expression applied to the JSON document before it is printed.
    debug : bool
        botocore's debug log and error tracebacks on stderr.
    """

    profile: str | None = None
    region: str | None = None
    endpoint_url: str | None = None
    data_table: str = names.DEFAULT_DATA_TABLE
    metadata_table: str = names.DEFAULT_METADATA_TABLE
    output: Output = Output.TABLE
    query: str | None = None
    debug: bool = False
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
def failures(*, debug: bool = False) -> Iterator[None]:
    """Map the library's, boto3's and the file system's errors to exit codes.

    Parameters
    ----------
    debug : bool
        Print the error's traceback on stderr too (``--debug``).

    Yields
    ------
    None
        Inside the block, :class:`~dynashard.errors.InvalidInputError` exits 2 and
        every other :class:`~dynashard.errors.DynashardError`, boto3 error or
        ``OSError`` exits 1, each with its message on stderr (and its traceback
        under ``--debug``); nothing is swallowed.
    """
    try:
        yield
    except InvalidInputError as exc:
        _traceback(debug)
        fail(ExitCode.USAGE, exc.message)
    except DynashardError as exc:
        _traceback(debug)
        fail(ExitCode.ERROR, exc.message)
    except ClientError as exc:
        _traceback(debug)
        error = exc.response.get("Error", {})
        fail(ExitCode.ERROR, f"{error.get('Code', 'ClientError')}: {error.get('Message', exc)}")
    except BotoCoreError as exc:
        _traceback(debug)
        fail(ExitCode.ERROR, str(exc))
    except OSError as exc:
        _traceback(debug)
        fail(ExitCode.ERROR, str(exc))


def _traceback(debug: bool) -> None:
    """Print the traceback of the error being handled on stderr under ``--debug``."""
    if debug:
        import traceback

        traceback.print_exc(file=sys.stderr)


def guarded(command: Callable[..., None]) -> Callable[..., None]:
    """Run a command inside :func:`failures` (keeps its signature for typer)."""
    import functools

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        ctx = kwargs.get("ctx")  # every command takes it (typer passes it by name)
        with failures(debug=ctx is not None and options(ctx).debug):
            command(*args, **kwargs)

    return run


def is_interactive() -> bool:
    """Tell whether stderr is a terminal (progress bars show only then)."""
    return sys.stderr.isatty()


# --- the AWS CLI's global options and output formats -------------------------------------
def hoist_global_options(params: Sequence[Any], args: Sequence[str]) -> list[str]:
    """Move the global options found after the command in front of it, as the AWS CLI takes them.

    click reads a group's options before its subcommand only; the AWS CLI takes its
    global options anywhere (``aws s3 ls --region eu-west-1``). So are dynashard's.

    Parameters
    ----------
    params : sequence of click parameters
        The group's parameters (the global options; typer's own copy of click's
        classes, read by their attributes).
    args : sequence of str
        The command line after the program name.

    Returns
    -------
    list of str
        The same arguments, each global option (and its value) moved before the
        command; unchanged when there is no command or ``--`` comes first.

    Examples
    --------
    >>> from types import SimpleNamespace as Opt
    >>> region = Opt(param_type_name="option", opts=["--region"], secondary_opts=[],
    ...              is_flag=False, count=False)
    >>> hoist_global_options([region], ["status", "K", "--region", "eu-west-1"])
    ['--region', 'eu-west-1', 'status', 'K']
    """
    takes_value: dict[str, bool] = {}
    for param in params:
        if getattr(param, "param_type_name", None) == "option":
            for name in param.opts:
                takes_value[name] = not (param.is_flag or param.count)
            for name in param.secondary_opts:
                takes_value[name] = False
    args = list(args)
    i = 0
    while i < len(args):  # the global options before the command, then the command
        name, eq, _ = args[i].partition("=")
        if name in takes_value:
            i += 2 if takes_value[name] and not eq else 1
        elif args[i].startswith("-"):
            return args  # "--", or an option click will report
        else:
            break
    if i >= len(args):
        return args
    moved: list[str] = []
    kept: list[str] = []
    rest = args[i + 1 :]
    j = 0
    while j < len(rest):
        if rest[j] == "--":
            kept += rest[j:]
            break
        name, eq, _ = rest[j].partition("=")
        width = (2 if takes_value[name] and not eq else 1) if name in takes_value else 0
        if width:
            moved += rest[j : j + width]
            j += width
        else:
            kept.append(rest[j])
            j += 1
    return [*args[:i], *moved, args[i], *kept]


class GlobalOptionsGroup(TyperGroup):
    """The ``dynashard`` group: global options accepted after the command too."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse the arguments with the global options moved before the command."""
        return super().parse_args(ctx, hoist_global_options(self.params, args))


def debug_logging(ctx: typer.Context) -> None:
    """Log botocore, boto3 and dynashard at DEBUG on stderr until the command ends (``--debug``).

    Parameters
    ----------
    ctx : typer.Context
        The root context; the handler is removed when it closes.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s"))
    loggers = [logging.getLogger(name) for name in ("botocore", "boto3", "urllib3", "dynashard")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)

    def restore() -> None:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)

    ctx.call_on_close(restore)


def check_query(expression: str | None) -> None:
    """Refuse a ``--query`` that is not a JMESPath expression, before any AWS call.

    Raises
    ------
    typer.BadParameter
        Naming the expression and jmespath's reason (exit 2).
    """
    if expression is None:
        return
    import jmespath
    from jmespath.exceptions import JMESPathError

    try:
        jmespath.compile(expression)
    except JMESPathError as exc:
        raise typer.BadParameter(
            f"not a JMESPath expression: {exc}", param_hint="--query"
        ) from None


def text_lines(value: Any, identifier: str | None = None) -> list[str]:
    r"""Return a document as the AWS CLI's ``--output text`` prints it.

    A mapping's scalar values (by sorted key) go on one tab-separated line, prefixed by
    the upper-cased key it sits under; its lists and mappings follow, each under its
    key. A list of scalars is one line; a list of mappings is one block per item.
    ``null`` is ``None``, as the AWS CLI prints it.

    Parameters
    ----------
    value : Any
        The (queried) JSON document.
    identifier : str, optional
        The key the value sits under.

    Returns
    -------
    list of str
        The lines.

    Examples
    --------
    >>> text_lines({"key": "K", "counts": [1, 2], "paths": [{"path": "base", "ok": True}]})
    ['K', 'COUNTS\t1\t2', 'PATHS\tTrue\tbase']
    """
    prefix = [identifier.upper()] if identifier else []
    if isinstance(value, dict):
        scalars = [k for k in sorted(value) if not isinstance(value[k], dict | list)]
        lines = ["\t".join(prefix + [_scalar(value[k]) for k in scalars])] if scalars else []
        for k in sorted(value):
            if isinstance(value[k], dict | list):
                lines += text_lines(value[k], k)
        return lines
    if isinstance(value, list):
        if all(not isinstance(v, dict | list) for v in value):
            return ["\t".join(prefix + [_scalar(v) for v in value])] if value else []
        return [line for v in value for line in text_lines(v, identifier)]
    return ["\t".join([*prefix, _scalar(value)])]


def _scalar(value: Any) -> str:
    from decimal import Decimal

    if isinstance(value, Decimal | float):
        return format(value, "f") if isinstance(value, Decimal) else repr(value)
    return str(value)


def _generic_table(value: Any) -> None:
    """Print a queried document as a rich table (``--output table`` with ``--query``)."""
    from rich.table import Table

    out = console()
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        columns = list(dict.fromkeys(k for v in value for k in v))
        table = Table(*columns)
        for v in value:
            table.add_row(*(_cell(v.get(c)) for c in columns))
        out.print(table)
    elif isinstance(value, dict):
        table = Table("key", "value")
        for k, v in value.items():
            table.add_row(str(k), _cell(v))
        out.print(table)
    elif isinstance(value, list):
        table = Table("value")
        for v in value:
            table.add_row(_cell(v))
        out.print(table)
    else:
        out.print(_cell(value))


def _cell(value: Any) -> str:
    from dynashard.model import dumps

    return dumps(value, default=str) if isinstance(value, dict | list) else _scalar(value)


def show(ctx: typer.Context, doc: Any, table: Callable[[], None] | None = None) -> None:
    """Print a command's answer in the format the global options ask for.

    Parameters
    ----------
    ctx : typer.Context
        The command's context (its root holds the options).
    doc : Any
        The answer as a JSON document (what ``--output json`` prints).
    table : callable, optional
        Prints the answer for people (``--output table``, the default, without
        ``--query``); None prints nothing then.
    """
    opts = options(ctx)
    if opts.output is Output.TABLE and opts.query is None:
        if table is not None:
            table()
        return
    value = doc
    if opts.query is not None:
        import jmespath

        value = jmespath.search(opts.query, doc)
    if opts.output is Output.JSON:
        emit_json(value)
    elif opts.output is Output.TEXT:
        for line in text_lines(value):
            typer.echo(line)
    else:
        _generic_table(value)
