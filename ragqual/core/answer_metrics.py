"""Deterministic generation metrics: plain functions of the answer text, no judge model.

- `correctness`: every mustInclude pattern matches and no mustNotInclude pattern does.
- `refusal_correct`: declines an out-of-corpus question, and neither declines nor hedges on an
  answerable one.
- `leaks_retrieval`: the answer narrates its retrieval ("according to the context").
- `groundedness`: share of the answer's numbers above 10 that also appear in the context.
- `has_think_tags`: reasoning markup reached the answer.

The phrase lists are regular expressions matched case-insensitively after typographic
apostrophes are folded to ASCII, so "don’t" and "don't" read the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import regex

from ragqual.core import textmatch

REFUSAL_PATTERNS: tuple[str, ...] = (
    r"\bI (?:do not|don't) know\b",
    r"\bI(?: could not| couldn't| cannot| can't| can not| was not able to| wasn't able to|"
    r" am not able to|'m not able to| am unable to|'m unable to| was unable to) "
    r"(?:find|locate|answer|determine)\b",
    r"\b(?:not able|unable) to (?:find|locate)\b",
    r"\b(?:cannot|can't|can not) (?:be )?answer(?:ed)?\b",
    r"\bI (?:do not|don't) have (?:any |enough |specific |sufficient |the )?"
    r"(?:information|details|data|context|knowledge)\b",
    r"\bI have no (?:information|details|data|knowledge)\b",
    r"\b(?:there is|there's|I found|I see|contains?) no (?:relevant |specific )?"
    r"(?:information|details|mention)\b",
    r"\bno (?:relevant |specific )?(?:information|details|data|mention) "
    r"(?:about|on|of|regarding|concerning|related to)\b",
    r"\bthe (?:provided|given|available|supplied) (?:information|context|documents?|text|sources?) "
    r"(?:does|do)(?: not|n't)\b",
    r"\b(?:does|do)(?: not|n't) (?:mention|specify|say anything|contain (?:any )?information)\b",
    r"\bnot (?:mentioned|specified|addressed) in\b",
)

HEDGE_PATTERNS: tuple[str, ...] = (
    r"\bI(?:'m| am) not (?:entirely |completely |totally |100% )?(?:sure|certain)\b",
    r"\bI(?:'m| am) unsure\b",
    r"\bI (?:cannot|can't|can not) be (?:sure|certain)\b",
    r"\bI (?:cannot|can't|can not) (?:confirm|verify)\b",
    r"\b(?:it is|it's) (?:unclear|not clear)\b",
    r"\bto the best of my knowledge\b",
    r"\bif I (?:recall|remember) correctly\b",
    r"\bmay or may not\b",
    r"\bI(?:'m| am) (?:guessing|speculating)\b",
)

_CONTEXT_NOUN = r"(?:context|contexts|documents?|passages?|excerpts?|sources?|snippets?|chunks?|texts?)"

# "context" alone is ordinary English ("in the context of hypothermia"), so every pattern on it
# needs a retrieval-flavoured neighbour: a qualifier, a number, or a verb of reporting.
LEAKAGE_PATTERNS: tuple[str, ...] = (
    r"\baccording to (?:the |this |these )?(?:provided |given |supplied |retrieved |above )?"
    + _CONTEXT_NOUN + r"\b(?! of\b)",
    r"\baccording to the information (?:provided|given|supplied|above)\b",
    r"\b(?:the |this |these )?(?:provided|given|supplied|retrieved|above) " + _CONTEXT_NOUN + r"\b",
    r"\bthe " + _CONTEXT_NOUN + r" (?:provided|given|supplied|retrieved|above)\b",
    r"\b(?:based on|from|in|within|per) the (?:context|passages?|excerpts?|snippets?)\b(?! of\b)",
    r"\bthe context (?:says|states|mentions|shows|indicates|does not|doesn't|did not)\b",
    r"\bthe (?:provided|supplied|retrieved) information\b",
    r"\b(?:the|my|your|our|this) knowledge base\b",
    r"\b(?:context|document|passage|excerpt|source|chunk|snippet) ?(?:#|no\.? ?)?\d+\b",
    r"\bas (?:mentioned|stated|described|shown|noted) in the " + _CONTEXT_NOUN + r"\b(?! of\b)",
)

THINK_TAG_PATTERN = (
    r"<\s*/?\s*(?:think|thinking|reasoning|thought|thoughts|reflection)\s*>"
    r"|<\|\s*/?\s*(?:begin_of_|end_of_|start_of_|start_|end_)?"
    r"(?:think|thinking|reasoning|thought)\s*\|>"
    r"|\[/?THINK\]"
)


def _compile_all(patterns: Iterable[str]) -> tuple[regex.Pattern[str], ...]:
    return tuple(regex.compile(p, regex.IGNORECASE) for p in patterns)


_REFUSALS = _compile_all(REFUSAL_PATTERNS)
_HEDGES = _compile_all(HEDGE_PATTERNS)
_LEAKS = _compile_all(LEAKAGE_PATTERNS)
_THINK = regex.compile(THINK_TAG_PATTERN, regex.IGNORECASE)


def _fold(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


def _any_match(patterns: Iterable[regex.Pattern[str]], text: str) -> bool:
    folded = _fold(text)
    return any(p.search(folded) for p in patterns)


def correctness(
    answer: str,
    must_include: Sequence[str],
    must_not_include: Sequence[str],
    timeout: float = textmatch.DEFAULT_TIMEOUT,
) -> bool:
    """All mustInclude patterns match and none of mustNotInclude does.

    Patterns are case-insensitive regular expressions, each bounded by `timeout` seconds; a
    pattern that runs out of time raises `textmatch.RegexTimeout` for the caller to record.
    """
    if not all(textmatch.search(p, answer, timeout) for p in must_include):
        return False
    return not any(textmatch.search(p, answer, timeout) for p in must_not_include)


def is_refusal(answer: str) -> bool:
    """The answer declines: it says it does not know or that the information is not there."""
    return _any_match(_REFUSALS, answer)


def is_hedge(answer: str) -> bool:
    """The answer qualifies itself with uncertainty ("I'm not sure, but ...")."""
    return _any_match(_HEDGES, answer)


def refusal_correct(answer: str, expect_refusal: bool) -> bool:
    """Declines when the question is out of corpus; neither declines nor hedges otherwise.

    A hedged guess on an out-of-corpus question is not a refusal, so it fails too.
    """
    if expect_refusal:
        return is_refusal(answer)
    return not (is_refusal(answer) or is_hedge(answer))


def leaks_retrieval(answer: str) -> bool:
    """The answer narrates retrieval ("based on the provided context", "Context 1")."""
    return _any_match(_LEAKS, answer)


def has_think_tags(answer: str) -> bool:
    """Reasoning markup (<think>, </reasoning>, <|thinking|>, [THINK] ...) reached the answer."""
    return _THINK.search(answer) is not None


# A number starts at a word boundary; "1,000" groups thousands, "2.5" is a decimal, and any unit
# that follows ("120mg", "6,500 ft") is simply not part of the match.
_NUMBER = regex.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?")

GROUNDEDNESS_MIN_EXCLUSIVE = 10.0


def extract_numbers(text: str) -> set[float]:
    """Every number written with digits in `text`, normalised to its value."""
    return {float(m.group().replace(",", "")) for m in _NUMBER.finditer(text)}


def groundedness(answer: str, context: str | Sequence[str]) -> float | None:
    """Share of the distinct numbers above 10 in the answer that also occur in the context.

    It only sees numbers written with digits: an answer that invents a procedure, a name or a
    number spelled out in words still scores 1.0, so it detects numeric fabrication and does not
    prove faithfulness. Numbers of 10 and below are skipped because "step 2" or "3 layers" appear
    in any prose. Values are compared after normalisation ("1,000" = 1000, "2.50" = 2.5,
    "6,500 ft" = 6500). Returns None when the answer has no number above 10.
    """
    joined = context if isinstance(context, str) else "\n".join(context)
    claims = {n for n in extract_numbers(answer) if n > GROUNDEDNESS_MIN_EXCLUSIVE}
    if not claims:
        return None
    return len(claims & extract_numbers(joined)) / len(claims)
