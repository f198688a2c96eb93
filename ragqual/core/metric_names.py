"""The one registry of metric names: what each number is, which way is better, where it is shown.

Every metric ragqual computes has one entry here, and every screen that lists, orders, gates or
judges metrics reads this module: the retrieval tables, the run report, `history`, `compare`
(direction, binary tests, the default gate), the adoption rule, `sweep` and the help texts.

An entry is a `Metric`: its name, its `direction` (is a rise better or worse), its `tier`
(retrieval, generation, or the engine's trial-level numbers) and its place in the display order.
A name with a cutoff is a *family*: `recall@{k}` covers recall@1, recall@100 ...; trec_eval's
measures are families in its own spelling (`P_{k}`, `ndcg_cut_{k}`, `recall_{k}`, `success_{k}`,
`map_cut_{k}`). A concrete entry (`recall@5`) wins over its family.

Display order (`display_order`): the LISTED entries in the order of `METRICS` (a listed family's
members by name at the family's place), then every other name by name (unregistered ones, such
as a subject's own metrics, and the BY_NAME entries: deep-run and trec_eval measures), then the
LAST entries (sizes and the refusal-question flag).

A name the registry does not know is read as higher-is-better: subjects may add their own
metrics (`extra_metrics`) and those are qualities unless registered otherwise.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from ragqual.core.metrics import CUTOFF_MEASURES, PLAIN_MEASURES


class Direction(StrEnum):
    HIGHER = "higher"
    LOWER = "lower"


class Tier(StrEnum):
    RETRIEVAL = "retrieval"
    GENERATION = "generation"
    ENGINE = "engine"


class Place(StrEnum):
    LISTED = "listed"  # in registry order
    BY_NAME = "by-name"  # among the unregistered names, alphabetically
    LAST = "last"  # after everything else, in registry order


@dataclass(frozen=True)
class Metric:
    """One metric name (or family, with `{k}` for the cutoff) and how to read it."""

    name: str
    direction: Direction
    tier: Tier
    meaning: str
    place: Place = Place.LISTED
    binary: bool = False  # 0 or 1 per question: compare uses McNemar when the values agree
    informational: bool = False  # a size, not a quality: shown, never gated unless named
    # In compare's default gate for strategy groups (retrieval and sweep runs): the headline of each
    # family; the rest (hit@k beside recall@k, ndcg@5, rprec ...) moves with these and is compared
    # when named or with --all-metrics. Trial groups gate on every metric they have.
    gated: bool = False

    @property
    def is_family(self) -> bool:
        return "{k}" in self.name

    @property
    def lower_is_better(self) -> bool:
        return self.direction is Direction.LOWER


_H, _L = Direction.HIGHER, Direction.LOWER
_R, _G, _E = Tier.RETRIEVAL, Tier.GENERATION, Tier.ENGINE
SCORE = "score"
PASS = "pass"


def _ragqual_retrieval() -> tuple[Metric, ...]:
    """The per-question retrieval numbers of `pipeline.retrieval_tier.query_metrics`."""
    return (
        *(Metric(f"recall@{k}", _H, _R, f"share of relevant documents in the top {k}", gated=k in (1, 5))
          for k in (1, 3, 5, 10)),
        *(Metric(f"hit@{k}", _H, _R, f"1 if a relevant document is in the top {k}", binary=True, gated=k == 5)
          for k in (1, 3, 5, 10)),
        Metric("mrr", _H, _R, "reciprocal rank of the first relevant document", gated=True),
        Metric("ndcg@5", _H, _R, "graded nDCG of the top 5"),
        Metric("ndcg@10", _H, _R, "graded nDCG of the top 10", gated=True),
        Metric("map@10", _H, _R, "average precision over the top 10", gated=True),
        Metric("rprec", _H, _R, "precision at R, the number of relevant documents"),
        Metric("precision@5", _H, _R, "share of the top 5 chunks from a relevant document", gated=True),
        Metric("contextRecall", _H, _R, "share of relevant documents in the injected context (also stored "
               "per e2e trial)", gated=True),
    )


def _generation() -> tuple[Metric, ...]:
    """The engine's trial numbers, then `subjects.rag.metrics_from_outcomes`."""
    return (
        Metric(SCORE, _H, _E, "weighted share of a trial's assertions that passed"),
        Metric(PASS, _H, _E, "1 if every weight-bearing assertion of the trial passed", binary=True),
        Metric("correctness", _H, _G, "every mustInclude / mustNotInclude (or the refusal) passed", binary=True),
        Metric("refusalCorrectness", _H, _G, "the refusal assertion passed", binary=True),
        Metric("leakage", _L, _G, "1 if the answer narrates retrieval", binary=True),
        Metric("groundedness", _H, _G, "share of the answer's figures (numbers of magnitude above 10, dates) "
               "found in the context"),
        Metric("factCoverage", _H, _G, "share of the golden's mustInclude facts found in the injected context (e2e)"),
        Metric("readerCeiling", _H, _G, "1 if a perfect reader could pass on the injected context: every mustInclude "
                                        "fact in it, or, out of corpus, an empty context (e2e)", binary=True),
        Metric("thinkTagLeak", _L, _G, "1 if the answer shows think tags", binary=True),
    )


def _trec_eval() -> tuple[Metric, ...]:
    """trec_eval's measures as `core.metrics` implements them (`ragqual trec`); a deep run (a
    standard collection) also stores `map` and `ndcg` at full depth under these names."""
    n = Place.BY_NAME
    plain = (Metric(name, _H, _R, f"trec_eval's {name}", n, informational=name.startswith("num_"))
             for name in PLAIN_MEASURES)
    cutoff = (Metric(f"{family}_{{k}}", _H, _R, f"trec_eval's {family} at cutoff k", n, binary=family == "success")
              for family in CUTOFF_MEASURES)
    return (*plain, *cutoff)


def _families_and_deep() -> tuple[Metric, ...]:
    """Any other cutoff, and trec_eval's measures: sorted by name."""
    n = Place.BY_NAME
    return (
        Metric("recall@{k}", _H, _R, "share of relevant documents in the top k", n),
        Metric("hit@{k}", _H, _R, "1 if a relevant document is in the top k", n, binary=True),
        Metric("ndcg@{k}", _H, _R, "graded nDCG of the top k", n),
        Metric("map@{k}", _H, _R, "average precision over the top k", n),
        Metric("precision@{k}", _H, _R, "share of the top k chunks from a relevant document", n),
        *_trec_eval(),
    )


METRICS: tuple[Metric, ...] = (
    *_ragqual_retrieval(),
    *_generation(),
    Metric("contextPrecision@{k}", _H, _R, "share of the k injected chunks from a relevant document"),
    *_families_and_deep(),
    Metric("contextChars", _L, _R, "characters of injected context", Place.LAST, informational=True),
    Metric("nonEmptyRefusal", _L, _R, "1 if an out-of-corpus question got a non-empty context", Place.LAST,
           binary=True, gated=True),
)
"""Every registered metric; the LISTED and LAST ones in display order."""

# Screens: which metrics each one shows, in its own order (every name is registered: tested).
RETRIEVAL_HEADLINE = ("recall@1", "recall@5", "contextRecall", "hit@5", "mrr", "ndcg@10", "map@10", "precision@5",
                      "nonEmptyRefusal")
"""The retrieval tables' columns (`ragqual retrieval`, its Markdown report)."""
DEEP_K = 100
DEEP_HEADLINE = ("map", "ndcg@10", "ndcg", "recall@5", "recall@10", f"recall@{DEEP_K}", "mrr", "precision@5")
"""The retrieval tables' columns when a run measured full depth (a standard collection)."""
ADOPTION_PRIORITY = ("recall@5", "ndcg@10", "mrr", "map@10")
"""The adoption rule's metrics, the deciding one first (`core.adoption`)."""
SWEEP_COLUMNS = ("recall@1", "recall@5", "mrr", "ndcg@10", "map@10", "precision@5", "contextChars")
"""`ragqual sweep`'s table."""
EVAL_SUMMARY = ("recall@5", "contextRecall", "mrr", "ndcg@10", "nonEmptyRefusal")
"""The retrieval line `ragqual eval` prints per strategy."""
CASE_METRICS = ("hit@5", "recall@5", "ndcg@10", "mrr")
"""`ragqual history --case` for retrieval runs."""
HISTORY_HEADLINES: dict[str, tuple[str, ...]] = {
    "retrieval": ("recall@5", "contextRecall", "ndcg@10", "mrr"),
    "sweep": ("recall@5", "contextRecall", "ndcg@10", "mrr"),
    "generation": (SCORE, PASS, "correctness", "contextRecall"),
    "subject": (SCORE, PASS),
}
"""`ragqual history`'s columns per run kind (other kinds: score and pass)."""
FLIP_METRICS = (PASS, "hit@5")
"""The pass/fail a compare flip is read from: a trial group's `pass`, else a strategy group's hit@5."""
PAGE_QUESTION_METRICS = ("recall@5", "mrr")
"""The run page's per-question retrieval columns; the first is also its per-tag chart's metric."""

_CUTOFF = "([0-9]+)"
_EXACT = {m.name: m for m in METRICS if not m.is_family}


@functools.cache
def _families() -> tuple[tuple[re.Pattern[str], Metric], ...]:
    """Each family's pattern and entry, compiled when a name is first looked up rather than at
    import: the retrieval tier imports this module for its headline names and looks none up."""
    return tuple((re.compile(re.escape(m.name).replace(re.escape("{k}"), _CUTOFF) + "$"), m)
                 for m in METRICS if m.is_family)


def lookup(name: str) -> Metric | None:
    """The entry for `name`: the concrete one, else its family (cutoff >= 1), else None."""
    if name in _EXACT:
        return _EXACT[name]
    for pattern, metric in _families():
        match = pattern.match(name)
        if match and int(match.group(1)) >= 1:
            return metric
    return None


def is_registered(name: str) -> bool:
    return lookup(name) is not None


def direction(name: str) -> Direction:
    """Which way is better; an unregistered name (a subject's own metric) is higher-is-better."""
    metric = lookup(name)
    return metric.direction if metric else Direction.HIGHER


def lower_is_better(name: str) -> bool:
    return direction(name) is Direction.LOWER


def is_binary(name: str) -> bool:
    """Named as pass/fail per question (the values must still be 0 or 1 for McNemar)."""
    metric = lookup(name)
    return bool(metric and metric.binary)


def is_informational(name: str) -> bool:
    metric = lookup(name)
    return bool(metric and metric.informational)


def is_gated(name: str) -> bool:
    """In compare's default gate for strategy groups."""
    metric = lookup(name)
    return bool(metric and metric.gated)


def tier(name: str) -> Tier | None:
    metric = lookup(name)
    return metric.tier if metric else None


def metrics_for(tier_: Tier) -> tuple[Metric, ...]:
    return tuple(m for m in METRICS if m.tier is tier_)


def gated_names() -> tuple[str, ...]:
    """The concrete names of compare's default gate, in display order."""
    return tuple(display_order(m.name for m in METRICS if m.gated and not m.is_family))


_POSITION = {m.name: i for i, m in enumerate(METRICS)}
_BANDS = {Place.LISTED: 0, Place.BY_NAME: 1, Place.LAST: 2}


def _key(name: str) -> tuple[int, int, str]:
    metric = lookup(name)
    place = metric.place if metric else Place.BY_NAME
    position = _POSITION[metric.name] if metric and place is not Place.BY_NAME else 0
    return _BANDS[place], position, name


def display_order(names: Iterable[str]) -> list[str]:
    """The distinct `names` in their reading order (module docstring)."""
    return sorted(set(names), key=_key)
