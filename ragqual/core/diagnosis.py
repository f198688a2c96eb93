"""Why an answer failed, from what the trial stored: the measured causes behind the decomposition.

One failing trial gets one cause, the first that holds in this order:

    answered-out-of-corpus   an out-of-corpus question was answered, and the context was not
                             empty (retrieval handed the model something to answer from)
    missed-document          a relevant document of the golden is not in the injected context
                             (document recall below 1)
    near-miss                the answer matches a mustNotInclude pattern that the injected
                             context also contains, and a document that is not relevant ranks
                             above every relevant one (the wrong document outranked the right)
    reader-confusion         the same repeated pattern, but a relevant document ranks first and
                             every mustInclude fact is in the context: retrieval did its part, the
                             reader (for the mock: its echo of every chunk) picked the twin's value
    fact-not-in-context      every relevant document was retrieved, but a mustInclude fact is not
                             in the injected chunks (chunk-level coverage below 1: chunking or
                             context-k, not document retrieval)
    model                    the expected facts were in the context and the answer missed them

Pure: no I/O. The inputs are what a trial row holds (its context, answer and injected ids) and
the golden's expectations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CAUSES = ("answered-out-of-corpus", "missed-document", "near-miss", "reader-confusion", "fact-not-in-context",
          "model")
RETRIEVAL_CAUSES = frozenset({"missed-document"})
CONTEXT_CAUSES = frozenset({"answered-out-of-corpus", "near-miss", "fact-not-in-context"})

Matcher = Callable[[str, str], bool]  # (pattern, text) -> matched; a timeout counts as no match


@dataclass(frozen=True)
class Evidence:
    """One trial as the diagnosis reads it."""

    expect_refusal: bool
    relevant_docs: tuple[str, ...]
    injected: tuple[str, ...]  # chunk ids (`doc#n`) in e2e, document ids in oracle
    context: str
    answer: str
    must_include: tuple[str, ...]
    must_not_include: tuple[str, ...]


def evidence_from(golden: Mapping[str, Any], raw: Any, context: str, answer: str) -> Evidence:
    """A trial as the diagnosis reads it, from its golden (the case input), its raw response
    (whose `injected` names what reached the context), its context and its answer."""
    injected = raw.get("injected") if isinstance(raw, Mapping) else None
    return Evidence(
        expect_refusal=bool(golden.get("expectRefusal")),
        relevant_docs=tuple(golden.get("relevantDocIds") or ()),
        injected=tuple(str(i) for i in injected or ()),
        context=context, answer=answer,
        must_include=tuple(golden.get("mustInclude") or ()),
        must_not_include=tuple(golden.get("mustNotInclude") or ()),
    )


def doc_of(injected_id: str) -> str:
    """The document of an injected chunk id (`doc#3` -> `doc`); a document id stays as it is."""
    head, sep, _ = injected_id.rpartition("#")
    return head if sep else injected_id


def document_recall(e: Evidence) -> float | None:
    """Share of the golden's relevant documents present in the injected context."""
    if not e.relevant_docs:
        return None
    present = {doc_of(i) for i in e.injected}
    return sum(1 for d in e.relevant_docs if d in present) / len(e.relevant_docs)


def fact_coverage(e: Evidence, matches: Matcher) -> float | None:
    """Share of the mustInclude facts found in the injected context (chunk-level coverage)."""
    if not e.must_include:
        return None
    return sum(1 for p in e.must_include if matches(p, e.context)) / len(e.must_include)


def cause_of(e: Evidence, matches: Matcher) -> str:
    """The measured cause of one failing trial (module doc for the order)."""
    if e.expect_refusal:
        return "answered-out-of-corpus" if e.context.strip() else "model"
    recall = document_recall(e)
    if recall is not None and recall < 1:
        return "missed-document"
    coverage = fact_coverage(e, matches)
    if any(matches(p, e.answer) and matches(p, e.context) for p in e.must_not_include):
        if outranked(e) or (coverage is not None and coverage < 1):
            return "near-miss"
        return "reader-confusion"
    if coverage is not None and coverage < 1:
        return "fact-not-in-context"
    return "model"


def outranked(e: Evidence) -> bool:
    """A document that is not relevant holds the first injected slot: the wrong document ranks
    above the right one (injected ids are in rank order)."""
    if not e.injected or not e.relevant_docs:
        return False
    return doc_of(e.injected[0]) not in set(e.relevant_docs)


def reader_ceiling(e: Evidence, matches: Matcher) -> bool:
    """Whether a perfect reader could pass on this context alone: an out-of-corpus question when
    the context is empty (nothing to answer from, so declining is what is left); any other when
    every mustInclude fact is in the context (with no facts, when every relevant document is).

    Unlike the echo mock, the ceiling does not repeat a near-miss twin's value: it is the upper
    bound of what the trial's own context allows, so a failure it passes is the reader's."""
    return ceiling_from(e, None if e.expect_refusal else fact_coverage(e, matches))


def ceiling_from(e: Evidence, coverage: float | None) -> bool:
    """`reader_ceiling` from the context's `fact_coverage` when the caller measured it already
    (the coverage is not read for an out-of-corpus question)."""
    if e.expect_refusal:
        return not e.context.strip()
    if coverage is not None:
        return coverage == 1
    recall = document_recall(e)
    return recall is None or recall == 1


@dataclass(frozen=True)
class CauseCount:
    """Failing trials by measured cause, and the questions behind them: people read questions,
    and with repeats one question is several trials. `questions` / `by_cause_questions` are None
    when the trials were counted without their question ids."""

    total: int
    by_cause: Mapping[str, int]
    questions: int | None = None
    by_cause_questions: Mapping[str, int] | None = None


def count_causes(causes: Iterable[str], question_ids: Iterable[str] | None = None) -> CauseCount:
    """Count causes per trial; with `question_ids` (one per cause, same order) also per question
    (a question counted once under each cause it failed with)."""
    listed = list(causes)
    counted = Counter(listed)
    by_cause = {c: counted[c] for c in CAUSES if counted[c]}
    if question_ids is None:
        return CauseCount(len(listed), by_cause)
    pairs = set(zip(listed, question_ids))
    per_question = Counter(cause for cause, _ in pairs)
    return CauseCount(len(listed), by_cause, len({q for _, q in pairs}),
                      {c: per_question[c] for c in CAUSES if per_question[c]})


PHRASES = {
    "answered-out-of-corpus": "answered an out-of-corpus question from a non-empty context",
    "missed-document": "did not get a relevant document (document recall below 1)",
    "near-miss": "repeated a mustNotInclude phrase from a near-miss document that outranked the relevant one",
    "reader-confusion": "repeated a near-miss document's phrase although the relevant document ranked first "
                        "and every fact was in the context",
    "fact-not-in-context": "got every relevant document but not the chunk holding the fact (chunk coverage below 1)",
    "model": "had the expected facts in the context and still missed them",
}

CONCLUSIONS = {
    "missed-document": "retrieval is failing the model: the relevant documents do not reach the context.",
    "fact-not-in-context": "the documents are found but the chunks holding the facts are not injected: "
                           "look at chunking and --context-k, not at document retrieval.",
    "answered-out-of-corpus": "out-of-corpus questions get a non-empty context and the model answers from it; "
                              "`ragqual whatif RUN --threshold 0.3:0.8:0.05` measures whether any similarity "
                              "cut-off would let it decline without costing answerable questions.",
    "near-miss": "near-miss documents outrank the relevant ones in the context: rerank or filter them.",
    "reader-confusion": "the relevant document ranked first and every fact was in the context: the reader "
                        "(for the mock, its echo of every chunk) picked a twin's value; not retrieval's doing.",
    "model": "the facts were in the context: the model, not retrieval, is missing them.",
}


def gap_verdict(gap: float, counts: CauseCount) -> list[str]:
    """Sentences on an oracle - e2e gap from the measured causes of e2e's failures there."""
    if counts.total == 0:
        return [f"oracle - e2e = {gap:.2f}, but no failing e2e trial of a question the oracle answered "
                "was found to explain it."]
    by = counts.by_cause_questions if counts.by_cause_questions is not None else counts.by_cause
    parts = ", ".join(f"{n} {PHRASES[c]}" for c, n in by.items())
    top = max(by.items(), key=lambda kv: (kv[1], -CAUSES.index(kv[0])))[0]
    if counts.questions is not None and counts.questions != counts.total:
        head = (f"of the {counts.questions} question(s) the oracle answered and e2e failed "
                f"({counts.total} failing trials over the repeats)")
    elif counts.questions is not None:
        head = f"of the {counts.questions} question(s) the oracle answered and e2e failed"
    else:
        head = f"of the {counts.total} e2e failure(s) on questions the oracle answered"
    return [f"oracle - e2e = {gap:.2f}; {head}: {parts}.", f"largest cause, {top}: {CONCLUSIONS[top]}"]


def failed_checks(rows: Sequence[tuple[str, bool, str | None]]) -> list[str]:
    """'name: detail' of the failed checks among (name, passed, detail) rows."""
    return [f"{name}: {detail}" if detail else name for name, passed, detail in rows if not passed]
