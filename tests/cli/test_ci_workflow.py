"""The example workflow (docs/ci/github-workflow.yml) run for real: its `run:` steps that call
ragqual, in bash, against a throwaway git repository with two commits: the baseline measured at
the first, the branch at the second. Also the goldens lock end to end (`corpus lock`, `check
--locked`, the lock state every run records)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from junitparser import JUnitXml

from tests.cli.conftest import REPO

WORKFLOW = REPO / "docs" / "ci" / "github-workflow.yml"
RAGQUAL_STEPS = ("Goldens are the pinned ones", "Evaluate the branch", "Gate against the baseline")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org"}


def steps() -> dict[str, dict]:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return {s.get("name", s.get("uses")): s for s in workflow["jobs"]["ragqual"]["steps"]}, workflow["env"]


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def git(cwd: Path, env: dict[str, str], *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def project(tmp_path, shared_cache):
    root = tmp_path / "project"
    root.mkdir()
    shutil.copytree(REPO / "corpus", root / "corpus")
    shutil.copytree(REPO / "goldens", root / "goldens")
    (root / "pyproject.toml").write_text("[tool.ragqual]\n", encoding="utf-8")
    (root / "eval-results").mkdir()
    (root / ".gitignore").write_text("eval-results/*\n!eval-results/baselines/\nragqual-*.xml\nragqual-comment.md\neval.json\nrun-id\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RAGQUAL_DB", "QDRANT_URL", "OLLAMA_HOST")}
    env.update(GIT_ENV, RAGQUAL_CACHE_DIR=str(shared_cache), PATH=f"{Path(sys.executable).parent}:{env['PATH']}",
               GITHUB_OUTPUT=str(tmp_path / "github_output"))
    return root, env


@pytest.mark.slow
def test_the_workflow_gates_a_branch_and_warns_of_a_stale_baseline(project, tmp_path):
    root, env = project
    found, workflow_env = steps()
    assert set(RAGQUAL_STEPS) <= set(found)
    env.update(workflow_env, EVAL_ARGS="--limit 3 --repeats 1")
    # Commit 1: corpus, goldens and their lock; the baseline is measured here and promoted.
    assert bash("ragqual corpus lock", root, env).returncode == 0
    git(root, env, "init", "-q")
    git(root, env, "add", "-A")
    git(root, env, "commit", "-qm", "corpus, goldens, lock")
    first = git(root, env, "rev-parse", "HEAD")
    measured = bash("ragqual --json eval $EVAL_ARGS", root, env)
    run = json.loads(measured.stdout)["generation_run"]
    assert bash(f"ragqual baseline promote {run}", root, env).returncode == 0
    # Commit 2: the baseline file; the branch is evaluated here, one commit after the baseline's.
    git(root, env, "add", "-A")
    git(root, env, "commit", "-qm", "baseline")
    env["STALE_AFTER"] = "0"
    for name in RAGQUAL_STEPS:
        done = bash(found[name]["run"], root, env)
        assert done.returncode == 0, (name, done.stdout, done.stderr)
    comment = (root / "ragqual-comment.md").read_text(encoding="utf-8")
    assert comment.splitlines()[3].startswith("**")  # the verdict first
    assert f"Stale baseline: the baseline's commit {first[:12]} is 1 commits behind HEAD (more than 0 commits)" \
        in comment
    assert "exit=0" in Path(env["GITHUB_OUTPUT"]).read_text()
    for report in ("ragqual-run.xml", "ragqual-compare.xml"):
        (suite,) = list(JUnitXml.fromfile(str(root / report)))
        assert suite.tests > 0
    # Within the limit: no warning.
    env["STALE_AFTER"] = "30"
    assert bash(found["Gate against the baseline"]["run"], root, env).returncode == 0
    assert "Stale baseline" not in (root / "ragqual-comment.md").read_text(encoding="utf-8")
    # A branch that does not descend from the baseline's commit.
    git(root, env, "checkout", "-q", "--orphan", "elsewhere")
    git(root, env, "commit", "-qm", "unrelated history")
    assert bash(found["Gate against the baseline"]["run"], root, env).returncode == 0
    assert f"the baseline's commit {first[:12]} is not an ancestor of HEAD" in \
        (root / "ragqual-comment.md").read_text(encoding="utf-8")


def test_the_lock_catches_drift_and_runs_record_it(project):
    root, env = project
    assert bash("ragqual corpus lock", root, env).returncode == 0
    first = (root / "ragqual.lock.json").read_bytes()
    assert bash("ragqual corpus lock", root, env).returncode == 0
    assert (root / "ragqual.lock.json").read_bytes() == first  # deterministic
    lock = json.loads(first)
    assert lock["format"] == "ragqual-lock/1" and set(lock["prompts"]) == {"rag-system", "rewrite-system"}
    assert all(p.startswith(("corpus/", "goldens/")) for p in lock["files"])
    ok = bash("ragqual corpus check --locked", root, env)
    assert ok.returncode == 0, ok.stderr
    retrieval = bash("ragqual --json retrieval --limit 2", root, env)
    assert retrieval.returncode == 0, retrieval.stderr
    goldens = sorted((root / "goldens").glob("*.jsonl"))
    goldens[0].write_bytes(goldens[0].read_bytes() + b"\n")
    goldens[1].unlink()
    (root / "corpus" / "new-doc.md").write_text("# New\n\nA new document.\n", encoding="utf-8")
    drifted = bash("ragqual corpus check --locked", root, env)
    assert drifted.returncode == 1
    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731
    assert drifted.stdout.splitlines() == sorted([f"drifted added: corpus/new-doc.md",
                                                  f"drifted changed: {rel(goldens[0])}",
                                                  f"drifted removed: {rel(goldens[1])}"], key=lambda l: l.split(": ")[1])
    assert bash("ragqual --json retrieval --limit 2", root, env).returncode == 0
    states = bash("ragqual sql \"SELECT json_extract(params, '$.goldens_lock.status') FROM runs ORDER BY id\"",
                  root, env).stdout
    assert "locked" in states.splitlines()[-2] and "drifted" in states.splitlines()[-1]
    (root / "ragqual.lock.json").unlink()
    assert bash("ragqual --json retrieval --limit 2", root, env).returncode == 0
    states = bash("ragqual sql \"SELECT json_extract(params, '$.goldens_lock.status') FROM runs ORDER BY id\"",
                  root, env).stdout
    assert states.splitlines()[-1].strip() == "no lock"
    missing = bash("ragqual corpus check --locked", root, env)
    assert missing.returncode == 2 and "ragqual corpus lock" in missing.stderr


def test_eval_failures_only_prints_the_failing_trials_and_their_cause(project):
    root, env = project
    done = bash("ragqual eval --limit 2 --repeats 1 --failures-only", root, env)
    assert done.returncode == 0, done.stderr
    assert "generation:" not in done.stdout and "retrieval tier" not in done.stdout
    assert "Failures of run 2" in done.stdout and "failing_trials" in done.stdout
    failing = [line for line in done.stdout.splitlines() if " noretrieval " in line]
    assert len(failing) == 2 and all("no-context" in line for line in failing)  # the mock without context
    assert not [line for line in done.stdout.splitlines() if " e2e " in line or " oracle " in line]
