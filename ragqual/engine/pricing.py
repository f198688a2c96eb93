"""Pricing a stored run: one cost row per trial under a price list's snapshot.

A run prices its trials with the list in force when it ends; `ragqual reprice` runs the same
function with another list. Rows are only appended: a trial whose newest cost row is already
under this snapshot gets none, every other trial gets one (so pricing again with an older list
makes it current again, with a new row).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragqual.core.pricing import PriceList, trial_cost
from ragqual.store.cost_reads import PricingInput, pricing_inputs
from ragqual.store.runstore import RunStore


@dataclass(frozen=True)
class Pricing:
    run_id: int
    snapshot_id: int
    snapshot_sha256: str
    trials: int
    appended: int  # cost rows appended
    priced: int  # of them, trials the list prices (a cost, not None)


def price_run(store: RunStore, run_id: int, prices: PriceList,
              inputs: Sequence[PricingInput] | None = None) -> Pricing:
    """Snapshot `prices` and append the cost of every trial of `run_id` not priced under it yet.
    `inputs`: every stored trial of the run, in id order, as `pricing_inputs` would read them,
    when the caller holds them (the trial loop, for the trials it has just appended)."""
    snapshot_id, digest = store.intern_pricing_snapshot(prices.canonical())
    if inputs is None:
        inputs = pricing_inputs(store.engine, run_id)
    rows = []
    for t in inputs:
        if t.newest_snapshot_id == snapshot_id:
            continue
        price = prices.price_for(t.uri)
        cost = trial_cost(price, t.prompt_tokens, t.completion_tokens)
        rows.append((t.trial_id, cost, price.currency if price is not None and cost is not None else None))
    store.append_costs(run_id, snapshot_id, rows)
    return Pricing(run_id, snapshot_id, digest, len(inputs), len(rows), sum(1 for r in rows if r[1] is not None))
