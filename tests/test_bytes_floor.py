"""benchmarks/bench_bytes_floor.py: the compact layout it measures holds the history's facts.

The benchmark's figure (the bytes per trial a plain-SQL layout cannot go below) only means
something if that layout keeps every text and every row; these tests build it from a real
history and check the check itself catches a lost piece or a changed metric."""

from __future__ import annotations

import random
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import one_document_project, ragqual

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_bytes_floor as floor_bench  # noqa: E402

ANSWER = "Boil the spring water for 1 minute. Filter it first when it is cloudy!\nStore it covered."


@pytest.mark.parametrize("bits", [0, 1, 3])
def test_pieces_join_back_to_the_text(bits: int) -> None:
    rng = random.Random(bits)
    alphabet = "ab .!?:;\n\"'\\n"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        pieces = floor_bench.pieces_of(text, bits)
        assert "".join(pieces) == text
        assert all(pieces)


def test_equal_passages_are_cut_alike_wherever_they_appear() -> None:
    passage = "The pump primes in 30 seconds. Open the valve. Close it after use.\n"
    first = floor_bench.pieces_of("Intro line.\n" + passage, 0)
    second = floor_bench.pieces_of("[1] " + passage + "Tail.", 0)
    shared = set(first) & set(second)
    assert "Open the valve. " in shared and "Close it after use.\n" in shared


@pytest.fixture
def history(tmp_path, monkeypatch, capsys) -> Path:
    project = one_document_project(tmp_path, monkeypatch, ANSWER)
    db = project / "eval-results" / "eval.db"
    for args in (["retrieval"], ["generation", "--model", "mock", "--all-modes", "--repeats", "2"]):
        code, _, err = ragqual(db, args, capsys)
        assert code == 0, err
    return db


def _build(history: Path, tmp_path: Path, zlib_texts: bool = False, lean: bool = False):
    src = sqlite3.connect(history)
    dst = sqlite3.connect(tmp_path / ("floor-z.db" if zlib_texts else "floor.db"))
    with dst:
        floor = floor_bench.build(src, dst, 1, zlib_texts, lean)
    return src, dst, floor


@pytest.mark.parametrize("lean", [False, True])
def test_the_floor_holds_every_text_and_row_of_a_real_history(history: Path, tmp_path: Path, lean: bool) -> None:
    src, dst, floor = _build(history, tmp_path, lean=lean)
    floor_bench.check(src, dst, floor)  # raises SystemExit on any difference
    texts = src.execute("SELECT v.rendered_prompt, v.raw_output FROM v_trial_texts v ORDER BY v.trial_id").fetchall()
    assert len(texts) == 6
    rebuilt = dst.execute("SELECT p.body, r.body FROM trials t JOIN v_texts p ON p.id = t.rendered_prompt "
                          "JOIN v_texts r ON r.id = t.raw_output ORDER BY t.id").fetchall()
    assert rebuilt == texts
    assert dst.execute("SELECT COUNT(*) FROM pieces").fetchone()[0] < dst.execute(
        "SELECT SUM(json_array_length(pieces)) FROM texts").fetchone()[0]  # repeated passages stored once
    indexes = {name for (name,) in dst.execute("SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL")}
    assert ("ix_metric_values_trial_id" in indexes) is not lean and "ix_pieces_key" in indexes


def test_the_check_catches_a_changed_piece_and_a_changed_metric(history: Path, tmp_path: Path) -> None:
    src, dst, floor = _build(history, tmp_path)
    dst.execute("UPDATE pieces SET body = body || 'x' WHERE id = 1")
    with pytest.raises(SystemExit, match="does not reassemble"):
        floor_bench.check(src, dst, floor)
    again = tmp_path / "again"
    again.mkdir()
    src, dst, floor = _build(history, again)
    dst.execute("UPDATE metric_values SET value = value + 1 WHERE id = (SELECT MIN(id) FROM metric_values)")
    with pytest.raises(SystemExit, match="metric values differ"):
        floor_bench.check(src, dst, floor)


def test_the_compressed_variant_holds_the_same_texts(history: Path, tmp_path: Path) -> None:
    src, dst, floor = _build(history, tmp_path, zlib_texts=True)
    floor_bench.check(src, dst, floor)
    assert dst.execute("SELECT COUNT(*) FROM ztexts").fetchone()[0] == len(floor.texts)
