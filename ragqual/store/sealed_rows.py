"""Which rows a seal covers: the one rule every reader and view of the history applies.

The append-only triggers refuse UPDATE and DELETE but must allow INSERT, so anyone who can write
the file can append a row, say a perfect `trial_scores` row for every trial of a run. Readers take
the newest score of a trial, so such a row would become the report. Therefore a row counts only
when a seal covers it:

* `seal_spans` (migration 0008) lists, for each seal, the id ranges it names per table, one row
  per [first_id, last_id]; the run store writes them in the transaction that appends the seal.
  A `genesis` or `watermark` seal (rows written before sealing covered their table) spans from
  the table's first id no earlier span reaches up to its mark.
* `covered(table, id)` is the SQL test every reader and view uses. Spans of one table never
  overlap, so the only span that can hold id x is the one with the highest first_id <= x: one
  index seek per row.
* `unsealed_counts` counts a run's rows that no span covers, so that report, history, compare and
  export can say which rows they left out; `ragqual verify RUN` names them one by one, and
  `ragqual verify` checks `seal_spans` against the seals themselves (a forged span is found).

Like the guard SQL, `covered` is part of the migration that builds the views from it: change it
only by adding a new function and a migration, never by editing it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, TextClause, bindparam, text

SPANS_TABLE = "seal_spans"
WATERMARK_KINDS = ("genesis", "watermark")

Span = tuple[str, int, int]  # (table, first id, last id)


def covered(table: str, row_id: str) -> str:
    """SQL: true when the row of `table` whose id is the expression `row_id` lies in a seal's span."""
    return (f"COALESCE((SELECT z.last_id FROM seal_spans z WHERE z.table_name = '{table}' "
            f"AND z.first_id <= {row_id} ORDER BY z.first_id DESC LIMIT 1), 0) >= {row_id}")


def is_covered(table: str) -> TextClause:
    """`covered` for a query over the table itself (an ORM select of the model, no alias)."""
    return text(covered(table, f"{table}.id"))


def seal_spans(kind: str, rows_text: str, reach: Mapping[str, int]) -> list[Span]:
    """The spans one seal covers. `reach` is each table's highest id earlier spans cover: a
    watermark covers only what lies between it and the mark."""
    body = json.loads(rows_text)
    if kind in WATERMARK_KINDS:
        marks = body.get("watermark", {})
        return [(t, reach.get(t, 0) + 1, int(m)) for t, m in sorted(marks.items()) if int(m) > reach.get(t, 0)]
    return [(t, int(first), int(last)) for t, part in sorted(body.items()) for first, last in part["ids"]]


def chain_spans(seals: Iterable[tuple[int, str, str]]) -> list[tuple[int, str, int, int]]:
    """(seal id, table, first, last) of every span of (id, kind, rows) seals in chain order;
    a seal whose row list cannot be read has none (`ragqual verify` reports it)."""
    reach: dict[str, int] = {}
    out = []
    for seal_id, kind, rows_text in seals:
        try:
            spans = seal_spans(kind, rows_text, reach)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        for table, first, last in spans:
            reach[table] = max(reach.get(table, 0), last)
            out.append((seal_id, table, first, last))
    return out


def insert_spans(cursor: Any, dialect: str, seal_id: int, spans: Sequence[Span]) -> None:
    """Append a seal's spans (DB-API cursor, inside the transaction that appends the seal)."""
    if not spans:
        return
    p = "?" if dialect == "sqlite" else "%s"
    cursor.executemany(f"INSERT INTO seal_spans (seal_id, table_name, first_id, last_id) VALUES ({p}, {p}, {p}, {p})",
                       [(seal_id, t, first, last) for t, first, last in spans])


def reach_of(cursor: Any, tables: Sequence[str]) -> dict[str, int]:
    """Each table's highest id a span covers so far."""
    return {t: _scalar(cursor, f"SELECT COALESCE(MAX(last_id), 0) FROM seal_spans WHERE table_name = '{t}'")
            for t in tables}


def _scalar(cursor: Any, sql: str) -> int:
    cursor.execute(sql)
    return int(cursor.fetchone()[0])


# -- what readers left out -------------------------------------------------------------------------

# Per run-linked table, its rows of the runs asked about: `x` is the row, `:runs` the run ids.
RUN_ROWS: dict[str, str] = {
    "runs": "SELECT x.id AS run_id, x.id AS row_id FROM runs x WHERE x.id IN :runs",
    "run_events": "SELECT x.run_id, x.id AS row_id FROM run_events x WHERE x.run_id IN :runs",
    "trials": "SELECT x.run_id, x.id AS row_id FROM trials x WHERE x.run_id IN :runs",
    "trial_scores": "SELECT t.run_id, x.id AS row_id FROM trial_scores x JOIN trials t ON t.id = x.trial_id "
                    "WHERE t.run_id IN :runs",
    "assertion_results": "SELECT t.run_id, x.id AS row_id FROM assertion_results x JOIN trials t ON t.id = x.trial_id "
                         "WHERE t.run_id IN :runs",
    "metric_values": "SELECT x.run_id, x.id AS row_id FROM metric_values x WHERE x.run_id IN :runs",
    "retrieval_results": "SELECT x.run_id, x.id AS row_id FROM retrieval_results x WHERE x.run_id IN :runs",
    "retrieval_rankings": "SELECT x.run_id, x.id AS row_id FROM retrieval_rankings x WHERE x.run_id IN :runs",
    "labels": "SELECT x.run_id, x.id AS row_id FROM labels x WHERE x.run_id IN :runs",
    "judgements": "SELECT x.run_id, x.id AS row_id FROM judgements x WHERE x.run_id IN :runs",
    "judge_audits": "SELECT x.run_id, x.id AS row_id FROM judge_audits x WHERE x.run_id IN :runs",
    "trial_costs": "SELECT t.run_id, x.id AS row_id FROM trial_costs x JOIN trials t ON t.id = x.trial_id "
                   "WHERE t.run_id IN :runs",
    "run_summaries": "SELECT x.run_id, x.id AS row_id FROM run_summaries x WHERE x.run_id IN :runs",
}


# The same rows, found from their ids instead: `{ids}` tests x.id against a few ranges, and the
# unary plus keeps the planner from reading the runs' rows through the run_id index.
RANGE_ROWS: dict[str, str] = {
    table: (sql.replace(" WHERE t.run_id IN :runs", " WHERE {ids} AND +t.run_id IN :runs")
            .replace(" WHERE x.run_id IN :runs", " WHERE {ids} AND +x.run_id IN :runs")
            .replace(" WHERE x.id IN :runs", " WHERE {ids} AND +x.id IN :runs"))
    for table, sql in RUN_ROWS.items()
}


def unsealed_sql() -> str:
    """The row-by-row count (one `covered` test per row of the runs): the rule itself, used when a
    table's uncovered ids fall in too many separate ranges for `unsealed_counts` to list them."""
    parts = [_unsealed_part(table, f"NOT ({covered(table, 'q.row_id')})") for table in RUN_ROWS]
    return "\nUNION ALL\n".join(parts)


def _unsealed_part(table: str, condition: str) -> str:
    return f"SELECT '{table}' AS tbl, q.run_id, COUNT(*) AS n FROM ({RUN_ROWS[table]}) q WHERE {condition} GROUP BY q.run_id"


# Per table, the spans that are followed by ids no span covers. Of spans sharing a first id the
# longest is the one `covered` finds (the lookup index holds (table, first_id, last_id)); a span
# covers its ids up to the next span's first id, so what lies past its end up to that next first
# id (or everything past the last span) is covered by none.
GAPS_SQL = """
WITH s AS (SELECT first_id, MAX(last_id) AS last_id FROM seal_spans WHERE table_name = :t GROUP BY first_id),
e AS (SELECT first_id, last_id, LEAD(first_id) OVER (ORDER BY first_id) AS next_first FROM s)
SELECT first_id, last_id, next_first FROM e WHERE next_first IS NULL OR next_first > last_id + 1
UNION ALL
SELECT MIN(first_id), NULL, NULL FROM s
"""

MAX_GAPS = 64
"""More separate uncovered ranges than this in one table (rows inserted outside ragqual between
many seals) and that table is counted row by row instead."""

Gap = tuple[int, int | None]  # first and last uncovered id (None: no end)


def uncovered_ranges(rows: Sequence[tuple[Any, Any, Any]]) -> list[Gap]:
    """The id ranges `covered` says no in, from GAPS_SQL's rows: (first, last, next first) of each
    span a gap follows, and a last row (lowest first id, NULL, NULL). Ids below 1 never occur."""
    *spans, (lowest, _, _) = rows
    if lowest is None:  # no span at all
        return [(1, None)]
    gaps: list[Gap] = [(1, int(lowest) - 1)] if int(lowest) > 1 else []
    for first, last, next_first in spans:
        end = max(int(first) - 1, int(last))  # a span whose last id lies below its first covers nothing
        gaps.append((end + 1, None if next_first is None else int(next_first) - 1))
    return gaps


def _in_ranges(gaps: Sequence[Gap], column: str) -> str:
    return " OR ".join(f"({column} >= {lo})" if hi is None else f"({column} BETWEEN {lo} AND {hi})"
                       for lo, hi in gaps)


def read_snapshot(conn: Connection) -> None:
    """Before the first statement: PostgreSQL reads every later statement of the transaction from
    one snapshot (SQLite's read transaction already does), so spans and rows read apart agree."""
    if conn.dialect.name == "postgresql" and not conn.in_transaction():
        conn.execution_options(isolation_level="REPEATABLE READ")


def uncovered_of(conn: Connection, table: str) -> list[Gap]:
    """The id ranges of `table` that no span covers, as `covered` decides."""
    return uncovered_ranges(conn.execute(text(GAPS_SQL), {"t": table}).all())


def unsealed_counts(engine: Engine, run_ids: Sequence[int]) -> dict[int, dict[str, int]]:
    """run id -> {table: rows of the run no seal covers} (runs with none left out).

    The same count as testing `covered` on every row of the runs (`unsealed_sql`), read from the
    other side: each table's uncovered id ranges come from `seal_spans` (normally one, past the
    newest seal), and only rows inside them are looked at, so the cost follows the spans and the
    uncovered rows, not the size of the runs."""
    if not run_ids:
        return {}
    runs = sorted({int(r) for r in run_ids})
    counted, listed = [], []
    with engine.connect() as conn:
        read_snapshot(conn)
        for table in RUN_ROWS:
            gaps = uncovered_of(conn, table)
            if len(gaps) > MAX_GAPS:
                counted.append(_unsealed_part(table, f"NOT ({covered(table, 'q.row_id')})"))
            else:  # no GROUP BY: it would make SQLite walk the run_id index after all
                ids = "(" + _in_ranges(gaps, "x.id") + ")"
                listed.append(f"SELECT '{table}' AS tbl, q.run_id, 1 AS n FROM ({RANGE_ROWS[table].format(ids=ids)}) q")
        rows: list[Any] = []
        for parts in (counted, listed):
            if parts:
                query = text("\nUNION ALL\n".join(parts)).bindparams(bindparam("runs", expanding=True))
                rows += conn.execute(query, {"runs": runs}).all()
    out: dict[int, dict[str, int]] = {}
    for table, run_id, n in rows:
        held = out.setdefault(int(run_id), {})
        held[str(table)] = held.get(str(table), 0) + int(n)
    return {run: dict(sorted(counts.items())) for run, counts in sorted(out.items())}


def unsealed_warning(run_id: int, counts: Mapping[str, int]) -> str:
    """The one line a reader prints when it left rows of a run out."""
    where = ", ".join(f"{n} in {t}" for t, n in counts.items())
    return (f"run {run_id} has {sum(counts.values())} row(s) no seal covers ({where}); they were left out: "
            f"run `ragqual verify {run_id}`")
