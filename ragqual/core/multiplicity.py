"""Adjusted p-values for a family of tests: Holm (family-wise error) and Benjamini-Hochberg
(false discovery rate). Both return one adjusted p-value per input, in the input's order, capped
at 1, and agree with statsmodels' `multipletests(method="holm" | "fdr_bh")`.

The gate uses Holm: a `regression` anywhere in the family is a false alarm with probability at
most alpha. Exploratory tables (per tag) use Benjamini-Hochberg: among the rows called
significant, at most a share alpha is expected to be noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragqual.errors import InputError


def _checked(p_values: Sequence[float]) -> list[float]:
    values = [float(p) for p in p_values]
    if any(not (0.0 <= p <= 1.0) or math.isnan(p) for p in values):
        raise InputError(f"p-values must lie in [0, 1], got {p_values!r}")
    return values


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest p times (m - i), made non-decreasing."""
    values = _checked(p_values)
    m = len(values)
    order = sorted(range(m), key=lambda i: values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * values[i]))
        adjusted[i] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg step-up adjustment: the i-th smallest p times m / i, made
    non-increasing from the largest down."""
    values = _checked(p_values)
    m = len(values)
    order = sorted(range(m), key=lambda i: values[i], reverse=True)
    adjusted = [0.0] * m
    running = 1.0
    for position, i in enumerate(order):
        rank = m - position
        running = min(running, values[i] * m / rank)
        adjusted[i] = min(1.0, running)
    return adjusted
