"""One small real evaluation (the bundled corpus, the first goldens, the mock model) and every kind
of HTML report written from it, shared by the page and browser tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.conftest import invoke, shared_cache, workdir  # noqa: F401 (fixtures)

QUESTIONS = 24


@dataclass(frozen=True)
class Reports:
    root: Path
    retrieval_run: int
    generation_run: int
    pages: dict[str, Path]  # kind -> file


def write(args: list[str], out: Path) -> Path:
    result = invoke(*args, "--format", "html", "-o", str(out))
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def reports(workdir) -> Reports:  # noqa: F811
    result = invoke("--json", "eval", "--limit", str(QUESTIONS), "--repeats", "2")
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout.strip().splitlines()[-1])
    r, g = done["retrieval_run"], done["generation_run"]
    out = workdir / "eval-results" / "reports"
    ablation = invoke("retrieval", "--ablate", "--limit", str(QUESTIONS))
    assert ablation.exit_code == 0, ablation.output
    pages = {
        "eval": Path(done["html"]),
        "run-retrieval": write(["report", str(r)], out / "run-retrieval.html"),
        "run-generation": write(["report", str(g)], out / "run-generation.html"),
        "ablation": write(["report", "--last"], out / "ablation.html"),
        "failures": write(["report", str(g), "--failures"], out / "failures.html"),
        "compare": write(["compare", f"{r}:dense", f"{r}:hybrid", "--by-tag"], out / "compare.html"),
        "history": write(["history"], out / "history.html"),
        "matrix": write(["matrix", "--run", str(g)], out / "matrix.html"),
    }
    return Reports(workdir, r, g, pages)
