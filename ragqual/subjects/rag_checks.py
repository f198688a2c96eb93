"""Declarative checks of the RAG subject (stored as specs, rebuilt by rescoring)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragqual.core import answer_metrics
from ragqual.engine import assertions
from ragqual.engine.assertions import TrialContext


def _text(output: Any) -> str:
    return output if isinstance(output, str) else str(output or "")


@dataclass(frozen=True)
class RefusalBehaviour:
    """Declines when the question is out of corpus, and neither declines nor hedges otherwise."""

    expect_refusal: bool
    kind = "rag-refusal"
    pure = True

    def evaluate(self, output: Any, ctx: TrialContext) -> tuple[bool, str | None]:
        ok = answer_metrics.refusal_correct(_text(output), self.expect_refusal)
        if ok:
            return True, None
        return False, "answered instead of declining" if self.expect_refusal else "declined or hedged an answerable question"

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "expect_refusal": self.expect_refusal}


@dataclass(frozen=True)
class NoRetrievalNarration:
    """The answer does not narrate its retrieval ("according to the context")."""

    kind = "rag-no-leakage"
    pure = True

    def evaluate(self, output: Any, ctx: TrialContext) -> tuple[bool, str | None]:
        leaked = answer_metrics.leaks_retrieval(_text(output))
        return (not leaked), ("narrates retrieval" if leaked else None)

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind}


@dataclass(frozen=True)
class NoThinkTags:
    """No reasoning markup (<think> ...) reached the answer."""

    kind = "rag-no-think-tags"
    pure = True

    def evaluate(self, output: Any, ctx: TrialContext) -> tuple[bool, str | None]:
        leaked = answer_metrics.has_think_tags(_text(output))
        return (not leaked), ("reasoning tags in the answer" if leaked else None)

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind}


for _check in (RefusalBehaviour, NoRetrievalNarration, NoThinkTags):
    assertions.DECLARATIVE.setdefault(_check.kind, _check)
