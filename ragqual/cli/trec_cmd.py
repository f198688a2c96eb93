"""`ragqual trec-eval`: ragqual's metric code over TREC-format files, printed like trec_eval."""

from __future__ import annotations

from pathlib import Path

import click

from ragqual.core import metrics, trec
from ragqual.errors import InputError

DEFAULT_MEASURES = ("num_q", "map", "P.5,10", "recip_rank", "ndcg", "ndcg_cut.5,10", "recall.5,10", "Rprec", "bpref")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from exc


@click.command("trec-eval")
@click.argument("qrels", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("run", type=click.Path(path_type=Path, dir_okay=False))
@click.option("-m", "measures", multiple=True, help="Measure, trec_eval syntax (map, P.5,10, ndcg_cut.10 ...). Repeatable.")
@click.option("-q", "per_query", is_flag=True, help="Print each query's values before the summary.")
@click.option("-c", "complete", is_flag=True, help="Average over every query in the qrels (missing ones score 0).")
@click.option("-M", "max_docs", type=int, default=None, help="Only the top N documents of each ranking count.")
@click.option("-l", "level", type=int, default=1, show_default=True, help="Relevance level: a label >= N is relevant.")
def trec_eval_cmd(qrels: Path, run: Path, measures: tuple[str, ...], per_query: bool, complete: bool,
                  max_docs: int | None, level: int) -> None:
    """Evaluate a TREC run file against a qrels file with ragqual's metrics (trec_eval semantics)."""
    run_text = _read(run)
    judged = trec.parse_qrels(_read(qrels), str(qrels))
    ranked = trec.parse_run(run_text, str(run))
    names = trec.expand_measures(list(measures) or list(DEFAULT_MEASURES))
    results = metrics.evaluate(judged, ranked, names, relevance_level=level, max_docs=max_docs, complete=complete)
    means = metrics.mean_scores(results)
    click.echo(trec.format_trec_eval(results, means, names, per_query, run_id=trec.parse_run_tag(run_text)), nl=False)
