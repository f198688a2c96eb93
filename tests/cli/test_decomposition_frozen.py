"""The decomposition after a generation run reads and measures with the settled objects frozen."""

from __future__ import annotations

import gc

from tests.cli.conftest import invoke


def test_the_decomposition_runs_with_the_settled_objects_frozen_and_gives_them_back(workdir, monkeypatch):
    """A full collection during the advice's reads would traverse the corpus, the modules and the
    run's results again: they are out of the collector's reach (`gc.freeze`) while the decomposition
    reads the trials and measures its advice, and given back afterwards."""
    import ragqual.app.generation_run as generation_run

    seen: dict[str, int] = {}
    reads, advice = generation_run.run_gap_causes_and_trials, generation_run.measured_advice

    def reads_spy(*args, **kwargs):
        seen["reads"] = gc.get_freeze_count()
        return reads(*args, **kwargs)

    def advice_spy(*args, **kwargs):
        seen["advice"] = gc.get_freeze_count()
        return advice(*args, **kwargs)

    monkeypatch.setattr(generation_run, "run_gap_causes_and_trials", reads_spy)
    monkeypatch.setattr(generation_run, "measured_advice", advice_spy)
    before = gc.get_freeze_count()
    result = invoke("generation", "--model", "mock", "--all-modes", "--repeats", "1")
    assert result.exit_code == 0, result.output
    assert "measured on this run:" in result.output  # the advice was measured, under the spy
    assert set(seen) == {"reads", "advice"} and all(count > 0 for count in seen.values())
    assert gc.get_freeze_count() == before == 0
