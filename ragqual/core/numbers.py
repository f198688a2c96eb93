"""The numbers grammar of groundedness: how a figure written with digits is read from text.

One grammar, used for the answer and the context alike (README, "The numbers grammar of
groundedness"). A figure is a signed number or an ISO date:

- A number's digits start where no letter, digit or point stands right before them: "120mg" is
  120 and "TR-88" is 88, while "H2O" and "A15" hold no number.
- Thousands: a comma followed by exactly three digits groups thousands ("1,000" = 1000,
  "1,000,000"); any other comma separates two numbers ("10,20" = 10 and 20, "3,5" = 3 and 5).
- Decimals: a point followed by digits is the decimal point ("3.5", "2.50" = 2.5). The text is
  read as English, so "1.000" is the decimal 1.0, never a thousand.
- Digits joined by two or more points ("1.2.3", "192.168.0.1", "1.000.000") are a version or an
  address: no figure at all.
- Signs: a '-' or a minus sign '−' (U+2212) right before the digits is a minus when it begins a
  word: at the start of the text, or after whitespace, an opening bracket or quote, one of
  `= < > ≤ ≥ ~ ≈ : ;`, or another dash ("at -15 C", "(−15)", "from -20 to -15"). After a letter, a
  digit or any other character it is a hyphen or a range dash ("COVID-19" = 19, "10-15" = 10 and
  15). An en dash '–' is never a minus. '+' and '±' are not part of a number.
- Ranges: "10–15", "10-15" and "10 to 15" are the two numbers 10 and 15.
- Dates: YYYY-MM-DD is one date ("2024-05-01" is neither 2024 nor -5 nor -1), equal only to the
  same date written the same way.
- Units are not part of a figure: "15%", "15 %", "15 percent" and "15 °C" are all the number 15.
  Numbers spelled out in words are not read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragqual.core.textmatch import compiled_as_written

if TYPE_CHECKING:
    import regex

GRAMMAR_VERSION = 2
"""1: unsigned numbers, dates read as three numbers. 2: the grammar above."""

MINUS_SIGNS = "-\u2212"
# What may stand right before a minus sign (or nothing: the start of the text).
_MINUS_MAY_FOLLOW = "\\s(\\[{\"'\u201c\u2018\u00ab<>\u2264\u2265=~\u2248:;\\-\u2212\u2013\u2014"

_FIGURE = (  # the grammar as one pattern (compiled by `_compiled`)
    r"(?<![\w.])(?P<date>\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]))(?!\d)"
    r"|(?<![\w.])(?P<dotted>\d+(?:\.\d+){2,})"
    r"|(?:(?<![^" + _MINUS_MAY_FOLLOW + r"])(?P<sign>[" + MINUS_SIGNS + r"]))?"
    r"(?<![\w.])(?P<int>\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?P<frac>\.\d+)?"
)


@dataclass(frozen=True)
class Number:
    """A number read from text, with its sign (`read_figures`)."""

    value: float

    @property
    def magnitude(self) -> float:
        return abs(self.value)


@dataclass(frozen=True)
class Date:
    """An ISO date read from text; it equals only the same date written the same way."""

    iso: str  # YYYY-MM-DD as written


Figure = Number | Date


FigureValue = float | str
"""A figure as a plain value: a number's float, a date's ISO text (`figure_values`)."""


_DIGIT_RUN = r"([0-9][0-9,.\-\u2212]*)"
_NON_ASCII = r"[^\x00-\x7f]+"
_DIGIT = r"\d"


def _digits_ascii(text: str) -> bool:
    """Every digit `_FIGURE` reads in `text` (`\\d`: any Unicode decimal digit) is 0-9.

    Latin-1 (U+0080-U+00FF: "°", "½", "é" ...) holds no other decimal digit, and a text
    within it encodes to Latin-1 at the cost of a copy; any other is searched."""
    if text.isascii():
        return True
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return compiled_as_written(_DIGIT).search("".join(compiled_as_written(_NON_ASCII).findall(text))) is None
    return True


def figure_stretches(text: str) -> list[str]:
    """The pieces of `text` its figures are read from, when every digit of `text` is 0-9
    (`_digits_ascii`): for each run of 0-9 and the `,.-\u2212` after it, a space, the two
    characters before the run, and the run. `_FIGURE` finds in them, one after the other, the
    matches it finds in `text`.

    `_FIGURE` tries every position of a text, and a page is mostly letters. Its matches start at
    a digit or at a minus sign right before one, hold only digits, `,`, `.`, `-` and `\u2212` (so
    each lies in one run: a run goes on as far as those characters do), and read one character
    on either side: before the start, kept here (before a minus sign it is the first character
    kept, or, at the start of the text, the space, which every look-behind reads as it reads no
    character), and after the end, which in `text` is no digit, comma, point or dash, and here
    is the end of the piece. The characters kept before a run start no match of their own: no
    digit stands between two runs, and a dash there starts one only right before the run, as in
    `text`."""
    parts = compiled_as_written(_DIGIT_RUN).split(text)  # [before the 1st run, 1st run, between, 2nd run, ..., after the last]
    return [" " + before[-2:] + run for before, run in zip(parts[::2], parts[1::2])]


def _values(matches: list[tuple[str, str, str, str, str]]) -> list[FigureValue]:
    found: list[FigureValue] = []
    for date, _dotted, sign, whole, frac in matches:  # the groups in pattern order
        if date:
            found.append(date)
        elif whole:
            found.append(float(("-" if sign else "") + whole.replace(",", "") + frac))
    return found


@functools.lru_cache(maxsize=8192)
def _stretch_values(stretch: str) -> tuple[FigureValue, ...]:
    """The figures of one of `figure_stretches`: read once per distinct stretch (a page repeats
    its figures, "2 cups", "1 minute", and texts repeat pages)."""
    return tuple(_values(compiled_as_written(_FIGURE).findall(stretch)))


def figure_values(text: str) -> list[FigureValue]:
    """Every figure in `text`, in order of appearance, as its value: a `Number` as its float, a
    `Date` as its ISO text (a version or address gives none). Two figures are equal exactly when
    their values are (a float never equals a str), so sets of values count like sets of figures:
    groundedness reads them without building a figure object per number."""
    if not _digits_ascii(text):
        return _values(compiled_as_written(_FIGURE).findall(text))
    found: list[FigureValue] = []
    for stretch in figure_stretches(text):
        found += _stretch_values(stretch)
    return found


def read_figures(text: str) -> list[Figure]:
    """Every figure in `text`, in order of appearance (a version or address gives none)."""
    return [Date(v) if isinstance(v, str) else Number(v) for v in figure_values(text)]


def read_numbers(text: str) -> set[float]:
    """The distinct values of the numbers in `text` (dates left out)."""
    return {v for v in figure_values(text) if not isinstance(v, str)}
