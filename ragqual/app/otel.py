"""OpenTelemetry in and out: read a run for `export --format otlp-json`, and turn an OTLP/JSON trace
file into an `answers:` file and draft goldens for `import-traces`. The mappings are pure
(ragqual.core.otlp, ragqual.core.otlp_in); this module only reads the history and writes files."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragqual import __version__
from ragqual.app.context import AppContext
from ragqual.core.diagnosis import doc_of
from ragqual.core.otlp import Evaluation, RetrievedDoc, TrialTrace, trace_request
from ragqual.core.otlp_in import Imported, parse_trace_file
from ragqual.errors import InputError


def _unix_nano(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _retrieved(raw: Any) -> tuple[RetrievedDoc, ...] | None:
    """The chunks an e2e trial injected, with their retrieval similarity (raw_output of the RAG subject)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("injected"), list):
        return None
    candidates = raw.get("candidates") or {}
    scores = dict(zip(candidates.get("ids") or [], candidates.get("similarities") or []))
    return tuple(RetrievedDoc(doc_of(str(c)), scores.get(c), str(c)) for c in raw["injected"])


def _evaluations(scorings: list[Any], metrics: list[tuple[str, float]]) -> tuple[Evaluation, ...]:
    out: list[Evaluation] = []
    if scorings:
        newest = scorings[-1]
        for s in newest.scores:
            out.append(Evaluation(s.scorer_name, s.score, "pass" if s.perfect else "fail",
                                  json.dumps(s.per_category, sort_keys=True)))
        for a in newest.assertions:
            out.append(Evaluation(f"assertion:{a.category}", 1.0 if a.passed else 0.0,
                                  "pass" if a.passed else "fail", a.detail or None))
    out += [Evaluation(name, value) for name, value in metrics]
    return tuple(out)


def _messages(rendered: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(rendered, list):
        return ()
    return tuple((str(m.get("role", "user")), str(m.get("content", ""))) for m in rendered if isinstance(m, dict))


def _answer(parsed: Any) -> str | None:
    if parsed is None:
        return None
    return parsed if isinstance(parsed, str) else json.dumps(parsed, ensure_ascii=False)


def run_traces(app: AppContext, run_id: int) -> list[TrialTrace]:
    """Every sealed trial of RUN_ID with its newest scoring and metric values, as TrialTrace."""
    from ragqual.store.queries import metric_rows
    from ragqual.store.trial_reads import run_scorings, run_trials, trial_detail

    store = app.store(auto_create=False)
    store.get_run(run_id)
    engine = store.engine
    scorings = run_scorings(engine, run_id)
    metrics: dict[int, list[tuple[str, float]]] = {}
    for trial_id, _case, _group, metric, value, _version in metric_rows(engine, run_id):
        if trial_id is not None and value is not None:
            metrics.setdefault(int(trial_id), []).append((str(metric), float(value)))
    out = []
    for stored in run_trials(engine, run_id):
        d = trial_detail(engine, stored.trial_id)
        raw = d.raw_output if isinstance(d.raw_output, dict) else {}
        backend: dict[str, Any] = raw["backend"] if isinstance(raw.get("backend"), dict) else {}
        out.append(TrialTrace(
            run_id=run_id, trial_id=d.trial_id, case_id=d.case_id, mode=d.mode, repeat_index=d.repeat_index,
            provider=d.provider, model=d.model, end_unix_nano=_unix_nano(d.created_at), latency_ms=d.latency_ms,
            options=dict(d.variant_config.get("options") or {}), response_model=backend.get("model"),
            prompt_tokens=d.prompt_tokens, completion_tokens=d.completion_tokens, error=d.error,
            system=d.system_prompt, messages=_messages(d.rendered_prompt), answer=_answer(d.parsed_output),
            retrieval_query=raw.get("retrievalQuery") or d.case_definition.get("query"),
            retrieved=_retrieved(raw) if d.mode == "e2e" else None,
            evaluations=_evaluations(scorings.get(d.trial_id, []), metrics.get(d.trial_id, [])),
        ))
    return out


def export_otlp(app: AppContext, run_id: int, path: Path, with_content: bool) -> int:
    """Write RUN_ID as one OTLP/JSON ExportTraceServiceRequest; returns the number of spans."""
    trials = run_traces(app, run_id)
    resource = {"service.name": "ragqual", "service.version": __version__, "ragqual.run.id": run_id}
    request = trace_request(trials, resource, __version__, with_content)
    text = json.dumps(request, ensure_ascii=False, indent=1) + "\n"
    write_atomically({path: text})
    return len(request["resourceSpans"][0]["scopeSpans"][0]["spans"])


def write_atomically(files: dict[Path, str]) -> None:
    """Write every file to a temporary name beside it, then rename them all: nothing half-written."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            staged.append((tmp, path))
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
    except OSError as exc:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write {exc.filename or ''}: {exc.strerror or exc}") from None
    for tmp, path in staged:
        os.replace(tmp, path)


def import_traces(path: Path, out: Path) -> Imported:
    """Read an OTLP/JSON trace file and write `answers.jsonl` and `goldens-draft.jsonl` into OUT."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    imported = parse_trace_file(str(path), data)
    lines = lambda rows: "".join(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n" for r in rows)  # noqa: E731
    write_atomically({out / "answers.jsonl": lines(imported.answers),
                      out / "goldens-draft.jsonl": lines(imported.drafts)})
    return imported
