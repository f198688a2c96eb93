"""`ragqual judge RUN`: an LLM judge scores a run's stored answers, in a section of its own."""

from __future__ import annotations

import json

import click

from ragqual.app.context import AppContext
from ragqual.app.judge_run import (TRIAL_CHOICES, JudgeOptions, JudgeOutcome, PairOutcome, judge_pairwise,
                                   judge_run)
from ragqual.core import rubrics
from ragqual.core.display import fmt_rate


class _JudgeGroup(click.Group):
    """`ragqual judge RUN ...` judges (the `run` subcommand, implied); `ragqual judge audit RUN` audits."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group("judge", cls=_JudgeGroup)
def judge_cmd() -> None:
    """Score RUN_ID's stored answers with an LLM judge, without calling the answering model again.

    `ragqual judge RUN_ID --judge URI [...]` judges (see `ragqual judge run --help`);
    `ragqual judge audit RUN_ID` measures the judge's agreement with human labels.
    """


@judge_cmd.command("run")
@click.argument("run_id", type=int)
@click.option("--judge", "judge", required=True, metavar="URI",
              help="The judge model: mock (a lexical test judge), ollama:<model>, openai:<base-url>#<model>, "
                   "llamacpp:<path-or-alias>.")
@click.option("--criteria", default=",".join(rubrics.CRITERIA), show_default=True, metavar="A,B",
              help="Which criteria to judge (comma-separated).")
@click.option("--samples", type=click.IntRange(min=1), default=1, show_default=True,
              help="Ask each question K times (self-consistency); each sample is its own cache entry.")
@click.option("--trials", "which", type=click.Choice(TRIAL_CHOICES), default="all", show_default=True,
              help="Judge every answered trial, or only those whose deterministic score is not perfect.")
@click.option("--pairwise", "other", type=int, default=None, metavar="OTHER_RUN",
              help="Compare RUN's answers with OTHER_RUN's on the same questions, each pair in both orders "
                   "(reports position consistency).")
@click.option("--ollama-host", default=None, metavar="URL", help="Ollama server for an ollama: judge.")
@click.pass_obj
def judge_run_cmd(app: AppContext, run_id: int, judge: str, criteria: str, samples: int, which: str,
              other: int | None, ollama_host: str | None) -> None:
    """Score RUN_ID's stored answers with an LLM judge, without calling the answering model again.

    Each criterion (faithfulness, completeness, relevance) is one yes/no question from a versioned
    rubric. The score is P(yes) from token probabilities where the backend gives them (OpenAI-compatible
    servers, llama.cpp, the mock), else a constrained yes/no (Ollama). Verdicts are appended to the
    history as a run of kind `judge`; an unreadable reply is a recorded judge error, never a 0. The
    judge section is printed on its own: it never enters the deterministic scores, pass, or the gate.
    """
    options = JudgeOptions(judge=judge, criteria=tuple(rubrics.parse_criteria(criteria)), samples=samples,
                           trials=which, ollama_host=ollama_host)
    if other is not None:
        pair = judge_pairwise(app, run_id, other, options)
        if app.as_json:
            click.echo(json.dumps(pair.as_dict(), indent=2))
        else:
            print_pair_section(pair)
        return
    outcome = judge_run(app, run_id, options)
    if app.as_json:
        click.echo(json.dumps(outcome.as_dict(), indent=2))
        return
    print_judge_section(outcome)


def print_judge_section(o: JudgeOutcome) -> None:
    click.echo(f"judge run {o.run_id} on run {o.target_run_id}: {o.judge} ({o.method}), {o.trials} trial(s) judged, "
               f"{o.skipped} left out; {o.model_calls} judge call(s), {o.cache_hits} cache hit(s)")
    click.echo("")
    click.echo("judge (an LLM's opinion: not part of the deterministic scores, pass, or the gate)")
    click.echo("| criterion | mean P(yes) | n | errors | samples | self-consistency |")
    click.echo("|---|---|---|---|---|---|")
    for s in o.summaries:
        consistency = "-" if s.self_consistency is None else fmt_rate(s.self_consistency)
        mean = "-" if s.mean is None else fmt_rate(s.mean)
        click.echo(f"| {s.criterion} | {mean} | {s.n} | {s.errors} | {s.samples} | {consistency} |")


def print_pair_section(o: PairOutcome) -> None:
    click.echo(f"judge run {o.run_id}: run {o.target_run_id} against run {o.other_run_id}, {o.judge} ({o.method}), "
               f"{o.pairs} pair(s) in both orders, {o.unmatched} trial(s) without a partner; "
               f"{o.model_calls} judge call(s), {o.cache_hits} cache hit(s)")
    click.echo("")
    click.echo("judge, pairwise (an LLM's opinion: not part of the deterministic scores, pass, or the gate)")
    click.echo(f"| criterion | P(run {o.target_run_id} better) | wins | losses | n | errors | position consistency |")
    click.echo("|---|---|---|---|---|---|---|")
    for s in o.summaries:
        p = "-" if s.p_better is None else fmt_rate(s.p_better)
        consistency = "-" if s.position_consistency is None else fmt_rate(s.position_consistency)
        click.echo(f"| {s.criterion} | {p} | {s.wins} | {s.losses} | {s.n} | {s.errors} | {consistency} |")


@judge_cmd.command("audit")
@click.argument("run_id", type=int)
@click.option("--judge", "judge", default=None, metavar="URI",
              help="Audit this judge's verdicts (default: the newest judge run's).")
@click.option("--labeller", "labeller", default=None, metavar="NAME",
              help="Against this labeller's labels only (default: every labeller's, reduced by majority; "
                   "a tie is unsure).")
@click.pass_obj
def judge_audit_cmd(app: AppContext, run_id: int, judge: str | None, labeller: str | None) -> None:
    """Measure how far the judge agrees with RUN_ID's human labels, criterion by criterion.

    Cohen's kappa with both base rates, the confusion matrix, accuracy, the AUC of the judge's
    P(yes) against the labels (how well it ranks, whatever the threshold), the trials where judge and
    human disagree, the judge's self-consistency, and the judged mean as a PPI++ interval beside the
    labels-only and judge-only ones. Each audit is appended as a row keyed on the rubric hash and the
    judge's digest. With several labellers, `ragqual labels agree RUN_ID` says how far they agree
    with each other: the ceiling of the judge's kappa.
    """
    from ragqual.app.judge_audit import audit_run

    audits = audit_run(app, run_id, judge, labeller)
    if app.as_json:
        click.echo(json.dumps([a.as_dict() for a in audits], indent=2, default=str))
        return
    first = audits[0]
    click.echo(f"judge audit of run {run_id}: {first.judge_model} (digest {first.judge_digest or '-'}), "
               f"judge run {first.payload.get('judge_run')}"
               + (f", labels of {labeller}" if labeller else ""))
    click.echo("| criterion | n | kappa | human yes | judge yes | accuracy | AUC | tn fp fn tp | unsure | "
               "self-consistency | PPI++ mean [95% CI] | labels only | judge only |")
    click.echo("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for a in audits:
        p = a.payload
        (tn, fp), (fn, tp) = p["confusion"]
        consistency = (p.get("self_consistency") or {}).get("share")
        click.echo(f"| {a.criterion} | {p['n']} | {_num(p['kappa'])} | {_num(p['human_rate'])} | "
                   f"{_num(p['judge_rate'])} | {_num(p['accuracy'])} | {_num(p.get('auc'))} | {tn} {fp} {fn} {tp} | {p['unsure']} | "
                   f"{_num(consistency)} | {_ci(p['ppi'])} | {_ci(p['labels_only'])} | {_ci(p['judge_only'])} |")
    for a in audits:
        if a.payload["disagreements"]:
            click.echo(f"{a.criterion}: judge and human disagree on trial(s) "
                       + ", ".join(map(str, a.payload["disagreements"])))
        if a.payload.get("kappa_reason"):
            click.echo(f"{a.criterion}: kappa undefined: {a.payload['kappa_reason']}")


def _num(value: float | None) -> str:
    return "-" if value is None else fmt_rate(value)


def _ci(estimate: dict) -> str:
    if "estimate" not in estimate:
        return "-"
    return f"{fmt_rate(estimate['estimate'])} [{fmt_rate(estimate['low'])}, {fmt_rate(estimate['high'])}]"
