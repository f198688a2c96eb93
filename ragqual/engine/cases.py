"""Cases and their automatic discovery.

A case is one test scenario: an input and the assertions its output must satisfy. Its id is a
UUID (or a subject's own stable text id, such as a golden's id) that never changes (it is the
audit key); its slug is the human handle used by
`--case-slugs`. Cases are discovered from a folder or a package, never registered by hand:

    every public module of a `cases` package (or every `*.py` not starting with `_` in a folder)
    that defines `CASES` (a sequence of Case) and/or `CASE` (one Case) contributes them.

Duplicate case ids, duplicate slugs and an assertion id used twice are rejected at load, naming
both places.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ragqual.core.hashing import canonical_json, sha256_hex
from ragqual.engine.assertions import Assertion, assertion_from_spec
from ragqual.errors import InputError, Issue, ValidationFailed


MAX_CASE_ID = 128


def valid_case_id(value: Any) -> bool:
    """A case id is the audit key shared by every table: a UUID, or a stable text id that a
    subject owns (the RAG subject uses each golden's own id, so both tiers name a question the
    same way; a TREC topic's id is a number such as `3`)."""
    return isinstance(value, str) and bool(value) and value == value.strip() and len(value) <= MAX_CASE_ID


@dataclass(frozen=True)
class Case:
    """One test scenario: an input and the assertions its output must satisfy (module docstring)."""

    id: str
    slug: str
    input: Any
    assertions: tuple[Assertion, ...] = ()
    source: str = ""
    difficulty: str = ""
    tags: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not valid_case_id(self.id):
            raise InputError(f"case {self.slug!r}: id must be a UUID or a stable text id such as a golden's "
                             f"id (at most {MAX_CASE_ID} characters, no surrounding spaces), got {self.id!r}")
        if not isinstance(self.slug, str) or not self.slug.strip():
            raise InputError(f"case {self.id}: slug must be a non-empty string")
        object.__setattr__(self, "assertions", tuple(self.assertions))
        object.__setattr__(self, "tags", tuple(self.tags))
        for item in self.assertions:
            if not isinstance(item, Assertion):
                raise InputError(f"case {self.slug!r}: {item!r} is not an Assertion")
        try:
            canonical_json(self.input)
            canonical_json(dict(self.meta))
        except (TypeError, ValueError) as exc:
            raise InputError(f"case {self.slug!r}: input and meta must be JSON values ({exc})") from None

    def definition(self) -> dict[str, Any]:
        """The case as JSON, assertion specs included: what the history stores and hashes."""
        return {
            "id": self.id, "slug": self.slug, "input": self.input, "source": self.source,
            "difficulty": self.difficulty, "tags": list(self.tags), "meta": dict(self.meta),
            "assertions": [a.spec() for a in self.assertions],
        }

    def digest(self) -> str:
        return sha256_hex(canonical_json(self.definition()))

    @classmethod
    def from_definition(
        cls, definition: Mapping[str, Any], predicates: Mapping[str, Callable[..., Any]] | None = None,
        *, with_assertions: bool = True,
    ) -> Case:
        """Rebuild a case from its stored definition (predicates need a live registry)."""
        specs = definition.get("assertions", []) if with_assertions else []
        return cls(
            id=definition["id"], slug=definition["slug"], input=definition.get("input"),
            assertions=tuple(assertion_from_spec(s, predicates) for s in specs),
            source=definition.get("source", ""), difficulty=definition.get("difficulty", ""),
            tags=tuple(definition.get("tags", ())), meta=dict(definition.get("meta", {})),
        )


@dataclass(frozen=True)
class Located:
    """A case and where it was defined (module and position), for error messages."""

    case: Case
    origin: str


def validate_cases(located: Iterable[Located]) -> list[Case]:
    """The cases in order; duplicate ids, slugs or assertion ids raise, naming both places."""
    issues: list[Issue] = []
    seen_ids: dict[str, str] = {}
    seen_slugs: dict[str, str] = {}
    seen_assertions: dict[str, str] = {}
    cases: list[Case] = []
    for item in located:
        case, origin = item.case, item.origin
        _first(seen_ids, case.id, origin, issues, f"duplicate case id {case.id}")
        _first(seen_slugs, case.slug, origin, issues, f"duplicate case slug {case.slug!r}")
        for assertion in case.assertions:
            _first(seen_assertions, assertion.id, f"{origin} ({case.slug})", issues,
                   f"duplicate assertion id {assertion.id} ({assertion.name!r})")
        cases.append(case)
    if issues:
        raise ValidationFailed(issues)
    return cases


def _first(seen: dict[str, str], key: str, origin: str, issues: list[Issue], message: str) -> None:
    if key in seen:
        issues.append(Issue(origin, None, f"{message}, first defined in {seen[key]}"))
    else:
        seen[key] = origin


def _module_cases(module: ModuleType, origin: str) -> list[Located]:
    found: list[Located] = []
    single = getattr(module, "CASE", None)
    if single is not None:
        found.append(Located(single, f"{origin}:CASE"))
    many = getattr(module, "CASES", None)
    if many is not None:
        if isinstance(many, str | bytes) or not isinstance(many, Sequence):
            raise InputError(f"{origin}: CASES must be a list of Case, got {type(many).__name__}")
        found.extend(Located(c, f"{origin}:CASES[{i}]") for i, c in enumerate(many))
    for item in found:
        if not isinstance(item.case, Case):
            raise InputError(f"{item.origin}: {item.case!r} is not a Case")
    return found


def _from_package(package: ModuleType) -> list[Located]:
    if not hasattr(package, "__path__"):
        return _module_cases(package, package.__name__)
    import pkgutil  # here: only discovery from a package lists modules, and a run's own subject never does

    located = _module_cases(package, package.__name__)
    names = sorted(info.name for info in pkgutil.iter_modules(package.__path__) if not info.name.startswith("_"))
    for name in names:
        module = importlib.import_module(f"{package.__name__}.{name}")
        located.extend(_module_cases(module, module.__name__))
    return located


def _from_folder(folder: Path) -> list[Located]:
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder of case modules")
    located: list[Located] = []
    tag = sha256_hex(str(folder.resolve()))[:10]
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module_name = f"ragqual_cases_{tag}_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise InputError(f"{path}: cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        located.extend(_module_cases(module, str(path)))
    return located


def discover_cases(source: str | Path | ModuleType) -> list[Case]:
    """Every case of a package (a module or its dotted name) or a folder of case modules."""
    if isinstance(source, ModuleType):
        located = _from_package(source)
    elif isinstance(source, Path) or "/" in str(source) or str(source).endswith(".py"):
        located = _from_folder(Path(source))
    else:
        try:
            package = importlib.import_module(str(source))
        except ModuleNotFoundError as exc:
            raise InputError(f"no case package {source!r}: {exc}") from None
        located = _from_package(package)
    return validate_cases(located)


def select_by_slugs(cases: Sequence[Case], slugs: Sequence[str] | None) -> list[Case]:
    """The cases with these slugs, in the subject's order; an unknown slug lists the valid ones."""
    if not slugs:
        return list(cases)
    known = {c.slug for c in cases}
    unknown = [s for s in slugs if s not in known]
    if unknown:
        raise InputError(
            f"unknown case slug(s) {', '.join(unknown)}: valid slugs are {', '.join(sorted(known))}"
        )
    wanted = set(slugs)
    return [c for c in cases if c.slug in wanted]
