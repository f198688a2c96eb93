"""Axes as data: parsing, validation and crossing (pure, no I/O)."""

import pytest

from ragqual.engine import axes
from ragqual.engine.axes import Axis
from ragqual.errors import InputError
from ragqual.pipeline.retrieval import RetrievalConfig
from ragqual.subjects.rag import RagSubject, rag_axes
from ragqual.subjects.sentiment.subject import SYSTEM_PROMPT_V2, SentimentSubject

AXES = (
    Axis("model", "str", "mock", "model"),
    Axis("temperature", "float", 0, "call", low=0, high=2),
    Axis("num_ctx", "int", None, "call", low=256, nullable=True),
    Axis("prompt", "str", "v1", "prompt", choices=("v1", "v2")),
    Axis("context_k", "int", 5, "retrieval", low=1),
)


def test_an_assignment_is_parsed_into_typed_values_in_order():
    chosen = axes.parse_axes(["temperature=0,0.7", "context_k=1, 3", "temperature=0.7,1"], AXES, "toy")
    assert chosen == {"temperature": [0, 0.7, 1], "context_k": [1, 3]}
    assert type(chosen["context_k"][0]) is int and type(chosen["temperature"][1]) is float


@pytest.mark.parametrize("flag, words", [
    ("top_k=3", "has no axis 'top_k': its axes are model, temperature, num_ctx, prompt, context_k"),
    ("temperature=hot", "'hot' is not a float (allowed: 0 <= float <= 2)"),
    ("temperature=2.5", "out of range"),
    ("prompt=v3", "'v3' is not allowed (allowed: v1, v2)"),
    ("context_k=1.5", "not a int"),
    ("context_k=0", "out of range"),
    ("temperature", "write NAME=VALUE"),
    ("temperature=", "write NAME=VALUE"),
    ("temperature=nan", "not a finite number"),
])
def test_an_unknown_axis_or_value_is_refused_naming_what_is_allowed(flag, words):
    with pytest.raises(InputError, match=None) as err:
        axes.parse_axes([flag], AXES, "toy")
    assert words in str(err.value)


def test_none_is_a_value_only_of_a_nullable_axis():
    assert axes.parse_axes(["num_ctx=none,4096"], AXES, "toy") == {"num_ctx": [None, 4096]}
    with pytest.raises(InputError):
        axes.parse_axes(["context_k=none"], AXES, "toy")


def test_a_subject_without_axes_says_so():
    with pytest.raises(InputError, match="declares no axes"):
        axes.parse_axes(["temperature=0"], (), "plain")


def test_the_cross_product_completes_each_combination_with_defaults():
    combos = axes.cross({"temperature": [0, 0.7], "context_k": [1, 3]}, AXES)
    assert len(combos) == 4
    assert combos[0] == {"model": "mock", "temperature": 0, "num_ctx": None, "prompt": "v1", "context_k": 1}
    assert [(c["temperature"], c["context_k"]) for c in combos] == [(0, 1), (0, 3), (0.7, 1), (0.7, 3)]


def test_a_declaration_with_a_bad_default_kind_or_entry_is_refused():
    with pytest.raises(InputError):
        Axis("t", "float", 5, "call", high=2)
    with pytest.raises(InputError):
        Axis("t", "complex", 0, "call")
    with pytest.raises(InputError):
        Axis("t", "float", 0, "somewhere")
    with pytest.raises(InputError):
        Axis("not a name", "float", 0, "call")


def test_call_options_leave_out_unset_axes_and_the_key_keeps_declared_options_only():
    values = {"model": "mock", "temperature": 0.7, "num_ctx": None, "prompt": "v1", "context_k": 3}
    assert axes.call_options(values, AXES) == {"temperature": 0.7}
    assert axes.key_options({"temperature": 0.7, "keep_alive": "5m"}, AXES) == {"temperature": 0.7}


def test_sentiment_variants_carry_every_axis_and_the_prompt_version():
    subject = SentimentSubject()
    variants = subject.axis_variants({"model": ["mock"], "prompt": ["v1", "v2"], "temperature": [0.7]})
    assert [v.name for v in variants] == ["mock prompt=v1 temperature=0.7", "mock prompt=v2 temperature=0.7"]
    assert variants[1].system_prompt == SYSTEM_PROMPT_V2 and variants[0].system_prompt == subject.system_prompt
    assert variants[0].options == {"temperature": 0.7, "seed": 42, "num_predict": 8}
    assert variants[0].axes == {"model": "mock", "temperature": 0.7, "seed": 42, "num_predict": 8, "prompt": "v1"}
    assert type(variants[0]).from_dict(variants[0].as_dict()) == variants[0]


def test_the_rag_axes_default_to_the_subjects_configuration_and_feed_retrieval():
    names = {a.name for a in rag_axes({}, RetrievalConfig())}
    assert {"model", "temperature", "seed", "num_ctx", "num_predict", "prompt", "strategy", "context_k",
            "candidate_k", "threshold"} <= names
    subject = RagSubject([], [], retrieval_config=RetrievalConfig(context_k=7), options={"temperature": 0.2})
    by = {a.name: a for a in subject.axes}
    assert by["context_k"].default == 7 and by["temperature"].default == 0.2
    variant, = subject.axis_variants({"context_k": [2], "strategy": ["bm25"]})
    config = subject.retrieval_config_for(variant)
    assert (config.context_k, config.strategy, config.candidate_k) == (2, "bm25", 20)
    assert subject.provider_options(variant) == {"temperature": 0.2, "seed": 42}


def test_axis_flags_repeat_a_choice():
    assert axes.axis_flags({"temperature": [0, 0.7], "num_ctx": [None]}) == [
        "--axis temperature=0,0.7", "--axis num_ctx=none"]
    parsed = axes.parse_axes([f.split(" ", 1)[1] for f in axes.axis_flags({"temperature": [0, 0.7]})], AXES, "t")
    assert parsed == {"temperature": [0, 0.7]}
