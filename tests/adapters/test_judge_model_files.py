"""The packaged judge model: its parts found in site-packages, assembled once, sha256-checked.

Fast tests build a split model from throwaway packages on sys.path; the `llamacpp` test
assembles the real packaged judge (extra `ragqual[judge]`), loads it with llama.cpp and reads
P(yes) from the first token's logits."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import sys
from pathlib import Path

import pytest

from ragqual.adapters.judge_model_files import JUDGE_GGUF, SplitGguf, assemble, packaged_judge_gguf, part_files
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

JUDGE = ("<|im_start|>system\nYou are a strict grader. Reply with a single word: yes or no.<|im_end|>\n"
         "<|im_start|>user\nCONTEXT: The HX-731 pump filter weighs 340 grams and filters 1,500 liters.\n\n"
         "ANSWER: {answer}\n\nIs every claim in the ANSWER supported by the CONTEXT? Reply yes or no."
         "<|im_end|>\n<|im_start|>assistant\n")


def _p_yes(llm, prompt: str) -> float:
    import llama_cpp
    import numpy as np

    llm.reset()
    llm.eval(llm.tokenize(prompt.encode(), add_bos=False, special=True))
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))

    def mass(words: tuple[str, ...]) -> float:
        ids = {llm.tokenize(w.encode(), add_bos=False, special=False)[0] for w in words}
        return sum(math.exp(float(logits[i])) for i in ids)
    yes, no = mass(("yes", "Yes")), mass(("no", "No"))
    return yes / (yes + no)


@pytest.mark.llamacpp
def test_the_packaged_judge_assembles_loads_and_gives_p_yes():
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (pip install 'ragqual[judge]')")
    if any(importlib.util.find_spec(f"{JUDGE_GGUF.package_prefix}{n}") is None
           for n in range(1, JUDGE_GGUF.parts + 1)):
        pytest.skip("the packaged judge model is not installed (pip install 'ragqual[judge]')")
    from llama_cpp import Llama

    path = packaged_judge_gguf()
    assert path.stat().st_size == JUDGE_GGUF.size
    llm = Llama(model_path=str(path), n_ctx=512, n_threads=2, verbose=False)
    supported = _p_yes(llm, JUDGE.format(answer="The pump filter weighs 340 grams."))
    invented = _p_yes(llm, JUDGE.format(answer="The pump filter weighs 2 kilograms and is made in Norway."))
    assert 0.0 <= invented < 0.5 < supported <= 1.0
