"""Pure kernels of the LLM judge: reading a verdict from a reply, and summarising verdicts.

Two ways to read a yes/no verdict:

logprobs      the backend returned token log-probabilities (OpenAI-compatible `logprobs` with
              `top_logprobs`; llama.cpp, chat or completion shape). The first generated token
              whose alternatives include a yes or a no token gives
              P(yes) = sum p(yes-like) / (sum p(yes-like) + sum p(no-like)),
              tokens compared after stripping spaces and punctuation, case-folded. Continuous,
              and never a parse failure; only a reply with no yes/no token among the
              alternatives is unreadable.
constrained   the backend was asked for JSON {"verdict": "yes" | "no"} (Ollama's `format`
              schema); the score is 1 or 0.

An unreadable reply is a `Reading` with an error and no score: it is recorded as a judge error
and never counted as a 0.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

YES = frozenset({"yes", "y"})
NO = frozenset({"no", "n"})
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["verdict"],
}
_STRIP = re.compile(r"[\s\"'`.,:;!*()\[\]{}<>▁Ġ]+")


@dataclass(frozen=True)
class Reading:
    score: float | None
    verdict: str | None
    error: str | None = None


def _word(token: str) -> str:
    return _STRIP.sub("", token).lower()


def _alternatives(raw: Mapping[str, Any]) -> list[list[tuple[str, float]]]:
    """Per generated token, its (token, logprob) alternatives, from either response shape."""
    choices = raw.get("choices") if isinstance(raw, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return []
    logprobs = choices[0].get("logprobs")
    if not isinstance(logprobs, Mapping):
        return []
    out: list[list[tuple[str, float]]] = []
    content = logprobs.get("content")
    if isinstance(content, list):  # chat completions: [{"token", "logprob", "top_logprobs": [...]}, ...]
        for item in content:
            if not isinstance(item, Mapping):
                continue
            alts = [(str(a.get("token", "")), a.get("logprob")) for a in item.get("top_logprobs") or []
                    if isinstance(a, Mapping)]
            alts.append((str(item.get("token", "")), item.get("logprob")))
            out.append([(t, float(lp)) for t, lp in alts if isinstance(lp, (int, float))])
        return out
    top = logprobs.get("top_logprobs")
    if isinstance(top, list):  # completions: [{"token": logprob, ...}, ...]
        for item in top:
            if isinstance(item, Mapping):
                out.append([(str(t), float(lp)) for t, lp in item.items() if isinstance(lp, (int, float))])
    return out


def read_logprobs(raw: Mapping[str, Any], yes_words: frozenset[str] = YES, no_words: frozenset[str] = NO,
                  labels: tuple[str, str] = ("yes", "no")) -> Reading:
    """P(yes) normalised over the yes/no tokens of the first position that offers either (a pairwise
    verdict passes the words of answer A as `yes_words`, of B as `no_words`, and labels ("a", "b"))."""
    positions = _alternatives(raw)
    if not positions:
        return Reading(None, None, "the reply carries no token log-probabilities")
    for alternatives in positions:
        seen: dict[str, float] = {}
        for token, logprob in alternatives:
            seen.setdefault(token, logprob)  # a token listed twice (chosen and alternative) counts once
        yes = sum(math.exp(lp) for t, lp in seen.items() if _word(t) in yes_words)
        no = sum(math.exp(lp) for t, lp in seen.items() if _word(t) in no_words)
        if yes + no > 0:
            p = yes / (yes + no)
            return Reading(p, labels[0] if p >= 0.5 else labels[1])
    return Reading(None, None, f"no {labels[0]} or {labels[1]} token among the reply's token alternatives")


def read_constrained(text: str, yes_words: frozenset[str] = YES, no_words: frozenset[str] = NO,
                     labels: tuple[str, str] = ("yes", "no")) -> Reading:
    """1.0 / 0.0 from a JSON {"verdict": "yes"|"no"} reply; an error for anything else."""
    try:
        value = json.loads(text)
    except ValueError:
        return Reading(None, None, f"the reply is not the JSON verdict asked for: {text.strip()[:80]!r}")
    verdict = value.get("verdict") if isinstance(value, dict) else None
    word = verdict.strip().lower() if isinstance(verdict, str) else None
    if word in yes_words:
        return Reading(1.0, labels[0])
    if word in no_words:
        return Reading(0.0, labels[1])
    return Reading(None, None, f"the reply's verdict is neither {labels[0]} nor {labels[1]}: {text.strip()[:80]!r}")


A_WORDS, B_WORDS = frozenset({"a"}), frozenset({"b"})
PAIR_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"verdict": {"type": "string", "enum": ["A", "B"]}}, "required": ["verdict"],
}


def read_pair(method: str, raw: Mapping[str, Any], text: str) -> Reading:
    """P(answer A is better) and the winner ('a' / 'b') of a pairwise reply."""
    if method == "logprobs":
        return read_logprobs(raw, A_WORDS, B_WORDS, ("a", "b"))
    return read_constrained(text, A_WORDS, B_WORDS, ("a", "b"))


@dataclass(frozen=True)
class CriterionSummary:
    criterion: str
    mean: float | None  # over the trials with a score (the mean of their samples' scores)
    n: int  # trials with at least one readable sample
    errors: int  # samples whose reply could not be read
    samples: int  # samples asked per trial
    self_consistency: float | None  # share of trials whose readable samples all gave one verdict (K > 1)


def summarise(criterion: str, by_trial: Mapping[int, Sequence[Reading]], samples: int) -> CriterionSummary:
    """Mean score, n, errors and self-consistency of one criterion's verdicts, trial by trial."""
    means, agree, errors = [], [], 0
    for readings in by_trial.values():
        good = [r for r in readings if r.score is not None]
        errors += len(readings) - len(good)
        if good:
            means.append(sum(r.score for r in good if r.score is not None) / len(good))
        if samples > 1 and len(good) > 1:
            agree.append(len({r.verdict for r in good}) == 1)
    return CriterionSummary(criterion, sum(means) / len(means) if means else None, len(means), errors, samples,
                            sum(agree) / len(agree) if agree else None)


_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)?")
_STOP = frozenset("""a an the and or but if of to in on at for with by from as is are was were be been it its this that
these those there their they you your we our i me my do does did can could should would will may might must not
no yes what which who whom how when where why than then so such into about over under up down out also only
any all each per""".split())


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and (len(w) > 2 or w.isdigit())}


def lexical_p_yes(criterion: str, question: str, context: str, answer: str) -> float:
    """The `mock` test judge's P(yes): a lexical-overlap heuristic, deterministic and cheap.

    faithfulness  share of the answer's content words found in the context
    relevance     share of the question's content words found in the answer
    completeness  share of the context words of the sentence that best matches the question
                  that the answer repeats
    Kept within [0.02, 0.98] so that both tokens have a probability. A test judge, not a good one.
    """
    a, q = content_words(answer), content_words(question)
    if criterion == "faithfulness":
        share = len(a & content_words(context)) / len(a) if a else 1.0
    elif criterion == "relevance":
        share = len(q & a) / len(q) if q else 1.0
    else:
        sentences = [content_words(s) for s in re.split(r"(?<=[.!?])\s+|\n+", context) if s.strip()]
        best = max(sentences, key=lambda s: (len(s & q), -len(s)), default=set())
        share = len(best & a) / len(best) if best else 1.0
    return min(0.98, max(0.02, share))
