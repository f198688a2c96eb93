"""Critical goldens: a question marked `"critical": true` gates by itself.

A regression on a critical golden, per group compared (the definition `compare` applies):

* a group of trials (variant x mode): the question's `pass` was 1 in BASE (it passed in every
  repeat) and is below 1 in NEW (it failed in at least one repeat);
* a strategy group (retrieval): one of the question's headline retrieval metrics (`hit@5`,
  `recall@5`, `mrr`, `ndcg@10`, ...: `metric_names.is_gated`) moved the wrong way by more than the
  gate's tolerance.

Any such regression fails the gate (exit 1) whatever the statistics say.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragqual.core.verdicts import SLACK


@dataclass(frozen=True)
class CriticalRegression:
    group: str
    golden_id: str
    metric: str
    base_value: float
    new_value: float

    def text(self) -> str:
        return (f"critical golden {self.golden_id!r} regressed in {self.group}: {self.metric} "
                f"{self.base_value:.3g} -> {self.new_value:.3g}")


def pass_regressed(base: float, new: float) -> bool:
    """Passed in every repeat of BASE, failed in at least one repeat of NEW."""
    return base >= 1.0 - SLACK and new < 1.0 - SLACK


def metric_regressed(base: float, new: float, tolerance: float, lower_is_better: bool = False) -> bool:
    """A retrieval metric of the question moved the wrong way by more than the tolerance."""
    worsening = new - base if lower_is_better else base - new
    return worsening > tolerance + SLACK


def critical_verdict(critical: list[CriticalRegression], line: str) -> str:
    """The gate's verdict line, led by the critical goldens that regressed, if any."""
    if not critical:
        return line
    names = ", ".join(dict.fromkeys(c.golden_id for c in critical))
    return f"CRITICAL GOLDEN REGRESSED ({names}): the gate fails whatever the statistics say; {line}"
