"""The files written under eval-results/reports/ (`eval`'s Markdown report and page, `retrieval
--report`'s JSON and Markdown) each record the history head, and `verify --expect-from` reads it."""

from __future__ import annotations

import json

from ragqual.core.published_head import find_head
from tests.cli.conftest import invoke


def test_eval_files_publish_the_head(workdir):
    result = invoke("--json", "eval", "--limit", "2", "--repeats", "1")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    retrieval = invoke("retrieval", "--report", "--strategy", "bm25")
    assert retrieval.exit_code == 0, retrieval.output
    reports = workdir / "eval-results" / "reports"
    files = [reports / f"eval-run{out['generation_run']}.md", reports / f"eval-run{out['generation_run']}.html"]
    files += sorted(reports.glob(f"retrieval-run{out['generation_run'] + 1}.*"))
    assert len(files) == 4
    verified = json.loads(invoke("--json", "verify").stdout)
    for path in files:
        head = find_head(path.read_text(encoding="utf-8"))
        assert head is not None, path.name
        check = invoke("verify", "--expect-from", str(path))
        assert check.exit_code == 0, (path.name, check.output)
    newest = find_head(files[-1].read_text(encoding="utf-8"))
    assert (newest.digest, newest.seals) == (verified["head"], verified["seals"])
