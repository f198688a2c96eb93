"""The RAG subject searches once per (query, retrieval settings): the repeats and variants of a run
reuse what e2e retrieval found (the run's strategy and every other strategy's candidates), and a
trial gets exactly what a fresh search would give it."""

from __future__ import annotations

from types import SimpleNamespace

from ragqual.adapters.cache import ResponseCache
from ragqual.core.corpus import Document
from ragqual.core.goldens import Golden
from ragqual.engine.services import services_for
from ragqual.engine.subject import Variant
from ragqual.pipeline.retrieval import RetrievalConfig
from ragqual.subjects.rag import RagSubject

TEXTS = {"a#0": "boil water for one minute", "b#0": "bleach two drops per litre", "c#0": "filter cloudy water"}


class CountingRetriever:
    """A retriever double: a ranking that depends on the query and the strategy, counted."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def retrieve(self, query: str, config: RetrievalConfig):
        self.calls.append((query, config.strategy, config.context_k))
        ids = sorted(TEXTS, key=lambda c: (hash((query, config.strategy, c)) % 97, c))
        sims = [round(1.0 - i / 10, 6) for i in range(len(ids))]
        rows = [SimpleNamespace(chunk_id=c) for c in ids[: config.context_k]]
        return SimpleNamespace(ranking=SimpleNamespace(chunk_ids=tuple(ids), similarities=tuple(sims)),
                               context=tuple(rows), texts=dict(TEXTS))

    def ranking(self, query: str, config: RetrievalConfig):
        return self.retrieve(query, config).ranking


def golden(gid: str, query: str) -> Golden:
    return Golden(id=gid, query=query, turns=(), relevant_doc_ids=("a",), must_include=("water",),
                  must_not_include=(), expect_refusal=False, tags=())


def subject_with(retriever: CountingRetriever) -> RagSubject:
    goldens = [golden("q1", "how long to boil"), golden("q2", "bleach per litre")]
    docs = [Document("a", "a.md", "boil water for one minute", "0" * 64)]
    return RagSubject(goldens, docs, retriever=lambda: retriever)


def trials(subject: RagSubject, tmp_path, variants, repeats: int) -> list:
    cache = ResponseCache.at(tmp_path / "cache")
    try:
        services = services_for(subject, cache)
        return [subject.run_one(case, v, "e2e", r, services)
                for v in variants for r in range(repeats) for case in subject.cases()]
    finally:
        cache.close()


def test_repeats_and_variants_search_once_per_query_and_settings(tmp_path):
    counted = CountingRetriever()
    variants = [Variant("mock", "mock"), Variant("mock-k2", "mock", axes={"context_k": 2}),
                Variant("mock-b", "mock", options={"temperature": 0.5})]
    subject = subject_with(counted)
    got = trials(subject, tmp_path / "memo", variants, repeats=3)
    # 2 questions x 2 distinct settings (context_k 5 and 2), each searched with its strategy and the 2 others
    assert len(counted.calls) == 2 * 2 * 3
    assert len(set(counted.calls)) == len(counted.calls)

    fresh = []  # a new subject per trial: nothing remembered
    for i, (v, r, case) in enumerate((v, r, c) for v in variants for r in range(3) for c in subject.cases()):
        one = subject_with(CountingRetriever())
        fresh.append(trials_one(one, tmp_path / f"fresh{i}", v, r, case.id))
    assert [(t.raw, t.context, t.rendered_prompt, t.cache_key) for t in got] == \
           [(t.raw, t.context, t.rendered_prompt, t.cache_key) for t in fresh]


def trials_one(subject: RagSubject, tmp_path, variant, repeat: int, case_id: str):
    cache = ResponseCache.at(tmp_path / "cache")
    try:
        case = next(c for c in subject.cases() if c.id == case_id)
        return subject.run_one(case, variant, "e2e", repeat, services_for(subject, cache))
    finally:
        cache.close()


def test_a_trial_cannot_change_what_the_next_one_is_given(tmp_path):
    subject = subject_with(CountingRetriever())
    variant = Variant("mock", "mock")
    case = subject.cases()[0]
    cache = ResponseCache.at(tmp_path / "cache")
    try:
        services = services_for(subject, cache)
        first = subject.run_one(case, variant, "e2e", 0, services)
        before = repr(first.raw)
        first.raw["injected"].append("x#0")
        first.raw["candidates"]["ids"].append("x#0")
        first.raw["candidates"]["byStrategy"]["bm25"]["similarities"].append(0.5)
        second = subject.run_one(case, variant, "e2e", 1, services)
    finally:
        cache.close()
    assert repr(second.raw) == before


def _repeats_of_one_question(tmp_path) -> dict:
    """Three repeats of the first question in oracle and e2e mode, one subject and cache: mode -> trials."""
    subject = subject_with(CountingRetriever())
    variant = Variant("mock", "mock")
    cache = ResponseCache.at(tmp_path / "cache")
    try:
        services = services_for(subject, cache)
        case = subject.cases()[0]
        return {mode: [subject.run_one(case, variant, mode, r, services) for r in range(3)] for mode in ("oracle", "e2e")}
    finally:
        cache.close()


def test_the_repeats_of_a_question_send_one_request_encoded_once(tmp_path, monkeypatch):
    from ragqual.engine import services as services_module

    encoded = []
    real = services_module.request_json
    monkeypatch.setattr(services_module, "request_json", lambda material: encoded.append(1) or real(material))
    got = [t for trials in _repeats_of_one_question(tmp_path).values() for t in trials]
    assert len(encoded) == 2  # one request per mode, whatever the repeat
    assert len({t.cache_key for t in got}) == 6  # the repeat index still makes each key its own


def test_the_repeats_of_a_question_share_one_rendered_prompt_equal_to_a_fresh_one(tmp_path):
    """The rendered prompt of a question's repeats is one object (so the run store encodes it once,
    `RunStore._prompt_text`), equal to what a subject with nothing remembered renders."""
    got = _repeats_of_one_question(tmp_path)
    case, variant = subject_with(CountingRetriever()).cases()[0], Variant("mock", "mock")
    for mode, repeats in got.items():
        assert all(t.rendered_prompt is repeats[0].rendered_prompt for t in repeats)
        fresh = trials_one(subject_with(CountingRetriever()), tmp_path / f"fresh-{mode}", variant, 2, case.id) \
            if mode == "e2e" else None
        if fresh is not None:
            assert fresh.rendered_prompt == repeats[0].rendered_prompt
    assert got["oracle"][0].rendered_prompt is not got["e2e"][0].rendered_prompt


class RankingOnlyRetriever(CountingRetriever):
    """A retriever whose full retrieval (with a context) serves only the run's own strategy."""

    def retrieve(self, query: str, config: RetrievalConfig):
        assert config.strategy == RetrievalConfig().strategy, "another strategy's context was built"
        return super().retrieve(query, config)

    def ranking(self, query: str, config: RetrievalConfig):
        return CountingRetriever.retrieve(self, query, config).ranking


def test_the_other_strategies_are_read_as_rankings_with_their_settings_built_once(tmp_path, monkeypatch):
    from ragqual.subjects import rag

    rag._other_configs.cache_clear()
    built = []
    real = RetrievalConfig.with_
    monkeypatch.setattr(RetrievalConfig, "with_", lambda self, **c: built.append(c) or real(self, **c))
    subject = subject_with(RankingOnlyRetriever())
    got = trials(subject, tmp_path / "memo", [Variant("mock", "mock")], repeats=3)
    assert built == [{"strategy": "dense"}, {"strategy": "bm25"}]  # once, not once per searched question
    want = trials(subject_with(CountingRetriever()), tmp_path / "plain", [Variant("mock", "mock")], repeats=3)
    assert [t.raw for t in got] == [t.raw for t in want]
    for trial in got:
        candidates = trial.raw["candidates"]
        assert type(candidates["ids"]) is list and type(candidates["similarities"]) is list
        assert all(type(c["ids"]) is list and type(c["similarities"]) is list for c in candidates["byStrategy"].values())
