"""The price list: parsed, validated (file and line), matched to model URIs; costs hand-computed."""

from __future__ import annotations

import pytest

from ragqual.core.pricing import (
    MIXED,
    ModelPrice,
    TrialCost,
    price_list_from_pyproject,
    price_list_from_text,
    trial_cost,
    variant_costs,
)
from ragqual.errors import InputError

GOOD = """\
currency = "USD"
date = 2026-12-01

[[model]]
match = "openai:gpt-4o-mini"
input = 0.15
output = 0.60

[[model]]
match = "ollama:*"
input = 0.02
output = 0.04
currency = "EUR"
date = "2026-11-30"
note = "electricity"

[[model]]
match = "ollama:qwen*"
input = 9
output = 9
"""


def test_a_good_list_parses_with_defaults_and_overrides() -> None:
    prices = price_list_from_text(GOOD, "pricing.toml")
    assert [m.as_dict() for m in prices.models] == [
        {"match": "openai:gpt-4o-mini", "input": 0.15, "output": 0.6, "currency": "USD", "date": "2026-12-01"},
        {"match": "ollama:*", "input": 0.02, "output": 0.04, "currency": "EUR", "date": "2026-11-30",
         "note": "electricity"},
        {"match": "ollama:qwen*", "input": 9.0, "output": 9.0, "currency": "USD", "date": "2026-12-01"},
    ]


def test_exact_uri_first_then_the_first_glob_in_file_order_then_none() -> None:
    prices = price_list_from_text(GOOD, "pricing.toml")
    assert prices.price_for("openai:gpt-4o-mini").match == "openai:gpt-4o-mini"
    assert prices.price_for("ollama:qwen2.5:7b").match == "ollama:*"  # earlier glob wins over a later, narrower one
    assert prices.price_for("openai:gpt-4o") is None
    assert prices.price_for("mock") is None


def test_the_snapshot_body_ignores_where_the_list_came_from() -> None:
    a = price_list_from_text(GOOD, "a/pricing.toml")
    b = price_list_from_text(GOOD.replace("0.60", "0.6"), "b/other.toml")
    assert a.canonical() == b.canonical()
    assert a.canonical() != price_list_from_text(GOOD.replace("0.60", "0.61"), "x").canonical()


@pytest.mark.parametrize(("text", "expected"), [
    (GOOD.replace("output = 0.60", 'output = "cheap"'),
     "pricing.toml:7: model 1 ('openai:gpt-4o-mini'): `output` must be a number >= 0"),
    (GOOD.replace("input = 0.02", "input = -1"), "pricing.toml:11: model 2 ('ollama:*'): `input` must be a number >= 0"),
    (GOOD.replace("input = 0.15\n", ""), "pricing.toml:4: model 1 ('openai:gpt-4o-mini'): `input` is missing"),
    (GOOD.replace('currency = "EUR"', 'currency = "euro"'), "pricing.toml:13: currency must be a three-letter"),
    (GOOD.replace('date = "2026-11-30"', 'date = "last week"'), "pricing.toml:14: date must be a date"),
    (GOOD.replace('note = "electricity"', "watts = 300"), "pricing.toml:15: model 2 ('ollama:*'): unknown key 'watts'"),
    (GOOD.replace("ollama:qwen*", "ollama:*"), "pricing.toml:18: model 3: 'ollama:*' is already priced by model 2"),
    ("vendor = 1\n" + GOOD, "pricing.toml:1: unknown key 'vendor'"),
    (GOOD.replace('currency = "USD"\n', ""), "pricing.toml:3: model 1 ('openai:gpt-4o-mini'): no currency"),
    (GOOD.replace("date = 2026-12-01\n", ""), "pricing.toml:3: model 1 ('openai:gpt-4o-mini'): no date"),
    (GOOD.replace("[[model]]\nmatch = \"ollama:qwen*\"", "[[model]]\nmatch = 3"), "pricing.toml:18: model 3: `match`"),
    (GOOD.replace("input = 9", "input = 9 9"), "pricing.toml:19: not valid TOML"),
])
def test_a_bad_list_names_file_and_line(text: str, expected: str) -> None:
    with pytest.raises(InputError) as caught:
        price_list_from_text(text, "pricing.toml")
    assert str(caught.value).startswith(expected), str(caught.value)


def test_a_boolean_is_not_a_price() -> None:
    with pytest.raises(InputError, match="`input` must be a number"):
        price_list_from_text(GOOD.replace("input = 0.15", "input = true"), "pricing.toml")


def test_the_pyproject_table_and_its_lines() -> None:
    text = ('[project]\nname = "x"\ncurrency = "nope"\n\n[tool.ragqual]\ncorpus = "kb"\n\n[tool.ragqual.pricing]\n'
            'currency = "USD"\ndate = 2026-12-01\n\n[[tool.ragqual.pricing.model]]\nmatch = "mock"\ninput = 1\n'
            'output = 2\n\n[[tool.ragqual.pricing.model]]\nmatch = "ollama:*"\ninput = 1\noutput = "x"\n')
    with pytest.raises(InputError, match=r"^pyproject.toml:20: model 2 \('ollama:\*'\): `output`"):
        price_list_from_pyproject(text, "pyproject.toml")
    good = price_list_from_pyproject(text.replace('output = "x"', "output = 3"), "pyproject.toml")
    assert good is not None and [m.match for m in good.models] == ["mock", "ollama:*"]
    assert price_list_from_pyproject('[tool.ragqual]\ncorpus = "kb"\n', "pyproject.toml") is None


def test_a_trial_cost_is_tokens_times_price_per_million() -> None:
    price = ModelPrice("m", input=2.0, output=10.0, currency="USD", date="2026-12-01")
    assert trial_cost(price, 1000, 200) == pytest.approx((1000 * 2 + 200 * 10) / 1e6)  # 0.004
    assert trial_cost(price, 0, 0) == 0.0  # a priced model that used no tokens costs nothing
    assert trial_cost(None, 1000, 200) is None  # unpriced: unknown, never 0
    assert trial_cost(price, None, 200) is None  # tokens not counted: unknown


def test_cost_per_variant_and_per_passing_answer() -> None:
    rows = [TrialCost("a", True, 0.004, "USD"), TrialCost("a", False, 0.002, "USD"), TrialCost("a", True, 0.003, "USD"),
            TrialCost("local", True, None, None), TrialCost("none-passed", False, 0.5, "EUR"),
            TrialCost("mixed", True, 1.0, "USD"), TrialCost("mixed", True, 1.0, "EUR")]
    a, local, nonep, mixed = variant_costs(rows)
    assert (a.trials, a.priced, a.passing, a.currency) == (3, 3, 2, "USD")
    assert a.total == pytest.approx(0.009) and a.per_pass == pytest.approx(0.0045)
    assert (local.total, local.per_pass, local.currency, local.priced) == (None, None, None, 0)
    assert (nonep.total, nonep.per_pass, nonep.passing) == (0.5, None, 0)
    assert (mixed.currency, mixed.total, mixed.per_pass) == (MIXED, None, None)
