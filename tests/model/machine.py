"""The model of the whole library: a hypothesis state machine over :class:`dynashard.Dynashard`.

The machine drives the public facade with random interleavings of every operation
(writes under each strategy, redeliveries, resizes across cooldowns, adoption of legacy
items, ordered-index puts, counters, configuration changes of bucket units) and checks
every kind of read against :class:`Model`, a plain in-memory record of what the library
acknowledged. The model never calls the library's merge, sort, bucket, encode or
normalisation code: it computes sort keys and their order itself, from the documented
rules.

The table layout (the schema dimension)
---------------------------------------
Each sequence draws one :class:`Layout` at initialization: the data table's key schema
(``DynashardConfig.schema``, :class:`~dynashard.core.schema.TableSchema`) and the model's
own reading of its sort-key codec. :data:`LAYOUTS`:

``default``
    dynashard's own table (``PK``/``SK`` ``{ts µs}#{id}``, ``GSI1``, nested ``data``);
    drawn twice as often as each of the others.
``ops_log``
    Another program's table: ``pk``/``sk``, ``iso_ms_then_id`` (``{ts ms}#{id}``, time
    floored to the millisecond), no GSI, a flat payload, its own attribute names.
``renamed``
    ``iso_time_then_id`` with every attribute and the GSI renamed, nested ``body``:
    a non-default schema whose GSI reads are served.
``seconds``
    ``iso_s_then_id`` (whole seconds) with dynashard's names and ``GSI1`` configured:
    written to, but GSI reads are refused (they cover ``iso_time_then_id`` only).
``epoch``
    ``device``/``at`` (``N``, epoch milliseconds floored), the id in its own attribute
    only, no GSI, flat: one item per shard and millisecond.
``plain``
    ``pk``/``sk`` = the event id, no GSI, nested ``payload``: no time windows.

Each layout has its own table (:func:`create_layout_tables`, built from the layout, not
from the library's table code); the metadata table is shared. The model's rules per
codec (docs/architecture.md, "A table brought by its owner"; the codecs' docstrings):

- sort key: ISO codecs the time floored to the codec's precision, fixed width, ``Z``,
  ``#``, id; ``epoch_ms_number`` the floored epoch milliseconds; ``plain_string`` the id.
- order: ISO codecs the sort key's UTF-8 bytes; ``epoch_ms_number`` the millisecond,
  then the id's UTF-8 bytes (ties across shards); ``plain_string`` the id's bytes.
  Descending reverses it.
- windows: an item is in ``[start, end)`` when its time floored to the precision is in
  ``[floor(start), ceil(end))``; ``plain_string`` refuses any bound
  (``InvalidInputError``), so every read of a bucketed family is refused there.
- one item per sort key per shard: events of one key with the same sort key are one
  event (a later event with an earlier one's sort key is sent as its redelivery, the
  same id, time and data). Under ``epoch_ms_number`` the sort key is the millisecond
  alone, so distinct events of one millisecond (any batches; also sent on purpose by
  :meth:`DynashardModel.put_same_millisecond`) contend for a shard's item: the writer
  never overwrites another event (conditional puts), moves a ``random`` key's event to
  another shard, and refuses (``permanent``, field ``ts``) one that finds every shard
  it may use taken. The model accepts a refusal only while another acknowledged event
  of the key has that millisecond, reads every acknowledged one (ties by id), and
  checks a key never holds more events in one millisecond than shards it ever had.
- the time an item reads back: dynashard's items their whole ``ts``; another program's
  the time its sort key holds (floored), or its ``ts`` attribute under ``plain_string``.

Adoption has two kinds of legacy items under a key's bare partition key:
:meth:`DynashardModel.write_legacy` (dynashard's shape, written before adoption only)
and :meth:`DynashardModel.write_foreign` (another program's shape: raw ``put_item``,
no ``key``/``id``/``ts`` attributes, the sort key in the codec's form, the program's own
attributes; under ``plain_string`` it carries a ``ts``, and under ``epoch_ms_number``
sometimes an id attribute, text or number), which the old program may go on writing
after the key is adopted. A foreign item reads as ``{key: the bare key, id and ts from
its sort key (epoch: the id attribute, else the sort key's digits), data: every
attribute but the table's and the GSI's key attributes}``.
:meth:`DynashardModel.write_unreadable` puts an item the codec cannot read: the survey
counts it, ``adopt`` refuses (field ``key``), a read of the adopted key fails with
``TableSchemaError``; the item is then deleted again.

Issue 38 (adoption meets another program's items), drawn in its own block
(:meth:`DynashardModel._foreign_extras` and the methods after it):

- the ``calculated`` key ``C`` is a bare key too (:attr:`DynashardModel.bare_keys`:
  ``write_legacy``, ``write_foreign``, ``write_unreadable`` and ``adopt`` draw it), and
  ``write_foreign`` may give an item a top-level ``carrier``: a targeted read
  (``attribute_value``) of the adopted ``C`` must return the plain read filtered by
  ``data.carrier``, the old program's items included (bug 1);
- ``adopt`` of the time-bucketed family's key is refused (field ``key``), and
  :meth:`DynashardModel.family_adopted_elsewhere` adopts it through another process's
  metadata: a read of the family then fails (field ``bucketed_keys``), after which the
  flag is removed again (bug 2);
- ``write_foreign`` may give an item an attribute named like the schema's ``key``
  (:data:`FOREIGN_KEY_ATTRS`: another string, a number, the logical key itself): it is
  read in its own shape, that attribute part of its ``data`` (bug 4);
- ``write_unreadable`` may put the sort key outside the codec's range
  (:data:`OUT_OF_RANGE_KINDS`: ``ALERT#...`` above and ``#meta`` below the ISO codecs'
  range, epoch microseconds and a number before year 1 under ``epoch_ms_number``), and
  reads in either order: the survey counts it, ``adopt`` refuses, a full read fails
  with ``TableSchemaError`` (bug 5).

Not drawn here: an item in dynashard's full shape whose sort key is not the one the
codec gives its ``id`` and ``ts`` (read as another program's;
``tests/unit/library/dynamodb/test_adoption_foreign.py``), and windowed reads meeting an
out-of-range item (a closed window holds no time the item could have).

The bare key ``L#7`` is also shard 7 of ``L``: the model writes no item there whose sort
key one of ``L``'s events has, nor an event of ``L`` whose sort key an item there has
(another program overwriting dynashard's item, or the reverse, is not the library's to
prevent).

Numbers, epoch times, redeliveries after resizes (issue 38)
----------------------------------------------------------
:meth:`DynashardModel.put_numbers` writes payload numbers of 1 to 38 significant
digits over DynamoDB's whole range (``exact_numbers``, many where a float rounds) and
numbers it cannot keep exactly (39+ digits, exponent outside 1E-130 .. ~1E+126, NaN,
infinity: ``unkeepable_numbers``, :func:`keepable` is the model's rule): the latter
are refused when the event is built, naming ``data.v{i}``; the former read back equal,
integral as int, the others as ``Decimal`` (never a float).
:meth:`DynashardModel.put_edge_times` gives event times as epoch milliseconds at the
edges of the years 1..9999 and far from 1970, pairs 1 ms apart (:data:`EDGE_MILLIS`):
each is that millisecond exactly, and P1 reads each at its own.
:meth:`DynashardModel.redeliver_after_resize` sets a key's N (a shrink most often,
under every layout, hence every codec) and redelivers acknowledged events of it; a
refused redelivery of an event the model holds acknowledged is a divergence
(``write:redelivery-refused``, in ``_put``), whatever holds its millisecond.

Input times and idempotency keys (issue 39)
-------------------------------------------
:meth:`DynashardModel.put_epoch_seconds` gives an event's time as epoch seconds (an int,
digits, a ``Decimal``, small and negative numbers): every number below 10**11 in
magnitude is refused when the event is built, naming ``ts``, never stored in 1970.
:meth:`DynashardModel.reuse_idempotency_key` sends an applied idempotency key again with
another ``by``: ``IdempotentParameterMismatchError`` naming ``idempotency_key``, nothing
applied (P4's sum).

Properties checked
------------------
P1 (completeness and order)
    A complete read (every page until the cursor is None) returns exactly the model's
    events of the key in the window (and with the calculated attribute), each once, in
    exact order of the layout's sort keys (module section above; the default's
    ``{ts}#{id}``, fixed-width UTC ISO-8601, byte order), ascending or descending.
    Legacy items under the bare partition key (either shape) count once the key is
    adopted, never before; those the old program writes after adoption count too.
P2 (cursor continuation)
    Let page k of a read return items whose last is at order key ``s`` (``s`` = the
    start of the order when no item was returned yet). Whatever was written, resized or
    adopted since (the old program's bare-key writes included), page k+1, read with page
    k's cursor, must be a prefix of ``E``: the model's events of the read *at the moment
    of page k+1*, in the read's order, strictly after ``s``. Its length is at most
    ``limit``; a shorter page is allowed, but a page whose cursor is None must hold all
    of ``E``, and a read may not return more than :data:`MAX_EMPTY_PAGES` empty pages in
    a row. No page repeats an item of an earlier page (implied: every item is strictly
    after ``s``).
    Writes between pages land at every boundary a cursor of an event read can sit on
    (:meth:`DynashardModel.write_at_boundary`): the first page's limit is drawn so that
    it ends exactly on the last item of a bucket of the family (window over 2 days, or
    2 months under the month unit), of a shard (where the model saw each event written;
    keys set to 2 or 4 shards first), or of an adopted key's bare partition key; then an
    event (or the old program's item) is written one step of the codec past the cursor,
    or at the edge of the family bucket the page ended in, and the rest is read.
P3 (ordered index)
    A read of the ordered index (full, prefix, ``[start, end)``) returns each live id once,
    with its latest value, in the order of ``{normalise(value)}\\x1f{id}`` (the documented
    normalisation, re-implemented here), paged under P2's rule. Default layout only.
P4 (counters)
    ``get_counter`` is the sum of every applied increment; a redelivered idempotent
    increment returns False and changes nothing. Default layout only.
P5 (shard counts)
    grow / shrink / set_shard_count answer as their documents say (cooldown from the
    last change of N, a shrink also within the cooldown of creation, the cap of
    ``max_shards`` and of the key's own ``max_shards``), under every layout.
P6 (errors)
    A read or write that raises raises a documented library error
    (:class:`~dynashard.errors.DynashardError`: ``InvalidInputError`` for bad input)
    exactly when the model says the input is invalid; never a bare ``TypeError`` /
    ``OverflowError`` / ``KeyError``, never a ``ShardQueryError`` on a healthy table,
    never a silent wrong answer. Under a non-default layout, counters, the ordered index,
    ``count_events`` and ``compact`` are refused with ``InvalidInputError`` field
    ``schema`` (checked once at set-up, and at the audit; the rules of P3 and P4 run
    under the default layout only, so another layout's steps go to events); a
    ``path="gsi1"`` read of a layout whose GSI cannot serve it (none, or a codec other
    than ``iso_time_then_id``) with field ``path``; a window under ``plain_string`` with
    field ``from`` or ``to``.
Audit (teardown)
    Items stored per logical key (a Query of every physical key the key may have used,
    counting items whose ``key`` attribute is the key, and under the bare key also
    those without one) are never fewer than the model's distinct events; more is
    recorded as an observation (a redelivery after a resize may store an event on two
    shards; reads collapse it). Default layout: ``count_events`` is exact and
    ``compact`` leaves one copy of each event.

Public options and how the model covers them
--------------------------------------------
Every public option of the facade, the REST routes and the CLI, each entry
``subject(option, ...)`` followed by the rule that draws it, or by why it is not drawn
and the test that covers it instead. A new option enters the model, or this list with
its reason, in the same change: ``tests/unit/library/test_model_options.py`` fails
while one of the facade's, the routes' or the CLI's options is missing here (or one
listed here no longer exists).

The facade, :class:`~dynashard.Dynashard`:

- ``Dynashard(config, client)``: drawn: every sequence builds it (:meth:`Backend.facade`)
  on the backend's client, the library's own kind (Query pages parsed once).
- ``Dynashard(write_client)``: not drawn: omitted, so the given client is also the
  writer's; another writer client is a connection choice, not a semantic one
  (``tests/unit/library/dynamodb/test_write_path.py::test_the_writers_unvalidated_client_writes_every_event``).
- ``Dynashard.write_client()``, ``Dynashard.executor()``: properties, no option.
- ``Dynashard.check()``: drawn: the first write or read of every non-default layout
  calls it (``check_schema``).
- ``Dynashard.put_events(events)``: drawn by ``put_random``, ``put_calculated``,
  ``put_family``, ``put_same_millisecond``, ``redeliver``, ``write_between_pages``.
- ``Dynashard.write_key(event)``, ``Dynashard.read_unit(key, family)``: drawn by
  ``family_write_key`` (the bucket key in the stored unit; pinning; a plain key).
- ``Dynashard.query_events(key, start, end, limit, descending, cursor, attribute_value,
  consistent, path)``: drawn by ``read`` (windows, limits 1 to 100, both orders,
  ``attribute_value`` on every key, both consistencies, the three paths),
  ``continue_read`` and ``write_between_pages`` (cursors across writes and resizes) and
  ``read_options`` (``limit`` 0, 1,000 and 1,001; a malformed cursor, another key's).
- ``Dynashard.query_events(allow_partial)``: drawn by ``read_options``: on a healthy
  table the page is the same and names no missing shard; moto and DynamoDB Local never
  fail a shard
  (``tests/unit/library/dynamodb/test_writer_reader.py::test_partial_results_name_the_missing_shards``).
- ``Dynashard.count_events(key, start, end)``: drawn by ``count_window`` and the audit.
- ``Dynashard.compact(key, dry_run)``: drawn by the audit and ``compact_dry_run``.
- ``Dynashard.increment_counter(name, by, idempotency_key)``: drawn by ``increment``
  and ``increment_at_bound`` (redelivered tokens, 38 digits), and
  ``reuse_idempotency_key`` (an applied token with another ``by``: refused).
- ``Dynashard.get_counter(name)``: drawn by ``read_counter``.
- ``Dynashard.shard_info(key)``: drawn by ``inspect_shard_info`` and ``grow_for_reason``.
- ``Dynashard.grow(key, target, reason)``: drawn by ``resize`` and ``grow_for_reason``
  (``read``, ``write``, ``write-load``: a change records it in ``grown_for``).
- ``Dynashard.shrink(key, target)``: drawn by ``resize``.
- ``Dynashard.set_shard_count(key, count, honour_cooldown, force)``: drawn by ``resize``
  (both ``honour_cooldown``) and ``set_count_forced`` (``force`` past a key's own cap).
- ``Dynashard.set_max_shards(key, cap)``: drawn by ``set_key_max_shards``.
- ``Dynashard.set_strategy(key, strategy, attribute, force, initial_shards)``: drawn by
  ``setup`` and ``restate_strategy`` (the same strategy again, by name or enum, forced
  or not, ``initial_shards`` on a stored key; another one refused without ``force``).
  Another strategy with ``force`` is not drawn: it moves where later events go, and
  the documented consequence, targeted reads missing the events written before, is
  the caller's
  (``tests/unit/cli/test_cli.py::test_strategy_sets_a_new_key_and_refuses_another_one_without_force``).
- ``Dynashard.survey_bare_key(key)``: drawn by ``write_unreadable`` and
  ``adopt_with_survey``.
- ``Dynashard.adopt(key, survey)``: drawn by ``adopt`` (``survey=True``) and
  ``adopt_with_survey`` (a survey just made). ``survey=False`` is not drawn: it skips
  the check whose refusal the model expects
  (``tests/unit/library/dynamodb/test_table_schema.py::test_an_adopted_item_the_codec_cannot_order_fails_the_read_naming_it``).
- ``Dynashard.sharded_keys()``: not drawn: a Scan of the whole metadata table, which
  every sequence of a soak shares (thousands of keys)
  (``tests/unit/library/planning/test_shrinking.py::test_shrink_round_trip_through_the_conditional_update``).
- ``Dynashard.ordered_index(key)``: drawn by ``setup``, ``index_put``,
  ``index_delete``, ``index_read``.
- ``Dynashard.close()``: drawn: every rebuild (``change_unit``) and teardown.

The ordered index, :class:`~dynashard.dynamodb.ordered_index.OrderedIndex`:

- ``OrderedIndex.configure_from_sample(values, shards)``: drawn by ``setup``.
- ``OrderedIndex.put(items)``, ``OrderedIndex.delete(ids)``: drawn by ``index_put``,
  ``index_delete``.
- ``OrderedIndex.query(prefix, start, end, limit, cursor)``: drawn by ``index_read`` and
  ``continue_read``.
- ``OrderedIndex.configure(layout, max_attempts)``: not drawn: ``configure_from_sample``
  builds its layout and calls it
  (``tests/unit/functions/test_ordered_routes.py::test_layout_from_boundaries``).
- ``OrderedIndex.layout(fresh)``, ``OrderedIndex.build_item(item)``,
  ``OrderedIndex.client()``: not drawn: what ``put`` and ``query`` use
  (``tests/unit/library/dynamodb/test_ordered_index.py::test_layout_write_is_conditional``).

The configuration, :class:`~dynashard.DynashardConfig`:

- ``DynashardConfig(data_table, metadata_table, schema, check_schema)``: drawn: the
  layout's table and schema (every non-default layout checks it).
- ``DynashardConfig(time_bucket, time_buckets, bucketed_keys)``: drawn by ``setup`` and
  ``change_unit``.
- ``DynashardConfig(hedging)``: drawn: half the sequences hedge eagerly.
- ``DynashardConfig(cooldown_s)``: not drawn: 30 s, and ``tick`` draws the clock around
  it (0, 1, 29, 30, 31 s).
- ``DynashardConfig(max_shards)``: not drawn: 16, above every count drawn; each key's
  own cap is drawn instead (``tests/unit/library/dynamodb/test_metadata.py::test_grow_is_capped``).
- ``DynashardConfig(default_shards)``: not drawn: 1, the N of P5's new keys
  (``tests/unit/library/dynamodb/test_metadata.py::test_writer_gets_or_creates_with_default``).
- ``DynashardConfig(metadata_cache_ttl_s)``: not drawn: a writer's cached N lives 30 s
  of real time, and a read never depends on it (invariant 3)
  (``tests/unit/library/dynamodb/test_metadata.py::test_writer_cache_lives_at_most_its_ttl``).
- ``DynashardConfig(max_workers)``: not drawn per sequence: the backend's
  (``--workers`` of the soak).
- ``DynashardConfig(endpoint_url)``: not drawn: the client is given.
- ``DynashardConfig(partition_wcu, partition_rcu, target_utilization)``: not drawn: they
  size plans and price read paths, never what a read returns; ``path`` is drawn
  (``tests/unit/library/planning/test_capacity_plan.py``).
- ``DynashardConfig(in_band_growth, write_backoff)``: not drawn: moto and DynamoDB Local
  never throttle
  (``tests/unit/library/core/test_throttling.py::test_key_range_throttling_grows_the_key_and_the_write_lands``,
  ``tests/unit/library/core/test_throttling.py::test_the_facade_writer_owns_its_retries``).

The functions the facade's inputs go through:

- ``Event(key, id, ts, data)``: drawn by every ``put_*`` rule; ``ts`` as epoch
  milliseconds by ``put_edge_times``, as epoch seconds (refused) by
  ``put_epoch_seconds``.
- ``parse_ts(value, field, min_epoch_ms)``: ``min_epoch_ms`` at its default through
  ``Event`` (``put_epoch_seconds``); None, how the readers parse a time already stored,
  is not drawn: the model's times are near 2013
  (``tests/unit/library/core/test_exact_times.py::test_a_stored_time_of_any_magnitude_is_read``).

The routes (``python -m functions.openapi``) are not drawn: each maps its parameters onto
one facade call above, and that mapping is tested in ``tests/unit/functions/``:

- ``GET /events(key, from, to, limit, order, cursor, partial, attr, consistent, path)``:
  ``query_events``
  (``test_query.py::test_get_events_passes_the_parsed_window_and_answers_items_and_cursor``,
  ``test_get_events_desc_and_cursor_are_passed_through``,
  ``test_attr_is_passed_through_as_the_targeted_value``,
  ``test_consistent_false_lets_the_plan_read_gsi1_and_logs_it``,
  ``test_partial_results_name_the_missing_shards``; ``test_round_trip.py``).
- ``POST /events(key, id, ts, data, events)``: ``put_events``
  (``test_ingest.py::test_post_one_event_writes_it_and_answers_200``,
  ``test_post_batch_is_one_bulk_write_and_accepts_epoch_millis``).
- ``GET /counters/{name}(name)``: ``get_counter``
  (``test_query.py::test_get_counter_decodes_the_name``).
- ``POST /counters/{name}(name, idempotency-key, by)``: ``increment_counter``
  (``test_ingest.py::test_post_counter_decodes_the_name_and_passes_the_idempotency_key``).
- ``GET /shards/{key}(key)``: ``shard_info``
  (``test_query.py::test_get_shards_answers_count_and_history``).
- ``PUT /shards/{key}/strategy(key, strategy, attribute, force, initial_shards)``:
  ``set_strategy`` (``test_shard_admin_routes.py::``
  ``test_strategy_is_set_shown_and_a_different_one_is_409_unless_forced``).
- ``PUT /shards/{key}/max-shards(key, max_shards)``: ``set_max_shards``
  (``test_shard_admin_routes.py::test_max_shards_is_set_removed_and_refused_below_n``).
- ``GET /index/{key}(key, prefix, from, to, limit, cursor)``: ``OrderedIndex.query``
  (``test_ordered_routes.py::test_put_answers_what_was_written_and_get_lists_in_order``,
  ``test_prefix_reads_only_the_intersecting_shards``, ``test_bad_queries``).
- ``POST /index/{key}(key, items)``: ``OrderedIndex.put``
  (``test_ordered_routes.py::test_put_answers_what_was_written_and_get_lists_in_order``).
- ``PUT /index/{key}/layout(key, shards, sample, boundaries)``: ``configure_from_sample``
  or ``configure`` (``test_ordered_routes.py::``
  ``test_layout_from_a_sample_is_stored_once_and_a_different_one_is_409``,
  ``test_layout_from_boundaries``).

The CLI (``dynashard``) is not drawn: its commands call the facade above (or plan
without a table), tested in ``tests/unit/cli/test_cli.py``:

- ``dynashard(--profile, --region, --endpoint-url, --data-table, --metadata-table)``:
  where the tables are, no semantics
  (``test_the_table_schema_comes_from_the_functions_variables``).
- ``dynashard(--output, --json, --query)``: how a command's document is printed (JSON,
  a table or text; ``--json`` is ``--output json``; a JMESPath expression applied to it),
  no semantics (``tests/unit/cli/test_aws_cli_style.py``:
  ``test_output_json_and_the_json_alias_print_the_same_document``,
  ``test_query_applies_jmespath_to_the_json_document``).
- ``dynashard(--version, --debug, --install-completion, --show-completion)``: the
  installed version, botocore's debug log and tracebacks, typer's shell completion; no
  read or write (``test_version_prints_the_installed_version``,
  ``test_debug_logs_botocore_and_prints_the_traceback_of_an_error``,
  ``test_shell_completion_is_on``).
- ``dynashard status(key, --chart)``: ``shard_info``
  (``test_resize_creates_then_status_shows_count_history_and_read_paths``,
  ``test_status_chart_writes_a_png``).
- ``dynashard resize(key, shards, --force, --cooldown)``: ``set_shard_count``
  (``test_resize_inside_the_cooldown_is_refused_unless_forced``,
  ``test_resize_with_a_zero_cooldown_is_not_refused``).
- ``dynashard adopt(key, --dry-run, --force)``: ``adopt``; ``--dry-run`` surveys and
  checks with reads only, ``--force`` adopts a bare key with no item
  (``test_adopt_dry_run_surveys_and_checks_and_writes_nothing``,
  ``test_adopting_a_bare_key_with_no_item_is_refused_unless_forced``,
  ``test_adopt_surveys_another_programs_items_and_refuses_ones_it_cannot_read``).
- ``dynashard count(key, --from, --to)``: ``count_events``
  (``test_count_and_compact_remove_the_copy_a_redelivery_across_a_resize_left``,
  ``test_count_with_a_window_and_a_bad_time_is_a_usage_error``).
- ``dynashard compact(key, --dry-run)``: ``compact``
  (``test_compact_that_leaves_copies_exits_3_naming_them``).
- ``dynashard strategy(key, name, --attribute, --force, --initial-shards)``:
  ``set_strategy`` (``test_strategy_sets_a_new_key_and_refuses_another_one_without_force``).
- ``dynashard cap(key, value)``: ``set_max_shards``
  (``test_cap_sets_shows_and_removes_a_keys_max_shards``).
- ``dynashard plan(--writes, --reads, --item-bytes, --sample, --target-utilization,
  --page-limit, --eventually-consistent, --wru-price, --rru-price, --partition-wcu,
  --partition-rcu)``: planning, no table
  (``test_plan_shows_n_for_writes_and_reads_and_the_fan_out``).
- ``dynashard boundaries(--sample, --shards, --field)``: planning, no table
  (``test_boundaries_split_a_sample_into_equal_ranges``).
- ``dynashard hot(--minutes, --index, --top, --source, --read)``: Contributor
  Insights, no read or write of events
  (``test_hot_maps_physical_keys_to_logical_keys_and_plans_them``).

What a pending fix changes is a field of :class:`Semantics`, in one place.
"""

from __future__ import annotations

import contextlib
import unicodedata
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from dynashard import Dynashard, DynashardConfig, Event, HedgePolicy, Strategy, TimeBucket
from dynashard.core.families import BucketFamily
from dynashard.core.schema import (
    DEFAULT_SCHEMA,
    EPOCH_MS_NUMBER,
    ISO_MS_THEN_ID,
    ISO_S_THEN_ID,
    PLAIN_STRING,
    Payload,
    TableSchema,
)
from dynashard.dynamodb.ordered_index import OrderedItem
from dynashard.errors import (
    CounterOverflowError,
    CursorError,
    IdempotentParameterMismatchError,
    InvalidInputError,
    StrategyConflictError,
    TableSchemaError,
)

#: The most shards a key is resized to: keeps every read small, and shard 7 of ``L``
#: exists (the physical key ``L#7`` is also the bare key of the logical key ``L#7``).
MAX_MODEL_SHARDS = 8
#: Consecutive empty pages (with a cursor) a read may return before it counts as stuck.
MAX_EMPTY_PAGES = 3
#: Largest counter value a DynamoDB number holds (38 digits).
COUNTER_BOUND = 10**38 - 1
#: Largest number of buckets a window of a bucketed family or a GSI1 read may span.
MAX_WINDOW_BUCKETS = 1000
COOLDOWN_S = 30
#: Hedging as eager as it goes: a Query slower than the median of the last 16 is sent
#: again, every time (no budget), from the first Query on.
EAGER_HEDGING = HedgePolicy(quantile=0.5, window=16, min_samples=1, budget=1.0, burst=1e9)
CLOCK_START = 1_700_000_000.0
CARRIERS = ("UA", "AA", "DL")
IDS = tuple(f"e{i}" for i in range(6))
ORDERED_VALUES = ("a", "B", "ab", "Ab", "b", "ç", "C", "N1", "n10", "n2", " x", "Z", "zz", "é")
ORDERED_BOUNDS = (*ORDERED_VALUES, "", "\x01", "\u0301", "n", "N1", "c", "y")
#: Ids another program gives its items (never one of :data:`IDS`, so that its items and
#: dynashard's never share a sort key): ``#``, a space, a capital and an accent sort
#: between and around them in UTF-8 byte order.
FOREIGN_IDS = ("threat_detector", "agent-7", "Zed", "ops#1", "a b", "\u00e9-scan")
#: Issue 38: an attribute named like the schema's ``key`` on another program's item
#: (:meth:`DynashardModel._foreign_extras`): none, another string, a number, the
#: logical key itself. None is drawn twice as often.
FOREIGN_KEY_ATTRS = (None, None, "other", "number", "equal")
#: Issue 38: an unreadable bare-key sort key inside the codec's range, or outside it
#: above or below (:meth:`DynashardModel._out_of_range_sort_key`).
OUT_OF_RANGE_KINDS = ("in_range", "above", "below")


# --- semantics: what each pending fix decides, in one place -------------------------


@dataclass
class Semantics:
    """The meaning the model gives to behaviours that open defects are settling.

    Attributes
    ----------
    naive_is_utc : bool
        A naive datetime bound is UTC (defect 8); False lets a read that mixes naive and
        aware bounds raise ``InvalidInputError``.
    reput_replaces : bool
        An ordered-index put of an existing id with a new value replaces the entry
        (defect 4); False keeps both entries.
    empty_ordered_bound : str
        An ordered bound that normalises to ``""``: ``"error_or_unbounded"`` accepts an
        ``InvalidInputError`` or the answer of an absent lower bound / empty upper bound
        (defect 7); ``"error"`` demands the error.
    unit_change_keeps_data : bool
        Changing a time-bucket unit in the configuration keeps existing events readable
        (defect 3).
    per_key_max_shards : bool
        A key's own ``max_shards`` in its metadata caps its growth (defect 10).
    idempotent_redelivery_false : bool
        A redelivered idempotent increment returns False even at the 38-digit bound
        (defect 9).
    duplicates_stored_fail : bool
        The teardown audit fails when an event is stored more than once (otherwise the
        over-count is an observation; invariant 2 allows it after a resize).
    raise_on_divergence : bool
        Raise at the first divergence (hypothesis then shrinks it) or record it and go on.
    raise_labels : tuple of str
        With ``raise_on_divergence``, raise only for divergences whose label contains
        one of these (empty: every label); to shrink one defect's example at a time.
    """

    naive_is_utc: bool = True
    reput_replaces: bool = True
    empty_ordered_bound: str = "error"
    unit_change_keeps_data: bool = True
    per_key_max_shards: bool = True
    idempotent_redelivery_false: bool = True
    duplicates_stored_fail: bool = False
    raise_on_divergence: bool = True
    raise_labels: tuple[str, ...] = ()


class Divergence(AssertionError):
    """The library answered something the model says it must not."""


@dataclass
class Report:
    """What a run of the machine saw, across sequences (the soak's summary)."""

    sequences: int = 0
    steps: int = 0
    divergences: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)
    observations: dict[str, int] = field(default_factory=dict)

    def diverged(self, label: str, message: str) -> None:
        self.divergences[label] = self.divergences.get(label, 0) + 1
        self.examples.setdefault(label, message[:2000])

    def observe(self, label: str, count: int = 1) -> None:
        self.observations[label] = self.observations.get(label, 0) + count


# --- the model's own time and ordering rules (from docs, not from the library) ------


def ts_text(ts: datetime) -> str:
    """Fixed-width UTC ISO-8601 with microseconds and ``Z`` (docs: the data model)."""
    u = ts.astimezone(UTC) if ts.tzinfo else ts
    return (
        f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:"
        f"{u.second:02d}.{u.microsecond:06d}Z"
    )


def parse_ts_text(text: str) -> datetime:
    """The time of a fixed-width UTC ISO-8601 text (:func:`ts_text`)."""
    return datetime.fromisoformat(text[:26]).replace(tzinfo=UTC)


def as_utc(value: datetime) -> datetime:
    """A bound as an aware UTC datetime (naive is UTC, Semantics.naive_is_utc)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def bucket_label(ts: datetime, unit: TimeBucket) -> str:
    """The bucket label of a time (``2013-01-01T10``, ``2013-01-01``, ``2013-01``)."""
    u = as_utc(ts)
    if unit is TimeBucket.HOUR:
        return f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}"
    if unit is TimeBucket.DAY:
        return f"{u.year:04d}-{u.month:02d}-{u.day:02d}"
    return f"{u.year:04d}-{u.month:02d}"


def buckets_spanned(start: datetime, end: datetime, unit: TimeBucket) -> int:
    """How many buckets of ``unit`` the window ``[start, end)`` overlaps (start < end)."""
    s, e = as_utc(start), as_utc(end) - timedelta(microseconds=1)
    if unit is TimeBucket.MONTH:
        return (e.year - s.year) * 12 + e.month - s.month + 1
    if unit is TimeBucket.DAY:
        return (e.date() - s.date()).days + 1
    sh = s.replace(minute=0, second=0, microsecond=0)
    eh = e.replace(minute=0, second=0, microsecond=0)
    return int((eh - sh).total_seconds() // 3600) + 1


def typed_value(value: Any) -> dict[str, Any]:
    """A payload value (text or whole number) as DynamoDB's typed attribute value."""
    if isinstance(value, str):
        return {"S": value}
    return {"N": str(value)}


def normalise(value: str) -> str:
    """The ordered index's documented normalisation: NFKD, marks and Cc dropped, casefolded."""
    current = value
    for _ in range(8):
        decomposed = unicodedata.normalize("NFKD", current)
        stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
        folded = stripped.lower().casefold()
        cleaned = "".join(c for c in folded if unicodedata.category(c) != "Cc")
        if cleaned == current:
            break
        current = cleaned
    return current


YEAR_ONE = datetime(1, 1, 1, tzinfo=UTC)
UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


def micros(ts: datetime) -> int:
    """Microseconds since 0001-01-01T00:00:00Z (naive is UTC); never negative."""
    return (as_utc(ts) - YEAR_ONE) // _US


def from_micros(value: int) -> datetime:
    """The UTC time ``value`` microseconds after 0001-01-01T00:00:00Z."""
    return YEAR_ONE + value * _US


# --- the table layout: the schema dimension ---------------------------------------


@dataclass(frozen=True)
class Layout:
    """A data table's key schema, and the model's own reading of its sort-key codec.

    The methods re-state the documented rules (docs/architecture.md, "A table brought
    by its owner"); none calls the library's codec.

    Attributes
    ----------
    name : str
        The layout's name (``default``, ``ops_log``, ...).
    schema : TableSchema
        What the facade is configured with.
    form : str
        ``iso`` (``{time}#{id}``), ``epoch`` (``N`` epoch milliseconds) or ``plain``
        (the id).
    digits : int
        Fraction digits of an ``iso`` sort key's time: 6, 3 or 0.
    """

    name: str
    schema: TableSchema
    form: str
    digits: int = 6

    def __repr__(self) -> str:
        return f"Layout({self.name})"

    @property
    def is_default(self) -> bool:
        return self.name == "default"

    @property
    def gsi_reads(self) -> bool:
        """GSI reads are served: a GSI is configured and the codec is ``iso_time_then_id``."""
        return self.schema.gsi_name is not None and self.form == "iso" and self.digits == 6

    @property
    def windows(self) -> bool:
        """The sort key holds the time, so a read may take a window."""
        return self.form != "plain"

    @property
    def step(self) -> int:
        """Microseconds of the codec's precision (1 for the default's microseconds)."""
        return 1000 if self.form == "epoch" else 10 ** (6 - self.digits)

    def floor(self, ts: datetime) -> int:
        """``ts`` floored to the precision, in :func:`micros`."""
        m = micros(ts)
        return m - m % self.step

    def ceil(self, ts: datetime) -> int:
        """``ts`` rounded up to the precision, in :func:`micros`."""
        return -(-micros(ts) // self.step) * self.step

    def epoch_ms(self, ts: datetime) -> int:
        """Milliseconds since 1970-01-01T00:00:00Z, floored (negative before it)."""
        return (micros(ts) - micros(UNIX_EPOCH)) // 1000

    def time_text(self, ts: datetime) -> str:
        """An ISO sort key's time: floored, fixed width, ``digits`` fraction digits, ``Z``."""
        text = ts_text(from_micros(self.floor(ts)))  # ...T10:15:00.123456Z
        if self.digits == 6:
            return text
        return text[: 20 + self.digits if self.digits else 19] + "Z"

    def sort_key(self, ts: datetime, event_id: str) -> str:
        """The text of the sort key an event's item has (``S`` or ``N``)."""
        if self.form == "epoch":
            return str(self.epoch_ms(ts))
        if self.form == "plain":
            return event_id
        return f"{self.time_text(ts)}#{event_id}"

    def ident(self, ts: datetime, event_id: str) -> str:
        """An event's identity in its key: its sort key, or (epoch) millisecond and id."""
        if self.form == "epoch":
            return f"{self.epoch_ms(ts)}#{event_id}"
        return self.sort_key(ts, event_id)

    def order(self, ts: datetime, event_id: str) -> Any:
        """The order of an event in a read: bytes, or (millisecond, id bytes) for epoch."""
        if self.form == "epoch":
            return (self.epoch_ms(ts), event_id.encode())
        return self.sort_key(ts, event_id).encode()

    def in_window(self, ts: datetime, start: datetime | None, end: datetime | None) -> bool:
        """Whether an item at ``ts`` is in ``[start, end)`` at the codec's precision."""
        t = self.floor(ts)
        if start is not None and t < self.floor(start):
            return False
        return end is None or t < self.ceil(end)

    def typed(self, text: str) -> dict[str, str]:
        """A sort key's text as a typed attribute value."""
        return {"N" if self.form == "epoch" else "S": text}


DEFAULT_LAYOUT = Layout("default", DEFAULT_SCHEMA, "iso", 6)
#: Every layout a sequence may draw (module docstring).
LAYOUTS: tuple[Layout, ...] = (
    DEFAULT_LAYOUT,
    Layout(
        "ops_log",
        TableSchema(
            partition_key="pk",
            sort_key="sk",
            sort_key_codec=ISO_MS_THEN_ID,
            gsi_name=None,
            key_attr="stream",
            id_attr="event_id",
            ts_attr="at",
            shard_attr="shard_no",
            payload=Payload.FLAT,
        ),
        "iso",
        3,
    ),
    Layout(
        "renamed",
        TableSchema(
            partition_key="p",
            sort_key="s",
            gsi_name="ByTime",
            gsi_partition_key="gp",
            gsi_sort_key="gs",
            key_attr="k",
            id_attr="eid",
            ts_attr="time",
            shard_attr="sh",
            data_attr="body",
        ),
        "iso",
        6,
    ),
    Layout("seconds", TableSchema(sort_key_codec=ISO_S_THEN_ID, data_attr="payload"), "iso", 0),
    Layout(
        "epoch",
        TableSchema(
            partition_key="device",
            sort_key="at",
            sort_key_codec=EPOCH_MS_NUMBER,
            gsi_name=None,
            key_attr="stream",
            id_attr="reading_id",
            ts_attr="time",
            shard_attr="shard_no",
            payload=Payload.FLAT,
        ),
        "epoch",
    ),
    Layout(
        "plain",
        TableSchema(
            partition_key="pk",
            sort_key="sk",
            sort_key_codec=PLAIN_STRING,
            gsi_name=None,
            data_attr="payload",
        ),
        "plain",
    ),
)
#: How many times a layout appears among a sequence's draws (1 unless named).
LAYOUT_WEIGHTS = {"default": 2}


def layout_named(name: str) -> Layout:
    """The layout of a name (:data:`LAYOUTS`)."""
    for layout in LAYOUTS:
        if layout.name == name:
            return layout
    raise KeyError(f"no layout {name!r}; one of {', '.join(x.name for x in LAYOUTS)}")


def layout_table_request(layout: Layout, table: str) -> dict[str, Any]:
    """The ``CreateTable`` request of a layout's data table (on-demand, GSI projecting all)."""
    schema = layout.schema
    sk_type = "N" if layout.form == "epoch" else "S"
    types = {schema.partition_key: "S", schema.sort_key: sk_type}
    request: dict[str, Any] = {
        "TableName": table,
        "KeySchema": [
            {"AttributeName": schema.partition_key, "KeyType": "HASH"},
            {"AttributeName": schema.sort_key, "KeyType": "RANGE"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }
    if schema.gsi_name is not None:
        types[schema.gsi_partition_key] = "S"
        types[schema.gsi_sort_key] = sk_type
        request["GlobalSecondaryIndexes"] = [
            {
                "IndexName": schema.gsi_name,
                "KeySchema": [
                    {"AttributeName": schema.gsi_partition_key, "KeyType": "HASH"},
                    {"AttributeName": schema.gsi_sort_key, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    request["AttributeDefinitions"] = [
        {"AttributeName": name, "AttributeType": kind} for name, kind in sorted(types.items())
    ]
    return request


def create_layout_tables(
    client: Any, suffix: str = "", layouts: tuple[Layout, ...] = LAYOUTS
) -> dict[str, str]:
    """Create the data table of each non-default layout; return layout name -> table.

    Parameters
    ----------
    client : DynamoDBClient
        moto's or DynamoDB Local's client.
    suffix : str
        Appended to each table's name.
    layouts : tuple of Layout
        The layouts (the default's table is dynashard's own, made by the caller).

    Returns
    -------
    dict of str to str
        For :attr:`Backend.tables`.
    """
    from sandbox.tables import wait_active

    tables: dict[str, str] = {}
    for layout in layouts:
        if layout.is_default:
            continue
        name = f"dynashard-model-{layout.name}{suffix}"
        with contextlib.suppress(client.exceptions.ResourceInUseException):  # made already
            client.create_table(**layout_table_request(layout, name))
        tables[layout.name] = name
    for name in tables.values():
        wait_active(client, name)
    return tables


# --- the backend: where the tables are ---------------------------------------------


@dataclass
class Backend:
    """Tables and a client the machine's facades share (moto or DynamoDB Local).

    Attributes
    ----------
    client : DynamoDBClient
        boto3 DynamoDB client (thread-safe for the facade's workers).
    data_table, metadata_table : str
        Table names, created already; every sequence uses fresh key prefixes.
        ``data_table`` is dynashard's own (the default layout's).
    max_workers : int
        Worker threads of each facade.
    tables : dict of str to str
        The data table of each other layout (:func:`create_layout_tables`); a layout
        without one is never drawn.
    """

    client: Any
    data_table: str
    metadata_table: str
    max_workers: int = 4
    tables: dict[str, str] = field(default_factory=dict)

    def table_of(self, layout: Layout) -> str:
        return self.data_table if layout.is_default else self.tables[layout.name]

    def layouts(self) -> tuple[Layout, ...]:
        """The layouts this backend has tables for."""
        return tuple(x for x in LAYOUTS if x.is_default or x.name in self.tables)

    def facade(self, config_changes: dict[str, Any], layout: Layout = DEFAULT_LAYOUT) -> Dynashard:
        config = DynashardConfig(
            self.table_of(layout),
            self.metadata_table,
            max_shards=MAX_MODEL_SHARDS * 2,
            cooldown_s=COOLDOWN_S,
            max_workers=self.max_workers,
            schema=layout.schema,
            check_schema=not layout.is_default,
            **config_changes,
        )
        return Dynashard(config, client=self.client)


# --- the in-memory model ----------------------------------------------------------


@dataclass
class KeyMeta:
    """What the model knows of a key's metadata (P5)."""

    stored: bool = False
    n: int = 1
    last_updated: int = 0
    changes: int = 0  # entries in shard_history
    max_n: int = 1  # the largest N the key ever had (the shards the audit queries)
    max_shards: int | None = None


@dataclass(frozen=True)
class Row:
    """One event the model expects a read to return.

    Attributes
    ----------
    order : Any
        Its order under the layout (:meth:`Layout.order`).
    time : datetime
        The time a window tests (floored again by :meth:`Layout.in_window`).
    item : dict
        What the read returns: ``{"key", "id", "ts", "data"}``.
    """

    order: Any
    time: datetime
    item: dict[str, Any]


@dataclass
class Model:
    """What was acknowledged: events per read key, legacy items, index entries, counters."""

    layout: Layout = DEFAULT_LAYOUT
    #: read key -> order -> row: the events dynashard acknowledged.
    events: dict[str, dict[Any, Row]] = field(default_factory=dict)
    #: key -> sort key text -> row: the items under the key's bare partition key, either
    #: shape (one per sort key: a later put of the same sort key replaces it).
    legacy: dict[str, dict[str, Row]] = field(default_factory=dict)
    adopted: set[str] = field(default_factory=set)
    index: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    index_shadow: dict[str, list[str]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    applied: dict[tuple[str, str], int] = field(default_factory=dict)
    meta: dict[str, KeyMeta] = field(default_factory=dict)
    #: (read key, :meth:`Layout.ident`) -> (id, time, data) of every event ever sent:
    #: a later event with that identity is sent as this one again (a redelivery).
    identity: dict[tuple[str, str], tuple[str, datetime, dict[str, Any]]] = field(
        default_factory=dict
    )

    def visible(self, key: str) -> dict[Any, Row]:
        out = dict(self.events.get(key, {}))
        if key in self.adopted:
            out.update({row.order: row for row in self.legacy.get(key, {}).values()})
        return out

    def expected(
        self,
        key: str,
        start: datetime | None,
        end: datetime | None,
        attribute: str | None,
        descending: bool,
        after: Any,
    ) -> list[dict[str, Any]]:
        layout = self.layout
        rows = []
        for order, row in self.visible(key).items():
            if not layout.in_window(row.time, start, end):
                continue
            if attribute is not None and row.item["data"].get("carrier") != attribute:
                continue
            if after is not None and (order >= after if descending else order <= after):
                continue
            rows.append((order, row.item))
        rows.sort(key=lambda r: r[0], reverse=descending)
        return [item for _, item in rows]

    def expected_index(
        self, lo: str | None, hi: str | None, after: str | None, reput_replaces: bool
    ) -> list[tuple[str, dict[str, Any]]]:
        rows = []
        for item_id, (value, data) in self.index.items():
            values = [value] if reput_replaces else self.index_shadow.get(item_id, [value])
            for v in values:
                norm = normalise(v)
                if lo is not None and norm < lo:
                    continue
                if hi is not None and norm >= hi:
                    continue
                sk = f"{norm}\x1f{item_id}"
                if after is not None and sk <= after:
                    continue
                rows.append((sk, {"id": item_id, "value": v, "data": data}))
        rows.sort(key=lambda r: r[0])
        return rows


@dataclass
class OpenRead:
    """A read in progress: its parameters, its cursor, the last sort key it returned."""

    kind: str  # "events" or "index"
    params: dict[str, Any]
    cursor: str | None
    after: Any
    empty_pages: int = 0
    seen: set[str] = field(default_factory=set)
    #: The time of the last event returned (None before any).
    last_time: datetime | None = None


# --- hypothesis strategies --------------------------------------------------------

ANCHORS = (
    datetime(2013, 1, 1, 10, 0, tzinfo=UTC),
    datetime(2013, 1, 1, 0, 0, tzinfo=UTC),
    datetime(2013, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2024, 2, 29, 0, 0, tzinfo=UTC),
    datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2023, 2, 28, 23, 30, tzinfo=UTC),
    datetime(1, 1, 1, 0, 0, tzinfo=UTC),
    datetime(999, 12, 31, 23, 0, tzinfo=UTC),
    datetime(9999, 12, 31, 0, 0, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
)
DELTAS = (
    timedelta(0),
    timedelta(microseconds=1),
    timedelta(microseconds=-1),
    timedelta(seconds=1),
    timedelta(minutes=30),
    timedelta(hours=1),
    timedelta(hours=-2),
    timedelta(days=1),
    timedelta(days=-1),
)


def _shift(anchor: datetime, delta: timedelta) -> datetime:
    try:
        return anchor + delta
    except OverflowError:
        return anchor


times = st.builds(_shift, st.sampled_from(ANCHORS), st.sampled_from(DELTAS))


# --- issue 38, bugs 6 and 7: numbers up to 38 digits and beyond; epoch-ms edges -------------
def keepable(number: Decimal) -> bool:
    """DynamoDB keeps ``number`` exactly (Developer Guide, "Data types", Number).

    At most 38 significant digits (trailing zeros of the coefficient not counted), and
    0 or a magnitude within 1E-130 .. 9.9999999999999999999999999999999999999E+125, and
    (what boto3 can send) no digit finer than 1E-165.
    """
    if not number.is_finite():
        return False
    _, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    while len(digits) > 1 and digits[-1] == 0:
        digits, exponent = digits[:-1], exponent + 1
    if not any(digits):
        return True
    adjusted = exponent + len(digits) - 1
    # And no digit finer than 1E-165: boto3's serializer (boto3.dynamodb.types, precision
    # 38, Emin -128, Underflow trapped) cannot send 38 digits at 1E-130 that DynamoDB holds.
    return len(digits) <= 38 and -130 <= adjusted <= 125 and exponent >= -165


@st.composite
def _decimal(
    draw: st.DrawFn, digits: st.SearchStrategy[int], adjusted: st.SearchStrategy[int]
) -> Decimal:
    count = draw(digits)
    coefficient = draw(st.integers(10 ** (count - 1), 10**count - 1))
    exponent = draw(adjusted) - count + 1
    return Decimal((draw(st.integers(0, 1)), tuple(map(int, str(coefficient))), exponent))


#: Numbers DynamoDB keeps: 1..38 significant digits, magnitude 1E-130 .. ~1E+126, and 0.
exact_numbers = st.one_of(
    _decimal(st.integers(1, 38), st.integers(-130, 125)),
    _decimal(st.integers(15, 38), st.integers(-3, 20)),  # where a float rounds
    st.sampled_from((Decimal(0), Decimal("-9.9999999999999999999999999999999999999E+125"))),
    st.integers(-(10**38) + 1, 10**38 - 1).map(Decimal),
)
#: Numbers it cannot keep exactly: 39+ significant digits, or outside the range, or NaN.
unkeepable_numbers = st.one_of(
    _decimal(st.integers(39, 45), st.integers(-130, 125)).filter(lambda d: not keepable(d)),
    _decimal(st.integers(1, 38), st.sampled_from((126, 127, -131, -140))),
    st.sampled_from((Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity"))),
)
#: Epoch milliseconds at the edges of the years 1..9999 and far from 1970, pairs 1 ms
#: apart (a float of seconds holds no exact millisecond there).
EDGE_MILLIS = (
    -62_135_596_800_000,
    -62_135_596_799_999,
    -8_000_000_000_001,
    -8_000_000_000_000,
    7_258_118_400_001,
    253_402_300_799_993,
    253_402_300_799_994,
    253_402_300_799_998,
    253_402_300_799_999,
)


@st.composite
def bound(draw: st.DrawFn) -> datetime:
    """A window bound: an event-like time or a bucket edge, sometimes naive."""
    value = draw(times)
    if draw(st.booleans()):
        value = value.replace(minute=0, second=0, microsecond=0)  # an hour edge
    if draw(st.integers(0, 5)) == 0:
        value = value.replace(tzinfo=None)
    return value


windows = st.one_of(
    st.just((None, None)),
    st.tuples(bound(), bound()),
    st.tuples(bound(), st.none()),
    st.tuples(st.none(), bound()),
)
limits = st.sampled_from((1, 2, 3, 5, 100))
#: Offsets from ``ANCHORS[0]`` (2013-01-01T10:00Z) on both sides of an hour's, a day's
#: and a month's end (:meth:`DynashardModel.write_at_boundary`).
EDGE_OFFSETS = tuple(
    timedelta(hours=h) + timedelta(microseconds=u)
    for h in (0, 1, 14, 30 * 24 + 14)
    for u in (-1, 0, 1)
)
units = st.sampled_from((TimeBucket.HOUR, TimeBucket.DAY, TimeBucket.MONTH))


class DynashardModel(RuleBasedStateMachine):
    """The machine; :func:`machine_for` binds it to a backend and semantics."""

    backend: Backend
    semantics: Semantics
    report: Report
    #: The layouts a sequence draws from, with repeats for weight (:func:`machine_for`).
    layout_draws: tuple[Layout, ...] = (DEFAULT_LAYOUT,)

    def __init__(self) -> None:
        super().__init__()
        self.prefix = f"m{uuid.uuid4().hex[:10]}-"
        self.layout = DEFAULT_LAYOUT
        self.hedged = False
        self.model = Model()
        self.now = CLOCK_START
        self.reads: list[OpenRead] = []
        self.ds: Dynashard | None = None
        self.units: dict[str, TimeBucket] = {}
        self.old_units: dict[str, set[TimeBucket]] = {}
        self.counter_names = (self.k("c0"), self.k("c1"))
        self.big_counter = self.k("big")
        self.idem_by: dict[str, int] = {}
        #: The family's unit, fixed by its first acknowledged write.
        self.family_unit: TimeBucket | None = None
        #: Units each key's GSI1 keys were written with.
        self.gsi_units: dict[str, set[TimeBucket]] = {}
        #: (read key, order) -> the physical key its last acknowledged write went to
        #: (:meth:`write_at_boundary` ends pages at a shard's last item with it).
        self.placed: dict[tuple[str, Any], str] = {}
        self.report.sequences += 1

    # -- names ----------------------------------------------------------------------

    def k(self, name: str) -> str:
        return self.prefix + name

    @property
    def plain_keys(self) -> tuple[str, ...]:
        return (self.k("A"), self.k("L"), self.k("L#7"), self.k("H"))

    @property
    def calc_key(self) -> str:
        return self.k("C")

    @property
    def bare_keys(self) -> tuple[str, ...]:
        """Keys whose bare partition key the old program writes: the plain keys and C."""
        return (*self.plain_keys, self.calc_key)

    @property
    def family(self) -> str:
        return self.k("OPS")

    @property
    def index_key(self) -> str:
        return self.k("IDX")

    # -- divergence handling --------------------------------------------------------

    def _configured_unit(self, key: str) -> TimeBucket:
        return self.units["H"] if key == self.k("H") else self.units["default"]

    def diverge(self, label: str, message: str) -> None:
        if not self.layout.is_default:
            label = f"{label}@{self.layout.name}"
        self.report.diverged(label, message)
        labels = self.semantics.raise_labels
        if self.semantics.raise_on_divergence and (not labels or any(x in label for x in labels)):
            raise Divergence(f"[{label}] {message}")

    def _clock(self) -> float:
        return self.now

    def _close(self) -> None:
        """Close the facade, counting the hedges its reads sent."""
        if self.ds is None:
            return
        if self.ds.hedger is not None:
            self.report.observe("hedges sent", self.ds.hedger.stats().hedges)
        self.ds.close()

    def _build(self) -> None:
        self._close()
        changes = {
            "time_bucket": self.units["default"],
            "time_buckets": ((self.k("H"), self.units["H"]),),
            "bucketed_keys": (BucketFamily(self.family, self.units["family"]),),
            "hedging": EAGER_HEDGING if self.hedged else None,
        }
        self.ds = self.backend.facade(changes, self.layout)
        self.ds.metadata.clock = self._clock

    @property
    def facade(self) -> Dynashard:
        assert self.ds is not None
        return self.ds

    def teardown(self) -> None:
        try:
            if self.ds is not None:
                self._audit()
        finally:
            self._close()

    # -- set-up -----------------------------------------------------------------------

    @initialize(
        default=units,
        h=units,
        fam=units,
        calc_shards=st.integers(1, 4),
        index_shards=st.integers(1, 4),
        sample=st.lists(st.sampled_from(ORDERED_VALUES), min_size=4, max_size=12),
        data=st.data(),
    )
    def setup(
        self,
        default: TimeBucket,
        h: TimeBucket,
        fam: TimeBucket,
        calc_shards: int,
        index_shards: int,
        sample: list[str],
        data: st.DataObject,
    ) -> None:
        """Draw the sequence's table layout, build the facade, configure C and the index."""
        # A wide integer, not sampled_from: over a few values hypothesis favours the first
        # and the last (its boundary bias), which starved the others; both ends of this
        # range are the default, the layout weighted up anyway.
        draws = self.layout_draws
        pick = st.integers(0, 2**16 - 1).map(lambda i: draws[i % len(draws)])
        self.layout = data.draw(pick, label="layout")
        self.model.layout = self.layout
        self.report.observe(f"layout:{self.layout.name}")
        # Half the sequences read with hedged shard queries, hedging eagerly (any Query
        # slower than the median of the last 16 is sent again, no budget): a second copy
        # must never change what a page holds
        self.hedged = data.draw(st.booleans(), label="hedged")
        if self.hedged:
            self.report.observe("hedged")
        self.units = {"default": default, "H": h, "family": fam}
        self.old_units = {name: {unit} for name, unit in self.units.items()}
        self._build()
        self.facade.set_strategy(
            self.calc_key, Strategy.CALCULATED, attribute="carrier", initial_shards=calc_shards
        )
        meta = self.model.meta.setdefault(self.calc_key, KeyMeta())
        meta.stored, meta.n, meta.last_updated, meta.changes = (
            True,
            calc_shards,
            int(self.now),
            1,
        )
        meta.max_n = calc_shards
        distinct = len({normalise(v) for v in sample})
        shards = max(1, min(index_shards, distinct))
        if not self.layout.is_default:
            self._default_only_refused(sample, shards)
            return
        try:
            self.facade.ordered_index(self.index_key).configure_from_sample(sample, shards)
        except InvalidInputError:
            self.facade.ordered_index(self.index_key).configure_from_sample(sample, 1)

    def _default_only_refused(self, sample: list[str], shards: int) -> None:
        """Under another layout each path that needs dynashard's own is refused (P6).

        Checked once, here: the rules of those paths (P3, P4) run under the default
        layout only, so another layout's steps go to its writes and reads.
        """
        counter, key = self.counter_names[0], self.k("A")

        def index() -> Any:
            return self.facade.ordered_index(self.index_key)

        checks = {
            "index:configure": lambda: index().configure_from_sample(sample, shards),
            "index:put": lambda: index().put([OrderedItem("e0", "a", {})]),
            "index:delete": lambda: index().delete(["e0"]),
            "index:read": lambda: index().query(limit=1),
            "counter:increment": lambda: self.facade.increment_counter(counter, 1),
            "counter:idempotent": lambda: self.facade.increment_counter(counter, 1, "k0"),
            "counter:read": lambda: self.facade.get_counter(counter),
            "events:count": lambda: self.facade.count_events(key),
            "events:compact": lambda: self.facade.compact(key),
        }
        for what, call in checks.items():
            self._refused_for_schema(what, call)

    def _refused_for_schema(self, what: str, call: Any) -> None:
        """A path that needs dynashard's own layout refuses another (field ``schema``)."""
        try:
            result = call()
        except InvalidInputError as exc:
            if exc.field != "schema":
                self.diverge(f"{what}:refusal-field", f"{what} refused with {exc!r}")
            return
        except Exception as exc:
            self.diverge(f"{what}:refusal-error", f"{what} raised {exc!r}, not field schema")
            return
        self.diverge(f"{what}:served", f"{what} answered {result!r} under another schema")

    # -- writes -----------------------------------------------------------------------

    def _event(self, key: str, event_id: str, ts: datetime, data: dict[str, Any]) -> Event | None:
        """The event to send, or None when its sort key may not be written (alias).

        One event per identity (:meth:`Layout.ident`): a known one is the earlier event
        again (a redelivery carries the same id, time and data).
        """
        if self._alias_blocked(key, self.layout.sort_key(ts, event_id)):
            return None
        ident = (key, self.layout.ident(ts, event_id))
        event_id, ts, data = self.model.identity.setdefault(ident, (event_id, ts, data))
        return Event(key=key, id=event_id, ts=ts_text(ts), data=data)

    def _alias_blocked(self, key: str, sk: str) -> bool:
        """An event of ``L`` whose sort key an item under the bare key ``L#7`` has.

        ``L#7`` is ``L``'s shard 7: the two would be one item (module docstring).
        """
        return key == self.k("L") and sk in self.model.legacy.get(self.k("L#7"), {})

    def _bare_blocked(self, key: str, sk: str) -> bool:
        """An item under the bare key ``L#7`` whose sort key an event of ``L`` has (or had)."""
        if key != self.k("L#7"):
            return False
        prefix = self.k("L")
        return any(
            k == prefix and self.layout.sort_key(ts, event_id) == sk
            for (k, _), (event_id, ts, _) in self.model.identity.items()
        )

    def _put(self, events: list[Event | None]) -> None:
        unique: dict[tuple[str, str], Event] = {}
        for event in events:
            if event is not None:
                unique.setdefault((event.key, event.sort_key), event)
        batch = list(unique.values())
        if not batch:
            return
        try:
            outcomes = self.facade.put_events(batch)
        except Exception as exc:  # put_events never raises for per-record problems
            self.diverge("write:raised", f"put_events({batch}) raised {exc!r}")
            return
        refused = []
        for event, outcome in zip(batch, outcomes, strict=True):
            refuse = event.key == self.family and self.family_unit not in (
                None,
                self.units["family"],
            )
            if refuse:
                if outcome.ok or "InvalidInputError" not in str(outcome.error):
                    self.diverge(
                        "write:unit",
                        f"{event!r} under {self.units['family']} after {self.family_unit}: "
                        f"{outcome}",
                    )
                continue
            if not outcome.ok:
                refused.append((event, outcome))
                continue
            self._acknowledged(event, outcome.key)
            if outcome.physical_key is not None:
                self.placed[(event.key, self.layout.order(event.ts, event.id))] = (
                    outcome.physical_key
                )
        for event, outcome in refused:  # after the batch's acknowledged: any may hold a ms
            if self._stored_already(event):  # issue 38, bug 8: a redelivery is acknowledged
                self.diverge("write:redelivery-refused", f"{event!r} stored, refused: {outcome}")
                continue
            taken = self._millisecond_taken(event)
            if not (taken and outcome.permanent and outcome.field == "ts"):
                self.diverge("write:refused", f"{event!r} refused: {outcome}")
        self._one_item_per_shard_and_millisecond({event.key for event in batch})

    def _millisecond_taken(self, event: Event) -> bool:
        """Another acknowledged event of the key has the event's millisecond (epoch).

        Under ``epoch_ms_number`` an event is refused (``permanent``, field ``ts``) only
        when every shard it may go to holds another event at its millisecond.
        """
        if self.layout.form != "epoch":
            return False
        ms, me = self.layout.epoch_ms(event.ts), event.id.encode()
        return any(o[0] == ms and o[1] != me for o in self.model.events.get(event.key, {}))

    def _one_item_per_shard_and_millisecond(self, keys: set[str]) -> None:
        """Under ``epoch_ms_number`` a key holds at most one event per millisecond per shard
        it ever had: more acknowledged events than that means one overwrote another."""
        if self.layout.form != "epoch":
            return
        for key in keys - {self.family}:
            per_ms: dict[int, int] = {}
            for order in self.model.events.get(key, {}):
                per_ms[order[0]] = per_ms.get(order[0], 0) + 1
            shards = self.model.meta.get(key, KeyMeta()).max_n
            crowded = {ms: n for ms, n in per_ms.items() if n > shards}
            if crowded:
                self.diverge(
                    "write:one-item-per-ms",
                    f"{key} acknowledged {crowded} events in one millisecond on {shards} shard(s)",
                )

    def _acknowledged(self, event: Event, physical_key: str | None) -> None:
        """Record an acknowledged event (and what its write did to the key's metadata)."""
        if event.key == self.family:
            self.family_unit = self.family_unit or self.units["family"]
        else:
            unit = self._configured_unit(event.key)
            written = self.gsi_units.setdefault(event.key, set())
            if written and unit not in written:
                self._drop_reads(event.key)  # mixed units: read from the base table
            written.add(unit)
        assert physical_key is not None
        self._touch(physical_key)  # the writer's get-or-create of the key's metadata
        item = {"key": event.key, "id": event.id, "ts": ts_text(event.ts), "data": event.data}
        order = self.layout.order(event.ts, event.id)
        self.model.events.setdefault(event.key, {})[order] = Row(order, event.ts, item)

    def _touch(self, key: str) -> None:
        meta = self.model.meta.setdefault(key, KeyMeta())
        if not meta.stored:
            meta.stored, meta.n, meta.last_updated, meta.changes = True, 1, int(self.now), 1

    @rule(
        key=st.integers(0, 3),
        batch=st.lists(
            st.tuples(st.sampled_from(IDS), times, st.sampled_from(CARRIERS), st.integers(0, 9)),
            min_size=1,
            max_size=4,
        ),
    )
    def put_random(self, key: int, batch: list[tuple[str, datetime, str, int]]) -> None:
        """Events of a plain key (``random`` strategy)."""
        logical = self.plain_keys[key]
        self._put([self._event(logical, i, ts, {"carrier": c, "n": n}) for i, ts, c, n in batch])

    @rule(
        batch=st.lists(
            st.tuples(st.sampled_from(IDS), times, st.sampled_from(CARRIERS)),
            min_size=1,
            max_size=4,
        )
    )
    def put_calculated(self, batch: list[tuple[str, datetime, str]]) -> None:
        """Events of the ``calculated`` key, sharded by ``data.carrier``."""
        self._put([self._event(self.calc_key, i, ts, {"carrier": c}) for i, ts, c in batch])

    @rule(
        batch=st.lists(
            st.tuples(st.sampled_from(IDS), times, st.sampled_from(CARRIERS)),
            min_size=1,
            max_size=4,
        )
    )
    def put_family(self, batch: list[tuple[str, datetime, str]]) -> None:
        """Events of the time-bucketed family (written under their bucket's key)."""
        self._put([self._event(self.family, i, ts, {"carrier": c}) for i, ts, c in batch])

    @precondition(lambda self: self.layout.form == "epoch")
    @rule(
        which=st.integers(0, 2),
        when=times,
        ids=st.lists(st.sampled_from(IDS), min_size=2, max_size=3, unique=True),
        carriers=st.tuples(st.sampled_from(CARRIERS), st.sampled_from(CARRIERS)),
    )
    def put_same_millisecond(
        self, which: int, when: datetime, ids: list[str], carriers: tuple[str, str]
    ) -> None:
        """Events of one key and one millisecond in one batch (``epoch_ms_number``).

        A shard holds one of them: the writer moves the others to other shards of a
        ``random`` key, and refuses (``permanent``, field ``ts``) what finds every shard
        taken, or a ``calculated`` key's whose own shard is taken (:meth:`_put`); no
        acknowledged event is ever overwritten (P1), and a key holds at most one event
        per millisecond per shard it ever had.
        """
        key = (self.k("A"), self.k("H"), self.calc_key)[which]
        base = self.layout.floor(when)
        events = [
            self._event(
                key,
                event_id,
                from_micros(base + (micros(when) - base + 333 * n) % 1000),  # same ms
                {"carrier": carriers[n % 2], "n": n},
            )
            for n, event_id in enumerate(ids)
        ]
        self._put(events)

    @precondition(lambda self: bool(self.model.identity))
    @rule(data=st.data())
    def redeliver(self, data: st.DataObject) -> None:
        """A retry or redelivery of an acknowledged event: same key, id, ts and data."""
        idents = sorted(self.model.identity)
        key, sk = data.draw(st.sampled_from(idents))
        event_id, ts, payload = self.model.identity[(key, sk)]
        self._put([Event(key=key, id=event_id, ts=ts_text(ts), data=payload)])

    def _dynashard_item(self, event: Event, sk: str) -> dict[str, Any]:
        """The item dynashard would write for an event, under its bare partition key.

        Built from the layout's attribute names (no GSI keys: another program wrote it).
        """
        schema = self.layout.schema
        item: dict[str, Any] = {
            schema.partition_key: {"S": event.key},
            schema.sort_key: self.layout.typed(sk),
            schema.key_attr: {"S": event.key},
            schema.id_attr: {"S": event.id},
            schema.ts_attr: {"S": ts_text(event.ts)},
            schema.shard_attr: {"N": "0"},
        }
        payload = {name: typed_value(value) for name, value in event.data.items()}
        if schema.payload is Payload.NESTED:
            item[schema.data_attr] = {"M": payload}
        else:
            item.update(payload)
        return item

    def _put_bare(self, item: dict[str, Any]) -> None:
        table = self.backend.table_of(self.layout)
        self.backend.client.put_item(TableName=table, Item=item)

    @precondition(lambda self: True)
    @rule(
        key=st.integers(0, 4),
        batch=st.lists(st.tuples(st.sampled_from(IDS), times), min_size=1, max_size=3),
    )
    def write_legacy(self, key: int, batch: list[tuple[str, datetime]]) -> None:
        """Items in dynashard's shape under the bare partition key, before the key is adopted.

        ``key`` 4 is the ``calculated`` key (``data.carrier`` UA, nested or flat).
        """
        logical = self.bare_keys[key]
        if logical in self.model.adopted:
            return  # the application stops its bare writes before adopting
        for event_id, ts in batch:
            event = self._event(logical, event_id, ts, {"carrier": "UA", "legacy": 1})
            if event is None:
                continue
            sk = self.layout.sort_key(event.ts, event.id)
            if self._bare_blocked(logical, sk):
                continue
            self._put_bare(self._dynashard_item(event, sk))
            order = self.layout.order(event.ts, event.id)
            item = {"key": logical, "id": event.id, "ts": ts_text(event.ts), "data": event.data}
            self.model.legacy.setdefault(logical, {})[sk] = Row(order, event.ts, item)

    @rule(
        key=st.integers(0, 5),
        batch=st.lists(
            st.tuples(
                st.sampled_from(FOREIGN_IDS),
                times,
                st.integers(0, 999),
                st.sampled_from(("ok", "failed")),
            ),
            min_size=1,
            max_size=3,
        ),
        id_attr=st.sampled_from((None, "S", "N")),
        gsi_keys=st.booleans(),
        key_attr=st.sampled_from(FOREIGN_KEY_ATTRS),
        carrier=st.one_of(st.none(), st.sampled_from(CARRIERS)),
    )
    def write_foreign(
        self,
        key: int,
        batch: list[tuple[str, datetime, int, str]],
        id_attr: str | None,
        gsi_keys: bool,
        key_attr: str | None = None,
        carrier: str | None = None,
    ) -> None:
        """Another program's items under a key's bare partition key, in its own shape.

        Before adoption or after it (the old program keeps writing during a cut-over):
        raw ``put_item``, no ``key``/``id``/``ts`` attribute of dynashard's, the sort key
        in the codec's form, the program's own attributes (and its own GSI keys where
        the table has a GSI). Under ``plain_string`` the item carries a ``ts`` (the sort
        key holds no time); under ``epoch_ms_number`` sometimes an id attribute, text or
        number (the sort key holds no id). A put of a sort key already there replaces it.
        ``key`` 0..4 are the plain keys and the ``calculated`` key (:attr:`bare_keys`);
        ``key`` 5 is the key of the latest open read of a plain key, if any, and the first
        item's time one step of the codec past the read's last event, in its order: the
        old program's writes between pages of a read, just ahead of its cursor.
        Issue 38: ``key_attr`` gives the item an attribute named like the schema's
        ``key`` (:data:`FOREIGN_KEY_ATTRS`: another string, a number, the logical key
        itself), read as part of its ``data``; ``carrier`` a top-level ``carrier``, which
        a targeted read of the adopted ``calculated`` key matches (the plain read's
        items filtered).
        """
        open_reads = [
            r for r in self.reads if r.kind == "events" and r.params["key"] in self.plain_keys
        ]
        logical = self.bare_keys[key % 5]
        if key == 5 and open_reads:
            read = open_reads[-1]
            logical = read.params["key"]
            if read.last_time is not None:
                step = timedelta(microseconds=self.layout.step)
                ahead = -step if read.params["descending"] else step
                batch = [(batch[0][0], _shift(read.last_time, ahead), *batch[0][2:]), *batch[1:]]
        layout, schema = self.layout, self.layout.schema
        for agent, ts, latency, status in batch:
            sk = layout.sort_key(ts, agent)
            if self._bare_blocked(logical, sk):
                continue
            data: dict[str, Any] = {"agent": agent, "latencyMs": latency, "status": status}
            data.update(self._foreign_extras(logical, key_attr, carrier))
            if layout.form == "epoch":
                time = UNIX_EPOCH + timedelta(milliseconds=layout.epoch_ms(ts))
                if id_attr == "S":
                    data[schema.id_attr], event_id = agent, agent
                elif id_attr == "N":
                    data[schema.id_attr], event_id = latency + 1, str(latency + 1)
                else:
                    event_id = sk  # the sort key's digits stand in for the id
            elif layout.form == "plain":
                time, event_id = ts, agent
                data[schema.ts_attr] = ts_text(ts)  # the sort key holds no time
            else:
                time, event_id = from_micros(layout.floor(ts)), agent
            item = {
                schema.partition_key: {"S": logical},
                schema.sort_key: layout.typed(sk),
                **{name: typed_value(value) for name, value in data.items()},
            }
            if gsi_keys and schema.gsi_name is not None:  # its own single-table index keys
                item[schema.gsi_partition_key] = {"S": f"AGENT#{agent}"}
                item[schema.gsi_sort_key] = layout.typed(sk)
            self._put_bare(item)
            order = layout.order(time, event_id)
            event = {"key": logical, "id": event_id, "ts": ts_text(time), "data": data}
            self.model.legacy.setdefault(logical, {})[sk] = Row(order, time, event)

    @rule(
        key=st.integers(0, 4),
        out_of_range=st.sampled_from(OUT_OF_RANGE_KINDS),
        descending=st.booleans(),
    )
    def write_unreadable(self, key: int, out_of_range: str, descending: bool = False) -> None:
        """An item the codec cannot read under a bare key, checked, then deleted again.

        The survey counts it (and the readable items the model knows there); ``adopt``
        of a key not adopted yet refuses (field ``key``); a full read of an adopted key,
        in either order, fails with ``TableSchemaError``, never skipping it. Issue 38:
        ``out_of_range`` puts the sort key outside the codec's range instead (an
        ``ALERT#...`` prefix or one below ``0`` under the ISO codecs, epoch microseconds
        or a number past year 9999 under ``epoch_ms_number``; ``plain_string`` has no
        range, and draws the in-range kind), as the old writer may after adoption: the
        key is adopted first (when it may be).
        """
        logical = self.bare_keys[key]
        layout, schema = self.layout, self.layout.schema
        sk = self._out_of_range_sort_key(out_of_range)
        if sk is not None:
            self.adopt(key)  # the old writer puts it after the key's adoption
        elif layout.form == "epoch":
            sk = "1357034400000.5"  # not whole milliseconds
        elif layout.form == "plain":
            sk = "no-time"  # and no ts attribute: the item holds no time at all
        elif layout.digits == 6:
            sk = "2013-01-01T10:00:00.000Z#agent-7"  # milliseconds, not microseconds
        else:
            sk = "2013-01-01T10:00:00.000000Z#agent-7"  # microseconds: not this precision
        item = {
            schema.partition_key: {"S": logical},
            schema.sort_key: layout.typed(sk),
            "agent": {"S": "broken"},
        }
        self._put_bare(item)
        try:
            self._check_unreadable(logical, descending)
        finally:
            self.backend.client.delete_item(
                TableName=self.backend.table_of(layout),
                Key={schema.partition_key: {"S": logical}, schema.sort_key: layout.typed(sk)},
            )

    def _check_unreadable(self, logical: str, descending: bool = False) -> None:
        try:
            survey = self.facade.survey_bare_key(logical)
        except Exception as exc:
            self.diverge("unreadable:survey", f"survey_bare_key({logical}) raised {exc!r}")
            return
        readable = len(self.model.legacy.get(logical, {}))
        found = survey.dynashard_items + survey.foreign_items
        if (survey.unreadable_items, found) != (1, readable):
            self.diverge("unreadable:survey", f"{survey}: model 1 unreadable, {readable} readable")
        if logical not in self.model.adopted:
            try:
                info = self.facade.adopt(logical)
            except InvalidInputError as exc:
                if exc.field != "key":
                    self.diverge("unreadable:adopt", f"adopt({logical}) raised {exc!r}")
                return
            self.diverge("unreadable:adopted", f"adopt({logical}) accepted it: {info}")
            self._adopted(logical)  # follow the library, to keep checking the rest
            return
        try:
            page = self.facade.query_events(logical, limit=1000, descending=descending)
        except TableSchemaError:
            return
        except Exception as exc:
            self.diverge("unreadable:read", f"read of {logical} raised {exc!r}")
            return
        self.diverge("unreadable:read", f"read of {logical} returned {_ids(page.items)}")

    @rule(key=st.integers(0, 5))
    def adopt(self, key: int) -> None:
        """Adopt a plain key or the ``calculated`` key: its bare items join every read.

        ``key`` 5 is the time-bucketed family's key: refused (field ``key``), as its
        reads read bucket keys only, never the bare key (issue 38).
        """
        if key == 5:
            self._adopt_family_refused()
            return
        logical = self.bare_keys[key]
        refuse = self._adopt_refused(logical)
        try:
            info = self.facade.adopt(logical)
        except InvalidInputError as exc:
            if not refuse:
                self.diverge("adopt:raised", f"adopt({logical}) raised {exc!r}")
            elif exc.field != "key":
                self.diverge("adopt:refusal-field", f"adopt({logical}) raised {exc!r}")
            return
        if refuse:
            self.diverge("adopt:alias", f"adopt({logical}) aliases a shard: {info}")
        if not info.adopted:
            self.diverge("adopt", f"adopt({logical}) returned {info}")
        self._adopted(logical)

    # -- issue 38: adoption meets another program's items (bugs 1, 2, 4, 5) ---------------

    def _foreign_extras(
        self, logical: str, key_attr: str | None, carrier: str | None
    ) -> dict[str, Any]:
        """Attributes a foreign item may carry that collide with dynashard's reading.

        ``key_attr``: an attribute named like the schema's ``key`` (another string, a
        number, or the logical key itself, without dynashard's ``id``/``ts``): read in
        the item's own shape, part of its ``data`` (never taken for another key's item,
        never a ``KeyError``). ``carrier``: the ``calculated`` key's attribute at the
        item's top level, which a targeted read must match.
        """
        extras: dict[str, Any] = {}
        name = self.layout.schema.key_attr
        if key_attr == "other":
            extras[name] = "SOMEWHERE"
        elif key_attr == "number":
            extras[name] = 5
        elif key_attr == "equal":
            extras[name] = logical
        if carrier is not None:
            extras["carrier"] = carrier
        return extras

    def _out_of_range_sort_key(self, kind: str) -> str | None:
        """A sort key outside the codec's range (None: draw the in-range kind)."""
        form = self.layout.form
        if kind == "in_range" or form == "plain":  # plain_string has no range
            return None
        if form == "epoch":  # microseconds; a number before year 1
            return "1357034400000000" if kind == "above" else "-99999999999999999"
        return "ALERT#2013-01-01T10:00:00Z" if kind == "above" else "#meta"

    def _adopt_family_refused(self) -> None:
        """adopt() of the time-bucketed family's key is refused, field ``key``."""
        try:
            info = self.facade.adopt(self.family)
        except InvalidInputError as exc:
            if exc.field != "key":
                self.diverge("adopt:family-field", f"adopt({self.family}) raised {exc!r}")
            return
        except Exception as exc:
            self.diverge("adopt:family-error", f"adopt({self.family}) raised {exc!r}")
            return
        self.diverge("adopt:family", f"adopt({self.family}) accepted a bucketed family: {info}")

    @rule(
        carrier=st.sampled_from(CARRIERS),
        agent=st.sampled_from(FOREIGN_IDS),
        when=times,
        limit=limits,
        descending=st.booleans(),
    )
    def targeted_read_of_adopted(
        self, carrier: str, agent: str, when: datetime, limit: int, descending: bool
    ) -> None:
        """Bug 1 in one step: ``C`` adopted, the old program's item with a top-level
        ``carrier`` under its bare key, then a complete targeted read of that carrier,
        which must hold it (the plain read's items filtered, P1 and P2)."""
        self.adopt(4)
        self.write_foreign(4, [(agent, when, 7, "ok")], None, False, None, carrier)
        self.read(4, (None, None), limit, descending, "base", True, carrier, 10)

    @rule()
    def family_adopted_elsewhere(self) -> None:
        """A process without the family adopts its key: this facade's family reads refuse.

        The read fails with ``InvalidInputError`` field ``bucketed_keys`` (its reads
        read the bucket keys only, never the bare key); the adoption is then removed
        from the metadata item again, so that the family's other rules go on.
        """
        from dynashard import names
        from dynashard.dynamodb.shard_metadata import ShardMetadata

        ShardMetadata(self.facade.metadata.store, clock=self._clock).adopt(self.family)
        try:
            page = self.facade.query_events(
                self.family, start=ANCHORS[0], end=ANCHORS[0] + timedelta(days=1)
            )
        except InvalidInputError as exc:
            if exc.field not in ("bucketed_keys", "from", "to"):  # plain_string: no window
                self.diverge("read:family:adopted-field", f"family read raised {exc!r}")
            page = None
        except Exception as exc:
            self.diverge("read:family:adopted-error", f"family read raised {exc!r}")
            page = None
        finally:
            self.backend.client.update_item(
                TableName=self.backend.metadata_table,
                Key={names.ATTR_META_KEY: {"S": self.family}},
                UpdateExpression="REMOVE #a",
                ExpressionAttributeNames={"#a": names.ATTR_ADOPTED},
            )
        if page is not None:
            self.diverge("read:family:adopted", f"family read of an adopted key served {page}")

    def _adopted(self, logical: str) -> None:
        self.model.adopted.add(logical)
        self._drop_reads(logical)  # its GSI1 reads end: an adopted key reads the base table
        meta = self.model.meta.setdefault(logical, KeyMeta())
        if not meta.stored:
            meta.stored, meta.n, meta.last_updated, meta.changes = True, 1, int(self.now), 1

    def _adopt_refused(self, logical: str) -> bool:
        """``L#7`` is adopted only when ``L`` is capped at 7 or fewer and never had more."""
        if logical != self.k("L#7"):
            return False
        prefix = self.model.meta.get(self.k("L"), KeyMeta())
        if prefix.stored and prefix.max_n > 7:
            return True
        return prefix.max_shards is None or prefix.max_shards > 7

    def _drop_reads(self, logical: str) -> None:
        """Close the open eventually consistent reads of a key whose read path changed.

        A GSI1 cursor of a key that became adopted or mixed-unit is refused with
        ``CursorError`` (the read moves to the base table): documented, not checked here.
        A layout whose GSI serves no read has base-table cursors only: they go on.
        """
        if not self.layout.gsi_reads:
            return
        self.reads = [
            r
            for r in self.reads
            if r.kind != "events" or r.params["key"] != logical or r.params["consistent"]
        ]

    # -- shard counts (P5) ------------------------------------------------------------

    def _resize_targets(self) -> list[str]:
        keys = [*self.plain_keys, self.calc_key]
        keys += [f"COUNTER#{name}" for name in (*self.counter_names, self.big_counter)]
        for _, row in sorted(self.model.events.get(self.family, {}).items()):
            unit = self.family_unit or self.units["family"]
            keys.append(f"{self.family}#{bucket_label(row.time, unit)}")
        return keys

    def _cap(self, key: str) -> int:
        cap = self.facade.config.max_shards
        meta = self.model.meta.get(key)
        if self.semantics.per_key_max_shards and meta is not None and meta.max_shards:
            cap = min(cap, meta.max_shards)
        return cap

    def _expect_change(self, op: str, key: str, target: int, honour: bool) -> tuple[bool, int, str]:
        meta = self.model.meta.setdefault(key, KeyMeta())
        now = int(self.now)
        in_cooldown = COOLDOWN_S > 0 and self.now - meta.last_updated < COOLDOWN_S
        if op == "grow":
            target = min(target, self._cap(key))
        if op == "shrink":
            target = max(target, self.facade.config.default_shards)
        if not meta.stored:
            if op == "shrink":
                return False, meta.n, "not_stored"
            meta.stored, meta.n, meta.last_updated, meta.changes = True, target, now, 1
            meta.max_n = max(meta.max_n, target)
            return True, target, "created"
        if op == "shrink" and meta.n <= target:
            return False, meta.n, "already_smaller"
        if meta.n == target or (op == "grow" and meta.n > target):
            return False, meta.n, "already"
        if (op == "grow" or honour) and meta.changes > 1 and in_cooldown:
            return False, meta.n, "cooldown"
        if op == "shrink" and in_cooldown:
            return False, meta.n, "cooldown"
        meta.n, meta.max_n = target, max(meta.max_n, target)
        meta.last_updated = max(now, meta.last_updated + 1)
        meta.changes += 1
        return True, target, "changed"

    @rule(
        which=st.integers(0, 100),
        op=st.sampled_from(("grow", "shrink", "set", "set_honour")),
        count=st.integers(1, MAX_MODEL_SHARDS),
    )
    def resize(self, which: int, op: str, count: int) -> None:
        """grow, shrink or set_shard_count (honouring the cooldown or not)."""
        keys = self._resize_targets()
        key = keys[which % len(keys)]
        honour, target = op == "set_honour", count
        if op.startswith("set") and target > self._cap(key):
            try:
                self.facade.set_shard_count(key, target, honour_cooldown=honour)
            except InvalidInputError:
                return
            self.diverge("resize:cap", f"{op}({key}, {target}) passed the cap {self._cap(key)}")
            return
        try:
            if op == "grow":
                result = self.facade.grow(key, target)
            elif op == "shrink":
                result = self.facade.shrink(key, target)
            else:
                result = self.facade.set_shard_count(key, target, honour_cooldown=honour)
        except Exception as exc:
            self.diverge("resize:raised", f"{op}({key}, {target}) raised {exc!r}")
            return
        changed, current, why = self._expect_change(
            "grow" if op == "grow" else "shrink" if op == "shrink" else "set", key, target, honour
        )
        if (result.changed, result.current) != (changed, current):
            label = "resize:cap" if op == "grow" and result.current > self._cap(key) else "resize"
            self.diverge(
                label,
                f"{op}({key}, {target}) at t={self.now - CLOCK_START:.0f}: got {result}, "
                f"model expects changed={changed} current={current} ({why})",
            )
            meta = self.model.meta[key]  # follow the library, to keep checking the rest
            if result.changed:
                meta.n, meta.changes = result.current, meta.changes + 1
                meta.max_n = max(meta.max_n, result.current)
                meta.last_updated = max(int(self.now), meta.last_updated + 1)

    @precondition(lambda self: any(m.stored for m in self.model.meta.values()))
    @rule(
        which=st.integers(0, 100),
        cap=st.one_of(st.none(), st.integers(1, MAX_MODEL_SHARDS)),
    )
    def set_key_max_shards(self, which: int, cap: int | None) -> None:
        """Set or remove a key's own ``max_shards`` (``set_max_shards``)."""
        keys = sorted(k for k, m in self.model.meta.items() if m.stored)
        key = keys[which % len(keys)]
        meta = self.model.meta[key]
        new_cap = self.facade.config.max_shards if cap is None else cap
        refuse = (cap is not None and cap < meta.n) or (
            key == self.k("L") and self.k("L#7") in self.model.adopted and new_cap > 7
        )
        try:
            self.facade.set_max_shards(key, cap)
        except InvalidInputError as exc:
            if not refuse:
                self.diverge("cap:raised", f"set_max_shards({key}, {cap}) raised {exc!r}")
            return
        if refuse:
            self.diverge("cap:accepted", f"set_max_shards({key}, {cap}) should be refused")
        meta.max_shards = cap

    @rule(seconds=st.sampled_from((0, 1, COOLDOWN_S - 1, COOLDOWN_S, COOLDOWN_S + 1)))
    def tick(self, seconds: int) -> None:
        """Move the facade's metadata clock (the cooldown clock)."""
        self.now += seconds

    # -- configuration ------------------------------------------------------------------

    @rule(which=st.sampled_from(("default", "H", "family")), unit=units)
    def change_unit(self, which: str, unit: TimeBucket) -> None:
        """Rebuild the facade with another bucket unit over the same tables."""
        self.units[which] = unit
        self.old_units[which].add(unit)
        self.reads.clear()  # a cursor belongs to the facade (and unit) that made it
        self._build()

    # -- ordered index ------------------------------------------------------------------

    @precondition(lambda self: self.layout.is_default)  # P3, P4: dynashard's own table only
    @rule(
        batch=st.lists(
            st.tuples(st.sampled_from(IDS), st.sampled_from(ORDERED_VALUES), st.integers(0, 9)),
            min_size=1,
            max_size=4,
            unique_by=lambda t: t[0],
        )
    )
    def index_put(self, batch: list[tuple[str, str, int]]) -> None:
        """Put entries (a known id with a new value is a re-put)."""
        items = [OrderedItem(i, v, {"n": n}) for i, v, n in batch]
        try:
            self.facade.ordered_index(self.index_key).put(items)
        except Exception as exc:
            self.diverge("index:put", f"put({items}) raised {exc!r}")
            return
        for item_id, value, n in batch:
            shadow = self.model.index_shadow.setdefault(item_id, [])
            if normalise(value) not in [normalise(v) for v in shadow]:
                shadow.append(value)
            else:
                shadow[[normalise(v) for v in shadow].index(normalise(value))] = value
            self.model.index[item_id] = (value, {"n": n})

    @precondition(lambda self: self.layout.is_default)  # P3, P4: dynashard's own table only
    @rule(ids=st.lists(st.sampled_from(IDS), min_size=1, max_size=3))
    def index_delete(self, ids: list[str]) -> None:
        """Delete entries by id (an unknown id is skipped)."""
        try:
            removed = self.facade.ordered_index(self.index_key).delete(ids)
        except Exception as exc:
            self.diverge("index:delete", f"delete({ids}) raised {exc!r}")
            return
        live = [i for i in dict.fromkeys(ids) if i in self.model.index]
        if removed != len(live):
            self.diverge("index:delete", f"delete({ids}) removed {removed}, model {len(live)}")
        for item_id in live:
            del self.model.index[item_id]
            self.model.index_shadow.pop(item_id, None)

    # -- counters (P4) ------------------------------------------------------------------

    @precondition(lambda self: self.layout.is_default)  # P3, P4: dynashard's own table only
    @rule(
        which=st.integers(0, 1),
        by=st.integers(-50, 50).filter(bool),
        idem=st.one_of(st.none(), st.sampled_from(("k0", "k1", "k2", "k3"))),
    )
    def increment(self, which: int, by: int, idem: str | None) -> None:
        """A plain or idempotent increment (a known idempotency key is a redelivery)."""
        name = self.counter_names[which]
        if idem is not None:
            by = self.idem_by.setdefault(f"{name}/{idem}", by)
        self._touch(f"COUNTER#{name}")
        try:
            applied = self.facade.increment_counter(name, by, idem)
        except Exception as exc:
            self.diverge("counter:raised", f"increment({name}, {by}, {idem}) raised {exc!r}")
            return
        first = idem is None or (name, idem) not in self.model.applied
        if applied != first:
            self.diverge("counter:idem", f"increment({name}, {by}, {idem}) returned {applied}")
        if applied:
            self.model.counters[name] = self.model.counters.get(name, 0) + by
            if idem is not None:
                self.model.applied[(name, idem)] = by

    @precondition(lambda self: self.layout.is_default)  # P3, P4: dynashard's own table only
    @rule(sign=st.sampled_from((1, -1)), idem=st.sampled_from(("b0", "b1")))
    def increment_at_bound(self, sign: int, idem: str) -> None:
        """An idempotent increment of 38 digits, then its redeliveries (P4 at the bound)."""
        name = self.big_counter
        by = self.idem_by.setdefault(f"{name}/{idem}", sign * COUNTER_BOUND)
        redelivery = (name, idem) in self.model.applied
        self._touch(f"COUNTER#{name}")
        try:
            applied = self.facade.increment_counter(name, by, idem)
        except CounterOverflowError as exc:
            if redelivery and self.semantics.idempotent_redelivery_false:
                self.diverge("counter:bound", f"redelivered increment({by}, {idem}) raised {exc!r}")
            # a first delivery may overflow the shard it lands on: documented, nothing applied
            return
        except Exception as exc:
            self.diverge("counter:raised", f"increment({name}, {by}, {idem}) raised {exc!r}")
            return
        if applied == redelivery:
            self.diverge("counter:idem", f"increment({by}, {idem}) returned {applied}")
        if applied:
            self.model.counters[name] = self.model.counters.get(name, 0) + by
            self.model.applied[(name, idem)] = by

    @precondition(lambda self: self.layout.is_default)  # P3, P4: dynashard's own table only
    @rule(which=st.integers(0, 2))
    def read_counter(self, which: int) -> None:
        """get_counter is the sum of the applied increments."""
        name = (*self.counter_names, self.big_counter)[which]
        try:
            value = self.facade.get_counter(name).value
        except Exception as exc:
            self.diverge("counter:raised", f"get_counter({name}) raised {exc!r}")
            return
        if value != self.model.counters.get(name, 0):
            self.diverge(
                "counter:value", f"get_counter({name}) = {value}, model {self.model.counters}"
            )

    # -- event reads (P1, P2, P6) ---------------------------------------------------------

    def _read_error(self, p: dict[str, Any]) -> tuple[bool, bool]:
        """Return (must_raise, may_raise) of an event read: InvalidInputError expected."""
        start, end = p.get("start"), p.get("end")
        mixed = (
            start is not None and end is not None and (start.tzinfo is None) != (end.tzinfo is None)
        )
        may = mixed and not self.semantics.naive_is_utc
        must = False
        if start is not None and end is not None and as_utc(start) >= as_utc(end):
            must = True
        key, path = p["key"], p.get("path", "auto")
        consistent = p.get("consistent", True)
        if key == self.family and (
            start is None
            or end is None
            or path == "gsi1"
            or (
                as_utc(start) < as_utc(end)
                and buckets_spanned(start, end, self.family_unit or self.units["family"])
                > MAX_WINDOW_BUCKETS
            )
        ):
            must = True
        if p.get("attribute_value") is not None and key != self.calc_key:
            must = True
        written = self.gsi_units.get(key, set())
        if path == "gsi1" and key != self.family:
            if (
                consistent
                or start is None
                or end is None
                or p.get("attribute_value") is not None
                or key in self.model.adopted
                or len(written) > 1
            ):
                must = True
            elif as_utc(start) < as_utc(end):
                unit = next(iter(written)) if written else self._configured_unit(key)
                # more than 1,000 GSI1 Queries (buckets x GSI1 shards) cannot be served
                if buckets_spanned(start, end, unit) * MAX_MODEL_SHARDS * 2 > MAX_WINDOW_BUCKETS:
                    may = True
                if buckets_spanned(start, end, unit) > MAX_WINDOW_BUCKETS:
                    must = True
        return must, may or must

    def _layout_refusal(self, p: dict[str, Any]) -> set[str]:
        """The fields an otherwise valid read is refused with under this layout (P6).

        ``plain_string`` takes no window (``from`` / ``to``); ``path="gsi1"`` needs a GSI
        with ``iso_time_then_id`` (``path``; ``consistent`` with it is refused anyway).
        A read refused for both may name either.
        """
        fields = set()
        if not self.layout.windows and (p.get("start") is not None or p.get("end") is not None):
            fields |= {"from", "to"}
        if p.get("path") == "gsi1" and not p.get("consistent", True) and not self.layout.gsi_reads:
            fields.add("path")
        return fields

    def _page(self, read: OpenRead) -> None:
        """Read the next page of an open event read and check it (P2)."""
        p = read.params
        must, may = self._read_error(p)
        fields = set() if must else self._layout_refusal(p)
        if fields:
            must = may = True
        options = {k: v for k, v in p.items() if k != "key" and v is not None}
        try:
            page = self.facade.query_events(p["key"], cursor=read.cursor, **options)
        except InvalidInputError as exc:
            if not may:
                self.diverge(self._label(p, "raised"), f"read {p} raised {exc!r}")
            elif fields and exc.field not in fields:
                self.diverge(self._label(p, "refusal-field"), f"read {p} raised {exc!r}")
            read.cursor = None
            return
        except Exception as exc:
            self.diverge(
                self._label(p, f"bare-error:{type(exc).__name__}"), f"read {p} raised {exc!r}"
            )
            read.cursor = None
            return
        if must:
            self.diverge(self._label(p, "no-error"), f"read {p} should raise InvalidInputError")
            read.cursor = None
            return
        expected = self.model.expected(
            p["key"],
            p.get("start"),
            p.get("end"),
            p.get("attribute_value"),
            p.get("descending", False),
            read.after,
        )
        got = [
            {"key": i["key"], "id": i["id"], "ts": i["ts"], "data": i["data"]} for i in page.items
        ]
        limit = p.get("limit", 100)
        ok = len(got) <= limit and got == expected[: len(got)]
        if p.get("allow_partial") and page.missing_shards:  # a healthy table misses none
            ok = False
        if page.cursor is None and got != expected:
            ok = False
        if not ok:
            self.diverge(
                self._label(p, "items"),
                f"read {p} after {read.after!r}: got {_ids(got)} (cursor "
                f"{'set' if page.cursor else 'None'}), expected first of {_ids(expected)}",
            )
            read.cursor = None
            return
        if got:
            last = got[-1]
            read.last_time = parse_ts_text(last["ts"])
            read.after = self.layout.order(read.last_time, last["id"])
            read.empty_pages = 0
        else:
            read.empty_pages += 1
            if read.empty_pages > MAX_EMPTY_PAGES:
                self.diverge(self._label(p, "stuck"), f"read {p}: {read.empty_pages} empty pages")
                read.cursor = None
                return
        read.cursor = page.cursor

    def _label(self, p: dict[str, Any], what: str) -> str:
        key = p["key"]
        kind = (
            "family"
            if key == self.family
            else "calculated"
            if p.get("attribute_value") is not None
            else "adopted"
            if key in self.model.adopted
            else "plain"
        )
        path = p.get("path", "auto") if not p.get("consistent", True) else "base"
        return f"read:{kind}:{path}:{what}"

    def _params(
        self,
        key: str,
        window: tuple[datetime | None, datetime | None],
        limit: int,
        descending: bool,
        path: str,
        consistent: bool,
        attribute: str | None,
    ) -> dict[str, Any]:
        start, end = window
        if start is not None and end is not None and as_utc(start) > as_utc(end):
            start, end = end, start
        return {
            "key": key,
            "start": start,
            "end": end,
            "limit": limit,
            "descending": descending,
            "path": path,
            "consistent": consistent,
            "attribute_value": attribute,
        }

    @rule(
        which=st.integers(0, 5),
        window=windows,
        limit=limits,
        descending=st.booleans(),
        path=st.sampled_from(("auto", "base", "gsi1")),
        consistent=st.booleans(),
        attribute=st.one_of(st.none(), st.sampled_from(CARRIERS)),
        pages=st.integers(1, 10),
    )
    def read(
        self,
        which: int,
        window: tuple[datetime | None, datetime | None],
        limit: int,
        descending: bool,
        path: str,
        consistent: bool,
        attribute: str | None,
        pages: int,
    ) -> None:
        """Start a read of any key on any path; read ``pages`` pages, keep the rest open."""
        key = (*self.plain_keys, self.calc_key, self.family)[which]
        if key != self.calc_key and attribute is not None and which % 2:
            attribute = None  # mostly valid reads; sometimes attr on a key not calculated
        if key == self.family and which % 2 == 0:  # mostly a full window of the family
            window = (window[0] or ANCHORS[0], window[1] or ANCHORS[0] + timedelta(days=2))
        elif not self.layout.windows and which % 3:  # mostly valid reads: no window
            window = (None, None)
        read = OpenRead(
            "events",
            self._params(key, window, limit, descending, path, consistent, attribute),
            None,
            None,
        )
        for _ in range(pages):
            self._page(read)
            if read.cursor is None:
                return
        self.reads.append(read)
        del self.reads[:-4]

    @rule(
        key=st.integers(0, 3),
        limit=st.sampled_from((1, 2)),
        descending=st.booleans(),
        writer=st.sampled_from(("foreign", "event")),
        agent=st.sampled_from(FOREIGN_IDS),
        event_id=st.sampled_from(IDS),
    )
    def write_between_pages(
        self, key: int, limit: int, descending: bool, writer: str, agent: str, event_id: str
    ) -> None:
        """P2 across a write: a page, a write just ahead of its cursor, the rest of the read.

        The write is the old program's to the key's bare partition key (read once the key
        is adopted) or an event to the key's shards, one step of the codec past the
        page's last event in the read's order; either may land on a stream that ran out.
        """
        logical = self.plain_keys[key]
        params = self._params(logical, (None, None), limit, descending, "base", True, None)
        read = OpenRead("events", params, None, None)
        self._page(read)
        if read.cursor is None or read.last_time is None:
            return
        step = timedelta(microseconds=self.layout.step)
        ts = _shift(read.last_time, -step if descending else step)
        if writer == "foreign":
            self.write_foreign(key, [(agent, ts, 7, "ok")], None, False)
        else:
            self._put([self._event(logical, event_id, ts, {"carrier": "DL", "n": 7})])
        for _ in range(100):
            self._page(read)
            if read.cursor is None:
                return
        self.diverge(self._label(params, "stuck"), f"read {params} did not end")

    @precondition(lambda self: bool(self.reads))
    @rule(which=st.integers(0, 3), pages=st.integers(1, 3))
    def continue_read(self, which: int, pages: int) -> None:
        """Continue an open read after whatever happened since (P2)."""
        read = self.reads[which % len(self.reads)]
        for _ in range(pages):
            if read.kind == "events":
                self._page(read)
            else:
                self._index_page(read)
            if read.cursor is None:
                self.reads.remove(read)
                return

    # -- writes between pages at a boundary a cursor can sit on (issue 38) ----------------

    def _boundaries(self, key: str, rows: list[tuple[Any, dict[str, Any]]], at: str) -> list[int]:
        """Page limits that end a read's first page on the last item of a bucket, a shard
        or the bare key, in the read's order (``rows``: order and item, as read)."""
        if at == "bucket":
            unit = self.family_unit or self.units["family"]
            labels = [bucket_label(parse_ts_text(item["ts"]), unit) for _, item in rows]
            return [i + 1 for i in range(len(rows) - 1) if labels[i] != labels[i + 1]]
        if at == "bare":
            bare = {row.order for row in self.model.legacy.get(key, {}).values()}
            streams = ["bare" if order in bare else "events" for order, _ in rows]
        else:
            streams = [self.placed.get((key, order), "?") for order, _ in rows]
        last = {stream: i for i, stream in enumerate(streams)}  # each stream's last item
        return sorted(i + 1 for stream, i in last.items() if stream != "?")

    @staticmethod
    def _bucket_edges(ts: datetime, unit: TimeBucket) -> tuple[datetime, datetime]:
        """The first instant of ``ts``'s bucket and the first of the next (or ``ts``)."""
        if unit is TimeBucket.HOUR:
            first = ts.replace(minute=0, second=0, microsecond=0)
            return first, _shift(first, timedelta(hours=1))
        first = ts.replace(hour=0, minute=0, second=0, microsecond=0)
        if unit is TimeBucket.DAY:
            return first, _shift(first, timedelta(days=1))
        first = first.replace(day=1)
        if first.month < 12:
            return first, first.replace(month=first.month + 1)
        return first, first.replace(year=first.year + 1, month=1) if first.year < 9999 else ts

    @rule(
        which=st.integers(0, 5),
        shards=st.sampled_from((2, 4, 0)),
        seed=st.lists(
            st.tuples(st.sampled_from(IDS), times, st.sampled_from(EDGE_OFFSETS)),
            min_size=1,
            max_size=4,
        ),
        at=st.sampled_from(("bucket", "shard", "bare")),
        nth=st.integers(0, 3),
        descending=st.booleans(),
        where=st.sampled_from(("next", "edge")),
        writer=st.sampled_from(("event", "foreign")),
        event_id=st.sampled_from(IDS),
        agent=st.sampled_from(FOREIGN_IDS),
    )
    def write_at_boundary(
        self,
        which: int,
        shards: int,
        seed: list[tuple[str, datetime, timedelta]],
        at: str,
        nth: int,
        descending: bool,
        where: str,
        writer: str,
        event_id: str,
        agent: str,
    ) -> None:
        """P2 across a write at a boundary: a first page whose limit ends it exactly on the
        last item of a bucket (the family), of a shard (any key: where the model saw each
        event written) or of the bare key (an adopted key), a write just past its cursor,
        then the rest of the read.

        ``which`` picks a plain key (0..3), the calculated key (4) or the family (5); a
        boundary the key has not (a bucket of another key, the bare key of a key not
        adopted) is a shard's. First the key (the family: the first seeded event's
        bucket key) is set to ``shards`` shards (0: left as it is) and up to 4 events are
        written (the family's at :data:`EDGE_OFFSETS` from ``ANCHORS[0]``: on both sides of
        hour, day and month edges), so that boundaries exist; for ``bare`` a plain key not
        adopted gets the old program's items at the same times and is adopted. The write
        is one step of the codec past the page's last item (``next``) or, in the family,
        at the edge of that item's bucket (its last step ascending, its first instant
        descending): an event of the key (the calculated key's with the last item's
        carrier, so on its shard while N holds) or the old program's item under a plain
        key's bare partition key (``foreign``).
        """
        key = (*self.plain_keys, self.calc_key, self.family)[which]
        if key == self.family:
            self._put([self._event(key, i, ANCHORS[0] + d, {"carrier": "UA"}) for i, _, d in seed])
        if shards:
            targets = self._resize_targets()
            target = key
            if key == self.family and seed:
                unit = self.family_unit or self.units["family"]
                target = f"{key}#{bucket_label(ANCHORS[0] + seed[0][2], unit)}"
            if target in targets:
                self.resize(targets.index(target), "set", shards)
        if key != self.family:
            self._put([self._event(key, i, ts, {"carrier": "AA", "n": 1}) for i, ts, _ in seed])
        if at == "bare" and key in self.plain_keys and key not in self.model.adopted:
            # the old program's items under the bare key, then the key adopted
            self.write_foreign(which, [(agent, ts, 3, "ok") for _, ts, _ in seed], None, False)
            self.adopt(which)
        if key == self.family:
            if not self.layout.windows:
                return  # a family needs a window; plain_string refuses any
            unit = self.family_unit or self.units["family"]
            span = timedelta(days=59) if unit is TimeBucket.MONTH else timedelta(days=2)
            window = (ANCHORS[1] if unit is TimeBucket.MONTH else ANCHORS[0], ANCHORS[0] + span)
            at = "shard" if at == "shard" else "bucket"
        else:
            at = "bare" if at == "bare" and key in self.model.adopted else "shard"
            window = (None, None)
        params = self._params(key, window, 1, descending, "base", True, None)
        items = self.model.expected(key, window[0], window[1], None, descending, None)
        rows = [(self.layout.order(parse_ts_text(i["ts"]), i["id"]), i) for i in items]
        limits = [n for n in self._boundaries(key, rows, at) if n < len(rows)]
        if not limits:
            return
        params["limit"] = min(limits[nth % len(limits)], 1000)
        self.report.observe(f"boundary:{at}")
        read = OpenRead("events", params, None, None)
        self._page(read)
        if read.cursor is None or read.last_time is None:
            return
        last = rows[params["limit"] - 1][1]
        step = timedelta(microseconds=self.layout.step)
        ts = _shift(read.last_time, -step if descending else step)
        if key == self.family and where == "edge":
            first, after = self._bucket_edges(read.last_time, unit)
            ts = first if descending else _shift(after, -step)
        if writer == "foreign" and key in self.plain_keys:
            self.write_foreign(which, [(agent, ts, 7, "ok")], None, False)
        else:
            data = {"carrier": last["data"].get("carrier", "DL"), "n": 7}
            self._put([self._event(key, event_id, ts, data)])
        for _ in range(100):
            self._page(read)
            if read.cursor is None:
                return
        self.diverge(self._label(params, "stuck"), f"read {params} did not end")

    # -- ordered reads (P3) ---------------------------------------------------------------

    def _index_page(self, read: OpenRead) -> None:
        p = read.params
        lo, hi, must, may = self._index_bounds(p)
        try:
            page = self.facade.ordered_index(self.index_key).query(
                prefix=p["prefix"],
                start=p["start"],
                end=p["end"],
                limit=p["limit"],
                cursor=read.cursor,
            )
        except InvalidInputError as exc:
            if not may:
                self.diverge("index:raised", f"index read {p} raised {exc!r}")
            read.cursor = None
            return
        except Exception as exc:
            self.diverge(f"index:bare-error:{type(exc).__name__}", f"index read {p} raised {exc!r}")
            read.cursor = None
            return
        if must:
            self.diverge("index:no-error", f"index read {p} should raise InvalidInputError")
            read.cursor = None
            return
        expected = self.model.expected_index(lo, hi, read.after, self.semantics.reput_replaces)
        got = [{"id": i["id"], "value": i["value"], "data": i["data"]} for i in page.items]
        want = [row for _, row in expected]
        ok = len(got) <= p["limit"] and got == want[: len(got)]
        if page.cursor is None and got != want:
            ok = False
        if not ok:
            self.diverge(
                "index:items",
                f"index read {p} after {read.after!r}: got {[(g['id'], g['value']) for g in got]}"
                f" (cursor {'set' if page.cursor else 'None'}), expected first of "
                f"{[(w['id'], w['value']) for w in want]}",
            )
            read.cursor = None
            return
        if got:
            read.after = expected[len(got) - 1][0]
            read.empty_pages = 0
        else:
            read.empty_pages += 1
            if read.empty_pages > MAX_EMPTY_PAGES:
                self.diverge("index:stuck", f"index read {p}: empty pages")
                read.cursor = None
                return
        read.cursor = page.cursor

    def _index_bounds(self, p: dict[str, Any]) -> tuple[str | None, str | None, bool, bool]:
        """The model's normalised [lo, hi) of an index read, and whether it must/may raise."""
        prefix, start, end = p["prefix"], p["start"], p["end"]
        strict = self.semantics.empty_ordered_bound == "error"
        if prefix is not None:
            if prefix == "":  # typed empty: every value (documented)
                return None, None, False, False
            lo = normalise(prefix)
            if not lo:  # a prefix that normalises to nothing names no value
                return None, None, strict, True
            code = ord(lo[-1]) + 1
            return lo, lo[:-1] + chr(code), False, False
        lo = None if start is None else normalise(start)
        hi = None if end is None else normalise(end)
        empty = lo == "" or hi == ""
        return (lo or None), hi, strict and empty, empty

    @precondition(lambda self: self.layout.is_default)  # P3, P4: dynashard's own table only
    @rule(
        kind=st.sampled_from(("all", "prefix", "range")),
        a=st.sampled_from(ORDERED_BOUNDS),
        b=st.sampled_from(ORDERED_BOUNDS),
        limit=limits,
        pages=st.integers(1, 10),
    )
    def index_read(self, kind: str, a: str, b: str, limit: int, pages: int) -> None:
        """Read the ordered index: all of it, a prefix, or a raw ``[start, end)`` range."""
        params: dict[str, Any] = {"prefix": None, "start": None, "end": None, "limit": limit}
        if kind == "prefix":
            params["prefix"] = a
        elif kind == "range":
            params["start"], params["end"] = a, b
        read = OpenRead("index", params, None, None)
        for _ in range(pages):
            self._index_page(read)
            if read.cursor is None:
                return
        self.reads.append(read)
        del self.reads[:-4]

    # -- public options (issue 38): each option of a read or write not drawn above ---------
    # The module docstring's "Public options and how the model covers them" names these.

    @rule(
        which=st.integers(0, 5),
        limit=st.sampled_from((0, 1000, 1001)),
        allow_partial=st.booleans(),
        descending=st.booleans(),
        cursor=st.sampled_from((None, "garbage", "other")),
    )
    def read_options(
        self, which: int, limit: int, allow_partial: bool, descending: bool, cursor: str | None
    ) -> None:
        """A read at the page limit's edges, with ``allow_partial``, or a foreign cursor.

        ``limit`` 0 or 1,001 is refused (``InvalidInputError``, field ``limit``); 1,000
        is served under P1/P2. ``allow_partial`` on a healthy table changes nothing and
        names no missing shard (checked in :meth:`_page`). A malformed cursor, or one
        of an open read of another key, is refused with ``CursorError``.
        """
        key = (*self.plain_keys, self.calc_key, self.family)[which]
        window: tuple[datetime | None, datetime | None] = (None, None)
        if key == self.family:
            window = (ANCHORS[0], ANCHORS[0] + timedelta(days=2))
        params = self._params(key, window, 1000, descending, "auto", True, None)
        params["allow_partial"] = allow_partial
        if cursor is not None:
            others = [r.cursor for r in self.reads if r.params.get("key") != key and r.cursor]
            token = others[-1] if cursor == "other" and others else "not-a-cursor"
            self._refused_option(params, {"cursor": token}, CursorError, "cursor")
            return
        if limit != 1000:
            self._refused_option(params, {"limit": limit}, InvalidInputError, "limit")
            return
        read = OpenRead("events", params, None, None)
        for _ in range(3):
            self._page(read)
            if read.cursor is None:
                return
        self.diverge(self._label(params, "stuck"), f"read {params} did not end in 3 pages")

    def _refused_option(
        self,
        params: dict[str, Any],
        change: dict[str, Any],
        error: type[Exception],
        field_name: str,
    ) -> None:
        """A read with one bad option is refused with ``error``, naming ``field_name``."""
        must, _ = self._read_error(params)
        if must or self._layout_refusal(params):
            return  # refused for another reason first: P6 checks those
        options = {k: v for k, v in params.items() if k != "key" and v is not None}
        options.update(change)
        try:
            page = self.facade.query_events(params["key"], **options)
        except error as exc:
            if getattr(exc, "field", field_name) != field_name:
                self.diverge(self._label(params, "option-field"), f"{change}: {exc!r}")
            self.report.observe(f"option:refused:{field_name}")
            return
        except Exception as exc:
            self.diverge(self._label(params, "option-error"), f"{change} raised {exc!r}")
            return
        self.diverge(self._label(params, "option-served"), f"{change}: {_ids(page.items)}")

    @precondition(lambda self: self.layout.is_default)  # count_events: dynashard's own only
    @rule(which=st.integers(0, 5), window=windows)
    def count_window(self, which: int, window: tuple[datetime | None, datetime | None]) -> None:
        """``count_events(start=, end=)`` counts the model's events of the key in the window.

        ``start >= end`` is refused (``InvalidInputError``), and so is a time-bucketed
        family key once its unit is stored (its first write or ``write_key``); before,
        the family key holds no event and may count 0.
        """
        key = (*self.plain_keys, self.calc_key, self.family)[which]
        start, end = window
        refuse = (key == self.family and self.family_unit is not None) or (
            start is not None and end is not None and as_utc(start) >= as_utc(end)
        )
        try:
            count = self.facade.count_events(key, start=start, end=end)
        except InvalidInputError as exc:
            if not refuse and key != self.family:
                self.diverge("count:raised", f"count_events({key}, {start}, {end}): {exc!r}")
            return
        except Exception as exc:
            self.diverge("count:raised", f"count_events({key}, {start}, {end}): {exc!r}")
            return
        if refuse:
            self.diverge("count:served", f"count_events({key}, {start}, {end}) = {count}")
            return
        want = sum(
            self.layout.in_window(row.time, start, end) for row in self.model.visible(key).values()
        )
        if count.distinct != want or count.stored < count.distinct:
            self.diverge("count:window", f"count_events({key}, {start}, {end}) = {count}: {want}")
        self.report.observe("option:count-window")

    @precondition(lambda self: self.layout.is_default)  # compact: dynashard's own only
    @rule(which=st.integers(0, 4))
    def compact_dry_run(self, which: int) -> None:
        """``compact(dry_run=True)`` deletes nothing and names at most the extra copies."""
        key = (*self.plain_keys, self.calc_key)[which]
        try:
            before = self.facade.count_events(key)
            result = self.facade.compact(key, dry_run=True)
            after = self.facade.count_events(key)
        except Exception as exc:
            self.diverge("compact:dry-run", f"compact({key}, dry_run=True) raised {exc!r}")
            return
        copies = before.stored - before.distinct
        if (
            result.deleted
            or (after.distinct, after.stored) != (before.distinct, before.stored)
            or len(result.would_delete) + len(result.skipped) != copies
            or before.distinct != len(self.model.visible(key))
        ):
            self.diverge(
                "compact:dry-run",
                f"{key}: before {before}, dry run {result}, after {after}, "
                f"model {len(self.model.visible(key))} events",
            )

    @precondition(lambda self: any(m.stored for m in self.model.meta.values()))
    @rule(which=st.integers(0, 100))
    def inspect_shard_info(self, which: int) -> None:
        """``shard_info``: N, the key's own cap, adoption and strategy as the model has them."""
        keys = sorted(k for k, m in self.model.meta.items() if m.stored)
        key = keys[which % len(keys)]
        meta = self.model.meta[key]
        try:
            info = self.facade.shard_info(key)
        except Exception as exc:
            self.diverge("shard-info:raised", f"shard_info({key}) raised {exc!r}")
            return
        calc = key == self.calc_key
        got = (info.number_of_shards, info.max_shards, info.adopted, info.strategy)
        want = (
            meta.n,
            meta.max_shards,
            key in self.model.adopted,
            Strategy.CALCULATED if calc else Strategy.RANDOM,
        )
        if got != want or (calc and info.shard_attribute != "carrier"):
            self.diverge("shard-info", f"shard_info({key}) = {info}: model {want}")

    @rule(when=times, plain=st.booleans())
    def family_write_key(self, when: datetime, plain: bool) -> None:
        """``write_key`` and ``read_unit``: a family event's bucket key in the stored unit.

        The first call pins the configured unit (as a first write does); a configured
        unit other than the pinned one is refused (``InvalidInputError``, field
        ``bucketed_keys``). A plain key's event is written under its own key.
        """
        key = self.k("A") if plain else self.family
        event = Event(key=key, id="e0", ts=ts_text(when), data={})
        configured = self.units["family"]
        refuse = not plain and self.family_unit not in (None, configured)
        try:
            written = self.facade.write_key(event)
        except InvalidInputError as exc:
            if not refuse or exc.field != "bucketed_keys":
                self.diverge("write-key:raised", f"write_key({event!r}) raised {exc!r}")
            return
        except Exception as exc:
            self.diverge("write-key:raised", f"write_key({event!r}) raised {exc!r}")
            return
        if plain:
            if written != key:
                self.diverge("write-key", f"write_key({event!r}) = {written!r}")
            return
        if refuse:
            self.diverge("write-key:served", f"write_key({event!r}) = {written} after {configured}")
            return
        self.family_unit = self.family_unit or configured
        want = f"{self.family}#{bucket_label(when, self.family_unit)}"
        unit = self.facade.read_unit(self.family, BucketFamily(self.family, configured))
        if (written, unit) != (want, self.family_unit):
            self.diverge("write-key", f"{event!r}: {written}, {unit}; model {want}")

    @rule(key=st.integers(0, 3))
    def adopt_with_survey(self, key: int) -> None:
        """``adopt(survey=<a survey just made>)``: checked instead of a second survey.

        Delegates to :meth:`adopt` (its expectations) with the facade's ``adopt`` given
        the survey the caller has just made.
        """
        facade = self.facade
        real = facade.adopt

        def adopt_surveyed(logical: str) -> Any:
            return real(logical, survey=facade.survey_bare_key(logical))

        facade.adopt = adopt_surveyed  # type: ignore[method-assign,assignment]
        try:
            self.adopt(key)
        finally:
            del facade.adopt

    @rule(
        which=st.integers(0, 4),
        strategy=st.sampled_from(("random", "calculated", "calculated:n")),
        as_text=st.booleans(),
        force=st.booleans(),
        initial=st.one_of(st.none(), st.integers(1, 4)),
    )
    def restate_strategy(
        self, which: int, strategy: str, as_text: bool, force: bool, initial: int | None
    ) -> None:
        """``set_strategy`` of a stored key: its own strategy again, or another one.

        The same strategy (and attribute), by name or enum, forced or not, is accepted
        and changes nothing (a stored key keeps its N whatever ``initial_shards`` says);
        another one without ``force`` is refused (``StrategyConflictError``). Another one
        with ``force`` is not drawn (module docstring).
        """
        key = (*self.plain_keys, self.calc_key)[which]
        meta = self.model.meta.get(key)
        if meta is None or not meta.stored:
            return  # a new key would take the strategy: the model keeps its own
        name, _, attribute = strategy.partition(":")
        attr = (attribute or "carrier") if name == "calculated" else None
        same = (name == "calculated") == (key == self.calc_key) and attr in (None, "carrier")
        if not same and force:
            return
        value: Strategy | str = name if as_text else Strategy(name)
        try:
            info = self.facade.set_strategy(
                key, value, attribute=attr, force=force, initial_shards=initial
            )
        except StrategyConflictError as exc:
            if same:
                self.diverge("strategy:refused", f"set_strategy({key}, {strategy}): {exc!r}")
            self.report.observe("option:strategy-conflict")
            return
        except Exception as exc:
            self.diverge("strategy:raised", f"set_strategy({key}, {strategy}) raised {exc!r}")
            return
        if not same:
            self.diverge("strategy:changed", f"set_strategy({key}, {strategy}) = {info}")
        elif info.number_of_shards != meta.n or info.strategy is not Strategy(name):
            self.diverge("strategy:kept", f"set_strategy({key}, {strategy}) = {info}, N {meta.n}")

    @rule(
        which=st.integers(0, 100),
        count=st.integers(1, MAX_MODEL_SHARDS),
        reason=st.sampled_from(("read", "write", "write-load")),
    )
    def grow_for_reason(self, which: int, count: int, reason: str) -> None:
        """``grow(reason=)``: as :meth:`resize`'s grow, and a change records the reason."""
        keys = self._resize_targets()
        key = keys[which % len(keys)]
        try:
            result = self.facade.grow(key, count, reason=reason)  # type: ignore[arg-type]
        except Exception as exc:
            self.diverge("resize:raised", f"grow({key}, {count}, {reason}) raised {exc!r}")
            return
        changed, current, why = self._expect_change("grow", key, count, False)
        if (result.changed, result.current) != (changed, current):
            self.diverge("resize:reason", f"grow({key}, {count}, {reason}) = {result}: {why}")
            return
        if why == "changed" and reason not in self.facade.shard_info(key).grown_for:
            self.diverge("resize:reason", f"grow({key}, {count}, {reason}) did not record it")
        self.report.observe(f"option:grow-reason:{why}")

    @precondition(lambda self: any(m.max_shards for m in self.model.meta.values()))
    @rule(which=st.integers(0, 100), over=st.integers(1, 3), honour=st.booleans())
    def set_count_forced(self, which: int, over: int, honour: bool) -> None:
        """``set_shard_count(force=True)`` past a key's own cap: set as any other count.

        Except ``L`` past 7 shards while ``L#7`` is adopted: refused (``InvalidInputError``),
        its shard 7 would be ``L#7``'s bare partition key.
        """
        keys = sorted(k for k, m in self.model.meta.items() if m.stored and m.max_shards)
        key = keys[which % len(keys)]
        cap = self.model.meta[key].max_shards
        assert cap is not None
        target = min(cap + over, MAX_MODEL_SHARDS)
        if target <= cap:
            return
        # L past 7 shards while L#7 is adopted: shard 7 would be L#7's bare key (alias)
        alias = key == self.k("L") and self.k("L#7") in self.model.adopted and target > 7
        try:
            result = self.facade.set_shard_count(key, target, honour_cooldown=honour, force=True)
        except InvalidInputError as exc:
            if not alias:
                self.diverge("resize:forced", f"set_shard_count({key}, {target}) {exc!r}")
            self.report.observe("option:forced:alias")
            return
        except Exception as exc:
            self.diverge("resize:forced", f"set_shard_count({key}, {target}, force) {exc!r}")
            return
        if alias:
            self.diverge("resize:forced", f"set_shard_count({key}, {target}) aliases L#7")
            return
        changed, current, why = self._expect_change("set", key, target, honour)
        if (result.changed, result.current) != (changed, current):
            self.diverge("resize:forced", f"set_shard_count({key}, {target}) {result}: {why}")
        self.report.observe(f"option:forced:{why}")

    # -- teardown audit ---------------------------------------------------------------------

    def _audit(self) -> None:
        """Items stored per key are never fewer than the model's events (more: observed)."""
        client, table = self.backend.client, self.backend.table_of(self.layout)
        schema = self.layout.schema
        for key in (*self.plain_keys, self.calc_key):
            distinct = set(self.model.events.get(key, {}))
            distinct |= {row.order for row in self.model.legacy.get(key, {}).values()}
            if not distinct:
                continue
            stored = 0
            meta = self.model.meta.get(key, KeyMeta())
            pks = [f"{key}#{s}" for s in range(meta.max_n)] + [key]
            for pk in pks:
                kwargs: dict[str, Any] = {
                    "TableName": table,
                    "KeyConditionExpression": "#p = :pk",
                    "ExpressionAttributeValues": {":pk": {"S": pk}},
                    "ProjectionExpression": "#k, #s",
                    "ExpressionAttributeNames": {
                        "#p": schema.partition_key,
                        "#s": schema.sort_key,
                        "#k": schema.key_attr,
                    },
                }
                while True:
                    response = client.query(**kwargs)
                    for item in response["Items"]:
                        owner = item.get(schema.key_attr)
                        # under the bare key every item is the key's, whatever its "key"
                        stored += owner == {"S": key} or pk == key
                    if "LastEvaluatedKey" not in response:
                        break
                    kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]
            if stored < len(distinct):
                self.diverge("audit:lost", f"{key}: {stored} items stored, {len(distinct)} events")
            elif stored > len(distinct):
                self.report.observe("audit:stored-twice", stored - len(distinct))
                if self.semantics.duplicates_stored_fail:
                    self.diverge("audit:stored-twice", f"{key}: {stored} items, {len(distinct)}")
            if self.layout.is_default:
                self._audit_compaction(key)
            else:
                self._refused_for_schema("audit:count", lambda k=key: self.facade.count_events(k))
                self._refused_for_schema("audit:compact", lambda k=key: self.facade.compact(k))

    def _audit_compaction(self, key: str) -> None:
        """count_events is exact; compact leaves one copy of each event and reads unchanged."""
        visible = len(self.model.visible(key))
        count = self.facade.count_events(key)
        if count.distinct != visible:
            self.diverge("audit:count", f"count_events({key}) = {count}, model {visible} events")
            return
        result = self.facade.compact(key)
        after = self.facade.count_events(key)
        if result.skipped or (after.distinct, after.stored) != (visible, visible):
            self.diverge(
                "audit:compact",
                f"compact({key}) deleted {len(result.deleted)}, skipped {result.skipped}; "
                f"then {after}, model {visible} events",
            )
            return
        self.report.observe("audit:compacted", len(result.deleted))
        read = OpenRead(
            "events", self._params(key, (None, None), 100, False, "base", True, None), None, None
        )
        for _ in range(visible // 100 + 2):
            self._page(read)
            if read.cursor is None:
                return
        self.diverge("audit:read-after-compact", f"{key}: the read did not end")

    # --- issue 38, bugs 6, 7, 8: exact numbers, epoch times at the edges, redeliveries -------
    def _stored_already(self, event: Event) -> bool:
        """The model holds this event acknowledged (the same key, id and time)."""
        order = self.layout.order(event.ts, event.id)
        return order in self.model.events.get(event.key, {}) and event.key != self.family

    @rule(
        which=st.integers(0, 1),
        event_id=st.sampled_from(IDS),
        when=times,
        carrier=st.sampled_from(CARRIERS),
        numbers=st.lists(st.one_of(exact_numbers, unkeepable_numbers), min_size=1, max_size=3),
    )
    def put_numbers(
        self, which: int, event_id: str, when: datetime, carrier: str, numbers: list[Decimal]
    ) -> None:
        """An event whose payload holds numbers of up to 38 significant digits, or beyond.

        A number DynamoDB cannot keep exactly (:func:`keepable`) is refused when the
        event is built (``ValueError`` naming ``data.v{i}``); the others are written and
        read back equal, integral ones as int and the others as ``Decimal``, never a
        float (bug 6).
        """
        key = (self.k("A"), self.calc_key)[which]
        data: dict[str, Any] = {"carrier": carrier}
        data.update({f"v{i}": number for i, number in enumerate(numbers)})
        bad = [f"data.v{i}" for i, number in enumerate(numbers) if not keepable(number)]
        try:
            Event(key=key, id=event_id, ts=ts_text(when), data=data)
        except ValueError as exc:
            if not bad or bad[0] not in str(exc):
                self.diverge("numbers:refused", f"{data} refused: {exc}")
            return
        if bad:
            self.diverge("numbers:accepted", f"{data}: {bad} cannot be kept exactly")
            return
        event = self._event(key, event_id, when, data)
        self._put([event])
        if event is None or not self._stored_already(event):
            return
        order = self.layout.order(event.ts, event.id)
        stored = self.model.events[key][order].item["data"]
        try:
            items = [
                i
                for i in self._read_all(key)
                if self.layout.order(parse_ts_text(i["ts"]), i["id"]) == order
            ]
        except Exception as exc:
            self.diverge("numbers:read-raised", f"read of {key} raised {exc!r}")
            return
        for item in items[:1]:
            for name, want in stored.items():
                got = item["data"].get(name)
                kind = str if isinstance(want, str) else int if want == int(want) else Decimal
                if got != want or type(got) is not kind:
                    self.diverge(
                        "numbers:read", f"{key} {event.id} {name}: {got!r}, wrote {want!r}"
                    )

    def _read_all(self, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = None
        for _ in range(100):
            page = self.facade.query_events(key, cursor=cursor, limit=100)
            items.extend(page.items)
            cursor = page.cursor
            if cursor is None:
                break
        return items

    @rule(
        which=st.integers(0, 1),
        batch=st.lists(
            st.tuples(st.sampled_from(IDS), st.sampled_from(EDGE_MILLIS)), min_size=1, max_size=3
        ),
        carrier=st.sampled_from(CARRIERS),
    )
    def put_edge_times(self, which: int, batch: list[tuple[str, int]], carrier: str) -> None:
        """Events given epoch milliseconds at the edges of the years 1..9999, 1 ms apart.

        The event's time is that millisecond exactly (bug 7: a float of seconds put it
        microseconds off, in another millisecond under the millisecond codecs); P1 then
        reads each at its own millisecond.
        """
        key = (self.k("A"), self.calc_key)[which]
        events: list[Event | None] = []
        for event_id, millis in batch:
            parsed = Event(key=key, id=event_id, ts=millis, data={"carrier": carrier}).ts
            exact = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)
            if parsed != exact:
                self.diverge("time:epoch-ms", f"ts={millis} parsed as {ts_text(parsed)}")
            events.append(self._event(key, event_id, exact, {"carrier": carrier}))
        self._put(events)

    @precondition(lambda self: any(self.model.events.get(k) for k in self._resize_targets()[:5]))
    @rule(data=st.data(), count=st.integers(1, MAX_MODEL_SHARDS))
    def redeliver_after_resize(self, data: st.DataObject, count: int) -> None:
        """Set a key's N (a shrink, most often), then redeliver its acknowledged events.

        Each is acknowledged, wherever it is stored (bug 8: under ``epoch_ms_number``
        one whose shards of the new count all held other events of its millisecond was
        refused for good); :meth:`_put` fails a refused redelivery of a stored event.
        """
        targets = self._resize_targets()
        which = data.draw(
            st.sampled_from([i for i in range(5) if self.model.events.get(targets[i])])
        )
        self.resize(which, "set", count)
        rows = sorted(self.model.events[targets[which]].values(), key=lambda r: r.order)
        again = data.draw(st.lists(st.sampled_from(rows), min_size=1, max_size=4, unique_by=id))
        self._put(
            [
                Event(key=r.item["key"], id=r.item["id"], ts=r.item["ts"], data=r.item["data"])
                for r in again
            ]
        )

    # -- issue 39: epoch seconds refused; an idempotency key reused with another by ----------
    @rule(
        which=st.integers(0, 1),
        event_id=st.sampled_from(IDS),
        when=times.filter(lambda t: t.year < 5000),  # seconds of year 5138+ are >= 10**11
        form=st.sampled_from(("int", "digits", "decimal", "small", "negative")),
    )
    def put_epoch_seconds(self, which: int, event_id: str, when: datetime, form: str) -> None:
        """An event time below 10**11 in magnitude (epoch seconds) is refused, naming ``ts``.

        ``Event`` refuses it when built (``ValueError`` naming ``ts``; the library's
        :data:`~dynashard.core.keys.MIN_EPOCH_MS_MAGNITUDE`), so nothing is written and
        P1 finds no event in 1970; before issue 39 it was stored at ``seconds`` ms.
        """
        seconds = (micros(when) - micros(UNIX_EPOCH)) // 1_000_000
        value: object = {
            "int": seconds,
            "digits": str(seconds),
            "decimal": Decimal(seconds) + Decimal("0.5"),
            "small": seconds % 1000,
            "negative": -seconds,
        }[form]
        key = (self.k("A"), self.calc_key)[which]
        self.report.observe("epoch seconds sent")
        try:
            Event(key=key, id=event_id, ts=value, data={})
        except ValueError as exc:
            if "ts" not in str(exc) or "epoch seconds" not in str(exc):
                self.diverge("time:epoch-seconds", f"ts={value!r} refused otherwise: {exc}")
            return
        self.diverge("time:epoch-seconds", f"ts={value!r} (epoch seconds) was accepted")

    @precondition(
        lambda self: (
            self.layout.is_default
            and any(name in self.counter_names for name, _ in self.model.applied)
        )
    )
    @rule(data=st.data(), delta=st.integers(-3, 3).filter(bool))
    def reuse_idempotency_key(self, data: st.DataObject, delta: int) -> None:
        """An applied idempotency key sent again with another ``by`` is refused (P4).

        ``IdempotentParameterMismatchError`` naming ``idempotency_key``, nothing applied
        (``read_counter`` checks the sum); before issue 39 it answered False, "already
        applied", as if the other ``by`` had been.
        """
        applied = sorted(k for k in self.model.applied if k[0] in self.counter_names)
        name, idem = data.draw(st.sampled_from(applied))
        by = self.model.applied[(name, idem)] + delta
        if by == 0:
            by = delta * 2
        self._touch(f"COUNTER#{name}")
        self.report.observe("idempotency key reused")
        try:
            answer = self.facade.increment_counter(name, by, idem)
        except IdempotentParameterMismatchError as exc:
            if exc.field != "idempotency_key":
                self.diverge("counter:reused-key", f"{exc!r} names {exc.field}")
            return
        except Exception as exc:
            self.diverge("counter:raised", f"increment({name}, {by}, {idem}) raised {exc!r}")
            return
        self.diverge("counter:reused-key", f"increment({name}, {by}, {idem}) returned {answer}")
        if answer:
            self.model.counters[name] = self.model.counters.get(name, 0) + by

    @invariant()
    def count_step(self) -> None:
        self.report.steps += 1


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [f"{i['ts']}#{i['id']}" for i in items]


def machine_for(
    backend: Backend,
    semantics: Semantics | None = None,
    report: Report | None = None,
    layouts: tuple[str, ...] | None = None,
) -> type[DynashardModel]:
    """Return the machine class bound to a backend (moto or DynamoDB Local).

    Parameters
    ----------
    backend : Backend
        Shared client and tables.
    semantics : Semantics, optional
        What the pending fixes decide; the defaults are the documented behaviour.
    report : Report, optional
        Collects sequences, steps, divergences and observations (``layout:{name}``:
        the sequences each layout drew).
    layouts : tuple of str, optional
        The layouts sequences draw from (default: every layout the backend has a table
        for), weighted by :data:`LAYOUT_WEIGHTS`.

    Returns
    -------
    type
        A :class:`DynashardModel` subclass; its ``TestCase`` runs under pytest, or pass it
        to :func:`hypothesis.stateful.run_state_machine_as_test`.
    """
    available = backend.layouts()
    chosen = available if layouts is None else tuple(layout_named(n) for n in layouts)
    missing = [x.name for x in chosen if x not in available]
    if missing:
        raise ValueError(f"the backend has no table for the layouts {missing}")
    draws = tuple(x for x in chosen for _ in range(LAYOUT_WEIGHTS.get(x.name, 1)))
    attrs: dict[str, Any] = {
        "backend": backend,
        "semantics": semantics or Semantics(),
        "report": report or Report(),
        "layout_draws": draws,
    }
    return type("BoundDynashardModel", (DynashardModel,), attrs)
