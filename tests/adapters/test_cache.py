import json
import subprocess
import sys

import pytest

from ragqual.adapters.cache import ResponseCache
from ragqual.adapters.llm import ChatMessage, ChatRequest, ChatResponse
from ragqual.core.cachekey import response_cache_key
from ragqual.errors import CacheMiss, InputError

BASE = dict(provider="ollama", model="llama3.2", digest="sha256:aaa",
            request_material=ChatRequest(system="sys", messages=(ChatMessage("user", "hi"),),
                                         options={"temperature": 0, "seed": 42}).key_material(),
            repeat_index=0)


def key(**over):
    args = dict(BASE)
    args.update(over)
    return response_cache_key(**args)


def test_key_is_stable_across_processes():
    code = (
        "import json,sys; from ragqual.core.cachekey import response_cache_key as k;"
        "a=json.loads(sys.argv[1]); print(k(**a))"
    )
    out = subprocess.run([sys.executable, "-c", code, json.dumps(BASE)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == key()


def _request(**over):
    fields = dict(system="sys", messages=(ChatMessage("user", "hi"),), options={"temperature": 0, "seed": 42}, format=None)
    fields.update(over)
    return ChatRequest(**fields).key_material()


@pytest.mark.parametrize("change", [
    {"provider": "openai"},
    {"model": "llama3.1"},
    {"digest": "sha256:bbb"},
    {"digest": None},
    {"repeat_index": 1},
    {"request_material": _request(system="sys2")},
    {"request_material": _request(messages=(ChatMessage("user", "hi!"),))},
    {"request_material": _request(messages=(ChatMessage("assistant", "hi"),))},
    {"request_material": _request(options={"temperature": 0.1, "seed": 42})},
    {"request_material": _request(options={"temperature": 0, "seed": 43})},
    {"request_material": _request(options={"temperature": 0, "seed": 42, "num_ctx": 4096})},
    {"request_material": _request(options={"temperature": 0, "seed": 42, "top_p": 0.9})},
    {"request_material": _request(options={"temperature": 0, "seed": 42, "num_predict": 64})},
    {"request_material": _request(format="json")},
    {"request_material": _request(format={"type": "object"})},
])
def test_every_input_changes_the_key(change):
    assert key(**change) != key()


def _answer(text="ok"):
    return ChatResponse(text=text, raw={"message": text}, prompt_tokens=3, completion_tokens=1, latency_ms=5.0)


class Counter:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return _answer(f"answer {self.calls}")


def test_auto_mode_calls_once_then_hits(tmp_path):
    cache = ResponseCache.at(tmp_path / "c", "auto")
    model = Counter()
    first, hit1 = cache.get_or_call("k1", model)
    second, hit2 = cache.get_or_call("k1", model)
    assert (hit1, hit2, model.calls) == (False, True, 1)
    assert first == second


def test_replay_makes_zero_calls_and_names_the_missing_key(tmp_path):
    ResponseCache.at(tmp_path / "c", "auto").get_or_call("known", Counter())
    replay = ResponseCache.at(tmp_path / "c", "replay")
    model = Counter()
    answer, hit = replay.get_or_call("known", model)
    assert hit and answer.text == "answer 1"
    with pytest.raises(CacheMiss, match="unknown-key"):
        replay.get_or_call("unknown-key", model)
    assert model.calls == 0


def test_write_only_always_calls_and_refreshes(tmp_path):
    cache = ResponseCache.at(tmp_path / "c", "write-only")
    model = Counter()
    cache.get_or_call("k", model)
    cache.get_or_call("k", model)
    assert model.calls == 2
    answer, hit = ResponseCache.at(tmp_path / "c", "auto").get_or_call("k", Counter())
    assert hit and answer.text == "answer 2"


def test_off_mode_never_stores(tmp_path):
    cache = ResponseCache.at(tmp_path / "c", "off")
    model = Counter()
    cache.get_or_call("k", model)
    cache.get_or_call("k", model)
    assert model.calls == 2 and not (tmp_path / "c").exists()


def test_corrupt_entry_is_a_miss_with_a_warning(tmp_path):
    cache = ResponseCache.at(tmp_path / "c", "auto")
    cache.cache.set("k", b'{"v": 2, "response": {"nonsense": true}}')  # JSON, but not a stored answer
    model = Counter()
    with pytest.warns(UserWarning, match="corrupt"):
        answer, hit = cache.get_or_call("k", model)
    assert not hit and model.calls == 1 and answer.text == "answer 1"


def test_corrupted_cache_files_never_crash(tmp_path):
    cache = ResponseCache.at(tmp_path / "c", "auto")
    cache.get_or_call("k", Counter())
    cache.close()
    for f in (tmp_path / "c").rglob("*"):
        if f.is_file():
            f.write_bytes(b"\x00garbage" * 10)
    model = Counter()
    with pytest.warns(UserWarning):
        answer, hit = ResponseCache.at(tmp_path / "c", "auto").get_or_call("k", model)
    assert answer.text == "answer 1" and not hit


def test_unknown_mode_is_input_error(tmp_path):
    with pytest.raises(InputError):
        ResponseCache(None, "sometimes")
