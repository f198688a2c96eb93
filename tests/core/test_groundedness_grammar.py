"""The numbers grammar of groundedness, held to a table of (answer, context, expected) cases.

Each row is hand-computed from the README's grammar: the answer's distinct figures whose magnitude
is above 10 (and every date), and the share of them that the context also holds.
"""

import pytest

from ragqual.core.answer_metrics import groundedness

MINUS = "\u2212"  # − MINUS SIGN
EN_DASH = "\u2013"  # – EN DASH

CASES = [
    # signs
    ("Store at -15 C.", "store at 15 C", 0.0),
    ("Store at -15 C.", "store at -15 C", 1.0),
    (f"Store at {MINUS}15 C.", "store at -15 C", 1.0),  # U+2212 and ASCII '-' are the same minus
    ("Store at -15 C.", f"store at {MINUS}15 C", 1.0),
    ("Store at 15 C.", f"store at {MINUS}15 C", 0.0),
    (f"Keep it at {MINUS}18 °C or colder.", "Freezers run at -18 °C.", 1.0),
    ("The record low was (-40) degrees.", "a low of -40 degrees", 1.0),
    ("Cool to -20 to -15 C.", "between -20 and -15 C", 1.0),
    ("Cool to -20 to -15 C.", "between 20 and 15 C", 0.0),
    ("Take +15 mg.", "take 15 mg", 1.0),  # '+' is not part of the value
    ("Keep it \u2264\u221218 \u00b0C.", "keep it at -18 \u00b0C", 1.0),  # ≤−18 °C
    # hyphens between words and ranges are not minus signs
    ("The COVID-19 rules changed.", "COVID 19", 1.0),
    ("Use the TR-88 pump.", "the TR 88", 1.0),
    ("Boil for 10-15 minutes.", "boil 10 to 15 minutes", 1.0),
    ("Boil for 10-15 minutes.", "boil -10 to -15 minutes", 0.0),
    (f"Boil for 10{EN_DASH}15 minutes.", "between 10 and 15 minutes", 1.0),
    (f"Boil for 12{EN_DASH}15 minutes.", "boil 12 minutes", 0.5),
    (f"Wait 12 {EN_DASH}15 minutes.", "wait 12 to 15 minutes", 1.0),  # an en dash is never a minus
    # thousands separators and decimals
    ("It holds 1,000 litres.", "it holds 1000 litres", 1.0),
    ("It holds 1000 litres.", "it holds 1,000 litres", 1.0),
    ("It holds 1,000 litres.", "it holds 1.000 litres", 0.0),  # "1.000" is the decimal 1.0
    ("It weighs 15.000 kg.", "it weighs 15 kg", 1.0),
    ("It weighs 15.000 kg.", "it weighs 15,000 kg", 0.0),
    ("The ratio is 1.000.", "a ratio of 1,000", None),  # 1.0 is not above 10
    ("Add 12.50 ml.", "add 12.5 ml", 1.0),
    ("Add 3.5 ml.", "add 3.5 ml", None),  # 3.5 is not above 10
    ("Add 13.5 ml.", "add 13 ml", 0.0),
    ("Pay 1,250.75 dollars.", "a cost of 1250.75 dollars", 1.0),
    ("Use 10,20,40 psi steps.", "20 psi, then 40 psi", 1.0),
    # different numbers are different
    ("Boil at 11 psi.", "boil at 10 psi", 0.0),
    ("Boil at 10 psi.", "boil at 11 psi", None),  # 10 is not above 10
    ("Boil 11 minutes at 15 psi.", "boil 11 minutes at 10 psi", 0.5),
    # percentages: the number, whatever unit follows
    ("Use 15% bleach.", "use 15 % bleach", 1.0),
    ("Use 15% bleach.", "use 15 percent bleach", 1.0),
    ("Use 15 percent bleach.", "use 15% bleach", 1.0),
    ("Use 15% bleach.", "use 1.5% bleach", 0.0),
    # dates are one figure each
    ("It expires on 2024-05-01.", "expiry 2024-05-01", 1.0),
    ("It expires on 2024-05-01.", "expiry 2024-05-02", 0.0),
    ("It expires on 2024-05-01.", "made in 2024, -5 and -1", 0.0),
    ("It was made in 2024.", "made on 2024-05-01", 0.0),  # a date does not ground its year
    ("Expires 2024-05-01.", "expires 2024-05-01, lot -5", 1.0),
    # versions and addresses are not figures
    ("Update to firmware 1.2.3 at 192.168.0.1.", "no numbers here", None),
    # units and spelled-out numbers
    ("Above 6,500 ft boil 3 minutes; the dose is 120mg.", "over 6500 feet, adults take 120 mg", 1.0),
    ("Boil it for fifteen minutes.", "15 minutes", None),
]


@pytest.mark.parametrize("answer, context, expected", CASES, ids=[f"{a} | {c}" for a, c, _ in CASES])
def test_groundedness_reads_numbers_as_the_readme_defines(answer, context, expected):
    got = groundedness(answer, context)
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_the_table_covers_the_issue_examples():
    text = " ".join(a + " " + c for a, c, _ in CASES)
    for needle in ("1,000", "1.000", "3.5", "-15", f"{MINUS}15", "10 ", "11", "15%", f"10{EN_DASH}15", "2024-05-01"):
        assert needle in text, needle
    assert len(CASES) >= 30


@pytest.mark.parametrize("text, figures", [
    ("-15", [-15.0]), (f"{MINUS}15", [-15.0]), ("10-15", [10.0, 15.0]), (f"10{EN_DASH}15", [10.0, 15.0]),
    ("1,000", [1000.0]), ("1.000", [1.0]), ("3.5", [3.5]), ("15%", [15.0]), ("10 and 11", [10.0, 11.0]),
    ("2024-05-01", ["2024-05-01"]), ("2024-13-01", [2024.0, 13.0, 1.0]),  # no month 13: three numbers
    ("COVID-19", [19.0]), ("x=-3", [-3.0]), ("1.2.3", []), ("H2O", []),
])
def test_read_figures(text, figures):
    from ragqual.core.numbers import Date, read_figures

    assert [f.iso if isinstance(f, Date) else f.value for f in read_figures(text)] == figures
