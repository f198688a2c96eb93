"""How far a judge agrees with people, and with itself.

A judge's numbers are only worth reading beside evidence of how often it says what a person
would say. This module holds the pure arithmetic of that evidence:

- `cohen_kappa` / `agreement`: Cohen's kappa between human labels and judge verdicts on the same
  trials, with both base rates (a kappa without them hides a judge that says "yes" to all), the
  confusion matrix, the raw accuracy and the positions where the two disagree.
- `rank_auc`: how well the judge's continuous score (P(yes)) orders the human yes above the
  human no, whatever threshold it is read at: a judge can rank well yet be miscalibrated (say yes
  to nearly everything at 0.5), which kappa alone hides and which PPI, using the score itself, uses.
- `between_labellers`: the same kappa between two people who labelled the same trials: the
  ceiling a judge can be expected to reach, since it cannot agree with one person more than a
  second person does.
- `self_consistency`: whether K samples of the judge on one item say the same thing.
- `swap_consistency`: whether a pairwise judge names the same winner when the two answers are
  shown in the other order (position bias).

Verdicts are 1 (yes) and 0 (no). A human `unsure` and a judge error are not verdicts: they are
left out of kappa and counted, never silently read as "no".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations

from ragqual.errors import InputError

VERDICT_VALUES = {"yes": 1, "no": 0}
UNSURE = "unsure"
PAIRWISE_VERDICTS = ("a", "b", "tie")


@dataclass(frozen=True)
class Agreement:
    """Agreement between human labels and judge verdicts on the same trials.

    `confusion` is ((tn, fp), (fn, tp)) with the human label as the truth (rows) and the judge
    as the prediction (columns). `kappa` is None when it is undefined or meaningless, and
    `kappa_reason` then says why, so no NaN ever reaches a report. `disagreements` are indices
    into the sequences as given (before unsure labels and judge errors were dropped).
    """

    kappa: float | None
    kappa_reason: str | None
    n: int
    accuracy: float | None
    human_rate: float | None
    judge_rate: float | None
    confusion: tuple[tuple[int, int], tuple[int, int]]
    disagreements: tuple[int, ...]
    unsure: int = 0
    judge_missing: int = 0

    def as_dict(self) -> dict[str, object]:
        """Plain JSON-ready fields (tuples become lists), for audit payloads and JSON reports."""
        return {**asdict(self), "confusion": [list(row) for row in self.confusion],
                "disagreements": list(self.disagreements)}


@dataclass(frozen=True)
class Consistency:
    """Share of items on which repeated or swapped judgements agree.

    `share` is the headline (unanimous items for self-consistency, same winner in both orders
    for swap consistency); `mean_pairwise` is the mean share of agreeing sample pairs per item
    (self-consistency only); `excluded` counts items left out (fewer than two usable samples, or
    an error in one order). Values are None when no item is usable.
    """

    share: float | None
    n: int
    excluded: int
    mean_pairwise: float | None = None
    first_position_rate: float | None = None


def _check_binary(values: Sequence[int], who: str) -> None:
    bad = [v for v in values if v not in (0, 1)]
    if bad:
        raise InputError(f"{who} verdicts must be 0 (no) or 1 (yes), got {bad[0]!r}")


def _confusion(human: Sequence[int], judge: Sequence[int]) -> tuple[tuple[int, int], tuple[int, int]]:
    cells = [[0, 0], [0, 0]]
    for h, j in zip(human, judge):
        cells[h][j] += 1
    return (cells[0][0], cells[0][1]), (cells[1][0], cells[1][1])


def _kappa(human_rate: float, judge_rate: float, accuracy: float,
           raters: tuple[str, str] = ("human labels", "judge verdicts")) -> tuple[float | None, str | None]:
    """Cohen's kappa from the two base rates and the observed agreement.

    When either side uses a single class, chance agreement equals observed agreement up to the
    other side's rate, so kappa is 0 or 0/0 by construction and says nothing about the judge:
    report None with the reason and let the reader look at accuracy and the base rates.
    """
    for who, rate in zip(raters, (human_rate, judge_rate)):
        if rate in (0.0, 1.0):
            word = "yes" if rate == 1.0 else "no"
            return None, f"all {who} are '{word}': kappa is undefined when a rater uses one class"
    chance = human_rate * judge_rate + (1 - human_rate) * (1 - judge_rate)
    return (accuracy - chance) / (1 - chance), None


def cohen_kappa(human: Sequence[int], judge: Sequence[int]) -> Agreement:
    """Cohen's kappa, base rates, confusion matrix and disagreements of two binary raters."""
    if len(human) != len(judge):
        raise InputError(f"{len(human)} human labels but {len(judge)} judge verdicts")
    _check_binary(human, "human")
    _check_binary(judge, "judge")
    return _agreement(list(human), list(judge), list(range(len(human))), 0, 0)


def _agreement(human: list[int], judge: list[int], positions: list[int], unsure: int, missing: int,
               raters: tuple[str, str] = ("human labels", "judge verdicts")) -> Agreement:
    n = len(human)
    confusion = _confusion(human, judge)
    disagreements = tuple(p for p, h, j in zip(positions, human, judge) if h != j)
    if n == 0:
        return Agreement(None, f"no trial carries both {raters[0]} and {raters[1]} (yes or no)", 0, None, None, None,
                         confusion, (), unsure, missing)
    accuracy = (confusion[0][0] + confusion[1][1]) / n
    human_rate, judge_rate = sum(human) / n, sum(judge) / n
    kappa, reason = _kappa(human_rate, judge_rate, accuracy, raters)
    return Agreement(kappa, reason, n, accuracy, human_rate, judge_rate, confusion, disagreements, unsure, missing)


def agreement(human: Sequence[str], judge: Sequence[str | None]) -> Agreement:
    """Agreement of verdict words: human `yes`/`no`/`unsure`, judge `yes`/`no`/None (an error).

    Unsure labels and judge errors are dropped from every figure and counted in `unsure` and
    `judge_missing`; a trial with both counts as unsure.
    """
    if len(human) != len(judge):
        raise InputError(f"{len(human)} human labels but {len(judge)} judge verdicts")
    kept_h: list[int] = []
    kept_j: list[int] = []
    positions: list[int] = []
    unsure = missing = 0
    for i, (h, j) in enumerate(zip(human, judge)):
        if h == UNSURE:
            unsure += 1
        elif j is None:
            missing += 1
        else:
            kept_h.append(_verdict_value(h, "human"))
            kept_j.append(_verdict_value(j, "judge"))
            positions.append(i)
    return _agreement(kept_h, kept_j, positions, unsure, missing)


@dataclass(frozen=True)
class LabellerAgreement:
    """Two labellers on the trials both labelled: `agreement` over those both said yes or no to
    (`first`'s verdicts as the rows), `disagreements` and `unsure` as trial ids."""

    first: str
    second: str
    agreement: Agreement
    disagreements: tuple[int, ...]
    unsure: tuple[int, ...]

    def as_dict(self) -> dict[str, object]:
        return {"first": self.first, "second": self.second, **self.agreement.as_dict(),
                "disagreements": list(self.disagreements), "unsure": list(self.unsure)}


def between_labellers(first: str, second: str, a: Mapping[int, str], b: Mapping[int, str]) -> LabellerAgreement:
    """Cohen's kappa of two labellers' verdicts (trial -> yes/no/unsure) on their shared trials.

    A trial either of them marked unsure is left out of every figure and listed in `unsure`."""
    shared = sorted(set(a) & set(b))
    unsure = tuple(t for t in shared if UNSURE in (a[t], b[t]))
    kept = [t for t in shared if t not in unsure]
    rows = [_verdict_value(a[t], "human") for t in kept]
    cols = [_verdict_value(b[t], "human") for t in kept]
    found = _agreement(rows, cols, list(range(len(kept))), len(unsure), 0, (f"{first}'s labels", f"{second}'s labels"))
    return LabellerAgreement(first, second, found, tuple(kept[i] for i in found.disagreements), unsure)


def _verdict_value(word: str, who: str) -> int:
    if word not in VERDICT_VALUES:
        raise InputError(f"{who} verdict {word!r} is not one of yes, no" + (", unsure" if who == "human" else ""))
    return VERDICT_VALUES[word]


def self_consistency(samples: Sequence[Sequence[int | None]]) -> Consistency:
    """Agreement of K judge samples per item (None = a sample that errored, left out).

    `share` is the share of items whose usable samples all agree; `mean_pairwise` the mean,
    over items, of the share of agreeing pairs among their samples. An item with fewer than
    two usable samples says nothing about consistency and is counted in `excluded`.
    """
    unanimous = 0
    pairwise: list[float] = []
    excluded = 0
    for item in samples:
        usable = [s for s in item if s is not None]
        if len(usable) < 2:
            excluded += 1
            continue
        pairs = list(combinations(usable, 2))
        pairwise.append(sum(a == b for a, b in pairs) / len(pairs))
        unanimous += len(set(usable)) == 1
    n = len(pairwise)
    if n == 0:
        return Consistency(None, 0, excluded)
    return Consistency(unanimous / n, n, excluded, mean_pairwise=sum(pairwise) / n)


def swap_consistency(forward: Sequence[str | None], backward: Sequence[str | None]) -> Consistency:
    """Position consistency of a pairwise judge that saw each pair in both orders.

    Verdicts name the winning run, not the position: `a`, `b` or `tie` (None = an error, the
    pair left out). `forward[i]` is the verdict with run a's answer shown first, `backward[i]`
    with run b's shown first. `share` is the share of pairs with the same verdict both ways;
    `first_position_rate` the share of decisive verdicts that went to the answer shown first
    (0.5 for a judge without position bias).
    """
    if len(forward) != len(backward):
        raise InputError(f"{len(forward)} verdicts in one order but {len(backward)} in the other")
    same = excluded = first = decisive = 0
    for f, b in zip(forward, backward):
        if f is None or b is None:
            excluded += 1
            continue
        if f not in PAIRWISE_VERDICTS or b not in PAIRWISE_VERDICTS:
            raise InputError(f"pairwise verdicts are a, b or tie, got {f!r} and {b!r}")
        same += f == b
        first += (f == "a") + (b == "b")
        decisive += (f != "tie") + (b != "tie")
    n = len(forward) - excluded
    if n == 0:
        return Consistency(None, 0, excluded)
    return Consistency(same / n, n, excluded, first_position_rate=first / decisive if decisive else None)


def rank_auc(human: Sequence[int], scores: Sequence[float]) -> float | None:
    """The area under the ROC curve of `scores` against the human verdicts (1 yes, 0 no): the
    chance that a random human-yes trial scores above a random human-no one, ties counting a half
    (the Mann-Whitney U over n_yes * n_no). None when either class is missing."""
    _check_binary(human, "human")
    if len(human) != len(scores):
        raise InputError(f"{len(human)} human verdicts but {len(scores)} judge scores")
    yes = sorted(s for h, s in zip(human, scores) if h == 1)
    no = sorted(s for h, s in zip(human, scores) if h == 0)
    if not yes or not no:
        return None
    wins = 0.0
    below = ties = 0  # no-scores below / equal to the current yes-score, advanced monotonically
    for score in yes:
        while below < len(no) and no[below] < score:
            below += 1
        ties = below
        while ties < len(no) and no[ties] == score:
            ties += 1
        wins += below + (ties - below) / 2
    return wins / (len(yes) * len(no))
