"""One criterion's audit of a judge against human labels, as a JSON-ready payload (pure).

Inputs are plain data: per trial, the human verdict (`yes` | `no` | `unsure`; several labellers
are reduced by majority, a tie is `unsure`) and the judge's samples as (score, verdict) with
None for an unreadable reply. The judge's verdict on a trial is its mean score over readable
samples, `yes` from 0.5 up. The payload holds Cohen's kappa with both base rates, the confusion
matrix, accuracy, the AUC of the judge's score against the labels (its ranking, whatever the
threshold), the trial ids where judge and human disagree, the judge's self-consistency, and the
judged mean three ways: PPI++ (labelled and judge-only trials together), labels only,
and judge only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragqual.core.agreement import UNSURE, agreement, rank_auc, self_consistency
from ragqual.core.ppi import classical_mean_ci, judge_only_mean_ci, ppi_mean_ci
from ragqual.errors import InputError

Sample = tuple[float | None, str | None]


def majority(verdicts: Sequence[str]) -> str:
    """Several labellers' verdicts on one trial: the majority of yes/no, `unsure` on a tie or none."""
    yes, no = verdicts.count("yes"), verdicts.count("no")
    return "yes" if yes > no else "no" if no > yes else UNSURE


def judge_score(samples: Sequence[Sample]) -> float | None:
    scores = [s for s, _ in samples if s is not None]
    return sum(scores) / len(scores) if scores else None


def _interval(build: Any, *args: Any) -> dict[str, Any]:
    try:
        return dict(build(*args).as_dict())
    except InputError as err:
        return {"note": str(err)}


def audit_payload(human: Mapping[int, Sequence[str]], judge: Mapping[int, Sequence[Sample]],
                  alpha: float = 0.05) -> dict[str, Any]:
    """The audit of one criterion (see the module docstring); `human` maps trial -> labellers' verdicts."""
    scores = {t: judge_score(samples) for t, samples in judge.items()}
    labelled = sorted(t for t in human if t in judge)
    words = [majority(list(human[t])) for t in labelled]
    verdicts = [None if scores[t] is None else ("yes" if (scores[t] or 0) >= 0.5 else "no") for t in labelled]
    agree = agreement(words, verdicts)
    body = {k: v for k, v in agree.as_dict().items() if k != "disagreements"}
    body["disagreements"] = [labelled[i] for i in agree.disagreements]
    body["labelled_unjudged"] = sorted(t for t in human if t not in judge)
    samples = [[None if v is None else int(v == "yes") for _, v in judge[t]] for t in sorted(judge)]
    body["self_consistency"] = self_consistency(samples).__dict__ if any(len(s) > 1 for s in samples) else None
    y = [1.0 if w == "yes" else 0.0 for w, t in zip(words, labelled) if w != UNSURE and scores[t] is not None]
    f = [float(scores[t] or 0.0) for w, t in zip(words, labelled) if w != UNSURE and scores[t] is not None]
    unlabelled = [float(s) for t, s in scores.items() if t not in human and s is not None]
    body["auc"] = rank_auc([int(v) for v in y], f)
    body["ppi"] = _interval(ppi_mean_ci, y, f, unlabelled, alpha)
    body["labels_only"] = _interval(classical_mean_ci, y, alpha)
    body["judge_only"] = _interval(judge_only_mean_ci, [float(s) for s in scores.values() if s is not None], alpha)
    return body
