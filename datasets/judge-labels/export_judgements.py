"""Write a judge run's verdicts as a judgements file beside the labels (one line per trial and criterion).

    python datasets/judge-labels/export_judgements.py HISTORY.db JUDGE_RUN_ID OUT.jsonl

Reads the history with raw sqlite3 (read-only); the answer's raw output through the view
`v_trial_texts`, which shows it from either layout (inline, or stored once by hash since 0012). `model` is the model that produced the judged
answer as `labels.jsonl` names it (`mock`, `llamacpp:gemma3-270m`): for an answer replayed from an
answers file, the `model` that file gives; else the variant's name. So each line joins a label on
(case_id, model, mode, repeat, criterion). Each line: those keys, `p_yes` (the judge's score),
`verdict`, the rubric's version and sha256, the judge model URI and its file's sha256, the judge's
prompt tokens, how many of them llama.cpp evaluated and how many it kept from the previous
criterion, and the cache key the verdict is stored under. Judge errors are written with
`p_yes` null and the error.
"""

from __future__ import annotations

import json
import sqlite3
import sys


def main(db: str, judge_run: int, out: str) -> None:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "select c.case_id, v.name, x.raw_output, t.mode, t.repeat_index, j.criterion, j.score, j.verdict, j.rubric_version, "
        "j.rubric_sha256, j.judge_model, j.judge_digest, j.sample_index, j.cache_key, j.raw, j.error "
        "from judgements j join trials t on t.id = j.trial_id join cases c on c.id = t.case_pk "
        "join variant_configs v on v.id = t.variant_id join v_trial_texts x on x.trial_id = t.id "
        "where j.run_id = ? order by t.id, j.id", (judge_run,)).fetchall()
    models = set()
    with open(out, "w", encoding="utf-8") as handle:
        for case_id, variant, answer_raw, mode, repeat, criterion, score, verdict, version, sha, judge, digest, sample, key, raw, error in rows:
            replayed = json.loads(answer_raw or "{}")
            model = replayed.get("model") if isinstance(replayed, dict) and replayed.get("model") else variant
            models.add(model)
            backend = (json.loads(raw or "{}").get("backend") or {})
            timings = backend.get("timings") or {}
            usage = backend.get("usage") or {}
            line = {"case_id": case_id, "model": model, "mode": mode, "repeat": repeat,
                    "criterion": criterion.removeprefix("judge:"), "p_yes": score, "verdict": verdict,
                    "rubric_version": version, "rubric_sha256": sha, "judge_model": judge, "judge_digest": digest,
                    "sample": sample, "prompt_tokens": usage.get("prompt_tokens"),
                    "evaluated_tokens": timings.get("prompt_n"), "reused_tokens": timings.get("reused_n"),
                    "cache_key": key, "error": error}
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"{len(rows)} verdicts of judge run {judge_run} on the answers of {', '.join(sorted(models))} -> {out}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
