"""Throughput of the packaged MiniLM embedder on this machine: sentences/s and passages/s.

    python benchmarks/bench_embedder.py [--threads N] [--batch-size N] [--sentences N] [--passages N]

Sentences are ~10 words (~14 word pieces), passages ~150 words (~170 word pieces, under the
256-token limit). Texts are generated from a fixed seed so runs are comparable;
each measurement follows one warm-up batch. Wall time depends on the machine
and its load, so the numbers are for reports, never for tests.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ragqual.adapters.embedders import MiniLMEmbedder

WORDS = (
    "water boil minute filter bleach drops gallon litre container clean store cool shade jar lid seal "
    "pressure canner acid tomato bean salt smoke dry meat fish bandage wound pressure splint fever "
    "shelter tarp ridge wind insulation stove wood fire ember radio antenna repeater battery panel "
    "inverter charge controller compass map bearing north trail river ice snow rain cloud signal "
    "the a of and to in with for on at from by before after until when each every check keep use"
).split()


def make_texts(rng: np.random.Generator, count: int, words: int) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=words)).capitalize() + "." for _ in range(count)]


def rate(embedder: MiniLMEmbedder, texts: list[str]) -> tuple[float, float]:
    embedder.embed(texts[: embedder.batch_size])  # warm-up
    start = time.perf_counter()
    embedder.embed(texts)
    seconds = time.perf_counter() - start
    return len(texts) / seconds, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=None, help="ONNX Runtime intra-op threads")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--passages", type=int, default=96)
    args = parser.parse_args()

    embedder = MiniLMEmbedder(batch_size=args.batch_size, threads=args.threads)
    rng = np.random.default_rng(20240601)
    cases = [
        ("sentences (~10 words)", make_texts(rng, args.sentences, 10)),
        ("passages (~150 words)", make_texts(rng, args.passages, 150)),
    ]
    print(f"{embedder.id}  threads={embedder.threads}  batch={embedder.batch_size}  cpus={os.cpu_count()}")
    print(f"{'workload':<24}{'texts':>7}{'seconds':>10}{'texts/s':>10}{'ms/text':>10}")
    for name, texts in cases:
        per_second, seconds = rate(embedder, texts)
        print(f"{name:<24}{len(texts):>7}{seconds:>10.2f}{per_second:>10.1f}{1000 / per_second:>10.2f}")


if __name__ == "__main__":
    main()
