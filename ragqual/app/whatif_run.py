"""`ragqual whatif RUN`: other thresholds and context sizes recomputed from a generation run's
stored candidates (no search, no model call), and the measured advice the decomposition prints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusContext, CorpusOptions, load_corpus_context
from ragqual.app.history_reads import run_info
from ragqual.core import textmatch, whatif
from ragqual.core.diagnosis import CauseCount
from ragqual.core.goldens import Golden, goldens_hash
from ragqual.engine.cases import Case
from ragqual.errors import InputError
from ragqual.pipeline import prompt
from ragqual.pipeline.retrieval import STRATEGIES
from ragqual.store.failure_reads import FailureTrial, run_failure_trials
from ragqual.store.records import RetrievalRow
from ragqual.store.retrieval_reads import retrieval_hits

SELECT_SPLIT, REPORT_SPLIT = "validation", "test"
ADVICE_THRESHOLDS = whatif.parse_range("0.3:0.8:0.05")  # what the decomposition measures before it advises
ADVICE_CAUSES = {"answered-out-of-corpus", "missed-document", "near-miss"}
"""The causes a measured setting can answer: a cut-off (out-of-corpus answers) or another strategy's
candidates (a relevant document missed or outranked); each advised only when it measurably helps."""


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
    unavailable: list[str] = field(default_factory=list)  # settings the stored candidates cannot recompute, and why
    own_strategy: str | None = None  # the strategy the run retrieved with
    rewritten: int = 0
    """Questions whose e2e trial searched the model's rewrite of a multi-turn conversation (its stored
    `retrievalQuery` is not the golden's last message): a retrieval run searches that last message as
    written, so its contextRecall of the same question can differ (docs/whatif.md)."""


def question_of(trial: FailureTrial, split: str | None) -> whatif.Question | None:
    raw = trial.raw_output if isinstance(trial.raw_output, dict) else {}
    cands = raw.get("candidates")
    if not isinstance(cands, dict):
        return None
    g = trial.case_input
    stored = cands.get("byStrategy")
    others: dict[str, Any] = stored if isinstance(stored, dict) else {}
    by_strategy = {str(name): (tuple(map(str, c.get("ids") or ())), tuple(map(float, c.get("similarities") or ())))
                   for name, c in others.items() if isinstance(c, dict)}
    return whatif.Question(
        case_id=trial.case_id, split=split, expect_refusal=bool(g.get("expectRefusal")),
        relevant_docs=tuple(g.get("relevantDocIds") or ()), must_include=tuple(g.get("mustInclude") or ()),
        must_not_include=tuple(g.get("mustNotInclude") or ()),
        candidate_ids=tuple(map(str, cands.get("ids") or ())),
        similarities=tuple(map(float, cands.get("similarities") or ())),
        by_strategy=by_strategy,
    )


def mock_reader(goldens: dict[str, Golden], options: dict[str, Any]) -> whatif.Reader:
    """The echo mock's correctness on a counterfactual context: its reply is a function of the
    context alone (`prompt.mock_answer`, whatever the golden and `options`), scored by the same
    assertions a run evaluates. A golden's case is the one its run built (`golden_case` remembers)."""
    from ragqual.subjects.rag import answer_correctness, golden_case

    seen: dict[tuple[str, tuple[str, ...]], float | None] = {}  # many settings hand a question the same context
    cases: dict[str, Case] = {}
    replies: dict[tuple[str, ...], str] = {}  # and questions share contexts: the reply reads only the passages

    def read(q: whatif.Question, passages: Sequence[str]) -> float | None:
        given = tuple(passages)
        key = (q.case_id, given)
        if key not in seen:
            golden = goldens[q.case_id]
            case = cases.get(q.case_id) or cases.setdefault(q.case_id, golden_case(golden))
            answer = replies.get(given)
            if answer is None:
                answer = replies[given] = prompt.mock_answer(given)
            seen[key] = answer_correctness(golden, answer, "\n\n".join(passages), case)
        return seen[key]

    return read


def _corpus_for(app: AppContext, opts: CorpusOptions, params: dict[str, Any]) -> CorpusOptions:
    """The run's own chunking wherever the command line does not say otherwise."""
    chunking = params.get("chunking") or {}
    given = {f.name: getattr(opts, f.name) for f in fields(CorpusOptions)}
    for name in ("chunk_tokens", "overlap_tokens", "chars_per_token", "doc_prefix", "query_prefix"):
        if given.get(name) is None and name in chunking:
            given[name] = chunking[name]
    return replace(opts, **given)


def _settings(thresholds: Sequence[float | None] | None, ks: Sequence[int] | None, own: whatif.Setting,
              strategies: Sequence[str] | None = None, own_strategy: str | None = None) -> list[whatif.Setting]:
    """Every combination asked for; a strategy equal to the run's own is the run's own (None)."""
    cuts: list[float | None] = list(thresholds) if thresholds else [own.threshold]
    sizes = list(ks) if ks else [own.context_k]
    kinds: list[str | None] = [None if s == own_strategy else s for s in strategies] if strategies else [None]
    out = list(dict.fromkeys(whatif.Setting(t, k, s) for s in kinds for t in cuts for k in sizes))
    return out if own in out else [own, *out]


def load(app: AppContext, run_id: int, opts: CorpusOptions, trials: Sequence[FailureTrial] | None = None
         ) -> tuple[dict[str, Any], CorpusContext, list[FailureTrial]]:
    """The run's parameters, its corpus and its e2e trials (`trials`: the run's trials, when the
    caller has read them already)."""
    info = run_info(app, run_id)
    if info.kind not in ("generation", "eval"):
        raise InputError(f"run {run_id} is a {info.kind} run: whatif reads a generation run's e2e trials")
    corpus = load_corpus_context(app, _corpus_for(app, opts, info.params))
    if info.corpus_fingerprint and corpus.fingerprint != info.corpus_fingerprint:
        raise InputError(f"run {run_id} was made on corpus fingerprint {info.corpus_fingerprint[:12]}; this corpus "
                         f"and chunking give {corpus.fingerprint[:12]}: whatif needs the run's own corpus texts")
    if trials is None:
        trials = run_failure_trials(app.store(auto_create=False).engine, run_id)
    e2e = [t for t in trials if t.mode == "e2e"]
    if not e2e:
        raise InputError(f"run {run_id} has no e2e trials: whatif recomputes e2e contexts")
    return info.params, corpus, e2e


def run_whatif(app: AppContext, run_id: int, opts: CorpusOptions, thresholds: Sequence[float | None] | None,
               ks: Sequence[int] | None, strategies: Sequence[str] | None = None,
               trials: Sequence[FailureTrial] | None = None) -> list[VariantWhatif]:
    params, corpus, trials = load(app, run_id, opts, trials)
    return whatif_from(params, corpus, trials, thresholds, ks, strategies)


NO_STRATEGY_LISTS = ("its e2e trials stored only the run's own strategy's candidates (a run made before strategy "
                     "counterfactuals existed): run the generation tier again to compare strategies")


def _recomputable(questions: Sequence[whatif.Question], settings: Sequence[whatif.Setting]
                  ) -> tuple[list[whatif.Setting], list[str]]:
    """(the settings every question's stored candidates can recompute, why the others cannot)."""
    kept, missing = [], []
    for s in settings:
        if s.strategy is None or all(s.strategy in q.by_strategy for q in questions):
            kept.append(s)
        else:
            missing.append(s.strategy)
    names = list(dict.fromkeys(missing))
    return kept, [f"strateg{'ies' if len(names) > 1 else 'y'} {', '.join(names)}: {NO_STRATEGY_LISTS}"] if names else []


@dataclass(frozen=True)
class _Measured:
    """One variant's counterfactual questions, its reader and the settings its stored candidates
    can recompute (what `whatif_from` and `advice_from` both start from)."""

    variant: str
    questions: list[whatif.Question]
    reader: whatif.Reader | None
    settings: list[whatif.Setting]
    unavailable: list[str]
    split: str | None  # SELECT_SPLIT when the goldens have splits

    @property
    def objective(self) -> str:
        return "mock pass" if self.reader else "reader ceiling"

    @property
    def chosen_on(self) -> str:
        return SELECT_SPLIT if self.split else "all questions"


def _measured(params: dict[str, Any], goldens: dict[str, Golden], texts: Mapping[str, str],
              trials: Sequence[FailureTrial], thresholds: Sequence[float | None] | None, ks: Sequence[int] | None,
              strategies: Sequence[str] | None, own: whatif.Setting) -> list[_Measured]:
    """Each variant's `_Measured`, in the trials' order; InputError when a variant's candidates
    cannot be recomputed (none stored, no setting asked for, chunks this corpus lacks)."""
    out = []
    for variant in dict.fromkeys(t.variant for t in trials):
        questions = _questions(trials, variant, goldens)
        reader = mock_reader(goldens, params.get("options") or {}) if variant == "mock" else None
        settings, unavailable = _recomputable(questions, _settings(thresholds, ks, own, strategies,
                                                                   (params.get("retrieval") or {}).get("strategy")))
        if settings == [own] and unavailable:
            raise InputError(f"no setting asked for can be recomputed from the stored candidates: {'; '.join(unavailable)}")
        missing = unknown_chunks(questions, settings, texts)
        if missing:
            raise InputError(f"the stored candidates name {len(missing)} chunk(s) this corpus does not have "
                             f"(first: {missing[0]})")
        split = SELECT_SPLIT if any(q.split == SELECT_SPLIT for q in questions) else None
        out.append(_Measured(variant, questions, reader, settings, unavailable, split))
    return out


def own_setting(params: dict[str, Any]) -> whatif.Setting:
    """The cut-off and context size the run retrieved with."""
    retrieval = params.get("retrieval") or {}
    return whatif.Setting(retrieval.get("threshold"), int(retrieval.get("context_k") or 5))


def whatif_from(params: dict[str, Any], corpus: CorpusContext, trials: Sequence[FailureTrial],
                thresholds: Sequence[float | None] | None, ks: Sequence[int] | None,
                strategies: Sequence[str] | None = None) -> list[VariantWhatif]:
    own = own_setting(params)
    own_strategy = (params.get("retrieval") or {}).get("strategy")
    goldens = {g.id: g for g in corpus.goldens}
    texts = {c.chunk_id: c.text for c in corpus.chunks}
    out = []
    for m in _measured(params, goldens, texts, trials, thresholds, ks, strategies, own):
        outcomes = whatif.evaluate(m.questions, m.settings, own, texts, textmatch.found, m.reader)
        rows = whatif.rows_for(m.questions, outcomes, m.split)
        report_rows = whatif.rows_for(m.questions, outcomes, REPORT_SPLIT) if m.split else None
        out.append(VariantWhatif(m.variant, m.objective, own, len(m.questions), m.chosen_on, rows, report_rows,
                                 whatif.advice(rows, own, m.objective, m.chosen_on, report_rows),
                                 whatif.overlap(m.questions), m.unavailable, own_strategy,
                                 rewritten_questions(trials, m.variant, goldens)))
    return out


@dataclass(frozen=True)
class VariantAdvice:
    """What the decomposition prints of a variant's `VariantWhatif`: its advice, or why there is none."""

    variant: str
    objective: str
    chosen_on: str
    advice: str | None
    overlap: whatif.Overlap
    unavailable: list[str]

    def text(self) -> str:
        tried = "cut-off or context size" if self.unavailable else "cut-off, context size or strategy"
        return "measured on this run: " + (self.advice or whatif.no_cut_off(self.overlap, self.objective,
                                                                            self.chosen_on, tried))


def advice_from(params: dict[str, Any], corpus: CorpusContext, trials: Sequence[FailureTrial],
                thresholds: Sequence[float | None] | None, ks: Sequence[int] | None,
                strategies: Sequence[str] | None = None) -> list[VariantAdvice]:
    """The advice, overlap and unavailable settings of `whatif_from` with the same arguments (and
    the same InputError), evaluating only the outcomes the advice reads (`whatif.advice_rows`)."""
    own = own_setting(params)
    goldens = {g.id: g for g in corpus.goldens}
    texts = {c.chunk_id: c.text for c in corpus.chunks}
    out = []
    for m in _measured(params, goldens, texts, trials, thresholds, ks, strategies, own):
        rows, report_rows = whatif.advice_rows(m.questions, m.settings, own, texts, textmatch.found, m.reader,
                                               m.split, REPORT_SPLIT)
        out.append(VariantAdvice(m.variant, m.objective, m.chosen_on,
                                 whatif.advice(rows, own, m.objective, m.chosen_on, report_rows),
                                 whatif.overlap(m.questions), m.unavailable))
    return out


def unknown_chunks(questions: Sequence[whatif.Question], settings: Sequence[whatif.Setting],
                   texts: Mapping[str, str]) -> list[str]:
    """The chunk ids, sorted, that the candidates `settings` cut name and `texts` lacks (each
    strategy's candidate lists read once, however many settings cut them)."""
    strategies = list(dict.fromkeys(s.strategy for s in settings))
    return sorted({i for q in questions for name in strategies for i in q.candidates(name)[0] if i not in texts})


def rewritten_questions(trials: Sequence[FailureTrial], variant: str, goldens: Mapping[str, Golden]) -> int:
    """How many of `variant`'s questions e2e retrieval searched by another text than the golden's
    query (its last message): the model's rewrite of a multi-turn conversation."""
    searched: dict[str, bool] = {}
    for t in trials:
        raw = t.raw_output if isinstance(t.raw_output, dict) else {}
        query = raw.get("retrievalQuery")
        if t.variant == variant and t.case_id in goldens and isinstance(query, str):
            searched[t.case_id] = searched.get(t.case_id, False) or query != goldens[t.case_id].query
    return sum(searched.values())


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
                    causes: Mapping[str, CauseCount] | None,
                    trials: Sequence[FailureTrial] | None = None) -> dict[str, str]:
    """Per variant whose oracle - e2e gap has out-of-corpus questions answered from a non-empty
    context: the similarity cut-off that measurably helps on this run, or why none does (with the
    overlap of similarities). Nothing for a run that stored no candidates. `opts` may be the
    corpus already open (`ragqual eval`); `trials`, the run's trials when the caller read them
    for the causes (`run_failure_trials`)."""
    wanted = {v for v, c in (causes or {}).items() if ADVICE_CAUSES & set(c.by_cause)}
    if not wanted:
        return {}
    cuts: list[float | None] = [None, *ADVICE_THRESHOLDS]
    try:
        if isinstance(opts, CorpusContext):
            params = run_info(app, run_id).params
            read = run_failure_trials(app.store().engine, run_id) if trials is None else trials
            corpus, e2e = opts, [t for t in read if t.mode == "e2e"]
        else:
            params, corpus, e2e = load(app, run_id, opts, trials)
        results = advice_from(params, corpus, e2e, cuts, None, STRATEGIES)
    except InputError:
        return {}
    return {v.variant: v.text() for v in results if v.variant in wanted}


@dataclass(frozen=True)
class PageWhatif:
    """What a run page draws of `whatif`: the curves over `ADVICE_THRESHOLDS`, or why there are none."""

    results: list[VariantWhatif]
    skipped: str | None  # the reason no curve is drawn (no candidates stored, another corpus...)


def page_whatif(app: AppContext, run_id: int, opts: CorpusOptions | None = None) -> PageWhatif:
    """The whatif curve of a generation run, computed when its page is built from the candidates its
    e2e trials stored; skipped, with the reason, when there are none or the corpus is another."""
    try:
        return PageWhatif(run_whatif(app, run_id, opts or CorpusOptions(), ADVICE_THRESHOLDS, None), None)
    except InputError as e:
        return PageWhatif([], str(e))


# -- retrieval runs ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class RetrievalWhatif:
    """`whatif` on a retrieval run: each stored strategy's rankings recomputed per setting."""

    run_id: int
    own: dict[str, whatif.Setting]  # per strategy (the run's configuration name): its own setting
    kinds: dict[str, str]  # configuration name -> retrieval strategy (dense, bm25, hybrid)
    questions: int
    chosen_on: str
    rows: list[whatif.RankedRow]  # on the selection split (all questions without splits)
    report_rows: list[whatif.RankedRow] | None
    advice: str | None
    unavailable: list[str]  # strategies and settings the stored rankings cannot recompute, and why
    last_turn: int = 0
    """Multi-turn questions, which the retrieval tier searches by their last message as written (it
    has no model to rewrite the conversation; e2e trials search the rewrite): a generation run's
    contextRecall of the same questions can differ (docs/whatif.md)."""


SCORE_MARGIN = 2e-6
"""How far a dense ranking's stored score (the index's cosine, rounded to 6 places) may be from the
similarity the pipeline cut on (numpy's, rounded alike): measured up to 1e-6 on the bundled corpus."""


def _dense_twin(name: str, configs: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The run's dense configuration searching the same query text as `name` (same expansion and
    glossary) at least as deep: where `name`'s candidates' dense similarities are looked up."""
    mine = configs[name]
    same = lambda c: (c.get("expand_acronyms"), c.get("glossary")) == (mine.get("expand_acronyms"), mine.get("glossary"))  # noqa: E731
    twins = [n for n, c in configs.items() if c.get("strategy") == "dense" and same(c)
             and int(c.get("candidate_k") or 0) >= int(mine.get("candidate_k") or 0)]
    return (name if name in twins else None) or (twins[0] if twins else None)


def ranked_questions(name: str, configs: Mapping[str, Mapping[str, Any]], hits: Sequence[RetrievalRow],
                     goldens: Mapping[str, Golden]) -> list[whatif.RankedQuestion]:
    """`name`'s stored rankings as counterfactual questions. A dense ranking's scores are its dense
    similarities; another strategy's candidates take theirs from the run's dense ranking of the
    same question (`_dense_twin`), unknown (None) where that ranking does not hold them, bounded by
    its lowest similarity. A similarity within SCORE_MARGIN of a cut-off leaves that cut-off
    undecided rather than guessed."""
    by: dict[tuple[str, str], list[RetrievalRow]] = {}
    for h in hits:
        by.setdefault((h.strategy, h.query_id), []).append(h)
    twin = _dense_twin(name, configs)
    out = []
    for (strategy, qid), rows in by.items():
        if strategy != name:
            continue
        if qid not in goldens:
            raise InputError(f"the run ranked question {qid!r}, which these goldens do not have: whatif needs the run's goldens")
        rows = sorted(rows, key=lambda r: r.rank)
        dense = sorted(by.get((twin, qid), []), key=lambda r: r.rank) if twin else []
        sims = {r.chunk_id: float(r.score) for r in dense}
        g = goldens[qid]
        out.append(whatif.RankedQuestion(
            case_id=qid, split=g.split, expect_refusal=g.expect_refusal, grades=dict(g.grades),
            doc_ids=tuple(r.doc_id for r in rows), similarities=tuple(sims.get(r.chunk_id) for r in rows),
            floor=min(sims.values()) if sims else None, margin=SCORE_MARGIN))
    return sorted(out, key=lambda q: q.case_id)


def run_retrieval_whatif(app: AppContext, run_id: int, opts: CorpusOptions, thresholds: Sequence[float] | None,
                         ks: Sequence[int] | None, strategies: Sequence[str] | None = None) -> RetrievalWhatif:
    """Other cut-offs, context sizes and strategies over a retrieval run's stored rankings: no search."""
    info = run_info(app, run_id)
    configs: dict[str, dict[str, Any]] = info.params.get("configs") or {}
    hits = retrieval_hits(app.store(auto_create=False).engine, run_id)
    if not configs or not hits:
        raise InputError(f"run {run_id} stored no rankings: whatif reads a retrieval run's rankings")
    ranked = {h.query_id for h in hits}
    chosen = [g for g in load_corpus_context(app, _corpus_for(app, opts, info.params), with_corpus=False).goldens
              if g.id in ranked]
    if info.dataset_hash and goldens_hash(chosen) != info.dataset_hash:
        raise InputError(f"run {run_id} was made on other goldens (dataset hash {info.dataset_hash[:12]}; these give "
                         f"{goldens_hash(chosen)[:12]}): whatif needs the run's own goldens")
    goldens = {g.id: g for g in chosen}
    return retrieval_whatif_from(run_id, configs, hits, goldens, thresholds, ks, strategies)


def retrieval_whatif_from(run_id: int, configs: Mapping[str, dict[str, Any]], hits: Sequence[RetrievalRow],
                          goldens: Mapping[str, Golden], thresholds: Sequence[float] | None, ks: Sequence[int] | None,
                          strategies: Sequence[str] | None = None) -> RetrievalWhatif:
    kinds = {name: str(c.get("strategy")) for name, c in configs.items()}
    unavailable = [f"strategy {s}: this run did not rank it (run `ragqual retrieval --strategy {s}`)"
                   for s in strategies or () if s not in kinds.values()]
    names = [n for n in configs if not strategies or kinds[n] in strategies]
    if not names:
        raise InputError(f"run {run_id}: no strategy asked for can be recomputed: {'; '.join(unavailable)}")
    own = {n: whatif.Setting(configs[n].get("threshold"), int(configs[n].get("context_k") or 5)) for n in names}
    questions = {n: ranked_questions(n, configs, hits, goldens) for n in names}
    split = SELECT_SPLIT if any(q.split == SELECT_SPLIT for qs in questions.values() for q in qs) else None
    rows: list[whatif.RankedRow] = []
    report_rows: list[whatif.RankedRow] | None = [] if split else None
    for n in names:
        settings = _settings(thresholds, ks, own[n])
        got, undecided = whatif.ranked_rows(n, questions[n], settings, own[n], split)
        rows += got
        if report_rows is not None:
            report_rows += whatif.ranked_rows(n, questions[n], settings, own[n], REPORT_SPLIT)[0]
        unavailable += [f"{n} at {s.label()}: a candidate's dense similarity is not stored, or lies within "
                        f"{SCORE_MARGIN:g} of the cut-off (run the dense strategy beside it to record them)"
                        for s in undecided]
    count = max((len(qs) for qs in questions.values()), default=0)
    chosen_on = SELECT_SPLIT if split else "all questions"
    last_turn = sum(1 for g in goldens.values() if g.turns)
    return RetrievalWhatif(run_id, own, {n: kinds[n] for n in names}, count, chosen_on, rows, report_rows,
                           whatif.ranked_advice(rows, own, chosen_on, report_rows), unavailable, last_turn)
