"""Embedded vector engines at scale: qdrant-edge vs qdrant-client's local mode.

For each size (10k / 50k / 100k points of 384 dimensions, half of them carrying the eval tag
and half standing for the user's own points) and each engine, in a fresh subprocess so peak
memory is the engine's own: ingest rate (points/s, payloads included), then filtered top-100
queries (the eval filter, as every eval search) with p50 / p95 latency, and the process's peak
resident memory. Exact search on qdrant-edge (no HNSW), so both engines return the same hits.
qdrant-client's local mode runs in memory by default here (BENCH_LOCAL_ON_DISK=1: in a folder, as
ragqual uses it; its ingest is then several times slower again, its queries the same).

    python benchmarks/bench_scale.py [--sizes 10000,50000,100000] [--queries 50] [--local-queries 10]
    python benchmarks/bench_scale.py --engines edge --sizes 100000
    python benchmarks/bench_scale.py --vaswani        # the Vaswani tier: cold ingest, cold retrieval, warm retrieval
    python benchmarks/bench_scale.py --ingest-memory 100000   # peak memory of ragqual's ingest path

Wall times depend on the machine and its load; the table prints the load average next to them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DIM = 384
LIMIT = 100
TAG_KEY, EVAL_TAG, USER_TAG = "collection", "__ragqual_eval__", "user_docs"
ON_DISK = os.environ.get("BENCH_LOCAL_ON_DISK") == "1"  # local mode in a folder (slower ingest) or in memory
TEXT = "lorem ipsum dolor sit amet " * 8  # ~200 characters of payload text per point


def vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((n, DIM)).astype(np.float32)
    return data / np.linalg.norm(data, axis=1, keepdims=True)


def payload(i: int) -> dict:
    tag = EVAL_TAG if i % 2 == 0 else USER_TAG
    return {TAG_KEY: tag, "doc_id": f"doc-{i}", "chunk_id": f"doc-{i}#0", "index": 0, "text": TEXT,
            "source": f"/corpus/doc-{i}.md", "fingerprint": "f" * 64, "total_chunks": i}


def run_edge(n: int, queries: np.ndarray, folder: Path) -> tuple[float, list[float], list[float]]:
    import qdrant_edge as qe

    config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine))
    shard = qe.EdgeShard.create(str(folder / "edge"), config)
    shard.update(qe.UpdateOperation.create_field_index(TAG_KEY, qe.PayloadSchemaType.Keyword))
    data = vectors(n, 1)
    started = time.perf_counter()
    for start in range(0, n, 1024):
        points = [qe.Point(i, data[i].tolist(), payload(i)) for i in range(start, min(n, start + 1024))]
        shard.update(qe.UpdateOperation.upsert_points(points))
    shard.flush()
    ingest = time.perf_counter() - started
    eval_filter = qe.Filter(must=[qe.FieldCondition(key=TAG_KEY, match=qe.MatchValue(EVAL_TAG))])
    latencies, cpu = [], []
    for q in queries:
        t, c = time.perf_counter(), time.process_time()
        hits = shard.query(qe.QueryRequest(limit=LIMIT, query=qe.Query.Nearest(q.tolist()), filter=eval_filter,
                                           with_payload=True, params=qe.SearchParams(exact=True)))
        latencies.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        assert len(hits) == LIMIT
    shard.close()
    return ingest, latencies, cpu


def run_local(n: int, queries: np.ndarray, folder: Path) -> tuple[float, list[float], list[float]]:
    from qdrant_client.http import models

    from ragqual.adapters.qdrant_store import EvalIndex, open_qdrant

    client = open_qdrant(folder / "local" if ON_DISK else ":memory:", None)
    index = EvalIndex(client, "bench_kb", DIM)
    index.ensure_collection()
    data = vectors(n, 1)
    started = time.perf_counter()
    for start in range(0, n, 1024):
        points = [models.PointStruct(id=i, vector=data[i].tolist(), payload=payload(i)) for i in range(start, min(n, start + 1024))]
        client.upsert("bench_kb", points=points, wait=True)
    ingest = time.perf_counter() - started
    latencies, cpu = [], []
    for q in queries:
        t, c = time.perf_counter(), time.process_time()
        hits = index.search(q, LIMIT)
        latencies.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        assert len(hits) == LIMIT
    client.close()
    return ingest, latencies, cpu


def child(engine: str, n: int, count: int) -> None:
    queries = vectors(count, 2)
    with tempfile.TemporaryDirectory(prefix="ragqual-bench-scale-") as scratch:
        runner = run_edge if engine == "edge" else run_local
        ingest, latencies, cpu = runner(n, queries, Path(scratch))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"ingest_s": ingest, "latencies": latencies, "cpu": cpu, "peak_mb": peak_mb}))


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(values, p))


class _HashEmbedder:
    """A stand-in for the model (unit vectors from a seeded generator), so ingest memory is measured
    without the model's own; MiniLM adds its runtime (about 100-200 MB) on top."""

    id, dim = "bench-hash:1", DIM

    def embed(self, texts):
        return vectors(len(texts), len(texts[0]) if texts else 0)


def ingest_memory(n: int) -> None:
    """Peak resident memory of ragqual's own ingest path (documents, chunks, vectors, qdrant-edge) for
    `n` one-chunk documents, in this process."""
    from ragqual.adapters.qdrant_edge_store import open_edge
    from ragqual.adapters.qdrant_store import EvalIndex
    from ragqual.core.collections import document
    from ragqual.pipeline.chunking import ChunkConfig
    from ragqual.pipeline.ingest import ingest

    with tempfile.TemporaryDirectory(prefix="ragqual-bench-ingest-") as scratch:
        root = Path(scratch) / "corpus"
        root.mkdir()
        (root / "docs.trec").write_text("x")
        docs = [document(str(i), f"{TEXT} document {i}", "docs.trec") for i in range(n)]
        client = open_edge(Path(scratch) / "edge")
        started = time.perf_counter()
        report = ingest(docs, ChunkConfig(), _HashEmbedder(), EvalIndex(client, "bench_kb", DIM), root, progress=False)
        wall = time.perf_counter() - started
        client.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"| ingest of {report.total_chunks:,} chunks (stand-in embedder) | {wall:.1f} s | peak RSS {peak:.0f} MB "
          f"| load {os.getloadavg()[0]:.2f} |")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


VASWANI_STEPS = (  # label, ragqual arguments after the global options, empty the search cache first
    ("ingest, cold (nothing cached)", ["corpus", "ingest"], False),
    ("retrieval, cold (search cache empty)", ["retrieval"], True),
    ("retrieval, warm (search cache)", ["retrieval"], False),
)
WARM_REPEATS = 5  # the warm step is run this many times; each run and their median are printed


def vaswani(engine: str, keep: Path | None = None) -> None:
    """Wall time and peak memory of the Vaswani tier in a fresh project: `ragqual corpus ingest` with
    nothing cached (embed + write the points), `ragqual retrieval` (dense + bm25 + hybrid) with an
    empty search cache (the embeddings cached, every search run), then again with everything
    cached. With `keep`, each retrieval's JSON report is written there (to compare two checkouts)."""
    import shutil

    repo = Path(__file__).resolve().parents[1]
    collection = repo / "datasets" / "vaswani-npl"
    print(f"| Vaswani ({engine}) | wall s | CPU s | peak RSS MB | load avg |")
    print("|---|---|---|---|---|")
    overall: dict = {}
    with tempfile.TemporaryDirectory(prefix="ragqual-bench-vaswani-") as scratch:
        cache = Path(scratch) / "cache"
        env = {**os.environ, "RAGQUAL_CACHE_DIR": str(cache), "RAGQUAL_EMBEDDED_ENGINE": engine}
        env.pop("RAGQUAL_DB", None)
        warm: list[tuple[float, float]] = []
        steps = [*VASWANI_STEPS[:-1], *[VASWANI_STEPS[-1]] * WARM_REPEATS]
        for step, (label, command, cold_search) in enumerate(steps):
            if cold_search:
                shutil.rmtree(cache / "search", ignore_errors=True)
            started, cpu_before = time.perf_counter(), _children_cpu()
            done = subprocess.run([sys.executable, "-m", "ragqual", "--json", *command, "--corpus", str(collection),
                                   "--goldens", str(collection)], cwd=scratch, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - started
            if done.returncode != 0:
                raise SystemExit(done.stderr)
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the largest child so far
            cpu = _children_cpu() - cpu_before
            if label == VASWANI_STEPS[-1][0]:
                warm.append((wall, cpu))
                label = f"{label} #{len(warm)}"
            print(f"| {label} | {wall:.1f} | {cpu:.1f} | {peak:.0f} | {os.getloadavg()[0]:.2f} |", flush=True)
            if command[0] == "retrieval":
                report = json.loads(done.stdout)
                overall = {k: v["overall"] for k, v in report["quality"].items()}
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    (keep / f"step{step}.quality.json").write_text(json.dumps(report["quality"], sort_keys=True))
        walls, cpus = sorted(w for w, _ in warm), sorted(c for _, c in warm)
        print(f"| retrieval, warm: median of {len(warm)} | {walls[len(walls) // 2]:.1f} | {cpus[len(cpus) // 2]:.1f} | | |")
        print("\n| strategy | MAP | nDCG | nDCG@10 | recall@5 | recall@100 | MRR |\n|---|---|---|---|---|---|---|")
        for name, o in overall.items():
            print(f"| {name} | {o['map']:.3f} | {o['ndcg']:.3f} | {o['ndcg@10']:.3f} | {o['recall@5']:.3f} | "
                  f"{o['recall@100']:.3f} | {o['mrr']:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,50000,100000")
    parser.add_argument("--engines", default="edge,local")
    parser.add_argument("--queries", type=int, default=50, help="queries timed on qdrant-edge")
    parser.add_argument("--local-queries", type=int, default=10, help="queries timed on local mode (slow)")
    parser.add_argument("--vaswani", action="store_true", help="time the Vaswani tier instead")
    parser.add_argument("--vaswani-engine", default="edge", choices=["edge", "local"])
    parser.add_argument("--vaswani-keep", type=Path, default=None, metavar="DIR",
                        help="write each Vaswani retrieval's quality section (JSON) to DIR")
    parser.add_argument("--ingest-memory", type=int, default=None, metavar="N",
                        help="peak memory of ragqual's ingest path for N chunks instead")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ingest_memory:
        ingest_memory(args.ingest_memory)
        return
    if args.vaswani:
        vaswani(args.vaswani_engine, args.vaswani_keep)
        return
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    names = {"edge": "qdrant-edge (exact)", "local": "qdrant-client local"}
    print(f"load average at start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} "
          f"on {os.cpu_count()} cores")
    print("| engine | points | ingest points/s | filtered top-100 p50 ms | p95 ms | CPU ms/query p50 | p95 | queries | peak RSS MB | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in [int(s) for s in args.sizes.split(",")]:
        for engine in args.engines.split(","):
            count = args.queries if engine == "edge" else args.local_queries
            out = subprocess.run([sys.executable, __file__, "--child", engine, str(n), str(count)],
                                 capture_output=True, text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            lat = result["latencies"]
            cpu = result["cpu"]
            print(f"| {names[engine]} | {n:,} | {n / result['ingest_s']:,.0f} | {pct(lat, 50):.1f} | {pct(lat, 95):.1f} "
                  f"| {pct(cpu, 50):.1f} | {pct(cpu, 95):.1f} | {len(lat)} | {result['peak_mb']:.0f} | {os.getloadavg()[0]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
