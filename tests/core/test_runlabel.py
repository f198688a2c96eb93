"""A run's name and tags (ragqual.core.runlabel) and the settings diff that leaves them out
(ragqual.core.paramdiff): pure, hand-checked."""

import pytest

from ragqual.core import paramdiff
from ragqual.core.runlabel import RunLabel, parse_tag, run_label, split_tag_values
from ragqual.errors import InputError


def test_name_and_tags_are_stored_in_params_and_read_back():
    label = run_label(" chunks-128 ", ["owner=ana", "dataset=v2.1", "note=a b=c"])
    assert label == RunLabel("chunks-128", (("dataset", "v2.1"), ("note", "a b=c"), ("owner", "ana")))
    params = {"chunking": {"chunk_tokens": 128}, **label.as_params()}
    assert params["name"] == "chunks-128" and params["tags"] == {"dataset": "v2.1", "note": "a b=c", "owner": "ana"}
    assert RunLabel.from_params(params) == label
    assert label.text() == '"chunks-128" [dataset=v2.1 note=a b=c owner=ana]'


def test_an_unlabelled_run_stores_nothing_and_reads_as_unlabelled():
    assert RunLabel().as_params() == {}
    assert RunLabel.from_params({"chunking": {}}) == RunLabel()
    assert RunLabel.from_params(None).text() == ""
    assert run_label(None, {"team": "search"}) == RunLabel(None, (("team", "search"),))


@pytest.mark.parametrize("tags, fragment", [
    (["dataset"], "--tag 'dataset': expected key=value"),
    (["=v2"], "the key '' must be letters"),
    (["bad key=1"], "the key 'bad key' must be letters"),
    (["k/x=1"], "the key 'k/x' must be letters"),
    (["team="], "the value must not be empty"),
    (["team=a\nb"], "one line"),
    (["team=a", "team=b"], "--tag team is given twice"),
])
def test_bad_tags_are_refused_naming_the_flag(tags, fragment):
    with pytest.raises(InputError, match="--tag") as caught:
        run_label(None, tags)
    assert fragment in str(caught.value)


def test_a_repeated_tag_with_the_same_value_is_one_tag():
    assert run_label(None, ["a=1", "a=1"]).tags == (("a", "1"),)


@pytest.mark.parametrize("name", ["", "   ", "two\nlines", "x" * 201])
def test_bad_names_are_refused_naming_the_flag(name):
    with pytest.raises(InputError, match="^--name"):
        run_label(name)


def test_parse_tag_splits_at_the_first_equals_sign():
    assert parse_tag("expr=a=b") == ("expr", "a=b")


def test_key_value_tags_the_run_and_a_bare_word_selects_goldens():
    assert split_tag_values(["water", "dataset=v2", "multi-hop", "owner=ana"]) == (
        ["water", "multi-hop"], ["dataset=v2", "owner=ana"])


def test_setting_changes_leave_the_label_out_and_add_the_fingerprint():
    base = {"chunking": {"chunk_tokens": 256}, "name": "a", "tags": {"x": "1"}, "goldens": 10}
    new = {"chunking": {"chunk_tokens": 128}, "name": "b", "tags": {"x": "2", "y": "3"}, "goldens": 10}
    assert paramdiff.setting_changes(base, "f" * 64, new, "e" * 64) == [
        ("chunking.chunk_tokens", 256, 128), ("corpus_fingerprint", "f" * 12, "e" * 12)]
    assert paramdiff.setting_changes(base, "f" * 64, {**base, "name": "other"}, "f" * 64) == []


def test_summary_is_one_short_line_with_the_fingerprint_last():
    diff = [("corpus_fingerprint", "aaaaaaaaaaaa", "bbbbbbbbbbbb"), ("chunking.chunk_tokens", 256, 128)]
    assert paramdiff.summary(diff) == "chunking.chunk_tokens 256->128 (+1 more)"
    assert paramdiff.summary(diff, width=200) == (
        "chunking.chunk_tokens 256->128, corpus_fingerprint aaaaaaaaaaaa->bbbbbbbbbbbb")
    assert paramdiff.summary([("retrieval.context_k", 5, 3)]) == "retrieval.context_k 5->3"
    assert paramdiff.summary([("case_ids", ["q1"] * 9, ["q2"])]) == "case_ids ['q1', 'q1', ...->['q2']"
    assert paramdiff.summary([]) == ""
