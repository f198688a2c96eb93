"""Prices of model calls: the price list (parsed and validated), a trial's cost, a variant's cost.

A price list is TOML, in `pricing.toml` or under `[tool.ragqual.pricing]` in pyproject.toml:

    currency = "USD"            # default of every entry
    date = 2026-12-01           # when the prices were looked up (default of every entry)

    [[model]]
    match = "openai:gpt-4o-mini"   # a model URI, or a glob over URIs ("ollama:*")
    input = 0.15                   # per million prompt tokens
    output = 0.60                  # per million completion tokens

    [[model]]
    match = "ollama:*"
    input = 0.02
    output = 0.02
    currency = "EUR"
    note = "electricity: 300 W at 0.30 EUR/kWh"

A model's price is the entry whose `match` equals its URI, else the first entry (file order)
whose glob matches it; a model no entry matches is unpriced: its cost is None and shown `-`,
never 0. A trial's cost is prompt_tokens x input / 1e6 + completion_tokens x output / 1e6,
None when the backend did not count its tokens.

Pure: parsing takes the TOML text (the caller reads the file), and every problem is one
InputError naming the file and the line (or the key) it is about.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragqual.errors import InputError

PER_TOKENS = 1_000_000
CURRENCY = re.compile(r"^[A-Z]{3}$")
TOP_KEYS = frozenset({"currency", "date", "model"})
ENTRY_KEYS = frozenset({"match", "input", "output", "currency", "date", "note"})
PYPROJECT_TABLE = "tool.ragqual.pricing"


@dataclass(frozen=True)
class ModelPrice:
    match: str
    input: float  # per million prompt tokens
    output: float  # per million completion tokens
    currency: str
    date: str  # ISO date the price was looked up
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"match": self.match, "input": self.input, "output": self.output,
                                "currency": self.currency, "date": self.date}
        if self.note:
            body["note"] = self.note
        return body


@dataclass(frozen=True)
class PriceList:
    models: tuple[ModelPrice, ...]

    def canonical(self) -> dict[str, Any]:
        """What a snapshot stores and hashes (where the list was read from is not part of it)."""
        return {"models": [m.as_dict() for m in self.models]}

    def price_for(self, uri: str) -> ModelPrice | None:
        for m in self.models:
            if m.match == uri:
                return m
        return next((m for m in self.models if fnmatch.fnmatchcase(uri, m.match)), None)


EMPTY = PriceList(())


# -- parsing ---------------------------------------------------------------------------------------

class _Where:
    """File name and line numbers for messages: the line of a top-level key or of the n-th entry."""

    def __init__(self, file: str, text: str, table: str):
        self.file, self.lines = file, text.splitlines()
        self.entry_header = re.compile(r"^\s*\[\[\s*" + re.escape(f"{table}.model" if table else "model") + r"\s*\]\]")
        self.start = 0
        if table:
            header = re.compile(r"^\s*\[\s*" + re.escape(table) + r"\s*\]")
            self.start = next((n for n, ln in enumerate(self.lines) if header.match(ln)), 0)

    def _entries(self) -> list[int]:
        return [n for n, ln in enumerate(self.lines) if self.entry_header.match(ln)]

    def top(self, key: str) -> str:
        pattern = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for n in range(self.start, len(self.lines)):
            if self.entry_header.match(self.lines[n]):
                break
            if pattern.match(self.lines[n]):
                return f"{self.file}:{n + 1}"
        return f"{self.file}: {key}"

    def entry(self, index: int, key: str | None = None) -> str:
        starts = self._entries()
        if index >= len(starts):
            return f"{self.file}: model {index + 1}"
        first = starts[index]
        end = starts[index + 1] if index + 1 < len(starts) else len(self.lines)
        if key is not None:
            pattern = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
            for n in range(first, end):
                if pattern.match(self.lines[n]):
                    return f"{self.file}:{n + 1}"
        return f"{self.file}:{first + 1}"


def parse_toml(text: str, file: str) -> dict[str, Any]:
    """The TOML document, or an InputError naming the file and line of the syntax error."""
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        where = f"{file}:{found.group(1)}" if found else file
        raise InputError(f"{where}: not valid TOML ({exc})") from None


def price_list_from_text(text: str, file: str) -> PriceList:
    """A `pricing.toml` file's price list."""
    return parse_price_list(parse_toml(text, file), file, text)


def price_list_from_pyproject(text: str, file: str) -> PriceList | None:
    """The `[tool.ragqual.pricing]` table of a pyproject.toml, None when it has none."""
    data = parse_toml(text, file).get("tool", {}).get("ragqual", {}).get("pricing")
    if data is None:
        return None
    if not isinstance(data, dict):
        raise InputError(f"{file}: [{PYPROJECT_TABLE}] must be a table")
    return parse_price_list(data, file, text, PYPROJECT_TABLE)


def parse_price_list(data: Mapping[str, Any], file: str, text: str = "", table: str = "") -> PriceList:
    """Validate a parsed price list; the first problem raises an InputError naming file and line."""
    where = _Where(file, text, table)
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise InputError(f"{where.top(unknown[0])}: unknown key {unknown[0]!r} (expected: currency, date, [[model]])")
    currency = _currency(data.get("currency"), lambda: where.top("currency"), required=False)
    date = _date(data.get("date"), lambda: where.top("date"), required=False)
    entries = data.get("model", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError(f"{where.top('model')}: `model` must be [[model]] tables")
    models = [_entry(e, n, where, currency, date) for n, e in enumerate(entries)]
    seen: dict[str, int] = {}
    for n, m in enumerate(models):
        if m.match in seen:
            raise InputError(f"{where.entry(n, 'match')}: model {n + 1}: {m.match!r} is already priced by "
                             f"model {seen[m.match] + 1}")
        seen[m.match] = n
    return PriceList(tuple(models))


def _entry(e: Mapping[str, Any], n: int, where: _Where, currency: str | None, date: str | None) -> ModelPrice:
    label = f"model {n + 1}" + (f" ({e['match']!r})" if isinstance(e.get("match"), str) else "")
    unknown = sorted(set(e) - ENTRY_KEYS)
    if unknown:
        raise InputError(f"{where.entry(n, unknown[0])}: {label}: unknown key {unknown[0]!r} "
                         f"(expected: {', '.join(sorted(ENTRY_KEYS))})")
    match = e.get("match")
    if not isinstance(match, str) or not match.strip():
        raise InputError(f"{where.entry(n, 'match')}: {label}: `match` must be a model URI or a glob such as \"ollama:*\"")
    prices = {k: _price(e.get(k), label, k, lambda k=k: where.entry(n, k)) for k in ("input", "output")}
    cur = _currency(e.get("currency"), lambda: where.entry(n, "currency"), required=False) or currency
    if cur is None:
        raise InputError(f"{where.entry(n)}: {label}: no currency (give `currency` here or at the top of the list)")
    day = _date(e.get("date"), lambda: where.entry(n, "date"), required=False) or date
    if day is None:
        raise InputError(f"{where.entry(n)}: {label}: no date (give `date = YYYY-MM-DD` here or at the top of the list)")
    note = e.get("note", "")
    if not isinstance(note, str):
        raise InputError(f"{where.entry(n, 'note')}: {label}: `note` must be a string")
    return ModelPrice(match.strip(), prices["input"], prices["output"], cur, day, note)


def _price(value: Any, label: str, key: str, at: Any) -> float:
    if value is None:
        raise InputError(f"{at()}: {label}: `{key}` is missing (price per million {key} tokens; a model with no "
                         "price is simply left out of the list)")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InputError(f"{at()}: {label}: `{key}` must be a number >= 0 (per million tokens), got {value!r}")
    return float(value)


def _currency(value: Any, at: Any, *, required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not CURRENCY.match(value):
        raise InputError(f"{at()}: currency must be a three-letter ISO 4217 code such as \"USD\", got {value!r}")
    return value


def _date(value: Any, at: Any, *, required: bool) -> str | None:
    if value is None and not required:
        return None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise InputError(f"{at()}: date must be a date such as 2026-12-01, got {value!r}")


def price_list_from_canonical(body: Mapping[str, Any]) -> PriceList:
    """A stored snapshot's price list (written by `PriceList.canonical`)."""
    return PriceList(tuple(ModelPrice(m["match"], float(m["input"]), float(m["output"]), m["currency"], m["date"],
                                      m.get("note", "")) for m in body.get("models", [])))


# -- costs -----------------------------------------------------------------------------------------

def trial_cost(price: ModelPrice | None, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
    """A trial's cost in its price's currency; None when unpriced or its tokens were not counted."""
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    return (prompt_tokens * price.input + completion_tokens * price.output) / PER_TOKENS


@dataclass(frozen=True)
class TrialCost:
    """One trial's cost as a report reads it: None = unpriced; currency None = unknown (an old row)."""

    variant: str
    perfect: bool
    cost: float | None
    currency: str | None


@dataclass(frozen=True)
class VariantCost:
    variant: str
    trials: int
    priced: int  # trials with a cost
    passing: int  # trials that passed (perfect)
    total: float | None  # None: no trial of the variant is priced
    currency: str | None  # None: unknown; "mixed": more than one (then total is None)
    per_pass: float | None  # total / passing; None when nothing passed or nothing is priced


MIXED = "mixed"


def variant_costs(trials: Iterable[TrialCost]) -> list[VariantCost]:
    """Cost per variant and per passing answer, variants in first-seen order."""
    groups: dict[str, list[TrialCost]] = {}
    for t in trials:
        groups.setdefault(t.variant, []).append(t)
    return [_variant_cost(name, items) for name, items in groups.items()]


def _variant_cost(name: str, items: Sequence[TrialCost]) -> VariantCost:
    priced = [t for t in items if t.cost is not None]
    currencies = {t.currency for t in priced}
    passing = sum(1 for t in items if t.perfect)
    currency = None if not currencies else (currencies.pop() if len(currencies) == 1 else MIXED)
    total = sum(t.cost for t in priced) if priced and currency != MIXED else None  # type: ignore[misc]
    per_pass = total / passing if total is not None and passing else None
    return VariantCost(name, len(items), len(priced), passing, total, currency, per_pass)
