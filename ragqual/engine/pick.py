"""The picker's plan: what `ragqual pick` lets you choose, as plain data, and the pure rules over it.

The Textual app (`ragqual.cli.pick_tui`) only edits a `PickPlan`; everything it shows (the cases a
filter keeps, the number of variants and trials, the equivalent CLI command) is computed here from
the plan, the subject's cases and its declared axes (`engine.axes`), so the picker holds no
subject-specific code and these rules are tested without a terminal.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragqual.engine import axes as axes_mod
from ragqual.engine.axes import Axis
from ragqual.engine.cases import Case


@dataclass(frozen=True)
class CaseFilter:
    """What narrows the case list: a tag, a split, part of an id or slug, words of the input."""

    tag: str = ""
    split: str = ""
    case_id: str = ""
    text: str = ""


@dataclass(frozen=True)
class PickPlan:
    subject: str
    cases: tuple[str, ...]  # the ticked case slugs, in the subject's order
    axes: Mapping[str, tuple[Any, ...]]  # the chosen values of every declared axis
    modes: tuple[str, ...]
    trial_count: int = 1
    case_filter: CaseFilter = field(default_factory=CaseFilter)


def case_split(case: Case) -> str | None:
    """A case's split, when its meta or its input (a golden) names one."""
    for holder in (case.meta, case.input):
        if isinstance(holder, Mapping) and isinstance(holder.get("split"), str):
            return str(holder["split"])
    return None


def matches(case: Case, f: CaseFilter) -> bool:
    if f.tag and f.tag not in case.tags:
        return False
    if f.split and case_split(case) != f.split:
        return False
    if f.case_id and f.case_id.lower() not in f"{case.id} {case.slug}".lower():
        return False
    return not f.text or all(w in str(case.input).lower() for w in f.text.lower().split())


def filter_cases(cases: Sequence[Case], f: CaseFilter) -> list[Case]:
    return [c for c in cases if matches(c, f)]


def initial_plan(subject: str, axes: Sequence[Axis], modes: Sequence[str], cases: Sequence[Case]) -> PickPlan:
    """Every case ticked, every axis at its default, the subject's first mode, one trial."""
    return PickPlan(subject, tuple(c.slug for c in cases), {a.name: (a.default,) for a in axes}, tuple(modes[:1]))


def tick(plan: PickPlan, slugs: Sequence[str], on: bool, order: Sequence[Case]) -> PickPlan:
    chosen = set(plan.cases) | set(slugs) if on else set(plan.cases) - set(slugs)
    return replace(plan, cases=tuple(c.slug for c in order if c.slug in chosen))


def set_axis(plan: PickPlan, axes: Sequence[Axis], text: str, name: str) -> PickPlan:
    """The plan with axis `name` set from typed text (`0,0.7`); InputError names what is allowed."""
    values = axes_mod.parse_axes([f"{name}={text}"], axes, plan.subject)[name]
    return replace(plan, axes={**plan.axes, name: tuple(values)})


def changed_axes(plan: PickPlan, axes: Sequence[Axis]) -> dict[str, list[Any]]:
    """The axes chosen other than as their single default: what the CLI command must say."""
    return {a.name: list(plan.axes[a.name]) for a in axes
            if a.name in plan.axes and list(plan.axes[a.name]) != [a.default]}


def command_axes(plan: PickPlan, axes: Sequence[Axis]) -> dict[str, list[Any]]:
    """The axes the command names: those changed, else the first axis at its default, so that a
    picked run is always built from the axes (its variants store every axis value)."""
    changed = changed_axes(plan, axes)
    if changed or not axes:
        return changed
    return {axes[0].name: list(plan.axes.get(axes[0].name, (axes[0].default,)))}


def axis_arguments(plan: PickPlan, axes: Sequence[Axis]) -> tuple[str, ...]:
    """The `--axis` values (`NAME=V1,V2`) of the command."""
    return tuple(f.split(" ", 1)[1] for f in axes_mod.axis_flags(command_axes(plan, axes)))


def variant_count(plan: PickPlan) -> int:
    return math.prod(len(v) for v in plan.axes.values()) if plan.axes else 1


def trial_count(plan: PickPlan) -> int:
    """Trials the run will hold: cases x variants x modes x repeats."""
    return len(plan.cases) * variant_count(plan) * len(plan.modes) * plan.trial_count


def cli_args(plan: PickPlan, axes: Sequence[Axis], all_cases: Sequence[Case], subject_modes: Sequence[str]) -> list[str]:
    """The `ragqual run` arguments that run the same plan (`--case-slugs` only when not all are ticked)."""
    args = ["run", "--subject", plan.subject]
    if set(plan.cases) != {c.slug for c in all_cases}:
        args += ["--case-slugs", ",".join(plan.cases)]
    for value in axis_arguments(plan, axes):
        args += ["--axis", value]
    if list(plan.modes) != list(subject_modes):
        for mode in plan.modes:
            args += ["--mode", mode]
    return [*args, "--trial-count", str(plan.trial_count)]


def cli_command(plan: PickPlan, axes: Sequence[Axis], all_cases: Sequence[Case], subject_modes: Sequence[str]) -> str:
    return "ragqual " + shlex.join(cli_args(plan, axes, all_cases, subject_modes))
