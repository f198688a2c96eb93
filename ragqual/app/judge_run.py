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
from ragqual.core.cachekey import response_cache_key
from ragqual.core.hashing import canonical_json
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
    message = rubrics.judge_input(question_of(trial), trial.context or "", answer_of(trial))
    return ChatRequest(system=rubric.text, messages=(ChatMessage("user", message),), options=options, format=fmt)


def question_of(trial: StoredTrial) -> str:
    definition = trial.case_definition or {}
    turns = definition.get("turns") or []
    history = "\n".join(f"{t.get('role', 'user')}: {t.get('content', '')}" for t in turns if isinstance(t, dict))
    query = str(definition.get("query") or definition.get("input") or "")
    return f"{history}\nuser: {query}".strip() if history else query


def answer_of(trial: StoredTrial) -> str:
    raw = trial.raw_output
    if isinstance(raw, dict) and isinstance(raw.get("message"), dict):
        return str(raw["message"].get("content") or "")
    return "" if raw is None else str(raw)


def read(method: str, response: ChatResponse) -> judging.Reading:
    return judging.read_logprobs(response.raw) if method == "logprobs" else judging.read_constrained(response.text)


def pick_trials(store: RunStore, run_id: int, which: str) -> tuple[list[StoredTrial], int]:
    """(the trials to judge, how many were left out: errors, and passing ones under `failing`)."""
    if which not in TRIAL_CHOICES:
        raise InputError(f"--trials must be one of {', '.join(TRIAL_CHOICES)}, got {which!r}")
    trials = run_trials(store.engine, run_id)
    passed = judgements.trial_passed(store, run_id) if which == "failing" else {}
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
