"""The published history head: one line of text, found again in every format ragqual writes."""

from __future__ import annotations

import json

import pytest

from ragqual.core.published_head import HEAD_KEY, PublishedHead, find_head, parse_head

HEAD = PublishedHead("ab" * 32, 41, 40)
LINE = HEAD.text()


def test_the_line_reads_back():
    assert LINE == f"sha256:{'ab' * 32} at seal 41 (40 seals)"
    assert parse_head(LINE) == HEAD
    assert parse_head(LINE.replace("ab", "xy", 1)) is None
    assert parse_head(LINE + " extra") is None


@pytest.mark.parametrize("document", [
    f"## Run 3\n\n- **run_id**: 3\n- **{HEAD_KEY}**: {LINE}\n",  # report --format markdown
    f"Run 3\n  run_id        3\n  {HEAD_KEY}  {LINE}\n",  # report --format table
    f'<dl class="header"><dt>run_id</dt><dd>3</dd><dt>{HEAD_KEY}</dt><dd>{LINE}</dd></dl>',  # a page
    f"# ragqual evaluation\n\nretrieval run 1, generation run 2\n{HEAD_KEY}: {LINE}\n",  # the eval report
    f"- {HEAD_KEY}: {LINE}\n",  # the retrieval report's run list
    json.dumps({"header": {"run_id": 3, HEAD_KEY: LINE}, "groups": []}),  # report --format json
    json.dumps({"run": {HEAD_KEY: LINE}}, indent=2),  # nested anywhere
    json.dumps([{"x": 1}, {HEAD_KEY: LINE}]),
])
def test_found_in_every_format(document):
    assert find_head(document) == HEAD


def test_the_first_one_counts():
    later = PublishedHead("cd" * 32, 50, 50).text()
    assert find_head(f"{HEAD_KEY}: {LINE}\n\nanswer: {HEAD_KEY}: {later}\n") == HEAD


@pytest.mark.parametrize("document", [
    "# notes\n",
    LINE,  # the value without its key is not a published head
    json.dumps({"header": {"run_id": 3}}),
    json.dumps({HEAD_KEY: "not a head"}),
    "{ not json, and no head",
    f"{HEAD_KEY}: sha256:{'ab' * 31} at seal 1 (1 seals)",  # a digest too short
])
def test_no_head(document):
    assert find_head(document) is None


def test_text_that_only_looks_like_json_is_read_as_text():
    assert find_head("{ draft }\n" + f"{HEAD_KEY}: {LINE}") == HEAD
