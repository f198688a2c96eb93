"""The cache-key rule of axis variants: a declared axis always enters the key; an undeclared
incidental option never does."""

import json
from dataclasses import replace

from ragqual.adapters.llm import ChatMessage, ChatRequest
from ragqual.engine import loop
from ragqual.engine.services import services_for
from ragqual.subjects.sentiment.subject import SentimentSubject
from tests.engine.support import rows


def _key(services, variant, options):
    request = ChatRequest(system="s", messages=(ChatMessage("user", "hello"),), options=options)
    return services.cache_key(variant, request, 0)


def test_an_undeclared_option_keeps_the_key_and_a_declared_axis_changes_it(cache):
    subject = SentimentSubject()
    services = services_for(subject, cache, warm_up=False)
    variant, = subject.axis_variants({"temperature": [0.7]})
    base = _key(services, variant, {"temperature": 0.7, "seed": 42})
    assert _key(services, variant, {"temperature": 0.7, "seed": 42, "keep_alive": "5m"}) == base
    # the same request, another value of a declared axis that the request does not show: a new key
    other = replace(variant, axes={**variant.axes, "prompt": "v2"})
    assert _key(services, other, {"temperature": 0.7, "seed": 42}) != base
    # a declared call option in the request changes it too
    assert _key(services, variant, {"temperature": 0.0, "seed": 42}) != base


def _run(store, cache, variants):
    subject = SentimentSubject()
    cases = subject.cases()[:3]
    return loop.run(subject, variants, cases, store=store, services=services_for(subject, cache, warm_up=False))


def test_runs_hit_the_cache_across_incidental_options_and_miss_on_a_new_axis_value(store, cache):
    subject = SentimentSubject()
    first = _run(store, cache, subject.axis_variants({"temperature": [0, 0.7]}))
    assert (first.model_calls, first.cache_hits) == (6, 0)
    noisy = [replace(v, options={**v.options, "keep_alive": "5m"}) for v in subject.axis_variants({"temperature": [0, 0.7]})]
    again = _run(store, cache, noisy)
    assert (again.model_calls, again.cache_hits) == (0, 6)
    moved = _run(store, cache, subject.axis_variants({"temperature": [0, 0.7], "num_predict": [32]}))
    assert (moved.model_calls, moved.cache_hits) == (6, 0)


def test_each_variant_stores_its_axis_values(store, cache, head_db):
    subject = SentimentSubject()
    outcome = _run(store, cache, subject.axis_variants({"prompt": ["v1", "v2"]}))
    configs = dict(rows(head_db, "SELECT name, config FROM variant_configs"))
    stored = {name: json.loads(config)["axes"] for name, config in configs.items() if "axes" in json.loads(config)}
    assert stored["mock prompt=v2"] == {"model": "mock", "temperature": 0, "seed": 42, "num_predict": 8, "prompt": "v2"}
    params = store.get_run(outcome.run_id).params
    assert [v["axes"]["prompt"] for v in params["variants"]] == ["v1", "v2"]
