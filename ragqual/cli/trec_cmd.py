"""`ragqual trec-eval`: ragqual's metric code over TREC-format files, printed like trec_eval.

It follows trec_eval 10.0, refusals and exit codes included: a judged topic missing from the
run without -c (exit 4; `--missing skip` for 9.x), a document retrieved or judged twice in a
topic it scores (exit 4), no topic scored at all (exit 7). Like trec_eval, which scores the
qrels topics one by one, -q prints the lines of the topics scored before the one refused; the
summary is never printed after a refusal.
"""

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
@click.option("-m", "measures", multiple=True,
              help="Measure, trec_eval syntax (map, P.5,10, ndcg_cut.10 ...), or a group: all_trec, official, "
                   "set (the measures of it ragqual implements). Repeatable.")
@click.option("-q", "per_query", is_flag=True, help="Print each query's values before the summary.")
@click.option("-c", "complete", is_flag=True, help="Average over every query in the qrels (missing ones score 0).")
@click.option("-M", "max_docs", type=int, default=None, help="Only the top N documents of each ranking count.")
@click.option("-l", "level", type=int, default=1, show_default=True, help="Relevance level: a label >= N is relevant.")
@click.option("--missing", type=click.Choice([trec.MISSING_REFUSE, trec.MISSING_SKIP]), default=trec.MISSING_REFUSE,
              show_default=True,
              help="A judged topic absent from the run, without -c: refuse (trec_eval 10.0, exit 4) or skip (9.x).")
@click.option("--precision", type=click.IntRange(0, 17), default=4, show_default=True,
              help="Decimals printed (trec_eval prints 4).")
def trec_eval_cmd(qrels: Path, run: Path, measures: tuple[str, ...], per_query: bool, complete: bool,
                  max_docs: int | None, level: int, missing: str, precision: int) -> None:
    """Evaluate a TREC run file against a qrels file with ragqual's metrics (trec_eval semantics).

    Exit codes as trec_eval 10.0: 4 when it would refuse a topic, 7 when no topic is scored;
    2 for a malformed file (file and line named).
    """
    run_text = _read(run)
    judged, judged_again = trec.read_qrels(_read(qrels), str(qrels))
    ranked, copies = trec.read_run(run_text, str(run))
    names = trec.expand_measures(list(measures) or list(DEFAULT_MEASURES))
    scored, refusal = trec.plan_like_trec_eval(judged, ranked, judged_again, copies, complete=complete,
                                               max_docs=max_docs, missing=missing)
    if refusal is not None:
        if per_query and scored:
            before = metrics.evaluate({q: judged[q] for q in scored}, ranked, names, relevance_level=level,
                                      max_docs=max_docs, complete=complete)
            click.echo(trec.format_per_query(before, names, precision), nl=False)
        raise refusal
    results = metrics.evaluate(judged, ranked, names, relevance_level=level, max_docs=max_docs, complete=complete)
    means = trec.summary_scores(results, judged, complete=complete)
    click.echo(trec.format_trec_eval(results, means, names, per_query, run_id=trec.parse_run_tag(run_text),
                                     precision=precision), nl=False)
