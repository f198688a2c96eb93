"""Equal-width histograms, counted before a chart sees them: a page gets one record per (label, bin)
that holds something, not one record per value (a standard collection's retrieval run has ~280,000
scored hits; Vega-Lite binning them in the browser made the run page tens of MB).

The bins follow numpy's rule (`numpy.histogram_bin_edges` with a bin count): `bins` equal widths
over [min, max] of the values, each bin [start, end) except the last, which also holds the maximum;
when every value is the same the range is [value - 0.5, value + 0.5].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

DEFAULT_BINS = 40


class Bar(NamedTuple):
    """How many values of one label (`frequency`) fall in [start, end) (the last bin: [start, end])."""

    label: str
    start: float
    end: float
    frequency: int


def bin_edges(values: Sequence[float] | np.ndarray, bins: int = DEFAULT_BINS) -> np.ndarray:
    """`bins` + 1 equal-width edges over the values' range; no values give no edges."""
    if bins < 1:
        raise ValueError(f"a histogram needs at least one bin, got {bins}")
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return np.empty(0)
    if not np.isfinite(array).all():
        raise ValueError("a histogram needs finite values (NaN or infinity given)")
    return np.histogram_bin_edges(array, bins=bins)


def bin_index(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin of each value: start <= value < end, the maximum in the last bin."""
    index = np.searchsorted(edges, values, side="right") - 1
    return np.clip(index, 0, len(edges) - 2)


def histogram(values: Sequence[float] | np.ndarray, labels: Sequence[str], order: Sequence[str],
              bins: int = DEFAULT_BINS) -> list[Bar]:
    """The bars of overlaid histograms: one bin range for all values, counted per label; bars in
    `order`'s order, then by bin; empty bins left out (the counts still sum to len(values))."""
    array = np.asarray(values, dtype=float)
    if array.shape != (len(labels),):
        raise ValueError(f"{array.size} values but {len(labels)} labels")
    edges = bin_edges(array, bins)
    if array.size == 0:
        return []
    position = {label: n for n, label in enumerate(order)}
    unknown = sorted(set(labels) - position.keys())
    if unknown:
        raise ValueError(f"labels not in the order given: {', '.join(unknown)}")
    codes = np.fromiter((position[label] for label in labels), dtype=np.int64, count=len(labels))
    counts = np.bincount(codes * bins + bin_index(array, edges), minlength=len(order) * bins)
    return [Bar(order[cell // bins], float(edges[cell % bins]), float(edges[cell % bins + 1]), int(counts[cell]))
            for cell in np.flatnonzero(counts).tolist()]
