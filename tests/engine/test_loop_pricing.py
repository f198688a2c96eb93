"""A fresh run is priced from the trials the loop has just appended (no read back), with exactly
the cost rows pricing them from the history gives; a resumed run reads its trials back."""

from __future__ import annotations

import pytest

from ragqual.core.pricing import price_list_from_text
from ragqual.engine import loop, pricing
from ragqual.engine.services import services_for
from ragqual.engine.subject import Variant
from ragqual.store import cost_reads
from ragqual.store.runstore import RunStore
from tests.engine.support import ToySubject, echo_case, rows

PRICES = 'currency = "USD"\ndate = 2026-11-01\n[[model]]\nmatch = "mock"\ninput = 1.5\noutput = 2.25\n'
COSTS = "SELECT c.trial_id, c.snapshot_id, c.cost, c.currency FROM trial_costs c ORDER BY c.id"


def _run(tmp_path, cache, name, **kw):
    db = tmp_path / f"{name}.db"
    store = RunStore.open(f"sqlite:///{db}")
    subject = ToySubject([echo_case(f"c{i}", f"word{i}") for i in range(4)])
    try:
        outcome = loop.run(subject, [Variant("mock", "mock"), Variant("other", "mock", options={"x": 1})],
                           subject.cases(), store=store, services=services_for(subject, cache), repeats=2,
                           argv=["t"], pricing=price_list_from_text(PRICES, "p.toml"), **kw)
    finally:
        store.engine.dispose()
    return db, outcome


def test_a_fresh_run_is_priced_from_its_appended_trials_as_from_the_history(tmp_path, cache, monkeypatch):
    reads = []
    real = cost_reads.pricing_inputs
    monkeypatch.setattr(pricing, "pricing_inputs", lambda engine, run: reads.append(run) or real(engine, run))
    held, _ = _run(tmp_path, cache, "held")
    assert reads == []
    monkeypatch.setattr(loop._Priced, "inputs", lambda self, stored: None)  # as before: read them back
    read, _ = _run(tmp_path, cache, "read")
    assert reads == [1]
    costs = rows(held, COSTS)
    assert costs == rows(read, COSTS)
    assert len(costs) == 16 and all(c[2] is not None and c[3] == "USD" for c in costs)


@pytest.mark.parametrize("tokens", [12.0, "12"])
def test_token_counts_the_history_would_change_are_read_back(tmp_path, cache, monkeypatch, tokens):
    from dataclasses import replace

    real_run_one = ToySubject.run_one

    def odd_tokens(self, case, variant, mode, repeat_index, services):
        result = real_run_one(self, case, variant, mode, repeat_index, services)
        return replace(result, telemetry=replace(result.telemetry, prompt_tokens=tokens))
    monkeypatch.setattr(ToySubject, "run_one", odd_tokens)
    reads = []
    real = cost_reads.pricing_inputs
    monkeypatch.setattr(pricing, "pricing_inputs", lambda engine, run: reads.append(run) or real(engine, run))
    _run(tmp_path, cache, "odd")
    assert reads == [1]


def test_a_resumed_run_is_priced_from_the_history(tmp_path, cache, monkeypatch):
    from ragqual.errors import RunInterrupted

    db = tmp_path / "resumed.db"
    store = RunStore.open(f"sqlite:///{db}")
    prices = price_list_from_text(PRICES, "p.toml")
    reads = []
    real = cost_reads.pricing_inputs
    monkeypatch.setattr(pricing, "pricing_inputs", lambda engine, run: reads.append(run) or real(engine, run))
    try:
        first = ToySubject([echo_case(f"c{i}", f"word{i}") for i in range(3)], interrupt_at=3)
        with pytest.raises(RunInterrupted):
            loop.run(first, [Variant("mock", "mock")], first.cases(), store=store,
                     services=services_for(first, cache), argv=["t"], pricing=prices)
        again = ToySubject([echo_case(f"c{i}", f"word{i}") for i in range(3)])
        loop.run(again, [Variant("mock", "mock")], again.cases(), store=store, services=services_for(again, cache),
                 argv=["t"], pricing=prices, resume_run_id=1)
    finally:
        store.engine.dispose()
    assert reads == [1, 1]  # the interrupted end, then the resumed run's end
    assert len(rows(db, COSTS)) == 3
