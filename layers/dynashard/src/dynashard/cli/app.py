"""The ``dynashard`` command line (typer): status, hot, plan, resize, count, compact, and more.

typer gives the options, ``--help`` and shell completion (``--install-completion``)
from the signatures; rich draws the tables and progress bars. The global options are
the AWS CLI's (``--output json|table|text``, ``--json`` for ``--output json``,
``--query``, ``--debug``, ``--version``, ``--profile``, ``--region``,
``--endpoint-url``), accepted before or after the command; exit codes are those of
:class:`~dynashard.cli.context.ExitCode`.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dynashard import defaults, names
from dynashard.cli.context import (
    ExitCode,
    GlobalOptionsGroup,
    Options,
    Output,
    check_query,
    console,
    debug_logging,
    env_default,
    fail,
    guarded,
    options,
    show,
)

if TYPE_CHECKING:
    from dynashard.core.ordered import OrderedLayout
    from dynashard.core.shard_info import ShardInfo
    from dynashard.dynamodb.adoption import BareKeySurvey
    from dynashard.facade import Dynashard, DynashardConfig
    from dynashard.planning.capacity import CapacityPlan

EXIT_CODES_HELP = (
    "Exit codes: 0 done; 1 error (AWS, the sandbox or a file failed); 2 usage (a bad "
    "option or value); 3 refused (resize inside the cooldown without --force, or of an "
    "ordered key; strategy of a key that has another one, without --force; compact that "
    "left copies in place); 4 not found (status of a key without metadata, hot without "
    "Contributor Insights)."
)

#: The sandbox's DynamoDB Local (``python -m sandbox up`` opens it on DynamoDB Local's
#: own default port, 8000), for the examples of the help.
SANDBOX_DYNAMODB = "http://127.0.0.1:8000"

# The parameters several commands share (typer reads the option from the annotation).
_KeyArgument = Annotated[str, typer.Argument(help="Logical key.")]
_BucketKeyArgument = Annotated[
    str, typer.Argument(help="Logical key (a bucket key for a bucketed family).")
]

app = typer.Typer(
    name="dynashard",
    help=(
        "Operate dynashard: shard counts, hot keys and capacity plans, "
        "against AWS (--profile/--region) or the sandbox (--endpoint-url).\n\n" + EXIT_CODES_HELP
    ),
    epilog=(
        f"Example: dynashard --endpoint-url {SANDBOX_DYNAMODB} status 'DEPARTURES#JFK' "
        "--output json --query number_of_shards (against DynamoDB Local on its default port, "
        "the one the project's local sandbox opens)"
    ),
    cls=GlobalOptionsGroup,
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    """Print the installed dynashard's version and exit (``--version``)."""
    if value:
        from dynashard._version import installed_version

        typer.echo(f"dynashard {installed_version()}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    profile: Annotated[
        str | None, typer.Option(envvar="AWS_PROFILE", help="AWS profile, as the AWS CLI.")
    ] = None,
    region: Annotated[
        str | None,
        typer.Option(envvar=["AWS_REGION", "AWS_DEFAULT_REGION"], help="AWS region."),
    ] = None,
    endpoint_url: Annotated[
        str | None,
        typer.Option(
            envvar=[names.ENV_DYNAMODB_ENDPOINT, names.ENV_ENDPOINT_URL],
            help="DynamoDB endpoint: the sandbox's DynamoDB Local or partition emulator "
            "(default: the AWS SDKs' variables, as boto3 reads them).",
        ),
    ] = None,
    data_table: Annotated[
        str, typer.Option(envvar=names.ENV_DATA_TABLE, help="Data table name.")
    ] = names.DEFAULT_DATA_TABLE,
    metadata_table: Annotated[
        str, typer.Option(envvar=names.ENV_METADATA_TABLE, help="Shard metadata table name.")
    ] = names.DEFAULT_METADATA_TABLE,
    output: Annotated[
        Output,
        typer.Option(
            case_sensitive=False,
            help="json, table (for people) or text (tab-separated), as the AWS CLI's.",
        ),
    ] = Output.TABLE,
    json_out: Annotated[bool, typer.Option("--json", help="Same as --output json.")] = False,
    query: Annotated[
        str | None,
        typer.Option(help="JMESPath expression applied to the JSON answer, as the AWS CLI's."),
    ] = None,
    debug: Annotated[
        bool, typer.Option("--debug", help="botocore's debug log and error tracebacks on stderr.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Store the global options for the command."""
    import os

    if os.environ.get(names.LEGACY_ENV_DYNAMODB_ENDPOINT):
        fail(
            ExitCode.USAGE,
            f"{names.LEGACY_ENV_DYNAMODB_ENDPOINT} is not read: set "
            f"{names.ENV_DYNAMODB_ENDPOINT} (the AWS SDKs' own variable) or pass --endpoint-url",
        )
    check_query(query)
    if debug:
        debug_logging(ctx)
    ctx.obj = Options(
        profile,
        region,
        endpoint_url,
        data_table,
        metadata_table,
        output=Output.JSON if json_out else output,
        query=query,
        debug=debug,
    )


# --- status ------------------------------------------------------------------------------
def _iso(epoch_s: int) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_paths(
    info: ShardInfo, layout: OrderedLayout | None, config: DynashardConfig
) -> list[dict[str, Any]]:
    """Return the read paths a key offers, each with whether it is available and why.

    Parameters
    ----------
    info : ShardInfo
        The key's metadata.
    layout : OrderedLayout or None
        Its range layout, for an ordered key.
    config : DynashardConfig
        Bucketed key families, and the table's schema (a table without the GSI, or
        whose codec GSI reads do not cover, offers no ``gsi1`` path).

    Returns
    -------
    list of dict
        ``{"path", "available", "detail"}`` for ``base``, ``gsi1``, ``targeted``,
        ``ordered`` and ``bucketed``.
    """
    from dynashard.core.strategies import Strategy
    from dynashard.planning.reads import gsi1_unit

    ordered = info.strategy is Strategy.ORDERED
    calculated = info.strategy is Strategy.CALCULATED
    family = config.bucketed_family(info.key)
    counts = sorted(info.counts)
    _, mixed_units = gsi1_unit(info, config.bucket_of(info.key))
    no_gsi = config.schema.gsi_unavailable()  # the table's schema rules the GSI out
    return [
        {
            "path": "base",
            "available": not ordered,
            "detail": (
                f"scatter-gather over shards 0..{info.max_count - 1} "
                f"(counts in history: {', '.join(map(str, counts))})"
                + ("; plus the bare key (adopted)" if info.adopted else "")
                if not ordered
                else "an ordered key is read by value range"
            ),
        },
        {
            "path": "gsi1",
            "available": not (no_gsi or ordered or info.adopted or mixed_units),
            "detail": (
                no_gsi
                if no_gsi
                else "ordered index entries are not in GSI1"
                if ordered
                else "the bare key's items (adopted) are not in GSI1"
                if info.adopted
                else mixed_units or f"time-bucket view, {len(info.gsi1_shards)} bucket(s) recorded"
            ),
        },
        {
            "path": "targeted",
            "available": calculated,
            "detail": (
                f"one shard per count by data.{info.shard_attribute}"
                if calculated
                else "needs strategy calculated"
            ),
        },
        {
            "path": "ordered",
            "available": ordered,
            "detail": (
                f"{layout.shard_count} range shards, boundaries {list(layout.boundaries)}"
                if ordered and layout is not None
                else "needs strategy ordered"
            ),
        },
        {
            "path": "bucketed",
            "available": family is not None,
            "detail": (
                f"family {family.name} by {family.unit.value}"
                if family is not None
                else f"not in {names.ENV_BUCKETED_KEYS}"
            ),
        },
    ]


@app.command(
    help=(
        "Show a logical key's shard count, strategy, shard history, last change and the "
        "read paths it offers; --chart draws the history as a PNG."
    ),
    epilog="Example: dynashard status 'DEPARTURES#JFK' --chart jfk.png",
)
@guarded
def status(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Logical key, e.g. DEPARTURES#JFK.")],
    chart: Annotated[
        Path | None, typer.Option(help="Write the shard history as a PNG here.")
    ] = None,
) -> None:
    """Show one logical key's shard metadata."""
    from dynashard.core.strategies import Strategy

    if chart is not None:  # before any read: matplotlib is the `chart` extra's
        from dynashard.cli.charts import missing_chart_dependency

        missing = missing_chart_dependency()
        if missing is not None:
            fail(ExitCode.USAGE, missing)
    opts = options(ctx)
    with closing(opts.facade()) as ds:
        info = ds.shard_info(key)
        layout = None
        if info.strategy is Strategy.ORDERED:
            layout = ds.ordered_index(key).layout(fresh=True)
        paths = read_paths(info, layout, ds.config)
    now = time.time()
    doc: dict[str, Any] = {
        **info.to_json(),
        "stored": info.stored,
        "strategy": info.strategy.value,
        "shard_attribute": info.shard_attribute,
        "last_change": _iso(info.history[-1][0]) if info.stored and info.history else None,
        "last_change_age_s": (
            round(now - info.history[-1][0]) if info.stored and info.history else None
        ),
        "readers_query_shards": info.max_count,
        "gsi1_buckets": dict(info.gsi1_shards),
        "read_paths": paths,
        "metadata_table": opts.metadata_table,
    }
    if chart is not None and info.stored:
        from dynashard.cli.charts import shard_history_chart

        shard_history_chart(info, chart, now=now)
        doc["chart"] = str(chart)
    show(ctx, doc, (lambda: _print_status(info, doc)) if info.stored else None)
    if not info.stored:
        fail(
            ExitCode.NOT_FOUND,
            f"{key!r} has no item in {opts.metadata_table}: writers use the default "
            f"N = {info.number_of_shards}",
        )


def _print_status(info: ShardInfo, doc: dict[str, Any]) -> None:
    from rich.table import Table

    out = console()
    out.print(f"[bold]{info.key}[/bold]  ({doc['metadata_table']})")
    out.print(f"shard count    {info.number_of_shards}")
    out.print(f"strategy       {info.strategy_label}")
    cap = "none (the configured max_shards only)" if info.max_shards is None else info.max_shards
    out.print(f"max_shards     {cap}")
    if doc["last_change"]:
        age = int(doc["last_change_age_s"])
        out.print(f"last change    {doc['last_change']} ({_age(age)} ago)")
    out.print(f"readers query  shards 0..{info.max_count - 1}")
    if info.history:
        table = Table("since (UTC)", "count", title="shard history", title_justify="left")
        for since, count in info.history:
            table.add_row(_iso(since), str(count))
        out.print(table)
    paths = Table("read path", "available", "detail", title="read paths", title_justify="left")
    for path in doc["read_paths"]:
        paths.add_row(path["path"], "yes" if path["available"] else "no", path["detail"])
    out.print(paths)
    if "chart" in doc:
        out.print(f"chart          {doc['chart']}")


def _age(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 172_800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86_400} d"


# --- resize -----------------------------------------------------------------------------
@app.command(
    help=(
        "Set a key's shard count N through the scaler's conditional update on "
        "last_updated. Refused (exit 3) within the cooldown of the key's last change "
        "unless --force; an ordered key's count is its range layout's (exit 3)."
    ),
    epilog="Example: dynashard resize 'DEPARTURES#JFK' 16",
)
@guarded
def resize(
    ctx: typer.Context,
    key: _KeyArgument,
    shards: Annotated[int, typer.Argument(help="New shard count N.", min=1)],
    force: Annotated[bool, typer.Option(help="Change N even inside the cooldown.")] = False,
    cooldown_s: Annotated[
        float | None,
        typer.Option(
            "--cooldown", help=f"Cooldown, seconds (default ${names.ENV_COOLDOWN_S} or 60)."
        ),
    ] = None,
) -> None:
    """Set a key's shard count."""
    opts = options(ctx)
    with closing(opts.facade(cooldown_s=cooldown_s)) as ds:
        result = ds.set_shard_count(key, shards, honour_cooldown=not force)
        info = ds.shard_info(key)
    doc = {
        "key": key,
        "previous": result.previous,
        "current": result.current,
        "changed": result.changed,
        "reason": result.reason,
        "readers_query_shards": info.max_count,
    }
    if result.reason == "cooldown":
        remaining = max(0.0, ds.config.cooldown_s - (time.time() - info.last_updated))
        doc["cooldown_remaining_s"] = round(remaining, 1)

    def people() -> None:
        if result.changed:
            console().print(
                f"{key}: N {result.previous} -> {result.current} (readers query shards "
                f"0..{info.max_count - 1})"
            )
        elif result.reason == "already_sufficient":
            console().print(f"{key}: N is already {result.current}; nothing changed")

    show(ctx, doc, people)
    if result.reason == "cooldown":
        fail(
            ExitCode.REFUSED,
            f"{key!r} changed {_age(int(time.time() - info.last_updated))} ago, inside its "
            f"{ds.config.cooldown_s:g} s cooldown (ends in {doc['cooldown_remaining_s']} s); "
            "pass --force to change it anyway",
        )
    if result.reason == "ordered":
        fail(
            ExitCode.REFUSED,
            f"{key!r} is an ordered key: its N is its range layout's; compute new "
            "boundaries (dynashard boundaries) and set the layout through the index API",
        )


# --- adopt ------------------------------------------------------------------------------
@app.command(
    help=(
        "Adopt a key whose items already sit under its bare partition key (a table that "
        "was not sharded): they stay where they are, every read includes them, new "
        "writes go to the shards, and N grows from the count in force. Nothing is copied. "
        "Every item under the bare key is surveyed first: items another program wrote are "
        "read through the table's sort-key codec, and the adoption is refused, naming "
        "them, while any cannot be read. A bare key that holds no item at all is refused "
        "too (exit 3: nothing to adopt, often a mistyped key) unless --force. --dry-run "
        "surveys and checks, and writes nothing."
    ),
    epilog="Example: dynashard adopt 'DEPARTURES#JFK' --dry-run",
)
@guarded
def adopt(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Logical key: the bare partition key.")],
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Survey and check the adoption; write nothing."),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(help="Adopt even when the bare partition key holds no item."),
    ] = False,
) -> None:
    """Adopt a key with items under its bare partition key."""
    from dynashard import names

    survey = None
    with closing(options(ctx).facade()) as ds:
        if not key.startswith(names.COUNTER_PREFIX):
            survey = ds.survey_bare_key(key)  # printed below; adopt checks it
        key_attr = ds.config.schema.key_attr
        table = ds.config.data_table
        empty = survey is not None and (
            survey.dynashard_items + survey.foreign_items + survey.unreadable_items == 0
        )
        if empty and not force:
            _print_survey(ctx, key, survey, key_attr)
            fail(
                ExitCode.REFUSED,
                f"nothing to adopt: the bare partition key {key!r} holds no item in "
                f"{table} (is the key spelled as the table stores it?); pass --force to "
                "adopt it anyway",
            )
        if dry_run:
            info = _check_adoption(ds, key, survey)
        else:
            info = ds.adopt(key, survey=survey if survey is not None else False)
    doc = {
        **info.to_json(),
        "survey": None if survey is None else survey.to_json(),
        "dry_run": dry_run,
    }

    def people() -> None:
        _print_survey(ctx, key, survey, key_attr)
        if dry_run:
            console().print(
                f"{key}: would be adopted (dry run, nothing written); reads would include "
                f"the bare partition key {key!r} and shards 0..{info.max_count - 1} "
                f"(N = {info.number_of_shards})"
            )
        else:
            console().print(
                f"{key}: adopted; reads include the bare partition key {key!r} and shards "
                f"0..{info.max_count - 1} (N = {info.number_of_shards})"
            )

    show(ctx, doc, people)


def _check_adoption(ds: Dynashard, key: str, survey: BareKeySurvey | None) -> ShardInfo:
    """Make every check :meth:`Dynashard.adopt` makes, with reads only (``adopt --dry-run``).

    Returns
    -------
    ShardInfo
        The key's metadata as it stands (``adopted`` as stored: nothing is written).

    Raises
    ------
    InvalidInputError
        As :meth:`Dynashard.adopt` would: a time-bucketed family, items the codec cannot
        read, or a bare key that is or could become another key's shard (field ``key``).
    """
    from dynashard.dynamodb.family_units import ADOPTED_FAMILY
    from dynashard.errors import InvalidInputError

    if ds.config.bucketed_family(key) is not None:
        raise InvalidInputError("key", ADOPTED_FAMILY.format(key=key))
    if survey is not None and not survey.readable:
        raise InvalidInputError("key", survey.refusal(ds.config.schema.sort_key_codec.name))
    ds.metadata._refuse_alias(key)  # the metadata's own check of adopt, a read
    return ds.shard_info(key)


def _print_survey(
    ctx: typer.Context, key: str, survey: BareKeySurvey | None, key_attr: str
) -> None:
    if survey is None or options(ctx).output is not Output.TABLE:
        return
    span = f", {survey.first_ts} .. {survey.last_ts}" if survey.first_ts else ""
    console().print(
        f"{key}: the bare partition key holds {survey.foreign_items} item(s) in another "
        f"program's shape{span}, {survey.dynashard_items} in dynashard's, "
        f"{survey.key_attribute_items} with an attribute named {key_attr!r} (read as "
        f"data); surveyed with {survey.read_units:g} read units"
    )


# --- count and compact ------------------------------------------------------------------
def _when(value: str | None, option: str) -> datetime | None:
    """Parse an ISO-8601 time option (naive means UTC); exit 2 naming the option."""
    from dynashard.errors import InvalidInputError

    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidInputError(option, f"not an ISO-8601 time: {value!r}") from exc


def _copies(n: int) -> str:
    return f"{n} extra cop{'y' if n == 1 else 'ies'}"


@app.command(
    help=(
        "Count a logical key's distinct events exactly: every physical key its shard "
        "history (and adoption) can have used is queried for its sort keys, and a sort "
        "key stored on two shards (a redelivery across a resize) counts once. Shows the "
        "items stored and the extra copies, which a Scan or Select=COUNT counts too."
    ),
    epilog="Example: dynashard count 'DEPARTURES#JFK' --from 2013-01-01T00:00:00Z",
)
@guarded
def count(
    ctx: typer.Context,
    key: _BucketKeyArgument,
    start: Annotated[
        str | None, typer.Option("--from", help="Earliest event time, inclusive (ISO-8601).")
    ] = None,
    end: Annotated[
        str | None, typer.Option("--to", help="Latest event time, exclusive (ISO-8601).")
    ] = None,
) -> None:
    """Count a key's distinct events and the extra copies stored."""
    with closing(options(ctx).facade()) as ds:
        result = ds.count_events(key, start=_when(start, "--from"), end=_when(end, "--to"))

    def people() -> None:
        console().print(
            f"{key}: {result.distinct} distinct events, {result.stored} items stored, "
            f"{_copies(result.duplicates)} ({result.shards_read} physical keys read)"
        )
        if result.duplicates:
            console().print(f"remove the extra copies with: dynashard compact '{key}'")

    show(ctx, result.to_json(), people)


@app.command(
    help=(
        "Delete the extra copies of a key's events (stored on two shards by a redelivery "
        "across a resize), keeping one of each: the copy on the shard the current N "
        "chooses, else the lowest shard. Each delete is conditional on the kept copy "
        "still existing and both being unchanged, so the last copy is never deleted. "
        "--dry-run lists what would be deleted. Exits 3 when copies were left (they "
        "differ from the kept one, or changed meanwhile)."
    ),
    epilog="Example: dynashard compact 'DEPARTURES#JFK' --dry-run",
)
@guarded
def compact(
    ctx: typer.Context,
    key: _BucketKeyArgument,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the copies it would delete; delete none.")
    ] = False,
) -> None:
    """Delete the extra copies of a key's events."""
    with closing(options(ctx).facade()) as ds:
        result = ds.compact(key, dry_run=dry_run)

    def people() -> None:
        out = console()
        done = result.would_delete if dry_run else result.deleted
        out.print(
            f"{key}: {result.count.distinct} distinct events, {result.count.stored} items "
            f"stored, {_copies(result.count.duplicates)}; "
            + (f"would delete {len(done)}" if dry_run else f"deleted {len(done)}")
        )
        for entry in done:
            out.print(f"  {entry['physical_key']}  {entry['sort_key']}  (kept on {entry['kept']})")

    show(ctx, result.to_json(), people)
    if result.skipped:
        detail = "; ".join(
            f"{e['physical_key']} {e['sort_key']}: {e['reason']}" for e in result.skipped
        )
        fail(ExitCode.REFUSED, f"{_copies(len(result.skipped))} left in place: {detail}")


# --- strategy, cap ------------------------------------------------------------------------
@app.command(
    help=(
        "Set how writers pick a key's shard: random, or calculated by a data attribute "
        "(--attribute). Set it before the key's first write: a key that has another "
        "strategy is refused (exit 3) unless --force, as its data stays where the old "
        "strategy put it. The same strategy again changes nothing."
    ),
    epilog="Example: dynashard strategy 'DEPARTURES#JFK' calculated --attribute carrier",
)
@guarded
def strategy(
    ctx: typer.Context,
    key: _KeyArgument,
    name: Annotated[str, typer.Argument(metavar="random|calculated", help="The strategy.")],
    attribute: Annotated[
        str | None, typer.Option(help="calculated only: the data attribute to shard by.")
    ] = None,
    force: Annotated[
        bool, typer.Option(help="Change a key that already has another strategy.")
    ] = False,
    initial_shards: Annotated[
        int | None, typer.Option(help="N if this creates the key (a stored key keeps its N).")
    ] = None,
) -> None:
    """Set a key's shard strategy."""
    from dynashard.errors import StrategyConflictError

    with closing(options(ctx).facade()) as ds:
        try:
            info = ds.set_strategy(
                key, name, attribute=attribute, force=force, initial_shards=initial_shards
            )
        except StrategyConflictError as exc:
            fail(ExitCode.REFUSED, exc.message.replace("force=True", "--force"))
    show(
        ctx,
        info.to_json(),
        lambda: console().print(
            f"{key}: strategy {info.strategy_label} (N = {info.number_of_shards})"
        ),
    )


@app.command(
    help=(
        "Set a key's own cap on its shard count N (1 up to the configured max_shards, not "
        "below its N in force), or remove it with 'none'. Every growth path stops at it: "
        "the scaler, in-band growth and resize (unless forced)."
    ),
    epilog="Example: dynashard cap 'DEPARTURES#JFK' 16",
)
@guarded
def cap(
    ctx: typer.Context,
    key: _KeyArgument,
    value: Annotated[str, typer.Argument(metavar="N|none", help="The cap, or none.")],
) -> None:
    """Set or remove a key's cap on N."""
    from dynashard.errors import InvalidInputError

    if value.strip().lower() == "none":
        limit: int | None = None
    else:
        try:
            limit = int(value)
        except ValueError:
            raise InvalidInputError("N", f"must be a whole number or none, got {value!r}") from None
    with closing(options(ctx).facade()) as ds:
        info = ds.set_max_shards(key, limit)
    shown = "none" if info.max_shards is None else str(info.max_shards)
    show(
        ctx,
        info.to_json(),
        lambda: console().print(f"{key}: max_shards {shown} (N = {info.number_of_shards})"),
    )


# --- plan -------------------------------------------------------------------------------
def _sample_sizes(path: Path) -> list[int]:
    """Return the stored size of each item in a JSON-lines (or JSON array) sample."""
    from dynashard.core.buckets import TimeBucket
    from dynashard.core.capacity import any_item_size
    from dynashard.dynamodb.writer import build_item
    from dynashard.errors import InvalidInputError
    from dynashard.model import Event, loads

    text = path.read_text(encoding="utf-8") if str(path) != "-" else sys.stdin.read()
    stripped = text.lstrip()
    try:
        # Decimals as Decimal (dynashard.model.loads): a sample's numbers are sized
        # and checked as the ingest paths store them, every digit kept.
        rows = (
            loads(stripped)
            if stripped.startswith("[")
            else [loads(line) for line in text.splitlines() if line.strip()]
        )
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            "sample", f"{path}: not JSON lines or a JSON array ({exc})"
        ) from exc
    sizes: list[int] = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InvalidInputError(f"sample[{i}]", "must be a JSON object (an item or an event)")
        if {"key", "id", "ts"} <= set(row):  # an event as POST /events takes it
            try:
                event = Event.model_validate(row)
            except ValueError as exc:
                raise InvalidInputError(f"sample[{i}]", f"not a valid event: {exc}") from exc
            sizes.append(build_item(event, 0, TimeBucket.DAY)[1])
        else:
            sizes.append(any_item_size(row))
    if not sizes:
        raise InvalidInputError("sample", f"{path} holds no items")
    return sizes


@app.command(
    help=(
        "Plan a key's shard count from its peak writes/s and reads/s and its item size "
        "(or a sample of items or events, JSON lines): N = ceil(peak WCU / (1000 x target "
        "utilization)) and the read analogue, the read fan-out cost per page at that N, "
        "and the monthly cost difference at on-demand prices. Shows its arithmetic and "
        "the limits it used."
    ),
    epilog="Example: dynashard plan --writes 2400 --reads 500 --item-bytes 1536",
)
@guarded
def plan(
    ctx: typer.Context,
    writes: Annotated[float, typer.Option(help="Peak items written per second on the key.")],
    reads: Annotated[float, typer.Option(help="Peak items read per second.")] = 0.0,
    item_bytes: Annotated[
        int | None, typer.Option(help="Item size as stored, bytes (or give --sample).")
    ] = None,
    sample: Annotated[
        Path | None,
        typer.Option(help="JSON lines of items (plain or DynamoDB JSON) or events; - for stdin."),
    ] = None,
    target_utilization: Annotated[
        float | None,
        typer.Option(
            help=f"Planned share of a partition's limit (${names.ENV_TARGET_UTILIZATION} or "
            f"{defaults.TARGET_UTILIZATION.default:g})."
        ),
    ] = None,
    page_limit: Annotated[int, typer.Option(help="Items per page of a query.")] = 100,
    eventually_consistent: Annotated[
        bool, typer.Option(help="Pages read eventually consistent (GSI1); base reads are strong.")
    ] = False,
    wru_price: Annotated[
        float, typer.Option(help="On-demand USD per million write request units.")
    ] = 0.625,
    rru_price: Annotated[
        float, typer.Option(help="On-demand USD per million read request units.")
    ] = 0.125,
    partition_wcu: Annotated[
        float | None,
        typer.Option(
            help=f"Per-partition WCU/s (${names.ENV_PARTITION_WCU} or "
            f"{defaults.PARTITION_WCU.default:g})."
        ),
    ] = None,
    partition_rcu: Annotated[
        float | None,
        typer.Option(
            help=f"Per-partition RCU/s (${names.ENV_PARTITION_RCU} or "
            f"{defaults.PARTITION_RCU.default:g})."
        ),
    ] = None,
) -> None:
    """Plan a key's shard count and its read and monthly cost."""
    from dynashard.errors import InvalidInputError
    from dynashard.planning.capacity import plan_capacity

    if (item_bytes is None) == (sample is None):
        raise InvalidInputError("--item-bytes/--sample", "give exactly one of them")
    sizes = [item_bytes] if item_bytes is not None else _sample_sizes(sample)  # type: ignore[arg-type]
    result = plan_capacity(
        writes_per_s=writes,
        reads_per_s=reads,
        item_sizes=sizes,
        target_utilization=target_utilization
        if target_utilization is not None
        else env_default(defaults.TARGET_UTILIZATION),
        consistent=not eventually_consistent,
        page_limit=page_limit,
        partition_wcu=partition_wcu
        if partition_wcu is not None
        else env_default(defaults.PARTITION_WCU),
        partition_rcu=partition_rcu
        if partition_rcu is not None
        else env_default(defaults.PARTITION_RCU),
        wru_price_per_million=wru_price,
        rru_price_per_million=rru_price,
    )
    show(ctx, result.to_json(), lambda: _print_plan(result))


def _print_plan(result: CapacityPlan) -> None:
    from rich.table import Table

    out = console()
    out.print(
        f"[bold]N = {result.shards}[/bold]  (writes need {result.shards_for_writes}, "
        f"reads need {result.shards_for_reads})"
    )
    out.print("arithmetic:")
    for step in result.steps:
        out.print(f"  {step}")
    summary = Table("per page of reads", "1 key", f"N = {result.shards}", title_justify="left")
    summary.add_row("requests", "1", str(result.requests_per_page))
    summary.add_row("RCU", f"{result.rcu_per_page_unsharded:g}", f"{result.rcu_per_page:g}")
    summary.add_row(
        "USD per month (reads)",
        f"{result.monthly_read_usd_unsharded:,.2f}",
        f"{result.monthly_read_usd:,.2f}",
    )
    out.print(summary)
    out.print("limits used:")
    for limit in result.limits:
        out.print(f"  {limit.name}: {limit.value} ({limit.source})")
    for warning in result.warnings:
        out.print(f"[yellow]warning:[/yellow] {warning}")


# --- boundaries ---------------------------------------------------------------------------
def _sample_values(path: Path, field: str | None) -> list[str]:
    from dynashard.errors import InvalidInputError

    text = path.read_text(encoding="utf-8") if str(path) != "-" else sys.stdin.read()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if field is None:
        return lines
    values = []
    for i, line in enumerate(lines):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"sample line {i + 1}", f"not JSON ({exc})") from exc
        if not isinstance(row, dict) or not isinstance(row.get(field), str):
            raise InvalidInputError(f"sample line {i + 1}", f"has no string field {field!r}")
        values.append(row[field])
    return values


@app.command(
    help=(
        "Compute the range boundaries of an ordered key from a sample of its values: "
        "N - 1 cuts so each range shard holds about the same share of the sample, and the "
        "sub-shard count of each (dynashard.core.ordered)."
    ),
    epilog="Example: dynashard boundaries --sample tailnums.txt --shards 4",
)
@guarded
def boundaries(
    ctx: typer.Context,
    sample: Annotated[
        Path, typer.Option(help="One value per line (or JSON lines with --field); - for stdin.")
    ],
    shards: Annotated[int, typer.Option(help="Range shards N.", min=1)],
    field: Annotated[
        str | None, typer.Option(help="Take the value from this field of JSON lines.")
    ] = None,
) -> None:
    """Compute ordered range boundaries from a sample."""
    from dynashard.core.ordered import OrderedLayout, normalise, range_shard

    values = _sample_values(sample, field)
    layout = OrderedLayout.from_sample(values, shards)
    per_shard = [0] * layout.shard_count
    for value in values:
        per_shard[range_shard(layout.boundaries, normalise(value))] += 1
    rows = [
        {
            "shard": i,
            "from": layout.boundaries[i - 1] if i > 0 else None,
            "to": layout.boundaries[i] if i < len(layout.boundaries) else None,
            "sample_values": per_shard[i],
            "sub_shards": layout.sub_shards[i],
        }
        for i in range(layout.shard_count)
    ]
    doc = {
        "shards": layout.shard_count,
        "boundaries": list(layout.boundaries),
        "sub_shards": list(layout.sub_shards),
        "sample_values": len(values),
        "ranges": rows,
    }
    show(ctx, doc, lambda: _print_boundaries(layout, rows, len(values)))


def _print_boundaries(layout: OrderedLayout, rows: list[dict[str, Any]], values: int) -> None:
    from rich.table import Table

    table = Table(
        "shard",
        "from (incl.)",
        "to (excl.)",
        "sample values",
        "sub-shards",
        title=f"{layout.shard_count} range shards from {values} values",
        title_justify="left",
    )
    for row in rows:
        table.add_row(
            str(row["shard"]),
            str(row["from"]) if row["from"] is not None else "(start)",
            str(row["to"]) if row["to"] is not None else "(end)",
            str(row["sample_values"]),
            str(row["sub_shards"]),
        )
    out = console()
    out.print(table)
    out.print(f"boundaries: {json.dumps(list(layout.boundaries))}")


# --- hot --------------------------------------------------------------------------------
@app.command(
    help=(
        "List the most throttled and most accessed partition keys from Contributor "
        "Insights (or the partition emulator's top-N, against --endpoint-url), mapped to "
        "logical keys, with each key's shard count and the count the planner would give it."
    ),
    epilog=(
        "Example: dynashard --endpoint-url http://127.0.0.1:8001 hot --minutes 10 (against "
        "the partition emulator of the project's local sandbox, started with --emulator)"
    ),
)
@guarded
def hot(
    ctx: typer.Context,
    minutes: Annotated[float, typer.Option(help="Window: the last this many minutes.", min=1)] = 5,
    index: Annotated[
        str | None,
        typer.Option(
            help="A GSI instead of the base table: the time-bucket GSI (GSI1, or "
            "DYNASHARD_GSI_NAME) has its keys mapped to logical keys."
        ),
    ] = None,
    top: Annotated[
        int, typer.Option(help="Contributors per report (1..100).", min=1, max=100)
    ] = 10,
    source: Annotated[
        str,
        typer.Option(
            help="insights (CloudWatch Contributor Insights), emulator (the sandbox's), or "
            "auto: emulator when --endpoint-url is set."
        ),
    ] = "auto",
    read: Annotated[bool, typer.Option(help="Read capacity instead of write.")] = False,
) -> None:
    """Show the hottest keys and what the planner would do about them."""
    from dynashard.cli.hot import hot_report

    opts = options(ctx)
    if source not in ("auto", "insights", "emulator"):
        fail(ExitCode.USAGE, f"--source must be auto, insights or emulator, got {source!r}")
    use_emulator = source == "emulator" or (source == "auto" and opts.endpoint_url is not None)
    report = hot_report(
        opts, minutes=minutes, index=index, top=top, emulator=use_emulator, read=read
    )
    if report is None:
        fail(
            ExitCode.NOT_FOUND,
            f"Contributor Insights is not enabled on {opts.data_table}"
            + (f" index {index}" if index else "")
            + " (aws dynamodb update-contributor-insights --contributor-insights-action ENABLE)",
        )
    show(ctx, report, lambda: _print_hot(report, minutes))


def _print_hot(report: dict[str, Any], minutes: float) -> None:
    from rich.table import Table

    out = console()
    out.print(
        f"[bold]{report['source']}[/bold]: {report['resource']}, last {minutes:g} min, "
        f"{report['operation']} capacity"
    )
    keys = Table(
        "logical key",
        "throttled",
        "units/s",
        "shards",
        "planned",
        "hot physical keys",
        title="logical keys",
        title_justify="left",
    )
    for row in report["logical_keys"]:
        keys.add_row(
            row["key"],
            str(row["throttled_events"]),
            f"{row['consumed_units_per_s']:.1f}",
            str(row["shards"]),
            str(row["planned_shards"]),
            ", ".join(row["physical_keys"][:4]) + (" ..." if len(row["physical_keys"]) > 4 else ""),
        )
    out.print(keys)
    if report["unmapped"]:
        out.print(f"not dynashard keys: {', '.join(report['unmapped'])}")


def main() -> None:
    """Run the ``dynashard`` command (the console-script entry point)."""
    app()


if __name__ == "__main__":
    main()
