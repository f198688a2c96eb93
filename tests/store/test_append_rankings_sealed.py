"""RunStore.append_rankings: on SQLite the rows are given their ids and sealed from the values as
bound (no read-back), stored and sealed exactly as the read-back seal stores and seals them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ragqual.store import rankings as rankings_layout
from ragqual.store.models import RetrievalRanking
from ragqual.store.records import RankingRow
from ragqual.store.runstore import RunStore, bulk_insert_tuples, table_of
from ragqual.store.verify import verify
from tests.store.conftest import head_database
from tests.store.helpers import provenance
from tests.store.test_append_metrics import _every_table

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RANKINGS = [
    RankingRow("hybrid", "q1", ["a.md#0", "c.md#1", "b.md#3"], ["a.md", "c.md", "b.md"], [0.032787, 0.016393, 1e-06]),
    RankingRow("hybrid", "q2", ["é-doc#2", 'quote"d#0', "100#1"], ["é-doc", 'quote"d', "100"], [-0.123457, 0.5, 0.0]),
    RankingRow("hybrid", "q3", ["b.md#3"], ["b.md"], [123456.123456]),
    RankingRow("hybrid", "q4", [], [], []),  # nothing retrieved: depth 0
]


@pytest.fixture
def other_head_url(backend, request, tmp_path: Path) -> Iterator[str]:
    """A second fresh database at head on the same backend (the reference history)."""
    yield from head_database(backend, request, tmp_path / "reference.db")


def _read_back_rankings(self: RunStore, run_id: int, rankings: list[RankingRow]) -> None:
    """append_rankings as ragqual wrote it before: ids assigned by the database, the seal reading back."""
    payload = [rankings_layout.encode(run_id, r) for r in rankings]
    self._write(lambda s: bulk_insert_tuples(s, table_of(RetrievalRanking), rankings_layout.COLUMNS, payload), run_id)


def _write_history(url: str) -> None:
    ticks = iter(range(10_000))
    store = RunStore(RunStore.open(url).engine, clock=lambda: T0 + timedelta(microseconds=7 * next(ticks)))
    for _ in range(2):  # the second run's ids follow the first's
        run = store.start_run("retrieval", "rag", provenance())
        for strategy in ("dense", "hybrid"):
            store.append_rankings(run, [r._replace(strategy=strategy) for r in RANKINGS])
        store.add_event(run, "finished")
    store.engine.dispose()


def test_rankings_stored_and_sealed_as_a_read_back_seal_stores_them(store_head_url, other_head_url, monkeypatch,
                                                                     read_back_tables):
    with monkeypatch.context() as m:
        m.setattr(RunStore, "append_rankings", _read_back_rankings)
        _write_history(other_head_url)
    read_back_tables.clear()
    _write_history(store_head_url)

    if store_head_url.startswith("sqlite"):
        assert "retrieval_rankings" not in read_back_tables  # fails on the read-back writer
    reference, written = _every_table(other_head_url), _every_table(store_head_url)
    assert len(written["retrieval_rankings"]) == 2 * 2 * len(RANKINGS)
    for name in reference:
        assert written[name] == reference[name], name
    verdict = verify(RunStore.open(store_head_url).engine)
    assert verdict.findings == []
