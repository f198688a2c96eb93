"""Running an older ragqual source tree beside this one, without it borrowing this one's migrations.

An editable install maps the package `ragqual.migrations` to the checkout's top-level `migrations/`
(pyproject's package-dir). A source tree made with `git archive` and put first on PYTHONPATH has
`ragqual/` but no `ragqual/migrations/`, so Python falls through to the editable install's mapping:
the older code then runs the *current* migrations and silently upgrades any history it opens to
the current head, and a side-by-side benchmark compares the wrong schema.
"""

from __future__ import annotations

import importlib
from pathlib import Path


def with_own_migrations(tree: Path) -> Path:
    """`tree`, its `ragqual/migrations` made to name the tree's own `migrations/` (a relative symlink)."""
    package = tree / "ragqual"
    if not (package / "__init__.py").is_file():
        raise SystemExit(f"{tree}: not a ragqual source tree (no ragqual/__init__.py)")
    link = package / "migrations"
    if link.exists():
        return tree
    if not (tree / "migrations" / "env.py").is_file():
        raise SystemExit(f"{tree}: has no migrations/ of its own; archive the whole tree (git archive REV)")
    link.symlink_to(Path("..") / "migrations", target_is_directory=True)
    return tree


def check_one_tree() -> None:
    """Refuse to run when `ragqual` and `ragqual.migrations` come from two different source trees."""
    ragqual = importlib.import_module("ragqual")
    migrations = importlib.import_module("ragqual.migrations")
    code = Path(ragqual.__file__).resolve().parents[1]
    schema = Path(migrations.__file__).resolve().parents[1]
    if schema not in (code, code / "ragqual"):
        raise SystemExit(f"ragqual's code comes from {code} but its migrations from {schema}: link "
                         f"{code}/ragqual/migrations to ../migrations (source_trees.with_own_migrations) "
                         "so that the older tree does not upgrade histories to this tree's schema")
