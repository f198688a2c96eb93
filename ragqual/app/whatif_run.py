"""`ragqual whatif RUN`: other thresholds and context sizes recomputed from a generation run's
stored candidates (no search, no model call), and the measured advice the decomposition prints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusContext, CorpusOptions, load_corpus_context
from ragqual.app.history_reads import run_info
from ragqual.core import textmatch, whatif
from ragqual.core.diagnosis import CauseCount
from ragqual.core.goldens import Golden
from ragqual.errors import InputError
from ragqual.pipeline import prompt
from ragqual.store.failure_reads import FailureTrial, run_failure_trials

SELECT_SPLIT, REPORT_SPLIT = "validation", "test"
ADVICE_THRESHOLDS = whatif.parse_range("0.3:0.8:0.05")  # what the decomposition measures before it advises


@dataclass(frozen=True)
class VariantWhatif:
    variant: str
    objective: str  # "mock pass" or "reader ceiling"
    own: whatif.Setting
    questions: int
    chosen_on: str  # "validation" or "all questions"
    rows: list[whatif.Row]  # on the selection split (all questions without splits)
    report_rows: list[whatif.Row] | None  # on `test`, when the goldens have splits
    advice: str | None
    overlap: whatif.Overlap


def question_of(trial: FailureTrial, split: str | None) -> whatif.Question | None:
    raw = trial.raw_output if isinstance(trial.raw_output, dict) else {}
    cands = raw.get("candidates")
    if not isinstance(cands, dict):
        return None
    g = trial.case_input
    return whatif.Question(
        case_id=trial.case_id, split=split, expect_refusal=bool(g.get("expectRefusal")),
        relevant_docs=tuple(g.get("relevantDocIds") or ()), must_include=tuple(g.get("mustInclude") or ()),
        must_not_include=tuple(g.get("mustNotInclude") or ()),
        candidate_ids=tuple(str(i) for i in cands.get("ids") or ()),
        similarities=tuple(float(s) for s in cands.get("similarities") or ()),
    )


def mock_reader(goldens: dict[str, Golden], options: dict[str, Any]) -> whatif.Reader:
    """The echo mock's correctness on a counterfactual context: its reply is a function of the
    context alone, scored by the same assertions a run evaluates."""
    from ragqual.subjects.rag import answer_scores

    def read(q: whatif.Question, passages: Sequence[str]) -> float | None:
        golden = goldens[q.case_id]
        answer = prompt.mock_reply(prompt.answer_request(golden, passages, options))
        return answer_scores(golden, answer, "\n\n".join(passages)).get("correctness")

    return read


def _corpus_for(app: AppContext, opts: CorpusOptions, params: dict[str, Any]) -> CorpusOptions:
    """The run's own chunking wherever the command line does not say otherwise."""
    chunking = params.get("chunking") or {}
    given = {f.name: getattr(opts, f.name) for f in fields(CorpusOptions)}
    for name in ("chunk_tokens", "overlap_tokens", "chars_per_token", "doc_prefix", "query_prefix"):
        if given.get(name) is None and name in chunking:
            given[name] = chunking[name]
    return replace(opts, **given)


def _settings(thresholds: Sequence[float] | None, ks: Sequence[int] | None, own: whatif.Setting) -> list[whatif.Setting]:
    cuts: list[float | None] = list(thresholds) if thresholds else [own.threshold]
    sizes = list(ks) if ks else [own.context_k]
    out = [whatif.Setting(t, k) for t in cuts for k in sizes]
    return out if own in out else [own, *out]


def load(app: AppContext, run_id: int, opts: CorpusOptions) -> tuple[dict[str, Any], CorpusContext, list[FailureTrial]]:
    info = run_info(app, run_id)
    if info.kind not in ("generation", "eval"):
        raise InputError(f"run {run_id} is a {info.kind} run: whatif reads a generation run's e2e trials")
    corpus = load_corpus_context(app, _corpus_for(app, opts, info.params))
    if info.corpus_fingerprint and corpus.fingerprint != info.corpus_fingerprint:
        raise InputError(f"run {run_id} was made on corpus fingerprint {info.corpus_fingerprint[:12]}; this corpus "
                         f"and chunking give {corpus.fingerprint[:12]}: whatif needs the run's own corpus texts")
    trials = [t for t in run_failure_trials(app.store(auto_create=False).engine, run_id) if t.mode == "e2e"]
    if not trials:
        raise InputError(f"run {run_id} has no e2e trials: whatif recomputes e2e contexts")
    return info.params, corpus, trials


def run_whatif(app: AppContext, run_id: int, opts: CorpusOptions, thresholds: Sequence[float] | None,
               ks: Sequence[int] | None) -> list[VariantWhatif]:
    params, corpus, trials = load(app, run_id, opts)
    return whatif_from(params, corpus, trials, thresholds, ks)


def whatif_from(params: dict[str, Any], corpus: CorpusContext, trials: Sequence[FailureTrial],
                thresholds: Sequence[float] | None, ks: Sequence[int] | None) -> list[VariantWhatif]:
    retrieval = params.get("retrieval") or {}
    own = whatif.Setting(retrieval.get("threshold"), int(retrieval.get("context_k") or 5))
    goldens = {g.id: g for g in corpus.goldens}
    texts = {c.chunk_id: c.text for c in corpus.chunks}
    out = []
    for variant in dict.fromkeys(t.variant for t in trials):
        questions = _questions(trials, variant, goldens)
        missing = sorted({i for q in questions for i in q.candidate_ids if i not in texts})
        if missing:
            raise InputError(f"the stored candidates name {len(missing)} chunk(s) this corpus does not have "
                             f"(first: {missing[0]})")
        reader = mock_reader(goldens, params.get("options") or {}) if variant == "mock" else None
        outcomes = whatif.evaluate(questions, _settings(thresholds, ks, own), own, texts, textmatch.found, reader)
        split = SELECT_SPLIT if any(q.split == SELECT_SPLIT for q in questions) else None
        rows = whatif.rows_for(questions, outcomes, split)
        report_rows = whatif.rows_for(questions, outcomes, REPORT_SPLIT) if split else None
        objective = "mock pass" if reader else "reader ceiling"
        chosen_on = SELECT_SPLIT if split else "all questions"
        out.append(VariantWhatif(variant, objective, own, len(questions), chosen_on, rows, report_rows,
                                 whatif.advice(rows, own, objective, chosen_on, report_rows), whatif.overlap(questions)))
    return out


def _questions(trials: Sequence[FailureTrial], variant: str, goldens: dict[str, Golden]) -> list[whatif.Question]:
    """One question per golden (its first repeat: retrieval does not vary between repeats)."""
    seen: dict[str, whatif.Question] = {}
    for t in trials:
        if t.variant != variant or t.case_id in seen or t.case_id not in goldens:
            continue
        q = question_of(t, goldens[t.case_id].split)
        if q is None:
            raise InputError(f"trial {t.trial_id} stored no candidate list (a run made before `whatif` existed): "
                             "run the generation tier again to measure counterfactuals")
        seen[t.case_id] = q
    return list(seen.values())


def measured_advice(app: AppContext, run_id: int, opts: CorpusOptions | CorpusContext,
                    causes: Mapping[str, CauseCount] | None) -> dict[str, str]:
    """Per variant whose oracle - e2e gap has out-of-corpus questions answered from a non-empty
    context: the similarity cut-off that measurably helps on this run, or why none does (with the
    overlap of similarities). Nothing for a run that stored no candidates. `opts` may be the
    corpus already open (`ragqual eval`)."""
    wanted = {v for v, c in (causes or {}).items() if "answered-out-of-corpus" in c.by_cause}
    if not wanted:
        return {}
    try:
        if isinstance(opts, CorpusContext):
            params = run_info(app, run_id).params
            trials = [t for t in run_failure_trials(app.store().engine, run_id) if t.mode == "e2e"]
            results = whatif_from(params, opts, trials, ADVICE_THRESHOLDS, None)
        else:
            results = run_whatif(app, run_id, opts, ADVICE_THRESHOLDS, None)
    except InputError:
        return {}
    return {v.variant: "measured on this run: " + (v.advice or whatif.no_cut_off(v.overlap, v.objective, v.chosen_on))
            for v in results if v.variant in wanted}
