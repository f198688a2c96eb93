"""The generation tier as a run: the RAG subject on the engine's trial loop, appended to the
history, and the per-model, per-mode lines a report prints (no printing here)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragqual.adapters.model_registry import make_model, split_uri
from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusContext, CorpusOptions, load_corpus_context
from ragqual.app.failures import run_gap_causes, run_gap_causes_and_trials
from ragqual.app.gates import require_finished
from ragqual.app.rag_subject import rag_subject
from ragqual.app.resume import generation_resume_plan
from ragqual.app.collector import settled_objects_frozen
from ragqual.app.whatif_run import measured_advice
from ragqual.core.diagnosis import CauseCount
from ragqual.core.goldens import Golden, select
from ragqual.core.runlabel import RunLabel, run_label
from ragqual.app.pricing import prices_in_force
from ragqual.engine import axes as axes_mod
from ragqual.engine import loop
from ragqual.engine.services import ensure_available, services_for
from ragqual.engine.subject import Variant
from ragqual.errors import InputError
from ragqual.pipeline.retrieval import RetrievalConfig
from ragqual.store.claims import require_shared
from ragqual.store.generation_reads import ModeLine, mode_lines
from ragqual.subjects.rag import MODES, RagSubject

MOCK = "mock"
Progress = Callable[[loop.Progress], None]


@dataclass(frozen=True)
class GenerationOptions:
    """What `ragqual generation` and `Project.generation()` accept, with the CLI's defaults."""

    models: tuple[str, ...] = ()
    modes: tuple[str, ...] = ("e2e",)
    repeats: int = 3
    max_concurrency: int = 1
    limit: int | None = None
    tags: tuple[str, ...] = ()
    case_ids: tuple[str, ...] = ()
    split: str | None = None
    ollama_host: str | None = None
    temperature: float = 0.0
    seed: int = 42
    num_ctx: int | None = None
    num_predict: int | None = None
    strategy: str = "hybrid"
    candidate_k: int = 20
    context_k: int = 5
    threshold: float | None = None
    with_mock_line: bool = True
    name: str | None = None  # the run's name and tags (`--name`, `--tag key=value`)
    run_tags: tuple[str, ...] = ()
    axes: tuple[str, ...] = ()  # `--axis NAME=V1,V2` over the RAG subject's declared axes
    worker: bool = False  # one of several processes sharing the run on PostgreSQL (`--worker`)

    def retrieval_config(self) -> RetrievalConfig:
        return RetrievalConfig(strategy=self.strategy, candidate_k=self.candidate_k, context_k=self.context_k,
                               threshold=self.threshold)

    def sampling(self) -> dict[str, Any]:
        return sampling_options(self.temperature, self.seed, self.num_ctx, self.num_predict)


DEFAULTS = GenerationOptions()


@dataclass
class GenerationOutcome:
    run_id: int
    lines: list[ModeLine]
    outcome: loop.RunOutcome
    corpus: CorpusContext | None = None
    """The corpus and goldens the run read (closed once the run ends; its documents, goldens and
    chunks stay readable): what the decomposition's advice reads, not read a second time."""


def variants_for(models: Sequence[str], with_mock_line: bool) -> list[Variant]:
    chosen = list(dict.fromkeys(models)) or [MOCK]
    if with_mock_line and MOCK not in chosen:
        chosen.append(MOCK)  # the extractive ceiling beside every real model
    return [Variant(name=m, model=m) for m in chosen]


def axis_variants(subject: RagSubject, models: Sequence[str], axis_flags: Sequence[str],
                  with_mock_line: bool) -> list[Variant]:
    """The cross product of `--axis` over the subject's declared axes; `--model` URIs (and the mock
    line beside real models) are the model axis's values."""
    chosen = axes_mod.parse_axes(axis_flags, subject.axes, subject.name)
    uris = [v.model for v in variants_for(models, with_mock_line)] if models or "model" not in chosen else []
    return subject.axis_variants(axes_mod.with_models(chosen, uris, subject.axes, subject.name))


def run_generation(app: AppContext, corpus: CorpusContext, goldens: Sequence[Golden], *, models: Sequence[str],
                   modes: Sequence[str], repeats: int, config: RetrievalConfig, options: dict[str, Any],
                   max_concurrency: int = 1, resume: int | None = None, ollama_host: str | None = None,
                   with_mock_line: bool = True, progress: Progress | None = None,
                   label: RunLabel = RunLabel(), axis_flags: Sequence[str] = (),
                   stored_variants: Sequence[Variant] | None = None, worker: bool = False) -> GenerationOutcome:
    """One generation run over `goldens` (resuming run `resume` when given), appended to the
    history with its `label` (name, tags) in its params; a resumed run keeps the label it has.
    With `axis_flags`, the variants are the cross product of those axes (`engine.axes`);
    `stored_variants` (a resumed run's) are used as they are. `worker`: run only the slots this
    process claims in a run shared through PostgreSQL (ragqual.store.claims)."""
    prices = prices_in_force(app.settings).prices  # a bad price list is refused before anything runs
    config = config.with_glossary(corpus.glossary)
    subject = rag_subject(corpus, goldens, config, options)
    if stored_variants is not None:
        variants = list(stored_variants)
    elif axis_flags:
        variants = axis_variants(subject, models, axis_flags, with_mock_line)
    else:
        variants = variants_for(models, with_mock_line)
    check_servers(app, [v.model for v in variants], ollama_host)  # before the ingest and before any run is recorded
    if "e2e" in modes:
        subject.retriever()  # ingest (if needed) before the progress bar starts
    services = services_for(subject, app.response_cache(), ollama_host=ollama_host)
    params = {"retrieval": config.as_dict(), "options": subject.options, "models": [v.model for v in variants],
              "modes": list(modes), "repeats": repeats, "embedder": corpus.embedder_id,
              "chunking": corpus.chunk_config.as_dict(), "cache": app.cache_mode, **label.as_params(),
              **({"axis_flags": list(axis_flags)} if axis_flags else {})}
    with settled_objects_frozen():  # the trial loop's collections skip the corpus, index and modules
        outcome = loop.run(subject, variants, subject.cases(), store=app.store(), services=services, modes=modes,
                           repeats=repeats, max_concurrency=max_concurrency, resume_run_id=resume, kind="generation",
                           argv=sys.argv, params=params, progress=progress, pricing=prices, worker=worker)
    names = [v.name for v in variants]
    lines = sorted(mode_lines(app.store().engine, outcome.run_id),
                   key=lambda ln: (names.index(ln.variant) if ln.variant in names else 99,
                                   MODES.index(ln.mode) if ln.mode in MODES else 99))
    return GenerationOutcome(outcome.run_id, lines, outcome, corpus)


def check_servers(app: AppContext, models: Sequence[str], ollama_host: str | None = None) -> None:
    """Every model's server answers and has the model, else ServiceUnavailable (exit 3) before
    anything is recorded; skipped in replay mode, which calls no model."""
    if app.cache_mode == "replay":
        return
    for uri in dict.fromkeys(models):
        if split_uri(uri)[0] == MOCK:
            continue
        model = make_model(uri, ollama_host=ollama_host)
        try:
            ensure_available(model)
        finally:
            close = getattr(model, "close", None)
            if close is not None:
                close()


def parse_modes(modes: Sequence[str], all_modes: bool) -> list[str]:
    if all_modes:
        return list(MODES)
    return list(dict.fromkeys(modes)) or ["e2e"]


def sampling_options(temperature: float, seed: int, num_ctx: int | None, num_predict: int | None) -> dict[str, Any]:
    options: dict[str, Any] = {"temperature": temperature, "seed": seed}
    if num_ctx:
        options["num_ctx"] = num_ctx
    if num_predict:
        options["num_predict"] = num_predict
    return options


def pick_goldens(corpus: CorpusContext, tags, case_ids, split, limit) -> list[Golden]:
    goldens = select(corpus.goldens, tags=tags or None, ids=case_ids or None, split=split, limit=limit)
    if not goldens:
        raise InputError("no golden question matches the filters")
    return goldens


def extra_calls(model_calls: int, cache_hits: int, trials: int) -> int:
    """Requests beyond one answer per trial: the e2e mode first asks the model to rewrite a
    multi-turn conversation into a standalone search query (each request is a call or a hit)."""
    return max(0, model_calls + cache_hits - trials)


def generation_tier(app: AppContext, corpus_opts: CorpusOptions, options: GenerationOptions,
                    progress: Progress | None = None) -> GenerationOutcome:
    """A fresh generation run with `options` over the goldens they select."""
    label = run_label(options.name, options.run_tags)
    if options.worker:
        require_shared(app.store().engine, "ragqual generation")
    check_servers(app, options.models, options.ollama_host)  # before the corpus is even read
    with load_corpus_context(app, corpus_opts) as corpus:
        corpus.require_expectations()
        goldens = pick_goldens(corpus, options.tags, options.case_ids, options.split, options.limit)
        return run_generation(app, corpus, goldens, models=options.models, modes=list(options.modes),
                              repeats=options.repeats, config=options.retrieval_config(),
                              options=options.sampling(), max_concurrency=options.max_concurrency,
                              ollama_host=options.ollama_host, with_mock_line=options.with_mock_line,
                              progress=progress, label=label, axis_flags=options.axes, worker=options.worker)


def resume_generation(app: AppContext, corpus_opts: CorpusOptions, run_id: int, given: dict[str, Any],
                      selection: Callable[[CorpusContext], list[Golden]] | None, *, max_concurrency: int = 1,
                      ollama_host: str | None = None, progress: Progress | None = None,
                      worker: bool = False) -> GenerationOutcome:
    """Finish run `run_id` with the plan it was started with; `given` (flags typed again) and the
    goldens `selection` picks must agree with that plan (app.resume says what conflicts)."""
    if worker:
        require_shared(app.store().engine, "ragqual generation")
    with load_corpus_context(app, corpus_opts) as corpus:
        corpus.require_expectations()
        selected = None if selection is None else (lambda: selection(corpus))
        plan = generation_resume_plan(app.store().get_run(run_id), given, corpus.goldens, selected, corpus.fingerprint)
        return run_generation(app, corpus, plan.goldens, models=[v.model for v in plan.variants], modes=plan.modes,
                              repeats=plan.repeats, config=plan.config, options=plan.options,
                              max_concurrency=max_concurrency, resume=run_id, ollama_host=ollama_host,
                              with_mock_line=False, progress=progress,
                              stored_variants=plan.variants if any(v.axes for v in plan.variants) else None,
                              worker=worker)


def gap_causes(app: AppContext, run_id: int) -> dict[str, CauseCount]:
    """Per model, why its e2e answers fall short of its oracle answers (measured from the trials)."""
    return run_gap_causes(app.store().engine, run_id)


def decomposition(app: AppContext, run_id: int, corpus: CorpusOptions | CorpusContext, with_advice: bool
                  ) -> tuple[dict[str, CauseCount], dict[str, str] | None]:
    """`gap_causes` and, when asked and there are causes, the measured advice
    (`whatif_run.measured_advice`): the run's trials read once for both. It runs with the objects
    that exist on entry frozen (`settled_objects_frozen`): after a run those are the corpus, the
    modules and the run's results, and a full collection during the advice's reads traversed them
    all (~0.04-0.08 s of a cached bundled rerun, measured with gc.callbacks)."""
    with settled_objects_frozen():
        causes, trials = run_gap_causes_and_trials(app.store().engine, run_id)
        return causes, (measured_advice(app, run_id, corpus, causes, trials) if with_advice and causes else None)


def stored_mode_lines(app: AppContext, run_id: int, scorer_version: int | None,
                      allow_incomplete: bool) -> tuple[list[ModeLine], str | None]:
    """The per-model, per-mode lines of a stored run, and the flag an unfinished run carries
    (refused, exit 1, unless `allow_incomplete`)."""
    store = app.store(auto_create=False)
    flag = require_finished(store.get_run(run_id), allow_incomplete)
    return mode_lines(store.engine, run_id, scorer_version), flag


def run_variant_axes(app: AppContext, run_id: int) -> dict[str, dict[str, Any]]:
    """Each variant's axis values in run `run_id`, by variant name (empty for a run without --axis)."""
    return axes_mod.run_axes(app.store(auto_create=False).get_run(run_id).params)
