"""The "our code or the model?" reading of the three modes, in words.

The oracle - e2e gap is read through the measured causes of e2e's failures on the questions the
oracle answered (`ragqual.core.diagnosis`): retrieval is blamed only when the relevant documents
did not reach the context; a gap with the documents present is named for what it is (the chunk
holding the fact, an out-of-corpus question answered from a non-empty context, a near-miss
document, or the model).
"""

from __future__ import annotations

from ragqual.core.diagnosis import CauseCount, gap_verdict

ORACLE_LOW = 0.5
RETRIEVAL_GAP = 0.10
NO_CONTRIBUTION = 0.05


def explain(oracle: float | None, e2e: float | None, noretrieval: float | None,
            causes: CauseCount | None = None) -> list[str]:
    """Sentences for one model's correctness in each mode (None when a mode did not run), with
    the measured causes of the oracle - e2e gap when they are known."""
    out: list[str] = []
    if oracle is not None and oracle < ORACLE_LOW:
        out.append(f"oracle is low ({oracle:.2f}): the model cannot use good context; no retrieval work fixes that — "
                   "try a larger model.")
    if oracle is not None and e2e is not None and oracle - e2e > RETRIEVAL_GAP:
        if causes is not None:
            out += gap_verdict(oracle - e2e, causes)
        else:
            out.append(f"oracle - e2e = {oracle - e2e:.2f}: the model does better with the golden's documents than "
                       "with what the pipeline injects; `ragqual report RUN --failures` lists the measured causes.")
    if e2e is not None and noretrieval is not None and abs(e2e - noretrieval) < NO_CONTRIBUTION:
        out.append(f"e2e - noretrieval = {e2e - noretrieval:+.2f}: RAG is not contributing; check that retrieval reaches the prompt.")
    if not out and oracle is not None and e2e is not None:
        out.append(f"oracle {oracle:.2f}, e2e {e2e:.2f}: no bottleneck stands out at these thresholds.")
    return out


def against_mock(model: float | None, mock: float | None) -> str | None:
    """Where a real model stands against the extractive ceiling of the same retrieval."""
    if model is None or mock is None:
        return None
    if model < mock - RETRIEVAL_GAP:
        return f"below the mock line ({model:.2f} vs {mock:.2f}): the model, not retrieval, is the bottleneck."
    return f"at or above the mock line ({model:.2f} vs {mock:.2f}): retrieval bounds what this model can do."
