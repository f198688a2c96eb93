"""Axes: what a subject lets you vary, declared as data.

A subject lists its tunable axes as `Axis` values (`Subject.axes`). Each says its name, the type
of its values, the values allowed (a list, or a numeric range), its default, and where it enters a
trial:

    model      which model answers (the variant's model URI)
    call       a sampling option sent with every model call (temperature, seed, num_ctx...)
    prompt     which system prompt version the subject uses
    retrieval  a setting of the subject's retrieval step (strategy, context_k...)

`--axis NAME=V1,V2` on the CLI, the picker, the variant config stored in the history and the
response-cache key all read the same descriptor: a run over axes is the cross product of the
values asked for (defaults fill the rest), one variant per combination, each carrying every
declared axis's value. Everything here is pure: parsing, validation and crossing touch no I/O.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragqual.errors import InputError

ENTERS = ("model", "call", "prompt", "retrieval")
KINDS = ("str", "int", "float")
NONE_WORDS = ("none", "-")


@dataclass(frozen=True)
class Axis:
    """One tunable axis of a subject. `choices` (when given) are the only values allowed; `low` /
    `high` bound a numeric axis; `default` None means "not set" (a call option is then not sent)."""

    name: str
    kind: str
    default: Any
    enters: str
    choices: tuple[Any, ...] | None = None
    low: float | None = None
    high: float | None = None
    help: str = ""
    nullable: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise InputError(f"axis name {self.name!r} must be an identifier (letters, digits, _)")
        if self.kind not in KINDS:
            raise InputError(f"axis {self.name}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.enters not in ENTERS:
            raise InputError(f"axis {self.name}: enters must be one of {', '.join(ENTERS)}, got {self.enters!r}")
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
        if self.default is not None:
            self.check(self.default)

    def allowed(self) -> str:
        """The allowed values in words: `0, 0.7`, `0 <= x <= 2`, or `any str`."""
        if self.choices is not None:
            shown = ", ".join(str(c) for c in self.choices)
        elif self.low is not None or self.high is not None:
            low = "" if self.low is None else f"{_fmt(self.low)} <= "
            high = "" if self.high is None else f" <= {_fmt(self.high)}"
            shown = f"{low}{self.kind}{high}"
        else:
            shown = f"any {self.kind}"
        return shown + (" or none" if self.nullable else "")

    def coerce(self, text: str) -> Any:
        """One value typed on a command line, as the axis's type, validated."""
        raw = text.strip()
        if self.nullable and raw.lower() in NONE_WORDS:
            return None
        try:
            value: Any = int(raw) if self.kind == "int" else float(raw) if self.kind == "float" else raw
        except ValueError:
            raise InputError(f"axis {self.name}: {text!r} is not a {self.kind} (allowed: {self.allowed()})") from None
        if isinstance(value, float) and (not math.isfinite(value)):
            raise InputError(f"axis {self.name}: {text!r} is not a finite number")
        if isinstance(value, float) and value.is_integer():
            value = int(value) if self.kind == "int" else value
        return self.check(value)

    def check(self, value: Any) -> Any:
        """`value` when it is allowed, else InputError naming the allowed values."""
        if value is None and (self.nullable or self.default is None):
            return None
        if not self._typed(value):
            raise InputError(f"axis {self.name}: {value!r} is not a {self.kind} (allowed: {self.allowed()})")
        if self.kind == "str" and not value.strip():
            raise InputError(f"axis {self.name}: the value is empty")
        if self.choices is not None and value not in self.choices:
            raise InputError(f"axis {self.name}: {value!r} is not allowed (allowed: {self.allowed()})")
        if self.kind != "str" and (self.low is not None and value < self.low
                                   or self.high is not None and value > self.high):
            raise InputError(f"axis {self.name}: {value!r} is out of range (allowed: {self.allowed()})")
        return int(value) if self.kind == "int" else value

    def _typed(self, value: Any) -> bool:
        if self.kind == "str":
            return isinstance(value, str)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return self.kind == "float" or float(value).is_integer()

    def describe(self) -> dict[str, Any]:
        """The axis as JSON (what `--help` lists and the docs show)."""
        return {"name": self.name, "kind": self.kind, "default": self.default, "enters": self.enters,
                "allowed": self.allowed(), "help": self.help}


def _fmt(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def show_value(value: Any) -> str:
    """An axis value as a short word: `none` for None, `0.7`, `v2`."""
    return "none" if value is None else _fmt(value)


def names(axes: Sequence[Axis]) -> str:
    return ", ".join(a.name for a in axes)


def find(axes: Sequence[Axis], name: str, subject: str) -> Axis:
    """The axis called `name`; an unknown name lists the subject's axes."""
    for axis in axes:
        if axis.name == name:
            return axis
    if not axes:
        raise InputError(f"subject {subject!r} declares no axes, so --axis {name}=... cannot apply")
    raise InputError(f"subject {subject!r} has no axis {name!r}: its axes are {names(axes)}")


def parse_assignment(text: str) -> tuple[str, list[str]]:
    """`temperature=0,0.7` -> ('temperature', ['0', '0.7'])."""
    name, sep, values = text.partition("=")
    items = [v for v in (s.strip() for s in values.split(",")) if v]
    if not sep or not name.strip() or not items:
        raise InputError(f"--axis {text!r}: write NAME=VALUE[,VALUE...], such as temperature=0,0.7")
    return name.strip(), items


def parse_axes(texts: Iterable[str], axes: Sequence[Axis], subject: str) -> dict[str, list[Any]]:
    """Every `--axis` flag, validated against the subject's axes, as {name: [values]} in the order
    given (repeating a name adds values; a value given twice counts once)."""
    chosen: dict[str, list[Any]] = {}
    for text in texts:
        name, raw_values = parse_assignment(text)
        axis = find(axes, name, subject)
        values = chosen.setdefault(name, [])
        for raw in raw_values:
            value = axis.coerce(raw)
            if value not in values:
                values.append(value)
    return chosen


def validate_choice(chosen: Mapping[str, Sequence[Any]], axes: Sequence[Axis], subject: str) -> dict[str, list[Any]]:
    """Values chosen as data (the picker, a stored plan), checked like typed ones."""
    checked: dict[str, list[Any]] = {}
    for name, values in chosen.items():
        axis = find(axes, name, subject)
        if not values:
            raise InputError(f"axis {name}: choose at least one value")
        checked[name] = list(dict.fromkeys(axis.check(v) for v in values))
    return checked


def defaults(axes: Sequence[Axis]) -> dict[str, Any]:
    return {a.name: a.default for a in axes}


def cross(chosen: Mapping[str, Sequence[Any]], axes: Sequence[Axis]) -> list[dict[str, Any]]:
    """The cross product of the chosen values, each combination completed with the other axes'
    defaults, in declaration order (the first axis varies slowest)."""
    lists = [list(chosen[a.name]) if a.name in chosen else [a.default] for a in axes]
    return [dict(zip([a.name for a in axes], combo, strict=True)) for combo in itertools.product(*lists)]


def variant_name(values: Mapping[str, Any], varied: Sequence[str], model_axis: str | None = "model") -> str:
    """`mock temperature=0.7 context_k=3`: the model, then the varied axes other than the model."""
    head = str(values.get(model_axis, "")) if model_axis else ""
    tail = [f"{n}={show_value(values[n])}" for n in varied if n != model_axis]
    return " ".join([head, *tail]).strip() or "defaults"


def of_kind(axes: Sequence[Axis], enters: str) -> list[Axis]:
    return [a for a in axes if a.enters == enters]


def call_options(values: Mapping[str, Any], axes: Sequence[Axis]) -> dict[str, Any]:
    """The `call` axes as request options; an axis set to None is not sent."""
    return {a.name: values[a.name] for a in of_kind(axes, "call") if values.get(a.name) is not None}


def key_options(options: Mapping[str, Any], axes: Sequence[Axis]) -> dict[str, Any]:
    """The request options that enter the cache key: the declared `call` axes only, so an
    undeclared incidental option (a keep-alive, a client hint) never busts the cache."""
    declared = {a.name for a in of_kind(axes, "call")}
    return {k: v for k, v in options.items() if k in declared}


def axis_flags(chosen: Mapping[str, Sequence[Any]]) -> list[str]:
    """The `--axis NAME=V1,V2` flags that ask for `chosen` (the picker prints them)."""
    return [f"--axis {n}={','.join(show_value(v) for v in values)}" for n, values in chosen.items() if values]


def with_models(chosen: Mapping[str, Sequence[Any]], models: Sequence[str], axes: Sequence[Axis],
                subject: str) -> dict[str, list[Any]]:
    """`chosen` with the `--model` URIs added to the subject's model axis (given first)."""
    out = {k: list(v) for k, v in chosen.items()}
    if not models:
        return out
    model_axes = of_kind(axes, "model")
    if not model_axes:
        raise InputError(f"subject {subject!r} declares no model axis, so --model cannot be crossed with --axis")
    name = model_axes[0].name
    out[name] = list(dict.fromkeys([*models, *out.get(name, [])]))
    return out


def run_axes(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each variant's axis values, by variant name, from a run's stored params (empty for a run
    whose variants were not built from axes)."""
    return {v["name"]: dict(v["axes"]) for v in params.get("variants", []) if isinstance(v, Mapping) and v.get("axes")}


def varied(by_variant: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The axes whose value differs between the variants, in their stored order: the columns a
    table groups by."""
    order: list[str] = []
    for values in by_variant.values():
        order.extend(n for n in values if n not in order)
    return [n for n in order if len({repr(v.get(n)) for v in by_variant.values()}) > 1]
