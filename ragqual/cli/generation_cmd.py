"""`ragqual generation`: the RAG subject in oracle / e2e / no-retrieval modes, on the engine's trial loop."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import click

from ragqual.app.failures import run_gap_causes
from ragqual.app.resume import generation_resume_plan
from ragqual.cli.context import AppContext, resumable
from ragqual.cli.corpus_options import CorpusContext, corpus_options, load_corpus_context
from ragqual.core.diagnosis import CauseCount
from ragqual.core.display import fmt_rate
from ragqual.core.goldens import Golden, goldens_hash, select
from ragqual.engine import loop
from ragqual.engine.services import services_for
from ragqual.engine.subject import Variant
from ragqual.errors import InputError
from ragqual.pipeline.decomposition import against_mock, explain
from ragqual.pipeline.retrieval import STRATEGIES, RetrievalConfig
from ragqual.store.generation_reads import ModeLine, mode_lines
from ragqual.subjects.rag import MODES, RagSubject

MOCK = "mock"


@dataclass
class GenerationOutcome:
    run_id: int
    lines: list[ModeLine]
    outcome: loop.RunOutcome


def variants_for(models: Sequence[str], with_mock_line: bool) -> list[Variant]:
    chosen = list(dict.fromkeys(models)) or [MOCK]
    if with_mock_line and MOCK not in chosen:
        chosen.append(MOCK)  # the extractive ceiling beside every real model
    return [Variant(name=m, model=m) for m in chosen]


def rag_subject(corpus: CorpusContext, goldens: Sequence[Golden], config: RetrievalConfig,
                options: dict[str, Any]) -> RagSubject:
    from ragqual.cli.retrieval_cmd import build_retriever

    return RagSubject(goldens, corpus.documents, retriever=lambda: build_retriever(corpus), retrieval_config=config,
                      options=options, provenance={"corpus_fingerprint": corpus.fingerprint,
                                                   "dataset_hash": goldens_hash(goldens)})


def progress_printer(app: AppContext, label: str):
    """A tqdm bar on stderr (silent in --json mode)."""
    from tqdm import tqdm

    state: dict[str, Any] = {}

    interactive = sys.stderr.isatty()

    def update(p: loop.Progress) -> None:
        if app.as_json:
            return
        if not interactive:  # a log, not a bar: one line per tenth of the run
            step = max(1, p.total // 10)
            if p.total and (p.done % step == 0 or p.done == p.total):
                click.echo(f"{label}: {p.done}/{p.total} trials", err=True)
            return
        if p.done == 0:
            state["bar"] = tqdm(total=p.total, desc=label, unit="trial", file=sys.stderr, leave=False)
            return
        state["bar"].update(1)
        if p.done == p.total:
            state["bar"].close()

    return update


def run_generation(app: AppContext, corpus: CorpusContext, goldens: Sequence[Golden], *, models: Sequence[str],
                   modes: Sequence[str], repeats: int, config: RetrievalConfig, options: dict[str, Any],
                   max_concurrency: int = 1, resume: int | None = None, ollama_host: str | None = None,
                   with_mock_line: bool = True) -> GenerationOutcome:
    subject = rag_subject(corpus, goldens, config, options)
    if "e2e" in modes:
        subject.retriever()  # ingest (if needed) before the progress bar starts
    variants = variants_for(models, with_mock_line)
    services = services_for(subject, app.response_cache(), ollama_host=ollama_host)
    params = {"retrieval": config.as_dict(), "options": subject.options, "models": [v.model for v in variants],
              "modes": list(modes), "repeats": repeats, "embedder": corpus.embedder_id,
              "chunking": corpus.chunk_config.as_dict(), "cache": app.cache_mode}
    outcome = loop.run(subject, variants, subject.cases(), store=app.store(), services=services, modes=modes,
                       repeats=repeats, max_concurrency=max_concurrency, resume_run_id=resume, kind="generation",
                       argv=sys.argv, params=params, progress=progress_printer(app, "generation"))
    lines = sorted(mode_lines(app.store().engine, outcome.run_id),
                   key=lambda ln: ([v.name for v in variants].index(ln.variant) if ln.variant in [v.name for v in variants] else 99,
                                   MODES.index(ln.mode) if ln.mode in MODES else 99))
    return GenerationOutcome(outcome.run_id, lines, outcome)


def fmt3(value: float | None) -> str:
    """A share with three decimals, or a dash when there is none (`ragqual.core.display`)."""
    return fmt_rate(value)


def mode_table(lines: Sequence[ModeLine]) -> str:
    rows = ["| model | mode | correctness | refusal | pass | unstable | questions | failed trials |",
            "|---|---|---|---|---|---|---|---|"]
    rows += [f"| {ln.variant} | {ln.mode} | {fmt3(ln.correctness)} | {fmt3(ln.refusal)} | {fmt3(ln.pass_rate)} | "
             f"{ln.unstable} | {ln.questions} | {ln.errors} |" for ln in lines]
    return "\n".join(rows)


def decomposition_text(lines: Sequence[ModeLine], causes: dict[str, CauseCount] | None = None) -> str:
    by: dict[str, dict[str, float | None]] = {}
    for ln in lines:
        by.setdefault(ln.variant, {})[ln.mode] = ln.correctness
    out = []
    for variant, modes in by.items():
        out.append(f"{variant}:")
        measured = (causes or {}).get(variant)
        out += [f"  - {s}" for s in explain(modes.get("oracle"), modes.get("e2e"), modes.get("noretrieval"), measured)]
        if variant != MOCK and MOCK in by:
            for mode in ("oracle", "e2e"):  # without retrieval the mock only declines: nothing to compare
                sentence = against_mock(modes.get(mode), by[MOCK].get(mode))
                if sentence:
                    out.append(f"  - {mode}: {sentence}")
    return "\n".join(out)


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


def generation_options(fn):
    """Options shared by `generation`, `matrix` and `eval`."""
    decorators = [
        click.option("--mode", "modes", multiple=True, type=click.Choice(MODES), help="Mode to run (repeatable) [default: e2e]."),
        click.option("--all-modes", is_flag=True, help="Run oracle, e2e and noretrieval and print the decomposition."),
        click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True, help="Samples per question; flips are reported unstable."),
        click.option("--max-concurrency", type=click.IntRange(min=1), default=1, show_default=True),
        click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N goldens."),
        click.option("--tag", "tags", multiple=True, help="Only goldens with this tag (repeatable)."),
        click.option("--case", "case_ids", multiple=True, help="Only this golden id (repeatable)."),
        click.option("--split", type=click.Choice(["validation", "test"]), default=None),
        click.option("--ollama-host", default=None, metavar="URL", help="Ollama server (default OLLAMA_HOST or http://127.0.0.1:11434)."),
        click.option("--temperature", type=float, default=0.0, show_default=True),
        click.option("--seed", type=int, default=42, show_default=True),
        click.option("--num-ctx", type=int, default=None, help="Context window passed to the model (enters the cache key)."),
        click.option("--num-predict", type=int, default=None, help="Maximum answer tokens."),
        click.option("--strategy", type=click.Choice(STRATEGIES), default="hybrid", show_default=True, help="Retrieval strategy for e2e."),
        click.option("--candidate-k", type=click.IntRange(min=1), default=20, show_default=True),
        click.option("--context-k", type=click.IntRange(min=1), default=5, show_default=True),
        click.option("--threshold", type=float, default=None, help="Dense similarity cut-off for e2e context."),
    ]
    for decorator in reversed(decorators):
        fn = decorator(fn)
    return fn


def pick_goldens(corpus: CorpusContext, tags, case_ids, split, limit) -> list[Golden]:
    goldens = select(corpus.goldens, tags=tags or None, ids=case_ids or None, split=split, limit=limit)
    if not goldens:
        raise InputError("no golden question matches the filters")
    return goldens


def print_generation(app: AppContext, result: GenerationOutcome, all_modes: bool) -> None:
    o = result.outcome
    if app.as_json:
        import json

        click.echo(json.dumps({"run_id": result.run_id, "status": o.status, "trials": o.trials_run,
                               "model_calls": o.model_calls, "cache_hits": o.cache_hits,
                               "rewrites": extra_calls(o.model_calls, o.cache_hits, o.trials_run),
                               "lines": [ln.__dict__ for ln in result.lines]}, indent=2))
        return
    click.echo(mode_table(result.lines))
    if all_modes:
        causes = run_gap_causes(app.store().engine, result.run_id)
        click.echo("\n" + decomposition_text(result.lines, causes))
    click.echo(f"\nrun {result.run_id}: {o.trials_run} trials ({o.trials_skipped} already done), "
               f"{o.model_calls} model calls, {o.cache_hits} cache hits, {o.trial_errors} trial errors; "
               "unstable questions are excluded from pass rates")
    extra = extra_calls(o.model_calls, o.cache_hits, o.trials_run)
    if extra:
        click.echo(f"{extra} of the model calls and cache hits rewrote a multi-turn conversation into one search "
                   "query before retrieval (e2e mode); the other one per trial is the answer")


def extra_calls(model_calls: int, cache_hits: int, trials: int) -> int:
    """Requests beyond one answer per trial: the e2e mode first asks the model to rewrite a
    multi-turn conversation into a standalone search query (each request is a call or a hit)."""
    return max(0, model_calls + cache_hits - trials)


def _given_flags(corpus: CorpusContext, models, no_mock_line, modes, all_modes, repeats, limit, tags, case_ids, split,
                 temperature, seed, num_ctx, num_predict, strategy, candidate_k, context_k, threshold):
    """The flags typed on the command line, as the values a fresh run would have stored, and the
    goldens the selection flags pick (None when none was typed): what `--resume` checks."""
    from click.core import ParameterSource

    ctx = click.get_current_context()

    def typed(*names: str) -> bool:
        return any(ctx.get_parameter_source(n) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
                   for n in names)

    given: dict[str, Any] = {}
    if typed("models", "no_mock_line"):
        given["--model"] = [v.model for v in variants_for(models, not no_mock_line)]
    if typed("modes", "all_modes"):
        given["--mode"] = parse_modes(modes, all_modes)
    for name, flag, value in (("repeats", "--repeats", repeats), ("strategy", "--strategy", strategy),
                              ("candidate_k", "--candidate-k", candidate_k), ("context_k", "--context-k", context_k),
                              ("threshold", "--threshold", threshold), ("temperature", "--temperature", temperature),
                              ("seed", "--seed", seed), ("num_ctx", "--num-ctx", num_ctx),
                              ("num_predict", "--num-predict", num_predict)):
        if typed(name):
            given[flag] = value
    selected = None
    if typed("limit", "tags", "case_ids", "split"):
        selected = lambda: pick_goldens(corpus, tags, case_ids, split, limit)  # noqa: E731
    return given, selected


@click.command("generation")
@corpus_options
@click.option("--model", "models", multiple=True, metavar="URI", help="mock | ollama:<model> | llamacpp:<path|alias> | openai:<url>#<model> (repeatable) [default: mock].")
@click.option("--resume", "resume", type=int, default=None, metavar="RUN_ID",
              help="Finish an interrupted run with the plan it was started with (a conflicting flag is refused).")
@click.option("--no-mock-line", is_flag=True, help="Do not add the mock (extractive ceiling) beside a real model.")
@generation_options
@click.pass_obj
def generation_cmd(app: AppContext, corpus_opts, models, resume, no_mock_line, modes, all_modes, repeats,
                   max_concurrency, limit, tags, case_ids, split, ollama_host, temperature, seed, num_ctx,
                   num_predict, strategy, candidate_k, context_k, threshold) -> None:
    """Run the generation tier: answers in oracle / e2e / noretrieval modes, scored without a judge."""
    with load_corpus_context(app, corpus_opts) as corpus, resumable(app, "generation"):
        corpus.require_expectations()
        if resume is not None:
            given, selected = _given_flags(corpus, models, no_mock_line, modes, all_modes, repeats, limit, tags,
                                           case_ids, split, temperature, seed, num_ctx, num_predict, strategy,
                                           candidate_k, context_k, threshold)
            plan = generation_resume_plan(app.store().get_run(resume), given, corpus.goldens, selected,
                                          corpus.fingerprint)
            result = run_generation(app, corpus, plan.goldens, models=[v.model for v in plan.variants],
                                    modes=plan.modes, repeats=plan.repeats, config=plan.config, options=plan.options,
                                    max_concurrency=max_concurrency, resume=resume, ollama_host=ollama_host,
                                    with_mock_line=False)
        else:
            config = RetrievalConfig(strategy=strategy, candidate_k=candidate_k, context_k=context_k,
                                     threshold=threshold)
            result = run_generation(app, corpus, pick_goldens(corpus, tags, case_ids, split, limit), models=models,
                                    modes=parse_modes(modes, all_modes), repeats=repeats, config=config,
                                    options=sampling_options(temperature, seed, num_ctx, num_predict),
                                    max_concurrency=max_concurrency, ollama_host=ollama_host,
                                    with_mock_line=not no_mock_line)
        print_generation(app, result, all_modes or {ln.mode for ln in result.lines} == set(MODES))
