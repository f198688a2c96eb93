"""One writer of the concurrency test: a run of N trials, each appended in its own transaction.

    python tests/store/writer_process.py URL LABEL COUNT READY_FILE GO_FILE

Opens the store, touches READY_FILE and waits for GO_FILE so all writers start
together; then interns the same case, variant and prompt as every other writer (so
they race on those too), starts its own run and appends COUNT trials, one assertion
row and one score row each. Prints the run id on stdout; anything on stderr or a
non-zero exit is a failure.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ragqual.store.records import AssertionRow, Provenance, ScoreRow, TrialRecord
from ragqual.store.runstore import RunStore

START_TIMEOUT_S = 120


def _provenance(label: str) -> Provenance:
    return Provenance(git_sha="abc123", git_dirty=False, git_note="ok", ragqual_version="0.1.0",
                      python_version="3.11", argv=("writer", label), params={"writer": label})


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.005)


def _trial(run_id: int, case_pk: int, variant: int, prompt: int, index: int, label: str) -> TrialRecord:
    passed = index % 3 != 0
    return TrialRecord(
        run_id=run_id, case_pk=case_pk, variant_id=variant, mode="e2e", repeat_index=index,
        system_prompt_id=prompt, rendered_prompt=[{"role": "user", "content": f"{label} {index}"}],
        context="ctx", raw_output={"text": f"answer {index}"}, parsed_output=f"answer {index}", error=None,
        prompt_tokens=10, completion_tokens=3, latency_ms=1.0, load_ms=None, cost=None,
        cache_key=None, cache_hit=False,
        assertions=(AssertionRow("a1", 1, "correctness", 1.0, passed),),
        scores=(ScoreRow("weighted-assertions", 1, 1.0 if passed else 0.0, passed,
                         {"correctness": 1.0 if passed else 0.0}),),
        case_id="shared-case",
    )


def main(url: str, label: str, count: int, ready: Path, go: Path) -> None:
    store = RunStore.open(url, auto_create=False)
    ready.touch()
    _wait_for(go)
    case_pk = store.record_case("rag", "shared-case", "shared-case", {"id": "shared-case", "query": "q?"})
    variant = store.intern_variant("mock", "mock", "mock", {"temperature": 0})
    prompt = store.intern_system_prompt("You answer from context.")
    run_id = store.start_run("generation", "rag", _provenance(label))
    for index in range(count):
        store.append_trial(_trial(run_id, case_pk, variant, prompt, index, label))
    store.add_event(run_id, "finished")
    store.engine.dispose()
    print(run_id)


if __name__ == "__main__":
    url_arg, label_arg, count_arg, ready_arg, go_arg = sys.argv[1:6]
    main(url_arg, label_arg, int(count_arg), Path(ready_arg), Path(go_arg))
