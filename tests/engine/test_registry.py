import textwrap

import pytest

from ragqual.errors import InputError
from ragqual.subjects import registry
from ragqual.subjects.sentiment.subject import SentimentSubject


def test_builtin_subject():
    subject = registry.get_subject("sentiment")
    assert isinstance(subject, SentimentSubject) and subject.name == "sentiment"
    assert "sentiment" in registry.subject_names()


def test_unknown_subject_lists_the_valid_ones():
    with pytest.raises(InputError, match="unknown subject 'nope': valid subjects are .*sentiment"):
        registry.get_subject("nope")


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """An installed distribution declaring a `ragqual.subjects` entry point (a real dist-info)."""
    (tmp_path / "demo_subject.py").write_text(textwrap.dedent("""
        from ragqual.engine.subject import Subject

        class DemoSubject(Subject):
            name = "demo"

        def not_a_subject():
            return object()
    """), encoding="utf-8")
    info = tmp_path / "demo_subject-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-subject\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[ragqual.subjects]\ndemo = demo_subject:DemoSubject\nbroken = demo_subject:not_a_subject\n"
        "sentiment = demo_subject:DemoSubject\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_an_installed_package_registers_a_subject_by_entry_point(plugin):
    assert {"demo", "broken", "sentiment"} <= set(registry.subject_names())
    assert registry.get_subject("demo").name == "demo"
    assert isinstance(registry.get_subject("sentiment"), SentimentSubject)  # built-ins win


def test_an_entry_point_that_builds_no_subject_is_an_input_error(plugin):
    with pytest.raises(InputError, match="does not build a ragqual Subject"):
        registry.get_subject("broken")
