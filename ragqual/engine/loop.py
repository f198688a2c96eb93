"""The trial loop: every (variant x case x mode x repeat) slot, scored and stored as it finishes.

One loop serves every subject. It records the definitions a run used (cases with their assertion
specs, variants, system prompts; all interned), starts the run, runs the slots the run does not
hold yet, and appends the finished trials with their assertion, score and metric rows in batches,
each one transaction with one seal, from the main thread only (`engine.batching`: every N trials,
every T ms or per case, whichever first; whatever waits is appended however the run ends).

How a run ends, as the last run_events row:

    finished      every slot ran (a trial whose model call failed is kept, with its error)
    interrupted   KeyboardInterrupt: pending slots are dropped, finished trials kept, re-raised
    failed        a plain ServiceUnavailable (the server is gone), a CacheMiss in replay mode
                  (replay promised zero calls, so a miss stops the run: exit 2), a subject that
                  broke its contract, or any unexpected exception; finished trials kept, re-raised

A `ModelCallFailed` (one call timed out or was rejected after its retries) is recorded on that
trial as its error: every assertion fails with "not evaluated" and the trial scores 0. After
K failed attempts in a row the circuit breaker (`engine.breaker`) stops the run as `failed`,
with one line saying how to resume it. A trial's raw output is capped before it is scored and
stored (`engine.output_cap`); the row keeps the original size and a truncated flag.

Concurrency uses daemon worker threads rather than ThreadPoolExecutor on purpose: the executor's
threads are joined at interpreter exit, so one model call in flight (up to its timeout) would
hold Ctrl-C hostage. Here the main thread stops waiting at once and the process can exit.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragqual.adapters.answers_model import check_ids
from ragqual.adapters.provenance import capture
from ragqual.core.hashing import canonical_json, hash_value, sha256_hex
from ragqual.core.pricing import PriceList
from ragqual.engine.batching import BatchPolicy, batch_policy
from ragqual.engine.breaker import CircuitOpen
from ragqual.engine.cases import Case
from ragqual.engine.pricing import price_run
from ragqual.engine.output_cap import Capped, cap_result, json_size, output_cap
from ragqual.engine.scorers import Scored, Scorer, default_scorers, score_trial
from ragqual.engine.services import TrialServices
from ragqual.engine.subject import Subject, SubjectContractError, SubjectResult, Variant
from ragqual.errors import InputError, ModelCallFailed, RunInterrupted
from ragqual.store.claims import SlotClaims, require_shared
from ragqual.store.cost_reads import PricingInput
from ragqual.store.records import TrialRecord
from ragqual.store.runstore import RunStore
from ragqual.store.trial_reads import assertion_defs

SlotKey = tuple[int, int, str, int]  # (case_pk, variant_id, mode, repeat_index)
_POLL_SECONDS = 0.2
_CLAIM_POLL_SECONDS = 0.2  # a worker whose every missing slot is claimed by others looks again after this


@dataclass(frozen=True)
class Slot:
    variant: Variant
    variant_id: int
    case: Case
    case_pk: int
    mode: str
    repeat_index: int

    @property
    def key(self) -> SlotKey:
        return (self.case_pk, self.variant_id, self.mode, self.repeat_index)


@dataclass(frozen=True)
class Progress:
    """Sent to the progress callback once at the start (done=0) and after every stored trial."""

    run_id: int
    done: int
    total: int
    slot: Slot | None = None
    trial_id: int | None = None
    score: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class RunOutcome:
    run_id: int
    status: str
    trials_run: int
    trials_skipped: int  # already held by the run (resume)
    trial_errors: int
    model_calls: int
    cache_hits: int


@dataclass(frozen=True)
class RunPlan:
    """What a run covers; stored in the run's params so that `--resume` can rebuild it."""

    variants: list[Variant]
    cases: list[Case]
    modes: list[str]
    repeats: int


@dataclass(frozen=True)
class _Done:
    slot: Slot
    record: TrialRecord
    system_prompt: str | None


ProgressCallback = Callable[[Progress], None]


# -- validation and definitions -----------------------------------------------------------------

def _validate(subject: Subject, plan: RunPlan, max_concurrency: int) -> None:
    if not plan.variants:
        raise InputError("no variants to run: pass at least one --model")
    if not plan.cases:
        raise InputError(f"subject {subject.name!r} has no cases to run")
    if isinstance(plan.repeats, bool) or not isinstance(plan.repeats, int) or plan.repeats < 1:
        raise InputError(f"the trial count must be 1 or more, got {plan.repeats!r}")
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
        raise InputError(f"--max-concurrency must be 1 or more, got {max_concurrency!r}")
    names = [v.name for v in plan.variants]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InputError(f"variant names must be unique: {', '.join(duplicated)} given twice")
    unknown = [m for m in plan.modes if m not in subject.modes]
    if unknown or not plan.modes:
        valid = ", ".join(repr(m) for m in subject.modes)
        asked = ", ".join(map(repr, unknown)) or "(none)"
        raise InputError(f"subject {subject.name!r} has no mode {asked}: use {valid}")


def _check_replays(subject: Subject, plan: RunPlan, services: TrialServices) -> None:
    """An answers file (`answers:` model) naming a case the subject does not have is refused,
    naming its line, before anything is recorded."""
    for variant in plan.variants:
        if services.replays(variant):
            check_ids(getattr(services.model(variant), "answers"), subject.known_case_ids())


def _warn_unbumped(store: RunStore, cases: Sequence[Case]) -> None:
    """Warn when an assertion's check changed but its version did not (rescores would mix meanings)."""
    current = {a.id: a for c in cases for a in c.assertions}
    for row in assertion_defs(store.engine, list(current)):
        now = current[row.assertion_id]
        if row.version == now.version and row.definition.get("check") != now.check.spec():
            warnings.warn(
                f"assertion {now.id} ({now.name!r}) changed its check but kept version {now.version}: "
                "bump the version when a check's meaning changes", stacklevel=3,
            )


def _record_cases(store: RunStore, subject: Subject, cases: Sequence[Case]) -> dict[str, int]:
    """Every case and assertion definition the run uses, each kind in one transaction."""
    _warn_unbumped(store, cases)
    store.record_assertion_defs([(a.id, a.version, a.category, float(a.weight), a.name, a.spec())
                                 for case in cases for a in case.assertions])
    return store.record_cases(subject.name, [(case.id, case.slug, case.definition()) for case in cases])


def _record_variants(
    store: RunStore, subject: Subject, services: TrialServices, variants: Sequence[Variant]
) -> dict[str, int]:
    ids = {}
    described_all = {v.name: services.describe(v) for v in variants}  # every server answers before any row
    for variant in variants:
        described = described_all[variant.name]
        prompt = subject.system_prompt_for(variant)
        config = {
            "uri": variant.model, "options": subject.provider_options(variant),
            "system_prompt_sha256": sha256_hex(prompt) if prompt else None,
            "digest": described["digest"],
            **({"axes": dict(variant.axes)} if variant.axes else {}),
        }
        ids[variant.name] = store.intern_variant(variant.name, described["provider"], described["model"], config)
    return ids


def _slots(plan: RunPlan, case_pks: dict[str, int], variant_ids: dict[str, int]) -> list[Slot]:
    """Variant-major, so one model finishes its trials before the next is warmed up."""
    return [
        Slot(v, variant_ids[v.name], c, case_pks[c.id], m, r)
        for v in plan.variants for r in range(plan.repeats) for c in plan.cases for m in plan.modes
    ]


def _run_params(subject: Subject, plan: RunPlan, scorers: Sequence[Scorer], services: TrialServices,
                max_concurrency: int, extra: dict[str, Any] | None) -> dict[str, Any]:
    return {
        **(extra or {}),
        "subject": subject.name,
        "variants": [v.as_dict() for v in plan.variants],
        "case_ids": [c.id for c in plan.cases],
        "case_slugs": [c.slug for c in plan.cases],
        "modes": list(plan.modes),
        "repeats": plan.repeats,
        "scorers": [{"name": s.name, "version": s.version} for s in scorers],
        "max_concurrency": max_concurrency,
        "cache_mode": services.cache.mode,
    }


def plan_from_run(store: RunStore, run_id: int, subject: Subject) -> RunPlan:
    """Rebuild a run's plan from its stored params and the subject's current cases (for --resume)."""
    info = store.get_run(run_id)
    if info.subject != subject.name:
        raise InputError(f"run {run_id} is a run of subject {info.subject!r}, not {subject.name!r}")
    params = info.params
    if "variants" not in params or "case_ids" not in params:
        raise InputError(f"run {run_id} was not started by the trial loop; it cannot be resumed")
    by_id = {c.id: c for c in subject.cases()}
    missing = [cid for cid in params["case_ids"] if cid not in by_id]
    if missing:
        raise InputError(f"run {run_id} used cases the subject no longer has: {', '.join(missing)}")
    return RunPlan(
        variants=[Variant.from_dict(v) for v in params["variants"]],
        cases=[by_id[cid] for cid in params["case_ids"]],
        modes=list(params.get("modes", subject.modes)),
        repeats=int(params.get("repeats", 1)),
    )


# -- one trial -------------------------------------------------------------------------------------

def _jsonable(value: Any, what: str, subject: Subject) -> Any:
    try:
        canonical_json(value)
    except (TypeError, ValueError) as exc:
        raise SubjectContractError(f"subject {subject.name!r}: the {what} is not a JSON value ({exc})") from None
    return value


_RAW_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, allow_nan=False)  # json.dumps's, built once


def _raw_json(value: Any, subject: Subject) -> str:
    """The raw response as JSON with sorted keys (the text whose size the output cap measures),
    refused like `_jsonable` when it is not a JSON value: one encoding serves both."""
    try:
        return _RAW_JSON.encode(value)
    except (TypeError, ValueError) as exc:
        raise SubjectContractError(
            f"subject {subject.name!r}: the raw response is not a JSON value ({exc})") from None


def _check_result(subject: Subject, slot: Slot, result: Any) -> tuple[SubjectResult, str]:
    """The result, and its raw response as JSON (`_raw_json`)."""
    if not isinstance(result, SubjectResult):
        raise SubjectContractError(
            f"subject {subject.name!r}: run_one must return a SubjectResult, got {type(result).__name__}")
    if result.telemetry is None:
        raise SubjectContractError(
            f"subject {subject.name!r} returned no telemetry for case {slot.case.slug!r}: "
            "run_one must report tokens and latency (Telemetry.from_response)")
    if not isinstance(result.output, str):  # a text always is one
        _jsonable(result.output, "output", subject)
    return result, _raw_json(result.raw, subject)


ScoreKey = tuple[int, int, str, str, str | None, str]
SCORES_HELD = 4096


def pure_scoring(subject: Subject, case: Case) -> bool:
    """Whether scoring a trial of `case` is a function of what the trial returned: the subject
    says its metrics are (`Subject.pure_scoring`) and every check of the case is declared pure."""
    return subject.pure_scoring and all(getattr(a.check, "pure", False) for a in case.assertions)


class ScoreMemo:
    """The scoring of a trial whose case, variant, mode, answer, context and raw response (as JSON)
    equal those of a trial scored before in the run: repeats of a deterministic model give the
    same answer, and scoring it again gives the same rows. Only pure scoring is remembered, never
    one with an error on a check (a regex that ran out of time may finish next time), and a trial
    whose answer differs is scored afresh."""

    def __init__(self, subject: Subject) -> None:
        self.subject = subject
        self._pure: dict[int, bool] = {}
        self._scored: dict[ScoreKey, Scored] = {}

    def key(self, slot: Slot, result: SubjectResult, raw_json: str) -> ScoreKey | None:
        pure = self._pure.get(slot.case_pk)
        if pure is None:
            pure = self._pure[slot.case_pk] = pure_scoring(self.subject, slot.case)
        if not pure or not isinstance(result.output, str) or not (result.context is None or isinstance(result.context, str)):
            return None
        return (slot.case_pk, slot.variant_id, slot.mode, result.output, result.context, raw_json)

    def get(self, key: ScoreKey | None) -> Scored | None:
        return None if key is None else self._scored.get(key)

    def put(self, key: ScoreKey | None, scored: Scored) -> None:
        if len(self._scored) >= SCORES_HELD:  # a memo only saves work: past this many it starts afresh
            self._scored.clear()
        if key is not None and not any(row.detail is not None and row.detail.startswith("error: ")
                                       for row in scored.assertions):
            self._scored[key] = scored


def _trial_record(run_id: int, slot: Slot, result: SubjectResult | None, error: str | None,
                  subject: Subject, scorers: Sequence[Scorer], scored: Scored | None = None,
                  capped: Capped | None = None, raw_json: str | None = None,
                  system_prompt_id: int | None = None) -> TrialRecord:
    """The record of a trial; `raw_json`: `result.raw` as `_raw_json` encoded it (handed to the
    store, which then writes that text instead of encoding the raw response again)."""
    case = slot.case
    if scored is None:
        scored = score_trial(subject, case, case.assertions, scorers, mode=slot.mode,
                             output=result.output if result is not None else None,
                             context=result.context if result is not None else None, error=error,
                             variant=slot.variant, raw=result.raw if result is not None else None)
    t = result.telemetry if result is not None else None
    return TrialRecord(
        run_id=run_id, case_pk=slot.case_pk, variant_id=slot.variant_id, mode=slot.mode,
        repeat_index=slot.repeat_index, system_prompt_id=system_prompt_id,
        rendered_prompt=result.rendered_prompt if result else None,
        context=result.context if result else None,
        raw_output=result.raw if result else None, parsed_output=result.output if result else None,
        error=error, prompt_tokens=t.prompt_tokens if t else None,
        completion_tokens=t.completion_tokens if t else None, latency_ms=t.latency_ms if t else None,
        load_ms=t.load_ms if t else None, cost=t.cost if t else None,
        cache_key=result.cache_key if result else None, cache_hit=bool(result and result.cache_hit),
        assertions=scored.assertions, scores=scored.scores,
        metrics=dict(scored.metrics), case_id=case.id, metrics_version=scored.metrics_version,
        raw_output_bytes=None if capped is None else capped.original_bytes,
        output_truncated=None if capped is None else capped.truncated,
        raw_output_json=raw_json,
    )


def per_trial_failures() -> tuple[type[BaseException], ...]:
    """Errors recorded against one trial instead of stopping the run."""
    return (ModelCallFailed,)


class _Trials:
    """Runs one slot (any thread) and prepares one finished trial for the store (main thread)."""

    def __init__(self, run_id: int, subject: Subject, services: TrialServices, store: RunStore,
                 scorers: Sequence[Scorer], claims: SlotClaims | None = None):
        self.run_id, self.subject, self.services, self.store = run_id, subject, services, store
        self.claims = claims  # a worker sharing the run (`--worker`): a slot runs only once claimed
        self.scorers = scorers
        self._prompt_ids: dict[str, int] = {}
        self._trial_failures = per_trial_failures()
        self.errors = 0
        self.output_cap = output_cap()
        self.scores = ScoreMemo(subject)

    def execute(self, slot: Slot) -> _Done | None:
        """The slot's finished trial; None when another worker holds the slot or has stored it."""
        if self.claims is not None and not self.claims.claim(slot.key):
            return None
        try:
            if self.services.replays(slot.variant):
                result = self.subject.replay_one(slot.case, slot.variant, slot.mode, self.services)
            else:
                result = self.subject.run_one(slot.case, slot.variant, slot.mode, slot.repeat_index, self.services)
        except self._trial_failures as exc:
            return _Done(slot, _trial_record(self.run_id, slot, None, str(exc), self.subject, self.scorers),
                         self.subject.system_prompt_for(slot.variant))
        checked, raw_json = _check_result(self.subject, slot, result)
        capped = cap_result(checked, self.output_cap, size=json_size(checked.raw, raw_json))
        checked = capped.result
        prompt = checked.system_prompt
        if prompt is None:
            prompt = self.subject.system_prompt_for(slot.variant)
        key = None if capped.truncated else self.scores.key(slot, checked, raw_json)
        scored = self.scores.get(key)
        record = _trial_record(self.run_id, slot, checked, None, self.subject, self.scorers, scored, capped,
                               raw_json if checked.raw is result.raw else None,  # a cut one is encoded anew
                               self._prompt_ids.get(prompt) if prompt else None)
        if scored is None:
            self.scores.put(key, Scored(record.assertions, record.scores, dict(record.metrics), record.metrics_version))
        return _Done(slot, record, prompt)

    def prepare(self, done: _Done) -> TrialRecord:
        """The record to append, its system prompt interned (once per prompt). `execute` gives a
        record the id of a prompt interned before already; only the others are copied with it."""
        record = done.record
        if done.system_prompt:
            if done.system_prompt not in self._prompt_ids:
                self._prompt_ids[done.system_prompt] = self.store.intern_system_prompt(done.system_prompt)
            prompt_id = self._prompt_ids[done.system_prompt]
            if record.system_prompt_id != prompt_id:
                record = replace(record, system_prompt_id=prompt_id)
        if record.error is not None:
            self.errors += 1
        return record


def _group(slot: Slot) -> tuple[int, int, int]:
    """A case's trials for one variant and repeat (its modes): what `per_case` batches end with."""
    return (slot.case_pk, slot.variant_id, slot.repeat_index)


class _Appender:
    """Holds finished trials and appends them in batches (`engine.batching`), main thread only.

    `durable()` says whether the response cache keeps the answers of waiting trials; when it
    does not, each trial is appended at once. `after` is told of each trial once it is stored."""

    def __init__(self, store: RunStore, policy: BatchPolicy, slots: Sequence[Slot],
                 after: Callable[[_Done, int], None], durable: Callable[[], bool] = lambda: True,
                 clock: Callable[[], float] = time.monotonic):
        self.store, self.policy, self.after, self.durable, self.clock = store, policy, after, durable, clock
        self.waiting: list[tuple[_Done, TrialRecord]] = []
        self.stored = 0  # trials appended (committed) by this appender
        self.last = clock()
        self._left: dict[tuple[int, int, int], int] = {}
        for slot in slots:
            self._left[_group(slot)] = self._left.get(_group(slot), 0) + 1

    def add(self, done: _Done, record: TrialRecord) -> None:
        self.waiting.append((done, record))
        group = _group(done.slot)
        self._left[group] = self._left.get(group, 1) - 1
        if not self.durable() or self.policy.due(len(self.waiting), self._since_ms(), self._left[group] <= 0):
            self.flush()

    def tick(self) -> None:
        """Append what waits if its time has come (called while the loop waits for a trial)."""
        if self.policy.due(len(self.waiting), self._since_ms()):
            self.flush()

    def flush(self) -> None:
        """Append every waiting trial in one transaction, then report each one."""
        batch = self.waiting
        if batch:
            ids = self.store.append_trials([record for _, record in batch])
            self.stored += len(ids)
            self.waiting = []
            for (done, _), trial_id in zip(batch, ids, strict=True):
                self.after(done, trial_id)
        self.last = self.clock()

    def flush_at_end(self) -> None:
        """`flush` when the run stops early: a failure to append is not the run's failure to report
        (the waiting trials' answers are in the response cache; `--resume` redoes them)."""
        with contextlib.suppress(Exception):
            self.flush()

    def _since_ms(self) -> float:
        return (self.clock() - self.last) * 1000.0


class _Priced:
    """What pricing reads of each trial the run has stored (`price_run`'s inputs), gathered as the
    trials are appended, so a fresh run is priced without reading its trials back. Kept only when
    they are all of the run's trials (a fresh run, not a worker's share, sealed as it goes) and the
    token counts are whole numbers or None, as the history stores them."""

    def __init__(self, wanted: bool) -> None:
        self.rows: list[PricingInput] | None = [] if wanted else None

    def add(self, trial_id: int, done: _Done) -> None:
        if self.rows is None:
            return
        record = done.record
        tokens = (record.prompt_tokens, record.completion_tokens)
        if any(t is not None and type(t) is not int for t in tokens):
            self.rows = None
            return
        self.rows.append(PricingInput(trial_id, done.slot.variant.model, *tokens, None))

    def inputs(self, stored: int) -> list[PricingInput] | None:
        """The inputs, when they hold every one of the `stored` trials (else None: read them)."""
        rows = self.rows
        if rows is None or len(rows) != stored or any(a.trial_id >= b.trial_id for a, b in zip(rows, rows[1:])):
            return None
        return rows


def _durable(services: TrialServices) -> Callable[[], bool]:
    """Whether a waiting trial's answer survives a kill: the response cache writes answers."""
    cache = services.cache
    return lambda: cache.mode == "replay" or (cache.mode != "off" and cache.cache is not None)


# -- execution strategies -------------------------------------------------------------------------

def _run_sequential(slots: Sequence[Slot], trials: _Trials, sink: _Appender) -> None:
    for slot in slots:
        done = trials.execute(slot)
        if done is not None:
            sink.add(done, trials.prepare(done))


def _run_threaded(slots: Sequence[Slot], trials: _Trials, sink: _Appender, workers: int) -> None:
    jobs: queue.SimpleQueue[Slot] = queue.SimpleQueue()
    for slot in slots:
        jobs.put(slot)
    results: queue.SimpleQueue[tuple[_Done | None, BaseException | None]] = queue.SimpleQueue()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                slot = jobs.get_nowait()
            except queue.Empty:
                return
            try:
                results.put((trials.execute(slot), None))
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread to re-raise
                results.put((None, exc))
                return

    threads = [threading.Thread(target=work, name=f"ragqual-trial-{i}", daemon=True)
               for i in range(min(workers, len(slots)))]
    for thread in threads:
        thread.start()
    try:
        for _ in range(len(slots)):
            done, failure = _next_result(results, sink.tick)
            if failure is not None:
                raise failure
            if done is not None:
                sink.add(done, trials.prepare(done))
    finally:
        stop.set()


def _next_result(results: queue.SimpleQueue, idle: Callable[[], None]) -> Any:
    """Wait in short slices so that Ctrl-C reaches the main thread promptly (and waiting trials
    are appended on time)."""
    while True:
        try:
            return results.get(timeout=_POLL_SECONDS)
        except queue.Empty:
            idle()


# -- the loop ----------------------------------------------------------------------------------------

def _start(store: RunStore, subject: Subject, plan: RunPlan, kind: str, argv: Sequence[str] | None,
           params: dict[str, Any], extras: dict[str, Any]) -> int:
    prompts = sorted({sha256_hex(p) for p in (subject.system_prompt_for(v) for v in plan.variants) if p})
    # the cases' hash only when the subject gives none of its own (the RAG subject hashes its goldens)
    dataset_hash = extras.pop("dataset_hash") if "dataset_hash" in extras else hash_value(
        [c.definition() for c in plan.cases])
    provenance = capture(argv=argv, params=params, prompt_hashes=prompts, dataset_hash=dataset_hash, **extras)
    return store.start_run(kind, subject.name, provenance)


def _check_plan(run_id: int, stored: dict[str, Any], plan: RunPlan) -> None:
    """A resumed run never holds trials outside the plan it started with."""
    asked = {"variants": [v.as_dict() for v in plan.variants], "case_ids": [c.id for c in plan.cases],
             "modes": list(plan.modes), "repeats": plan.repeats}
    differs = [key for key, value in asked.items() if key in stored and stored[key] != value]
    if differs:
        shown = "; ".join(f"{k}: stored {stored[k]!r:.80}, asked {asked[k]!r:.80}" for k in differs)
        raise InputError(f"run {run_id} was started with another plan ({shown}): resume it with its stored "
                         "plan (`--resume` without those flags) or start a new run")


def _resume(store: RunStore, subject: Subject, run_id: int, slots: Sequence[Slot], plan: RunPlan,
            worker: bool = False) -> set[SlotKey]:
    info = store.get_run(run_id)
    if info.subject != subject.name:
        raise InputError(f"run {run_id} is a run of subject {info.subject!r}, not {subject.name!r}")
    _check_plan(run_id, info.params, plan)
    finished = store.finished_slots(run_id)
    stale = finished - {s.key for s in slots}
    if stale:
        raise InputError(
            f"run {run_id} holds {len(stale)} trial(s) whose case or variant has changed since it started "
            "(a case, an assertion, an option or the model digest): start a new run instead of resuming")
    missing = sum(1 for s in slots if s.key not in finished)
    if worker:  # one `resumed` per worker that joins while slots are missing, none after the run's end
        store.add_worker_event(run_id, "resumed", json.dumps({"held": len(finished), "missing": missing,
                                                             "worker": True}), len(slots))
    else:
        store.add_event(run_id, "resumed", json.dumps({"held": len(finished), "missing": missing}))
    return finished


def run(
    subject: Subject,
    variants: Sequence[Variant],
    cases: Sequence[Case],
    *,
    store: RunStore,
    services: TrialServices,
    modes: Sequence[str] | None = None,
    repeats: int = 1,
    scorers: Sequence[Scorer] | None = None,
    max_concurrency: int = 1,
    resume_run_id: int | None = None,
    kind: str | None = None,
    argv: Sequence[str] | None = None,
    params: dict[str, Any] | None = None,
    provenance_extras: dict[str, Any] | None = None,
    progress: ProgressCallback | None = None,
    pricing: PriceList | None = None,
    worker: bool = False,
    batching: BatchPolicy | None = None,
) -> RunOutcome:
    """Run (or resume) every slot of `subject` over variants x cases x modes x repeats; with a
    price list, the run's trials are priced under its snapshot before the run's end event.
    Finished trials are appended in batches (`batching`, else `engine.batching.batch_policy()`).

    `worker`: this process is one of several sharing the run through a PostgreSQL history
    (ragqual.store.claims): it runs only the slots it claims, keeps claiming until no slot is
    missing, and the one worker that finds the run complete writes its single `finished`. A
    claim is released once the batch holding its trial is committed."""
    plan = RunPlan(list(variants), list(cases), list(modes if modes is not None else subject.modes), repeats)
    scorers = list(scorers) if scorers is not None else default_scorers()
    _validate(subject, plan, max_concurrency)
    if worker:
        require_shared(store.engine, _resume_command(subject))
    _check_replays(subject, plan, services)
    output_cap()  # a bad RAGQUAL_MAX_OUTPUT_BYTES is refused before the run starts
    policy = batching if batching is not None else batch_policy()  # so is a bad RAGQUAL_APPEND_BATCH
    variant_ids = _record_variants(store, subject, services, plan.variants)
    case_pks = _record_cases(store, subject, plan.cases)
    slots = _slots(plan, case_pks, variant_ids)
    if resume_run_id is None:
        full_params = _run_params(subject, plan, scorers, services, max_concurrency, params)
        extras = {**subject.provenance_extras(), **(provenance_extras or {})}
        run_id = _start(store, subject, plan, kind or subject.run_kind, argv, full_params, extras)
        finished: set[SlotKey] = set()
    else:
        run_id = resume_run_id
        finished = _resume(store, subject, run_id, slots, plan, worker)
    pending = [s for s in slots if s.key not in finished]
    if worker:
        return _execute(run_id, subject, services, store, scorers, pending, len(finished), max_concurrency,
                        progress, pricing, policy, shared=(SlotClaims(store.engine, run_id), slots))
    return _execute(run_id, subject, services, store, scorers, pending, len(finished), max_concurrency, progress,
                    pricing, policy)


def _execute(run_id: int, subject: Subject, services: TrialServices, store: RunStore,
             scorers: Sequence[Scorer], pending: list[Slot], skipped: int, max_concurrency: int,
             progress: ProgressCallback | None, pricing: PriceList | None = None,
             policy: BatchPolicy | None = None,
             shared: tuple[SlotClaims, Sequence[Slot]] | None = None) -> RunOutcome:
    claims, every_slot = shared if shared is not None else (None, pending)
    trials = _Trials(run_id, subject, services, store, scorers, claims)

    def end(event: str, detail: dict[str, Any]) -> None:
        if claims is not None:
            _end_worker(store, run_id, claims, event, detail, len(every_slot), pricing)
            return
        if pricing is not None and count[0]:
            if event == "finished":
                price_run(store, run_id, pricing, held.inputs(count[0]))
            else:  # the run's own failure is what to report; `ragqual reprice` can price it later
                with contextlib.suppress(Exception):
                    price_run(store, run_id, pricing)
        _end(store, run_id, event, detail)

    calls_before, hits_before = services.model_calls, services.cache_hits
    count = [0]

    held = _Priced(pricing is not None and claims is None and not skipped and store.seal)

    def after(done: _Done, trial_id: int) -> None:
        if claims is not None:  # committed: a worker taking the claim now sees the trial
            claims.release(done.slot.key)
        held.add(trial_id, done)
        count[0] += 1
        if progress is not None:
            first = done.record.scores[0].score if done.record.scores else None
            progress(Progress(run_id, count[0], len(pending), done.slot, trial_id, first, done.record.error))

    sink = _Appender(store, policy or BatchPolicy(), pending, after, _durable(services))

    def stored() -> int:
        """The trials this invocation stored, for a run that stops early. A Ctrl-C or SIGTERM can
        land between a batch's commit and the count of its trials (`after`), so a run that is this
        process's alone is counted in the history itself; a worker's run is shared, so a worker
        counts its own commits."""
        if claims is None:
            with contextlib.suppress(Exception):  # the run's own failure is what to report
                return len(store.finished_slots(run_id)) - skipped
        return sink.stored
    if progress is not None:
        progress(Progress(run_id, 0, len(pending)))

    def one_pass(slots: list[Slot]) -> None:
        if max_concurrency == 1 or len(slots) <= 1:
            _run_sequential(slots, trials, sink)
        else:
            _run_threaded(slots, trials, sink, max_concurrency)
        sink.flush()  # a pass ends committed: a worker's next look for missing slots sees its trials

    try:
        try:
            if claims is None:
                one_pass(pending)
            else:
                _claim_until_done(store, run_id, claims, pending, every_slot, one_pass)
        except KeyboardInterrupt:
            sink.flush_at_end()
            kept = stored()
            end("interrupted", {"trials_stored": kept, "of": len(pending)})
            raise RunInterrupted(run_id, kept, len(pending)) from None
        except CircuitOpen as exc:
            sink.flush_at_end()
            end("failed", {"trials_stored": stored(), "of": len(pending),
                           "error": f"{type(exc).__name__}: {exc}"})
            raise exc.for_run(run_id, _resume_command(subject)) from None
        except BaseException as exc:
            sink.flush_at_end()
            end("failed", {"trials_stored": stored(), "of": len(pending),
                           "error": f"{type(exc).__name__}: {exc}"})
            raise
        end("finished", {"trials_stored": count[0], "errors": trials.errors})
    finally:
        if claims is not None:  # a worker's claims live until its last trial and the run's end are written
            claims.close()
    return RunOutcome(run_id, "finished", count[0], skipped, trials.errors,
                      services.model_calls - calls_before, services.cache_hits - hits_before)


def _claim_until_done(store: RunStore, run_id: int, claims: SlotClaims, pending: list[Slot],
                      every_slot: Sequence[Slot], one_pass: Callable[[list[Slot]], None]) -> None:
    """Pass over the missing slots, running those this worker claims, until the run misses none
    (a slot another worker holds is looked at again: that worker may die and free it)."""
    while pending:
        claimed_before = claims.claimed
        one_pass(pending)
        held = store.finished_slots(run_id)
        pending = [s for s in every_slot if s.key not in held]
        if pending and claims.claimed == claimed_before:
            time.sleep(_CLAIM_POLL_SECONDS)


def _end_worker(store: RunStore, run_id: int, claims: SlotClaims, event: str, detail: dict[str, Any],
                slots: int, pricing: PriceList | None) -> None:
    """A worker's end: `finished` once, by the one worker holding the finishing claim when no slot
    is missing (it prices the run first); `interrupted` / `failed` only while slots are missing."""
    body = json.dumps({**detail, "worker": True}, sort_keys=True)
    if event != "finished":
        store.add_worker_event(run_id, event, body, slots)
        return
    with claims.finishing() as mine:
        if not mine or store.last_event(run_id) == "finished":
            return
        if pricing is not None:
            price_run(store, run_id, pricing)
        store.add_worker_event(run_id, "finished", body, slots)


def _resume_command(subject: Subject) -> str:
    return "ragqual generation" if subject.run_kind == "generation" else "ragqual run"


def _end(store: RunStore, run_id: int, event: str, detail: dict[str, Any]) -> None:
    store.add_event(run_id, event, json.dumps(detail, sort_keys=True))
