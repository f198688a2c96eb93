"""The assertions sentiment cases share. Each takes the assertion's own fixed UUID.

Outputs are {"label": "positive" | "negative" | "neutral" | None, "text": <the raw reply>}.
Bump an assertion's version (in the case file) only when what its check means changes.
"""

from __future__ import annotations

from ragqual.engine.assertions import Assertion, Equals, JsonPath, RegexExcludes, RegexIncludes

LABELS = ("positive", "negative", "neutral")
OPPOSITE = {"positive": "negative", "negative": "positive"}


def label_is(assertion_id: str, expected: str, *, version: int = 1) -> Assertion:
    """The decisive check, weighted above the others."""
    return Assertion(assertion_id, version, f"label is {expected}", Equals(expected, path="label"),
                     category="SENTIMENT", weight=3.0)


def not_opposite(assertion_id: str, expected: str, *, version: int = 1) -> Assertion:
    """Partial credit: 'neutral' for a positive sentence is wrong, but less wrong than 'negative'."""
    opposite = OPPOSITE[expected]
    return Assertion(assertion_id, version, f"label is not {opposite}", JsonPath("label", "ne", opposite),
                     category="SENTIMENT", weight=1.0)


def one_known_label(assertion_id: str, *, version: int = 1) -> Assertion:
    return Assertion(assertion_id, version, "reply is one known label",
                     RegexIncludes(r"^\W*(positive|negative|neutral)\W*$", path="text"),
                     category="FORMAT", weight=1.0)


def no_explanation(assertion_id: str, *, version: int = 1) -> Assertion:
    """Informational (weight 0): shown in reports, never moves the score."""
    return Assertion(assertion_id, version, "no explanation given",
                     RegexExcludes(r"\b(because|since|the sentence|this sentence)\b", path="text"),
                     category="FORMAT", weight=0.0)
