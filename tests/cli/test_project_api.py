"""`ragqual.Project`: the CLI's run commands as Python calls, with the same numbers as the CLI."""

from __future__ import annotations

import json
import re

import pandas as pd

import ragqual
from tests.cli.conftest import REPO, invoke


def readme_project_example() -> str:
    text = (REPO / "docs" / "how-to" / "sql-and-pandas.md").read_text(encoding="utf-8")
    section = text.split("## From Python", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    return next(block for block in blocks if "Project(" in block)


def test_readme_project_example_runs(workdir):
    namespace: dict = {}
    exec(compile(readme_project_example(), "docs/how-to/sql-and-pandas.md", "exec"), namespace)  # noqa: S102
    retrieval, wide, narrow = namespace["retrieval"], namespace["wide"], namespace["narrow"]
    assert set(retrieval.summary) == {"dense", "hybrid"}
    assert 0.0 <= namespace["hybrid_recall"] <= 1.0
    assert wide.run_id != narrow.run_id != retrieval.run_id
    verdicts = namespace["verdicts"]
    assert isinstance(verdicts, pd.DataFrame) and {"pass", "score"} <= set(verdicts.metric)
    assert set(verdicts.verdict) <= {"regression", "improvement", "equivalent", "inconclusive"}
    history = ragqual.Project(".").history()
    try:
        runs = history.runs()
        assert {retrieval.run_id, wide.run_id, narrow.run_id} <= set(runs.run_id)
        metric_rows = retrieval.to_frame()
        assert set(metric_rows.run_id) == {retrieval.run_id} and len(metric_rows) > 0
    finally:
        history.close()


def test_project_retrieval_matches_the_cli(workdir):
    """The same options give the same numbers through the API and through `ragqual retrieval`."""
    result = ragqual.Project(".").retrieval(strategies=["bm25"], limit=30)
    cli = invoke("--json", "retrieval", "--strategy", "bm25", "--limit", "30")
    assert cli.exit_code == 0, cli.output
    overall = json.loads(cli.stdout)["quality"]["bm25"]["overall"]
    assert result.summary["bm25"] == overall


def test_project_generation_summary_and_frame(workdir):
    result = ragqual.Project(".").generation(modes=["oracle", "e2e"], repeats=1, limit=10)
    assert set(result.summary) == {"mock oracle", "mock e2e"}
    assert result.summary["mock oracle"]["questions"] == 10
    trials = result.to_frame()
    assert len(trials) == 20 and set(trials["mode"]) == {"oracle", "e2e"}


def test_project_ingest_reports_the_corpus(workdir):
    result = ragqual.Project(".").ingest()
    frame = result.to_frame()
    check = invoke("--json", "corpus", "check")
    assert result.documents == json.loads(check.stdout)["documents"]
    assert frame["chunks"].sum() == result.chunks and len(result.fingerprint) == 64


def test_eval_prints_the_retrieval_tier_before_the_generation_tier_runs(workdir):
    """The retrieval results appear as soon as they are stored: before the first generation trial
    is logged, not after the whole job."""
    result = invoke("eval", "--limit", "6", "--repeats", "1")
    assert result.exit_code == 0, result.output
    output = result.output
    first_trial_log = output.index("generation: ")
    assert output.index("retrieval tier: run") < first_trial_log
    assert output.index("hybrid  recall@5") < first_trial_log


def test_elapsed_time_counts_this_process_not_the_shell_that_started_it():
    """`bash -c "sleep 15 && ragqual eval"` printed 19.7 s for 5 s of work: bash exec's the last
    command, so the kernel's start time of the process is the shell's. Counted from the process's
    own start, the elapsed time fits in the time the process lived (the wall time less the
    shell's wait) and still holds what the process did after its imports."""
    import shlex
    import subprocess
    import sys
    import time

    wait = 2.0
    code = ("import time\nimport ragqual.cli.progress as progress\nbegun = time.monotonic()\ntime.sleep(0.5)\n"
            "print(progress.elapsed_since_start(), time.monotonic() - begun)")
    shell = f"sleep {wait} && exec {shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    outside = time.monotonic()
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, check=True)
    lived = time.monotonic() - outside - wait
    elapsed, since_imports = map(float, done.stdout.split())
    assert 0.5 <= since_imports <= elapsed <= lived + 0.05