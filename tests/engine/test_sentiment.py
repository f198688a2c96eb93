import pytest

from ragqual.engine import loop
from ragqual.engine.aggregate import summarise_run
from ragqual.engine.services import services_for
from ragqual.engine.subject import Variant
from ragqual.subjects.sentiment.subject import SentimentSubject, keyword_label, read_label
from tests.engine.support import rows
from tests.support.fake_ollama import FakeOllama

# Hand-checked against the keyword lists: the baseline has no idea of negation or sarcasm.
BASELINE_MISSES = {
    "pos-not-bad-at-all": "neutral",       # "bad" and "happily" cancel out
    "pos-exceeded-expectations": "neutral",  # no keyword at all
    "neg-wouldnt-recommend": "positive",   # "recommend", negation ignored
    "neg-not-happy": "positive",           # "happy", negation ignored
    "neg-sarcastic-afternoon": "neutral",  # "fantastic" and "waste" cancel out
}


@pytest.mark.parametrize("sentence, label", [
    ("I love it and the staff were friendly", "positive"),
    ("broken, late and the worst", "negative"),
    ("great screen, terrible battery", "neutral"),
    ("The report has twelve pages.", "neutral"),
])
def test_keyword_baseline(sentence, label):
    assert keyword_label(sentence) == label


@pytest.mark.parametrize("text, label", [
    ("positive", "positive"), ("  Negative.", "negative"), ("The answer: NEUTRAL", "neutral"),
    ("<think>maybe positive?</think>negative", "negative"), ("<think>positive", None), ("unsure", None),
])
def test_read_label(text, label):
    assert read_label(text) == label


def test_the_cases_and_their_assertions():
    cases = SentimentSubject().cases()
    assert len(cases) == 15
    categories = {a.category for c in cases for a in c.assertions}
    assert categories == {"SENTIMENT", "FORMAT"}
    weights = {a.weight for c in cases for a in c.assertions}
    assert 0.0 in weights and max(weights) > 1.0
    misses = {c.slug: keyword_label(c.input) for c in cases if keyword_label(c.input) != c.meta["expected"]}
    assert misses == BASELINE_MISSES


def test_mock_end_to_end_stores_every_row(store, cache):
    subject = SentimentSubject()
    outcome = loop.run(subject, [Variant("mock", "mock")], subject.cases(), store=store,
                       services=services_for(subject, cache), repeats=2, argv=["test"])
    db = store.engine.url.database
    assert rows(db, "SELECT COUNT(*) FROM trials WHERE run_id=?", outcome.run_id) == [(30,)]
    # 11 polar cases with 4 assertions, 4 neutral cases with 3, twice
    assert rows(db, "SELECT COUNT(*) FROM assertion_results") == [(2 * (11 * 4 + 4 * 3),)]
    assert rows(db, "SELECT COUNT(*), SUM(perfect) FROM trial_scores") == [(30, 20)]
    # a polar miss to neutral keeps "not the opposite" (1) and the format (1) of 5: 0.4;
    # a miss to the opposite label keeps only the format: 0.2
    by_slug = dict(rows(db, "SELECT c.slug, s.score FROM trial_scores s JOIN trials t ON t.id=s.trial_id "
                            "JOIN cases c ON c.id=t.case_pk"))
    assert by_slug["pos-not-bad-at-all"] == pytest.approx(0.4)
    assert by_slug["neg-not-happy"] == pytest.approx(0.2)
    assert by_slug["pos-love-phone"] == 1.0
    summary = summarise_run(store.engine, outcome.run_id)
    (variant,) = summary.variants
    assert variant.aggregate.mean_score == pytest.approx((10 + 0.4 * 3 + 0.2 * 2) / 15)
    assert variant.aggregate.pass_rate == pytest.approx(10 / 15)
    assert rows(db, "SELECT SUM(value) FROM metric_values WHERE metric='label_correct'") == [(20.0,)]


def oracle_reply(body):
    """A stand-in model that knows every answer except one (and says "ready" to the warm-up)."""
    if "messages" not in body:
        return "ready"
    sentence = body["messages"][-1]["content"]
    if "wouldn't recommend" in sentence:
        return "Positive, because it mentions recommending."
    return {"pos": "positive", "neg": "negative"}.get(_slug_prefix(sentence), "neutral")


def _slug_prefix(sentence):
    for case in SentimentSubject().cases():
        if case.input == sentence:
            return case.slug[:3]
    raise AssertionError(sentence)


def test_ollama_model_through_the_real_client_then_cached(store, cache):
    subject = SentimentSubject()
    with FakeOllama(models={"tiny": "sha256:" + "ab" * 32}, reply=oracle_reply) as server:
        services = services_for(subject, cache, ollama_host=server.url)
        first = loop.run(subject, [Variant("tiny", "ollama:tiny")], subject.cases(), store=store,
                         services=services, repeats=1, argv=["test"])
        chats = server.calls["/api/chat"]
        generates = server.calls["/api/generate"]
        again = loop.run(subject, [Variant("tiny", "ollama:tiny")], subject.cases(), store=store,
                         services=services_for(subject, cache, ollama_host=server.url), repeats=1, argv=["test"])
        assert server.calls["/api/chat"] == chats and server.calls["/api/generate"] == generates
    assert (first.model_calls, chats) == (15, 15)
    assert generates == 1  # one warm-up before the first real call, none on the cached rerun
    assert (again.model_calls, again.cache_hits) == (0, 15)
    db = store.engine.url.database
    sent = rows(db, "SELECT COUNT(*) FROM trials t JOIN variant_configs v ON v.id=t.variant_id "
                    "WHERE v.provider='ollama' AND v.model='tiny'")
    assert sent == [(30,)]
    # the one wrong answer: label 0/4, format 0/1 ("because..." is not one label) -> 0 of 5
    wrong = rows(db, "SELECT s.score FROM trial_scores s JOIN trials t ON t.id=s.trial_id "
                     "JOIN cases c ON c.id=t.case_pk WHERE c.slug='neg-wouldnt-recommend' AND t.run_id=?", first.run_id)
    assert wrong == [(0.0,)]
    summary = summarise_run(store.engine, first.run_id)
    assert summary.variants[0].aggregate.pass_rate == pytest.approx(14 / 15)
    informational = rows(db, "SELECT a.passed FROM assertion_results a JOIN trials t ON t.id=a.trial_id "
                             "JOIN cases c ON c.id=t.case_pk WHERE c.slug='neg-wouldnt-recommend' "
                             "AND a.weight=0 AND t.run_id=?", first.run_id)
    assert informational == [(0,)]  # "because" is flagged, but at weight 0 it did not cost anything extra
