"""ragqual's metrics against NIST trec_eval: its own expected outputs, and pytrec_eval.

The expected outputs in tests/data/trec_eval/ were printed by trec_eval 10.0 (see the README
there); pytrec_eval embeds trec_eval's C measure code and is compared on random cases.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest

from ragqual.core.metrics import evaluate, evaluate_reference, mean_scores
from ragqual.core.trec import expand_measures, format_trec_eval, parse_qrels, parse_run, parse_run_tag

DATA = Path(__file__).parents[1] / "data" / "trec_eval"

MEASURES = expand_measures(
    ["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank",
     "P", "recall", "ndcg", "ndcg_cut", "map_cut", "success"]
)
REQUIRED = {"map", "P_5", "P_10", "recip_rank", "ndcg", "ndcg_cut_5", "ndcg_cut_10",
            "recall_5", "recall_10", "Rprec", "bpref"}

# (expected output, qrels, run, options, printed per query) -- see tests/data/trec_eval/README.md
CASES = {
    "default": ("out.test", "qrels.test", "results.test", {}, False),
    "qrels-with-comments": ("out.test", "qrels.test.with-comments", "results.test", {}, False),
    "hash-in-docnos": ("out.comment.test", "qrels.comment.test", "results.comment.test.gz", {}, False),
    "-q": ("out.test.aq", "qrels.test", "results.test", {}, True),
    "-q -c": ("out.test.aqc", "qrels.test", "results.trunc", {"complete": True}, True),
    "-q -c -M100": ("out.test.aqcM", "qrels.test", "results.trunc", {"complete": True, "max_docs": 100},
                    True),
    "-q -l2": ("out.test.aql", "qrels.rel_level", "results.test", {"relevance_level": 2}, True),
}


@functools.cache
def read(name: str) -> str:
    raw = (DATA / name).read_bytes()
    return (gzip.decompress(raw) if name.endswith(".gz") else raw).decode("utf-8")


def expected_lines(name: str) -> list[tuple[str, str, str]]:
    """(measure, qid, printed value) of every line of a trec_eval output."""
    rows = [line.split("\t") for line in read(name).splitlines()]
    return [(measure.rstrip(), qid, value) for measure, qid, value in rows]


def ours(case: str, evaluator=evaluate) -> tuple[str, list[str], str]:
    expected_name, qrels_name, run_name, options, per_query = CASES[case]
    qrels = parse_qrels(read(qrels_name), qrels_name)
    run_text = read(run_name)
    results = evaluator(qrels, parse_run(run_text, run_name), MEASURES, **options)
    # trec_eval prints measures in its own fixed order; take it from its summary lines
    order = [m for m, q, _ in expected_lines(expected_name) if q == "all" and m in MEASURES]
    text = format_trec_eval(results, mean_scores(results), order, per_query, run_id=parse_run_tag(run_text))
    return expected_name, order, text


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("evaluator", [evaluate, evaluate_reference], ids=["batch", "per-query"])
def test_every_value_matches_trec_eval_as_printed(case, evaluator):
    expected_name, _, text = ours(case, evaluator)
    expected = {(m, q): v for m, q, v in expected_lines(expected_name) if m in MEASURES}
    got = {(m.rstrip(), q): v for m, q, v in (line.split("\t") for line in text.splitlines())}
    got.pop(("runid", "all"))
    mismatches = {key: (expected[key], got.get(key)) for key in expected if got.get(key) != expected[key]}
    assert not mismatches
    assert set(got) == set(expected)


@pytest.mark.parametrize("case", list(CASES))
def test_report_lines_are_byte_identical_to_trec_eval(case):
    expected_name, order, text = ours(case)
    wanted = {"runid", *order}
    expected = [line for line in read(expected_name).splitlines(keepends=True)
                if line.split("\t")[0].rstrip() in wanted]
    assert text.splitlines(keepends=True) == expected


@pytest.mark.parametrize("case", [c for c, spec in CASES.items() if spec[4]])
def test_per_query_cases_cover_every_required_measure_for_every_topic(case):
    _, _, text = ours(case)
    per_topic = {(m.rstrip(), q) for m, q, _ in (line.split("\t") for line in text.splitlines())}
    assert {(m, q) for m in REQUIRED for q in ("301", "302", "303", "all")} <= per_topic


def test_compressed_run_is_the_nist_file_unchanged():
    digest = hashlib.sha256(read("results.comment.test.gz").encode("utf-8")).hexdigest()
    assert digest == "19768111ac9ed2341b3d178d48f2cd21aed0bae8b2afcfaaed49628dfbeccdf2"


def test_comment_lines_in_qrels_are_skipped_but_hash_inside_a_docno_is_kept():
    plain = parse_qrels(read("qrels.test"), "qrels.test")
    commented = parse_qrels(read("qrels.test.with-comments"), "qrels.test.with-comments")
    assert sum(map(len, commented.values())) == sum(map(len, plain.values())) == 3681
    assert commented["301"]["CR#93E-1860"] == 0
    assert "CR93E-1860" not in commented["301"]


def test_junk_after_the_run_tag_is_ignored():
    run = parse_run(read("results.trunc"), "results.trunc")
    assert sorted(run) == ["301", "303"]
    assert sum(map(len, run.values())) == 584
    assert parse_run_tag(read("results.trunc")) == "STANDARD"


# ---------------------------------------------------------------------------------------
# pytrec_eval on random cases

pytrec_eval = pytest.importorskip("pytrec_eval")

CUTOFFS = (1, 3, 5, 10)
PYTREC_MEASURES = {
    "map", "ndcg", "recip_rank", "Rprec", "bpref", "num_ret", "num_rel", "num_rel_ret",
    *(f"{family}.{','.join(map(str, CUTOFFS))}"
      for family in ("P", "recall", "success", "ndcg_cut", "map_cut")),
}
OUR_MEASURES = expand_measures(sorted(PYTREC_MEASURES))


def random_case(rng: np.random.Generator) -> tuple[dict, dict]:
    """A few queries over a small pool: scores drawn from few values (many ties), labels
    -1..3 (-1: pooled but unjudged), some topics with no relevant document, some qrels
    topics absent from the run and some run topics absent from the qrels."""
    pool = [f"doc{i}" for i in range(25)] + ["DOC", "d\u00e9j\u00e0", "a-b", "Z"]
    qrels, run = {}, {}
    for q in range(int(rng.integers(1, 8))):
        qid = f"q{q}"
        judged = rng.choice(pool, size=int(rng.integers(1, 15)), replace=False)
        top = 0 if rng.random() < 0.2 else 3
        qrels[qid] = {d: int(rng.integers(-1, top + 1)) for d in judged}
        if rng.random() < 0.85:
            retrieved = rng.choice(pool, size=int(rng.integers(1, len(pool))), replace=False)
            values = rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, -1.0], size=len(retrieved))
            run[qid] = {d: float(v) for d, v in zip(retrieved, values)}
    run["only-in-run"] = {"doc1": 1.0}
    if not any(q in qrels for q in run if q != "only-in-run"):
        run["q0"] = {"doc0": 0.5, "doc1": 0.5}
    return qrels, run


@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_pytrec_eval_on_random_cases(seed, level):
    qrels, run = random_case(np.random.default_rng(seed))
    theirs = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, relevance_level=level).evaluate(run)
    mine = evaluate(qrels, run, OUR_MEASURES, relevance_level=level)
    assert sorted(mine) == sorted(theirs)
    for qid, scores in theirs.items():
        assert {name: mine[qid][name] for name in scores} == pytest.approx(scores, rel=1e-12, abs=1e-15)


# ---------------------------------------------------------------------------------------
# trec_eval 10.0's refusals, pure

from ragqual.core.trec import (  # noqa: E402
    TrecEvalRefused,
    plan_like_trec_eval,
    read_qrels,
    read_run,
    summary_scores,
)
from ragqual.errors import ValidationFailed  # noqa: E402


def test_read_run_keeps_the_highest_copy_and_the_strict_parser_names_the_line():
    text = "q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 3.0 t\nq1 Q0 d1 3 2.0 t\n"
    run, copies = read_run(text, "r")
    assert run == {"q1": {"d1": 3.0}} and sorted(copies["q1"]) == [("d1", 1.0, 2), ("d1", 2.0, 3)]
    with pytest.raises(ValidationFailed) as failed:
        parse_run(text, "r")
    assert [str(i) for i in failed.value.issues] == ["r:2: document 'd1' retrieved twice for query 'q1'",
                                                     "r:3: document 'd1' retrieved twice for query 'q1'"]


def check_like_trec_eval(*args, **options) -> None:
    """Raise the refusal of the plan, if trec_eval 10.0 would stop at all."""
    _, refusal = plan_like_trec_eval(*args, **options)
    if refusal is not None:
        raise refusal


def test_topics_are_checked_in_byte_order_and_only_scored_topics_refuse_duplicates():
    qrels, again = read_qrels("b 0 x 1\nb 0 x 0\na 0 y 1\n", "q")
    run, copies = read_run("a Q0 y 1 1 t\nb Q0 x 1 1 t\n", "r")
    with pytest.raises(TrecEvalRefused) as refused:
        check_like_trec_eval(qrels, run, again, copies)
    assert refused.value.exit_code == 4 and "duplicate docs x (topic b, judged again on qrels line 2)" in str(
        refused.value)
    check_like_trec_eval(qrels, {"a": run["a"]}, again, copies, missing="skip")  # b not scored: fine
    with pytest.raises(TrecEvalRefused) as refused:
        check_like_trec_eval({"c": {"z": 1}}, run, {}, {}, missing="skip")
    assert refused.value.exit_code == 7


def test_the_plan_names_the_topics_trec_eval_scores_before_it_stops():
    # trec_eval 10.0 scores (and with -q prints) the qrels topics in byte order and stops at the
    # first one it refuses: the topics before it are scored, the refused one and those after are not.
    qrels, again = read_qrels("c 0 z 1\nb 0 x 1\na 0 y 1\n", "q")
    run, copies = read_run("a Q0 y 1 1 t\nc Q0 z 1 1 t\n", "r")
    topics, refusal = plan_like_trec_eval(qrels, run, again, copies)
    assert topics == ["a"] and refusal is not None and refusal.exit_code == 4
    assert "result qid 'b' not found" in str(refusal)
    assert plan_like_trec_eval(qrels, run, again, copies, missing="skip") == (["a", "c"], None)
    assert plan_like_trec_eval(qrels, run, again, copies, complete=True) == (["a", "b", "c"], None)
    twice = {"c": [("z", 0.5, 3)]}
    topics, refusal = plan_like_trec_eval(qrels, run, again, twice, complete=True)
    assert topics == ["a", "b"] and refusal is not None and "duplicate docs z (topic c" in str(refusal)
    topics, refusal = plan_like_trec_eval({"d": {"z": 1}}, run, {}, {}, missing="skip")
    assert topics == [] and refusal is not None and refusal.exit_code == 7


def test_summary_num_rel_under_c_counts_labels_above_zero():
    qrels = {"q1": {"a": 2, "b": 1, "n": 0, "u": -1}, "q2": {"c": 1}}
    results = {"q1": {"num_rel": 1.0}, "q2": {"num_rel": 0.0}}
    assert summary_scores(results, qrels)["num_rel"] == 1.0
    assert summary_scores(results, qrels, complete=True)["num_rel"] == 3.0
