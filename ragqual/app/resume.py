"""`--resume RUN_ID` keeps its word: the plan comes from the stored run, never from today's flags.

A resumed run holds only trials of the plan it started with. Every setting of that plan (models,
modes, repeats, the goldens chosen, retrieval strategy and k's, sampling options) is read from the
run's stored parameters; a flag given on the command line is checked against it: equal is fine,
different is refused (exit 2) naming the flag and the stored value; a flag left out is taken from
the run. The corpus fingerprint and the goldens hash must still be those the run started with.
A resumed run keeps its name and tags: `--name` or `--tag key=value` typed again must equal them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragqual.core.goldens import Golden, goldens_hash
from ragqual.core.runlabel import RunLabel, run_label
from ragqual.engine.subject import Variant
from ragqual.errors import InputError
from ragqual.pipeline.retrieval import RetrievalConfig
from ragqual.store.records import RunInfo


def refuse_conflicts(run_id: int, stored: Mapping[str, Any], given: Mapping[str, Any],
                     same: Callable[[Any, Any], bool] | None = None) -> None:
    """Raise one InputError naming every given flag whose value differs from the stored one.

    `stored` and `given` map a flag name (`--repeats`) to a value; only flags in `given` are checked."""
    equal = same or (lambda a, b: a == b)
    bad = [f"{flag} {_show(value)} (run {run_id} has {_show(stored.get(flag))})"
           for flag, value in given.items() if not equal(value, stored.get(flag))]
    if bad:
        raise InputError(f"--resume {run_id} continues the run with its stored plan; these flags conflict with it: "
                         f"{'; '.join(bad)}. Drop them (missing flags are taken from the run), or start a new run")


def _show(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        shown = ",".join(str(v) for v in value[:6]) + (f",... ({len(value)} in all)" if len(value) > 6 else "")
        return shown or "(none)"
    return "(none)" if value is None else str(value)


@dataclass(frozen=True)
class GenerationPlan:
    """Everything `ragqual generation` needs to run (or resume) a run."""

    variants: list[Variant]
    modes: list[str]
    repeats: int
    config: RetrievalConfig
    options: dict[str, Any]
    goldens: list[Golden]


OPTION_FLAGS = {"--temperature": "temperature", "--seed": "seed", "--num-ctx": "num_ctx", "--num-predict": "num_predict"}
RETRIEVAL_FLAGS = {"--strategy": "strategy", "--candidate-k": "candidate_k", "--context-k": "context_k",
                   "--threshold": "threshold"}
SELECTION = "--limit/--tag/--case/--split"  # the goldens a run chose, compared as a set of ids


def label_flags(label: RunLabel) -> dict[str, Any]:
    """A run's name and tags as the flags that set them (`--tag` as `key=value` texts)."""
    return {"--name": label.name, "--tag": [f"{k}={v}" for k, v in label.tags]}


def given_label_flags(name: str | None, run_tags: Sequence[str]) -> dict[str, Any]:
    """The label flags typed with `--resume` (validated), for the conflict check."""
    typed = label_flags(run_label(name, run_tags))
    return {flag: value for flag, value in typed.items() if value}


def stored_generation_flags(params: Mapping[str, Any]) -> dict[str, Any]:
    """The run's plan as flag -> value, for the conflict check."""
    retrieval = params.get("retrieval") or {}
    options = params.get("options") or {}
    flags: dict[str, Any] = {
        **label_flags(RunLabel.from_params(params)),
        "--model": [v["model"] for v in params.get("variants", [])],
        "--mode": list(params.get("modes", [])),
        "--repeats": params.get("repeats"),
        SELECTION: list(params.get("case_ids", [])),
        "--axis": list(params.get("axis_flags", [])),
    }
    flags.update({flag: retrieval.get(key, getattr(RetrievalConfig(), key)) for flag, key in RETRIEVAL_FLAGS.items()})
    flags.update({flag: options.get(key) for flag, key in OPTION_FLAGS.items()})
    return flags


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return sorted(map(str, a)) == sorted(map(str, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


def generation_resume_plan(info: RunInfo, given: Mapping[str, Any], goldens: Sequence[Golden],
                           selected: Callable[[], Sequence[Golden]] | None, fingerprint: str | None) -> GenerationPlan:
    """The stored plan of a generation run, with the given flags checked against it.

    `given`: flag -> value for the flags on the command line (the model list as the run would
    have built it, mock line included); `selected`: the goldens the selection flags pick, when any
    was given; `goldens`: every golden of the project now; `fingerprint`: the corpus's now."""
    if info.kind != "generation" or "variants" not in info.params or "case_ids" not in info.params:
        raise InputError(f"run {info.id} is a {info.kind} run, not one `ragqual generation` can resume")
    stored = stored_generation_flags(info.params)
    checked = dict(given)
    if selected is not None:
        checked[SELECTION] = [g.id for g in selected()]
    refuse_conflicts(info.id, stored, checked, _same)
    by_id = {g.id: g for g in goldens}
    missing = [cid for cid in stored[SELECTION] if cid not in by_id]
    if missing and all(_is_uuid(cid) for cid in missing):
        raise InputError(f"run {info.id} was started before each golden's id became its case id (migration 0005): "
                         "its trials cannot be continued under the new ids; start a new run")
    if missing:
        raise InputError(f"run {info.id} asked goldens that no longer exist: {', '.join(missing[:5])}"
                         f"{' ...' if len(missing) > 5 else ''}: start a new run")
    chosen = [by_id[cid] for cid in stored[SELECTION]]
    _same_inputs(info, chosen, fingerprint)
    params = info.params
    retrieval = {k: v for k, v in (params.get("retrieval") or {}).items() if k in RetrievalConfig.__dataclass_fields__}
    return GenerationPlan(
        variants=[Variant.from_dict(v) for v in params["variants"]], modes=list(params["modes"]),
        repeats=int(params["repeats"]), config=RetrievalConfig(**retrieval),
        options=dict(params.get("options") or {}), goldens=chosen,
    )


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
        return True
    except ValueError:
        return False


def _same_inputs(info: RunInfo, goldens: Sequence[Golden], fingerprint: str | None) -> None:
    if info.corpus_fingerprint and fingerprint and info.corpus_fingerprint != fingerprint:
        raise InputError(f"the corpus changed since run {info.id} started (fingerprint {info.corpus_fingerprint[:12]}, "
                         f"now {fingerprint[:12]}): its trials would mix two corpora; start a new run")
    now = goldens_hash(goldens)
    if info.dataset_hash and info.dataset_hash != now:
        raise InputError(f"the goldens of run {info.id} changed since it started (hash {info.dataset_hash[:12]}, "
                         f"now {now[:12]}): its trials would mix two sets of expectations; start a new run")


def subject_resume_flags(params: Mapping[str, Any]) -> dict[str, Any]:
    """A subject run's plan as flag -> value (`ragqual run --resume`)."""
    return {
        **label_flags(RunLabel.from_params(params)),
        "--model": [v["model"] for v in params.get("variants", [])],
        "--trial-count": params.get("repeats"),
        "--case-slugs": list(params.get("case_slugs", [])),
        "--mode": list(params.get("modes", [])),
        "--axis": list(params.get("axis_flags", [])),
    }
