"""How a value is shown in every table ragqual prints (text, Markdown, HTML): one unit per
quantity, and one sign for a missing value.

    quantity                         unit shown                         example
    rates and metrics (pass rate,    a fraction with 3 decimals         0.836 (never 83.6 %)
      cache-hit rate, score, recall)
    deltas of those (a `Δ ` column)  signed fraction, 3 decimals        -0.041
    p-values                         4 decimals (p = alpha must stay    0.0312
                                     readable next to alpha)
    latencies (*_ms, *Ms columns)    milliseconds, 1 decimal            12.3
    cost                             4 decimals of the backend's unit   0.0012
    counts and sizes (trials, n,     whole numbers                      40
      questions, tokens, chars)
    missing (None, NaN, NA, "")      -                                  -

Machine formats (JSON, CSV) carry the raw values; only what a person reads goes through here.
The d3 format strings of the same units are given for chart tooltips.
"""

from __future__ import annotations

import math
from typing import Any

MISSING = "-"
RATE_DIGITS = 3
P_DIGITS = 4
MS_DIGITS = 1
COST_DIGITS = 4

RATE_D3 = f".{RATE_DIGITS}f"
DELTA_D3 = f"+.{RATE_DIGITS}f"
P_D3 = f".{P_DIGITS}f"

P_COLUMNS = frozenset({"p_value", "p_adjusted", "p"})
COST_COLUMNS = frozenset({"cost", "total_cost", "cost_per_pass"})
COUNT_COLUMNS = frozenset({
    "n", "b", "c", "trials", "questions", "queries", "errors", "unstable", "repeats", "passed", "wins", "ties",
    "losses", "clusters", "tokens_in", "tokens_out", "prompt_tokens", "completion_tokens", "cache_hits",
    "contextChars", "indexVectorBytes", "documents", "chunks", "run_id",
})


def is_missing(value: Any) -> bool:
    """None, NaN, an empty string, or pandas' NA / NaT (recognised without importing pandas)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ in ("NAType", "NaTType")


def unit_of(column: str) -> str:
    """The unit of a column by its name: rate, delta, p, ms, cost or count."""
    name = column.strip()
    if name.startswith("Δ "):
        return "delta"
    if name in P_COLUMNS:
        return "p"
    if name.endswith(("_ms", "Ms", " ms")):
        return "ms"
    if name in COST_COLUMNS or name.split(" (")[0] in COST_COLUMNS:
        return "cost"
    if name in COUNT_COLUMNS or name.split(" (")[0] in COUNT_COLUMNS:
        return "count"
    return "rate"


def fmt_rate(value: float | None) -> str:
    """A rate or metric: a fraction with three decimals, or `-`."""
    return fmt_value(value, "rate")


def fmt_delta(value: float | None) -> str:
    """A change of a rate or metric: signed, three decimals, or `-`."""
    return MISSING if is_missing(value) else f"{value:+.{RATE_DIGITS}f}"


def fmt_ms(value: float | None) -> str:
    """A latency in milliseconds with one decimal, or `-`."""
    return fmt_value(value, "latency_ms")


def fmt_value(value: Any, column: str = "") -> str:
    """Any table cell: numbers in their column's unit (a rate when the column says nothing else)."""
    if is_missing(value):
        return MISSING
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    unit = unit_of(column)
    if unit == "count":
        return str(int(round(value)))
    if unit == "delta":
        return fmt_delta(value)
    if isinstance(value, int):
        return str(value)
    digits = {"p": P_DIGITS, "ms": MS_DIGITS, "cost": COST_DIGITS}.get(unit, RATE_DIGITS)
    return f"{value:.{digits}f}"


SHOWN_ITEMS = 3  # a long list in a run's params shows its length and this many items


def brief_params(params: dict[str, Any]) -> dict[str, Any]:
    """A run's params as a person reads them (the `report` header, `audit`): a long list (every
    case id of a run) becomes its length and first few items; `--json`, `ragqual export` and the
    history keep the full list."""
    return {key: _brief(value) for key, value in params.items()}


def _brief(value: Any) -> Any:
    if isinstance(value, list) and len(value) > SHOWN_ITEMS + 1:
        return f"{len(value)} items: {', '.join(str(v) for v in value[:SHOWN_ITEMS])}, ..."
    return value
