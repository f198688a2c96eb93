"""Write one run's stored e2e trials of one model as an answers file (SPEC: `answers:PATH`).

    python datasets/judge-labels/export_answers.py HISTORY.db RUN_ID MODEL_URI OUT.jsonl

Reads the history with raw sqlite3 (read-only). Each line: id (the golden id), answer, context
(the injected chunks, as {doc_id, text}, split from the rendered prompt's numbered context block),
model, latency_ms, prompt_tokens, completion_tokens, mode.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys

_CHUNK = re.compile(r"(?:^|\n\n)\[(\d+)\] ")


def context_chunks(rendered_prompt: str, injected: list[str]) -> list[dict[str, str]]:
    messages = json.loads(rendered_prompt)
    user = next(m["content"] for m in messages if m["content"].startswith("<<<CONTEXT"))
    block = user.split("<<<CONTEXT\n", 1)[1].split("\nCONTEXT", 1)[0]
    pieces = _CHUNK.split(block)[1:]  # [number, text, number, text, ...]
    texts = [pieces[i + 1].strip() for i in range(0, len(pieces), 2)]
    if len(texts) != len(injected):
        raise ValueError(f"{len(texts)} context pieces but {len(injected)} injected chunks")
    return [{"doc_id": chunk.split("#")[0], "text": text} for chunk, text in zip(injected, texts)]


def main(db: str, run_id: int, model: str, out: str) -> None:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "select c.case_id, t.parsed_output, t.rendered_prompt, t.raw_output, t.latency_ms, "
        "t.prompt_tokens, t.completion_tokens, t.mode from trials t join cases c on c.id = t.case_pk "
        "join variant_configs v on v.id = t.variant_id where t.run_id = ? and v.name = ? "
        "and t.mode = 'e2e' and t.repeat_index = 0 and t.error is null order by t.id",
        (run_id, model)).fetchall()
    with open(out, "w", encoding="utf-8") as handle:
        for case_id, answer, prompt, raw, latency, ptok, ctok, mode in rows:
            injected = json.loads(raw).get("injected") or []
            line = {"id": case_id, "answer": answer or "", "context": context_chunks(prompt, injected),
                    "model": model, "latency_ms": round(latency or 0.0, 1), "prompt_tokens": ptok,
                    "completion_tokens": ctok, "mode": mode}
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"{len(rows)} answers of {model} (run {run_id}) -> {out}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])
