"""`ragqual generation --all-modes` reads the corpus and goldens once: the decomposition's measured
advice is computed from the corpus context the run read, not from a second reading of the files;
`ragqual whatif` on the same run still reads them."""

from __future__ import annotations

import json
import re

import pytest

import ragqual.adapters.collection_files as collection_files
from tests.support.projects import own_project

from .conftest import invoke
from .test_own_corpus_advice import DOCS, GOLDENS

CHUNKING = ("--chunk-tokens", "40", "--overlap-tokens", "0")


@pytest.fixture
def project(tmp_path, shared_cache):
    with own_project(tmp_path, DOCS, GOLDENS, shared_cache) as root:
        yield root


def test_the_generation_command_reads_the_corpus_once_for_its_advice(project, monkeypatch):
    real, reads = collection_files.read_any, []

    def counted(*args, **kwargs):
        reads.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(collection_files, "read_any", counted)
    result = invoke("generation", "--model", "mock", "--all-modes", "--repeats", "1", *CHUNKING)
    assert result.exit_code == 0, result.output
    assert len(re.findall(r"measured on this run: ", result.output)) == 1
    assert len(reads) == 1, reads

    run_id = re.search(r"^run (\d+):", result.output, re.M).group(1)
    asked = invoke("--json", "whatif", run_id, "--threshold", "0.3:0.8:0.05", *CHUNKING)
    assert asked.exit_code == 0, asked.output
    assert len(reads) == 2  # `whatif` reads the run's corpus itself
    assert json.loads(asked.stdout)[0]["variant"] == "mock"
