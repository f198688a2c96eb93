"""The price list in force, and re-pricing a stored run.

Where the list comes from, first found wins: `--pricing FILE` (reprice), `pricing_file` in
[tool.ragqual] (relative to the project), `pricing.toml` in the project folder, the
`[tool.ragqual.pricing]` table of pyproject.toml. A project with none prices nothing: every
run still records its (empty) snapshot and its trials' costs show `-`. A bad list is refused
(exit 2, file and line) before a run starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

from ragqual.app.context import AppContext
from ragqual.config import Settings
from ragqual.core.pricing import (EMPTY, PriceList, TrialCost, VariantCost, price_list_from_pyproject,
                                  price_list_from_text, variant_costs)
from ragqual.core.scoring import SCORER_NAME
from ragqual.engine.pricing import Pricing, price_run
from ragqual.errors import InputError
from ragqual.store.cost_reads import CostValue, resolve_snapshot, run_snapshots, trial_costs
from ragqual.store.cost_reads import snapshot as snapshot_info
from ragqual.store.summaries import Summary
from ragqual.store.trial_reads import run_figures

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_FILE = "pricing.toml"


@dataclass(frozen=True)
class PriceSource:
    prices: PriceList
    where: str  # the file (and table) it was read from, or "none"


def read_price_file(path: Path) -> PriceList:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such price list") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the price list ({exc})") from None
    return price_list_from_text(text, str(path))


def prices_in_force(settings: Settings, override: str | Path | None = None) -> PriceSource:
    """The price list a run started now would be priced with."""
    if override is not None:
        return PriceSource(read_price_file(Path(override)), str(override))
    configured = settings.values.get("pricing_file")
    if configured:
        path = settings.path("pricing_file")
        return PriceSource(read_price_file(path), str(path))
    pyproject = settings.root / "pyproject.toml"
    table = None
    if pyproject.is_file():
        table = price_list_from_pyproject(pyproject.read_text(encoding="utf-8"), str(pyproject))
    default = settings.root / DEFAULT_FILE
    if default.is_file():
        if table is not None:
            raise InputError(f"{pyproject}: [tool.ragqual.pricing] and {default} both hold a price list: keep one")
        return PriceSource(read_price_file(default), str(default))
    if table is not None:
        return PriceSource(table, f"{pyproject} [tool.ragqual.pricing]")
    return PriceSource(EMPTY, "none")


# -- reading costs for reports -----------------------------------------------------------------------

COST_COLUMNS = ["variant", "trials", "passing", "priced", "cost", "cost_per_pass", "currency"]


def variant_cost_rows(engine: Engine, run_id: int, scorer_name: str = SCORER_NAME,
                      scorer_version: int | None = None, snapshot: int | None = None) -> list[VariantCost]:
    """Cost per variant and per passing answer of a run's scored trials (newest cost rows, or
    the rows of the pinned `snapshot`)."""
    figures = run_figures(engine, run_id, scorer_name, scorer_version, snapshot)
    return variant_costs(TrialCost(r.variant, bool(r.perfect), r.cost, r.currency) for r in figures
                         if r.score is not None)


def scored_variant_costs(trials: Iterable[tuple[int, str, bool | None, bool, float | None]],
                         costs: Mapping[int, CostValue]) -> list[VariantCost]:
    """`variant_cost_rows` from trials already read: (trial id, variant, perfect, scored, cost
    column) in trial order, with the run's `trial_costs` (which holds every trial of the run). A
    report has both at hand, so it does not read the run's trials a second time."""
    return variant_costs(TrialCost(variant, bool(perfect), costs[t].cost if t in costs else None,
                                   costs[t].currency if t in costs else None)
                         for t, variant, perfect, scored, _ in trials if scored)


def summary_variant_costs(engine: Engine, summary: Summary, scorer_name: str = SCORER_NAME,
                          scorer_version: int | None = None, snapshot: int | None = None) -> list[VariantCost]:
    """`variant_cost_rows` of the run a summary was read from, from the trials it already read
    (a summary read before it carried them falls back to reading the run again)."""
    if not summary.scored_trials:
        return variant_cost_rows(engine, int(summary.run_id or 0), scorer_name, scorer_version, snapshot)
    legacy = {trial[0]: trial[4] for trial in summary.scored_trials}
    return scored_variant_costs(summary.scored_trials,
                                trial_costs(engine, int(summary.run_id or 0), snapshot, legacy=legacy))


def cost_frame(costs: Sequence[VariantCost]) -> pd.DataFrame:
    """One row per variant: raw numbers (`-` in text output for None: ragqual.core.display)."""
    import pandas as pd

    return pd.DataFrame([{"variant": c.variant, "trials": c.trials, "passing": c.passing, "priced": c.priced,
                          "cost": c.total, "cost_per_pass": c.per_pass, "currency": c.currency}
                         for c in costs], columns=COST_COLUMNS)


def compare_costs(base: Sequence[VariantCost], new: Sequence[VariantCost]) -> pd.DataFrame:
    """Cost and cost per passing answer of each variant in BASE and NEW, side by side."""
    import pandas as pd

    b, n = {c.variant: c for c in base}, {c.variant: c for c in new}
    rows = []
    for variant in dict.fromkeys([*b, *n]):
        x, y = b.get(variant), n.get(variant)
        currencies = dict.fromkeys(c.currency for c in (x, y) if c is not None and c.currency)
        rows.append({"variant": variant, "cost (base)": x.total if x else None, "cost (new)": y.total if y else None,
                     "cost_per_pass (base)": x.per_pass if x else None,
                     "cost_per_pass (new)": y.per_pass if y else None, "currency": " -> ".join(currencies) or None})
    return pd.DataFrame(rows, columns=["variant", "cost (base)", "cost (new)", "cost_per_pass (base)",
                                       "cost_per_pass (new)", "currency"])


def cost_sections(costs: pd.DataFrame | None) -> list[tuple[str, pd.DataFrame]]:
    """The comparison's cost table as a report section (none when a side is not a run)."""
    return [] if costs is None else [("cost per variant (BASE -> NEW; per passing answer; - = unpriced)", costs)]


def cost_records(costs: pd.DataFrame | None) -> list[dict[str, Any]]:
    """A cost table as JSON objects (None for a missing value)."""
    if costs is None:
        return []
    return [{str(k): v for k, v in row.items()} for row in costs.astype(object).where(costs.notna(), None)
            .to_dict(orient="records")]


def pricing_note(engine: Engine, run_id: int, snapshot: int | None) -> str:
    """Which prices a report shows: the pinned snapshot, or each trial's newest, and the run's snapshots."""
    snaps = run_snapshots(engine, run_id)
    listed = ", ".join(f"{i} ({sha[:12]}, {n} trial(s))" for i, sha, n in snaps) or "none"
    if snapshot is not None:
        info = snapshot_info(engine, snapshot)
        return f"snapshot {info.id} ({info.sha256[:12]}), pinned; the run's snapshots: {listed}"
    return f"each trial's newest cost row; the run's snapshots: {listed}"


def snapshot_ref(engine: Engine, ref: str | None) -> int | None:
    """`--pricing-snapshot ID|HASH` as a snapshot id (None: not pinned)."""
    return None if ref is None else resolve_snapshot(engine, ref)


# -- re-pricing ---------------------------------------------------------------------------------------

def reprice(app: AppContext, run_id: int, pricing_file: str | Path) -> tuple[PriceSource, Pricing]:
    """Append the cost of every trial of `run_id` under the snapshot of `pricing_file`."""
    source = prices_in_force(app.settings, pricing_file)  # a bad file: exit 2 before anything is written
    store = app.store(auto_create=False)
    store.get_run(run_id)
    return source, price_run(store, run_id, source.prices)
