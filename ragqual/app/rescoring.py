"""`rescore RUN`: which subject re-scores a stored run, and the rescoring itself.

The RAG subject's assertions are built from the goldens, so its rescoring re-reads them (the
project's goldens folder, or the one given): a golden whose `mustInclude` changed is checked
against the new patterns, and its metrics move with it. Other subjects come from the registry,
or are rebuilt from the run's stored case definitions when not installed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragqual.app.context import AppContext
from ragqual.config import Settings
from ragqual.engine.aggregate import RunSummary
from ragqual.engine.rescore import (
    Overrides,
    RescoreSummary,
    StoredSubject,
    load_assertion_overrides,
    predicate_registry,
    rescore,
)
from ragqual.engine.scorers import Scorer
from ragqual.engine.subject import Subject
from ragqual.store.runstore import RunStore
from ragqual.subjects import registry

RAG = "rag"


def rag_subject_from_goldens(settings: Settings, goldens_dir: str | Path | None = None,
                             corpus_dir: str | Path | None = None) -> Subject:
    """The RAG subject over the goldens as they are now (no retriever: rescoring calls nothing)."""
    from ragqual.adapters.files import read_corpus_and_goldens
    from ragqual.subjects.rag import RagSubject

    documents, goldens = read_corpus_and_goldens(settings.path("corpus", corpus_dir),
                                                 settings.path("goldens", goldens_dir))
    return RagSubject(goldens, documents)


def subject_for_rescore(name: str, settings: Settings, goldens_dir: str | Path | None = None) -> tuple[Subject, str | None]:
    """(subject, a note for the user or None)."""
    if name == RAG:
        where = settings.path("goldens", goldens_dir)
        return rag_subject_from_goldens(settings, goldens_dir), f"assertions re-read from the goldens in {where}"
    if registry.is_known(name):
        return registry.get_subject(name), None
    registry.load_check_kinds()
    return StoredSubject(name), (f"subject {name!r} is not in the registry here: each trial is rescored against "
                                 "its stored case definition")


def rescore_run(store: RunStore, run_id: int, settings: Settings, *, goldens_dir: str | Path | None = None,
                assertions_from: str | Path | None = None, scorers: Sequence[Scorer] | None = None,
                ) -> tuple[RescoreSummary, str | None]:
    info = store.get_run(run_id)
    subject, note = subject_for_rescore(info.subject or "", settings, goldens_dir)
    overrides: Overrides | None = None
    if assertions_from is not None:
        overrides = load_assertion_overrides(assertions_from, predicate_registry(subject.cases()))
    return rescore(store, run_id, subject, assertions_override=overrides, scorers=scorers), note


def rescore_stored(app: AppContext, run_id: int, scorer_name: str | None = None, *,
                   goldens_dir: str | Path | None = None, assertions_from: str | Path | None = None,
                   ) -> tuple[RescoreSummary, str | None, RunSummary]:
    """Rescore RUN_ID in the project's history (`ragqual rescore`): what changed, where the
    assertions came from, and the run's per-variant summary under the new scores."""
    from ragqual.engine.aggregate import summarise_run
    from ragqual.engine.scorers import get_scorer

    store = app.store(auto_create=False)
    scorers = [get_scorer(scorer_name)] if scorer_name else None
    result, note = rescore_run(store, run_id, app.settings, goldens_dir=goldens_dir,
                               assertions_from=assertions_from, scorers=scorers)
    return result, note, summarise_run(store.engine, run_id, result.scorers[0][0])
