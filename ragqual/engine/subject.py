"""The subject contract: the one seam between the trial loop and the thing under test.

A subject bundles a system prompt, its cases, how to build variants from model URIs, and how to
run one trial. The default `run_one` covers the common shape (one chat call per trial): a subject
then only writes `build_request` and `parse`. A subject with more steps (retrieval, then a prompt,
then a call) overrides `run_one` and still reports its output, raw response and telemetry in a
`SubjectResult`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragqual.vocab import ChatMessage, ChatRequest, ChatResponse
from ragqual.core.replies import answer_in
from ragqual.core.scoring import Outcome
from ragqual.engine import axes as axes_mod
from ragqual.engine.axes import Axis
from ragqual.engine.cases import Case
from ragqual.errors import InputError, RagqualError

if TYPE_CHECKING:
    from ragqual.engine.services import TrialServices


class SubjectContractError(RagqualError):
    """A subject broke its contract (no telemetry, a non-JSON output...): a bug, not bad luck."""


@dataclass(frozen=True)
class Variant:
    """One model configuration: a model URI ("mock", "ollama:<model>"...), options, prompt override,
    and, for a variant built from the subject's declared axes, every axis's value (`axes`): they
    are stored with the variant and enter its cache key (`engine.services`)."""

    name: str
    model: str
    options: dict[str, Any] = field(default_factory=dict)
    system_prompt: str | None = None
    axes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or not self.model:
            raise InputError(f"a variant needs a name and a model URI, got {self.name!r} / {self.model!r}")

    @property
    def provider(self) -> str:
        return self.model.split(":", 1)[0]

    def as_dict(self) -> dict[str, Any]:
        """The variant as JSON; `axes` only when it has some, so runs stored before axes read the same."""
        data = {"name": self.name, "model": self.model, "options": dict(self.options),
                "system_prompt": self.system_prompt}
        return {**data, "axes": dict(self.axes)} if self.axes else data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Variant:
        return cls(name=data["name"], model=data["model"], options=dict(data.get("options") or {}),
                   system_prompt=data.get("system_prompt"), axes=dict(data.get("axes") or {}))


@dataclass(frozen=True)
class Telemetry:
    """What one trial's chat call cost: tokens, latency, model load time and money (None when unknown)."""

    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float | None
    load_ms: float | None = None
    cost: float | None = None

    @classmethod
    def from_response(cls, response: ChatResponse) -> Telemetry:
        return cls(response.prompt_tokens, response.completion_tokens, response.latency_ms,
                   response.load_ms, response.cost)


@dataclass(frozen=True)
class SubjectResult:
    """What one trial produced. `system_prompt` overrides the variant's when the subject built its own."""

    output: Any
    raw: Any
    telemetry: Telemetry | None
    rendered_prompt: Any
    context: str | None = None
    cache_key: str | None = None
    cache_hit: bool = False
    system_prompt: str | None = None


def rendered_messages(request: ChatRequest) -> list[dict[str, str]]:
    """The turns sent to the model, system prompt excluded (it is stored once, by hash)."""
    return [{"role": m.role, "content": m.content} for m in request.messages]


class Subject:
    """Base class of every subject; override what differs from the one-chat-call default."""

    name: str = ""
    system_prompt: str = ""
    modes: tuple[str, ...] = ("",)
    run_kind: str = "subject"
    axes: tuple[Axis, ...] = ()
    """What may be varied (`engine.axes`): the CLI's `--axis`, the picker and the cache key read it."""
    prompt_versions: Mapping[str, str] = {}
    """System prompts by version, for an axis that `enters="prompt"` (its values are these keys)."""

    # -- what to run -----------------------------------------------------------------------
    def cases(self) -> list[Case]:
        raise NotImplementedError(f"subject {self.name!r} must define cases()")

    def default_variants(self, models: Sequence[str]) -> list[Variant]:
        """One variant per model URI, named after it."""
        return [Variant(name=uri, model=uri) for uri in models]

    def axis_variants(self, chosen: Mapping[str, Sequence[Any]]) -> list[Variant]:
        """One variant per combination of the chosen axis values (`engine.axes.cross`), each
        carrying every declared axis's value; `chosen` is validated against `axes` first."""
        checked = axes_mod.validate_choice(chosen, self.axes, self.name)
        models = axes_mod.of_kind(self.axes, "model")
        model_axis = models[0].name if models else None
        prompts = axes_mod.of_kind(self.axes, "prompt")
        variants = []
        for values in axes_mod.cross(checked, self.axes):
            prompt = values.get(prompts[0].name) if prompts else None
            variants.append(Variant(
                name=axes_mod.variant_name(values, list(checked), model_axis),
                model=str(values[model_axis]) if model_axis else "mock",
                options=axes_mod.call_options(values, self.axes),
                system_prompt=self.prompt_versions[prompt] if prompt is not None else None,
                axes=values,
            ))
        return variants

    def provider_options(self, variant: Variant) -> dict[str, Any]:
        """Sampling options sent with every request; keep this stable, it is in the cache key."""
        return dict(variant.options)

    def system_prompt_for(self, variant: Variant) -> str:
        return self.system_prompt if variant.system_prompt is None else variant.system_prompt

    # -- one trial -------------------------------------------------------------------------
    def build_request(self, case: Case, variant: Variant, mode: str) -> ChatRequest:
        """The chat request for one trial (the default `run_one` sends it)."""
        return ChatRequest(
            system=self.system_prompt_for(variant),
            messages=(ChatMessage("user", str(case.input)),),
            options=self.provider_options(variant),
        )

    def run_one(
        self, case: Case, variant: Variant, mode: str, repeat_index: int, services: TrialServices
    ) -> SubjectResult:
        request = self.build_request(case, variant, mode)
        response, key, hit = services.call(variant, request, repeat_index)
        return SubjectResult(
            output=self.parse(response.raw), raw=response.raw,
            telemetry=Telemetry.from_response(response), rendered_prompt=rendered_messages(request),
            context=None, cache_key=key, cache_hit=hit, system_prompt=request.system,
        )

    def planned_keys(self, case: Case, variant: Variant, mode: str, repeat_index: int,
                     services: TrialServices) -> list[str] | None:
        """The response-cache keys a trial will ask for, known before it runs (the picker counts
        the expected cache hits with them); None when they depend on what the trial finds (a
        subject with its own `run_one` that does not say)."""
        if type(self).run_one is not Subject.run_one:
            return None
        return [services.cache_key(variant, self.build_request(case, variant, mode), repeat_index)]
    def known_case_ids(self) -> set[str]:
        """Every case id an answers file may name (a run may select fewer)."""
        return {c.id for c in self.cases()}

    def replay_one(self, case: Case, variant: Variant, mode: str, services: TrialServices) -> SubjectResult:
        """A trial whose answer was produced elsewhere (`answers:` model): the file's answer as the
        raw response, with where it came from; its context when the file gives one. No model call."""
        answers, entry = services.replayed(variant, case.id, mode)
        raw = {"message": {"role": "assistant", "content": entry.answer}, **answers.provenance(entry)}
        context = None if entry.context is None else "\n\n".join(c.text for c in entry.context)
        return SubjectResult(output=self.parse(raw), raw=raw, telemetry=replay_telemetry(entry),
                             rendered_prompt=None, context=context, cache_key=None, cache_hit=False)

    def parse(self, raw: Any) -> Any:
        """Rebuild the output from a stored raw response (used again, offline, by rescore).

        It must accept any text a model may produce: return an output the assertions fail on
        (a None label, say) rather than raising, since an exception here stops the run.
        """
        raise NotImplementedError(f"subject {self.name!r} must define parse()")

    def mock_reply(self, request: ChatRequest) -> str:
        """The deterministic answer of the `mock` model for this subject."""
        raise NotImplementedError(f"subject {self.name!r} has no mock model")

    def extra_metrics(self, case: Case, mode: str, output: Any, result: SubjectResult) -> dict[str, float | None]:
        """Optional per-trial numbers, stored in metric_values."""
        return {}

    pure_scoring: bool = False
    """Whether `derive_metrics` is a function of its arguments alone (no clock, no randomness, no
    outside state). With it, the trial loop scores a repeat whose answer, context and raw response
    equal an earlier trial's of the same case, variant and mode only once, when every check of the
    case is pure as well (a check class's `pure = True`)."""

    metrics_version: int = 1
    """Version of `derive_metrics`, stored as `metric_values.scorer_version`; bump it when a
    metric's meaning changes, so that reports can tell the old numbers from the new."""

    def derive_metrics(self, case: Case, mode: str, output: Any, context: str | None,
                       outcomes: Sequence[Outcome], raw: Any = None) -> dict[str, float | None]:
        """The trial's metric rows, from what is stored: its output, its raw response, its context
        and its assertion outcomes. The trial loop and `rescore` both call this, so a rescoring
        recomputes the metrics exactly as a run computes them. The default asks `extra_metrics`."""
        result = SubjectResult(output=output, raw=raw, telemetry=None, rendered_prompt=None, context=context)
        return self.extra_metrics(case, mode, output, result)

    def provenance_extras(self) -> dict[str, Any]:
        """Extra provenance for the run row (corpus_fingerprint, dataset_hash...)."""
        return {}


def replay_telemetry(entry: Any) -> Telemetry:
    """What an answers file says of one answer's cost (tokens, latency; None where it is silent)."""
    return Telemetry(entry.prompt_tokens, entry.completion_tokens, entry.latency_ms)


def reply_text(raw: Any) -> str:
    """The assistant's text from a raw chat response or a stored raw output, in any layout the
    history holds (ragqual.core.replies)."""
    text = answer_in(raw)
    if text is None:
        raise SubjectContractError(f"the stored raw response has no message text: {str(raw)[:120]!r}")
    return text
