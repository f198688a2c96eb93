"""BEIR and TREC parsing and validation: pure, hand-built inputs, every problem with file and line."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragqual.core import collections as col
from ragqual.core.corpus import Document
from ragqual.errors import Issue


def _jsonl(*rows) -> bytes:
    return ("\n".join(json.dumps(r) if not isinstance(r, str) else r for r in rows) + "\n").encode()


# --- BEIR -----------------------------------------------------------------------------------------


def test_beir_corpus_joins_title_and_text_and_names_its_file():
    parsed = col.parse_beir_corpus("c/corpus.jsonl", _jsonl({"_id": "D-1", "title": "Boiling", "text": "Boil 3 min."},
                                                            {"_id": "d2", "text": "Only text", "metadata": {}}), "corpus.jsonl")
    assert parsed.issues == []
    (d1, file1, line1), (d2, _, line2) = parsed.documents
    assert (d1.doc_id, d1.text, d1.container, file1, line1) == ("D-1", "Boiling\n\nBoil 3 min.", "corpus.jsonl", "c/corpus.jsonl", 1)
    assert (d2.text, line2) == ("Only text", 2)
    assert d1.sha256 != d2.sha256


def test_beir_corpus_reports_every_bad_line():
    data = _jsonl({"_id": "a", "text": ""}, "{not json", {"text": "no id"}, {"_id": "b c", "text": "x"},
                  {"_id": 7, "text": "x"}, {"_id": "ok", "text": "fine"}, {"_id": "h#1", "text": "x"}, {"_id": "a/b", "text": "x"})
    parsed = col.parse_beir_corpus("corpus.jsonl", data, "corpus.jsonl")
    lines = [i.line for i in parsed.issues]
    assert lines == [1, 2, 3, 4, 5, 7, 8]
    assert [d.doc_id for d, _, _ in parsed.documents] == ["ok"]
    assert "empty title and text" in parsed.issues[0].message
    assert "white space" in parsed.issues[3].message and "'#' or '/'" in parsed.issues[5].message


def test_a_line_nested_too_deeply_is_a_problem_at_its_line_not_a_crash():
    deep = '{"_id": "d2", "text": "x", "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"
    data = _jsonl({"_id": "d1", "text": "fine"}, deep, {"_id": "d3", "text": "fine too"})
    parsed = col.parse_beir_corpus("corpus.jsonl", data, "corpus.jsonl")
    assert parsed.issues == [Issue("corpus.jsonl", 2, "invalid JSON: nested too deeply")]
    assert [d.doc_id for d, _, _ in parsed.documents] == ["d1", "d3"]


@pytest.mark.parametrize("escape", ["\\udc80", "\\uD800", "\\udfff", "\\ude00x", "\\udc80\\ud83d"])
def test_a_lone_surrogate_escape_is_a_problem_at_its_line_in_corpus_and_queries(escape):
    bad = '{"_id": "d2", "title": "", "text": "caf' + escape + '"}'
    data = _jsonl({"_id": "d1", "text": "fine"}, bad)
    for parse in (lambda d: col.parse_beir_corpus("f.jsonl", d, "f.jsonl"), lambda d: col.parse_beir_queries("f.jsonl", d)):
        parsed = parse(data)
        assert [(i.line, "surrogate" in i.message) for i in parsed.issues] == [(2, True)], parsed.issues


@pytest.mark.parametrize("pair", ["\\ud83d\\ude00", "\\uD83D\\uDE00"])
def test_a_surrogate_pair_is_one_character_and_accepted(pair):
    parsed = col.parse_beir_corpus("f.jsonl", _jsonl('{"_id": "d1", "text": "smile ' + pair + '"}'), "f.jsonl")
    assert parsed.issues == [] and parsed.documents[0][0].text == "smile \U0001f600"


def test_bad_encoding_names_the_line():
    parsed = col.parse_beir_corpus("corpus.jsonl", b'{"_id": "a", "text": "ok"}\n{"_id": "b", "text": "\xff"}\n', "corpus.jsonl")
    assert parsed.issues == [Issue("corpus.jsonl", 2, "not valid UTF-8 (byte 0xff); save the file as UTF-8")]


def test_beir_qrels_need_the_header_and_integer_scores():
    missing = col.parse_beir_qrels("qrels/test.tsv", b"q1\td1\t1\n", "test")
    assert missing.issues[0].line == 1 and "header" in missing.issues[0].message
    parsed = col.parse_beir_qrels("qrels/test.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\tx\nq2\td1\n", "test")
    assert [j.relevance for j in parsed.judgements] == [2]
    assert [(i.line, i.message.split()[0]) for i in parsed.issues] == [(3, "relevance"), (4, "expected")]


def test_beir_queries_reject_empty_text():
    parsed = col.parse_beir_queries("queries.jsonl", _jsonl({"_id": "q1", "text": "  "}, {"_id": "q2", "text": "why"}))
    assert [q.query_id for q in parsed.queries] == ["q2"] and parsed.issues[0].line == 1


# --- TREC -----------------------------------------------------------------------------------------


TREC_DOCS = b"""<DOC>
<DOCNO> 1 </DOCNO>
<TEXT>compact memories</TEXT>
</DOC>
<DOC>
<DOCNO>2</DOCNO>
an electronic   analogue
computer
</DOC>
"""


def test_trec_documents_strip_tags_and_keep_lines():
    parsed = col.parse_trec_documents("docs.trec", TREC_DOCS, "corpus/docs.trec")
    assert parsed.issues == []
    docs = [(d.doc_id, d.text, d.container, line) for d, _, line in parsed.documents]
    assert docs == [("1", "compact memories", "corpus/docs.trec", 1), ("2", "an electronic analogue\ncomputer", "corpus/docs.trec", 5)]


def test_trec_documents_report_each_broken_element_at_its_line():
    data = (b"<DOC>\n<DOCNO>1</DOCNO>\n</DOC>\n"        # 1: empty text
            b"stray words\n"                            # 4: outside any element
            b"<DOC>\nno number here\n</DOC>\n"          # 5: no DOCNO
            b"<DOC>\n<DOCNO>a b</DOCNO> x\n</DOC>\n"    # 8: white space in the id
            b"<DOC>\n<DOCNO>9</DOCNO> unterminated\n")  # 11: not closed
    parsed = col.parse_trec_documents("d.trec", data, "d.trec")
    assert parsed.documents == []
    assert [(i.line, i.message) for i in parsed.issues] == [
        (1, "document '1' has no text"),
        (4, "text outside any <DOC>...</DOC> element"),
        (5, "a <DOC> needs exactly one <DOCNO>, found 0"),
        (8, "DOCNO 'a b' contains white space"),
        (11, "<DOC> is not closed by </DOC>"),
    ]


def test_trec_topics_take_the_title_by_default_and_other_fields_on_request():
    data = b"""<top>
<num> Number: 401
<title> Topic: foreign minorities, Germany
<desc> Description:
What language and cultural differences
<narr> Narrative: anything relevant
</top>
<top>
<num>2</num><title>
MATHEMATICAL ANALYSIS
</title>
</top>
"""
    titles = col.parse_trec_topics("t.trec", data)
    assert [(q.query_id, q.text, q.line) for q in titles.queries] == [("401", "foreign minorities, Germany", 1), ("2", "MATHEMATICAL ANALYSIS", 8)]
    descs = col.parse_trec_topics("t.trec", data, "desc")
    assert descs.queries[0].text == "What language and cultural differences"
    assert descs.issues == [Issue("t.trec", 8, "topic '2' has no <desc> text")]


def test_trec_qrels_need_four_fields():
    parsed = col.parse_trec_qrels("qrels", b"1 0 10 1\n1 0 11\n\n2 0 12 x\n")
    assert [(j.query_id, j.doc_id, j.relevance, j.line) for j in parsed.judgements] == [("1", "10", 1, 1)]
    assert [i.line for i in parsed.issues] == [2, 4]


# --- one collection -------------------------------------------------------------------------------


def _doc(doc_id):
    return col.document(doc_id, f"text {doc_id}", "docs.trec")


def test_duplicate_document_ids_name_both_places():
    issues: list[Issue] = []
    docs = col.unique_documents([(_doc("1"), "a.trec", 1), (_doc("2"), "a.trec", 5), (_doc("1"), "b.trec", 9)], issues)
    assert [d.doc_id for d in docs] == ["1", "2"]
    assert issues == [Issue("b.trec", 9, "document id '1' is also used at a.trec:1")]


def test_goldens_from_qrels_keep_grades_and_drop_unjudged_or_non_relevant_queries():
    queries = [col.Query("1", "first", "t", 1), col.Query("2", "second", "t", 5), col.Query("10", "tenth", "t", 9)]
    judgements = [col.Judgement("10", "d1", 2, "q", 1), col.Judgement("1", "d2", 1, "q", 2), col.Judgement("1", "d1", 0, "q", 3),
                  col.Judgement("2", "d1", 0, "q", 4)]
    issues: list[Issue] = []
    goldens = col.build_goldens(queries, judgements, {"d1", "d2"}, issues)
    assert issues == []
    assert [(g.id, g.query, g.relevant_doc_ids, g.grades) for g in goldens] == [
        ("1", "first", ("d2",), {"d2": 1}), ("10", "tenth", ("d1",), {"d1": 2})]
    assert not any(g.must_include or g.expect_refusal for g in goldens)
    assert not col.has_expectations(goldens)


def test_qrels_naming_unknown_documents_or_queries_and_repeats_are_all_reported():
    queries = [col.Query("1", "first", "t", 1), col.Query("1", "again", "t", 4)]
    judgements = [col.Judgement("1", "d1", 1, "qrels", 1), col.Judgement("9", "d1", 1, "qrels", 2),
                  col.Judgement("1", "nope", 1, "qrels", 3), col.Judgement("1", "d1", 1, "qrels", 4)]
    issues: list[Issue] = []
    col.build_goldens(queries, judgements, {"d1"}, issues)
    assert [(i.file, i.line) for i in issues] == [("t", 4), ("qrels", 2), ("qrels", 3), ("qrels", 4)]
    assert "not among the queries" in issues[1].message and "not in the corpus" in issues[2].message
    assert "judged twice" in issues[3].message


def test_a_query_judged_in_two_splits_gets_one_golden_per_split():
    queries = [col.Query("q1", "what", "queries.jsonl", 1)]
    judgements = [col.Judgement("q1", "d1", 1, "qrels/dev.tsv", 2, "dev"), col.Judgement("q1", "d1", 1, "qrels/test.tsv", 2, "test")]
    goldens = col.build_goldens(queries, judgements, {"d1"}, [])
    assert [(g.id, g.split, g.tags) for g in goldens] == [("q1@dev", "dev", ("dev",)), ("q1@test", "test", ("test",))]


@pytest.mark.parametrize("field", ["", "other"])
def test_unknown_topic_field_is_an_issue(field):
    parsed = col.parse_trec_topics("t.trec", b"<top><num>1</num><title>x</title></top>", field)
    assert parsed.queries == [] and "unknown topic field" in parsed.issues[0].message


def test_documents_of_a_collection_are_documents_with_a_container():
    doc = _doc("7")
    assert isinstance(doc, Document) and doc.container == "docs.trec" and doc.filename == "docs.trec"


_PIECES = ["<DOC>", "</DOC>", "<doc>", "</Doc>", "<DOCNO>7</DOCNO>", "<DOCNO>", "text", "\n", " ", "<", "DOC>", "/"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=25))
def test_doc_elements_split_as_the_lazy_pattern_would(pieces):
    # The reference: one lazy pattern, the body ending at the first </DOC>, the next <DOC> or the end.
    text = "".join(pieces)
    reference = [(m.start(), m.start() + len("<DOC>") + len(m.group(1)), m.end())
                 for m in re.finditer(r"<DOC>(.*?)(</DOC>|(?=<DOC>)|\Z)", text, re.S | re.I)]
    assert list(col._doc_elements(text)) == reference
