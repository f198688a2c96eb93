"""Read queries over the history, returned as pandas DataFrames or plain records."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine, text

RUNS_SQL = """
SELECT s.run_id, s.kind, s.subject, s.started_at, s.status, s.git_sha, s.git_dirty,
       s.corpus_fingerprint
FROM v_run_status s
{where}
ORDER BY s.run_id
"""


def runs_frame(engine: Engine, kind: str | None = None) -> pd.DataFrame:
    where = "WHERE s.kind = :kind" if kind else ""
    with engine.connect() as conn:
        return pd.read_sql_query(text(RUNS_SQL.format(where=where)), conn, params={"kind": kind} if kind else {})
