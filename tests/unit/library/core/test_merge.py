from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynashard.core.merge import Cursor, encode_token, merge_page, query_fingerprint
from dynashard.errors import CursorError

sort_keys = st.text(alphabet="abcdef0123", min_size=1, max_size=4)


def _page_through(shards: list[list[str]], limit: int, descending: bool) -> list[str]:
    """Page through the merge the way the reader does: resume every live shard after the
    cursor position, skip the shards the cursor lists as done."""
    ordered = [sorted(s, reverse=descending) for s in shards]
    out: list[str] = []
    position: str | None = None
    done: set[int] = set()
    for _ in range(10_000):
        live = [i for i in range(len(ordered)) if i not in done]
        streams = []
        for i in live:
            rest = [
                sk
                for sk in ordered[i]
                if position is None or (sk < position if descending else sk > position)
            ]
            streams.append(iter([(sk, sk) for sk in rest]))
        page = merge_page(streams, limit, descending)
        assert len(page.items) <= limit
        out.extend(page.items)
        done.update(live[i] for i in page.exhausted)
        if page.last_sort_key is None or len(done) == len(ordered):
            return out
        position = page.last_sort_key
    raise AssertionError("paging did not end")


@settings(max_examples=300)
@given(
    st.lists(st.lists(sort_keys, max_size=30), min_size=1, max_size=8),
    st.integers(min_value=1, max_value=12),
    st.booleans(),
)
def test_paging_yields_the_sorted_union_once_each(
    shards: list[list[str]], limit: int, descending: bool
) -> None:
    # Duplicates within and across shards stand for the same event stored twice.
    result = _page_through(shards, limit, descending)
    expected = sorted({sk for shard in shards for sk in shard}, reverse=descending)
    assert result == expected


def test_merge_draws_lazily() -> None:
    drawn: list[str] = []

    def stream(values: list[str]):  # type: ignore[no-untyped-def]
        for v in values:
            drawn.append(v)
            yield v, v

    page = merge_page([stream(["a", "c", "e"]), stream(["b", "d", "f"])], 2)
    assert page.items == ["a", "b"]
    assert drawn == ["a", "b", "c", "d"]  # one ahead per stream, no more


def test_collapsed_duplicates_are_counted() -> None:
    page = merge_page([iter([("a", 1), ("b", 2)]), iter([("a", 3), ("c", 4)])], 10)
    assert [i for i in page.items] == [1, 2, 4]
    assert page.duplicates == 1


def test_cursor_round_trip() -> None:
    fp = query_fingerprint("K", "0", ":", False)
    cursor = Cursor(fp, "2013-01-01T00:00:00.000000Z#e1", frozenset({0, 3}))
    assert Cursor.decode(cursor.encode(), fp) == cursor


def test_cursor_of_another_query_is_refused() -> None:
    text = Cursor(query_fingerprint("K", "0", ":", False), "x").encode()
    with pytest.raises(CursorError, match="another query"):
        Cursor.decode(text, query_fingerprint("K", "0", ":", True))


@pytest.mark.parametrize("junk", ["", "not-a-cursor", "eyJ2IjoxfQ", "%%%"])
def test_garbage_cursor_is_a_clear_error(junk: str) -> None:
    with pytest.raises(CursorError, match=r"^cursor: "):
        Cursor.decode(junk, "fp")


# --- the fingerprint and the cursor's errors (mutation testing, issue 38) ----------------


def test_fingerprint_takes_a_value_json_lacks_by_its_text() -> None:
    # Given query parts JSON has no type for: a datetime and a Decimal
    ts = datetime(2013, 1, 1, 10, 15, tzinfo=UTC)
    # When they are fingerprinted
    fp = query_fingerprint("K", ts, Decimal("1.50"))
    # Then each counts as its text (no TypeError), and another value gives another print
    assert fp == query_fingerprint("K", str(ts), "1.50")
    assert fp != query_fingerprint("K", ts, Decimal("1.5"))


def test_a_cursor_of_another_query_is_refused_saying_what_defines_one() -> None:
    # Given a cursor of an ascending read
    text = Cursor(query_fingerprint("K", "0", ":", False), "x").encode()
    # When the descending read of the same window is given it
    with pytest.raises(CursorError) as info:
        Cursor.decode(text, query_fingerprint("K", "0", ":", True))
    # Then the error says which parts of a query must match
    assert str(info.value) == ("cursor: belongs to another query (key, from, to or order differ)")


def test_a_garbage_cursor_is_refused_saying_who_makes_cursors() -> None:
    # Given text that is no cursor
    # When it is decoded
    with pytest.raises(CursorError) as info:
        Cursor.decode("not-a-cursor", "fp")
    # Then the error says cursors come from this API (a caller's own token is no cursor)
    assert str(info.value) == "cursor: is not a cursor returned by this API"


@pytest.mark.parametrize(
    ("position", "done"),
    [(12, [0, 3]), ("2013-01-01T00:00:00.000000Z#e1", ["0"]), (None, ["x"])],
    ids=["position-not-text", "done-not-shards", "neither"],
)
def test_a_cursor_with_a_field_of_the_wrong_type_is_refused(position: object, done: object) -> None:
    # Given a well-formed token of this query whose position is not text, or whose done
    # shards are not integers (either alone is wrong)
    fp = query_fingerprint("K", "0", ":", False)
    text = encode_token({"v": 1, "q": fp, "p": position, "d": done})
    # When it is decoded
    with pytest.raises(CursorError) as info:
        Cursor.decode(text, fp)
    # Then it is refused as no cursor of this API, not taken as a position
    assert str(info.value) == "cursor: is not a cursor returned by this API"
