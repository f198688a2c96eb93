"""Where things are: command-line options, then environment, then `[tool.ragqual]`, then defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragqual.errors import InputError

DEFAULTS: dict[str, Any] = {
    "corpus": "corpus",
    "goldens": "goldens",
    "results": "eval-results",
    "collection": "ragqual_kb",
    "embedder": "minilm",
    "chunk_tokens": 256,
    "overlap_tokens": 32,
    "chars_per_token": 4.0,
    "doc_prefix": "",
    "query_prefix": "",
}

OPTIONAL = ("db", "qdrant_url", "glossary", "pricing", "pricing_file")
"""Keys of `[tool.ragqual]` with no default: `glossary` names the acronym glossary file of the
project's corpus (none: no query is expanded); `pricing_file` names the price list (default
`pricing.toml` beside pyproject.toml), or the `[tool.ragqual.pricing]` table holds it
(ragqual.core.pricing)."""


def load_pyproject_settings(root: Path) -> dict[str, Any]:
    path = root / "pyproject.toml"
    if not path.is_file():
        return {}
    import tomllib  # on use: importing ragqual.config (every command does) stays cheap

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from exc
    section = data.get("tool", {}).get("ragqual", {})
    unknown = sorted(set(section) - set(DEFAULTS) - set(OPTIONAL))
    if unknown:
        raise InputError(f"{path}: unknown keys in [tool.ragqual]: {', '.join(unknown)}")
    return section


RESULTS_MARKER = "eval-results"


def has_ragqual_section(path: Path) -> bool:
    """`path` is a pyproject.toml with a [tool.ragqual] table (an unreadable one counts: the
    error is reported when its settings are loaded)."""
    if not path.is_file():
        return False
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
        return "[tool.ragqual]" in path.read_text(encoding="utf-8", errors="replace")
    return isinstance(data.get("tool", {}).get("ragqual"), dict)


def find_project_root(start: Path) -> Path | None:
    """The nearest folder, from `start` up, holding a pyproject.toml with [tool.ragqual] or an
    eval-results/ folder; None when there is none (then no command may invent one silently)."""
    for folder in (start, *start.parents):
        if (folder / RESULTS_MARKER).is_dir() or has_ragqual_section(folder / "pyproject.toml"):
            return folder
    return None


def no_project_message(cwd: Path) -> str:
    return (f"no ragqual project in {cwd} or any folder above it (a project is a folder with [tool.ragqual] "
            f"in its pyproject.toml, or an eval-results/ folder): cd into your project, create one here "
            f"(`mkdir eval-results`, or add [tool.ragqual] to pyproject.toml), or pass --db URL")


@dataclass
class Settings:
    """The project's settings: its root and the [tool.ragqual] values over the defaults (`load`)."""

    root: Path
    values: dict[str, Any] = field(default_factory=dict)
    project_found: bool = True  # False: no project above the working directory, root is the cwd

    @classmethod
    def load(cls, root: Path | None = None) -> Settings:
        found = True
        if root is None:
            cwd = Path.cwd().resolve()
            discovered = find_project_root(cwd)
            found, root = discovered is not None, discovered or cwd
        base = root.resolve()
        merged = dict(DEFAULTS)
        merged.update(load_pyproject_settings(base))
        return cls(base, merged, found)

    def explicit_db(self, override: str | None = None) -> bool:
        """The database was named (--db, RAGQUAL_DB or `db` in [tool.ragqual]), not derived from the root."""
        return bool(override or os.environ.get("RAGQUAL_DB") or self.values.get("db"))

    def path(self, key: str, override: str | os.PathLike[str] | None = None) -> Path:
        value = Path(override) if override is not None else Path(self.values[key])
        return value if value.is_absolute() else self.root / value

    @property
    def results_dir(self) -> Path:
        return self.path("results")

    def db_url(self, override: str | None = None) -> str:
        from ragqual.store.db import normalise_url

        value = override or os.environ.get("RAGQUAL_DB")
        if value:
            return normalise_url(value)
        configured = self.values.get("db")
        if configured:  # `db` in [tool.ragqual]: a relative file path means one beside pyproject.toml
            if "://" not in str(configured) and not Path(configured).is_absolute():
                return normalise_url(str(self.root / configured))
            return normalise_url(configured)
        return f"sqlite:///{self.results_dir / 'eval.db'}"

    def cache_dir(self) -> Path:
        return Path(os.environ.get("RAGQUAL_CACHE_DIR") or self.results_dir / "cache")

    def qdrant_path(self) -> Path:
        return self.results_dir / "qdrant"

    def qdrant_url(self, override: str | None = None) -> str | None:
        return override or os.environ.get("QDRANT_URL") or self.values.get("qdrant_url")
