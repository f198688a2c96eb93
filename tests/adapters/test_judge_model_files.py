"""The packaged judge model: its parts found in site-packages, assembled once, sha256-checked.

Fast tests build a split model from throwaway packages on sys.path; the `llamacpp` test
assembles the real packaged judge (extra `ragqual[judge]`, else the smaller one of
`ragqual[judge-small]`, which CI installs), loads it with llama.cpp and reads P(yes) through the
judge's own rubric and scoring path."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import pytest

from ragqual.adapters.judge_model_files import (
    JUDGE_GGUF,
    SMALL_JUDGE_GGUF,
    SplitGguf,
    assemble,
    installed,
    packaged_judge_gguf,
    part_files,
)
from ragqual.adapters.llamacpp_model import LlamaCppChatModel, resolve_model_file
from ragqual.core import judging, rubrics
from ragqual.vocab import ChatMessage, ChatRequest
from tests.support.llama_server import threads_for_tests
from ragqual.errors import InputError

SLICES = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


@pytest.fixture
def split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SplitGguf:
    """Three part packages `fakejudge_partN` on sys.path, like the pip-installed ones."""
    root = tmp_path / "site"
    for number, data in enumerate(SLICES, 1):
        package = root / f"fakejudge_part{number}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("raise RuntimeError('part packages are never imported')\n")
        (package / "data" / f"part{number:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    whole = b"".join(SLICES)
    return SplitGguf(file_name="fake.gguf", package_prefix="fakejudge_part", parts=len(SLICES),
                     sha256=hashlib.sha256(whole).hexdigest(), size=len(whole))


def test_the_parts_are_found_in_order_without_importing_them(split: SplitGguf):
    assert [p.name for p in part_files(split)] == ["part01.bin", "part02.bin", "part03.bin"]
    assert "fakejudge_part1" not in sys.modules


def test_the_model_is_assembled_once_into_the_directory_and_checked(split: SplitGguf, tmp_path: Path):
    models = tmp_path / "models"
    path = packaged_judge_gguf(models, spec=split)
    assert path == models / "fake.gguf"
    assert path.read_bytes() == b"".join(SLICES)
    mtime = path.stat().st_mtime_ns
    assert packaged_judge_gguf(models, spec=split) == path
    assert path.stat().st_mtime_ns == mtime  # found and trusted, not written again
    assert [p.name for p in models.iterdir() if p.is_file()] == ["fake.gguf"]


def test_a_damaged_file_in_the_cache_is_assembled_again(split: SplitGguf, tmp_path: Path):
    models = tmp_path / "models"
    path = packaged_judge_gguf(models, spec=split)
    path.write_bytes(b"GGUF truncated")
    assert packaged_judge_gguf(models, spec=split).read_bytes() == b"".join(SLICES)


def test_a_digest_other_than_the_pinned_one_is_refused_and_leaves_nothing(split: SplitGguf, tmp_path: Path):
    models = tmp_path / "models"
    wrong = SplitGguf(split.file_name, split.package_prefix, split.parts, "0" * 64, split.size)
    with pytest.raises(InputError, match=r"sha256 .* not the pinned 0{64} of fake\.gguf.*ragqual\[judge\]"):
        packaged_judge_gguf(models, spec=wrong)
    assert list(models.iterdir()) == []


def test_a_missing_part_package_names_the_extra(split: SplitGguf, tmp_path: Path):
    more = SplitGguf(split.file_name, split.package_prefix, 4, split.sha256, split.size)
    with pytest.raises(InputError, match=r"'fakejudge_part4' \(part 4 of 4 of fake\.gguf\).*pip install 'ragqual\[judge\]'"):
        packaged_judge_gguf(tmp_path / "models", spec=more)


def test_assemble_writes_nothing_when_a_part_cannot_be_read(tmp_path: Path):
    target = tmp_path / "out.gguf"
    with pytest.raises(InputError, match="could not assemble out.gguf"):
        assemble([tmp_path / "absent.bin"], target, "0" * 64)
    assert list(tmp_path.iterdir()) == []


# -- the real packaged judge ----------------------------------------------------------------------

CONTEXT = "The HX-731 pump filter weighs 340 grams and filters 1,500 liters before its cartridge is replaced."


def _installed_judge() -> tuple[str, SplitGguf]:
    """The packaged judge that is installed, the default one first; skips when neither is."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (pip install 'ragqual[judge]')")
    for alias, spec in (("judge", JUDGE_GGUF), ("judge-small", SMALL_JUDGE_GGUF)):
        if installed(spec):
            return alias, spec
    pytest.skip("no packaged judge model is installed (pip install 'ragqual[judge]' or 'ragqual[judge-small]')")


def _request(criterion: str, answer: str) -> ChatRequest:
    rubric = rubrics.rubric(criterion)
    message = rubrics.judge_input("How much does the HX-731 pump filter weigh?", CONTEXT, answer, rubric.question)
    return ChatRequest(system=rubric.system, messages=(ChatMessage("user", message),),
                       options={"temperature": 0, "seed": 42, "logprobs": True, "top_logprobs": 10, "num_predict": 4})


@pytest.mark.llamacpp
def test_the_packaged_judge_assembles_loads_and_gives_p_yes():
    """Through the product path (the alias, the rubric, the llama.cpp scoring, the judge's reading):
    a copied claim scores higher than an invented one, and the second criterion of a trial reuses the
    evaluated prompt yet gives exactly the probability a fresh evaluation gives."""
    alias, spec = _installed_judge()
    path = resolve_model_file(alias)
    assert path.stat().st_size == spec.size
    model = LlamaCppChatModel(alias, n_ctx=1024, n_threads=threads_for_tests())
    try:
        assert model.digest() == spec.sha256
        supported = model.chat(_request("faithfulness", "The pump filter weighs 340 grams."))
        invented = model.chat(_request("faithfulness", "The pump filter weighs 2 kilograms and is made in Norway."))
        relevance_after = model.chat(_request("relevance", "The pump filter weighs 2 kilograms and is made in Norway."))
        model.chat(_request("faithfulness", "Something else entirely, so nothing is kept."))
        relevance_fresh = model.chat(_request("relevance", "The pump filter weighs 2 kilograms and is made in Norway."))
    finally:
        model.close()
    p_supported, p_invented = (judging.read_logprobs(r.raw).score for r in (supported, invented))
    assert p_supported is not None and p_invented is not None
    assert 0.0 <= p_invented < p_supported <= 1.0
    if alias == "judge":  # the default judge also puts them on either side of 0.5
        assert p_invented < 0.5 < p_supported
    assert relevance_after.raw["timings"]["reused_n"] > 0
    assert relevance_after.raw["timings"]["prompt_n"] < relevance_fresh.raw["timings"]["prompt_n"]
    assert judging.read_logprobs(relevance_after.raw).score == judging.read_logprobs(relevance_fresh.raw).score
