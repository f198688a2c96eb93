"""The `answers:` replay file: parsing refuses bad lines naming file and line; lookups."""

import json

import pytest

from ragqual.adapters.answers_model import AnswersModel, check_ids, load_answers
from ragqual.adapters.model_registry import make_model
from ragqual.errors import InputError, ModelCallFailed


def _write(tmp_path, *lines):
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_good_file_parses_with_context_and_telemetry(tmp_path):
    path = _write(tmp_path, json.dumps({"id": "q1", "answer": "A", "context": ["x", "y"], "latency_ms": 5}), "",
                  json.dumps({"id": "q1", "answer": "B", "mode": "oracle",
                              "context": [{"doc_id": "d", "text": "t"}]}))
    answers = load_answers(path)
    assert answers.entries[("e2e", "q1")].context[1].text == "y"
    assert answers.entries[("oracle", "q1")].line == 3 and answers.entries[("oracle", "q1")].context[0].doc_id == "d"
    assert len(answers.sha256) == 64


@pytest.mark.parametrize("line, why", [
    ("not json", "not JSON"),
    ("[1, 2]", "JSON object"),
    ('{"answer": "a"}', "'id'"),
    ('{"id": "  ", "answer": "a"}', "'id'"),
    ('{"id": "q", "answer": 3}', "'answer'"),
    ('{"id": "q", "answer": "a", "context": "text"}', "context"),
    ('{"id": "q", "answer": "a", "context": [{"text": "t"}]}', "context"),
    ('{"id": "q", "answer": "a", "prompt_tokens": 1.5}', "prompt_tokens"),
    ('{"id": "q", "answer": "a", "latency_ms": "fast"}', "latency_ms"),
    ('{"id": "q", "answer": "a", "mode": "live"}', "mode"),
])
def test_bad_line_names_file_and_line(tmp_path, line, why):
    path = _write(tmp_path, '{"id": "ok", "answer": "fine"}', line)
    with pytest.raises(InputError) as caught:
        load_answers(path)
    assert str(caught.value).startswith(f"{path}:2:") and why in str(caught.value)


def test_duplicate_id_names_both_lines(tmp_path):
    path = _write(tmp_path, '{"id": "q", "answer": "a"}', '{"id": "q", "answer": "a", "mode": "oracle"}',
                  '{"id": "q", "answer": "b"}')
    with pytest.raises(InputError, match=r":3: id 'q' \(e2e\) was already given on line 1"):
        load_answers(path)


def test_extra_id_is_refused_naming_its_line(tmp_path):
    answers = load_answers(_write(tmp_path, '{"id": "q", "answer": "a"}', '{"id": "zz", "answer": "b"}'))
    check_ids(answers, {"q", "zz", "other"})
    with pytest.raises(InputError, match=r":2: id 'zz' is not a golden"):
        check_ids(answers, {"q"})


def test_missing_answer_is_a_trial_failure_not_a_crash(tmp_path):
    path = _write(tmp_path, '{"id": "q", "answer": "a"}')
    model = make_model(f"answers:{path}")
    assert isinstance(model, AnswersModel) and model.digest().startswith("sha256:")
    assert model.lookup("q", "e2e").answer == "a"
    with pytest.raises(ModelCallFailed, match="no answer for other in"):
        model.lookup("other", "e2e")


def test_unreadable_file_is_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read the answers file"):
        make_model(f"answers:{tmp_path / 'nope.jsonl'}")
