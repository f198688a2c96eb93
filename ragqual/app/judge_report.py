"""The judge section of `ragqual report`: a table of its own, never merged into the scores.

One row per (judge, criterion) of the newest verdicts on the run: mean P(yes), n and errors, and,
when an audit of that judge and rubric against human labels exists (`ragqual judge audit`),
its kappa and the PPI++ interval beside the judge-only mean.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from ragqual.core.judge_audit import judge_score
from ragqual.store import judgements

SECTION = "judge"  # its own section: an LLM's opinion, never in the scores, pass or the gate
COLUMNS = ["criterion", "judge", "rubric", "mean_p_yes", "n", "errors", "kappa", "human_rate", "judge_rate",
           "ppi_mean", "ppi_low", "ppi_high", "labels"]


def judge_frame(engine: Engine, run_id: int) -> pd.DataFrame | None:
    """The judge table of a run, or None when no judge has scored it."""
    if not judgements.has_tables(engine):
        return None
    rows = [r for r in judgements.current_judgements(engine, run_id) if not r.criterion.startswith("pairwise-")]
    if not rows:
        return None
    audits = {(a.criterion, a.rubric_sha256, a.judge_digest, a.judge_model): a.payload
              for a in judgements.audits(engine, run_id)}  # the newest audit of each key wins
    groups: dict[tuple[str, str, str, str | None], dict[int, list[tuple[float | None, str | None]]]] = \
        defaultdict(lambda: defaultdict(list))
    for r in rows:
        groups[(r.criterion, r.judge_model, r.rubric_sha256, r.judge_digest)][r.trial_id].append((r.score, r.verdict))
    out: list[dict[str, Any]] = []
    for (criterion, model, rubric, digest), by_trial in groups.items():
        scores = [s for s in (judge_score(v) for v in by_trial.values()) if s is not None]
        errors = sum(1 for v in by_trial.values() for s, _ in v if s is None)
        audit = audits.get((f"judge:{criterion}", rubric, digest, model), {})
        ppi = audit.get("ppi") or {}
        out.append({"criterion": criterion, "judge": model, "rubric": rubric[:12],
                    "mean_p_yes": sum(scores) / len(scores) if scores else None, "n": len(scores), "errors": errors,
                    "kappa": audit.get("kappa"), "human_rate": audit.get("human_rate"),
                    "judge_rate": audit.get("judge_rate"), "ppi_mean": ppi.get("estimate"),
                    "ppi_low": ppi.get("low"), "ppi_high": ppi.get("high"), "labels": audit.get("n")})
    frame = pd.DataFrame(out, columns=COLUMNS)
    frame["labels"] = frame["labels"].astype("Int64")
    return frame


def judge_sections(engine: Engine, run_id: int) -> list[tuple[str, pd.DataFrame]]:
    frame = judge_frame(engine, run_id)
    return [] if frame is None else [(SECTION, frame)]
