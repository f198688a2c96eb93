"""Reads for the failure report: each trial of a run with its stored output, its case definition,
its newest correctness metric and its newest assertion outcomes (with their names)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, text

from ragqual.core.replies import answer_in
from ragqual.core.scoring import SCORER_NAME
from ragqual.store.queries import ALIAS_COVERED, current_metric_row
from ragqual.store.sealed_rows import covered
from ragqual.store.texts import TABLE as TEXTS_TABLE
from ragqual.store.texts import hash_column, resolved_text

PERFECT_SQL = f"""(SELECT s.perfect FROM trial_scores s WHERE s.trial_id = t.id AND s.scorer_name = :scorer
          AND {covered('trial_scores', 's.id')}
        ORDER BY s.scorer_version DESC, s.id DESC LIMIT 1)"""


READ_TEXTS = ("raw_output", "parsed_output", "context")  # the texts a failure reading reads of a trial


@dataclass(frozen=True)
class TrialsQuery:
    """What `run_failure_trials` runs: the trials, each text inline or by the hash naming it
    (`trials`), and the sealed texts those hashes name, each once (`texts`)."""

    trials: str
    texts: str


def trials_query(*, perfect: bool = True, modes: tuple[str, ...] | None = None,
                 texts_of: str | None = None) -> TrialsQuery:
    """The trials of a run, in id order. `perfect=False`: without the newest score (NULL);
    `modes`: only those modes' trials; `texts_of`: only that mode's trials with their texts (raw
    and parsed output, context; NULL for the others).

    A text stored by hash (`ragqual.store.texts`) is read once per distinct text, not once per
    trial naming it: repeats, and modes sharing a context, name the same texts, and each
    correlated look-up of `texts.resolved_sql` costs its sealed-row check; `texts.resolved_text`
    puts the two together as `resolved_sql` does."""
    def pair(column: str) -> str:
        both = (f"t.{column}", f"t.{hash_column(column)}")
        return ", ".join(both if texts_of is None else (f"CASE WHEN t.mode = '{texts_of}' THEN {c} END" for c in both))
    only = "" if modes is None else f" AND t.mode IN ({', '.join(repr(m) for m in modes)})"
    trials = f"""
SELECT t.id, v.name, t.mode, t.repeat_index, COALESCE(a.case_id, c.case_id), c.slug, c.definition,
       {', '.join(pair(c) for c in READ_TEXTS)}, t.error,
       {PERFECT_SQL if perfect else 'NULL'} AS perfect
FROM trials t
JOIN cases c ON c.id = t.case_pk
LEFT JOIN case_aliases a ON a.subject = c.subject AND a.alias = c.case_id AND {ALIAS_COVERED}
JOIN variant_configs v ON v.id = t.variant_id
WHERE t.run_id = :run AND {covered('trials', 't.id')}{only}
ORDER BY t.id
"""
    named_by = only if texts_of is None else f" AND t.mode = '{texts_of}'"
    named = " UNION ".join(f"SELECT t.{hash_column(c)} FROM trials t WHERE t.run_id = :run{named_by}"
                           for c in READ_TEXTS)
    texts = f"SELECT x.sha256, x.body FROM {TEXTS_TABLE} x WHERE x.sha256 IN ({named}) AND {covered(TEXTS_TABLE, 'x.id')}"
    return TrialsQuery(trials, texts)


TRIALS_QUERY = trials_query()

CORRECTNESS_SQL = """
SELECT m.trial_id, m.value FROM metric_values m
WHERE m.run_id = :run AND m.metric = 'correctness' AND m.trial_id IS NOT NULL AND {current}
"""

# The newest scoring (batch) of each trial: the batch of its newest sealed assertion row.
ASSERTIONS_SQL = f"""
SELECT r.trial_id, r.assertion_id, r.assertion_version, r.category, r.weight, r.passed, r.detail,
       (SELECT d.name FROM assertion_defs d WHERE d.assertion_id = r.assertion_id
          AND d.version = r.assertion_version AND {covered('assertion_defs', 'd.id')}
        ORDER BY d.id DESC LIMIT 1) AS name
FROM assertion_results r
JOIN trials t ON t.id = r.trial_id
WHERE t.run_id = :run AND {covered('assertion_results', 'r.id')} AND r.batch = (
    SELECT r2.batch FROM assertion_results r2 WHERE r2.trial_id = r.trial_id
      AND {covered('assertion_results', 'r2.id')} ORDER BY r2.id DESC LIMIT 1)
ORDER BY r.id
"""


@dataclass(frozen=True)
class CheckRow:
    assertion_id: str
    name: str
    category: str
    weight: float
    passed: bool
    detail: str | None


@dataclass(frozen=True)
class FailureTrial:
    trial_id: int
    variant: str
    mode: str
    repeat_index: int
    case_id: str
    slug: str
    case_input: dict[str, Any]
    raw_output: Any
    answer: str
    context: str
    error: str | None
    correctness: float | None
    perfect: bool | None  # every weight-bearing assertion passed (newest score); None: not scored
    checks: tuple[CheckRow, ...]


def _json(value: str | None) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except (json.JSONDecodeError, TypeError):
        return value


def _answer(parsed: Any, raw: Any) -> str:
    if isinstance(parsed, str):
        return parsed
    content = answer_in(raw)
    if content is not None:
        return content
    return "" if parsed is None else json.dumps(parsed)


def _case_input(definition: str | None) -> dict[str, Any]:
    case_input = (_json(definition) or {}).get("input")
    return case_input if isinstance(case_input, dict) else {}


def run_failure_trials(engine: Engine, run_id: int, *, with_checks: bool = True, query: TrialsQuery = TRIALS_QUERY
                       ) -> list[FailureTrial]:
    """Every trial of the run as the failure report reads it (newest scoring and metrics);
    `with_checks=False`: without the assertion outcomes (`checks` empty), for readers that need
    only the answers, contexts and correctness (the decomposition and its advice).

    Each distinct stored text is parsed once: repeats store the same case definition and, when
    the model answers alike, the same raw and parsed output, so trials that stored equal texts
    share the parsed values (read them, do not change them)."""
    with engine.connect() as conn:
        trials = conn.execute(text(query.trials), {"run": run_id, "scorer": SCORER_NAME}).all()
        bodies: dict[str, str] = {sha: body for sha, body in conn.execute(text(query.texts), {"run": run_id})}
        correct: dict[Any, Any] = dict(conn.execute(text(CORRECTNESS_SQL.format(current=current_metric_row(False))),
                                    {"run": run_id}).all())
        checks: dict[int, list[CheckRow]] = {}
        if with_checks:
            for r in conn.execute(text(ASSERTIONS_SQL), {"run": run_id}):
                checks.setdefault(r[0], []).append(
                    CheckRow(r[1], r[7] or r[1], r[3], float(r[4]), bool(r[5]), r[6]))
    inputs: dict[str | None, dict[str, Any]] = {}
    outputs: dict[tuple[str | None, str | None], tuple[Any, str]] = {}
    out = []
    for (tid, variant, mode, repeat, case_id, slug, definition, raw_inline, raw_sha, parsed_inline, parsed_sha,
         context_inline, context_sha, error, perfect) in trials:
        raw, parsed = resolved_text(raw_inline, raw_sha, bodies), resolved_text(parsed_inline, parsed_sha, bodies)
        context = resolved_text(context_inline, context_sha, bodies)
        case_input = inputs.get(definition)
        if case_input is None:
            case_input = inputs[definition] = _case_input(definition)
        read = outputs.get((raw, parsed))
        if read is None:
            raw_value = _json(raw)
            read = outputs[(raw, parsed)] = (raw_value, _answer(_json(parsed), raw_value))
        raw_value, answer = read
        out.append(FailureTrial(
            tid, variant, mode, repeat, case_id, slug, case_input,
            raw_value, answer, context or "", error,
            None if correct.get(tid) is None else float(correct[tid]), None if perfect is None else bool(perfect),
            tuple(checks.get(tid, ())),
        ))
    return out


DECOMPOSITION_QUERY = trials_query(perfect=False, modes=("oracle", "e2e"), texts_of="e2e")


def decomposition_trials(engine: Engine, run_id: int) -> list[FailureTrial]:
    """The trials the decomposition reads (`app.failures.gap_causes` and the measured advice):
    the e2e trials as `run_failure_trials(with_checks=False)` reads them, but without the newest
    score (`perfect` None); the oracle trials with what tells whether they passed (error,
    correctness) and no texts (`raw_output` None, `answer` and `context` empty); no noretrieval
    trial. The causes read an oracle trial's outcome alone and the advice e2e trials alone."""
    return run_failure_trials(engine, run_id, with_checks=False, query=DECOMPOSITION_QUERY)
