"""Throughput of the packaged MiniLM embedder on this machine, per batch size.

    python benchmarks/bench_embedder.py [--threads N] [--token-budget N ...] [--sentences N] [--passages N]

Workloads: sentences of ~10 words (~14 word pieces), passages of ~150 words (~170 word
pieces, under the 256-token limit), both generated from a fixed seed, and the bundled
corpus's own chunks (what a cold `ragqual retrieval` embeds). Each row is one token budget
(padded word pieces per batch, batches of at most 32 texts; "none" = plain batches of 32,
the earlier default). Each measurement follows one warm-up batch. The last column says
whether the vectors are bit for bit those of the first row. Wall time depends on the machine and its load: numbers for reports,
never for tests.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from ragqual.adapters.embedders import MiniLMEmbedder
from ragqual.adapters.files import read_corpus_dir
from ragqual.pipeline.chunking import ChunkConfig, chunk_corpus, embed_text_for_chunk

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
NO_BUDGET = 32 * 256  # a full batch of the longest texts: batches of 32 whatever their length

WORDS = (
    "water boil minute filter bleach drops gallon litre container clean store cool shade jar lid seal "
    "pressure canner acid tomato bean salt smoke dry meat fish bandage wound pressure splint fever "
    "shelter tarp ridge wind insulation stove wood fire ember radio antenna repeater battery panel "
    "inverter charge controller compass map bearing north trail river ice snow rain cloud signal "
    "the a of and to in with for on at from by before after until when each every check keep use"
).split()


def make_texts(rng: np.random.Generator, count: int, words: int) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=words)).capitalize() + "." for _ in range(count)]


def corpus_chunks() -> list[str]:
    config = ChunkConfig()
    return [embed_text_for_chunk(c, config) for c in chunk_corpus(read_corpus_dir(CORPUS), config)]


def rate(embedder: MiniLMEmbedder, texts: list[str]) -> tuple[float, float, np.ndarray]:
    embedder.embed(texts[: embedder.batch_size])  # warm-up
    start = time.perf_counter()
    vectors = embedder.embed(texts)
    seconds = time.perf_counter() - start
    return len(texts) / seconds, seconds, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=None, help="ONNX Runtime intra-op threads")
    parser.add_argument("--token-budget", type=int, nargs="+", default=[NO_BUDGET, 512, 1024, 2048])
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--passages", type=int, default=96)
    args = parser.parse_args()

    rng = np.random.default_rng(20240601)
    cases = [
        ("sentences (~10 words)", make_texts(rng, args.sentences, 10)),
        ("passages (~150 words)", make_texts(rng, args.passages, 150)),
        ("bundled corpus chunks", corpus_chunks()),
    ]
    first = MiniLMEmbedder(threads=args.threads)
    print(f"{first.id}  threads={first.threads}  cpus={os.cpu_count()}  load average {os.getloadavg()[0]:.1f}\n")
    print("| workload | token budget | texts | seconds | texts/s | same vectors |\n|---|---:|---:|---:|---:|---|")
    for name, texts in cases:
        reference = None
        for budget in args.token_budget:
            embedder = MiniLMEmbedder(token_budget=budget, threads=args.threads)
            per_second, seconds, vectors = rate(embedder, texts)
            reference = vectors if reference is None else reference
            same = "yes" if np.array_equal(vectors, reference) else f"max diff {np.abs(vectors - reference).max():.1e}"
            shown = "none" if budget >= NO_BUDGET else budget
            print(f"| {name} | {shown} | {len(texts)} | {seconds:.2f} | {per_second:.1f} | {same} |")


if __name__ == "__main__":
    main()
