"""`ragqual generation`: the RAG subject in oracle / e2e / no-retrieval modes, on the engine's trial loop."""

from __future__ import annotations

from typing import Any

import click

from ragqual.app.collector import freeze_at_exit
from ragqual.app.context import AppContext
from ragqual.app.resume import given_label_flags
from ragqual.app.generation_run import (
    DEFAULTS,
    GenerationOptions,
    GenerationOutcome,
    decomposition,
    extra_calls,
    generation_tier,
    parse_modes,
    pick_goldens,
    resume_generation,
    variants_for,
)
from ragqual.cli.context import resumable
from ragqual.cli.axis_options import axis_option
from ragqual.cli.corpus_options import corpus_options
from ragqual.cli.generation_tables import decomposition_text, mode_table
from ragqual.cli.label_options import GOLDEN_OR_RUN_TAG_HELP, golden_and_run_tags, name_option
from ragqual.cli.progress import progress_printer
from ragqual.cli.worker_lines import WORKER_HELP, joined_printer, worker_done
from ragqual.cli import run_modules  # noqa: F401  (what every run opens, loaded with the command)
from ragqual.core.diagnosis import CauseCount
from ragqual.pipeline.retrieval import STRATEGIES
from ragqual.subjects.rag import MODES


def generation_options(fn):
    """Options shared by `generation`, `matrix` and `eval`."""
    decorators = [
        click.option("--mode", "modes", multiple=True, type=click.Choice(MODES), help="Mode to run (repeatable) [default: e2e]."),
        click.option("--all-modes", is_flag=True, help="Run oracle, e2e and noretrieval and print the decomposition."),
        click.option("--repeats", type=click.IntRange(min=1), default=DEFAULTS.repeats, show_default=True, help="Samples per question; flips are reported unstable."),
        click.option("--max-concurrency", type=click.IntRange(min=1), default=DEFAULTS.max_concurrency, show_default=True),
        click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N goldens."),
        click.option("--tag", "tags", multiple=True, help=GOLDEN_OR_RUN_TAG_HELP),
        click.option("--case", "case_ids", multiple=True, help="Only this golden id (repeatable)."),
        click.option("--split", metavar="NAME", default=None, help="Only goldens of this split (validation, test, or a collection's qrels split)."),
        click.option("--ollama-host", default=None, metavar="URL", help="Ollama server (default OLLAMA_HOST or http://127.0.0.1:11434)."),
        click.option("--temperature", type=float, default=DEFAULTS.temperature, show_default=True),
        click.option("--seed", type=int, default=DEFAULTS.seed, show_default=True),
        click.option("--num-ctx", type=int, default=None, help="Context window passed to the model (enters the cache key)."),
        click.option("--num-predict", type=int, default=None, help="Maximum answer tokens."),
        click.option("--strategy", type=click.Choice(STRATEGIES), default=DEFAULTS.strategy, show_default=True, help="Retrieval strategy for e2e."),
        click.option("--candidate-k", type=click.IntRange(min=1), default=DEFAULTS.candidate_k, show_default=True),
        click.option("--context-k", type=click.IntRange(min=1), default=DEFAULTS.context_k, show_default=True),
        click.option("--threshold", type=float, default=None, help="Dense similarity cut-off for e2e context."),
    ]
    for decorator in reversed(decorators):
        fn = decorator(fn)
    return fn


def print_generation(app: AppContext, result: GenerationOutcome, causes: dict[str, CauseCount] | None,
                     advice: dict[str, str] | None = None) -> None:
    """The mode table, the decomposition when `causes` were measured (all three modes), the run line."""
    o = result.outcome
    if app.as_json:
        import json

        click.echo(json.dumps({"run_id": result.run_id, "status": o.status, "trials": o.trials_run,
                               "model_calls": o.model_calls, "cache_hits": o.cache_hits,
                               "rewrites": extra_calls(o.model_calls, o.cache_hits, o.trials_run),
                               "lines": [ln.__dict__ for ln in result.lines]}, indent=2))
        return
    click.echo(mode_table(result.lines))
    if causes is not None:
        click.echo("\n" + decomposition_text(result.lines, causes, advice))
    click.echo(f"\nrun {result.run_id}: {o.trials_run} trials ({o.trials_skipped} already done), "
               f"{o.model_calls} model calls, {o.cache_hits} cache hits, {o.trial_errors} trial errors; "
               "unstable questions are excluded from pass rates")
    extra = extra_calls(o.model_calls, o.cache_hits, o.trials_run)
    if extra:
        click.echo(f"{extra} of the model calls and cache hits rewrote a multi-turn conversation into one search "
                   "query before retrieval (e2e mode); the other one per trial is the answer")


def _given_flags(models, no_mock_line, modes, all_modes, repeats, limit, tags, case_ids, split,
                 temperature, seed, num_ctx, num_predict, strategy, candidate_k, context_k, threshold,
                 run_name=None, run_tags=()):
    """The flags typed on the command line, as the values a fresh run would have stored, and the
    goldens the selection flags pick (None when none was typed): what `--resume` checks. `tags`
    are the golden tags; the run's name and tags must equal the stored ones."""
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
    given.update(given_label_flags(run_name, run_tags))
    selected = None
    if typed("limit", "case_ids", "split") or tags:
        selected = lambda corpus: pick_goldens(corpus, tags, case_ids, split, limit)  # noqa: E731
    return given, selected


@click.command("generation")
@corpus_options
@click.option("--model", "models", multiple=True, metavar="URI", help="mock | ollama:<model> | llamacpp:<path|alias> | openai:<url>#<model> (repeatable) [default: mock].")
@click.option("--resume", "resume", type=int, default=None, metavar="RUN_ID",
              help="Finish an interrupted run with the plan it was started with (a conflicting flag is refused).")
@click.option("--no-mock-line", is_flag=True, help="Do not add the mock (extractive ceiling) beside a real model.")
@click.option("--worker", is_flag=True, help=WORKER_HELP)
@name_option
@axis_option
@generation_options
@click.pass_obj
def generation_cmd(app: AppContext, corpus_opts, models, resume, no_mock_line, worker, name, axes, modes, all_modes, repeats,
                   max_concurrency, limit, tags, case_ids, split, ollama_host, temperature, seed, num_ctx,
                   num_predict, strategy, candidate_k, context_k, threshold) -> None:
    """Run the generation tier: answers in oracle / e2e / noretrieval modes, scored without a judge.

    A resumed run keeps its name and tags (`--name`/`--tag key=value` typed again must equal them)."""
    freeze_at_exit()  # the process ends with the command
    progress = progress_printer(app, "generation")
    if worker:
        progress = joined_printer(app, "generation", progress)
    tags, run_tags = golden_and_run_tags(tags)
    with resumable(app, "generation"):
        if resume is not None:
            given, selection = _given_flags(models, no_mock_line, modes, all_modes, repeats, limit, tags, case_ids,
                                            split, temperature, seed, num_ctx, num_predict, strategy, candidate_k,
                                            context_k, threshold, name, run_tags)
            if axes:
                given["--axis"] = list(axes)
            result = resume_generation(app, corpus_opts, resume, given, selection, max_concurrency=max_concurrency,
                                       ollama_host=ollama_host, progress=progress, worker=worker)
        else:
            options = GenerationOptions(
                models=tuple(models), modes=tuple(parse_modes(modes, all_modes)), repeats=repeats,
                max_concurrency=max_concurrency, limit=limit, tags=tuple(tags), case_ids=tuple(case_ids), split=split,
                ollama_host=ollama_host, temperature=temperature, seed=seed, num_ctx=num_ctx, num_predict=num_predict,
                strategy=strategy, candidate_k=candidate_k, context_k=context_k, threshold=threshold,
                with_mock_line=not no_mock_line, name=name, run_tags=run_tags, axes=tuple(axes), worker=worker)
            result = generation_tier(app, corpus_opts, options, progress)
    causes, advice = (decomposition(app, result.run_id, result.corpus or corpus_opts, not app.as_json)
                      if all_modes or {ln.mode for ln in result.lines} == set(MODES) else (None, None))
    print_generation(app, result, causes, advice)
    if worker:
        worker_done(result.outcome)
