"""Any registered subject as a run: its plan (fresh, or the stored plan of a run being resumed),
the trial loop, and the per-variant summary read back from the history."""

from __future__ import annotations

from dataclasses import dataclass

from ragqual.app.context import AppContext
from ragqual.app.resume import given_label_flags, refuse_conflicts, subject_resume_flags
from ragqual.core.runlabel import run_label
from ragqual.app.pricing import prices_in_force
from ragqual.engine import loop
from ragqual.engine import axes as axes_mod
from ragqual.engine.aggregate import RunSummary, summarise_run
from ragqual.engine.cases import select_by_slugs
from ragqual.engine.services import services_for
from ragqual.engine.subject import Subject, Variant
from ragqual.errors import InputError
from ragqual.store.claims import require_shared
from ragqual.subjects.registry import get_subject

DEFAULT_TRIALS = 3


@dataclass(frozen=True)
class SubjectRunOptions:
    """What `ragqual run` accepts; `resume` finishes a stored run with the plan it started with."""

    subject: str | None = None
    models: tuple[str, ...] = ()
    trial_count: int | None = None
    case_slugs: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    max_concurrency: int = 1
    resume: int | None = None
    ollama_host: str | None = None
    name: str | None = None  # the run's name and tags (`--name`, `--tag key=value`); kept on resume
    run_tags: tuple[str, ...] = ()
    axes: tuple[str, ...] = ()  # `--axis NAME=V1,V2`: the cross product of the subject's declared axes
    worker: bool = False  # one of several processes sharing the run on PostgreSQL (`--worker`)


def subject_variants(subject: Subject, models: tuple[str, ...], axis_flags: tuple[str, ...]) -> list[Variant]:
    """The variants of a fresh run: one per model, or with `--axis` the cross product of the
    values asked for (the `--model` URIs are the model axis's values)."""
    if not axis_flags:
        return subject.default_variants(list(models) or ["mock"])
    chosen = axes_mod.parse_axes(axis_flags, subject.axes, subject.name)
    return subject.axis_variants(axes_mod.with_models(chosen, models, subject.axes, subject.name))


def plan_run(app: AppContext, o: SubjectRunOptions) -> tuple[Subject, loop.RunPlan]:
    if o.resume is None:
        if not o.subject:
            raise InputError("--subject is required (or --resume RUN_ID): `ragqual run --help`")
        subject = get_subject(o.subject, app=app)
        cases = select_by_slugs(subject.cases(), list(o.case_slugs))
        variants = subject_variants(subject, o.models, o.axes)
        return subject, loop.RunPlan(variants, cases, list(o.modes or subject.modes), o.trial_count or DEFAULT_TRIALS)
    info = app.store().get_run(o.resume)
    if o.subject and o.subject != info.subject:
        raise InputError(f"run {o.resume} is a run of subject {info.subject!r}, not {o.subject!r}")
    subject = get_subject(info.subject or "", app=app)
    given = {flag: value for flag, value in (("--model", list(o.models)), ("--trial-count", o.trial_count),
                                              ("--case-slugs", list(o.case_slugs)), ("--mode", list(o.modes)),
                                              ("--axis", list(o.axes)))
             if value}
    given.update(given_label_flags(o.name, o.run_tags))
    refuse_conflicts(o.resume, subject_resume_flags(info.params), given)
    return subject, loop.plan_from_run(app.store(), o.resume, subject)


def run_subject(app: AppContext, options: SubjectRunOptions,
                progress: loop.ProgressCallback | None = None) -> tuple[loop.RunOutcome, RunSummary]:
    """Plan, run every trial into the history, and summarise the run per variant."""
    label = run_label(options.name, options.run_tags)
    if options.worker:
        require_shared(app.store().engine, "ragqual run")
    subject, plan = plan_run(app, options)
    prices = prices_in_force(app.settings).prices  # a bad price list is refused before the run starts
    store = app.store()
    outcome = loop.run(
        subject, plan.variants, plan.cases, store=store,
        services=services_for(subject, app.response_cache(), ollama_host=options.ollama_host),
        modes=plan.modes, repeats=plan.repeats, max_concurrency=options.max_concurrency,
        resume_run_id=options.resume, progress=progress, pricing=prices, worker=options.worker,
        params={**({"ollama_host": options.ollama_host} if options.ollama_host else {}), **label.as_params(),
                **({"axis_flags": list(options.axes)} if options.axes and options.resume is None else {})},
    )
    return outcome, summarise_run(store.engine, outcome.run_id)
