"""Counterfactual contexts: what another similarity cut-off or context size would have handed
the reader, recomputed from the candidate list each e2e trial stored (no new search).

The context rule lives here once (`context_indices`); the retrieval pipeline imports it, so a
counterfactual is built exactly as a run would have built it. Pure: no I/O. The reader that turns
a context into a verdict (the echo mock) is passed in by the caller.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean, median

from ragqual.core import metrics
from ragqual.core.diagnosis import Evidence, Matcher, ceiling_from, doc_of, document_recall, fact_coverage
from ragqual.errors import InputError


def context_indices(similarities: Sequence[float], threshold: float | None, context_k: int) -> list[int]:
    """Positions (in rank order) of the candidates that reach the prompt: the first `context_k`
    whose dense similarity reaches the threshold (all candidates count when there is none)."""
    if threshold is None:
        return list(range(min(context_k, len(similarities))))
    return [i for i, sim in enumerate(similarities) if sim >= threshold][:context_k]


@dataclass(frozen=True)
class Setting:
    """A similarity cut-off and context size, and the retrieval strategy whose candidates they cut
    (None: the run's own)."""

    threshold: float | None
    context_k: int
    strategy: str | None = None

    def label(self) -> str:
        cut = "-" if self.threshold is None else f"{self.threshold:.2f}"
        text = f"threshold {cut}, context-k {self.context_k}"
        return text if self.strategy is None else f"{text}, strategy {self.strategy}"


@dataclass(frozen=True)
class Question:
    """One e2e trial as a counterfactual reads it."""

    case_id: str
    split: str | None
    expect_refusal: bool
    relevant_docs: tuple[str, ...]
    must_include: tuple[str, ...]
    must_not_include: tuple[str, ...]
    candidate_ids: tuple[str, ...]
    similarities: tuple[float, ...]
    by_strategy: Mapping[str, tuple[tuple[str, ...], tuple[float, ...]]] = field(default_factory=dict)
    """Every other strategy's candidate list (ids, dense similarities) for the same query, when the
    trial stored them: what a strategy counterfactual reads."""

    def candidates(self, strategy: str | None) -> tuple[tuple[str, ...], tuple[float, ...]]:
        """(ids, similarities) of `strategy`'s candidates (None: the run's own)."""
        if strategy is None:
            return self.candidate_ids, self.similarities
        if strategy not in self.by_strategy:
            raise InputError(f"question {self.case_id}: no stored candidates of strategy {strategy!r}")
        return self.by_strategy[strategy]


Reader = Callable[[Question, Sequence[str]], float | None]  # (question, passages) -> correctness


@dataclass(frozen=True)
class Outcome:
    """One question under one setting."""

    empty: bool
    lost_relevant: bool  # fewer relevant documents in the context than at the run's own setting
    context_recall: float | None
    fact_coverage: float | None
    reader_ceiling: float
    reader: float | None


@dataclass(frozen=True)
class Row:
    """The aggregate of one setting over a set of questions; None where no question qualifies."""

    setting: Setting
    questions: int
    refusals: int
    refusals_empty: float | None  # share of out-of-corpus questions whose context would be empty
    answerable: int
    answerable_lost: float | None  # share of answerable questions that would lose a relevant document
    context_recall: float | None
    fact_coverage: float | None
    reader_ceiling: float | None
    reader: float | None  # the reader's pass share (the mock's correctness), when one is given

    def objective(self) -> float | None:
        """What a setting is chosen on: the reader's pass share when there is a reader, else the
        reader ceiling's."""
        return self.reader if self.reader is not None else self.reader_ceiling


def evidence(q: Question, ids: Sequence[str], context: str) -> Evidence:
    return Evidence(q.expect_refusal, q.relevant_docs, tuple(ids), context, "", q.must_include, q.must_not_include)


def context_ids(q: Question, setting: Setting) -> tuple[str, ...]:
    """The chunk ids `setting` hands question `q`, in rank order."""
    cand_ids, sims = q.candidates(setting.strategy)
    return tuple(cand_ids[i] for i in context_indices(sims, setting.threshold, setting.context_k))


def outcome(q: Question, setting: Setting, own: Setting, texts: Mapping[str, str], matches: Matcher,
            reader: Reader | None = None) -> Outcome:
    return outcome_of(q, list(context_ids(q, setting)), own, texts, matches, reader)


def outcome_of(q: Question, ids: Sequence[str], own: Setting, texts: Mapping[str, str], matches: Matcher,
               reader: Reader | None = None) -> Outcome:
    """One question with the context `ids` (what `outcome` reads once it has cut the candidates)."""
    return _outcome(q, ids, own_docs(q, own), texts, matches, reader)


def own_docs(q: Question, own: Setting) -> list[str]:
    """The documents of the run's own context (its own candidates cut at its own setting)."""
    return [doc_of(q.candidate_ids[i]) for i in context_indices(q.similarities, own.threshold, own.context_k)]


def _outcome(q: Question, ids: Sequence[str], own: Sequence[str], texts: Mapping[str, str], matches: Matcher,
             reader: Reader | None) -> Outcome:
    """`outcome_of` given the documents of the run's own context (the same for every setting)."""
    passages = [texts[i] for i in ids]
    e = evidence(q, ids, "\n\n".join(passages))
    coverage = fact_coverage(e, matches)  # read once: the reader ceiling is decided by it too
    return Outcome(
        empty=not ids, lost_relevant=loses_relevant(q.relevant_docs, own, [doc_of(i) for i in ids]),
        context_recall=document_recall(e), fact_coverage=coverage,
        reader_ceiling=float(ceiling_from(e, coverage)), reader=None if reader is None else reader(q, passages),
    )


def loses_relevant(relevant: Iterable[str], own_docs: Iterable[str], docs: Iterable[str]) -> bool:
    """A counterfactual context loses a relevant document when it holds fewer of them than the
    run's own context did (the one rule for e2e and retrieval counterfactuals)."""
    wanted = set(relevant)
    return len(wanted & set(docs)) < len(wanted & set(own_docs))


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return fmean(kept) if kept else None


def aggregate(setting: Setting, questions: Sequence[Question], outcomes: Sequence[Outcome]) -> Row:
    refusals = [o for q, o in zip(questions, outcomes) if q.expect_refusal]
    answerable = [o for q, o in zip(questions, outcomes) if not q.expect_refusal]
    return Row(
        setting, len(questions),
        len(refusals), _mean(float(o.empty) for o in refusals),
        len(answerable), _mean(float(o.lost_relevant) for o in answerable),
        _mean(o.context_recall for o in answerable), _mean(o.fact_coverage for o in answerable),
        _mean(o.reader_ceiling for o in outcomes), _mean(o.reader for o in outcomes),
    )


def cut_key(ascending: Sequence[float], threshold: float | None, context_k: int) -> tuple[int, int] | None:
    """What decides a context of `context_indices` over a candidate list whose similarities,
    sorted and without NaN, are `ascending` (`_ascending`): (how many candidates reach the
    threshold, context_k). A cut-off keeps the candidates whose similarity reaches it, and ties
    fall on the same side, so two cut-offs that keep as many candidates keep the same ones. None
    for a NaN threshold (it keeps nothing, and has no place in the order)."""
    if threshold is None:
        return len(ascending), context_k
    if threshold != threshold:
        return None
    return len(ascending) - bisect_left(ascending, threshold), context_k


def _ascending(sims: Sequence[float]) -> list[float] | None:
    """`sims` sorted, or None when one is NaN (it sorts anywhere, so no count decides the cut)."""
    return None if any(s != s for s in sims) else sorted(sims)


def evaluate(questions: Sequence[Question], settings: Sequence[Setting], own: Setting, texts: Mapping[str, str],
             matches: Matcher, reader: Reader | None = None) -> dict[Setting, list[Outcome]]:
    """Every question's outcome under every setting. The settings that hand a question the same
    context (most cut-offs do: the similarities fall in steps) share one outcome, computed once;
    a context is cut once per number of candidates its cut-off keeps (`cut_key`)."""
    out: dict[Setting, list[Outcome]] = {s: [] for s in settings}
    plan = [(s.strategy, s.threshold, s.context_k, s, out[s]) for s in settings]
    strategies = list(dict.fromkeys(s.strategy for s in settings))
    for name in strategies:  # a strategy a question did not store is refused first, as setting by setting
        for q in questions:
            q.candidates(name)
    for q in questions:
        docs = own_docs(q, own)
        seen: dict[tuple[str, ...], Outcome] = {}
        cuts: dict[tuple[str | None, int, int], tuple[str, ...]] = {}
        ordered = {name: _ascending(q.candidates(name)[1]) for name in strategies}
        for strategy, threshold, context_k, s, row in plan:
            sims = ordered[strategy]
            key = None if sims is None else cut_key(sims, threshold, context_k)
            cut = None if key is None else cuts.get((strategy, *key))
            if cut is None:
                cut = context_ids(q, s)
                if key is not None:
                    cuts[(strategy, *key)] = cut
            got = seen.get(cut)
            if got is None:
                got = seen[cut] = _outcome(q, cut, docs, texts, matches, reader)
            row.append(got)
    return out


def rows_for(questions: Sequence[Question], outcomes: Mapping[Setting, Sequence[Outcome]],
             split: str | None = None) -> list[Row]:
    """One row per setting over the questions of `split` (all questions when None)."""
    keep = [i for i, q in enumerate(questions) if split is None or q.split == split]
    chosen = [questions[i] for i in keep]
    return [aggregate(s, chosen, [outs[i] for i in keep]) for s, outs in outcomes.items()]


def advice_rows(questions: Sequence[Question], settings: Sequence[Setting], own: Setting, texts: Mapping[str, str],
                matches: Matcher, reader: Reader | None, split: str | None, held_out_split: str
                ) -> tuple[list[Row], list[Row] | None]:
    """What `advice` reads of the rows `ragqual whatif` prints: every setting's row on `split`
    (all questions when None), and, when `split` is given, the `held_out_split` rows of the
    run's own setting and of the best one on `split` (`best`), the only two `advice` looks up.
    Equal to those rows of `rows_for(questions, evaluate(questions, settings, ...), ...)`, with
    less evaluated: the held-out questions under those two settings alone, and the questions of
    neither split not at all."""
    chosen = [q for q in questions if split is None or q.split == split]
    rows = rows_for(chosen, evaluate(chosen, settings, own, texts, matches, reader))
    if split is None:
        return rows, None
    top = best(rows, own)
    wanted = list(dict.fromkeys(s for s in (own, *([] if top is None else [top.setting])) if s in settings))
    held = [q for q in questions if q.split == held_out_split]
    return rows, rows_for(held, evaluate(held, wanted, own, texts, matches, reader))


def best(rows: Sequence[Row], own: Setting) -> Row | None:
    """The setting with the highest objective; the run's own setting wins a tie (no change is
    advised for nothing), then the earlier row."""
    scored = [r for r in rows if r.objective() is not None]
    if not scored:
        return None
    top = max(r.objective() or 0.0 for r in scored)
    tied = [r for r in scored if r.objective() == top]
    preferred = [r for r in tied if r.setting == own] or [
        r for r in tied if r.setting.context_k == own.context_k and r.setting.strategy == own.strategy]
    return (preferred or tied)[0]


@dataclass(frozen=True)
class Overlap:
    """How far out-of-corpus questions' best similarity overlaps answerable questions' best
    relevant similarity: when it does, no single cut-off separates them."""

    refusal_top: tuple[float, float, float] | None  # min, median, max
    relevant_top: tuple[float, float, float] | None
    refusals_above: float | None  # share of refusal questions whose top similarity reaches the lowest relevant one


def _spread(values: Sequence[float]) -> tuple[float, float, float] | None:
    return (min(values), median(values), max(values)) if values else None


def overlap(questions: Sequence[Question]) -> Overlap:
    refusal = [q.similarities[0] for q in questions if q.expect_refusal and q.similarities]
    relevant = []
    for q in questions:
        relevant_docs = set(q.relevant_docs)
        sims = [s for i, s in zip(q.candidate_ids, q.similarities) if doc_of(i) in relevant_docs]
        if not q.expect_refusal and sims:
            relevant.append(max(sims))
    above = None
    if refusal and relevant:
        above = sum(1 for s in refusal if s >= min(relevant)) / len(refusal)
    return Overlap(_spread(refusal), _spread(relevant), above)


def advice(rows: Sequence[Row], own: Setting, objective_name: str, chosen_on: str,
           held_out: Sequence[Row] | None = None) -> str | None:
    """One sentence naming a setting, only when it raises the objective on these questions
    (chosen on `chosen_on`); None when the run's own setting is already the best measured.
    `held_out` (the test split's rows) adds what the chosen setting gives on questions it was
    not chosen on."""
    own_row = next((r for r in rows if r.setting == own), None)
    top = best(rows, own)
    if own_row is None or top is None or top.setting == own:
        return None
    before, after = own_row.objective(), top.objective()
    if before is None or after is None or after <= before:
        return None
    parts = [f"{top.setting.label()} would raise {objective_name} from {before:.3f} to {after:.3f} on {chosen_on}"]
    test_own = next((r for r in held_out or () if r.setting == own), None)
    test_top = next((r for r in held_out or () if r.setting == top.setting), None)
    if test_own and test_top and test_own.objective() is not None and test_top.objective() is not None:
        parts[0] += f" ({test_own.objective():.3f} -> {test_top.objective():.3f} on test)"
    if top.refusals_empty is not None and own_row.refusals_empty is not None:
        parts.append(f"out-of-corpus questions declined {own_row.refusals_empty:.3f} -> {top.refusals_empty:.3f}")
    if top.answerable_lost is not None:
        parts.append(f"answerable questions losing a relevant document {top.answerable_lost:.3f}")
    return "; ".join(parts) + " (measured by `ragqual whatif` from the stored candidates)."


def no_cut_off(o: Overlap, objective_name: str, chosen_on: str, tried: str = "cut-off or context size") -> str:
    """Why no setting is named: the similarities overlap."""
    text = f"no {tried} tried raises {objective_name} on {chosen_on}"
    if o.refusal_top and o.relevant_top and o.refusals_above is not None:
        text += (f": out-of-corpus questions' top similarity spans {o.refusal_top[0]:.3f}-{o.refusal_top[2]:.3f} "
                 f"(median {o.refusal_top[1]:.3f}), answerable questions' best relevant chunk "
                 f"{o.relevant_top[0]:.3f}-{o.relevant_top[2]:.3f} (median {o.relevant_top[1]:.3f}); "
                 f"{o.refusals_above:.3f} of the out-of-corpus questions reach the lowest relevant similarity")
    return text + "."


def parse_range(text: str) -> list[float]:
    """`0.3:0.8:0.05` (start:stop:step, stop included) or `0.3,0.5`: the thresholds to try."""
    try:
        if ":" in text:
            start, stop, step = (float(p) for p in text.split(":"))
            if step <= 0 or stop < start:
                raise ValueError
            count = int(round((stop - start) / step)) + 1
            return [round(start + i * step, 10) for i in range(count)]
        return [float(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise InputError(f"--threshold {text!r}: use start:stop:step (0.3:0.8:0.05) or a list (0.3,0.5)") from None


def parse_ks(text: str) -> list[int]:
    try:
        ks = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        ks = []
    if not ks or any(k < 1 for k in ks):
        raise InputError(f"--context-k {text!r}: use whole numbers of 1 or more (1,3,5,8)")
    return ks


# -- retrieval runs: the same counterfactuals from a run's stored rankings ------------------------

@dataclass(frozen=True)
class RankedQuestion:
    """One question's stored ranking of one strategy, as a retrieval counterfactual reads it.

    `similarities` are the candidates' dense similarities, None where the run did not record one
    (a BM25-only candidate outside the dense ranking); `floor` bounds those from above (the lowest
    similarity of the run's dense ranking for the same query: a chunk outside it is no closer),
    None when nothing bounds them. `margin` is how far a known similarity may be from the one the
    run cut on (a dense ranking stores the index's score, which can differ from the pipeline's
    similarity in the last rounded digit): a similarity that close to the cut-off decides nothing."""

    case_id: str
    split: str | None
    expect_refusal: bool
    grades: Mapping[str, int]
    doc_ids: tuple[str, ...]
    similarities: tuple[float | None, ...]
    floor: float | None = None
    margin: float = 0.0


def known_context(q: RankedQuestion, threshold: float | None, context_k: int) -> list[int] | None:
    """`context_indices` over a ranking whose similarities may be partly unknown: None when an
    unknown one could decide what reaches the context (it might reach the threshold)."""
    if threshold is None:
        return list(range(min(context_k, len(q.doc_ids))))
    kept: list[int] = []
    for i, sim in enumerate(q.similarities):
        if len(kept) == context_k:
            break
        if sim is None:
            if q.floor is None or q.floor + q.margin >= threshold:
                return None
            continue  # below the dense ranking's lowest similarity, so below the threshold
        if abs(sim - threshold) <= q.margin and q.margin > 0:
            return None
        if sim >= threshold:
            kept.append(i)
    return kept


@dataclass(frozen=True)
class RankedOutcome:
    empty: bool
    lost_relevant: bool
    recall_at_k: float | None  # recall at the setting's context-k over the ranking (no cut-off)
    context_recall: float | None  # recall of the documents in the context, as the retrieval tier stores it


def ranked_outcome(q: RankedQuestion, setting: Setting, own: Setting) -> RankedOutcome | None:
    """One question under one setting, computed as `pipeline.retrieval_tier.query_metrics` does;
    None when the stored similarities cannot decide the context."""
    keep, own_keep = known_context(q, setting.threshold, setting.context_k), known_context(q, own.threshold, own.context_k)
    if keep is None or own_keep is None:
        return None
    docs = [q.doc_ids[i] for i in keep]
    if q.expect_refusal:
        return RankedOutcome(not keep, False, None, None)
    judgements = dict(q.grades)
    return RankedOutcome(
        empty=not keep,
        lost_relevant=loses_relevant((d for d, g in judgements.items() if g > 0), [q.doc_ids[i] for i in own_keep], docs),
        recall_at_k=metrics.recall_at_k(metrics.collapse_to_documents(q.doc_ids), judgements, setting.context_k),
        context_recall=metrics.recall_at_k(metrics.collapse_to_documents(docs), judgements, setting.context_k),
    )


@dataclass(frozen=True)
class RankedRow:
    """One strategy under one setting over a set of questions."""

    strategy: str
    setting: Setting
    questions: int
    refusals: int
    refusals_empty: float | None
    answerable: int
    answerable_lost: float | None
    recall_at_k: float | None
    context_recall: float | None

    def objective(self) -> float | None:
        """What a retrieval setting is chosen on: the recall of what reaches the context."""
        return self.context_recall


def ranked_rows(strategy: str, questions: Sequence[RankedQuestion], settings: Sequence[Setting], own: Setting,
                split: str | None = None) -> tuple[list[RankedRow], list[Setting]]:
    """(one row per setting the stored rankings decide, the settings they cannot) over the
    questions of `split` (all when None)."""
    chosen = [q for q in questions if split is None or q.split == split]
    rows, undecided = [], []
    for s in settings:
        outs = [ranked_outcome(q, s, own) for q in chosen]
        if any(o is None for o in outs):
            undecided.append(s)
            continue
        done = [o for o in outs if o is not None]
        refusals = [o for q, o in zip(chosen, done) if q.expect_refusal]
        answerable = [o for q, o in zip(chosen, done) if not q.expect_refusal]
        rows.append(RankedRow(strategy, s, len(chosen), len(refusals), _mean(float(o.empty) for o in refusals),
                              len(answerable), _mean(float(o.lost_relevant) for o in answerable),
                              _mean(o.recall_at_k for o in answerable), _mean(o.context_recall for o in answerable)))
    return rows, undecided


def _same_row(rows: Sequence[RankedRow] | None, like: RankedRow) -> RankedRow | None:
    return next((r for r in rows or () if r.strategy == like.strategy and r.setting == like.setting), None)


def ranked_advice(rows: Sequence[RankedRow], own: Mapping[str, Setting], chosen_on: str,
                  held_out: Sequence[RankedRow] | None = None) -> str | None:
    """One sentence naming a strategy and setting, only when its contextRecall is above every
    strategy's own setting on `chosen_on` (the run's best strategy as run); None otherwise."""
    owned = [r for r in rows if r.setting == own.get(r.strategy) and r.objective() is not None]
    scored = [r for r in rows if r.objective() is not None]
    if not owned or not scored:
        return None
    base = max(owned, key=lambda r: r.objective() or 0.0)
    top = max(scored, key=lambda r: r.objective() or 0.0)
    before, after = base.objective(), top.objective()
    if before is None or after is None or after <= before:
        return None
    text = (f"{top.strategy} at {top.setting.label()} would raise contextRecall from {before:.3f} "
            f"({base.strategy} as run) to {after:.3f} on {chosen_on}")
    t_base, t_top = _same_row(held_out, base), _same_row(held_out, top)
    if t_base and t_top and t_base.objective() is not None and t_top.objective() is not None:
        text += f" ({t_base.objective():.3f} -> {t_top.objective():.3f} on test)"
    if top.refusals_empty is not None and base.refusals_empty is not None:
        text += f"; out-of-corpus questions with an empty context {base.refusals_empty:.3f} -> {top.refusals_empty:.3f}"
    return text + " (measured by `ragqual whatif` from the stored rankings)."


def parse_strategies(text: str, known: Sequence[str]) -> list[str]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        raise InputError(f"--strategy {text!r}: use one or more of {', '.join(known)}, comma-separated")
    return list(dict.fromkeys(names))
