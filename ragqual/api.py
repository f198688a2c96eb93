"""The Python API: the history as pandas DataFrames, and a project's runs as the CLI's commands.

    import ragqual

    history = ragqual.open_history()          # the project's eval-results/eval.db, like the CLI
    runs = history.runs()                     # one row per run, oldest first
    trials = history.trials(int(runs.run_id.iloc[-1]))

`ragqual.Project(path)` is a project folder (its `[tool.ragqual]` settings, its history) and the
operations the CLI offers on it, with the same names, options and defaults: `ingest()`,
`retrieval(**options)`, `generation(**options)`, `eval(**options)`, `compare(base, new, **options)`,
`report(run_id)`, `rescore(run_id)` and `history()`. Each run returns a result with its `run_id`,
a `summary` and `.to_frame()`; the CLI commands are these calls plus printing. A run takes a
`name="..."` and `run_tags={"key": "value"}` (or `["key=value"]`), as `--name` and `--tag key=value`;
`tags` selects goldens, as `--tag T` does.

Every per-run frame carries the run's provenance columns (`run_id`, `git_sha`, `git_dirty`,
`corpus_fingerprint`, `dataset_hash`, `ragqual_version`), so frames of several runs can be
concatenated and still say where each row came from. Reading never writes: a database that does
not exist is refused (InputError naming the path), not created.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from ragqual.app.comparison import Comparison
    from ragqual.app.context import AppContext
    from ragqual.app.corpus import CorpusOptions
    from ragqual.app.run_report import Report
    from ragqual.config import Settings
    from ragqual.engine.rescore import RescoreSummary
    from ragqual.store.records import RunInfo
    from ragqual.store.runstore import RunStore

PROVENANCE_COLUMNS = ("run_id", "git_sha", "git_dirty", "corpus_fingerprint", "dataset_hash", "ragqual_version")
SCORE_COLUMNS = ["trial_id", "case_id", "variant", "mode", "repeat_index", "batch", "scored_at", "scorer_name",
                 "scorer_version", "score", "perfect", "per_category"]
ASSERTION_COLUMNS = ["trial_id", "case_id", "variant", "mode", "repeat_index", "batch", "scored_at", "assertion_id",
                     "assertion_version", "category", "weight", "passed", "detail"]


def open_history(url: str | None = None) -> History:
    """The history at `url` (a SQLAlchemy URL or a SQLite file path); by default the one the CLI
    uses here: RAGQUAL_DB, `db` in `[tool.ragqual]`, or the project's eval-results/eval.db."""
    from ragqual.config import Settings
    from ragqual.store.db import normalise_url

    resolved = normalise_url(url) if url else Settings.load().db_url()
    return History(_existing_store(resolved))


def _existing_store(url: str) -> RunStore:
    """The store at `url`, never created (a missing SQLite file is an InputError naming it)."""
    from ragqual.store.db import require_existing
    from ragqual.store.runstore import RunStore

    require_existing(url)
    return RunStore.open(url, auto_create=False)


@dataclass(frozen=True)
class RescoreResult:
    """What `Project.rescore` did: the counts `ragqual rescore` prints, and where the subject's
    assertions came from (`note`, None when from the registry)."""

    run_id: int
    summary: RescoreSummary
    note: str | None
    url: str

    def to_frame(self) -> pd.DataFrame:
        """The run's trials with their newest scores (this rescoring's)."""
        with open_history(self.url) as history:
            return history.trials(self.run_id)


@dataclass(frozen=True)
class RunResult:
    """A run appended to the history by `Project.retrieval/generation`: its id, kind, summary
    (the numbers the CLI prints) and `.to_frame()` (its metric rows, or its trials)."""

    run_id: int
    kind: str
    summary: dict[str, Any]
    url: str

    def to_frame(self) -> pd.DataFrame:
        with open_history(self.url) as history:
            return history.metrics(self.run_id) if self.kind == "retrieval" else history.trials(self.run_id)


@dataclass(frozen=True)
class EvalResult:
    """`Project.eval()`: the retrieval and generation runs of the main job."""

    retrieval: RunResult
    generation: RunResult

    @property
    def run_id(self) -> int:
        return self.generation.run_id

    @property
    def summary(self) -> dict[str, Any]:
        return {"retrieval": self.retrieval.summary, "generation": self.generation.summary}

    def to_frame(self) -> pd.DataFrame:
        return self.generation.to_frame()


@dataclass(frozen=True)
class IngestResult:
    """`Project.ingest()`: what was written to the eval points and the corpus snapshot row."""

    fingerprint: str
    documents: int
    chunks: int
    snapshot_id: int
    chunks_per_document: dict[str, int]

    @property
    def summary(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "documents": self.documents, "chunks": self.chunks}

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(sorted(self.chunks_per_document.items()), columns=["doc_id", "chunks"])


@dataclass(frozen=True)
class CompareResult:
    """`Project.compare(base, new)`: the comparison (rows with verdicts, flips, notes)."""

    comparison: Comparison

    @property
    def regressions(self) -> list[str]:
        return [f"{r.group} {r.metric}" for r in self.comparison.regressions]

    @property
    def summary(self) -> dict[str, Any]:
        return {f"{r.group} {r.metric}": r.verdict for r in self.comparison.rows}

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([asdict(r) for r in self.comparison.rows])


def _split_options(options: dict[str, Any]) -> tuple[CorpusOptions, dict[str, Any]]:
    """The corpus options (--corpus, --goldens, --embedder...) apart from the command's own; a list
    given for a repeatable option becomes the tuple the option classes hold."""
    from dataclasses import fields

    from ragqual.app.corpus import CorpusOptions

    names = {f.name for f in fields(CorpusOptions)}
    corpus = CorpusOptions(**{k: v for k, v in options.items() if k in names})
    rest = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items() if k not in names}
    tags = options.get("run_tags")
    if isinstance(tags, dict):
        rest["run_tags"] = _tag_texts(tags)
    return corpus, rest


def _tag_texts(tags: dict[str, str]) -> tuple[str, ...]:
    """`run_tags={"dataset": "v2"}` as the `key=value` texts `--tag` takes (checked first)."""
    from ragqual.core.runlabel import run_label

    return tuple(f"{k}={v}" for k, v in run_label(None, tags).tags)


class Project:
    """A project folder: its `[tool.ragqual]` settings (corpus, goldens, db...) and its history,
    resolved as the CLI resolves them when run in that folder."""

    def __init__(self, path: str | Path = ".") -> None:
        from ragqual.config import Settings

        self.path = Path(path).resolve()
        self.settings: Settings = Settings.load(self.path)

    def __repr__(self) -> str:
        return f"Project({str(self.path)!r})"

    @property
    def db_url(self) -> str:
        return self.settings.db_url()

    def history(self) -> History:
        return History(_existing_store(self.db_url))

    def _app(self) -> AppContext:
        from ragqual.app.context import AppContext

        return AppContext(self.settings, None, "auto", 0, True)

    def _run(self, fn: Any) -> Any:
        app = self._app()
        try:
            return fn(app)
        finally:
            app.close()

    def ingest(self, **options: Any) -> IngestResult:
        """Rebuild the eval points from the corpus, as `ragqual corpus ingest` (corpus options only)."""
        from ragqual.app.corpus_ops import ingest_corpus

        corpus, _ = _split_options(options)
        outcome = self._run(lambda app: ingest_corpus(app, corpus))
        report = outcome.report
        return IngestResult(report.fingerprint, report.documents, report.total_chunks, outcome.snapshot_id,
                            dict(report.chunks_per_document))

    def retrieval(self, **options: Any) -> RunResult:
        """The retrieval tier, as `ragqual retrieval` (options named as its flags: strategies, tags,
        split, limit, candidate_k, context_k, ...; corpus options too). Summary: per strategy, the
        overall metrics."""
        from ragqual.app.retrieval_run import RetrievalOptions, retrieval_tier

        corpus, rest = _split_options(options)
        outcome = self._run(lambda app: retrieval_tier(app, corpus, RetrievalOptions(**rest)))
        summary = {name: q["overall"] for name, q in outcome.report["quality"].items()}
        return RunResult(outcome.run_id, "retrieval", summary, self.db_url)

    def generation(self, **options: Any) -> RunResult:
        """The generation tier, as `ragqual generation` (models, modes, repeats, limit, tags, ...).
        Summary: one entry per model and mode with correctness, refusal and pass rate."""
        from ragqual.app.generation_run import GenerationOptions, generation_tier

        corpus, rest = _split_options(options)
        outcome = self._run(lambda app: generation_tier(app, corpus, GenerationOptions(**rest)))
        return RunResult(outcome.run_id, "generation", _mode_summary(outcome.lines), self.db_url)

    def eval(self, **options: Any) -> EvalResult:
        """The main job, as `ragqual eval` (models, repeats, limit, tags, max_concurrency)."""
        from ragqual.app.eval_run import EvalOptions, evaluate

        corpus, rest = _split_options(options)
        outcome = self._run(lambda app: evaluate(app, corpus, EvalOptions(**rest)))
        retrieval = {name: q["overall"] for name, q in outcome.retrieval.report["quality"].items()}
        return EvalResult(RunResult(outcome.retrieval.run_id, "retrieval", retrieval, self.db_url),
                          RunResult(outcome.generation.run_id, "generation", _mode_summary(outcome.generation.lines),
                                    self.db_url))

    def compare(self, base: str | int, new: str | int, **options: Any) -> CompareResult:
        """Compare NEW with BASE (run ids, RUN:GROUP or baseline files), as `ragqual compare`
        (gate, tolerance, alpha, power, metrics, every_metric, seed, resamples, cluster, by_tag,
        scorer_name, scorer_version, allow_incomplete)."""
        from dataclasses import fields

        from ragqual.app.comparison import Options, compare_sources

        names = {f.name for f in fields(Options)}
        given: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
        chosen = Options(**{k: v for k, v in given.items() if k in names})
        extra = {k: v for k, v in given.items() if k not in names}
        comparison = self._run(lambda app: compare_sources(app, str(base), str(new), chosen, **extra))
        return CompareResult(comparison)

    def report(self, run_id: int | None = None, *, by: Sequence[str] = (), scorer: str | None = None,
               scorer_version: int | None = None) -> Report:
        """One run's summary from its stored rows, as `ragqual report` (the newest run when
        `run_id` is None): `.header`, `.sections`, `.notes`, `.to_frame()` the first table."""
        from ragqual.app.run_report import build_report
        from ragqual.core.scoring import SCORER_NAME

        store = _existing_store(self.db_url)
        try:
            info = store.get_run(store.last_run_id() if run_id is None else run_id)
            return build_report(store.engine, info, by, scorer or SCORER_NAME, scorer_version)
        finally:
            store.engine.dispose()

    def rescore(self, run_id: int, *, scorer: str | None = None, goldens: str | Path | None = None,
                assertions_from: str | Path | None = None) -> RescoreResult:
        """Re-score a stored run from its raw outputs, as `ragqual rescore` (same options): new
        rows are appended, the old ones kept; no model is called."""
        from ragqual.app.rescoring import rescore_run
        from ragqual.engine.scorers import get_scorer

        store = _existing_store(self.db_url)
        try:
            scorers = [get_scorer(scorer)] if scorer else None
            summary, note = rescore_run(store, run_id, self.settings, goldens_dir=goldens,
                                        assertions_from=assertions_from, scorers=scorers)
        finally:
            store.engine.dispose()
        return RescoreResult(run_id, summary, note, self.db_url)


class History:
    """Read access to every run, trial, score, metric and assertion row of one history."""

    def __init__(self, store: RunStore) -> None:
        self._store = store

    @property
    def url(self) -> str:
        return self._store.engine.url.render_as_string(hide_password=True)

    def close(self) -> None:
        self._store.engine.dispose()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"History({self.url!r})"

    def run(self, run_id: int) -> RunInfo:
        """One run's record (kind, params, provenance...); InputError for an unknown id."""
        return self._store.get_run(run_id)

    def last_run_id(self, kind: str | None = None) -> int:
        return self._store.last_run_id(kind)

    def runs(self, kind: str | None = None, limit: int | None = None) -> pd.DataFrame:
        """One row per run, oldest first (as `ragqual history`); `limit` keeps the newest."""
        from ragqual.store.queries import runs_frame

        return runs_frame(self._store.engine, kind=kind, limit=limit)

    def trials(self, run_id: int) -> pd.DataFrame:
        """One row per trial with its newest score (as `ragqual export`'s trials file)."""
        from ragqual.store.queries import export_trials

        info = self.run(run_id)
        return _with_provenance(export_trials(self._store.engine, run_id), info)

    def metrics(self, run_id: int) -> pd.DataFrame:
        """Every metric row of the run, every scorer version (a rescore appends rows)."""
        from ragqual.store.queries import export_metrics

        info = self.run(run_id)
        return _with_provenance(export_metrics(self._store.engine, run_id), info)

    def scores(self, run_id: int) -> pd.DataFrame:
        """Every score row of every trial, every scorer and version, oldest scoring first."""
        info = self.run(run_id)
        rows = [{**slot, "batch": s.batch, "scored_at": s.created_at, **_score(entry)}
                for slot, s in self._scorings(run_id) for entry in s.scores]
        return _with_provenance(_frame(rows, SCORE_COLUMNS), info)

    def assertions(self, run_id: int) -> pd.DataFrame:
        """Every assertion result of every trial: which check passed, its weight and detail."""
        info = self.run(run_id)
        rows = [{**slot, "batch": s.batch, "scored_at": s.created_at, **_assertion(row)}
                for slot, s in self._scorings(run_id) for row in s.assertions]
        return _with_provenance(_frame(rows, ASSERTION_COLUMNS), info)

    def case_history(self, golden_id: str, metrics: list[str] | None = None) -> pd.DataFrame:
        """One question across every run (as `ragqual history --case`): a row per run and group."""
        from ragqual.app.case_history import case_history

        return case_history(self._store.engine, golden_id, metrics or ())

    def _scorings(self, run_id: int) -> list[tuple[dict[str, Any], Any]]:
        """(trial slot, scoring) for every scoring of every trial of the run, in trial order."""
        from ragqual.store.queries import trial_frame
        from ragqual.store.trial_reads import run_scorings

        engine = self._store.engine
        frame = trial_frame(engine, run_id)
        columns = (frame[c].tolist() for c in ("trial_id", "case_id", "variant", "mode", "repeat_index"))
        slots = {int(t): {"trial_id": int(t), "case_id": c, "variant": v, "mode": m, "repeat_index": int(r)}
                 for t, c, v, m, r in zip(*columns)}
        scorings = run_scorings(engine, run_id)
        return [(slots[t], s) for t in sorted(scorings) if t in slots for s in scorings[t]]


def _score(entry: Any) -> dict[str, Any]:
    row = asdict(entry)
    return {"scorer_name": row["scorer_name"], "scorer_version": row["scorer_version"], "score": row["score"],
            "perfect": row["perfect"], "per_category": json.dumps(row["per_category"], sort_keys=True)}


def _assertion(row: Any) -> dict[str, Any]:
    data = asdict(row)
    return {"assertion_id": data["assertion_id"], "assertion_version": data["version"], "category": data["category"],
            "weight": data["weight"], "passed": data["passed"], "detail": data.get("detail")}


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


def _with_provenance(frame: pd.DataFrame, info: RunInfo) -> pd.DataFrame:
    """The run's provenance as columns (those the frame lacks), first, one value per row."""
    values = {"run_id": info.id, "git_sha": info.git_sha, "git_dirty": info.git_dirty,
              "corpus_fingerprint": info.corpus_fingerprint, "dataset_hash": info.dataset_hash,
              "ragqual_version": info.provenance.get("ragqual_version")}
    out = frame.copy()
    for name in reversed(PROVENANCE_COLUMNS):
        if name not in out.columns:
            out.insert(0, name, [values[name]] * len(out))
    return out


def _mode_summary(lines: Sequence[Any]) -> dict[str, dict[str, Any]]:
    return {f"{ln.variant} {ln.mode}": {"correctness": ln.correctness, "refusal": ln.refusal, "pass": ln.pass_rate,
                                        "questions": ln.questions, "unstable": ln.unstable} for ln in lines}
