"""`ragqual judge audit RUN`: how far the judge agrees with the people who labelled RUN.

For each criterion both have, the judge's newest verdicts on RUN (one judge model and rubric:
the most recent judge run's, or the one `--judge` names) are set beside the current human labels
(ragqual.store.labels: newest per trial, criterion and labeller; several labellers reduced by
majority). The payload (`core.judge_audit`) is appended as a `judge_audits` row keyed on the
rubric hash and the judge's digest, so an old audit can be re-read and compared with a new one.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ragqual.app.context import AppContext
from ragqual.core.judge_audit import Sample, audit_payload
from ragqual.errors import InputError
from ragqual.store import judgements
from ragqual.store.judgements import AuditRow, JudgementRow
from ragqual.store.runstore import RunStore


@dataclass(frozen=True)
class CriterionAudit:
    audit_id: int
    criterion: str
    judge_model: str
    judge_digest: str | None
    rubric_sha256: str
    payload: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"audit_id": self.audit_id, "criterion": self.criterion, "judge_model": self.judge_model,
                "judge_digest": self.judge_digest, "rubric_sha256": self.rubric_sha256, **self.payload}


def _pick(rows: list[JudgementRow], judge: str | None) -> list[JudgementRow]:
    """The verdicts of one judge and rubric: `judge`'s, else the newest judge run's."""
    if judge is not None:
        rows = [r for r in rows if r.judge_model == judge]
        if not rows:
            raise InputError(f"no verdicts of judge {judge!r} on this run: run `ragqual judge RUN --judge {judge}`")
    newest = max(rows, key=lambda r: r.id or 0)
    return [r for r in rows if (r.judge_model, r.rubric_sha256, r.judge_digest) ==
            (newest.judge_model, newest.rubric_sha256, newest.judge_digest)]


def _evidence(app: AppContext, run_id: int, judge: str | None,
              labeller: str | None = None) -> tuple[RunStore, dict[str, dict[int, list[str]]], list[JudgementRow]]:
    """RUN's store, its current human labels (criterion -> trial -> verdicts; one labeller's only
    when `labeller` is given) and its current judge verdicts (pairwise ones aside); no verdicts at
    all is refused."""
    from ragqual.store.labels import current_labels

    store = app.store(auto_create=False)
    store.get_run(run_id)
    human: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for label in current_labels(store.engine, run_id):
        if labeller is None or label.labeller == labeller:
            human[label.criterion][label.trial_id].append(label.verdict)
    verdicts = [r for r in judgements.current_judgements(store.engine, run_id)
                if not r.criterion.startswith("pairwise-")]
    if not verdicts:
        raise InputError(f"run {run_id} has no judge verdicts: run `ragqual judge {run_id} --judge URI` first")
    if judge is not None:  # only the criteria this judge scored
        verdicts = [r for r in verdicts if r.judge_model == judge]
        if not verdicts:
            raise InputError(f"no verdicts of judge {judge!r} on this run: run `ragqual judge RUN --judge {judge}`")
    return store, human, verdicts


def audit_run(app: AppContext, run_id: int, judge: str | None = None,
              labeller: str | None = None) -> list[CriterionAudit]:
    """Audit every criterion RUN has both judge verdicts and human labels for (all labellers'
    labels reduced by majority, or one labeller's); append the rows."""
    store, human, verdicts = _evidence(app, run_id, judge, labeller)
    if not human:
        who = f" by {labeller}" if labeller else ""
        raise InputError(f"run {run_id} has no human labels{who}: `ragqual label {run_id}` or `ragqual labels import`")
    out = []
    for criterion in sorted(set(human) & {r.criterion for r in verdicts}):
        rows = _pick([r for r in verdicts if r.criterion == criterion], judge)
        samples: dict[int, list[Sample]] = defaultdict(list)
        for r in sorted(rows, key=lambda r: r.sample_index):
            samples[r.trial_id].append((r.score, r.verdict))
        payload = audit_payload(human[criterion], samples)
        first = rows[0]
        payload["judge_run"] = max(r.run_id or 0 for r in rows)
        if labeller is not None:
            payload["labeller"] = labeller
        row = AuditRow(run_id, f"judge:{criterion}", first.rubric_sha256, first.judge_model, first.judge_digest,
                       payload)
        out.append(CriterionAudit(judgements.append_audit(store, row), criterion, first.judge_model,
                                  first.judge_digest, first.rubric_sha256, payload))
    if not out:
        raise InputError(f"run {run_id}'s labels and judge verdicts share no criterion")
    return out


@dataclass(frozen=True)
class LabelPlan:
    criterion: str
    judged: int  # trials with a judge score
    labelled: int  # of them, with a yes/no human label (the pilot)
    needed: int | None  # labels in all for the target width (None: out of reach, see note)
    more: int | None
    note: str | None = None


def plan_labels(app: AppContext, run_id: int, width: float, judge: str | None = None) -> list[LabelPlan]:
    """Per criterion, how many labels a PPI++ interval of full width `width` needs (power analysis
    at the moments of the labels so far: `core.ppi.labels_needed`), and how many more that is."""
    from ragqual.core.judge_audit import judge_score, majority
    from ragqual.core.ppi import labels_needed
    store, human, verdicts = _evidence(app, run_id, judge)
    plans = []
    for criterion in sorted({r.criterion for r in verdicts}):
        samples: dict[int, list[Sample]] = defaultdict(list)
        for r in _pick([r for r in verdicts if r.criterion == criterion], judge):
            samples[r.trial_id].append((r.score, r.verdict))
        scores = {t: s for t, s in ((t, judge_score(v)) for t, v in samples.items()) if s is not None}
        pilot = [(1.0 if w == "yes" else 0.0, scores[t]) for t, w in
                 ((t, majority(v)) for t, v in human[criterion].items()) if w != "unsure" and t in scores]
        try:
            needed = labels_needed(width, [y for y, _ in pilot], [f for _, f in pilot], len(scores),
                                   yhat_all=list(scores.values()))
            plans.append(LabelPlan(criterion, len(scores), len(pilot), needed, max(0, needed - len(pilot))))
        except InputError as err:
            plans.append(LabelPlan(criterion, len(scores), len(pilot), None, None, str(err)))
    return plans


@dataclass(frozen=True)
class JudgeDifference:
    """NEW - BASE on one judged criterion: the PPI++ paired interval (people's labels on both answers
    to a sample of the questions, the judge's scores on the rest) beside the judge-only difference."""

    criterion: str
    pairs: int  # questions both runs answered and the judge scored
    labelled: int  # of them, labelled yes/no on both answers
    judge_only: float | None
    estimate: float | None
    low: float | None
    high: float | None
    note: str | None = None

    @property
    def regression(self) -> bool:
        """The whole interval lies below zero: NEW is worse than BASE by the PPI-corrected judge."""
        return self.high is not None and self.high < 0


def _human(app_store: Any, run_id: int) -> dict[str, dict[int, str]]:
    from ragqual.core.judge_audit import majority
    from ragqual.store.labels import current_labels

    grouped: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for label in current_labels(app_store.engine, run_id):
        grouped[label.criterion][label.trial_id].append(label.verdict)
    return {c: {t: majority(v) for t, v in by.items()} for c, by in grouped.items()}


def _scores(app_store: Any, run_id: int) -> dict[str, dict[int, float]]:
    from ragqual.core.judge_audit import judge_score

    rows = [r for r in judgements.current_judgements(app_store.engine, run_id)
            if not r.criterion.startswith("pairwise-")]
    out: dict[str, dict[int, float]] = {}
    for criterion in {r.criterion for r in rows}:
        samples: dict[int, list[Sample]] = defaultdict(list)
        for r in _pick([r for r in rows if r.criterion == criterion], None):
            samples[r.trial_id].append((r.score, r.verdict))
        out[criterion] = {t: s for t, s in ((t, judge_score(v)) for t, v in samples.items()) if s is not None}
    return out


def judge_differences(app: AppContext, base_id: int, new_id: int, alpha: float = 0.05) -> list[JudgeDifference]:
    """Per criterion judged on both runs, NEW - BASE with its PPI++ paired interval."""
    from ragqual.app.judge_run import pair_trials
    from ragqual.core.ppi import ppi_paired_diff_ci

    store = app.store(auto_create=False)
    base_scores, new_scores = _scores(store, base_id), _scores(store, new_id)
    base_human, new_human = _human(store, base_id), _human(store, new_id)
    pairs, _ = pair_trials(store, new_id, base_id)
    out = []
    for criterion in sorted(set(base_scores) & set(new_scores)):
        fb, fn = base_scores[criterion], new_scores[criterion]
        hb, hn = base_human.get(criterion, {}), new_human.get(criterion, {})
        both = [(n.trial_id, b.trial_id) for n, b in pairs if n.trial_id in fn and b.trial_id in fb]
        labelled = [(n, b) for n, b in both if hn.get(n, "unsure") != "unsure" and hb.get(b, "unsure") != "unsure"]
        rest = [(n, b) for n, b in both if (n, b) not in set(labelled)]
        judge_only = sum(fn[n] - fb[b] for n, b in both) / len(both) if both else None
        try:
            est = ppi_paired_diff_ci([float(hn[n] == "yes") for n, _ in labelled],
                                     [float(hb[b] == "yes") for _, b in labelled],
                                     [fn[n] for n, _ in labelled], [fb[b] for _, b in labelled],
                                     [fn[n] for n, _ in rest], [fb[b] for _, b in rest], alpha=alpha)
            out.append(JudgeDifference(criterion, len(both), len(labelled), judge_only, est.estimate, est.low,
                                       est.high, est.note))
        except InputError as err:
            out.append(JudgeDifference(criterion, len(both), len(labelled), judge_only, None, None, None, str(err)))
    return out
