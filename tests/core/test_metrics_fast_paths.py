"""The C-level shortcuts in `ragqual.core.metrics` against the plain Python they replaced, on
seeded random inputs, to the last bit (IEEE-754 bytes, so -0.0 and 0.0 differ)."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pytest

from ragqual.core import metrics
from ragqual.core.metrics import evaluate, evaluate_reference, evaluated_queries, mean_scores
from ragqual.errors import InputError


def plain_mean_scores(results: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The loop `mean_scores` used to run: one Python float addition per query, in query order."""
    qids = sorted(results)
    rows = [results[q] for q in qids]
    names = list(dict.fromkeys(name for row in rows for name in row))
    means: dict[str, float] = {}
    for name in names:
        total = 0.0
        for row in rows:
            total += row.get(name, 0.0)
        means[name] = total if name.startswith("num_") else (total / len(qids) if qids else 0.0)
    return means


def plain_evaluated_queries(qrels: Mapping, run: Mapping, *, complete: bool = False) -> list[str]:
    chosen = qrels if complete else (q for q, docs in run.items() if docs and q in qrels)
    return sorted(chosen)


def bits(means: dict[str, float]) -> list[tuple[str, str]]:
    return [(name, struct.pack("<d", value).hex()) for name, value in means.items()]


VALUES = [0.0, -0.0, 1.0, 1 / 3, 2 / 3, 0.1, 0.7, 1e-300, 5e-324, 1e16, 1.0 + 2**-52, -1e16]


@pytest.mark.parametrize("seed", range(20))
def test_mean_scores_adds_like_the_python_loop(seed):
    rng = np.random.default_rng(seed)
    names = ["map", "ndcg_cut_10", "num_ret", "num_rel_ret", "recip_rank", "\u00e9"]
    results: dict[str, dict[str, float]] = {}
    for q in rng.permutation(int(rng.integers(0, 300))):  # unsorted, so the query order matters
        chosen = [n for n in names if rng.random() < 0.9]  # some rows miss a measure
        tiny = rng.random() < 0.3
        results[f"q{q}"] = {n: float(rng.choice(VALUES)) if tiny else float(rng.random()) for n in chosen}
    assert bits(mean_scores(results)) == bits(plain_mean_scores(results))


@pytest.mark.parametrize("values", [[-0.0], [-0.0, -0.0], [0.0, -0.0], [1e16, 1.0, -1e16], [5e-324, -5e-324]])
def test_mean_scores_signed_zeros_and_cancellation(values):
    results = {f"q{i}": {"map": v, "num_rel": v} for i, v in enumerate(values)}
    assert bits(mean_scores(results)) == bits(plain_mean_scores(results))
    assert mean_scores({}) == plain_mean_scores({}) == {}


@pytest.mark.parametrize("seed", range(10))
def test_evaluated_queries_as_the_generator_chose_them(seed):
    rng = np.random.default_rng(seed)
    qrels = {f"q{i}": {"d": 1} for i in range(60) if rng.random() < 0.7}
    run = {f"q{i}": ({} if rng.random() < 0.2 else {"d": 0.5}) for i in rng.permutation(60) if rng.random() < 0.7}
    for complete in (False, True):
        assert evaluated_queries(qrels, run, complete=complete) == plain_evaluated_queries(qrels, run, complete=complete)


@pytest.mark.parametrize("where", [0, 1, 57, 199])
def test_a_nan_anywhere_among_infinities_is_refused(where):
    scores = [float("inf"), float("-inf"), 0.0, -0.0] * 50
    scores[where] = float("nan")
    run = {"empty": {}, "q": {f"d{i}": s for i, s in enumerate(scores)}}
    with pytest.raises(InputError, match="NaN"):
        evaluate({"q": {"d1": 1}, "empty": {"d1": 1}}, run, ["map"], complete=True)
    scores[where] = 1.0
    evaluate({"q": {"d1": 1}}, {"q": {f"d{i}": s for i, s in enumerate(scores)}}, ["map"])  # no NaN, no error


@pytest.mark.parametrize("seed", range(6))
def test_tied_names_read_from_any_mapping(seed):
    # tied documents' names are read by stepping through each ranking's keys: read-only mappings
    # (not dicts) must rank exactly like dicts, and both like the per-query kernels
    rng = np.random.default_rng(seed)
    names = [f"d{i}" for i in range(80)] + ["\u00e9", "a b", "\U0001f600", ""]
    qrels, run = {}, {}
    for t in range(30):
        judged = rng.choice(len(names), size=int(rng.integers(0, 40)), replace=False)
        qrels[f"q{t}"] = {names[i]: int(rng.integers(-1, 3)) for i in judged}
        retrieved = rng.choice(len(names), size=int(rng.integers(0, len(names))), replace=False)
        run[f"q{t}"] = {names[i]: float(rng.choice([0.0, -0.0, 1.0, 2.0, -np.inf])) for i in retrieved}
    frozen_qrels = MappingProxyType({q: MappingProxyType(j) for q, j in qrels.items()})
    frozen_run = MappingProxyType({q: MappingProxyType(r) for q, r in run.items()})
    measures = ["map", "ndcg_cut_10", "recip_rank", "recall_10", "bpref", "P_5"]
    for complete in (False, True):
        expected = evaluate_reference(qrels, run, measures, complete=complete)
        assert bits_rows(evaluate(frozen_qrels, frozen_run, measures, complete=complete)) == bits_rows(expected)
        assert bits_rows(evaluate(qrels, run, measures, complete=complete)) == bits_rows(expected)


def bits_rows(scores: dict[str, dict[str, float]]) -> dict[str, list[tuple[str, str]]]:
    return {q: bits(row) for q, row in scores.items()}


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("extreme", [127, 128, -128, -129, 300, 2**40, -(2**40)])
def test_labels_past_int8_give_the_same_bits(seed, extreme):
    # labels are read as int8 when they all fit and as int64 when one does not: both give
    # the per-query kernels' floats, whichever side of the boundary a label falls
    rng = np.random.default_rng(seed)
    names = [f"d{i}" for i in range(60)]
    qrels, run = {}, {}
    for t in range(25):
        judged = rng.choice(len(names), size=int(rng.integers(0, 30)), replace=False)
        qrels[f"q{t}"] = {names[i]: int(rng.choice([-1, 0, 1, 2, 3, extreme])) for i in judged}
        retrieved = rng.choice(len(names), size=int(rng.integers(0, 50)), replace=False)
        run[f"q{t}"] = {names[i]: float(rng.choice([0.0, 0.5, 1.0, -np.inf, float(i)])) for i in retrieved}
    measures = ["map", "ndcg", "ndcg_cut_5", "recip_rank", "recall_10", "bpref", "P_5", "Rprec", "num_rel"]
    for level in (0, 1, 2, 200):
        for complete in (False, True):
            options = {"relevance_level": level, "complete": complete}
            assert bits_rows(evaluate(qrels, run, measures, **options)) == \
                bits_rows(evaluate_reference(qrels, run, measures, **options)), options


LABEL_SETS = [[0, 1, 2], [0, 127], [0, 128], [-1, 0, 2], [255], [256, 1], [True, False], [np.int64(3), 0],
              [2**40], [1.0, 2.0], []]


@pytest.mark.parametrize("values", LABEL_SETS, ids=map(repr, LABEL_SETS))
def test_label_arrays_through_bytes_or_fromiter_give_the_plain_values(values):
    # labels 0..127 are read through a bytearray (a miss is the byte 255, read as -1); anything
    # else (negative, 128 and up, not an int) goes the np.fromiter way: the same values either way
    rng = np.random.default_rng(len(values))
    judgements = [{f"d{i}": values[int(rng.integers(len(values)))] for i in range(n)} if values else {}
                  for n in (0, 5, 9)]
    per_query = [{f"d{i}": 0.5 for i in rng.permutation(12)} for _ in judgements]
    judged_total = sum(map(len, judgements))
    judged, labels = metrics._label_arrays(judgements, per_query, judged_total, 36)
    assert judged.tolist() == [int(v) for j in judgements for v in j.values()]
    assert labels.tolist() == [int(j.get(d, -1)) for j, r in zip(judgements, per_query) for d in r]
    bytes_path = all(isinstance(v, (int, np.integer)) and 0 <= v < 128 for v in values)
    assert (labels.dtype == np.int8) if bytes_path else labels.dtype in (np.int8, np.int64)


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (4, 7), (9, 2)])
def test_take_along_rows_is_take_along_axis(shape):
    rng = np.random.default_rng(shape[0])
    matrix = rng.integers(-1, 5, size=shape).astype(np.int8)
    columns = np.argsort(rng.random(shape), axis=1)
    taken = metrics._take_along_rows(matrix, columns)
    assert taken.dtype == matrix.dtype
    assert np.array_equal(taken, np.take_along_axis(matrix, columns, axis=1))


def test_mean_scores_reads_plain_dicts_without_a_method_call_per_row(monkeypatch):
    # rows that are all exactly dicts are read with dict.get itself; one read-only row sends the
    # whole mean the per-row method way; both give the Python loop's bits
    calls: list[tuple] = []
    real = metrics.methodcaller

    def counting(*args: object) -> object:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(metrics, "methodcaller", counting)
    rng = np.random.default_rng(3)
    results = {f"q{i}": {"map": float(rng.random()), "num_ret": float(i)} for i in rng.permutation(50)}
    assert bits(mean_scores(results)) == bits(plain_mean_scores(results))
    assert not [args for args in calls if args[0] == "get"]
    results["q7"] = MappingProxyType(dict(results["q7"]))  # type: ignore[assignment]
    assert bits(mean_scores(results)) == bits(plain_mean_scores(results))
    assert [args for args in calls if args[0] == "get"]


@pytest.mark.parametrize("labels", [[-1, 0, 1, 2], [0, 3, 8], [0, 9, 1], [-1], [127, 5, 0], [2**40, 1]],
                         ids=["usual", "eight-levels", "nine-levels", "none", "int8-top", "int64"])
@pytest.mark.parametrize("width", [1, 4, 30])
def test_ideal_gains_counted_out_are_the_sorted_gains(labels, width):
    # up to _FEW_GAINS levels the best-first gains are counted, past it sorted: either way each
    # row's positive labels, largest first, zeros after them, in the dtype the labels came in
    rng = np.random.default_rng(width)
    dtype = np.int64 if max(labels) > 127 else np.int8
    judged = rng.choice(np.array(labels, dtype=dtype), size=(6, 12))
    expected = np.sort(np.maximum(judged, 0), axis=1)[:, ::-1][:, :width]
    best = metrics._best_first(judged, width)
    assert best.dtype == judged.dtype and np.array_equal(best, expected)
