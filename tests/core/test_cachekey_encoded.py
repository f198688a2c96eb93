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
