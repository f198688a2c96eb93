import json
import sqlite3
import subprocess
import sys

import pytest

from ragqual.adapters.cache import CacheNotes, ResponseCache
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


def test_corrupt_entry_is_a_miss_said_once_with_a_count(tmp_path):
    said: list[str] = []
    cache = ResponseCache.at(tmp_path / "c", "auto", CacheNotes(said.append))
    for key in ("k1", "k2", "k3"):
        cache.cache.set(key, b'{"v": 2, "response": {"nonsense": true}}')  # JSON, but not a stored answer
    model = Counter()
    for key in ("k1", "k2", "k3"):
        answer, hit = cache.get_or_call(key, model)
        assert not hit
    assert model.calls == 3 and answer.text == "answer 3"
    cache.close()
    assert said == []  # the run's notes are said by their owner, once
    cache.notes.flush()
    assert len(said) == 1
    assert said[0].startswith(f"3 response-cache entries in {tmp_path / 'c'} were unreadable or inconsistent and were ignored")
    assert "the model was asked again" in said[0] and "not a stored answer" in said[0]


def test_corrupted_cache_files_never_crash(tmp_path):
    cache = ResponseCache.at(tmp_path / "c", "auto")
    cache.get_or_call("k", Counter())
    cache.close()
    for f in (tmp_path / "c").rglob("*"):
        if f.is_file():
            f.write_bytes(b"\x00garbage" * 10)
    model = Counter()
    with pytest.warns(RuntimeWarning, match="cache folder .* cannot be used"):
        broken = ResponseCache.at(tmp_path / "c", "auto")
    answer, hit = broken.get_or_call("k", model)
    assert answer.text == "answer 1" and not hit
    broken.close()


def _unwritable(tmp_path):
    """A cache path under a regular file: no user, root included, can create that folder."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    return blocker / "cache"


def test_a_folder_that_cannot_be_created_is_said_once_and_the_calls_go_on(tmp_path):
    said: list[str] = []
    notes = CacheNotes(said.append, root=tmp_path / "a-file")
    cache = ResponseCache.at(_unwritable(tmp_path), "auto", notes)
    other = ResponseCache.at(_unwritable(tmp_path), "auto", notes)  # a second cache of the same run
    model = Counter()
    assert cache.get_or_call("k", model) == (_answer("answer 1"), False)
    assert other.get_or_call("k", model) == (_answer("answer 2"), False)
    cache.close()
    other.close()
    notes.flush()
    assert len(said) == 1, said
    assert said[0].startswith(f"cache folder {tmp_path / 'a-file'} cannot be used (")
    assert "RAGQUAL_CACHE_DIR" in said[0] and "--cache off" in said[0] and "writable" in said[0]


def test_a_write_that_fails_stops_writing_says_so_once_and_never_raises(tmp_path):
    said: list[str] = []
    cache = ResponseCache.at(tmp_path / "c", "auto", CacheNotes(said.append))
    cache.get_or_call("before", Counter())
    real = cache.cache
    con = sqlite3.connect(real.directory + "/cache.db")
    con.execute("CREATE TRIGGER full BEFORE INSERT ON Cache BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END")
    con.commit()
    con.close()
    model = Counter()
    for key in ("a", "b", "c"):
        assert not cache.get_or_call(key, model)[1]
    assert model.calls == 3 and cache.cache is None
    assert len(said) == 1 and "database or disk is full" in said[0], said
    cache.close()


def test_unknown_mode_is_input_error(tmp_path):
    with pytest.raises(InputError):
        ResponseCache(None, "sometimes")


def _fail_writes(folder) -> None:
    """Every later insert into the cache's SQLite file fails the way a full disk does."""
    con = sqlite3.connect(f"{folder}/cache.db")
    con.execute("CREATE TRIGGER full BEFORE INSERT ON Cache BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END")
    con.commit()
    con.close()


def test_the_search_and_embedding_caches_go_on_without_writing_when_writes_fail(tmp_path):
    import numpy as np

    from ragqual.adapters.embedders import CachedEmbedder
    from ragqual.adapters.search_cache import SearchCache

    class Ones:
        id, dim = "ones", 2

        def embed(self, texts):
            return np.ones((len(texts), 2), dtype=np.float32)

    said: list[str] = []
    notes = CacheNotes(said.append)
    search = SearchCache(tmp_path / "search", notes=notes)
    embedder = CachedEmbedder(Ones(), tmp_path / "emb", notes)
    _fail_writes(tmp_path / "search")
    _fail_writes(tmp_path / "emb")
    search.put("k", [1, 2])
    search.put("k2", [3])
    assert search.get("k", lambda v: True) is None and search.cache is None
    assert embedder.embed(["a", "b"]).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    embedder.store_matrix(["a", "b"], np.ones((2, 2), dtype=np.float32))
    assert embedder.embed(["a"]).tolist() == [[1.0, 1.0]] and embedder.cache is None
    search.close()
    embedder.close()
    assert len(said) == 1 and "database or disk is full" in said[0] and str(tmp_path / "search") in said[0], said
