"""Golden patterns checked once: remembered in the cache folder, vouched for on the next load
(compiled only when first searched with), while a new or edited bad pattern is still named by
file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import regex

from ragqual.adapters import pattern_memo
from ragqual.adapters.files import read_goldens_dir
from ragqual.core import textmatch
from ragqual.core.goldens import PATTERN_CHECKS, golden_patterns
from ragqual.errors import ValidationFailed

GOLDEN = {"id": "boil-1", "query": "How long should I boil water?", "turns": [], "relevantDocIds": ["water"],
          "mustInclude": [r"\b(one|1) minutes?", "rolling boil"], "mustNotInclude": ["distil+"],
          "expectRefusal": False, "tags": ["water"], "split": "validation"}


@pytest.fixture(autouse=True)
def fresh_vouches(monkeypatch):
    """Each test starts with nothing vouched for and empty compile caches."""
    monkeypatch.setattr(textmatch, "_VOUCHED", set())
    textmatch.compile_pattern.cache_clear()
    textmatch.compiled.cache_clear()
    yield
    textmatch.compile_pattern.cache_clear()
    textmatch.compiled.cache_clear()


@pytest.fixture
def compiles(monkeypatch) -> list[str]:
    """The patterns `regex` is asked to compile."""
    seen: list[str] = []
    original = regex.compile

    def counting(pattern, flags=0, *args, **kwargs):
        seen.append(pattern)
        return original(pattern, flags, *args, **kwargs)

    monkeypatch.setattr(regex, "compile", counting)
    return seen


def goldens_dir(tmp_path: Path, *goldens: dict) -> Path:
    folder = tmp_path / "goldens"
    folder.mkdir(exist_ok=True)
    (folder / "q.jsonl").write_text("".join(json.dumps(g) + "\n" for g in goldens), encoding="utf-8")
    return folder


def test_remembered_patterns_are_not_compiled_to_load_the_goldens_again(tmp_path, compiles):
    folder = goldens_dir(tmp_path, GOLDEN)
    cache = tmp_path / "cache"
    first = read_goldens_dir(folder, {"water"})
    assert sorted(compiles) == sorted(golden_patterns(first))  # checked once each
    pattern_memo.save(cache, golden_patterns(first), pattern_memo.load(cache))

    textmatch.compile_pattern.cache_clear()
    textmatch.compiled.cache_clear()
    compiles.clear()
    textmatch.vouch(pattern_memo.load(cache))
    again = read_goldens_dir(folder, {"water"})
    assert again == first and compiles == []
    # compiled when first searched with, case-insensitively, as before
    assert textmatch.search(r"\b(one|1) minutes?", "Boil for ONE minute.")
    assert compiles == [r"\b(one|1) minutes?"]
    assert textmatch.compile_pattern("rolling boil").flags & regex.IGNORECASE


def test_a_new_bad_pattern_is_still_named_by_file_and_line(tmp_path):
    cache = tmp_path / "cache"
    pattern_memo.save(cache, golden_patterns(read_goldens_dir(goldens_dir(tmp_path, GOLDEN), {"water"})), set())
    textmatch.vouch(pattern_memo.load(cache))
    bad = GOLDEN | {"id": "boil-2", "mustInclude": ["rolling boil", "(unclosed"], "mustNotInclude": ["(minute)?"]}
    folder = goldens_dir(tmp_path, GOLDEN, bad)
    with pytest.raises(ValidationFailed) as failed:
        read_goldens_dir(folder, {"water"})
    text = str(failed.value)
    assert "q.jsonl:2" in text and "mustInclude[1] '(unclosed' does not compile" in text
    assert "mustNotInclude[0] '(minute)?' matches the empty string" in text
    assert "mustInclude[0]" not in text  # the remembered one is fine


def test_a_memo_from_another_regex_version_or_check_or_shape_vouches_for_nothing(tmp_path):
    cache = tmp_path / "cache"
    pattern_memo.save(cache, {"rolling boil"}, set())
    assert pattern_memo.load(cache) == {"rolling boil"}
    path = cache / pattern_memo.FILE_NAME
    body = json.loads(path.read_text(encoding="utf-8"))
    for changed in ({"regex": "0.0"}, {"checks": PATTERN_CHECKS + 1}, {"patterns": "rolling boil"},
                    {"patterns": ["", "x"]}, {"patterns": [1]}):
        path.write_text(json.dumps(body | changed), encoding="utf-8")
        assert pattern_memo.load(cache) == set(), changed
    path.write_text("{not json", encoding="utf-8")
    assert pattern_memo.load(cache) == set()
    path.write_bytes(b"\xff\xfe")
    assert pattern_memo.load(cache) == set()
    assert pattern_memo.load(tmp_path / "missing") == set()


def test_saving_writes_only_what_is_new_and_never_fails_the_run(tmp_path):
    cache = tmp_path / "cache"
    pattern_memo.save(cache, {"a+", "b+"}, set())
    path = cache / pattern_memo.FILE_NAME
    stamp = path.stat().st_mtime_ns
    pattern_memo.save(cache, {"a+"}, {"a+", "b+"})  # nothing new: not rewritten
    assert path.stat().st_mtime_ns == stamp
    pattern_memo.save(cache, {"c+"}, pattern_memo.load(cache))
    assert pattern_memo.load(cache) == {"a+", "b+", "c+"}
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder", encoding="utf-8")
    pattern_memo.save(blocked, {"d+"}, set())  # a cache folder that cannot be made: skipped
    assert list(cache.iterdir()) == [path]  # no temporary file left behind
