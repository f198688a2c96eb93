"""`whatif_run.unknown_chunks` reads each strategy's candidate lists once, however many settings
cut them (the base read them once per setting), and names the same chunks."""

from __future__ import annotations

from ragqual.app.whatif_run import unknown_chunks
from ragqual.core import whatif
from ragqual.core.whatif import Question, Setting


def test_each_strategy_read_once_and_the_same_chunks(monkeypatch):
    questions = [Question("a", None, False, (), (), (), ("d#0", "x#1"), (0.9, 0.5), {"bm25": (("y#0", "d#0"), (0.4, 0.9))}),
                 Question("b", None, True, (), (), (), ("x#1",), (0.7,), {"bm25": (("z#2",), (0.2,))})]
    settings = [Setting(t, 5, s) for s in (None, "bm25") for t in (None, 0.3, 0.5, 0.7)]
    texts = {"d#0": "d"}
    read: list[tuple[str, str | None]] = []
    candidates = Question.candidates

    def counted(self, strategy):
        read.append((self.case_id, strategy))
        return candidates(self, strategy)
    monkeypatch.setattr(whatif.Question, "candidates", counted)
    assert unknown_chunks(questions, settings, texts) == ["x#1", "y#0", "z#2"]
    assert read == [("a", None), ("a", "bm25"), ("b", None), ("b", "bm25")]
    assert unknown_chunks(questions, [Setting(None, 5)], texts) == ["x#1"]
