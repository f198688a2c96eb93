"""The generation tier's tables: per model and mode, and the decomposition of the gap between modes."""

from __future__ import annotations

from collections.abc import Sequence

from ragqual.app.generation_run import MOCK
from ragqual.cli.progress import fmt3
from ragqual.core.diagnosis import CauseCount
from ragqual.pipeline.decomposition import against_mock, explain
from ragqual.store.generation_reads import ModeLine


def mode_table(lines: Sequence[ModeLine]) -> str:
    rows = ["| model | mode | correctness | refusal | pass | unstable | questions | failed trials |",
            "|---|---|---|---|---|---|---|---|"]
    rows += [f"| {ln.variant} | {ln.mode} | {fmt3(ln.correctness)} | {fmt3(ln.refusal)} | {fmt3(ln.pass_rate)} | "
             f"{ln.unstable} | {ln.questions} | {ln.errors} |" for ln in lines]
    return "\n".join(rows)


def decomposition_text(lines: Sequence[ModeLine], causes: dict[str, CauseCount] | None = None,
                       advice: dict[str, str] | None = None) -> str:
    """The decomposition per model; `advice` (from `app.whatif_run.measured_advice`) adds the
    measured sentence on a similarity cut-off."""
    by: dict[str, dict[str, float | None]] = {}
    for ln in lines:
        by.setdefault(ln.variant, {})[ln.mode] = ln.correctness
    out = []
    for variant, modes in by.items():
        out.append(f"{variant}:")
        measured = (causes or {}).get(variant)
        out += [f"  - {s}" for s in explain(modes.get("oracle"), modes.get("e2e"), modes.get("noretrieval"), measured)]
        if (advice or {}).get(variant):
            out.append(f"  - {(advice or {})[variant]}")
        if variant != MOCK and MOCK in by:
            for mode in ("oracle", "e2e"):  # without retrieval the mock only declines: nothing to compare
                sentence = against_mock(modes.get(mode), by[MOCK].get(mode))
                if sentence:
                    out.append(f"  - {mode}: {sentence}")
    return "\n".join(out)
