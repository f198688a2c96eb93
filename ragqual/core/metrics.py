"""IR measures with the semantics of NIST trec_eval 10.0.

Two ways to the same numbers:

* per-query kernels (`precision_at_k`, `ndcg_at_k`, ...) over one ranked list of doc ids and
  that query's judgements -- short loops that read like the definitions; `evaluate_reference`
  runs them query by query;
* `evaluate`, the batch path: every query's labels in rank order go into one padded numpy
  matrix and each measure is a few array operations. Sums run in rank order, as trec_eval's
  do, so both paths give the same floats (a test holds them to that).

Conventions shared by everything here:

* ranking: score descending, ties broken by doc id in descending byte order;
* a label >= `relevance_level` is relevant; a negative label means "in the pool but not
  judged" and, like a document missing from the qrels, is neither relevant nor non-relevant
  (that difference only matters to bpref);
* nDCG gains are the raw non-negative labels whatever `relevance_level` is, discounted by
  1/log2(rank + 1) and normalised by the ideal ordering of *every* judged document;
* a query without relevant documents scores 0 and still counts in the mean; queries in the
  run but not in the qrels are ignored, and with `complete=True` (trec_eval -c) qrels
  queries missing from the run are scored against an empty ranking.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, compress, islice, repeat
from operator import and_, attrgetter, is_, methodcaller

import numpy as np

from ragqual.errors import InputError

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]
Scores = dict[str, dict[str, float]]

NOT_JUDGED = -1
"""Label given to a retrieved document that the qrels do not mention."""

# ---------------------------------------------------------------------------------------
# Ranking


def rank_documents(scores: Mapping[str, float]) -> list[str]:
    """Doc ids in trec_eval order: score descending, ties by doc id descending.

    Python compares str by code point, which for UTF-8 text is the byte order C's strcmp
    uses, so this is trec_eval's order for any doc id.
    """
    if any(s != s for s in scores.values()):
        raise InputError("a score is NaN; NaN cannot be ranked")
    return sorted(scores, key=lambda doc: (scores[doc], doc), reverse=True)


# ---------------------------------------------------------------------------------------
# Per-query kernels


def _label(judgements: Mapping[str, int], doc: str) -> int:
    return judgements.get(doc, NOT_JUDGED)


def _hits(ranked: Sequence[str], judgements: Mapping[str, int], k: int | None, level: int) -> int:
    label = judgements.get
    return sum(1 for doc in ranked[:k] if label(doc, NOT_JUDGED) >= level)


def _check_cutoff(k: int | None) -> None:
    if k is not None and k < 1:
        raise InputError(f"a rank cutoff must be at least 1, got {k}")


def num_relevant(judgements: Mapping[str, int], relevance_level: int = 1) -> int:
    """How many judged documents are relevant (label >= relevance_level)."""
    return sum(1 for label in judgements.values() if label >= relevance_level)


def precision_at_k(
    ranked: Sequence[str], judgements: Mapping[str, int], k: int, *, relevance_level: int = 1
) -> float:
    """Relevant documents in the top k over k; a short ranking is padded with misses."""
    _check_cutoff(k)
    return _hits(ranked, judgements, k, relevance_level) / k


def recall_at_k(
    ranked: Sequence[str], judgements: Mapping[str, int], k: int, *, relevance_level: int = 1
) -> float:
    """Relevant documents in the top k over all relevant documents (0 when there are none)."""
    _check_cutoff(k)
    relevant = num_relevant(judgements, relevance_level)
    return _hits(ranked, judgements, k, relevance_level) / relevant if relevant else 0.0


def hit_rate_at_k(
    ranked: Sequence[str], judgements: Mapping[str, int], k: int, *, relevance_level: int = 1
) -> float:
    """1.0 if any of the top k is relevant, else 0.0 (trec_eval's success_k)."""
    _check_cutoff(k)
    return 1.0 if _hits(ranked, judgements, k, relevance_level) else 0.0


def reciprocal_rank(
    ranked: Sequence[str], judgements: Mapping[str, int], *, relevance_level: int = 1
) -> float:
    """1 / rank of the first relevant document, 0 if none was retrieved."""
    for index, doc in enumerate(ranked):
        if _label(judgements, doc) >= relevance_level:
            return 1 / (index + 1)
    return 0.0


def average_precision(
    ranked: Sequence[str],
    judgements: Mapping[str, int],
    k: int | None = None,
    *,
    relevance_level: int = 1,
) -> float:
    """Precision at each relevant rank (within the top k), summed, over all relevant docs."""
    _check_cutoff(k)
    relevant = num_relevant(judgements, relevance_level)
    if not relevant:
        return 0.0
    total, hits, label = 0.0, 0, judgements.get
    for index, doc in enumerate(ranked[:k]):
        if label(doc, NOT_JUDGED) >= relevance_level:
            hits += 1
            total += hits / (index + 1)
    return total / relevant


def _dcg(gains: Sequence[int], k: int | None) -> float:
    total = 0.0
    for index, gain in enumerate(gains[:k]):
        if gain > 0:
            total += gain / math.log2(index + 2)
    return total


def ndcg_at_k(ranked: Sequence[str], judgements: Mapping[str, int], k: int | None = None) -> float:
    """nDCG of the top k (all of the ranking when k is None).

    Gains are raw labels; the ideal ranking is built from every positively judged
    document, retrieved or not. As in trec_eval the relevance level plays no part.
    """
    _check_cutoff(k)
    ideal = _dcg(sorted((g for g in judgements.values() if g > 0), reverse=True), k)
    if ideal <= 0.0:
        return 0.0
    label = judgements.get
    return _dcg([label(doc, NOT_JUDGED) for doc in ranked[:k]], k) / ideal


def r_precision(
    ranked: Sequence[str], judgements: Mapping[str, int], *, relevance_level: int = 1
) -> float:
    """Precision at rank R, R being the number of relevant documents."""
    relevant = num_relevant(judgements, relevance_level)
    return _hits(ranked, judgements, relevant, relevance_level) / relevant if relevant else 0.0


def bpref(ranked: Sequence[str], judgements: Mapping[str, int], *, relevance_level: int = 1) -> float:
    """Buckley & Voorhees' bpref: for each retrieved relevant document, the share of judged
    non-relevant documents (at most R of them) that it outranks; unjudged documents are
    skipped entirely."""
    relevant = num_relevant(judgements, relevance_level)
    if not relevant:
        return 0.0
    judged_nonrel = sum(1 for g in judgements.values() if 0 <= g < relevance_level)
    nonrel_so_far, total = 0, 0.0
    for doc in ranked:
        label = _label(judgements, doc)
        if label < 0:
            continue
        if label < relevance_level:
            nonrel_so_far += 1
        elif nonrel_so_far:
            total += 1.0 - min(nonrel_so_far, relevant) / min(judged_nonrel, relevant)
        else:
            total += 1.0
    return total / relevant


# ---------------------------------------------------------------------------------------
# RAG helpers: chunks and the documents they come from


def collapse_to_documents(ranked_chunk_doc_ids: Sequence[str]) -> list[str]:
    """Source documents of ranked chunks, each at the rank of its first chunk."""
    return list(dict.fromkeys(ranked_chunk_doc_ids))


def chunk_precision_at_k(ranked_chunk_doc_ids: Sequence[str], relevant: set[str], k: int) -> float:
    """Share of the top k chunk slots whose source document is relevant.

    No de-duplication: five chunks of one wrong document cost five slots.
    """
    _check_cutoff(k)
    return sum(1 for doc in ranked_chunk_doc_ids[:k] if doc in relevant) / k


# ---------------------------------------------------------------------------------------
# Measure names


@dataclass(frozen=True)
class Measure:
    """One parsed trec_eval measure name, e.g. `ndcg_cut_10` -> family ndcg_cut, k 10."""

    name: str
    family: str
    k: int | None = None

    @property
    def is_count(self) -> bool:
        """Counts (num_*) are summed over queries, not averaged, and printed as integers."""
        return self.family.startswith("num_")


PLAIN_MEASURES = ("map", "ndcg", "recip_rank", "Rprec", "bpref", "num_q", "num_ret", "num_rel", "num_rel_ret")
CUTOFF_MEASURES = ("P", "recall", "success", "map_cut", "ndcg_cut")
_CUTOFF_NAME = re.compile(rf"^({'|'.join(CUTOFF_MEASURES)})_([0-9]+)$")


def parse_measure(name: str) -> Measure:
    """`map` -> Measure('map', 'map'); `P_5` -> Measure('P_5', 'P', 5)."""
    if name in PLAIN_MEASURES:
        return Measure(name, name)
    match = _CUTOFF_NAME.match(name)
    if match and int(match.group(2)) >= 1:
        return Measure(name, match.group(1), int(match.group(2)))
    known = ", ".join(PLAIN_MEASURES + tuple(f"{f}_k" for f in CUTOFF_MEASURES))
    raise InputError(f"unknown measure {name!r}; known: {known} (k >= 1)")


def _parse_measures(names: Sequence[str]) -> list[Measure]:
    if isinstance(names, str):
        raise InputError("measures must be a sequence of names, not one string")
    return [parse_measure(name) for name in dict.fromkeys(names)]


# ---------------------------------------------------------------------------------------
# Evaluation over many queries


def _check_options(relevance_level: int, max_docs: int | None) -> None:
    if relevance_level < 0:
        raise InputError(f"relevance_level must be >= 0, got {relevance_level}")
    if max_docs is not None and max_docs < 0:
        raise InputError(f"max_docs must be >= 0, got {max_docs}")


def evaluated_queries(qrels: Qrels, run: Run, *, complete: bool = False) -> list[str]:
    """The queries trec_eval scores, in its (byte) order: those with judgements and at least
    one retrieved document, or with `complete` every qrels query."""
    if complete:
        return sorted(qrels)
    retrieved_and_judged = map(and_, map(bool, run.values()), map(qrels.__contains__, run))
    return sorted(compress(run, retrieved_and_judged))


_KERNELS = {
    "map": lambda r, j, m, lvl: average_precision(r, j, relevance_level=lvl),
    "map_cut": lambda r, j, m, lvl: average_precision(r, j, m.k, relevance_level=lvl),
    "P": lambda r, j, m, lvl: precision_at_k(r, j, m.k, relevance_level=lvl),
    "recall": lambda r, j, m, lvl: recall_at_k(r, j, m.k, relevance_level=lvl),
    "success": lambda r, j, m, lvl: hit_rate_at_k(r, j, m.k, relevance_level=lvl),
    "recip_rank": lambda r, j, m, lvl: reciprocal_rank(r, j, relevance_level=lvl),
    "ndcg": lambda r, j, m, lvl: ndcg_at_k(r, j),
    "ndcg_cut": lambda r, j, m, lvl: ndcg_at_k(r, j, m.k),
    "Rprec": lambda r, j, m, lvl: r_precision(r, j, relevance_level=lvl),
    "bpref": lambda r, j, m, lvl: bpref(r, j, relevance_level=lvl),
    "num_q": lambda r, j, m, lvl: 1.0,
    "num_ret": lambda r, j, m, lvl: float(len(r)),
    "num_rel": lambda r, j, m, lvl: float(num_relevant(j, lvl)),
    "num_rel_ret": lambda r, j, m, lvl: float(_hits(r, j, None, lvl)),
}


def evaluate_reference(
    qrels: Qrels,
    run: Run,
    measures: Sequence[str],
    *,
    relevance_level: int = 1,
    max_docs: int | None = None,
    complete: bool = False,
) -> Scores:
    """`evaluate` computed query by query with the per-query kernels (slow, plain)."""
    specs = _parse_measures(measures)
    _check_options(relevance_level, max_docs)
    results: Scores = {}
    for qid in evaluated_queries(qrels, run, complete=complete):
        ranked = rank_documents(run.get(qid, {}))[:max_docs]
        judged = qrels[qid]
        results[qid] = {m.name: _KERNELS[m.family](ranked, judged, m, relevance_level) for m in specs}
    return results


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: Sequence[str],
    *,
    relevance_level: int = 1,
    max_docs: int | None = None,
    complete: bool = False,
) -> Scores:
    """Per-query scores {qid: {measure: value}} with trec_eval semantics.

    `max_docs` is trec_eval's -M (only the top N of each ranking count), `complete` its -c,
    `relevance_level` its -l. Queries come out in trec_eval's order.
    """
    specs = _parse_measures(measures)
    _check_options(relevance_level, max_docs)
    qids = evaluated_queries(qrels, run, complete=complete)
    columns = _batch_columns(qrels, run, qids, specs, relevance_level, max_docs)
    names = [m.name for m in specs]
    rows = zip(*(columns[name].tolist() for name in names))
    return dict(zip(qids, map(dict, map(zip, repeat(names), rows))))


def mean_scores(results: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """trec_eval's `all` line: the mean over the queries in `results` (num_* are summed).

    Sums run in query byte order, as trec_eval's do, so the last digit matches too: one
    sequential `np.add.accumulate` from 0.0, the same additions as a Python loop would make.
    """
    qids = sorted(results)
    rows = list(map(results.__getitem__, qids))
    names = list(dict.fromkeys(chain.from_iterable(rows)))
    plain = all(map(is_, map(type, rows), repeat(dict)))
    means: dict[str, float] = {}
    for name in names:
        values = np.empty(len(rows) + 1)
        values[0] = 0.0
        values[1:] = np.fromiter(_column(rows, name, plain), np.float64, len(rows))
        total = float(np.add.accumulate(values)[-1])
        means[name] = total if name.startswith("num_") else (total / len(qids) if qids else 0.0)
    return means


def _column(rows: list[Mapping[str, float]], name: str, plain: bool) -> Iterator[float]:
    """Each row's value of `name`, 0.0 where it has none. `plain` rows (all exactly dicts, as
    `evaluate` returns) are read with dict.get itself, without looking the method up on each row."""
    if plain:
        return map(dict.get, rows, repeat(name), repeat(0.0))  # type: ignore[arg-type]  # rows are dicts here
    return map(methodcaller("get", name, 0.0), rows)


# ---------------------------------------------------------------------------------------
# The batch path
#
# Where the time goes (10,000 queries x 100 documents, docs/performance.md): about two thirds in
# reading the scores and labels out of the dicts (one C-level pass each; the label look-ups
# dominate), then per padded block of queries one row-wise sort of the scores, the repair of
# the runs of tied scores whose labels differ (doc ids compared pairwise), and a few array
# operations per measure. Sorting each row on its own is several times faster than one sort of
# every document keyed by (query, score).


_CELL_BUDGET = 1 << 21
"""Largest padded matrix (cells) built at once; queries are grouped by length to fit."""


def _log2_ranks(width: int) -> np.ndarray:
    """log2(rank + 1) for ranks 1..width, computed with math.log2 so both paths share it."""
    return np.array([math.log2(i + 2) for i in range(width)], dtype=np.float64)


@dataclass
class _Flat:
    """Per-query slices of one flat array: values[starts[q] : starts[q] + sizes[q]]."""

    values: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray

    def padded(self, rows: np.ndarray, width: int, fill: float) -> np.ndarray:
        """Rows `rows` as a (len(rows), width) matrix, each slice left-aligned, `fill` after it."""
        sizes = self.sizes[rows]
        if _consecutive(rows) and bool((sizes == width).all()):
            start = int(self.starts[rows[0]])
            return self.values[start : start + len(rows) * width].reshape(len(rows), width)
        cols = np.arange(width)
        mask = cols[None, :] < sizes[:, None]
        out = np.full((len(rows), width), fill, dtype=self.values.dtype)
        out[mask] = self.values[(self.starts[rows, None] + cols[None, :])[mask]]
        return out


def _consecutive(rows: np.ndarray) -> bool:
    return len(rows) > 0 and int(rows[-1]) - int(rows[0]) + 1 == len(rows) and bool((np.diff(rows) == 1).all())


def _flat(values: np.ndarray, sizes: np.ndarray) -> _Flat:
    return _Flat(values, np.cumsum(sizes) - sizes, sizes)


@dataclass
class _Inputs:
    """Every evaluated query's run and judgements as flat arrays (run order, qrels order)."""

    neg_scores: _Flat
    labels: _Flat
    judged: _Flat
    per_query: list[Mapping[str, float]]

    def doc_ids(self, queries: np.ndarray, positions: np.ndarray) -> list[str]:
        """The doc id at run position `positions[i]` of query `queries[i]`, for each i.

        Each is read by stepping through its own ranking's keys (islice, in C) rather than
        from a list of every doc id: only the few tied documents need a name, and a list of a
        million names costs more than the steps (every name touched twice, to list and to free).
        """
        starts = positions.tolist()
        rankings = map(self.per_query.__getitem__, queries.tolist())
        return list(chain.from_iterable(map(islice, rankings, starts, map((1).__add__, starts))))


def _inputs(qrels: Qrels, run: Run, qids: list[str]) -> _Inputs:
    empty: Mapping[str, float] = {}
    per_query = list(map(run.get, qids, repeat(empty)))
    judgements = list(map(qrels.__getitem__, qids))
    sizes = np.fromiter(map(len, per_query), np.int64, len(qids))
    total = int(sizes.sum())
    scores = np.fromiter(chain.from_iterable(map(methodcaller("values"), per_query)), np.float64, total)
    if total and np.isnan(scores.min()):  # min propagates NaN; no mask of a million cells
        raise InputError("a score is NaN; NaN cannot be ranked")
    judged_sizes = np.fromiter(map(len, judgements), np.int64, len(qids))
    judged, labels = _label_arrays(judgements, per_query, int(judged_sizes.sum()), total)
    neg_scores = np.negative(scores, out=scores)  # in place: one large array fewer to fault in
    return _Inputs(_flat(neg_scores, sizes), _flat(labels, sizes), _flat(judged, judged_sizes), per_query)


_BYTE_NOT_JUDGED = NOT_JUDGED & 0xFF
"""The byte that reads as NOT_JUDGED in int8 (255 -> -1)."""


def _label_arrays(judgements: list[Mapping[str, int]], per_query: list[Mapping[str, float]], judged_total: int,
                  total: int) -> tuple[np.ndarray, np.ndarray]:
    """Every judged label (qrels order) and each retrieved document's label (run order, NOT_JUDGED
    when the qrels lack it).

    When every judged label is 0..127, as usual, both are filled through a bytearray (a C loop
    a few times quicker per item than np.fromiter's) and read as int8, the same values; a
    look-up that misses gives the byte 255, which reads as NOT_JUDGED. Else as `_small_ints`.
    """
    def judged_values() -> Iterator[int]:
        return chain.from_iterable(map(methodcaller("values"), judgements))

    def lookups(not_judged: int) -> Iterator[int]:
        default = repeat(not_judged)  # endless, so every query's look-ups can share it
        return chain.from_iterable(map(map, map(attrgetter("get"), judgements), per_query, repeat(default)))

    try:
        judged = np.frombuffer(bytearray(judged_values()), np.int8)
    except (TypeError, ValueError):  # a label out of 0..255, or not an int
        pass
    else:
        if bool((judged >= 0).all()):  # 128..255 would read as negative
            return judged, np.frombuffer(bytearray(lookups(_BYTE_NOT_JUDGED)), np.int8)
    return _small_ints(judged_values, judged_total), _small_ints(lambda: lookups(NOT_JUDGED), total)


def _small_ints(values: Callable[[], Iterator[int]], count: int) -> np.ndarray:
    """The labels `values()` yields as int8 when every one fits, as usual (-1..4): an eighth of
    the memory to fill, gather, sort and compare, with the same values (numpy compares int8 with
    any Python int exactly, and a gain divided by a float64 is the same float64); else int64."""
    try:
        return np.fromiter(values(), np.int8, count)
    except OverflowError:
        return np.fromiter(values(), np.int64, count)


def _ranked_labels(inputs: _Inputs, rows: np.ndarray, width: int, unjudged_below: int | None) -> np.ndarray:
    """Each row's labels in trec_eval rank order, NOT_JUDGED padding after them.

    With `unjudged_below`, labels below it that carry no gain (<= 0) read as NOT_JUDGED: for
    every measure but bpref a judged non-relevant document and an unjudged one are alike, and
    fewer distinct labels leave fewer tied runs to put in doc id order.
    """
    neg = inputs.neg_scores.padded(rows, width, math.inf)
    order = np.argsort(neg, axis=1)
    labels = _take_along_rows(inputs.labels.padded(rows, width, NOT_JUDGED), order)
    if unjudged_below is not None:  # below the level and <= 0, labels being ints
        np.copyto(labels, NOT_JUDGED, where=labels < min(unjudged_below, 1))
    # the scores in rank order, sorted where they lie (nothing reads them after this block); a
    # sort may put 0.0 and -0.0 the other way round, but they compare equal, and equality is
    # all the tie repair reads
    neg.sort(axis=1)
    _break_ties(labels, order, neg, inputs, rows)
    return labels


def _take_along_rows(matrix: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """`matrix[i, columns[i, j]]` for every i, j: np.take_along_axis(matrix, columns, axis=1)
    through one take from the flattened matrix, a plain gather (take_along_axis indexes with a
    pair of broadcast index arrays, several times the work per cell)."""
    flat = columns + np.arange(0, matrix.size, matrix.shape[1])[:, None]
    taken: np.ndarray = matrix.reshape(-1).take(flat)
    return taken


def _break_ties(labels: np.ndarray, order: np.ndarray, ranked: np.ndarray, inputs: _Inputs, rows: np.ndarray) -> None:
    """Within each run of equal scores put the documents in descending doc id order (in place).

    Only runs that mix labels need it: swapping documents with the same label changes no
    measure. Padding cells (+inf after negation) go after any real document scored -inf.
    """
    tied = ranked[:, 1:] == ranked[:, :-1]
    if not tied.any():
        return
    cells, sizes = _mixed_tie_groups(tied, labels)
    if not len(cells):
        return
    row = cells // labels.shape[1]
    members = order.reshape(-1)[cells]
    real = members < inputs.neg_scores.sizes[rows][row]
    names = np.empty(len(cells), dtype=object)
    picked = inputs.doc_ids(rows[row[real]], members[real])
    names[real] = np.array(picked, dtype=object)  # the str objects themselves, never numpy's '<U'
    flat = labels.reshape(-1)
    flat[cells[_places(names, real, sizes)]] = flat[cells]


def _places(names: np.ndarray, real: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Where each member of a run of ties goes (index into the runs' cells): after every member of
    its run with a greater doc id; padding after every document. Pairs, the usual run, are
    swapped or not by one comparison each; longer runs are placed together."""
    starts = np.cumsum(sizes) - sizes
    place = np.arange(len(names))
    pair = starts[sizes == 2]
    if len(pair):
        swap = _ahead(names, real, pair + 1, pair)
        place[pair] += swap
        place[pair + 1] -= swap
    longer = np.repeat(sizes != 2, sizes)
    if longer.any():
        members = np.flatnonzero(longer)
        run_sizes = sizes[sizes != 2]
        if int((run_sizes * run_sizes).sum()) <= 8 * len(members) + 4096:
            within = _places_by_pairs(names[members], real[members], run_sizes)
        else:
            within = _places_by_sorting(names[members], real[members], run_sizes)
        place[members] = members[within]
    return place


def _ahead(names: np.ndarray, real: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """For each pair of tied members, whether `first` ranks above `second` (a greater doc id, or
    a real document against padding; padding keeps its order)."""
    real_first, real_second = real[first], real[second]
    ahead: np.ndarray = real_first & ~real_second
    both = real_first & real_second
    ahead[both] = np.greater(names[first[both]], names[second[both]]).astype(bool)
    ahead |= ~real_first & ~real_second & (first < second)
    return ahead


def _places_by_pairs(names: np.ndarray, real: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Where each member of a run of ties goes (index into the runs' cells): after every member of
    its run with a greater doc id; padding after every document. For short runs, all pairs."""
    start = np.repeat(np.cumsum(sizes) - sizes, sizes)
    size = np.repeat(sizes, sizes)
    first = np.repeat(np.arange(len(names)), size)
    offset = np.arange(len(first)) - np.repeat(np.cumsum(size) - size, size)
    second = start[first] + offset
    ahead = _ahead(names, real, second, first)
    place: np.ndarray = start + np.bincount(first, weights=ahead, minlength=len(names)).astype(np.int64)
    return place


def _places_by_sorting(names: np.ndarray, real: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """As `_places_by_pairs`, through one ranking of every distinct doc id (for long runs)."""
    distinct = sorted(set(names[real].tolist()))
    rank_of = {name: i for i, name in enumerate(distinct, start=1)}
    name_rank = np.zeros(len(names), dtype=np.int64)
    name_rank[real] = np.fromiter(map(rank_of.__getitem__, names[real].tolist()), np.int64, int(real.sum()))
    group = np.repeat(np.arange(len(sizes)), sizes)
    order = np.argsort(group * (len(rank_of) + 1) - name_rank, kind="stable")
    place = np.empty(len(names), dtype=np.int64)
    place[order] = np.arange(len(names))
    return place


def _mixed_tie_groups(tied: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat cells of the runs of tied scores whose labels differ, run after run, and the runs' sizes."""
    width = labels.shape[1]
    in_group = np.zeros(labels.shape, dtype=bool)
    in_group[:, 1:] = tied
    in_group[:, :-1] |= tied
    cells = np.flatnonzero(in_group)
    row, col = np.divmod(cells, width)
    continues = np.zeros(len(cells), dtype=bool)
    has_previous = col > 0
    continues[has_previous] = tied.reshape(-1)[(cells - row - 1)[has_previous]]
    first = np.flatnonzero(~continues)
    values = labels.reshape(-1)[cells]
    mixed = np.minimum.reduceat(values, first) != np.maximum.reduceat(values, first)
    sizes = np.diff(np.append(first, len(cells)))
    return cells[np.repeat(mixed, sizes)], sizes[mixed]


def _blocks(widths: np.ndarray) -> Iterator[np.ndarray]:
    """Query indices in groups whose padded matrix stays within the cell budget."""
    if len(widths) * int(widths.max(initial=1)) <= _CELL_BUDGET:
        yield np.arange(len(widths))
        return
    order = np.argsort(widths, kind="stable")
    start = 0
    for end in range(1, len(order) + 1):
        too_big = end < len(order) and (end + 1 - start) * widths[order[end]] > _CELL_BUDGET
        if end == len(order) or too_big:
            yield order[start:end]
            start = end


def _batch_columns(
    qrels: Qrels,
    run: Run,
    qids: list[str],
    specs: list[Measure],
    level: int,
    max_docs: int | None,
) -> dict[str, np.ndarray]:
    columns = {m.name: np.zeros(len(qids)) for m in specs}
    if not qids:
        return columns
    inputs = _inputs(qrels, run, qids)
    widths = np.maximum(np.maximum(inputs.labels.sizes, inputs.judged.sizes), 1)
    for rows in _blocks(widths):
        block = _Block(inputs, rows, level, max_docs, judged_matters=any(m.family == "bpref" for m in specs))
        for m in specs:
            columns[m.name][rows] = block.measure(m)
    return columns


_FEW_GAINS = 8
"""Up to this many gain levels, ideal rankings are counted out rather than sorted."""


def _best_first(judged: np.ndarray, width: int) -> np.ndarray:
    """Each row's gains (its positive labels, 0 for the rest) best first, in at most `width` columns.

    With few gain levels (the usual 1..3) no sort is needed: a row's j-th best gain is the number
    of levels v at which more than j of its labels are >= v (a few counts and comparisons)."""
    top = int(judged.max(initial=0))
    if top > _FEW_GAINS:
        gains = np.maximum(judged, 0)
        gains.sort(axis=1)
        best_sorted: np.ndarray = gains[:, ::-1][:, :width]
        return best_sorted
    columns = np.arange(min(width, judged.shape[1]))
    best = np.zeros((len(judged), len(columns)), dtype=judged.dtype)
    for level in range(1, top + 1):
        best += columns < np.count_nonzero(judged >= level, axis=1)[:, None]
    return best


def _safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    out = np.zeros(len(numerator))
    quotient: np.ndarray = np.divide(numerator, denominator, out=out, where=denominator > 0)
    return quotient


def _fit(matrix: np.ndarray, width: int, fill: int) -> np.ndarray:
    """The matrix cut or padded on the right to `width` columns."""
    if matrix.shape[1] >= width:
        return matrix[:, :width]
    out = np.full((matrix.shape[0], width), fill, dtype=matrix.dtype)
    out[:, : matrix.shape[1]] = matrix
    return out


class _Block:
    """A group of queries as padded matrices: row = query, column = rank - 1."""

    def __init__(self, inputs: _Inputs, rows: np.ndarray, level: int, max_docs: int | None, *,
                 judged_matters: bool = True):
        run_width = max(int(inputs.labels.sizes[rows].max()), 1)
        judged = inputs.judged.padded(rows, max(int(inputs.judged.sizes[rows].max()), 1), NOT_JUDGED)
        self.num_rel = np.count_nonzero(judged >= level, axis=1)
        self.num_nonrel = np.count_nonzero((judged >= 0) & (judged < level), axis=1)
        positive = np.count_nonzero(judged > 0, axis=1)
        self.width = max(run_width, int(positive.max()))
        labels = _ranked_labels(inputs, rows, run_width, None if judged_matters else level)
        if max_docs is not None:
            labels[:, max_docs:] = NOT_JUDGED
        self.labels = _fit(labels, self.width, NOT_JUDGED)
        # no wider than the labels (past the positive gains every cell is 0, which adds nothing to
        # a DCG), and no padding to their width either
        self.ideal_gains = _best_first(judged, self.width)
        sizes = inputs.labels.sizes[rows]
        self.num_ret = sizes if max_docs is None else np.minimum(sizes, max_docs)
        self.level = level
        self.log2_ranks = _log2_ranks(self.width)

    def measure(self, m: Measure) -> np.ndarray:
        family: Callable[[int | None], np.ndarray] = getattr(self, "_" + m.family)
        return family(m.k)

    # shared intermediate matrices -------------------------------------------------------
    @cached_property
    def relevant(self) -> np.ndarray:
        return self.labels >= self.level

    @cached_property
    def hits(self) -> np.ndarray:
        return np.cumsum(self.relevant, axis=1)

    @cached_property
    def precision_sums(self) -> np.ndarray:
        ranks = np.arange(1, self.width + 1)
        return np.cumsum(np.where(self.relevant, self.hits / ranks, 0.0), axis=1)

    def _precision_total(self) -> np.ndarray:
        """Each row's sum of precision at its relevant ranks, added in rank order: the
        relevant cells alone, packed to the left (adding the zeros between them changes no bit)."""
        cells = np.flatnonzero(self.relevant)
        row, col = np.divmod(cells, self.width)
        per_row = np.bincount(row, minlength=len(self.num_rel))
        first = np.cumsum(per_row) - per_row
        hits = np.arange(len(cells)) - first[row]
        packed = np.zeros((len(per_row), max(int(per_row.max(initial=0)), 1)))
        packed[row, hits] = (hits + 1) / (col + 1)
        total: np.ndarray = np.cumsum(packed, axis=1)[:, -1]
        return total

    def _columns(self, k: int | None) -> int:
        """How many leading columns a measure cut at rank k reads."""
        return self.width if k is None else min(k, self.width)

    def _hits_at(self, k: int | None) -> np.ndarray:
        hits: np.ndarray = np.count_nonzero(self.relevant[:, : self._columns(k)], axis=1)
        return hits

    def _dcg_at(self, gains: np.ndarray, k: int | None) -> np.ndarray:
        """Sum of gain / log2(rank + 1) over the top k, added in rank order."""
        top = gains[:, : self._columns(k)]  # the ideal gains may be narrower: their zeros add nothing
        discounted = np.where(top > 0, top / self.log2_ranks[: top.shape[1]], 0.0)
        total: np.ndarray = np.cumsum(discounted, axis=1)[:, -1]
        return total

    # measures ---------------------------------------------------------------------------
    def _P(self, k: int) -> np.ndarray:
        return self._hits_at(k) / k

    def _recall(self, k: int) -> np.ndarray:
        return _safe_divide(self._hits_at(k), self.num_rel)

    def _success(self, k: int) -> np.ndarray:
        return (self._hits_at(k) > 0).astype(np.float64)

    def _map(self, k: None) -> np.ndarray:
        return _safe_divide(self._precision_total(), self.num_rel)

    def _map_cut(self, k: int) -> np.ndarray:
        return _safe_divide(self.precision_sums[:, self._columns(k) - 1], self.num_rel)

    def _ndcg(self, k: None) -> np.ndarray:
        return _safe_divide(self._dcg_at(self.labels, None), self._dcg_at(self.ideal_gains, None))

    def _ndcg_cut(self, k: int) -> np.ndarray:
        return _safe_divide(self._dcg_at(self.labels, k), self._dcg_at(self.ideal_gains, k))

    def _recip_rank(self, k: None) -> np.ndarray:
        first = np.argmax(self.relevant, axis=1)
        return np.where(self.relevant.any(axis=1), 1 / (first + 1), 0.0)

    def _Rprec(self, k: None) -> np.ndarray:
        depth = np.minimum(self.num_ret, self.num_rel)
        hits = self.hits[np.arange(len(depth)), np.maximum(depth, 1) - 1]
        return np.where(depth > 0, _safe_divide(hits, self.num_rel), 0.0)

    def _bpref(self, k: None) -> np.ndarray:
        judged_nonrel = (self.labels >= 0) & ~self.relevant
        nonrel_so_far = np.cumsum(judged_nonrel, axis=1)
        num_rel = self.num_rel[:, None]
        cap = np.minimum(self.num_nonrel, self.num_rel)[:, None]
        share = np.minimum(nonrel_so_far, num_rel) / np.maximum(cap, 1)
        gained = np.where(nonrel_so_far > 0, 1.0 - share, 1.0)
        total = np.cumsum(np.where(self.relevant, gained, 0.0), axis=1)[:, -1]
        return _safe_divide(total, self.num_rel)

    def _num_q(self, k: None) -> np.ndarray:
        return np.ones(len(self.num_ret))

    def _num_ret(self, k: None) -> np.ndarray:
        return np.asarray(self.num_ret, dtype=np.float64)

    def _num_rel(self, k: None) -> np.ndarray:
        return np.asarray(self.num_rel, dtype=np.float64)

    def _num_rel_ret(self, k: None) -> np.ndarray:
        return self._hits_at(None).astype(np.float64)
