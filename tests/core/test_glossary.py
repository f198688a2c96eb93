"""The acronym glossary file: parsed, validated with file and line, digested by its entries."""

from __future__ import annotations

import pytest

from ragqual.core.glossary import parse_glossary
from ragqual.errors import ValidationFailed


def test_entries_are_read_in_order_with_comments_and_blanks_skipped():
    glossary = parse_glossary("# radio\n\nFRS = Family Radio Service\n  DoD =  depth of discharge \n", "g.txt")
    assert glossary.entries == (("FRS", "Family Radio Service"), ("DoD", "depth of discharge"))
    assert dict(glossary.as_mapping()) == {"FRS": "Family Radio Service", "DoD": "depth of discharge"}


def test_every_bad_line_is_named_with_file_and_line():
    text = "CO = carbon monoxide\nno equals sign\nC O = spaced\nUV =\nCO = again\n"
    with pytest.raises(ValidationFailed) as caught:
        parse_glossary(text, "kb/glossary.txt")
    assert [(i.file, i.line) for i in caught.value.issues] == [("kb/glossary.txt", n) for n in (2, 3, 4, 5)]
    lines = str(caught.value).splitlines()[1:]
    assert lines[0].startswith("kb/glossary.txt:2: expected `ACRONYM = expansion`")
    assert "one word of letters and digits" in lines[1]
    assert "UV has an empty expansion" in lines[2]
    assert "CO is defined twice (first on line 1)" in lines[3]


def test_an_empty_glossary_is_refused():
    with pytest.raises(ValidationFailed, match="g.txt: the glossary has no entries"):
        parse_glossary("# nothing yet\n", "g.txt")


def test_the_digest_follows_the_entries_not_the_comments():
    one = parse_glossary("CO = carbon monoxide\n", "a.txt")
    commented = parse_glossary("# heat\n\nCO   =   carbon monoxide\n", "b.txt")
    changed = parse_glossary("CO = carbon dioxide\n", "a.txt")
    assert one.digest == commented.digest != changed.digest
