"""`ragqual corpus check|lock|status|ingest|reset|search|migrate`: the corpus, its goldens and its eval points."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import click

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions
from ragqual.app.corpus_ops import (
    ADVICE,
    CorpusStatus,
    IngestOutcome,
    check_corpus,
    corpus_status,
    ingest_corpus,
    migrate_to_edge,
    reset_eval_points,
    search_corpus,
)
from ragqual.cli.corpus_lock import check_locked, lock_cmd
from ragqual.cli.corpus_options import corpus_options
from ragqual.core.display import fmt_value


@click.group("corpus")
def corpus_group() -> None:
    """Validate the corpus and goldens, and manage the eval chunks in Qdrant."""


def _emit(app: AppContext, data: dict[str, Any], lines: list[str]) -> None:
    click.echo(json.dumps(data, indent=2) if app.as_json else "\n".join(lines))


def _counts_block(title: str, counts: dict[str, int]) -> list[str]:
    width = max((len(k) for k in counts), default=0)
    return [f"{title}:"] + [f"  {key:<{width}}  {value:>4}" for key, value in counts.items()]


def _shown(path: Any) -> str:
    from ragqual.adapters.files import display_path

    return display_path(path)


corpus_group.add_command(lock_cmd)


@corpus_group.command("check")
@corpus_options
@click.option("--locked", is_flag=True,
              help="Also require the files pinned by ragqual.lock.json to be unchanged: exit 1 naming each file "
                   "added, removed or changed (for CI).")
@click.pass_obj
def check_cmd(app: AppContext, corpus_opts: CorpusOptions, locked: bool = False) -> None:
    """Validate the corpus and goldens; print counts per tag and split.

    Needs no service and writes nothing: every problem found is listed with its file and
    line, and the exit code is 2.
    """
    if locked:
        check_locked(app)
    c = check_corpus(app, corpus_opts)
    data = {"corpus": str(c.corpus_dir), "documents": c.documents, "chunks": c.chunks, "goldens": str(c.goldens_dir),
            "questions": c.questions, "tags": c.tags, "splits": c.splits, "warnings": [c.warning] if c.warning else [],
            "glossary": c.glossary, "acronyms": c.acronyms}
    if c.warning:
        click.echo(f"warning: {c.warning}", err=True)
    lines = [
        f"corpus   {_shown(c.corpus_dir)}: {c.documents} documents, {c.chunks} chunks "
        f"at {c.chunk_config.chunk_tokens} tokens ({c.chunk_config.overlap_tokens} overlap)",
        f"goldens  {_shown(c.goldens_dir)}: {c.questions} questions",
        f"glossary {c.glossary}: {c.acronyms} acronym{'' if c.acronyms == 1 else 's'}" if c.glossary else "glossary none (no acronym expansion)",
        *_counts_block("tags", c.tags),
        *_counts_block("splits", c.splits),
        "ok: no problems found",
    ]
    _emit(app, data, lines)


@corpus_group.command("status")
@corpus_options
@click.pass_obj
def status_cmd(app: AppContext, corpus_opts: CorpusOptions) -> None:
    """Show the corpus fingerprint and what is ingested in Qdrant."""
    s = corpus_status(app, corpus_opts)
    m = s.manifest
    data = {
        "corpus": str(s.corpus_dir), "documents": s.documents, "embedder": s.embedder_id,
        "collection": s.collection, "store": s.location, "fingerprint": s.fingerprint,
        "ingested_fingerprint": m.fingerprint if m else None, "ingested_embedder": m.embedder_id if m else None,
        "ingested_chunks": m.stored_chunks if m else 0, "chunks_per_document": s.chunks_per_document, "state": s.state,
    }
    _emit(app, data, _status_lines(app, s))


def _status_lines(app: AppContext, s: CorpusStatus) -> list[str]:
    lines = [
        f"corpus       {_shown(s.corpus_dir)}: {s.documents} documents",
        f"embedder     {s.embedder_id}",
        f"store        collection {s.collection!r} at {s.location}",
        f"fingerprint  {s.fingerprint} (current corpus and settings)",
    ]
    if s.manifest is not None:
        lines.append(f"ingested     {fmt_value(s.manifest.fingerprint)}: {s.manifest.stored_chunks} chunks "
                     f"of {len(s.chunks_per_document)} documents by {fmt_value(s.manifest.embedder_id)}")
    lines.append(f"state        {ADVICE[s.state]}")
    if app.verbose and s.chunks_per_document:
        lines += _counts_block("chunks per document", s.chunks_per_document)
    return lines


@corpus_group.command("ingest")
@corpus_options
@click.pass_obj
def ingest_cmd(app: AppContext, corpus_opts: CorpusOptions) -> None:
    """Rebuild the eval chunks in Qdrant from the corpus.

    Only points carrying the eval tag are deleted and written; the other points of the
    collection are never touched. The ingested corpus is recorded in the history.
    """
    outcome = ingest_corpus(app, corpus_opts)
    _emit(app, {**outcome.report.to_dict(), "store": outcome.location, "snapshot_id": outcome.snapshot_id},
          _ingest_lines(app, outcome))


def _ingest_lines(app: AppContext, outcome: IngestOutcome) -> list[str]:
    report = outcome.report
    counts = sorted(report.chunks_per_document.values())
    lines = [
        f"ingested     {report.total_chunks} chunks of {report.documents} documents into collection "
        f"{outcome.collection!r} at {outcome.location}",
        f"embedder     {report.embedder_id}",
        f"fingerprint  {report.fingerprint}",
        f"chunks/doc   min {counts[0]}, max {counts[-1]}",
        f"time         {report.seconds:.2f} s ({report.embed_seconds:.2f} s embedding, "
        f"{report.chunks_per_second:.1f} chunks/s)",
    ]
    if app.verbose:
        lines += _counts_block("chunks per document", report.chunks_per_document)
    return lines


@corpus_group.command("reset")
@corpus_options
@click.pass_obj
def reset_cmd(app: AppContext, corpus_opts: CorpusOptions) -> None:
    """Delete the eval chunks from Qdrant, and nothing else."""
    r = reset_eval_points(app, corpus_opts)
    data = {"collection": r.collection, "store": r.location, "removed": r.removed, "remaining": r.remaining}
    _emit(app, data, [f"removed {r.removed} eval chunks from collection {r.collection!r} at {r.location}; "
                      f"{r.remaining} other points untouched"])


@corpus_group.command("search")
@click.argument("query")
@click.option("-k", "--limit", type=click.IntRange(min=1), default=5, show_default=True, help="How many chunks.")
@corpus_options
@click.pass_obj
def search_cmd(app: AppContext, query: str, limit: int, corpus_opts: CorpusOptions) -> None:
    """Dense search of the eval chunks, behind the leak guard.

    A debugging aid: exit 1 when a retrieved chunk does not come from the corpus.
    """
    outcome = search_corpus(app, corpus_opts, query, limit)
    data = {"query": query, "hits": [asdict(h) for h in outcome.hits]}
    lines = [f"{rank:>2}  {hit.score:.4f}  {hit.chunk_id:<32}  {_snippet(hit.text)}"
             for rank, hit in enumerate(outcome.hits, start=1)]
    _emit(app, data, lines or ["no hits"])


def _snippet(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


@corpus_group.command("migrate")
@corpus_options
@click.pass_obj
def migrate_cmd(app: AppContext, corpus_opts: CorpusOptions) -> None:
    """Copy the collection from a qdrant-client local-mode folder (eval-results/qdrant/) into the
    qdrant-edge store (eval-results/qdrant-edge/), every point with its vector and payload.

    The old folder is left as it was; once the copy exists ragqual uses qdrant-edge.
    """
    m = migrate_to_edge(app, corpus_opts)
    _emit(app, {"collection": m.collection, "from": str(m.source), "to": str(m.target), "points": m.points},
          [f"copied {m.points} points of collection {m.collection!r} from {m.source} to {m.target}; "
           "ragqual now uses qdrant-edge"])
