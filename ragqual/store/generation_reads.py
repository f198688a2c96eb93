"""Reads for the generation tier: per variant x mode means and unstable questions of one run."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, text

MODE_MEANS_SQL = """
SELECT v.name AS variant, t.mode AS mode, mv.metric AS metric, AVG(mv.value) AS mean, COUNT(mv.value) AS n
FROM metric_values mv
JOIN trials t ON t.id = mv.trial_id
JOIN variant_configs v ON v.id = t.variant_id
WHERE mv.run_id = :run AND t.error IS NULL
GROUP BY v.name, t.mode, mv.metric
"""

PASS_SQL = """
SELECT v.name AS variant, t.mode AS mode, c.case_id AS case_id, s.perfect AS perfect
FROM trials t
JOIN variant_configs v ON v.id = t.variant_id
JOIN cases c ON c.id = t.case_pk
JOIN trial_scores s ON s.id = (
    SELECT s2.id FROM trial_scores s2 WHERE s2.trial_id = t.id ORDER BY s2.scorer_version DESC, s2.id DESC LIMIT 1)
WHERE t.run_id = :run
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


def mode_lines(engine: Engine, run_id: int) -> list[ModeLine]:
    with engine.connect() as conn:
        means = conn.execute(text(MODE_MEANS_SQL), {"run": run_id}).all()
        passes = conn.execute(text(PASS_SQL), {"run": run_id}).all()
    metric: dict[tuple[str, str, str], float] = {(r.variant, r.mode, r.metric): r.mean for r in means}
    flags: dict[tuple[str, str], dict[str, set[bool]]] = {}
    for r in passes:
        flags.setdefault((r.variant, r.mode), {}).setdefault(r.case_id, set()).add(bool(r.perfect))
    lines = []
    for (variant, mode), cases in sorted(flags.items()):
        stable = [next(iter(v)) for v in cases.values() if len(v) == 1]
        lines.append(ModeLine(
            variant, mode, metric.get((variant, mode, "correctness")), metric.get((variant, mode, "refusalCorrectness")),
            sum(stable) / len(stable) if stable else None, len(cases) - len(stable), len(cases),
        ))
    return lines
