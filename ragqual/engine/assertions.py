"""Assertions and the checks behind them.

An assertion is one semantic predicate over a trial's output, with an immutable UUID, a version
(bumped only when what the check means changes), a display category and a weight (0 = shown but
outside the score). Its check is declarative where possible, so that the spec stored with a run
can rebuild it for rescoring:

    RegexIncludes(pattern, path=None)   the text (or the value at `path`) matches
    RegexExcludes(pattern, path=None)   ... does not match
    Equals(value, path=None)            the output (or the value at `path`) equals `value`
    JsonPath(path, op, value)           eq | ne | in | contains | gt | lt on the value at `path`
    Predicate(fn)                       any Python function, identified by the sha256 of its source

`check_from_spec` rebuilds the declarative kinds from their specs; a predicate can only be
rebuilt from a live registry of functions keyed by code hash, since its code is not stored.
A check that raises (a regex timeout included) is an error on that one assertion, never a crash.
"""

from __future__ import annotations

import inspect
import json
import math
import textwrap
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ragqual.core import textmatch
from ragqual.core.hashing import sha256_hex
from ragqual.engine.paths import PathNotFound, parse_path, resolve_path
from ragqual.errors import InputError

if TYPE_CHECKING:
    from ragqual.engine.cases import Case
    from ragqual.engine.subject import Variant

Verdict = tuple[bool, str | None]
JSON_OPS = ("eq", "ne", "in", "contains", "gt", "lt")
_OP_WORDS = {"eq": "==", "ne": "!=", "in": "one of", "contains": "to contain", "gt": ">", "lt": "<"}


@dataclass(frozen=True)
class TrialContext:
    """What a check may look at besides the output: the case, the mode and the injected context."""

    case: Case
    mode: str = ""
    context: str | None = None
    variant: Variant | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)


class Check(Protocol):
    kind: str

    def evaluate(self, output: Any, ctx: TrialContext) -> Verdict: ...

    def spec(self) -> dict[str, Any]: ...


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _select(output: Any, path: str | None) -> Any:
    """The output itself, or the value at `path` (raises PathNotFound)."""
    return output if path is None else resolve_path(output, path)


def _missing_path_fails(evaluate: Callable[..., Verdict]) -> Callable[..., Verdict]:
    """A check whose path is absent from the output fails with a detail; it is not an error."""

    def wrapper(self: Any, output: Any, ctx: TrialContext) -> Verdict:
        try:
            return evaluate(self, output, ctx)
        except PathNotFound as missing:
            return False, str(missing)

    wrapper.__doc__ = evaluate.__doc__
    return wrapper


def _short(value: Any, limit: int = 80) -> str:
    text = _as_text(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class RegexIncludes:
    """Passes when the case-insensitive `pattern` matches somewhere in the text."""

    pattern: str
    path: str | None = None
    timeout: float = textmatch.DEFAULT_TIMEOUT
    kind = "regex_includes"
    pure = True  # a function of the output alone (engine.loop.ScoreMemo)

    def __post_init__(self) -> None:
        textmatch.compile_pattern(self.pattern)  # InvalidPattern (an InputError) at load time
        if self.path is not None:
            parse_path(self.path)

    @_missing_path_fails
    def evaluate(self, output: Any, ctx: TrialContext) -> Verdict:
        found = textmatch.search(self.pattern, _as_text(_select(output, self.path)), self.timeout)
        return found, None if found else f"no match for {self.pattern!r}"

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "pattern": self.pattern, "path": self.path, "timeout": self.timeout}


@dataclass(frozen=True)
class RegexExcludes:
    """Passes when the case-insensitive `pattern` matches nowhere in the text."""

    pattern: str
    path: str | None = None
    timeout: float = textmatch.DEFAULT_TIMEOUT
    kind = "regex_excludes"
    pure = True  # a function of the output alone (engine.loop.ScoreMemo)

    def __post_init__(self) -> None:
        textmatch.compile_pattern(self.pattern)
        if self.path is not None:
            parse_path(self.path)

    @_missing_path_fails
    def evaluate(self, output: Any, ctx: TrialContext) -> Verdict:
        found = textmatch.search(self.pattern, _as_text(_select(output, self.path)), self.timeout)
        return not found, f"unwanted match for {self.pattern!r}" if found else None

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "pattern": self.pattern, "path": self.path, "timeout": self.timeout}


@dataclass(frozen=True)
class Equals:
    """Passes when the output (or the value at `path`) equals `value` exactly."""

    value: Any
    path: str | None = None
    kind = "equals"
    pure = True  # a function of the output alone (engine.loop.ScoreMemo)

    def __post_init__(self) -> None:
        if self.path is not None:
            parse_path(self.path)

    @_missing_path_fails
    def evaluate(self, output: Any, ctx: TrialContext) -> Verdict:
        actual = _select(output, self.path)
        same = actual == self.value
        return same, None if same else f"got {_short(actual)}, expected {_short(self.value)}"

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "path": self.path}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, str):
        return isinstance(item, str) and item in container
    if isinstance(container, list | tuple | dict):
        return item in container
    raise TypeError(f"cannot look inside a {type(container).__name__}")


@dataclass(frozen=True)
class JsonPath:
    """Compares the value at a dotted path (`a.b[0].c`) with `value` using `op`.

    eq / ne: equality; in: the value is one of `value` (a list); contains: `value` is a substring,
    list item or key of the value; gt / lt: numeric comparison. A missing path fails every op.
    """

    path: str
    op: str
    value: Any
    kind = "json_path"
    pure = True  # a function of the output alone (engine.loop.ScoreMemo)

    def __post_init__(self) -> None:
        parse_path(self.path)
        if self.op not in JSON_OPS:
            raise InputError(f"json_path op {self.op!r} is unknown: use one of {', '.join(JSON_OPS)}")
        if self.op == "in" and not isinstance(self.value, list | tuple):
            raise InputError(f"json_path op 'in' needs a list of values, got {self.value!r}")
        if self.op in ("gt", "lt") and _number(self.value) is None:
            raise InputError(f"json_path op {self.op!r} needs a number, got {self.value!r}")

    def evaluate(self, output: Any, ctx: TrialContext) -> Verdict:
        try:
            document = json.loads(output) if isinstance(output, str) else output
        except json.JSONDecodeError:
            return False, "the output is text, not JSON"
        try:
            actual = resolve_path(document, self.path)
        except PathNotFound as missing:
            return False, str(missing)
        passed = self._compare(actual)
        wanted = f"{_OP_WORDS[self.op]} {_short(self.value)}"
        return passed, None if passed else f"{self.path} = {_short(actual)}, wanted {wanted}"

    def _compare(self, actual: Any) -> bool:
        if self.op == "eq":
            return actual == self.value
        if self.op == "ne":
            return actual != self.value
        if self.op == "in":
            return actual in list(self.value)
        if self.op == "contains":
            return _contains(actual, self.value)
        number = _number(actual)
        if number is None:
            return False
        return number > self.value if self.op == "gt" else number < self.value

    def spec(self) -> dict[str, Any]:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"kind": self.kind, "path": self.path, "op": self.op, "value": value}


def _code_identity(code: Any) -> str:
    """Bytecode, names and constants (nested code objects by their own identity, not address)."""
    consts = [_code_identity(c) if inspect.iscode(c) else repr(c) for c in code.co_consts]
    return "|".join([code.co_code.hex(), ",".join(code.co_names), ",".join(consts)])


def code_hash(fn: Callable[..., Any]) -> str:
    """sha256 of a function's source (dedented).

    `inspect.getsource` of a lambda is its whole line, so two lambdas on one line would share a
    hash; a lambda's own code is hashed with its source for that reason. Without source (a REPL),
    the code alone identifies the function.
    """
    code = getattr(fn, "__code__", None)
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        if code is None:
            raise InputError(f"cannot identify predicate {fn!r}: no source and no code object") from None
        return sha256_hex(_code_identity(code))
    if code is not None and getattr(fn, "__name__", "") == "<lambda>":
        source += "\0" + _code_identity(code)
    return sha256_hex(source)


def _arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in params) or len(positional) >= 2:
        return 2
    return 1


class Predicate:
    """A Python check `fn(output)` or `fn(output, ctx)` returning a bool or (bool, detail).

    It is identified in specs by the sha256 of its source: editing the function changes the
    hash, which is the signal to bump the versions of the assertions that use it.
    """

    kind = "predicate"

    def __init__(self, fn: Callable[..., Any], name: str | None = None):
        if not callable(fn):
            raise InputError(f"Predicate needs a callable, got {fn!r}")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", repr(fn))
        self.code_sha256 = code_hash(fn)
        self._arity = _arity(fn)

    def evaluate(self, output: Any, ctx: TrialContext) -> Verdict:
        result = self.fn(output, ctx) if self._arity == 2 else self.fn(output)
        if isinstance(result, tuple):
            passed, detail = result
            return bool(passed), detail
        return bool(result), None

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "code_sha256": self.code_sha256}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Predicate) and other.code_sha256 == self.code_sha256

    def __hash__(self) -> int:
        return hash(self.code_sha256)

    def __repr__(self) -> str:
        return f"Predicate({self.name}, sha256={self.code_sha256[:12]})"


DECLARATIVE: dict[str, type] = {
    RegexIncludes.kind: RegexIncludes,
    RegexExcludes.kind: RegexExcludes,
    Equals.kind: Equals,
    JsonPath.kind: JsonPath,
}


def register_check(cls: type) -> type:
    """Make a subject's own declarative check rebuildable from its spec (usable as a decorator).

    The class needs a unique `kind`, `evaluate(output, ctx)` and `spec()` whose keys, minus
    "kind", are its constructor's keyword arguments.
    """
    kind = getattr(cls, "kind", None)
    if not isinstance(kind, str) or not kind:
        raise InputError(f"{cls.__name__} needs a string `kind` to be registered as a check")
    known = DECLARATIVE.get(kind)
    if known is not None and known is not cls:
        raise InputError(f"check kind {kind!r} is already taken by {known.__name__}")
    DECLARATIVE[kind] = cls
    return cls


def check_from_spec(spec: Mapping[str, Any], predicates: Mapping[str, Callable[..., Any]] | None = None) -> Check:
    """Rebuild a check from its spec; predicates come from `predicates` (code sha256 -> function)."""
    if not isinstance(spec, Mapping) or "kind" not in spec:
        raise InputError(f"a check spec must be an object with a 'kind', got {spec!r}")
    kind = spec["kind"]
    args = {k: v for k, v in spec.items() if k != "kind"}
    if kind == Predicate.kind:
        return _predicate_from_spec(args, predicates or {})
    if kind not in DECLARATIVE:
        known = ", ".join([*DECLARATIVE, Predicate.kind])
        raise InputError(f"unknown check kind {kind!r}: use one of {known}")
    try:
        return DECLARATIVE[kind](**args)
    except TypeError as exc:
        raise InputError(f"bad arguments for check {kind!r}: {exc}") from None


def _predicate_from_spec(args: Mapping[str, Any], predicates: Mapping[str, Callable[..., Any]]) -> Check:
    digest = args.get("code_sha256")
    fn = predicates.get(digest) if isinstance(digest, str) else None
    if fn is None:
        raise InputError(
            f"predicate check {args.get('name', '?')!r} (code sha256 {str(digest)[:12]}) can only be "
            "rebuilt from a live registry of functions: the subject's current code has no function "
            "with that hash"
        )
    return Predicate(fn, name=args.get("name"))


def _valid_uuid(value: str, what: str) -> None:
    try:
        uuid.UUID(str(value))
    except ValueError:
        raise InputError(f"{what} must be a UUID, got {value!r}") from None


@dataclass(frozen=True)
class Assertion:
    """One weighted, versioned, categorised check over a trial's output."""

    id: str
    version: int
    name: str
    check: Check
    category: str = "general"
    weight: float = 1.0

    def __post_init__(self) -> None:
        _valid_uuid(self.id, f"assertion {self.name!r}: id")
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
            raise InputError(f"assertion {self.id}: version must be an integer >= 1, got {self.version!r}")
        if not self.name or not str(self.name).strip():
            raise InputError(f"assertion {self.id}: name must not be empty")
        weight = _number(self.weight)
        if weight is None or not math.isfinite(weight):
            raise InputError(f"assertion {self.id}: weight must be a finite number, got {self.weight!r}")

    def spec(self) -> dict[str, Any]:
        return {
            "id": self.id, "version": self.version, "name": self.name,
            "category": self.category, "weight": float(self.weight), "check": self.check.spec(),
        }


def assertion_from_spec(
    spec: Mapping[str, Any], predicates: Mapping[str, Callable[..., Any]] | None = None
) -> Assertion:
    """Rebuild an assertion from `Assertion.spec()` output (e.g. a stored case definition)."""
    missing = [k for k in ("id", "version", "name", "check") if k not in spec]
    if missing:
        raise InputError(f"assertion spec lacks {', '.join(missing)}: {dict(spec)!r}")
    return Assertion(
        id=str(spec["id"]), version=spec["version"], name=str(spec["name"]),
        check=check_from_spec(spec["check"], predicates),
        category=str(spec.get("category", "general")), weight=spec.get("weight", 1.0),
    )
