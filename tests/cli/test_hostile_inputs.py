"""Inputs that hung or crashed `ragqual corpus check`: each is one line naming the file, exit 2.

Reproductions of the issue: a FIFO as `goldens/q.jsonl`, as a BEIR `corpus.jsonl` or inside a
TREC folder hung the check (killed after 90-120 s); a BEIR line nested 100,000 deep was a
RecursionError traceback, a `\\udc80` escape a UnicodeEncodeError traceback; a 13 MB gzip that
inflates to 3 GB was refused only after 5.77 GB of memory; a truncated `.gz` was reported as "no
documents (*.md) found" and a garbage `.gz` beside good files was skipped without a word.

Each check runs the real command in its own process with a timeout, so a hang fails the test
instead of hanging the suite.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HANG = 60  # seconds: far beyond what a refusal takes, far below the 90-120 s of the hang


def _check(cwd: Path, *args: str, preamble: str = "", limit_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    """`ragqual corpus check ARGS` in its own process; `limit_bytes` caps its address space."""
    code = preamble + "\nfrom ragqual.cli.main import main\nmain(['corpus', 'check', *sys.argv[1:]])\n"

    def cap() -> None:
        if limit_bytes is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = {k: v for k, v in os.environ.items() if k not in ("RAGQUAL_DB", "PYTHONWARNINGS")}
    env["RAGQUAL_CACHE_DIR"] = str(cwd / "cache")
    return subprocess.run([sys.executable, "-c", "import sys" + code, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=HANG, check=False, preexec_fn=cap)


def _refused(done: subprocess.CompletedProcess[str], *names: str) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    for name in names:
        assert name in done.stderr, done.stderr
    return done.stderr


def _bundled_goldens(project: Path) -> None:
    (project / "corpus").mkdir()
    (project / "corpus" / "water.md").write_text("# Water\n\nBoil water for one minute.\n")
    (project / "goldens").mkdir()
    golden = {"id": "q1", "query": "How long to boil?", "turns": [], "relevantDocIds": ["water"],
              "mustInclude": ["minute"], "mustNotInclude": [], "expectRefusal": False, "tags": ["t"]}
    (project / "goldens" / "a.jsonl").write_text(json.dumps(golden) + "\n")


def _beir(root: Path, corpus_lines: list[str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = corpus_lines or [json.dumps({"_id": "d1", "title": "Water", "text": "boil it"})]
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "how to boil"}) + "\n")
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


TREC_DOCS = b"<DOC>\n<DOCNO>10</DOCNO>\nboiling water at altitude\n</DOC>\n"


def _trec(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "part1").write_bytes(TREC_DOCS)
    (root / "topics.txt").write_text("<top>\n<num> Number: 1\n<title> boil water\n</top>\n")
    (root / "qrels.txt").write_text("1 0 10 1\n")
    return root


# --- FIFOs --------------------------------------------------------------------------------------


def test_a_fifo_among_the_goldens_is_refused_by_name(tmp_path):
    _bundled_goldens(tmp_path)
    os.mkfifo(tmp_path / "goldens" / "q.jsonl")
    _refused(_check(tmp_path), "goldens/q.jsonl: not a regular file")


def test_a_fifo_as_the_beir_corpus_is_refused_by_name(tmp_path):
    root = _beir(tmp_path / "beir")
    (root / "corpus.jsonl").unlink()
    os.mkfifo(root / "corpus.jsonl")
    _refused(_check(tmp_path, "--corpus", "beir", "--goldens", "beir"), "beir/corpus.jsonl: not a regular file")


def test_a_fifo_as_the_beir_queries_is_refused_by_name(tmp_path):
    root = _beir(tmp_path / "beir")
    (root / "queries.jsonl").unlink()
    os.mkfifo(root / "queries.jsonl")
    _refused(_check(tmp_path, "--corpus", "beir", "--goldens", "beir"), "beir/queries.jsonl: not a regular file")


def test_a_fifo_inside_a_trec_folder_is_refused_by_name(tmp_path):
    root = _trec(tmp_path / "trec")
    os.mkfifo(root / "docs" / "part2")
    _refused(_check(tmp_path, "--corpus", "trec", "--goldens", "trec"), "trec/docs/part2: not a regular file")


# --- BEIR lines that crashed the parser ---------------------------------------------------------


def test_a_deeply_nested_beir_line_is_an_error_at_its_line(tmp_path):
    deep = json.dumps({"_id": "d2", "title": "", "text": "x"})[:-1] + ', "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"
    _beir(tmp_path / "beir", [json.dumps({"_id": "d1", "title": "Water", "text": "boil it"}), deep])
    err = _refused(_check(tmp_path, "--corpus", "beir", "--goldens", "beir"), "beir/corpus.jsonl:2:")
    assert "nested too deeply" in err


def test_a_lone_surrogate_escape_in_beir_text_is_an_error_at_its_line(tmp_path):
    bad = '{"_id": "d2", "title": "", "text": "caf\\udc80"}'
    _beir(tmp_path / "beir", [json.dumps({"_id": "d1", "title": "Water", "text": "boil it"}), bad])
    err = _refused(_check(tmp_path, "--corpus", "beir", "--goldens", "beir"), "beir/corpus.jsonl:2:")
    assert "surrogate" in err


# --- gzip ---------------------------------------------------------------------------------------


def _bomb(path: Path, inflated: int) -> None:
    """A TREC document file of `inflated` bytes, nearly all zeros, built cheaply: a `<DOC>` head,
    then one member of 64 MiB of zeros, repeated (a gzip file may hold several members, inflated
    one after the other)."""
    member = 64 * 2**20
    one = gzip.compress(bytes(member), compresslevel=9)
    with path.open("wb") as out:
        out.write(gzip.compress(b"<DOC>\n<DOCNO>bomb</DOCNO>\n"))
        for _ in range(inflated // member):
            out.write(one)


def test_a_gzip_bomb_is_refused_at_the_limit_with_bounded_memory(tmp_path):
    """A 1 GiB bomb against a limit of 64 MiB, in a process allowed 1.5 GB of address space:
    inflating it whole (as before) needs twice the gigabyte and dies of MemoryError."""
    root = _trec(tmp_path / "trec")
    _bomb(root / "docs" / "bomb.gz", 2**30)
    limit = "import ragqual.adapters.collection_files as c; c.MAX_COLLECTION_FILE_BYTES = 64 * 2**20"
    done = _check(tmp_path, "--corpus", "trec", "--goldens", "trec", preamble="\n" + limit, limit_bytes=1_500_000_000)
    err = _refused(done, "trec/docs/bomb.gz")
    assert "once decompressed" in err and "MAX_COLLECTION_FILE_BYTES" in err


def test_a_truncated_gzip_is_named_not_taken_for_a_markdown_corpus(tmp_path):
    root = _trec(tmp_path / "trec")
    (root / "docs" / "part1").unlink()
    whole = gzip.compress(TREC_DOCS + os.urandom(1000).hex().encode())
    (root / "docs" / "part1.gz").write_bytes(whole[: len(whole) // 2])
    err = _refused(_check(tmp_path, "--corpus", "trec", "--goldens", "trec"), "trec/docs/part1.gz")
    assert "gzip" in err and "no documents (*.md)" not in err


def test_a_garbage_gzip_beside_good_files_is_named(tmp_path):
    root = _trec(tmp_path / "trec")
    (root / "docs" / "part2.gz").write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(200))
    err = _refused(_check(tmp_path, "--corpus", "trec", "--goldens", "trec"), "trec/docs/part2.gz")
    assert "gzip" in err


def test_good_collections_still_pass(tmp_path):
    _beir(tmp_path / "beir")
    root = _trec(tmp_path / "trec")
    (root / "docs" / "part2.gz").write_bytes(gzip.compress(TREC_DOCS.replace(b"10", b"12")))
    for name in ("beir", "trec"):
        done = _check(tmp_path, "--corpus", name, "--goldens", name)
        assert done.returncode == 0, done.stderr
