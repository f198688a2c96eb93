"""Per-run summary rows (migration 0013): what `history` shows of a run, kept when it finishes.

`history` runs two aggregates over every run it lists (ragqual.store.queries): the mean score,
pass share and trials per mode (`score_mean_rows`) and the mean and count per metric, scorer
version and group (`metric_mean_rows`). On a history of a million trials that is a million
newest-score look-ups and three million newest-metric look-ups per call. A summary keeps their
rows for one run:

* **Written** in the transaction of the run's `finished` event (`append`), computed by those
  same two functions on the writer's connection, so it is sealed together with the event. Its
  `body` is JSON: {"format": 1, "scores": [score_mean_rows without the run id],
  "metrics": [metric_mean_rows without the run id]} (every metric of the run, every scorer
  version still in: the newest-version rule is applied when it is read, by the same
  `metric_means_frame` as for rows). `seal_id` names the run's newest seal at that moment.
* **Read only while current** (`current`): the seal that covers the summary row is the run's
  newest seal, the run's seal before it is the one the summary names, and no watermark seal
  came after it. A rescore, a resume or a reprice appends a newer seal of the run, a migration's
  backfill a watermark: the summary then stops being read and the run's rows are read instead,
  as for runs finished before migration 0013 and whenever a scorer version is pinned.
* **Checked** by `ragqual verify` (`mismatches`): every current summary is computed again from
  the rows and a run whose stored summary differs is named.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Connection, Engine, Table, bindparam, insert, text
from sqlalchemy.orm import Session

from ragqual.core.scoring import SCORER_NAME
from ragqual.store.models import RunSummary
from ragqual.store.queries import (Row, metric_mean_rows, metric_means, metric_means_frame, score_mean_rows,
                                   score_means, score_means_frame)
from ragqual.store.sealed_rows import covered, read_snapshot

if TYPE_CHECKING:  # pandas loads only where frames are built (queries), not to append a run
    import pandas as pd

TABLE = "run_summaries"
FORMAT = 1


@dataclass(frozen=True)
class Summary:
    """One run's stored aggregate rows, in the form `queries.score_mean_rows` and
    `queries.metric_mean_rows` return them (the run id first)."""

    run_id: int
    row_id: int
    scorer_name: str
    scores: tuple[Row, ...]
    metrics: tuple[Row, ...]

    def metric_rows(self, metrics: Sequence[str]) -> list[Row]:
        wanted = set(metrics)
        return [row for row in self.metrics if row[1] in wanted]


def _number(value: Any) -> Any:
    """A driver's number as JSON can hold it (PostgreSQL returns AVG of a numeric as Decimal)."""
    if value is None or isinstance(value, (int, float)):
        return value
    return float(value)


def body_of(conn: Connection, run_id: int, scorer_name: str = SCORER_NAME) -> str:
    """The summary of `run_id` as its rows stand now: the JSON `body` of its `run_summaries` row."""
    scores = [[r[1], *map(_number, r[2:])] for r in score_mean_rows(conn, [run_id], scorer_name)]
    metrics = [[r[1], r[2], r[3], *map(_number, r[4:])] for r in metric_mean_rows(conn, [run_id], None)]
    scores.sort(key=lambda r: r[0])
    metrics.sort(key=lambda r: (r[0], r[1], r[2]))
    return json.dumps({"format": FORMAT, "scores": scores, "metrics": metrics}, separators=(",", ":"))


def _rows(run_id: int, body: str) -> tuple[tuple[Row, ...], tuple[Row, ...]]:
    data = json.loads(body)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a format {FORMAT} run summary")
    return (tuple((run_id, *r) for r in data["scores"]), tuple((run_id, *r) for r in data["metrics"]))


def newest_seal(conn: Connection, run_id: int) -> int | None:
    """The id of the run's newest seal (None when it has none: its rows lie under a watermark)."""
    found = conn.execute(text("SELECT id FROM seals WHERE run_id = :r ORDER BY id DESC LIMIT 1"), {"r": run_id}).first()
    return None if found is None else int(found[0])


def append(session: Session, run_id: int, now: datetime, scorer_name: str = SCORER_NAME) -> None:
    """Append the run's summary inside the caller's write transaction (which then seals it)."""
    conn = session.connection()
    session.execute(insert(cast(Table, RunSummary.__table__)).values(run_id=run_id, seal_id=newest_seal(conn, run_id),
                                              scorer_name=scorer_name, body=body_of(conn, run_id, scorer_name),
                                              created_at=now))


# A summary row, the seal whose span covers it, and the run's two newest seals. Current when the
# covering seal is the run's newest, the one before it is the seal the summary names, and no
# watermark seal is newer than the covering one (module doc).
CURRENT_SQL = f"""
SELECT x.id, x.run_id, x.seal_id, x.scorer_name, x.body,
       (SELECT z.seal_id FROM seal_spans z WHERE z.table_name = '{TABLE}' AND z.first_id <= x.id
        ORDER BY z.first_id DESC LIMIT 1) AS sealed_by,
       (SELECT s.id FROM seals s WHERE s.run_id = x.run_id ORDER BY s.id DESC LIMIT 1) AS newest,
       (SELECT s.id FROM seals s WHERE s.run_id = x.run_id ORDER BY s.id DESC LIMIT 1 OFFSET 1) AS before_newest
FROM run_summaries x
WHERE x.run_id IN :runs AND {covered(TABLE, 'x.id')}
ORDER BY x.id
"""

WATERMARK_SQL = "SELECT MAX(id) FROM seals WHERE run_id IS NULL AND kind IN ('genesis', 'watermark')"


def current_rows(conn: Connection, run_ids: Sequence[int]) -> dict[int, tuple[int, str, str]]:
    """run id -> (row id, scorer name, body) of its current summary (runs without one left out)."""
    if not run_ids:
        return {}
    mark = conn.execute(text(WATERMARK_SQL)).scalar()
    query = text(CURRENT_SQL).bindparams(bindparam("runs", expanding=True))
    out: dict[int, tuple[int, str, str]] = {}
    for row_id, run_id, seal_id, scorer, body, sealed_by, newest, before in conn.execute(
            query, {"runs": sorted({int(r) for r in run_ids})}).all():
        if sealed_by is None or sealed_by != newest or seal_id != before or (mark is not None and mark > sealed_by):
            continue
        out[int(run_id)] = (int(row_id), str(scorer), str(body))  # a later current row wins
    return out


def current(conn: Connection, run_ids: Sequence[int]) -> dict[int, Summary]:
    """run id -> its current summary; a summary whose body cannot be read counts as none."""
    out: dict[int, Summary] = {}
    for run_id, (row_id, scorer, body) in current_rows(conn, run_ids).items():
        try:
            scores, metrics = _rows(run_id, body)
        except (ValueError, KeyError, TypeError):
            continue
        out[run_id] = Summary(run_id, row_id, scorer, scores, metrics)
    return out


FINISHED_SQL = """
SELECT e.run_id FROM run_events e
WHERE e.event = 'finished' AND e.id = (SELECT MAX(x.id) FROM run_events x WHERE x.run_id = e.run_id)
ORDER BY e.run_id"""


def finished_without_summary(conn: Connection) -> tuple[list[int], int]:
    """(finished runs with no current summary, in id order; how many finished runs have one): a
    run finished before migration 0013, or whose summary a rescore or reprice made stale."""
    finished = [int(r) for (r,) in conn.execute(text(FINISHED_SQL))]
    have = current_rows(conn, finished)
    return [r for r in finished if r not in have], len(have)


@dataclass(frozen=True)
class Means:
    """`queries.metric_means` and `queries.score_means` of some runs, each run read from its
    current summary or else from its rows."""

    metrics: pd.DataFrame
    scores: pd.DataFrame
    from_summaries: tuple[int, ...]


def history_means(engine: Engine, run_ids: Sequence[int], metrics: Sequence[str],
                  scorer_name: str = SCORER_NAME, scorer_version: int | None = None) -> Means:
    """What `metric_means(engine, run_ids, metrics, scorer_version)` and `score_means(engine,
    run_ids, scorer_name, scorer_version)` return, the same frames to the last bit, read from
    the runs' current summaries where there are (never with a pinned `scorer_version`)."""
    if not run_ids:
        return Means(metric_means(engine, run_ids, metrics), score_means(engine, run_ids, scorer_name), ())
    with engine.connect() as conn:
        read_snapshot(conn)
        held = {} if scorer_version is not None else current(conn, run_ids)
        rest = [r for r in run_ids if r not in held]
        metric_rows = [row for s in held.values() for row in s.metric_rows(metrics)]
        metric_rows += metric_mean_rows(conn, rest, metrics, scorer_version) if metrics else []
        scored = {r for r, s in held.items() if s.scorer_name == scorer_name}
        score_rows = [row for r in scored for row in held[r].scores]
        unscored = [r for r in run_ids if r not in scored]
        score_rows += score_mean_rows(conn, unscored, scorer_name, scorer_version)
    frame = metric_means_frame(metric_rows) if metrics else metric_means(engine, run_ids, metrics)
    return Means(frame, score_means_frame(score_rows), tuple(sorted(held)))


def same_body(stored: str, computed: str) -> bool:
    """Whether a stored summary holds what its rows give now: the same groups, metrics and counts,
    each mean equal to 1e-12 relative (PostgreSQL may sum a group's values in another order than
    when the summary was written, and a double sum can then differ in its last bits)."""
    try:
        a, b = json.loads(stored), json.loads(computed)
    except ValueError:
        return False
    return _close(a, b)


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return (isinstance(a, (int, float)) and isinstance(b, (int, float))
                and (math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) or (math.isnan(a) and math.isnan(b))))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def mismatches(engine: Engine, run_ids: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """(row id, run id) of each current summary that differs from its run's rows computed again
    (every run's, or those of `run_ids`)."""
    with engine.connect() as conn:
        read_snapshot(conn)
        if run_ids is None:
            run_ids = [int(r) for r in conn.execute(text(f"SELECT DISTINCT run_id FROM {TABLE}")).scalars()]
        out = []
        for run_id, (row_id, scorer, body) in sorted(current_rows(conn, run_ids).items()):
            if not same_body(body, body_of(conn, run_id, scorer)):
                out.append((row_id, run_id))
    return out
