"""`ragqual corpus check|status|ingest|reset|search`: the corpus, its goldens and its eval points."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click

from ragqual.cli.context import AppContext
from ragqual.cli.corpus_options import (
    CorpusContext,
    CorpusOptions,
    corpus_options,
    load_corpus_context,
    record_snapshot,
    show_progress,
)
from ragqual.core.display import fmt_value
from ragqual.core.goldens import missing_split_warning
from ragqual.errors import InputError

if TYPE_CHECKING:
    from ragqual.adapters.qdrant_store import Manifest
    from ragqual.pipeline.ingest import IngestReport

NO_SPLIT = "(none)"


@click.group("corpus")
def corpus_group() -> None:
    """Validate the corpus and goldens, and manage the eval chunks in Qdrant."""


def _emit(app: AppContext, data: dict[str, Any], lines: list[str]) -> None:
    click.echo(json.dumps(data, indent=2) if app.as_json else "\n".join(lines))


def _counts_block(title: str, counts: dict[str, int]) -> list[str]:
    width = max((len(k) for k in counts), default=0)
    return [f"{title}:"] + [f"  {key:<{width}}  {value:>4}" for key, value in counts.items()]


def _sorted_counts(counter: Counter[str]) -> dict[str, int]:
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


# --- check ----------------------------------------------------------------------------------


@corpus_group.command("check")
@corpus_options
@click.pass_obj
def check_cmd(app: AppContext, corpus_opts: CorpusOptions) -> None:
    """Validate the corpus and goldens; print counts per tag and split.

    Needs no service and writes nothing: every problem found is listed with its file and
    line, and the exit code is 2.
    """
    corpus = load_corpus_context(app, corpus_opts)
    tags = _sorted_counts(Counter(tag for golden in corpus.goldens for tag in golden.tags))
    splits = _sorted_counts(Counter(golden.split or NO_SPLIT for golden in corpus.goldens))
    chunks = len(corpus.chunks)
    config = corpus.chunk_config
    data = {
        "corpus": str(corpus.corpus_dir), "documents": len(corpus.documents), "chunks": chunks,
        "goldens": str(corpus.goldens_dir), "questions": len(corpus.goldens), "tags": tags, "splits": splits,
    }
    warning = missing_split_warning(corpus.goldens)
    data["warnings"] = [warning] if warning else []
    if warning:
        click.echo(f"warning: {warning}", err=True)
    lines = [
        f"corpus   {_shown(corpus.corpus_dir)}: {len(corpus.documents)} documents, {chunks} chunks "
        f"at {config.chunk_tokens} tokens ({config.overlap_tokens} overlap)",
        f"goldens  {_shown(corpus.goldens_dir)}: {len(corpus.goldens)} questions",
        *_counts_block("tags", tags),
        *_counts_block("splits", splits),
        "ok: no problems found",
    ]
    _emit(app, data, lines)


def _shown(path: Any) -> str:
    from ragqual.adapters.files import display_path

    return display_path(path)


# --- status ---------------------------------------------------------------------------------


@corpus_group.command("status")
@corpus_options
@click.pass_obj
def status_cmd(app: AppContext, corpus_opts: CorpusOptions) -> None:
    """Show the corpus fingerprint and what is ingested in Qdrant."""
    with load_corpus_context(app, corpus_opts, with_goldens=False) as corpus:
        current = corpus.fingerprint
        manifest, per_doc = _ingested(corpus)
        state = _state(manifest, current)
        data = {
            "corpus": str(corpus.corpus_dir), "documents": len(corpus.documents), "embedder": corpus.embedder_id,
            "collection": corpus.collection, "store": corpus.location, "fingerprint": current,
            "ingested_fingerprint": manifest.fingerprint if manifest else None,
            "ingested_embedder": manifest.embedder_id if manifest else None,
            "ingested_chunks": manifest.stored_chunks if manifest else 0,
            "chunks_per_document": per_doc, "state": state,
        }
        _emit(app, data, _status_lines(corpus, current, manifest, per_doc, state))


def _ingested(corpus: CorpusContext) -> tuple[Manifest | None, dict[str, int]]:
    if not corpus.store_exists():
        return None, {}
    index = corpus.maintenance_index()
    manifest = index.manifest()
    per_doc = Counter(chunk.doc_id for chunk in index.all_chunks()) if manifest else Counter()
    return manifest, dict(sorted(per_doc.items()))


def _state(manifest: Manifest | None, current: str) -> str:
    from ragqual.pipeline.ingest import is_current

    if manifest is None:
        return "not ingested"
    if is_current(manifest, current):
        return "up to date"
    if not manifest.complete:
        return "incomplete"
    return "stale"


_ADVICE = {
    "not ingested": "nothing ingested yet: run `ragqual corpus ingest`",
    "incomplete": "the last ingest did not finish: run `ragqual corpus ingest`",
    "stale": "the corpus or its settings changed since the last ingest: run `ragqual corpus ingest`",
    "up to date": "up to date",
}


def _status_lines(
    corpus: CorpusContext, current: str, manifest: Manifest | None, per_doc: dict[str, int], state: str,
) -> list[str]:
    lines = [
        f"corpus       {_shown(corpus.corpus_dir)}: {len(corpus.documents)} documents",
        f"embedder     {corpus.embedder_id}",
        f"store        collection {corpus.collection!r} at {corpus.location}",
        f"fingerprint  {current} (current corpus and settings)",
    ]
    if manifest is not None:
        lines.append(f"ingested     {fmt_value(manifest.fingerprint)}: {manifest.stored_chunks} chunks "
                     f"of {len(per_doc)} documents by {fmt_value(manifest.embedder_id)}")
    lines.append(f"state        {_ADVICE[state]}")
    if corpus.app.verbose and per_doc:
        lines += _counts_block("chunks per document", per_doc)
    return lines


# --- ingest ---------------------------------------------------------------------------------


@corpus_group.command("ingest")
@corpus_options
@click.pass_obj
def ingest_cmd(app: AppContext, corpus_opts: CorpusOptions) -> None:
    """Rebuild the eval chunks in Qdrant from the corpus.

    Only points carrying the eval tag are deleted and written; the other points of the
    collection are never touched. The ingested corpus is recorded in the history.
    """
    from ragqual.pipeline.ingest import ingest

    with load_corpus_context(app, corpus_opts, with_goldens=False) as corpus:
        report = ingest(corpus.documents, corpus.chunk_config, corpus.embedder, corpus.index, corpus.corpus_dir,
                        progress=show_progress(app))
        snapshot = record_snapshot(corpus, report)
        _emit(app, {**report.to_dict(), "store": corpus.location, "snapshot_id": snapshot},
              _ingest_lines(corpus, report))


def _ingest_lines(corpus: CorpusContext, report: IngestReport) -> list[str]:
    counts = sorted(report.chunks_per_document.values())
    lines = [
        f"ingested     {report.total_chunks} chunks of {report.documents} documents into collection "
        f"{corpus.collection!r} at {corpus.location}",
        f"embedder     {report.embedder_id}",
        f"fingerprint  {report.fingerprint}",
        f"chunks/doc   min {counts[0]}, max {counts[-1]}",
        f"time         {report.seconds:.2f} s ({report.embed_seconds:.2f} s embedding, "
        f"{report.chunks_per_second:.1f} chunks/s)",
    ]
    if corpus.app.verbose:
        lines += _counts_block("chunks per document", report.chunks_per_document)
    return lines


# --- reset ----------------------------------------------------------------------------------


@corpus_group.command("reset")
@corpus_options
@click.pass_obj
def reset_cmd(app: AppContext, corpus_opts: CorpusOptions) -> None:
    """Delete the eval chunks from Qdrant, and nothing else."""
    with load_corpus_context(app, corpus_opts, with_corpus=False, with_goldens=False) as corpus:
        removed, remaining = 0, 0
        if corpus.store_exists():
            index = corpus.maintenance_index()
            removed = index.reset()
            remaining = index.count_all()
        data = {"collection": corpus.collection, "store": corpus.location, "removed": removed, "remaining": remaining}
        _emit(app, data, [f"removed {removed} eval chunks from collection {corpus.collection!r} at {corpus.location}; "
                          f"{remaining} other points untouched"])


# --- search ---------------------------------------------------------------------------------


@corpus_group.command("search")
@click.argument("query")
@click.option("-k", "--limit", type=click.IntRange(min=1), default=5, show_default=True, help="How many chunks.")
@corpus_options
@click.pass_obj
def search_cmd(app: AppContext, query: str, limit: int, corpus_opts: CorpusOptions) -> None:
    """Dense search of the eval chunks, behind the leak guard.

    A debugging aid: exit 1 when a retrieved chunk does not come from the corpus.
    """
    from ragqual.pipeline.chunking import embed_text_for_query
    from ragqual.pipeline.leak_guard import check_hits

    with load_corpus_context(app, corpus_opts, with_goldens=False) as corpus:
        manifest = corpus.maintenance_index().manifest() if corpus.store_exists() else None
        state = _state(manifest, corpus.fingerprint)
        if state == "not ingested":
            raise InputError(f"nothing ingested into collection {corpus.collection!r} yet: run `ragqual corpus ingest`")
        if state != "up to date":
            click.echo(f"warning: {_ADVICE[state]}", err=True)
        vector = corpus.embedder.embed([embed_text_for_query(query, corpus.chunk_config)])[0]
        hits = corpus.index.search(vector, limit)
        check_hits(hits, corpus.corpus_dir)
        data = {"query": query, "hits": [asdict(h) for h in hits]}
        lines = [f"{rank:>2}  {hit.score:.4f}  {hit.chunk_id:<32}  {_snippet(hit.text)}"
                 for rank, hit in enumerate(hits, start=1)]
        _emit(app, data, lines or ["no hits"])


def _snippet(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


# --- migrate ----------------------------------------------------------------------------------


@corpus_group.command("migrate")
@corpus_options
@click.pass_obj
def migrate_cmd(app: AppContext, corpus_opts: CorpusOptions) -> None:
    """Copy the collection from a qdrant-client local-mode folder (eval-results/qdrant/) into the
    qdrant-edge store (eval-results/qdrant-edge/), every point with its vector and payload.

    The old folder is left as it was; once the copy exists ragqual uses qdrant-edge.
    """
    from ragqual.adapters.qdrant_edge_store import migrate_local_folder, open_edge
    from ragqual.adapters.qdrant_store import open_qdrant
    from ragqual.cli.corpus_options import EDGE, embedded_path

    settings = app.settings
    collection = corpus_opts.collection or settings.values["collection"]
    source, target = settings.qdrant_path(), embedded_path(settings, EDGE)
    if not (source / "meta.json").is_file():
        raise InputError(f"no qdrant-client local-mode folder at {source}: nothing to migrate")
    if (target / collection).exists():
        raise InputError(f"{target / collection} already exists: nothing was copied (remove it to migrate again)")
    local = open_qdrant(source, None)
    try:
        if not local.collection_exists(collection):
            raise InputError(f"collection {collection!r} is not in {source}; name it with --collection")
        edge = open_edge(target)
        try:
            copied = migrate_local_folder(local, edge, collection)
        finally:
            edge.close()
    finally:
        local.close()
    _emit(app, {"collection": collection, "from": str(source), "to": str(target), "points": copied},
          [f"copied {copied} points of collection {collection!r} from {source} to {target}; ragqual now uses qdrant-edge"])
