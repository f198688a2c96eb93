"""Human labels: the criteria and verdicts, and the review queue's state, with no I/O.

`ragqual label RUN` walks a queue of trials; for each, a person gives one verdict per criterion
(one key each) and may add a note. This module holds everything the queue decides — which trials
it walks and in what order (a seeded uniform random sample, failing trials only, trials the
labeller already finished left out so a second session resumes), what each key means, and which
label rows a key press asks to append — so the Textual app is only a view of a `LabelSession`,
and tests drive the session without a terminal.

A key press appends a row at once (a crash loses nothing); pressing another verdict for the same
criterion appends a newer row (a correction); pressing the verdict the trial already has appends
nothing.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ragqual.errors import InputError

CRITERIA: tuple[str, ...] = ("faithfulness", "completeness", "relevance")
VERDICTS: tuple[str, ...] = ("yes", "no", "unsure")

# One key per (criterion, verdict): a row of three keys per criterion on the number row.
VERDICT_KEYS: dict[str, tuple[str, str]] = {
    str(n * 3 + v + 1): (criterion, verdict)
    for n, criterion in enumerate(CRITERIA) for v, verdict in enumerate(VERDICTS)
}
NEXT_KEYS = ("right", "enter", "space")
BACK_KEYS = ("left", "b")
SKIP_KEYS = ("s",)


def check_criterion(value: str) -> str:
    """The criterion, or InputError naming the ones there are."""
    if value not in CRITERIA:
        raise InputError(f"unknown criterion {value!r}: use one of {', '.join(CRITERIA)}")
    return value


def check_verdict(value: str) -> str:
    """The verdict, or InputError naming the ones there are."""
    if value not in VERDICTS:
        raise InputError(f"unknown verdict {value!r}: use one of {', '.join(VERDICTS)}")
    return value


def key_help() -> str:
    """One line per criterion naming its keys, then the other keys."""
    lines = []
    for criterion in CRITERIA:
        keys = [f"{k} {v}" for k, (c, v) in VERDICT_KEYS.items() if c == criterion]
        lines.append(f"{criterion}: " + "  ".join(keys))
    lines.append("n note  s skip  b/← back  →/enter next  ↑↓/PgUp/PgDn scroll  q quit")
    return "\n".join(lines)


def sample_trials(trial_ids: Iterable[int], size: int, seed: int) -> list[int]:
    """A uniform random sample of `size` trials (all of them when there are fewer), drawn with
    `random.Random(seed)` from the ids in ascending order: the same ids and seed give the same
    sample, in the same order. Every prefix of it is itself a uniform random sample, so a person
    who stops early still holds one."""
    if size < 1:
        raise InputError(f"--sample must be at least 1, not {size}")
    ids = sorted(set(trial_ids))
    return random.Random(seed).sample(ids, min(size, len(ids)))


def plan_queue(trial_ids: Sequence[int], *, failing: Collection[int] | None = None, sample_size: int | None = None,
               seed: int = 0, done: Collection[int] = ()) -> list[int]:
    """The trials to walk: failing ones only when `failing` is given, a sample of them when
    `sample_size` is, in id order otherwise; trials in `done` (fully labelled by this labeller)
    left out. The sample is drawn before `done` is removed, so a resumed session continues the
    same sample."""
    ids = sorted(set(trial_ids) if failing is None else set(trial_ids) & set(failing))
    if sample_size is not None:
        ids = sample_trials(ids, sample_size, seed)
    skip = set(done)
    return [t for t in ids if t not in skip]


def fully_labelled(current: Mapping[int, Mapping[str, str]]) -> set[int]:
    """Trials that hold a verdict on every criterion."""
    return {t for t, verdicts in current.items() if all(c in verdicts for c in CRITERIA)}


@dataclass(frozen=True)
class LabelDraft:
    """A label row a key press asks for; the app adds run, labeller, time, source and sample."""

    trial_id: int
    criterion: str
    verdict: str
    note: str | None = None


@dataclass
class LabelSession:
    """The queue's state: where the labeller is and what each trial holds so far.

    `verdicts` starts from the labeller's current labels (so a revisited trial shows them) and
    `notes` from their newest notes."""

    order: list[int]
    verdicts: dict[int, dict[str, str]] = field(default_factory=dict)
    notes: dict[int, str] = field(default_factory=dict)
    position: int = 0
    labelled: int = 0  # rows asked for in this session

    @property
    def current(self) -> int | None:
        """The trial on screen, None once the queue is walked."""
        return self.order[self.position] if self.position < len(self.order) else None

    @property
    def finished(self) -> bool:
        return self.current is None

    def given(self, trial_id: int) -> dict[str, str]:
        return dict(self.verdicts.get(trial_id, {}))

    def press(self, key: str) -> list[LabelDraft]:
        """Apply one key; the label rows to append (none for a move or an unknown key)."""
        if key in VERDICT_KEYS:
            return self.choose(*VERDICT_KEYS[key])
        if key in NEXT_KEYS or key in SKIP_KEYS:
            self.advance()
        elif key in BACK_KEYS:
            self.back()
        return []

    def choose(self, criterion: str, verdict: str) -> list[LabelDraft]:
        """A verdict on the current trial; moves on when it completes the trial's criteria."""
        trial = self.current
        if trial is None:
            return []
        given = self.verdicts.setdefault(trial, {})
        if given.get(check_criterion(criterion)) == check_verdict(verdict):
            return []
        was_complete = all(c in given for c in CRITERIA)
        given[criterion] = verdict
        self.labelled += 1
        draft = LabelDraft(trial, criterion, verdict, self.notes.get(trial))
        if not was_complete and all(c in given for c in CRITERIA):
            self.advance()
        return [draft]

    def note(self, text: str) -> list[LabelDraft]:
        """A note on the current trial: kept for its later verdicts, and appended now as a newer
        row of each verdict it already has (a note is part of a label row)."""
        trial = self.current
        text = text.strip()
        if trial is None or not text or self.notes.get(trial) == text:
            return []
        self.notes[trial] = text
        given = self.verdicts.get(trial, {})
        drafts = [LabelDraft(trial, c, given[c], text) for c in CRITERIA if c in given]
        self.labelled += len(drafts)
        return drafts

    def advance(self) -> None:
        if self.position < len(self.order):
            self.position += 1

    def back(self) -> None:
        if self.position > 0:
            self.position -= 1
