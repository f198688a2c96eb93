"""When a baseline is stale: the rule behind the pull-request comment's warning.

A baseline records the git sha of the commit it was measured at. Against the checkout's HEAD it is
stale when that commit is not an ancestor of HEAD (the baseline was measured on another branch, or on
history that was rewritten), or when it is further behind than `--stale-after`: `N` commits, or `Nd`
days between the baseline commit's date and HEAD's. Git itself is read by
`ragqual.adapters.git_history`; this module only decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragqual.errors import InputError

DEFAULT_STALE_AFTER = "50"


@dataclass(frozen=True)
class StaleAfter:
    commits: int | None = None
    days: float | None = None

    @property
    def text(self) -> str:
        return f"{self.commits} commits" if self.commits is not None else f"{self.days:g} days"


def parse_stale_after(value: str) -> StaleAfter:
    """`30` (commits) or `14d` (days); anything else is an InputError."""
    match = re.fullmatch(r"\s*(\d+)\s*(d?)\s*", value)
    if match is None:
        raise InputError(f"--stale-after must be a number of commits (e.g. 30) or of days (e.g. 14d), got {value!r}")
    number = int(match.group(1))
    return StaleAfter(days=float(number)) if match.group(2) else StaleAfter(commits=number)


@dataclass(frozen=True)
class Ancestry:
    """What git says about a baseline's commit relative to HEAD (`ragqual.adapters.git_history`)."""

    note: str  # "ok", "not a git checkout", "unknown commit", "no git sha recorded", ...
    head: str | None = None
    is_ancestor: bool = False
    commits_behind: int | None = None  # commits in HEAD not in the baseline's commit
    days_behind: float | None = None  # HEAD's commit date minus the baseline commit's


def staleness_warning(sha: str | None, ancestry: Ancestry, limit: StaleAfter) -> str | None:
    """The warning to print about a baseline measured at `sha`, or None when it is current."""
    short = (sha or "")[:12]
    if ancestry.note != "ok":
        return f"cannot tell whether the baseline is stale: {ancestry.note}" + (f" (baseline {short})" if sha else "")
    if not ancestry.is_ancestor:
        return (f"the baseline's commit {short} is not an ancestor of HEAD {(ancestry.head or '')[:12]}: it was "
                "measured on another branch or on rewritten history; re-baseline from this branch's base")
    behind = ancestry.commits_behind or 0
    if limit.commits is not None and behind > limit.commits:
        return (f"the baseline's commit {short} is {behind} commits behind HEAD (more than {limit.text}): "
                "re-baseline (`ragqual baseline promote`)")
    days = ancestry.days_behind or 0.0
    if limit.days is not None and days > limit.days:
        return (f"the baseline's commit {short} is {days:.1f} days behind HEAD (more than {limit.text}): "
                "re-baseline (`ragqual baseline promote`)")
    return None
