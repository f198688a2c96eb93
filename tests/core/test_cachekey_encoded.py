"""The response-cache key from a request encoded once (`request_json=`) is the key of the same
request given as material: byte for byte, whatever the model name, digest or request hold."""

from __future__ import annotations

import random

import pytest

from ragqual.core.cachekey import request_json, response_cache_key

NASTY = ["", "mock", "\x00request\x00", '"request":', "}", "ollama:qwen2.5:7b", "https://u:p@host/v1#m",
         "é ü 漢字 \u2028", "\\", '{"v":1}']


def _material(rng: random.Random) -> dict:
    return {"system": rng.choice(NASTY), "messages": [{"role": "user", "content": rng.choice(NASTY) * rng.randint(0, 3)}
                                                      for _ in range(rng.randint(0, 3))],
            "options": {rng.choice(NASTY): rng.choice([0, 1.5, None, True, "x", [1, 2]]) for _ in range(rng.randint(0, 3))},
            "format": rng.choice([None, "json", {"type": "object", "\x00request\x00": 1}])}


@pytest.mark.parametrize("seed", range(40))
def test_an_encoded_request_gives_the_key_of_its_material(seed):
    rng = random.Random(seed)
    material = _material(rng)
    args = {"provider": rng.choice(NASTY), "model": rng.choice(NASTY), "digest": rng.choice([None, *NASTY]),
            "repeat_index": rng.randint(0, 5)}
    assert response_cache_key(**args, request_json=request_json(material)) == \
        response_cache_key(**args, request_material=material)


def test_a_key_needs_one_form_of_the_request():
    with pytest.raises(TypeError):
        response_cache_key(provider="p", model="m", digest=None, repeat_index=0)
    with pytest.raises(TypeError):
        response_cache_key(provider="p", model="m", digest=None, repeat_index=0, request_material={},
                           request_json="{}")


@pytest.mark.parametrize("seed", range(20))
def test_the_request_as_utf8_bytes_gives_the_same_key(seed):
    rng = random.Random(1000 + seed)
    material = _material(rng)
    args = {"provider": rng.choice(NASTY), "model": rng.choice(NASTY), "digest": rng.choice([None, *NASTY]),
            "repeat_index": rng.randint(0, 5)}
    assert response_cache_key(**args, request_json=request_json(material).encode("utf-8")) == \
        response_cache_key(**args, request_material=material)


def test_the_material_around_the_request_is_encoded_once_per_model_and_repeat():
    from ragqual.core import cachekey

    cachekey.key_frame.cache_clear()
    keys = {response_cache_key(provider="ollama", model="https://u:p@host/v1#m", digest="d", repeat_index=r,
                               request_json=request_json({"prompt": f"question {q} é"}))
            for q in range(50) for r in range(3)}
    assert len(keys) == 150
    info = cachekey.key_frame.cache_info()
    assert (info.misses, info.hits) == (3, 147)
    # the memo is keyed on everything it encodes: another digest or credential is another frame
    other = response_cache_key(provider="ollama", model="https://u:q@host/v1#m", digest="d", repeat_index=0,
                               request_json=request_json({"prompt": "question 0 é"}))
    assert other not in keys and cachekey.key_frame.cache_info().misses == 4


def test_the_memoized_frame_tells_values_apart_that_json_tells_apart():
    for first, second in ((1, True), (0, False), (1, 1.0)):
        for repeat in (first, second):
            assert response_cache_key(provider="p", model="m", digest=None, repeat_index=repeat,
                                      request_json=request_json({"q": 1})) == \
                response_cache_key(provider="p", model="m", digest=None, repeat_index=repeat, request_material={"q": 1})
