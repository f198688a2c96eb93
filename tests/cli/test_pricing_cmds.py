"""Prices end to end: a run records its snapshot and costs, reports show cost per variant and per
passing answer, `reprice` appends, `--pricing-snapshot` pins, `audit` lists every price."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ragqual.cli.main import main
from ragqual.core.display import fmt_value
from tests.cli.conftest import isolated_project

PRICES = 'currency = "USD"\ndate = 2026-12-01\n\n[[model]]\nmatch = "mock"\ninput = 1000\noutput = 2000\n'
REPRICED = 'currency = "EUR"\ndate = 2026-12-02\n\n[[model]]\nmatch = "mock*"\ninput = 500\noutput = 500\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    return isolated_project(tmp_path, monkeypatch)


def ragqual(args, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(list(args))
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def query(root: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(root / "eval-results" / "eval.db")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def expected(root: Path, run_id: int, price_in: float, price_out: float) -> tuple[float, float]:
    """(total cost, cost per passing answer) of a run, from its stored tokens and scores."""
    rows = query(root, "SELECT t.prompt_tokens, t.completion_tokens, s.perfect FROM trials t "
                       f"JOIN trial_scores s ON s.trial_id = t.id WHERE t.run_id = {run_id}")
    total = sum(p * price_in + c * price_out for p, c, _ in rows) / 1e6
    return total, total / sum(1 for *_, ok in rows if ok)


class money(str):
    """A cost cell as printed: equal to the text of a value within the last printed digit (a
    value on a rounding boundary may round either way depending on the order of the sum)."""

    def __new__(cls, value: float) -> "money":
        out = super().__new__(cls, fmt_value(value, "cost"))
        out.value = value
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and abs(float(other) - self.value) <= 0.00005 + 1e-12

    __hash__ = str.__hash__


def cost_line(out: str, title: str = "cost per variant") -> list[str]:
    lines = out[out.index(title):].splitlines()
    return lines[2].split()


def run_sentiment(capsys) -> str:
    code, out, err = ragqual(["run", "--subject", "sentiment", "--model", "mock", "--trial-count", "2"], capsys)
    assert code == 0, err
    return out


def test_a_run_snapshots_the_list_and_report_shows_cost_per_variant_and_per_pass(project, capsys):
    (project / "pricing.toml").write_text(PRICES, encoding="utf-8")
    summary = run_sentiment(capsys)
    total, per_pass = expected(project, 1, 1000, 2000)
    assert query(project, "SELECT COUNT(*), COUNT(DISTINCT snapshot_id) FROM trial_costs") == [(30, 1)]
    header, row = summary.splitlines()[0].split(), summary.splitlines()[1].split()
    assert dict(zip(header, row))["cost"] == money(total) and dict(zip(header, row))["currency"] == "USD"
    code, out, err = ragqual(["report", "1"], capsys)
    assert code == 0, err
    assert cost_line(out) == ["mock", "30", "20", "30", money(total), money(per_pass), "USD"]
    code, out, _ = ragqual(["--json", "report", "1"], capsys)
    costs = json.loads(out)["cost per variant"]
    assert costs[0]["cost"] == pytest.approx(total) and costs[0]["cost_per_pass"] == pytest.approx(per_pass)
    code, page, _ = ragqual(["report", "1", "--format", "html"], capsys)
    assert code == 0 and "cost per variant" in page and "cost_per_pass" in page and money(total) in page


def test_reprice_appends_reports_read_the_newest_unless_pinned_and_audit_lists_both(project, capsys):
    (project / "pricing.toml").write_text(PRICES, encoding="utf-8")
    run_sentiment(capsys)
    old_rows = query(project, "SELECT * FROM trial_costs ORDER BY id")
    (project / "new.toml").write_text(REPRICED, encoding="utf-8")
    code, out, err = ragqual(["reprice", "1", "--pricing", "new.toml"], capsys)
    assert code == 0, err
    assert "priced 30 of 30 trial(s) under snapshot 2" in out and "old rows kept" in out
    assert query(project, "SELECT * FROM trial_costs ORDER BY id")[:30] == old_rows
    assert query(project, "SELECT COUNT(*) FROM trial_costs") == [(60,)]
    new_total, new_per_pass = expected(project, 1, 500, 500)
    old_total, old_per_pass = expected(project, 1, 1000, 2000)
    assert cost_line(ragqual(["report", "1"], capsys)[1])[4:] == [money(new_total), money(new_per_pass), "EUR"]
    sha = query(project, "SELECT sha256 FROM pricing_snapshots WHERE id = 1")[0][0]
    for ref in ("1", sha[:10]):
        code, out, err = ragqual(["report", "1", "--pricing-snapshot", ref], capsys)
        assert code == 0, err
        assert cost_line(out)[4:] == [money(old_total), money(old_per_pass), "USD"]
    code, out, _ = ragqual(["audit", "1"], capsys)
    assert "prices over time (2 cost row(s), oldest first" in out
    assert "snapshot 1" in out and "'mock': 1000 in / 2000 out" in out and "'mock*': 500 in / 500 out" in out
    code, out, _ = ragqual(["verify"], capsys)
    assert code == 0 and "0 unsealed" in out


def test_the_same_list_again_appends_nothing(project, capsys):
    (project / "pricing.toml").write_text(PRICES, encoding="utf-8")
    run_sentiment(capsys)
    code, out, _ = ragqual(["reprice", "1", "--pricing", "pricing.toml"], capsys)
    assert code == 0 and "already under snapshot 1" in out and "nothing appended" in out
    assert query(project, "SELECT COUNT(*) FROM trial_costs") == [(30,)]


def test_without_a_price_list_cost_is_a_dash_never_zero(project, capsys):
    """The mock backend reports cost 0.0 on every trial; with no price it is unknown, not free."""
    summary = run_sentiment(capsys)
    assert query(project, "SELECT COUNT(*), COUNT(cost) FROM trial_costs") == [(30, 0)]
    header, row = summary.splitlines()[0].split(), summary.splitlines()[1].split()
    assert {k: v for k, v in zip(header, row) if k in ("cost", "cost_per_pass", "currency")} == dict.fromkeys(
        ("cost", "cost_per_pass", "currency"), "-")
    assert cost_line(ragqual(["report", "1"], capsys)[1]) == ["mock", "30", "20", "0", "-", "-", "-"]


def test_a_bad_price_list_is_refused_before_the_run_starts(project, capsys):
    (project / "pricing.toml").write_text(PRICES.replace("output = 2000", "output = -3"), encoding="utf-8")
    code, out, err = ragqual(["run", "--subject", "sentiment", "--model", "mock", "--trial-count", "1"], capsys)
    assert code == 2
    assert f"{project / 'pricing.toml'}:7: model 1 ('mock'): `output` must be a number >= 0" in err
    assert not (project / "eval-results" / "eval.db").exists()  # nothing written
    code, _, err = ragqual(["reprice", "1", "--pricing", "pricing.toml"], capsys)
    assert code == 2 and "pricing.toml:7" in err


def test_the_pyproject_table_prices_a_run(project, capsys):
    (project / "pyproject.toml").write_text(
        '[tool.ragqual]\n\n[tool.ragqual.pricing]\ncurrency = "USD"\ndate = 2026-12-01\n\n'
        '[[tool.ragqual.pricing.model]]\nmatch = "mock"\ninput = 1000\noutput = 2000\n', encoding="utf-8")
    run_sentiment(capsys)
    total, _ = expected(project, 1, 1000, 2000)
    assert cost_line(ragqual(["report", "1"], capsys)[1])[4] == money(total)


def test_compare_shows_both_runs_cost(project, capsys):
    (project / "pricing.toml").write_text(PRICES, encoding="utf-8")
    run_sentiment(capsys)
    (project / "pricing.toml").write_text(REPRICED, encoding="utf-8")
    run_sentiment(capsys)
    old_total, old_pp = expected(project, 1, 1000, 2000)
    new_total, new_pp = expected(project, 2, 500, 500)
    code, out, err = ragqual(["compare", "1", "2"], capsys)
    assert code == 0, err
    assert cost_line(out, "cost per variant (BASE -> NEW") == [
        "mock", money(old_total), money(new_total), money(old_pp), money(new_pp), "USD", "->", "EUR"]
    code, out, _ = ragqual(["--json", "compare", "1", "2"], capsys)
    assert json.loads(out)["costs"][0]["cost (new)"] == pytest.approx(new_total)
    code, out, _ = ragqual(["compare", "1", "2", "--format", "html"], capsys)
    assert "cost per variant" in out


def test_cost_per_variant_from_a_summary_equals_reading_the_run_again(project, capsys):
    """compare builds each run's cost per variant from the trials its summary read: the same rows
    as reading the run again, with and without a pinned snapshot, after a reprice too."""
    from sqlalchemy import create_engine

    from ragqual.app.pricing import summary_variant_costs, variant_cost_rows
    from ragqual.store.runstore import RunStore
    from ragqual.store.summaries import summarise_run

    (project / "pricing.toml").write_text(PRICES, encoding="utf-8")
    run_sentiment(capsys)
    (project / "pricing.toml").write_text(REPRICED, encoding="utf-8")
    assert ragqual(["reprice", "1", "--pricing", "pricing.toml"], capsys)[0] == 0
    engine = create_engine(f"sqlite:///{project / 'eval-results' / 'eval.db'}")
    summary = summarise_run(engine, RunStore(engine).get_run(1))
    assert summary.scored_trials and len(summary.scored_trials) == query(project, "SELECT COUNT(*) FROM trials")[0][0]
    for snapshot in (None, 1, 2):
        assert summary_variant_costs(engine, summary, snapshot=snapshot) == variant_cost_rows(engine, 1, snapshot=snapshot)
    assert [c.currency for c in summary_variant_costs(engine, summary)] == ["EUR"]


def test_matrix_shows_cost_per_variant_and_per_pass(workdir, capsys):
    """A generation run priced by the project's pricing.toml: the capability table's cost lines."""
    (workdir / "pricing.toml").write_text(PRICES, encoding="utf-8")
    try:
        code, out, err = ragqual(["matrix", "--models", "mock", "--limit", "2"], capsys)
        assert code == 0, err
        run_id = int(out.strip().splitlines()[-1].split()[1].rstrip(";"))
        db = workdir / "eval-results" / "eval.db"
        con = sqlite3.connect(db)
        rows = con.execute("SELECT t.prompt_tokens, t.completion_tokens, s.perfect FROM trials t JOIN trial_scores s "
                           f"ON s.trial_id = t.id WHERE t.run_id = {run_id}").fetchall()
        con.close()
        total = sum(p * 1000 + c * 2000 for p, c, _ in rows) / 1e6
        passing = sum(1 for *_, ok in rows if ok)
        cells = cost_line(out, "cost per variant (all modes")
        assert cells[:5] == ["mock", str(len(rows)), str(passing), str(len(rows)), money(total)]
        assert cells[6] == "USD"
        code, again, _ = ragqual(["matrix", "--run", str(run_id), "--format", "html"], capsys)
        assert code == 0 and "cost per variant" in again
        code, data, _ = ragqual(["--json", "matrix", "--run", str(run_id)], capsys)
        assert json.loads(data)["costs"][0]["cost"] == pytest.approx(total)
    finally:
        (workdir / "pricing.toml").unlink()
