"""The RAG generation subject: each golden answered in oracle, e2e and no-retrieval modes.

oracle       the golden's own documents injected verbatim (perfect retrieval by construction)
e2e          what the reference retrieval pipeline returns (multi-turn: after a query rewrite)
noretrieval  no context at all (the model's parametric baseline)
"""

from __future__ import annotations

import functools
import hashlib
import threading

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragqual.vocab import ChatRequest, ChatResponse
from ragqual.core import answer_metrics, textmatch
from ragqual.core.answer_patterns import PATTERNS_VERSION
from ragqual.core.diagnosis import document_recall, evidence_from, fact_coverage, reader_ceiling
from ragqual.core.corpus import Document
from ragqual.core.goldens import Golden
from ragqual.core.replies import without_copy
from ragqual.core.scoring import Outcome
from ragqual.engine.axes import Axis
from ragqual.engine.assertions import Assertion, RegexExcludes, RegexIncludes, TrialContext
from ragqual.engine.cases import Case
from ragqual.engine.services import TrialServices
from ragqual.engine.subject import (Subject, SubjectResult, Telemetry, Variant, rendered_messages, replay_telemetry,
                                    reply_text)
from ragqual.errors import InputError
from ragqual.pipeline import prompt
from ragqual.pipeline.retrieval import STRATEGIES, RetrievalConfig, Retriever
from ragqual.subjects.rag_checks import NoRetrievalNarration, NoThinkTags, RefusalBehaviour

MODES = ("oracle", "e2e", "noretrieval")
DEFAULT_OPTIONS = {"temperature": 0, "seed": 42}
RAG_METRICS_VERSION = 2
"""The meaning of the generation metrics (module `metrics_from_outcomes`), stored as each metric
row's `scorer_version`. Bump it when a metric's meaning changes: `rescore` then appends rows of the
new version, reports read them, and `--scorer-version` pins the old.

1  the first metrics (they used to re-run the golden's regexes beside the assertions; reading them
   from the assertion outcomes gave the same numbers, so the version stayed 1).
2  groundedness reads signed numbers and dates (`core.numbers` grammar 2); refusals are read clause
   by clause and the refusal, hedge, leakage and think-tag patterns grew (`core.answer_patterns` 2).
"""
CHECKS_VERSION = PATTERNS_VERSION
"""The version of the refusal, leakage and think-tag assertions: their patterns' version."""


HELD = 4096
"""Searches and requests a RAG subject remembers for the repeats of a run (`RagSubject._search`,
`_answer_request`); past that many they start afresh (a memo only saves work, never changes it)."""

_NS = uuid.UUID("b3f0e0c4-5d1a-4f8e-9a0b-6c2d7e8f9a10")
_NS_BYTES = _NS.bytes
_VARIANT = "89ab" * 4  # a hex digit's low two bits under RFC 4122's variant bits (10xx): the UUID's 17th digit


def uuid5_text(namespace: uuid.UUID, name: str) -> str:
    """`str(uuid.uuid5(namespace, name))` written straight from the SHA-1 digest's hex (`_uuid5_text`)."""
    return _uuid5_text(namespace.bytes, name)


def _uuid5_text(namespace: bytes, name: str) -> str:
    """The version digit set to 5 and the variant digit's top bits to 10, as `uuid.UUID(..., version=5)`
    sets them, without the two UUID objects and int round trips per id (a warm retrieval derives ~750
    ids); `namespace` as the UUID's 16 bytes."""
    h = hashlib.sha1(namespace + name.encode("utf-8")).hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[int(h[16], 16)]}{h[17:20]}-{h[20:32]}"


def _uid(*parts: str) -> str:
    return _uuid5_text(_NS_BYTES, "\x1f".join(parts))


def legacy_case_id(golden_id: str) -> str:
    """The uuid5 id the generation tier gave a golden before migration 0005 (`case_aliases`)."""
    return _uid(golden_id)


def golden_case(golden: Golden) -> Case:
    """A golden as an engine case. Its id is the golden's own id, the id the retrieval tier
    stores too, so one question has one identity in every table; assertion ids are derived from
    the golden id and the pattern, so they never drift. Remembered per golden and checks version
    (by value: a case is a function of those, and neither is changed after), so the case a run
    built is the one its decomposition's mock reader scores with (`whatif_run.mock_reader`), not
    a second build of it."""
    return _golden_case(golden, CHECKS_VERSION)


@functools.lru_cache(maxsize=HELD)
def _golden_case(golden: Golden, checks_version: int) -> Case:
    checks: list[Assertion] = []
    for pattern in golden.must_include:
        checks.append(Assertion(_uid(golden.id, "include", pattern), 1, f"includes /{pattern}/",
                                RegexIncludes(pattern), category="correctness"))
    for pattern in golden.must_not_include:
        checks.append(Assertion(_uid(golden.id, "exclude", pattern), 1, f"excludes /{pattern}/",
                                RegexExcludes(pattern), category="correctness"))
    checks.append(Assertion(_uid(golden.id, "refusal"), checks_version, "declines only out-of-corpus questions",
                            RefusalBehaviour(golden.expect_refusal), category="refusal"))
    checks.append(Assertion(_uid(golden.id, "leakage"), checks_version, "does not narrate retrieval",
                            NoRetrievalNarration(), category="leakage", weight=0))
    checks.append(Assertion(_uid(golden.id, "think"), checks_version, "no reasoning tags", NoThinkTags(),
                            category="think-tags", weight=0))
    return Case(id=golden.id, slug=golden.id, input=golden.to_json_dict(), assertions=tuple(checks),
                source=golden.source, tags=golden.tags, meta={"goldenId": golden.id})


def _add(a: int | float | None, b: int | float | None) -> Any:
    if a is None:
        return b
    return a if b is None else a + b


def _telemetry(responses: Sequence[ChatResponse]) -> Telemetry:
    total = Telemetry(None, None, None, None, None)
    for r in responses:
        total = Telemetry(_add(total.prompt_tokens, r.prompt_tokens), _add(total.completion_tokens, r.completion_tokens),
                          _add(total.latency_ms, r.latency_ms), _add(total.load_ms, r.load_ms), _add(total.cost, r.cost))
    return total


def rag_axes(options: dict[str, Any], config: RetrievalConfig) -> tuple[Axis, ...]:
    """The RAG subject's axes; their defaults are the subject's configured options and retrieval
    settings, so `--axis` varies what it names and keeps what the other flags set."""
    return (
        Axis("model", "str", "mock", "model", help="model URI: mock, ollama:<model>, openai:<url>#<model>"),
        Axis("temperature", "float", options.get("temperature", 0), "call", low=0, high=2, help="sampling temperature"),
        Axis("seed", "int", options.get("seed", 42), "call", low=0, help="sampling seed"),
        Axis("num_ctx", "int", options.get("num_ctx"), "call", low=256, nullable=True,
             help="context window in tokens (none: the server's default)"),
        Axis("num_predict", "int", options.get("num_predict"), "call", low=1, nullable=True,
             help="maximum answer tokens (none: no limit)"),
        Axis("prompt", "str", "v1", "prompt", choices=tuple(prompt.RAG_SYSTEM_PROMPTS), help="system prompt version"),
        Axis("strategy", "str", config.strategy, "retrieval", choices=STRATEGIES, help="retrieval strategy (e2e)"),
        Axis("context_k", "int", config.context_k, "retrieval", low=1, high=100, help="chunks given to the model (e2e)"),
        Axis("candidate_k", "int", config.candidate_k, "retrieval", low=1, high=1000, help="candidates ranked (e2e)"),
        Axis("threshold", "float", config.threshold, "retrieval", low=-1, high=1, nullable=True,
             help="dense similarity cut-off for the context (e2e; none: no cut-off)"),
    )


def _fresh(candidates: dict[str, Any]) -> dict[str, Any]:
    """The candidate lists (`RagSubject._search`, which holds them as tuples) as lists a trial may
    keep as its own."""
    others = candidates["byStrategy"]
    return {"ids": list(candidates["ids"]), "similarities": list(candidates["similarities"]),
            "byStrategy": {name: {"ids": list(c["ids"]), "similarities": list(c["similarities"])}
                           for name, c in others.items()}}


@functools.lru_cache(maxsize=HELD)
def _other_configs(config: RetrievalConfig) -> tuple[RetrievalConfig, ...]:
    """`config` with each other strategy, in `STRATEGIES` order (a function of its frozen value,
    remembered: `RagSubject._other_strategies` asks once per searched question)."""
    return tuple(config.with_(strategy=strategy) for strategy in STRATEGIES if strategy != config.strategy)


class RagSubject(Subject):
    name = "rag"
    system_prompt = prompt.RAG_SYSTEM_PROMPT
    modes = MODES
    run_kind = "generation"
    prompt_versions = prompt.RAG_SYSTEM_PROMPTS

    def __init__(self, goldens: Sequence[Golden], documents: Sequence[Document],
                 retriever: Callable[[], Retriever] | None = None,
                 retrieval_config: RetrievalConfig | None = None, options: dict[str, Any] | None = None,
                 provenance: dict[str, Any] | None = None, known_ids: Sequence[str] | None = None):
        self.goldens = {g.id: g for g in goldens}
        self._known_ids = set(known_ids) if known_ids is not None else set(self.goldens)
        self.texts = {d.doc_id: d.text for d in documents}
        self._retriever_factory = retriever
        self._retriever: Retriever | None = None
        self._retriever_lock = threading.Lock()
        self._requests: dict[tuple[str, str, str, int], tuple[Variant, ChatRequest, list[dict[str, str]]]] = {}
        self._e2e: dict[tuple[str, RetrievalConfig], tuple[tuple[str, ...], tuple[str, ...], dict[str, Any]]] = {}
        self.retrieval_config = retrieval_config or RetrievalConfig()
        self.options = {**DEFAULT_OPTIONS, **(options or {})}
        self._provenance = provenance or {}
        self.axes = rag_axes(self.options, self.retrieval_config)

    def retrieval_config_for(self, variant: Variant) -> RetrievalConfig:
        """The retrieval settings of a variant: its `retrieval` axes over the subject's own."""
        chosen = {a.name: variant.axes[a.name] for a in self.axes if a.enters == "retrieval" and a.name in variant.axes}
        return self.retrieval_config.with_(**chosen) if chosen else self.retrieval_config

    def cases(self) -> list[Case]:
        return [golden_case(g) for g in self.goldens.values()]

    def provider_options(self, variant: Variant) -> dict[str, Any]:
        return {**self.options, **variant.options}

    def provenance_extras(self) -> dict[str, Any]:
        return dict(self._provenance)

    def retriever(self) -> Retriever:
        """Built on first use, once, even when several trials ask at the same moment."""
        with self._retriever_lock:
            if self._retriever is None:
                if self._retriever_factory is None:
                    raise InputError("e2e mode needs the retrieval pipeline, and none was configured")
                self._retriever = self._retriever_factory()
            return self._retriever

    def golden(self, case: Case) -> Golden:
        return self.goldens[case.id]

    def _passages(self, golden: Golden, mode: str, query: str,
                  config: RetrievalConfig) -> tuple[list[str], list[str], dict[str, Any] | None]:
        """(passages, chunk or document ids, the e2e candidate list) for a mode. The candidates
        (ids and dense similarities in rank order) are what `ragqual whatif` recomputes other
        thresholds and context sizes from, with no new search."""
        if mode == "oracle":
            return [self.texts[d] for d in golden.relevant_doc_ids], list(golden.relevant_doc_ids), None
        if mode == "e2e":
            found = self._e2e.get((query, config))
            if found is None:
                if len(self._e2e) >= HELD:
                    self._e2e.clear()
                found = self._e2e.setdefault((query, config), self._search(query, config))
            passages, ids, candidates = found
            return list(passages), list(ids), _fresh(candidates)
        if mode == "noretrieval":
            return [], [], None
        raise InputError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")

    def _search(self, query: str, config: RetrievalConfig) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, Any]]:
        """What e2e retrieval hands a trial for `query` under `config`: its passages, their chunk
        ids and the candidate lists. Remembered per (query, settings) for the subject's life, so
        the repeats and variants of a run search once: the index does not change under a run.
        Each trial gets its own copy of the lists (`_fresh`)."""
        retriever = self.retriever()
        found = retriever.retrieve(query, config)
        candidates: dict[str, Any] = {"ids": found.ranking.chunk_ids, "similarities": found.ranking.similarities}
        candidates["byStrategy"] = self._other_strategies(retriever, query, config)
        return (tuple(found.texts[r.chunk_id] for r in found.context), tuple(r.chunk_id for r in found.context),
                candidates)

    def _other_strategies(self, retriever: Retriever, query: str,
                          config: RetrievalConfig) -> dict[str, dict[str, Any]]:
        """Every other strategy's candidate list for the same query (BM25 and the fusion run in
        process, the dense search is shared): what `ragqual whatif --strategy` reads, so a strategy
        counterfactual needs no new search. Only their rankings are read (`Retriever.ranking`)."""
        out: dict[str, dict[str, Any]] = {}
        for other in _other_configs(config):
            ranking = retriever.ranking(query, other)
            out[other.strategy] = {"ids": ranking.chunk_ids, "similarities": ranking.similarities}
        return out

    def run_one(self, case: Case, variant: Variant, mode: str, repeat_index: int,
                services: TrialServices) -> SubjectResult:
        golden = self.golden(case)
        options = self.provider_options(variant)
        responses: list[ChatResponse] = []
        query, rewrite = golden.query, None
        if mode == "e2e" and golden.turns:
            response, _, _ = services.call(variant, prompt.rewrite_request(golden, options), repeat_index)
            responses.append(response)
            rewrite = response.text.strip() or golden.query
            query = rewrite
        passages, ids, candidates = self._passages(golden, mode, query, self.retrieval_config_for(variant))
        request, rendered = self._answer_request(golden, mode, query, variant, passages, options)
        response, key, hit = services.call(variant, request, repeat_index)
        responses.append(response)
        raw = {**without_copy(response.text, response.raw),
               "retrievalQuery": query, "rewrite": rewrite, "injected": ids}
        if candidates is not None:
            raw["candidates"] = candidates
        return SubjectResult(
            output=response.text, raw=raw, telemetry=_telemetry(responses),
            rendered_prompt=rendered, context="\n\n".join(passages),
            cache_key=key, cache_hit=hit, system_prompt=request.system,
        )

    def _answer_request(self, golden: Golden, mode: str, query: str, variant: Variant, passages: Sequence[str],
                        options: dict[str, Any]) -> tuple[ChatRequest, list[dict[str, str]]]:
        """`prompt.answer_request` for a trial and its rendered messages (`rendered_messages`), the
        same objects for every repeat of the same question, mode, search query and variant (its
        passages follow from those, `_passages`), so the response-cache key of its repeats encodes
        the request once (`TrialServices.cache_key`) and the run store its rendered prompt once
        (`RunStore`, which encodes a rendered prompt once per object). Neither is changed after."""
        key = (golden.id, mode, query, id(variant))
        held = self._requests.get(key)
        if held is not None and held[0] is variant:
            return held[1], held[2]
        request = prompt.answer_request(golden, passages, options, self.system_prompt_for(variant))
        rendered = rendered_messages(request)
        if len(self._requests) >= HELD:
            self._requests.clear()
        self._requests[key] = (variant, request, rendered)
        return request, rendered

    def planned_keys(self, case: Case, variant: Variant, mode: str, repeat_index: int,
                     services: TrialServices) -> list[str] | None:
        """Known ahead for oracle and noretrieval; an e2e trial's context is what retrieval finds."""
        if mode == "e2e":
            return None
        golden = self.golden(case)
        passages = self._passages(golden, mode, golden.query, self.retrieval_config_for(variant))[0]
        request = prompt.answer_request(golden, passages, self.provider_options(variant), self.system_prompt_for(variant))
        return [services.cache_key(variant, request, repeat_index)]
    def known_case_ids(self) -> set[str]:
        """Every golden of the project, not only those this run selected."""
        return set(self._known_ids)

    def replay_one(self, case: Case, variant: Variant, mode: str, services: TrialServices) -> SubjectResult:
        """An answer produced elsewhere (`answers:`). Its context is the file's when the line gives
        one (document ids, when every chunk names one, become the injected ids the context metrics
        read); otherwise the pipeline's context for the mode (e2e: what the reference retrieval
        returns for the question; oracle: the golden's documents; noretrieval: none), which is
        what groundedness is then measured against."""
        golden = self.golden(case)
        answers, entry = services.replayed(variant, case.id, mode)
        raw: dict[str, Any] = {"message": {"role": "assistant", "content": entry.answer}, **answers.provenance(entry)}
        if entry.context is not None:
            passages = [c.text for c in entry.context]
            raw["contextFrom"] = "answers"
            if passages and all(c.doc_id for c in entry.context):
                raw["injected"] = [c.doc_id for c in entry.context]
        else:
            passages, ids, candidates = self._passages(golden, mode, golden.query, self.retrieval_config_for(variant))
            raw.update({"contextFrom": "pipeline", "retrievalQuery": golden.query, "injected": ids})
            if candidates is not None:
                raw["candidates"] = candidates
        return SubjectResult(output=entry.answer, raw=raw, telemetry=replay_telemetry(entry), rendered_prompt=None,
                             context="\n\n".join(passages), cache_key=None, cache_hit=False)

    def parse(self, raw: Any) -> Any:
        return reply_text(raw)

    def mock_reply(self, request: ChatRequest) -> str:
        return prompt.mock_reply(request)

    metrics_version = RAG_METRICS_VERSION
    pure_scoring = True  # the metrics read the answer, context, raw response and outcomes only

    def derive_metrics(self, case: Case, mode: str, output: Any, context: str | None,
                       outcomes: Sequence[Outcome], raw: Any = None) -> dict[str, float | None]:
        golden = case.input or {}
        metrics = metrics_from_outcomes(bool(golden.get("expectRefusal")), outcomes, str(output or ""), context or "")
        if mode == "e2e":
            metrics.update(context_metrics(golden, raw, context or ""))
        return metrics




def metrics_from_outcomes(expect_refusal: bool, outcomes: Sequence[Outcome], answer: str,
                          context: str) -> dict[str, float | None]:
    """The deterministic generation metrics of one answer, from its assertion outcomes.

    correctness         every `correctness` assertion (mustInclude / mustNotInclude) passed;
                        on an out-of-corpus question, the `refusal` assertion (it declined)
    refusalCorrectness  the `refusal` assertion passed
    leakage             the `leakage` assertion failed (1.0 = the answer narrates retrieval)
    thinkTagLeak        the `think-tags` assertion failed
    groundedness        share of the answer's figures (numbers of magnitude above 10, dates) found
                        in the context (no assertion; `core.numbers`)
    A category with no outcome gives None.
    """
    by: dict[str, list[bool]] = {}
    for o in outcomes:
        by.setdefault(o.category, []).append(o.counts_as_passed)

    def all_passed(category: str) -> float | None:
        return float(all(by[category])) if category in by else None

    def failed(category: str) -> float | None:
        return None if category not in by else float(not all(by[category]))

    return {
        "correctness": _correctness(expect_refusal, by),
        "refusalCorrectness": all_passed("refusal"),
        "leakage": failed("leakage"),
        "groundedness": answer_metrics.groundedness(answer, context),
        "thinkTagLeak": failed("think-tags"),
    }


def _correctness(expect_refusal: bool, by: Mapping[str, Sequence[bool]]) -> float | None:
    """`correctness` from the passes of each assertion category (the one rule)."""
    if expect_refusal:
        return float(all(by["refusal"])) if "refusal" in by else None
    return float(all(by.get("correctness", [])))


def correctness_category(expect_refusal: bool) -> str:
    """The one assertion category `correctness` reads: declining on an out-of-corpus question,
    the mustInclude / mustNotInclude patterns otherwise."""
    return "refusal" if expect_refusal else "correctness"


def context_metrics(golden: dict[str, Any], raw: Any, context: str) -> dict[str, float | None]:
    """What retrieval handed the model in an e2e trial, from the injected ids its raw response keeps.

    contextRecall  share of the golden's relevant documents with a chunk in the context (the
                   retrieval tier's metric of the same name, measured on the trial itself)
    factCoverage   share of the golden's mustInclude facts found in the context
    readerCeiling  1 when a perfect reader could pass on this context (`core.diagnosis.reader_ceiling`)
    None where the golden has no relevant documents or facts (out-of-corpus questions), or the
    raw response does not say what was injected (a trial stored before these metrics existed).
    """
    if not isinstance(raw, dict) or "injected" not in raw:
        return {}
    evidence = evidence_from(golden, raw, context, answer="")
    return {"contextRecall": document_recall(evidence), "factCoverage": fact_coverage(evidence, textmatch.found),
            "readerCeiling": float(reader_ceiling(evidence, textmatch.found))}


def answer_scores(golden: Golden, answer: str, context: str) -> dict[str, float | None]:
    """The generation metrics of one answer, through the same assertions a run evaluates."""
    from ragqual.engine.scorers import evaluate_all

    case = golden_case(golden)
    outcomes = [e.outcome for e in evaluate_all(case.assertions, answer, TrialContext(case=case, context=context))]
    return metrics_from_outcomes(golden.expect_refusal, outcomes, answer, context)


def answer_correctness(golden: Golden, answer: str, context: str, case: Case | None = None) -> float | None:
    """`answer_scores(golden, answer, context)["correctness"]`, evaluating only the assertions it
    reads (`case`: the golden's case, when the caller built it once), and of those only up to the
    first that fails: `correctness` is all of them passing, so the rest cannot change it."""
    from ragqual.engine.scorers import evaluate

    case = case or golden_case(golden)
    wanted = correctness_category(golden.expect_refusal)
    checks = [a for a in case.assertions if a.category == wanted]
    if not checks:
        return _correctness(golden.expect_refusal, {})
    ctx = TrialContext(case=case, context=context)
    passed = all(evaluate(a, answer, ctx).outcome.counts_as_passed for a in checks)
    return _correctness(golden.expect_refusal, {wanted: [passed]})
