"""Reads for the generation tier: per variant x mode means and unstable questions of one run."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, text

from ragqual.core.scoring import SCORER_NAME
from ragqual.store.queries import current_metric_row
from ragqual.store.sealed_rows import covered

MODE_SUMS_SQL = """
SELECT v.name AS variant, t.mode AS mode, m.metric AS metric, SUM(m.value) AS total
FROM metric_values m
JOIN trials t ON t.id = m.trial_id
JOIN variant_configs v ON v.id = t.variant_id
WHERE m.run_id = :run AND m.metric IN ('correctness', 'refusalCorrectness') {only} AND {current}
GROUP BY v.name, t.mode, m.metric
"""
"""The sums of the two metrics a mode line shows (the other metric rows of a trial are not read)."""

TRIAL_COUNTS_SQL = f"""
SELECT v.name AS variant, t.mode AS mode, COUNT(*) AS trials, COUNT(t.error) AS errors
FROM trials t JOIN variant_configs v ON v.id = t.variant_id
WHERE t.run_id = :run AND {covered('trials', 't.id')}
GROUP BY v.name, t.mode
"""

PASS_SQL = f"""
SELECT v.name AS variant, t.mode AS mode, c.case_id AS case_id, s.perfect AS perfect
FROM trials t
JOIN variant_configs v ON v.id = t.variant_id
JOIN cases c ON c.id = t.case_pk
JOIN trial_scores s ON s.id = (
    SELECT s2.id FROM trial_scores s2 WHERE s2.trial_id = t.id AND s2.scorer_name = :scorer_name {{only}}
      AND {covered('trial_scores', 's2.id')}
    ORDER BY s2.scorer_version DESC, s2.id DESC LIMIT 1)
WHERE t.run_id = :run AND {covered('trials', 't.id')}
"""


@dataclass(frozen=True)
class ModeLine:
    variant: str
    mode: str
    correctness: float | None
    refusal: float | None
    pass_rate: float | None
    unstable: int
    questions: int
    errors: int = 0


def mode_lines(engine: Engine, run_id: int, scorer_version: int | None = None) -> list[ModeLine]:
    """Correctness and refusal over every trial of the group: a trial whose model call failed counts as 0.

    Each trial's current metric rows and newest score (a rescoring's, when there is one); with
    `scorer_version`, scores of that version and metrics of the newest version not above it."""
    pinned = scorer_version is not None
    params: dict[str, object] = {"run": run_id, "scorer_name": SCORER_NAME}
    if pinned:
        params["scorer_version"] = scorer_version
    sums_sql = MODE_SUMS_SQL.format(only="AND m.scorer_version <= :scorer_version" if pinned else "",
                                    current=current_metric_row(pinned))
    pass_sql = PASS_SQL.format(only="AND s2.scorer_version = :scorer_version" if pinned else "")
    with engine.connect() as conn:
        sums = conn.execute(text(sums_sql), params).all()
        counts = {(r.variant, r.mode): (r.trials, r.errors) for r in conn.execute(text(TRIAL_COUNTS_SQL), {"run": run_id})}
        passes = conn.execute(text(pass_sql), params).all()
    metric = {(r.variant, r.mode, r.metric): (r.total or 0.0) / counts[(r.variant, r.mode)][0] for r in sums}
    flags: dict[tuple[str, str], dict[str, set[bool]]] = {}
    for r in passes:
        flags.setdefault((r.variant, r.mode), {}).setdefault(r.case_id, set()).add(bool(r.perfect))
    lines = []
    for (variant, mode), cases in sorted(flags.items()):
        stable = [next(iter(v)) for v in cases.values() if len(v) == 1]
        lines.append(ModeLine(
            variant, mode, metric.get((variant, mode, "correctness")), metric.get((variant, mode, "refusalCorrectness")),
            sum(stable) / len(stable) if stable else None, len(cases) - len(stable), len(cases),
            counts.get((variant, mode), (0, 0))[1],
        ))
    return lines
