"""Rankings stored compactly (migration 0007): one `retrieval_rankings` row per (run, strategy,
question), read back hit by hit, shown by `v_retrieval_hits`, guarded and sealed like every history
table; runs of the old layout (one `retrieval_results` row per rank) read back the same way after
the upgrade. On both backends."""

from __future__ import annotations

import json
import struct

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError

from ragqual.cli.main import main
from ragqual.store import db, rankings, sealing
from ragqual.store.records import RankedScores, RankingRow, RetrievalRow
from ragqual.store.retrieval_reads import retrieval_hits, retrieval_scores
from ragqual.store.runstore import RunStore
from ragqual.store.verify import verify
from tests.store.conftest import dbapi_error, raw_connect
from tests.store.helpers import append_old_layout_hits, provenance
from tests.store.test_every_verb import POSTGRES_VERBS, SQLITE_VERBS

RANKINGS = [
    RankingRow("hybrid", "q1", ["a.md#0", "c.md#1", "b.md#3"], ["a.md", "c.md", "b.md"], [0.032787, 0.016393, 1e-06]),
    RankingRow("dense", "q2", ["é-doc#2", 'quote"d#0'], ["é-doc", 'quote"d'], [-0.123457, 0.5]),
    RankingRow("dense", "q1", ["b.md#3"], ["b.md"], [123456.123456]),
    RankingRow("bm25", "q1", [], [], []),  # nothing retrieved: stored, depth 0, no hit
]
OLD_HITS = [
    RetrievalRow("dense", "q1", 1, "france.md#2", "france.md", 0.83),
    RetrievalRow("dense", "q1", 2, "germany.md#0", "germany.md", 0.41),
    RetrievalRow("bm25", "q1", 1, "germany.md#0", "germany.md", 7.25),
]
VIEW = "SELECT strategy, query_id, rank, chunk_id, doc_id, score FROM v_retrieval_hits WHERE run_id = {run} " \
       "ORDER BY strategy, query_id, rank"


def hits_of(ranking_rows: list[RankingRow]) -> list[RetrievalRow]:
    """What reading the rankings back must give: every hit, by strategy, question and rank."""
    hits = [RetrievalRow(r.strategy, r.query_id, n, c, d, s)
            for r in ranking_rows for n, (c, d, s) in enumerate(zip(r.chunk_ids, r.doc_ids, r.scores), start=1)]
    return sorted(hits, key=lambda h: (h.strategy, h.query_id, h.rank))


def bits(hits: list[RetrievalRow]) -> list[tuple]:
    """Hits with each score as its IEEE bytes: equal means bit for bit, not approximately."""
    return [(*h[:5], struct.pack("<d", h.score)) for h in hits]


def view_rows(url: str, run: int) -> list[RetrievalRow]:
    con = raw_connect(url)
    try:
        return [RetrievalRow(*r) for r in con.execute(VIEW.format(run=run)).fetchall()]
    finally:
        con.close()


def ragqual(url: str, args, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--db", url, *args])
    out, err = capsys.readouterr()
    return caught.value.code, out, err


# -- the layout, pure ----------------------------------------------------------------------------

def test_a_ranking_is_one_row_of_json_arrays_and_expands_to_its_hits_bit_for_bit():
    encoded = [rankings.encode(7, r) for r in RANKINGS]
    assert encoded[1] == (7, "dense", "q2", 2, '["é-doc#2","quote\\"d#0"]', '["é-doc","quote\\"d"]', "[-0.123457,0.5]")
    assert encoded[3][3:] == (0, "[]", "[]", "[]")
    expanded = [hit for row in encoded for hit in rankings.expand(*row[1:3], *row[4:])]
    assert bits(sorted(expanded, key=lambda h: (h.strategy, h.query_id, h.rank))) == bits(hits_of(RANKINGS))


def test_a_ranking_whose_lists_differ_in_length_or_hold_nan_is_refused():
    with pytest.raises(ValueError, match="2 chunk ids, 1 doc ids and 2 scores"):
        rankings.encode(1, RankingRow("dense", "q1", ["a#0", "b#0"], ["a"], [0.5, 0.4]))
    with pytest.raises(ValueError):
        rankings.encode(1, RankingRow("dense", "q1", ["a#0"], ["a"], [float("nan")]))


# -- the store, both backends ---------------------------------------------------------------------

@pytest.fixture
def ranked(store_head_url):
    """A finished retrieval run holding RANKINGS; yields (url, run id)."""
    store = RunStore.open(store_head_url)
    run = store.start_run("retrieval", "rag", provenance())
    store.append_rankings(run, RANKINGS)
    store.add_event(run, "finished")
    store.engine.dispose()
    return store_head_url, run


def test_rankings_read_back_as_hits_and_the_view_shows_the_same_rows(ranked):
    url, run = ranked
    engine = db.make_engine(url)
    hits = retrieval_hits(engine, run)
    engine.dispose()
    assert bits(hits) == bits(hits_of(RANKINGS))
    assert bits(view_rows(url, run)) == bits(hits)
    con = raw_connect(url)
    stored = con.execute(f"SELECT strategy, query_id, depth FROM retrieval_rankings WHERE run_id = {run} ORDER BY id")
    assert [tuple(r) for r in stored.fetchall()] == [(r.strategy, r.query_id, len(r.chunk_ids)) for r in RANKINGS]
    assert con.execute(f"SELECT COUNT(*) FROM retrieval_results WHERE run_id = {run}").fetchone()[0] == 0
    con.close()


def as_rankings(hits: list[RetrievalRow]) -> list[RankedScores]:
    """Hits (by strategy, question and rank) grouped back into each ranking's doc ids and scores."""
    grouped: dict[tuple[str, str], RankedScores] = {}
    for h in hits:
        grouped.setdefault((h.strategy, h.query_id), RankedScores(h.strategy, h.query_id, [], []))
        grouped[(h.strategy, h.query_id)].doc_ids.append(h.doc_id)
        grouped[(h.strategy, h.query_id)].scores.append(h.score)
    return list(grouped.values())


def score_bits(rankings: list[RankedScores]) -> list[tuple]:
    return [(r.strategy, r.query_id, r.doc_ids, [struct.pack("<d", s) for s in r.scores]) for r in rankings]


def test_scores_read_back_as_the_same_hits_one_entry_per_ranking(ranked):
    url, run = ranked
    engine = db.make_engine(url)
    scores, hits = retrieval_scores(engine, run), retrieval_hits(engine, run)
    engine.dispose()
    assert [(r.strategy, r.query_id) for r in scores] == sorted((r.strategy, r.query_id) for r in RANKINGS)
    assert score_bits([r for r in scores if r.doc_ids]) == score_bits(as_rankings(hits))
    assert [r for r in scores if not r.doc_ids] == [RankedScores("bm25", "q1", [], [])]


def test_scores_of_old_rows_and_of_both_layouts_in_one_run_read_as_the_hits_do(store_head_url):
    """A run of `retrieval_results` rows only, and one holding rows of both layouts (written by hand):
    the rankings `retrieval_scores` gives hold the hits `retrieval_hits` gives, in the same order."""
    store = RunStore.open(store_head_url)
    old_run, both_run = (store.start_run("retrieval", "rag", provenance()) for _ in range(2))
    append_old_layout_hits(store.engine, old_run, OLD_HITS)
    store.append_rankings(both_run, RANKINGS)
    append_old_layout_hits(store.engine, both_run, OLD_HITS)
    for run in (old_run, both_run):
        hits = retrieval_hits(store.engine, run)
        assert score_bits([r for r in retrieval_scores(store.engine, run) if r.doc_ids]) == score_bits(as_rankings(hits))
    merged = {(r.strategy, r.query_id): r.doc_ids for r in retrieval_scores(store.engine, both_run)}
    store.engine.dispose()
    assert merged[("dense", "q1")] == ["france.md", "b.md", "germany.md"]  # rank 1 twice (the old row first), rank 2
    assert merged[("bm25", "q1")] == ["germany.md"]


def test_update_delete_replace_and_a_second_ranking_of_a_question_are_refused(ranked):
    url, run = ranked
    verbs = SQLITE_VERBS if make_url(url).get_backend_name() == "sqlite" else POSTGRES_VERBS
    statements = {verb: sql.format(table="retrieval_rankings") for verb, sql in verbs.items()}
    statements["second ranking"] = (  # a new id, the same (run, strategy, question)
        "INSERT INTO retrieval_rankings (run_id, strategy, query_id, depth, chunk_ids, doc_ids, scores) "
        "SELECT run_id, strategy, query_id, 0, '[]', '[]', '[]' FROM retrieval_rankings "
        "WHERE id = (SELECT MIN(id) FROM retrieval_rankings)")
    before = view_rows(url, run)
    outcomes = {}
    for verb, statement in statements.items():
        con = raw_connect(url)
        try:
            con.execute(statement)
            con.commit()
            outcomes[verb] = "accepted"
        except dbapi_error(url) as exc:
            message = str(exc)
            outcomes[verb] = "refused" if "append-only" in message or "uq_retrieval_rankings_query" in message \
                else f"failed otherwise: {message}"
        finally:
            con.close()
    assert outcomes == dict.fromkeys(statements, "refused")
    assert view_rows(url, run) == before
    store = RunStore.open(url)
    with pytest.raises(IntegrityError):
        store.append_rankings(run, RANKINGS[:1])
    store.engine.dispose()
    assert view_rows(url, run) == before


def _drop_update_guard(url: str) -> str:
    if make_url(url).get_backend_name() == "sqlite":
        return "DROP TRIGGER retrieval_rankings_append_only_update"
    return "DROP TRIGGER retrieval_rankings_append_only ON retrieval_rankings"


def test_a_ranking_edited_outside_ragqual_is_named_by_verify(ranked, capsys):
    url, run = ranked
    assert ragqual(url, ["verify"], capsys)[0] == 0
    con = raw_connect(url)
    row_id = con.execute("SELECT id FROM retrieval_rankings WHERE strategy = 'hybrid'").fetchone()[0]
    con.execute(_drop_update_guard(url))
    con.execute(f"UPDATE retrieval_rankings SET scores = REPLACE(scores, '0.016393', '0.9') WHERE id = {row_id}")
    con.commit()
    con.close()
    assert view_rows(url, run)[4][:4] == ("hybrid", "q1", 2, "c.md#1") and view_rows(url, run)[4].score == 0.9
    code, out, err = ragqual(url, ["verify"], capsys)
    assert code == 1
    assert f"retrieval_rankings row {row_id}: edited" in out
    assert "does not match its seals" in err


def test_a_0006_history_with_ranked_rows_upgrades_and_reads_back_the_same(store_url, monkeypatch):
    """A run stored as ragqual did before 0007 (one sealed `retrieval_results` row per rank) reads back
    row for row after the upgrade, beside a new run stored compactly; the view shows both; verify passes."""
    engine = db.make_engine(store_url)
    db.upgrade(engine, "0006")
    before_0007 = tuple(t for t in sealing.SEALED_TABLES if t not in ("retrieval_rankings", "labels", "judgements",
                                                                      "judge_audits", "pricing_snapshots", "trial_costs",
                                                                      "texts", "run_summaries"))  # made later
    real_high_water = sealing.high_water
    monkeypatch.setattr(sealing, "high_water", lambda session, tables=before_0007: real_high_water(session, tables))
    old_store = RunStore(engine)  # seals the tables a 0006 database has, as ragqual at 0006 did
    old_run = old_store.start_run("retrieval", "rag", provenance())
    append_old_layout_hits(engine, old_run, OLD_HITS)
    old_store.add_event(old_run, "finished")
    monkeypatch.undo()
    with engine.connect() as conn:
        raw_before = conn.execute(text("SELECT * FROM retrieval_results ORDER BY id")).all()

    db.upgrade(engine)
    store = RunStore(engine)
    new_run = store.start_run("retrieval", "rag", provenance())
    store.append_rankings(new_run, RANKINGS)
    store.add_event(new_run, "finished")

    with engine.connect() as conn:
        assert conn.execute(text("SELECT * FROM retrieval_results ORDER BY id")).all() == raw_before
        assert conn.execute(text(f"SELECT COUNT(*) FROM retrieval_rankings WHERE run_id = {old_run}")).scalar_one() == 0
    old_hits = sorted(OLD_HITS, key=lambda h: (h.strategy, h.query_id, h.rank))
    assert bits(retrieval_hits(engine, old_run)) == bits(old_hits)
    assert bits(retrieval_hits(engine, new_run)) == bits(hits_of(RANKINGS))
    assert bits(view_rows(store_url, old_run)) == bits(old_hits)
    assert bits(view_rows(store_url, new_run)) == bits(hits_of(RANKINGS))
    verdict = verify(engine)
    engine.dispose()
    assert verdict.findings == [] and verdict.sealed_runs == [old_run, new_run]


def test_the_view_names_the_row_that_holds_each_hit(ranked):
    url, run = ranked
    con = raw_connect(url)
    rows = con.execute("SELECT DISTINCT stored_in, row_id, query_id, strategy FROM v_retrieval_hits "
                       f"WHERE run_id = {run} ORDER BY row_id").fetchall()
    ids = {(r[0], r[1]) for r in con.execute(f"SELECT 'retrieval_rankings', id FROM retrieval_rankings WHERE run_id = {run} "
                                             "AND depth > 0").fetchall()}
    con.close()
    assert {(r[0], r[1]) for r in rows} == ids
    assert [tuple(r[2:]) for r in rows] == [(r.query_id, r.strategy) for r in RANKINGS if r.chunk_ids]


def test_ragqual_sql_reads_the_view(ranked, capsys):
    """The read-only console lets the view expand the JSON (json_each on SQLite, a lateral set-returning
    function on PostgreSQL) and shows the hits as the reader returns them."""
    url, run = ranked
    code, out, err = ragqual(url, ["--json", "sql", f"SELECT strategy, query_id, rank, chunk_id, doc_id, score "
                                   f"FROM v_retrieval_hits WHERE run_id = {run} ORDER BY strategy, query_id, rank"], capsys)
    assert (code, err) == (0, "")
    assert [RetrievalRow(**row) for row in json.loads(out)] == hits_of(RANKINGS)
