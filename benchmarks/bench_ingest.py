"""Ingest wall time of a corpus into embedded Qdrant: cold, then with a warm embedding cache.

Everything happens in a temporary folder (Qdrant storage and the embedding cache), so the
project's own eval-results/ is never touched. "cold" starts from an empty embedding cache;
"warm" ingests again with the cache the cold run filled, so it times chunking, cache
reads and the Qdrant rebuild without the model. Loading the model is timed on its own.

    python benchmarks/bench_ingest.py [--corpus corpus] [--embedder minilm] [--chunk-tokens 256] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import diskcache

from ragqual.adapters.embedders import CachedEmbedder, make_embedder
from ragqual.adapters.files import read_corpus_dir
from ragqual.adapters.qdrant_store import EvalIndex, open_qdrant
from ragqual.pipeline.chunking import ChunkConfig
from ragqual.pipeline.ingest import IngestReport, ingest

REPO = Path(__file__).resolve().parents[1]


def timed_ingest(documents, config, embedder, index, corpus_dir) -> IngestReport:
    return ingest(documents, config, embedder, index, corpus_dir, progress=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "corpus")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--chunk-tokens", type=int, default=256)
    parser.add_argument("--overlap-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3, help="warm ingests to time (the median is reported)")
    args = parser.parse_args()

    documents = read_corpus_dir(args.corpus)
    config = ChunkConfig(chunk_tokens=args.chunk_tokens, overlap_tokens=args.overlap_tokens)
    started = time.perf_counter()
    inner = make_embedder(args.embedder)
    load_seconds = time.perf_counter() - started

    with tempfile.TemporaryDirectory(prefix="ragqual-bench-ingest-") as scratch:
        client = open_qdrant(Path(scratch) / "qdrant", None)
        cache = diskcache.Cache(str(Path(scratch) / "embeddings"))
        try:
            embedder = CachedEmbedder(inner, cache)
            index = EvalIndex(client, "bench_kb", inner.dim)
            cold = timed_ingest(documents, config, embedder, index, args.corpus)
            warm = [timed_ingest(documents, config, embedder, index, args.corpus) for _ in range(max(1, args.repeats))]
        finally:
            cache.close()
            client.close()

    counts = sorted(cold.chunks_per_document.values())
    warm_seconds = statistics.median(r.seconds for r in warm)
    print(f"corpus     {args.corpus}: {cold.documents} documents, {cold.total_chunks} chunks "
          f"(per document: min {counts[0]}, median {statistics.median(counts):g}, max {counts[-1]})")
    print(f"embedder   {cold.embedder_id}, loaded in {load_seconds:.2f} s")
    print(f"cold       {cold.seconds:.2f} s total, {cold.embed_seconds:.2f} s embedding "
          f"({cold.chunks_per_second:.1f} passages/s)")
    print(f"warm       {warm_seconds:.3f} s total (median of {len(warm)}), "
          f"{statistics.median(r.embed_seconds for r in warm):.3f} s reading the embedding cache")


if __name__ == "__main__":
    main()
