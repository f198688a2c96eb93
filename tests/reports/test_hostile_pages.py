"""Every kind of HTML page written from a history full of hostile strings (golden ids, tags and
questions such as `<!--<script>` or `</script><script>…`, two model names of that kind, and a
sentiment case carrying them in its id, slug, tags and input),
loaded in headless chromium: the page is whole (every section, table row and chart the file
holds is in the DOM, every chart drawn), no payload ran and no element was injected.

Skipped when chromium is absent, unless RAGQUAL_REQUIRE_BROWSER=1 (as .ci/run sets)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.conftest import invoke
from tests.reports.browser import chromium, inspect
from ragqual.subjects.sentiment.subject import SentimentSubject
from tests.reports.hostile import FOREIGN, MARKER, MODEL_NAMES, PAYLOADS, STRUCTURE, Structure, counted, \
    hostile_case, page_strings, write_project
from tests.support.fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[2]
# The charts each page has with this history (a page that lost a chart fails).
# A generation run's page adds one whatif curve per model; history draws one chart per headline metric.
CHARTS = {"eval": 6, "run-retrieval": 2, "run-generation": 3, "run-models": 5, "failures": 0, "run-subject": 1,
          "subject-failures": 0, "compare": 2, "compare-models": 1, "history": 7, "case-history": 0, "matrix": 1}
# The hostile strings each page shows. The history page shows no free text (run ids, git shas,
# fingerprints, modes, metrics) and is checked for being whole only.
REACHED = {kind: PAYLOADS for kind in ("eval", "run-retrieval", "run-generation", "run-models", "failures", "compare")}
REACHED.update({kind: (MARKER, *MODEL_NAMES) for kind in ("compare-models", "matrix")})
REACHED["run-models"] += MODEL_NAMES
REACHED["failures"] += MODEL_NAMES
REACHED["case-history"] = (PAYLOADS[0],)
REACHED["run-subject"] = PAYLOADS
REACHED["subject-failures"] = (MARKER,)  # a subject's failure list names the case, not its input


@dataclass(frozen=True)
class Pages:
    files: dict[str, Path]


def _html(args: list[str], out: Path) -> Path:
    result = invoke(*args, "--format", "html", "-o", str(out))
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, shared_cache) -> Pages:
    root = tmp_path_factory.mktemp("hostile")
    write_project(root, REPO)
    out = root / "eval-results" / "reports"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for var in ("RAGQUAL_DB", "QDRANT_URL", "OLLAMA_HOST", "OPENAI_API_KEY"):
            mp.delenv(var, raising=False)
        mp.setenv("RAGQUAL_CACHE_DIR", str(shared_cache))
        mp.setenv("RAGQUAL_QDRANT_WAIT", "5")
        result = invoke("--json", "eval", "--repeats", "2")
        assert result.exit_code == 0, result.output
        done = json.loads(result.stdout.strip().splitlines()[-1])
        r, g = done["retrieval_run"], done["generation_run"]
        with FakeOpenAI() as server:
            models = [f"openai:{server.base_url}#{name}" for name in MODEL_NAMES]
            result = invoke("--json", "generation", "--all-modes", "--repeats", "1",
                            *[arg for model in models for arg in ("--model", model)])
            assert result.exit_code == 0, result.output
        m = json.loads(result.stdout[result.stdout.index("{"):])["run_id"]
        cases = SentimentSubject.cases
        mp.setattr(SentimentSubject, "cases", lambda self: [*cases(self), hostile_case()])
        result = invoke("--json", "run", "--subject", "sentiment", "--model", "mock", "--trial-count", "1")
        assert result.exit_code == 0, result.output
        s = json.loads(result.stdout[result.stdout.index("{"):])["run_id"]
        files = {
            "eval": Path(done["html"]),
            "run-retrieval": _html(["report", str(r), "--by", "tag"], out / "run-retrieval.html"),
            "run-generation": _html(["report", str(g)], out / "run-generation.html"),
            "run-models": _html(["report", str(m)], out / "run-models.html"),
            "failures": _html(["report", str(m), "--failures"], out / "failures.html"),
            "run-subject": _html(["report", str(s)], out / "run-subject.html"),
            "subject-failures": _html(["report", str(s), "--failures"], out / "subject-failures.html"),
            "compare": _html(["compare", f"{r}:dense", f"{r}:hybrid", "--by-tag"], out / "compare.html"),
            "compare-models": _html(["compare", f"{m}:{models[0]}/e2e", f"{m}:{models[1]}/e2e"],
                                    out / "compare-models.html"),
            "history": _html(["history"], out / "history.html"),
            "case-history": _html(["history", "--case", f"hostile-0-{PAYLOADS[0]}"], out / "case-history.html"),
            "matrix": _html(["matrix", "--run", str(m)], out / "matrix.html"),
        }
    return Pages(files)


@pytest.mark.parametrize("kind", sorted(REACHED))
def test_the_hostile_strings_reach_the_page(hostile, kind):
    """The file holds the payloads as text or chart data (so the browser test below is not vacuous)."""
    shown = "\x00".join(page_strings(hostile.files[kind].read_text(encoding="utf-8")))
    assert [s for s in REACHED[kind] if s not in shown] == []


@pytest.mark.parametrize("kind", sorted(CHARTS))
def test_a_hostile_page_is_whole_and_inert_in_chromium(hostile, kind, tmp_path):
    chromium()
    meant = Structure(hostile.files[kind].read_text(encoding="utf-8"))
    seen = inspect(hostile.files[kind], STRUCTURE + FOREIGN, tmp_path)
    assert not seen.pwned, f"{kind}: a payload ran"
    assert {t: seen.counts[t] for t in FOREIGN} == dict.fromkeys(FOREIGN, 0), f"{kind}: an element was injected"
    assert {t: seen.counts[t] for t in STRUCTURE} == counted(meant, STRUCTURE), f"{kind}: the page is not whole"
    assert seen.counts["script"] == 2 + len(meant.charts)  # the chart library, the page script, one per chart
    assert seen.headings == meant.headings and seen.counts["main"] == 1
    assert [c["id"] for c in seen.charts] == meant.charts and len(meant.charts) == CHARTS[kind]
    for chart in seen.charts:
        assert chart["drawn"], f"{kind}: {chart['id']} not drawn"
        assert chart["marks"] > 0, f"{kind}: {chart['id']}: no data marks drawn"
    assert seen.console == []
