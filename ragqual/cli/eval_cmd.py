"""`ragqual eval`: the main job — ingest if needed, the retrieval tier, the generation tier in all modes, a report."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions
from ragqual.app.eval_run import EvalOptions, evaluate
from ragqual.app.history_reads import history_head
from ragqual.app.retrieval_run import RetrievalOutcome
from ragqual.app.run_report import stored_reports
from ragqual.cli.context import resumable
from ragqual.cli.corpus_options import corpus_options
from ragqual.cli.generation_tables import decomposition_text, mode_table
from ragqual.cli.label_options import GOLDEN_OR_RUN_TAG_HELP, golden_and_run_tags, name_option
from ragqual.cli.progress import elapsed_since_start, progress_printer
from ragqual.core.display import fmt_value
from ragqual.core.metric_names import EVAL_SUMMARY
from ragqual.pipeline.report import quality_markdown

EVAL_DEFAULTS = EvalOptions()


def write_eval_page(app: AppContext, retrieval_run: int, generation_run: int, verdict: str, out_dir: Path,
                    corpus_opts: CorpusOptions | None = None) -> Path:
    """eval-runN.html beside the markdown: both tiers' runs as one self-contained page."""
    from ragqual.app.whatif_run import page_whatif
    from ragqual.reports.page import write_page
    from ragqual.reports.run import eval_page

    engine, reports = stored_reports(app, [retrieval_run, generation_run])
    tiers = [(label, info, report.header, report.sections)
             for label, (info, report) in zip(("retrieval tier", "generation tier"), reports)]
    path = out_dir / f"eval-run{generation_run}.html"
    write_page(eval_page(engine, tiers, verdict, page_whatif(app, generation_run, corpus_opts)), path)
    return path


def retrieval_lines(retrieval: RetrievalOutcome) -> str:
    overall = {name: q["overall"] for name, q in retrieval.report["quality"].items()}
    lines = [f"retrieval tier: run {retrieval.run_id} (document level):"]
    for name, values in overall.items():
        lines.append(f"  {name:<7} " + "  ".join(f"{m} {fmt_value(values.get(m), m)}" for m in EVAL_SUMMARY))
    return "\n".join(lines)


@click.command("eval")
@corpus_options
@click.option("--model", "models", multiple=True, metavar="URI", help="Model(s) for the generation tier [default: mock].")
@click.option("--repeats", type=click.IntRange(min=1), default=EVAL_DEFAULTS.repeats, show_default=True)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N goldens.")
@click.option("--tag", "tags", multiple=True, help=GOLDEN_OR_RUN_TAG_HELP)
@name_option
@click.option("--max-concurrency", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--ollama-host", default=None, metavar="URL")
@click.option("--failures-only", is_flag=True,
              help="Print only the failing trials with their measured cause (the report files stay whole).")
@click.pass_obj
def eval_cmd(app: AppContext, corpus_opts: CorpusOptions, models, repeats, limit, tags, name, max_concurrency,
             ollama_host, failures_only: bool = False) -> None:
    """The whole evaluation in one command, on embedded defaults (no server, no network)."""
    golden_tags, run_tags = golden_and_run_tags(tags)
    options = EvalOptions(models=tuple(models), repeats=repeats, limit=limit, tags=golden_tags,
                          max_concurrency=max_concurrency, ollama_host=ollama_host, name=name, run_tags=run_tags)

    def show_retrieval(retrieval: RetrievalOutcome) -> None:
        if not app.as_json and not failures_only:  # at once: the generation tier takes much longer
            click.echo(retrieval_lines(retrieval) + "\n")

    with resumable(app, "generation"):
        outcome = evaluate(app, corpus_opts, options, on_retrieval=show_retrieval,
                           progress=progress_printer(app, "generation"))
    retrieval, generation = outcome.retrieval, outcome.generation
    decomposition = decomposition_text(generation.lines, outcome.causes, outcome.advice)
    report = "\n".join([
        "# ragqual evaluation", "",
        f"retrieval run {retrieval.run_id}, generation run {generation.run_id}, corpus fingerprint {outcome.corpus_fingerprint[:12]}",
        *(f"{key}: {value}" for key, value in history_head(app.history()).items()),
        "", quality_markdown(retrieval.report["quality"]).strip(), "", "## Generation", "", mode_table(generation.lines),
        "", decomposition, "",
    ])
    out_dir = app.settings.results_dir / "reports"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"eval-run{generation.run_id}.md"
    path.write_text(report, encoding="utf-8")
    html_path = write_eval_page(app, retrieval.run_id, generation.run_id, decomposition, out_dir, corpus_opts)
    elapsed = elapsed_since_start()  # from the process's start, start-up and imports included
    if app.as_json:
        click.echo(json.dumps({"retrieval_run": retrieval.run_id, "generation_run": generation.run_id,
                               "report": str(path), "html": str(html_path), "seconds": round(elapsed, 1)}))
        return
    if failures_only:
        from ragqual.app.history_reads import run_info
        from ragqual.cli.ci_format import failures_document
        from ragqual.cli.output import emit_document

        title, header, sections = failures_document(app.history(), run_info(app, generation.run_id))
        emit_document(title, {k: header[k] for k in ("run_id", "failing_trials", "causes")}, sections, "table")
    else:
        click.echo("generation:\n" + mode_table(generation.lines) + "\n\n" + decomposition)
    click.echo(f"\nreport: {path}  (page: {html_path})  ({elapsed:.1f} s; `ragqual report --last` and `ragqual history` read it back)")
