"""`ragqual judge RUN`: an LLM judge scores a run's stored trials, as a run of kind `judge`.

Nothing calls the model that answered: the judge reads each trial's stored question, context and
answer, asks one yes/no question per criterion (a versioned rubric, `core.rubrics`) through the
same backends and the same response cache as any run, and appends one `judgements` row per
(trial, criterion, sample). Its numbers are a section of their own: they never enter the
deterministic scores, `pass`, or the default gate.

How the verdict is read depends on the backend (`core.judging`): token log-probabilities where
the backend gives them (OpenAI-compatible servers, llama.cpp, the `mock` test judge), else a
constrained JSON yes/no (Ollama's `format` schema). With `--samples K` each trial is asked K times
with sampling on (temperature 0.7, seed 42 + k), each sample under its own cache key (the sample
index is the key's repeat index), so a cache hit is always the same sample again, never a new one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragqual.adapters.mock_judge import MockJudgeModel
from ragqual.adapters.model_registry import make_model, split_uri
from ragqual.adapters.provenance import capture
from ragqual.app.context import AppContext
from ragqual.core import judging, rubrics
from ragqual.core.agreement import swap_consistency
from ragqual.core.cachekey import response_cache_key
from ragqual.core.hashing import canonical_json
from ragqual.core.replies import answer_in
from ragqual.engine.services import ensure_available
from ragqual.errors import InputError, ModelCallFailed
from ragqual.store import judgements
from ragqual.store.judgements import JudgementRow
from ragqual.store.runstore import RunStore
from ragqual.store.trial_reads import StoredTrial, run_trials
from ragqual.vocab import ChatMessage, ChatModel, ChatRequest, ChatResponse

LOGPROB_PROVIDERS = ("openai", "llamacpp", "mock")
TOP_LOGPROBS = 10
TRIAL_CHOICES = ("all", "failing")
BATCH = 64


@dataclass(frozen=True)
class JudgeOptions:
    judge: str
    criteria: tuple[str, ...] = rubrics.CRITERIA
    samples: int = 1
    trials: str = "all"
    ollama_host: str | None = None


@dataclass
class JudgeOutcome:
    run_id: int
    target_run_id: int
    judge: str
    judge_digest: str | None
    method: str
    trials: int
    skipped: int
    model_calls: int = 0
    cache_hits: int = 0
    summaries: list[judging.CriterionSummary] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "target_run_id": self.target_run_id, "judge": self.judge,
                "judge_digest": self.judge_digest, "method": self.method, "trials": self.trials,
                "skipped": self.skipped, "model_calls": self.model_calls, "cache_hits": self.cache_hits,
                "judge_section": [s.__dict__ for s in self.summaries]}


def build_judge(uri: str, ollama_host: str | None = None) -> ChatModel:
    """The judge model a URI names; `mock` is the lexical test judge (adapters.mock_judge)."""
    scheme, name = split_uri(uri)
    if scheme == "mock":
        if name:
            raise InputError(f"the mock judge takes no name, got {uri!r}: use --judge mock")
        return MockJudgeModel()
    if scheme == "answers":
        raise InputError("an answers: file cannot judge: use --judge mock, ollama:, openai: or llamacpp:")
    return make_model(uri, ollama_host=ollama_host)


def method_for(model: ChatModel) -> str:
    return "logprobs" if model.provider in LOGPROB_PROVIDERS else "constrained"


def judge_request(rubric: rubrics.Rubric, trial: StoredTrial, method: str, sample: int, samples: int) -> ChatRequest:
    """The yes/no question about one trial; what differs between samples is only the seed."""
    options: dict[str, Any] = {"temperature": 0 if samples == 1 else 0.7, "seed": 42 + sample}
    fmt: dict[str, Any] | None = None
    if method == "logprobs":
        options.update({"logprobs": True, "top_logprobs": TOP_LOGPROBS, "num_predict": 4})
    else:
        options["num_predict"] = 16
        fmt = judging.VERDICT_SCHEMA
    message = rubrics.judge_input(question_of(trial), trial.context or "", answer_of(trial), rubric.question)
    return ChatRequest(system=rubric.system, messages=(ChatMessage("user", message),), options=options, format=fmt)


def question_of(trial: StoredTrial) -> str:
    definition = trial.case_definition or {}
    turns = definition.get("turns") or []
    history = "\n".join(f"{t.get('role', 'user')}: {t.get('content', '')}" for t in turns if isinstance(t, dict))
    query = str(definition.get("query") or definition.get("input") or "")
    return f"{history}\nuser: {query}".strip() if history else query


def answer_of(trial: StoredTrial) -> str:
    raw = trial.raw_output
    if isinstance(raw, dict) and (isinstance(raw.get("message"), dict) or isinstance(raw.get("backend"), dict)):
        return answer_in(raw) or ""
    return "" if raw is None else str(raw)


def read(method: str, response: ChatResponse) -> judging.Reading:
    return judging.read_logprobs(response.raw) if method == "logprobs" else judging.read_constrained(response.text)


def pick_trials(store: RunStore, run_id: int, which: str) -> tuple[list[StoredTrial], int]:
    """(the trials to judge, how many were left out: errors, and passing ones under `failing`)."""
    if which not in TRIAL_CHOICES:
        raise InputError(f"--trials must be one of {', '.join(TRIAL_CHOICES)}, got {which!r}")
    trials = run_trials(store.engine, run_id)
    passed = judgements.trial_passed(store.engine, run_id) if which == "failing" else {}
    chosen = [t for t in trials if t.error is None and not passed.get(t.trial_id, False)]
    return chosen, len(trials) - len(chosen)


class _Judge:
    """Asks the judge through the response cache, counting real calls and hits."""

    def __init__(self, app: AppContext, model: ChatModel):
        self.cache, self.model = app.response_cache(), model
        self.digest = model.digest()
        self.calls = self.hits = 0

    def ask(self, request: ChatRequest, sample: int) -> tuple[ChatResponse | None, str, bool, str | None]:
        key = response_cache_key(provider=self.model.provider, model=self.model.name, digest=self.digest,
                                 request_material=request.key_material(), repeat_index=sample)

        def call() -> ChatResponse:
            self.calls += 1
            return self.model.chat(request)

        try:
            response, hit = self.cache.get_or_call(key, call)
        except ModelCallFailed as failed:
            return None, key, False, f"the judge call failed: {failed}"
        self.hits += int(hit)
        return response, key, hit, None


def judge_run(app: AppContext, run_id: int, options: JudgeOptions,
              progress: Callable[[int, int], None] | None = None) -> JudgeOutcome:
    """Judge run `run_id`'s trials; the verdicts are a new run of kind `judge`."""
    if options.samples < 1:
        raise InputError(f"--samples must be 1 or more, got {options.samples}")
    store = app.store(auto_create=False)
    target = store.get_run(run_id)
    criteria = [rubrics.rubric(c) for c in options.criteria]
    trials, skipped = pick_trials(store, run_id, options.trials)
    model = build_judge(options.judge, options.ollama_host)
    if app.cache_mode != "replay":
        ensure_available(model)  # before anything is recorded
    judge = _Judge(app, model)
    method = method_for(model)
    params = {"target_run": run_id, "judge": options.judge, "judge_digest": judge.digest, "method": method,
              "criteria": [c.criterion for c in criteria], "samples": options.samples, "trials": options.trials,
              "rubrics": {c.criterion: {"version": c.version, "sha256": c.sha256} for c in criteria},
              "cache": app.cache_mode}
    for c in criteria:
        store.intern_system_prompt(c.text)
    judge_id = store.start_run("judge", target.subject, capture(argv=sys.argv, params=params,
                                                                 prompt_hashes=[c.sha256 for c in criteria]))
    outcome = JudgeOutcome(judge_id, run_id, options.judge, judge.digest, method, len(trials), skipped)
    try:
        readings = _judge_all(store, judge, judge_id, run_id, trials, criteria, method, options, progress)
    except BaseException as exc:
        store.add_event(judge_id, "failed", canonical_json({"error": f"{type(exc).__name__}: {exc}"}))
        raise
    outcome.model_calls, outcome.cache_hits = judge.calls, judge.hits
    outcome.summaries = [judging.summarise(c.criterion, readings[c.criterion], options.samples) for c in criteria]
    store.add_event(judge_id, "finished", canonical_json({"verdicts": len(trials) * len(criteria) * options.samples,
                                                          "model_calls": judge.calls, "cache_hits": judge.hits}))
    return outcome


def _judge_all(store: RunStore, judge: _Judge, judge_id: int, run_id: int, trials: Sequence[StoredTrial],
               criteria: Sequence[rubrics.Rubric], method: str, options: JudgeOptions,
               progress: Callable[[int, int], None] | None) -> dict[str, dict[int, list[judging.Reading]]]:
    readings: dict[str, dict[int, list[judging.Reading]]] = {c.criterion: {} for c in criteria}
    pending: list[JudgementRow] = []
    for done, trial in enumerate(trials, start=1):
        for rubric in criteria:
            for sample in range(options.samples):
                row, reading = _one(judge, trial, rubric, method, sample, options)
                readings[rubric.criterion].setdefault(trial.trial_id, []).append(reading)
                pending.append(row)
        if len(pending) >= BATCH:
            judgements.append_judgements(store, judge_id, run_id, pending)
            pending = []
        if progress is not None:
            progress(done, len(trials))
    judgements.append_judgements(store, judge_id, run_id, pending)
    return readings


def _one(judge: _Judge, trial: StoredTrial, rubric: rubrics.Rubric, method: str, sample: int,
         options: JudgeOptions) -> tuple[JudgementRow, judging.Reading]:
    request = judge_request(rubric, trial, method, sample, options.samples)
    response, key, hit, failed = judge.ask(request, sample)
    if response is None:
        reading = judging.Reading(None, None, failed)
        raw: dict[str, Any] = {}
    else:
        reading = read(method, response)
        raw = {"text": response.text, "backend": response.raw}
    row = JudgementRow(trial_id=trial.trial_id, criterion=rubric.criterion, score=reading.score,
                       verdict=reading.verdict, method=method, rubric_version=rubric.version,
                       rubric_sha256=rubric.sha256, judge_model=options.judge, judge_digest=judge.digest,
                       sample_index=sample, cache_key=key, cache_hit=hit, raw=raw, error=reading.error)
    return row, reading


# -- pairwise: two runs' answers to the same question, in both orders ---------------------------

@dataclass(frozen=True)
class PairSummary:
    criterion: str
    p_better: float | None  # mean over pairs of P(RUN's answer is better), both orders averaged
    wins: int
    losses: int
    n: int  # pairs with both orders readable
    errors: int  # replies that could not be read
    position_consistency: float | None  # share of pairs whose winner did not change with the order


@dataclass
class PairOutcome:
    run_id: int
    target_run_id: int
    other_run_id: int
    judge: str
    method: str
    pairs: int
    unmatched: int
    model_calls: int = 0
    cache_hits: int = 0
    summaries: list[PairSummary] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "target_run_id": self.target_run_id, "other_run_id": self.other_run_id,
                "judge": self.judge, "method": self.method, "pairs": self.pairs, "unmatched": self.unmatched,
                "model_calls": self.model_calls, "cache_hits": self.cache_hits,
                "pairwise_section": [s.__dict__ for s in self.summaries]}


def _one_variant(store: RunStore, run_id: int) -> list[StoredTrial]:
    """The answered trials of the run's one model (the `mock` ceiling line beside it is left out)."""
    trials = [t for t in run_trials(store.engine, run_id) if t.error is None]
    names = sorted({t.variant for t in trials})
    chosen = [n for n in names if n != "mock"] or names
    if len(chosen) > 1:
        raise InputError(f"run {run_id} answered with several models ({', '.join(chosen)}): pairwise judging "
                         "compares one model's answers per run")
    return [t for t in trials if t.variant in chosen]


def pair_trials(store: RunStore, run_id: int, other_id: int) -> tuple[list[tuple[StoredTrial, StoredTrial]], int]:
    """(trials of the two runs matched on question, mode and repeat; how many found no partner). When
    either run has a single mode the mode is not matched, so an e2e run can face a noretrieval run."""
    mine, theirs = _one_variant(store, run_id), _one_variant(store, other_id)
    one_mode = len({t.mode for t in mine}) == 1 or len({t.mode for t in theirs}) == 1

    def key(t: StoredTrial) -> tuple[str, str, int]:
        return (t.case_id, "" if one_mode else t.mode, t.repeat_index)

    index = {key(t): t for t in theirs}
    pairs = [(t, index[key(t)]) for t in mine if key(t) in index]
    return pairs, len(mine) + len(theirs) - 2 * len(pairs)


def pair_request(rubric: rubrics.Rubric, first: StoredTrial, second: StoredTrial, method: str) -> ChatRequest:
    options: dict[str, Any] = {"temperature": 0, "seed": 42}
    fmt: dict[str, Any] | None = None
    if method == "logprobs":
        options.update({"logprobs": True, "top_logprobs": TOP_LOGPROBS, "num_predict": 4})
    else:
        options["num_predict"] = 16
        fmt = judging.PAIR_SCHEMA
    message = rubrics.pair_input(question_of(first), (first.context or "", answer_of(first)),
                                 (second.context or "", answer_of(second)))
    return ChatRequest(system=rubric.text, messages=(ChatMessage("user", message),), options=options, format=fmt)


def judge_pairwise(app: AppContext, run_id: int, other_id: int, options: JudgeOptions) -> PairOutcome:
    """Judge RUN's answers against OTHER's on the same questions, each pair in both orders."""
    if options.samples != 1:
        raise InputError("--samples is for yes/no judging; pairwise judging asks each pair once in each order")
    store = app.store(auto_create=False)
    target = store.get_run(run_id)
    store.get_run(other_id)
    criteria = [rubrics.pair_rubric(c) for c in options.criteria]
    pairs, unmatched = pair_trials(store, run_id, other_id)
    if not pairs:
        raise InputError(f"runs {run_id} and {other_id} have no answered question in common (same case, mode "
                         "and repeat)")
    model = build_judge(options.judge, options.ollama_host)
    if app.cache_mode != "replay":
        ensure_available(model)
    judge, method = _Judge(app, model), method_for(model)
    params = {"target_run": run_id, "pairwise": other_id, "judge": options.judge, "judge_digest": judge.digest,
              "method": method, "criteria": [c.criterion for c in criteria], "cache": app.cache_mode,
              "rubrics": {c.criterion: {"version": c.version, "sha256": c.sha256, "pairwise": True} for c in criteria}}
    for c in criteria:
        store.intern_system_prompt(c.text)
    judge_id = store.start_run("judge", target.subject, capture(argv=sys.argv, params=params,
                                                                 prompt_hashes=[c.sha256 for c in criteria]))
    outcome = PairOutcome(judge_id, run_id, other_id, options.judge, method, len(pairs), unmatched)
    try:
        rows, summaries = _pairs_all(judge, pairs, criteria, method, options, other_id)
        judgements.append_judgements(store, judge_id, run_id, rows)
    except BaseException as exc:
        store.add_event(judge_id, "failed", canonical_json({"error": f"{type(exc).__name__}: {exc}"}))
        raise
    outcome.model_calls, outcome.cache_hits, outcome.summaries = judge.calls, judge.hits, summaries
    store.add_event(judge_id, "finished", canonical_json({"pairs": len(pairs), "model_calls": judge.calls,
                                                          "cache_hits": judge.hits}))
    return outcome


def _pairs_all(judge: _Judge, pairs: Sequence[tuple[StoredTrial, StoredTrial]], criteria: Sequence[rubrics.Rubric],
               method: str, options: JudgeOptions, other_id: int) -> tuple[list[JudgementRow], list[PairSummary]]:
    rows: list[JudgementRow] = []
    summaries = []
    for rubric in criteria:
        firsts: list[str | None] = []
        swaps: list[str | None] = []
        p_better: list[float] = []
        errors = 0
        for mine, theirs in pairs:
            winners: list[str | None] = []
            scores: list[float] = []
            for order, (a, b) in enumerate(((mine, theirs), (theirs, mine))):
                response, key, hit, failed = judge.ask(pair_request(rubric, a, b, method), order)
                reading = (judging.Reading(None, None, failed) if response is None
                           else judging.read_pair(method, response.raw, response.text))
                mine_p = None if reading.score is None else (reading.score if order == 0 else 1 - reading.score)
                winners.append(None if mine_p is None else ("a" if mine_p >= 0.5 else "b"))  # a = RUN
                errors += reading.error is not None
                if mine_p is not None:
                    scores.append(mine_p)
                raw = {} if response is None else {"text": response.text, "backend": response.raw}
                rows.append(JudgementRow(
                    trial_id=mine.trial_id, criterion=f"pairwise-{rubric.criterion}", score=mine_p,
                    verdict=None if mine_p is None else ("yes" if mine_p >= 0.5 else "no"), method=method,
                    rubric_version=rubric.version, rubric_sha256=rubric.sha256, judge_model=options.judge,
                    judge_digest=judge.digest, sample_index=order, cache_key=key, cache_hit=hit,
                    raw={**raw, "order": "run-first" if order == 0 else "other-first", "other_run": other_id,
                         "other_trial": theirs.trial_id}, error=reading.error))
            firsts.append(winners[0])
            swaps.append(winners[1])
            if len(scores) == 2:
                p_better.append(sum(scores) / 2)
        summaries.append(PairSummary(
            rubric.criterion, sum(p_better) / len(p_better) if p_better else None,
            sum(p > 0.5 for p in p_better), sum(p < 0.5 for p in p_better), len(p_better), errors,
            swap_consistency(firsts, swaps).share))
    return rows, summaries
