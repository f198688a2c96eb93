"""Every shell example in the README and docs/ runs, and prints what the page says it prints
(the convention: tests/docs/examples.py and docs/about.md)."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from tests.cli.conftest import make_bundled_project
from tests.docs.examples import REPO, environment, examples, matches, pages, run

RUNNABLE = [page for page in pages() if any(e.runs for e in examples(page))]


def test_every_shown_example_is_a_console_block_or_marked_illustrative():
    loose = [e.where() for page in pages() for e in examples(page) if not e.runs and e.illustrative is None]
    assert not loose, ("blocks with `$ ` lines that are neither ```console (run by this test) nor marked "
                       f"`<!-- illustrative: WHY -->`: {loose}")


def test_the_pages_have_examples_that_run():
    names = {str(p.relative_to(REPO)) for p in RUNNABLE}
    assert {"docs/tutorial/first-evaluation.md", "docs/how-to/compare-and-gate.md"} <= names


@pytest.mark.parametrize(("want", "got", "ok"), [
    (["a", "b"], ["a", "b", ""], True),
    (["a", "b"], ["a", "c"], False),
    (["a", "...", "d"], ["a", "b", "c", "d"], True),
    (["a", "...", "d"], ["a", "d"], True),
    (["a", "...", "d"], ["a", "b", "c"], False),
    (["took ... s, run 2"], ["took 84.1 s, run 2"], True),
    (["took ... s, run 2"], ["took 84.1 s, run 3"], False),
    (["recall@5 0.977"], ["recall@5 0.978"], False),
])
def test_shown_output_matches_with_ellipses_only_where_written(want, got, ok):
    assert matches(want, got) is ok


@pytest.fixture(scope="session")
def docs_cache(tmp_path_factory) -> Path:
    """One embedding and response cache for every page: the corpus is embedded once."""
    return tmp_path_factory.mktemp("docs-cache")


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: str(p.relative_to(REPO)))
def test_a_pages_examples_print_what_the_page_shows(page, tmp_path, docs_cache):
    project = make_bundled_project(tmp_path / "project")
    env = environment(project, docs_cache)
    failures = []
    for example in (e for e in examples(page) if e.runs):
        for command in example.commands:
            got = run(command.text, project, env).splitlines()
            if not matches(command.expected, got):
                diff = "\n".join(difflib.unified_diff(command.expected, got, "the page", "the run", lineterm=""))
                failures.append(f"{page.relative_to(REPO)}:{command.line}: $ {command.text}\n{diff}")
    assert not failures, "\n\n".join(failures)
