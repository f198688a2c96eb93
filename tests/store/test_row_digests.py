"""The batched row digests (sealing.row_digests) are, to the last byte, those ragqual 58a616b
computed (tests/store/sealing_reference.py, frozen) and those of one row at a time: over every
value type a driver returns and every shape a batch's column can take (NULL in every row, in some
rows before or after the first column free of NULLs, one value in every row, a few values
repeated, every value distinct), with NaN, -0.0, big ints, unicode, escapes, `%` in values and in
column names, bytes, booleans and datetimes. A seal's digest format must never change: old
histories must keep verifying."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from ragqual.store import sealing
from tests.store import sealing_reference as reference

FLOATS = [0.0, -0.0, 1.0, 0.5, 0.1, 1e-300, 1e300, 123456789.125, -2.5, 1e-07, 3.0]
ODD_FLOATS = [float("nan"), float("inf"), -float("inf")]
INTS = [0, 1, -1, 7, 4618, 2**31, 2**63, 2**70, -(10**30)]
TEXTS = ["", "plain", "None", "null", "%s", "%d %%", 'q"%s', "back\\slash", "tab\t nl\n ctl\x01", "é ü 漢字 🙂 \u2028",
         "1.5", "2026-01-01 00:00:01.000000", "x" * 300]
STAMPS = [datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC), datetime(2026, 1, 2, 3, 4, 5),
          datetime(2026, 1, 2, 5, 4, 5, 6, tzinfo=timezone(timedelta(hours=2))),
          datetime(2025, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5, minutes=-30)))]
BLOBS = [b"", b"\x00\xff", b"abc"]
POOLS: dict[str, list[Any]] = {
    "float": FLOATS, "odd float": FLOATS + ODD_FLOATS, "int": INTS, "bool": [True, False], "text": TEXTS,
    "stamp": STAMPS, "bytes": BLOBS, "any": FLOATS + ODD_FLOATS + INTS + [True, False] + TEXTS + STAMPS + BLOBS,
}
NAMES = ["a", "b%", "c%s", 'd"q', "é", "value", "weight", "created_at", "run_id", "z", "zz%%", "m\\n"]


def _column(rng: random.Random, rows: int) -> list[Any]:
    pool = POOLS[rng.choice(list(POOLS))]
    shape = rng.choice(["constant", "few", "distinct", "null", "some null", "mostly null"])
    if shape == "null":
        return [None] * rows
    if shape == "constant":
        return [rng.choice(pool)] * rows
    values = rng.sample(pool, k=min(len(pool), rng.choice([1, 2, 3]))) if shape == "few" else pool
    column = [rng.choice(values) for _ in range(rows)]
    if shape in ("some null", "mostly null"):
        share = 0.2 if shape == "some null" else 0.8
        column = [None if rng.random() < share else v for v in column]
    return column


def _table(rng: random.Random) -> tuple[list[str], list[tuple[Any, ...]]]:
    names = rng.sample(NAMES, k=rng.randint(1, 7))
    names.insert(rng.randint(0, len(names)), "id")
    rows = rng.choice([1, 2, 5, 12, 40, 120])
    columns = [list(range(1000, 1000 + rows)) if name == "id" else _column(rng, rows) for name in names]
    return names, list(zip(*columns))


def _one_at_a_time(names: list[str], rows: list[tuple[Any, ...]]) -> list[tuple[int, str]]:
    return [(row[names.index("id")], reference.row_digest(dict(zip(names, row)))) for row in rows]


@pytest.mark.parametrize("seed", range(8))
def test_batched_digests_are_the_frozen_ones_and_one_row_at_a_times(seed):
    rng = random.Random(seed)
    for _ in range(150):
        names, rows = _table(rng)
        expected = reference.row_digests(names, rows)
        assert sealing.row_digests(names, rows) == expected, (names, rows)
        assert expected == _one_at_a_time(names, rows)


@pytest.mark.parametrize("pool", sorted(POOLS))
def test_each_value_type_in_each_column_shape(pool):
    """Every pool in every position relative to the anchor (the first column, in key order, no row
    holds NULL in): before it NULL in some rows, the anchor itself, after it NULL in some rows."""
    rng = random.Random(pool)
    values = POOLS[pool]
    rows = 48
    some_null = [None if n % 3 == 0 else values[n % len(values)] for n in range(rows)]
    few = [values[n % 2 % len(values)] for n in range(rows)]
    every = [values[n % len(values)] for n in range(rows)]
    for columns in ({"a": some_null, "b": every, "c": some_null},
                    {"a%": some_null, "b%s": few, "c%": [None] * rows, "d": some_null},
                    {"a": [values[0]] * rows, "b": some_null},
                    {"a": some_null, "b": [None] * rows, "c": [rng.choice(values)] * rows},
                    {"a": some_null, "b": some_null}):  # no anchor at all
        names = ["id", *columns]
        table = list(zip(range(1, rows + 1), *columns.values()))
        assert sealing.row_digests(names, table) == reference.row_digests(names, table) == _one_at_a_time(names, table)


def test_zeros_of_both_signs_among_repeated_floats():
    """0.0 == -0.0, so a column's distinct values cannot stand for its rows when either sign occurs."""
    names = ["id", "value", "other"]
    rows = [(n, [0.0, -0.0, 1.0][n % 3] if n % 5 else None, -0.0 if n == 40 else 0.0) for n in range(1, 61)]
    assert sealing.row_digests(names, rows) == reference.row_digests(names, rows) == _one_at_a_time(names, rows)


@pytest.mark.parametrize(("column", "kept"), [
    ([1.5, None, 0.0], True), ([0.0, 0.0, 2.0], True), ([None, None], True), ([float("inf"), 1e-300], True),
    ([0.0, -0.0], False), ([None, -0.0], False), ([1.0, float("nan")], False), ([None, float("nan"), None], False),
])
def test_a_real_column_is_taken_as_bound_unless_it_holds_nan_or_negative_zero(column, kept):
    """SQLite stores NaN as NULL and -0.0 as 0.0 in a REAL column: such a batch is read back for its seal."""
    assert sealing.returned_as_bound("real", column) is kept


@pytest.mark.parametrize("ids", [[5], [1, 2, 3], [3, 4, 5, 9], [9, 3, 4, 5], [2, 2, 3], [4, 3, 2, 1], [1, 3, 2], [7, 8, 8, 9]])
def test_a_seals_id_ranges_are_those_of_ranges(ids):
    """The seal's row list writes one [first, last] at once for an ascending run of ids, and
    exactly what `ranges` writes for any other list."""
    draft = sealing.SealDraft({"t": [(i, "0" * 16) for i in ids]})
    assert draft.text() == sealing.canonical_json({"t": {"ids": sealing.ranges(ids), "digests": "0" * 16 * len(ids)}})


def test_equal_datetimes_that_are_not_one_instant():
    """Two datetimes of one zone that differ only in `fold` compare equal but are an hour apart in
    UTC, so such a column is not written once for every row; equal datetimes of different zones
    are one instant and are (a batch's `created_at` as PostgreSQL returns it)."""
    from zoneinfo import ZoneInfo

    york = ZoneInfo("America/New_York")
    first, second = datetime(2025, 11, 2, 1, 30, tzinfo=york), datetime(2025, 11, 2, 1, 30, tzinfo=york, fold=1)
    assert first == second and first.astimezone(UTC) != second.astimezone(UTC)
    same = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    for column in ([first, second, first, first], [second] * 4, [same, same.astimezone(york), same.astimezone(UTC)],
                   [datetime(2026, 1, 2), datetime(2026, 1, 2, fold=1)]):
        names = ["id", "at", "n"]
        rows = [(i, at, i) for i, at in enumerate(column, start=1)]
        assert sealing.row_digests(names, rows) == reference.row_digests(names, rows) == _one_at_a_time(names, rows)
