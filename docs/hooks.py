"""MkDocs hook: the reference pages' generated parts, built from the code at every `mkdocs build`.

A page holds a marker `<!-- generated: NAME -->`; `on_page_markdown` replaces it with the
Markdown `GENERATORS[NAME]()` returns:

- `global-options`: the `ragqual` group's own options, rendered by mkdocs-click like every
  command (the commands themselves are `::: mkdocs-click` blocks in docs/reference/cli.md);
- `metric-registry`: every entry of `ragqual.core.metric_names.METRICS`;
- `history-schema`: every table and view of a SQLite history upgraded to head with the project's
  own migrations, each table with its model's docstring (`ragqual.store.models`).

Nothing here reaches the network; tests/docs/ import this file to check what it generates.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")


def global_options_md() -> str:
    """The options that come before the command (`ragqual --db URL report ...`)."""
    import click
    from mkdocs_click._docs import make_command_docs

    from ragqual.cli.main import cli

    root = click.Command("ragqual", params=list(cli.params), help=cli.help, context_settings=cli.context_settings)
    lines = list(make_command_docs("ragqual", root, depth=1, style="table", has_attr_list=True))
    text = "\n".join(lines).replace("ragqual [OPTIONS]", "ragqual [OPTIONS] COMMAND [ARGS]...")
    return no_unset_defaults(text)


def no_unset_defaults(text: str) -> str:
    """mkdocs-click 0.9 prints click 8.2+'s "no default" sentinel as a default; show `-` instead."""
    return text.replace("<code>Sentinel.UNSET</code>", "-").replace("`Sentinel.UNSET`", "-")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def metric_registry_md() -> str:
    """One row per registered metric or family, in registry order."""
    from ragqual.core import metric_names as mn

    rows = ["| name | tier | better | binary | gated by default | meaning |", "|---|---|---|---|---|---|"]
    for m in mn.METRICS:
        flags = ("yes" if m.binary else "-", "yes" if m.gated else "-")
        better = "lower" if m.lower_is_better else "higher"
        if m.informational:
            better += " (a size: shown, compared only when named)"
        rows.append(f"| `{m.name}` | {m.tier.value} | {better} | {flags[0]} | {flags[1]} | {_cell(m.meaning)} |")
    screens = [
        ("retrieval headline (`retrieval`, `eval`, `history`)", mn.RETRIEVAL_HEADLINE),
        ("headline of a deep run (standard collections)", mn.DEEP_HEADLINE),
        ("adoption rule, in order of priority", mn.ADOPTION_PRIORITY),
        ("`sweep` columns", mn.SWEEP_COLUMNS),
        ("`eval` summary", mn.EVAL_SUMMARY),
        ("`history --case`", mn.CASE_METRICS),
        ("flips in `compare`", mn.FLIP_METRICS),
    ]
    rows += ["", "Which screen shows which metrics, in its own order:", "", "| screen | metrics |", "|---|---|"]
    rows += [f"| {name} | {', '.join(f'`{n}`' for n in names)} |" for name, names in screens]
    return "\n".join(rows)


def _models_by_table() -> dict[str, str]:
    from ragqual.store import models

    docs: dict[str, str] = {}
    for mapper in models.Base.registry.mappers:
        cls = mapper.class_
        table = getattr(cls, "__tablename__", None)
        if table and cls.__doc__:
            docs[table] = _cell(cls.__doc__)
    return docs


def history_schema_md() -> str:
    """Tables and views as the migrations at head create them on SQLite."""
    from sqlalchemy import inspect

    from ragqual.store import db, models

    with tempfile.TemporaryDirectory() as folder:
        engine = db.make_engine(f"sqlite:///{Path(folder) / 'schema.db'}")
        try:
            db.upgrade(engine)
            inspector = inspect(engine)
            tables = [t for t in inspector.get_table_names() if t != "alembic_version"]
            views = inspector.get_view_names()
            described = _models_by_table()
            out = [f"Migration head: `{db.HEAD_REVISION}`. Sealed tables (rows `ragqual verify` expects sealed): "
                   + ", ".join(f"`{t}`" for t in models.SEALED_TABLES) + ".", ""]
            for table in tables:
                out += [f"### `{table}`", ""]
                if table in described:
                    out += [described[table], ""]
                out += _columns_md(inspector.get_columns(table), inspector.get_pk_constraint(table))
            out += ["## Views", ""]
            for view in views:
                out += [f"### `{view}`", "", "Columns: " + ", ".join(f"`{c['name']}`" for c in inspector.get_columns(view)) + ".", ""]
        finally:
            engine.dispose()
    return "\n".join(out)


def _columns_md(columns: list[dict[str, Any]], pk: dict[str, Any]) -> list[str]:
    keys = set(pk.get("constrained_columns") or ())
    rows = ["| column | type | null | key |", "|---|---|---|---|"]
    for col in columns:
        key = "primary" if col["name"] in keys else ""
        rows.append(f"| `{col['name']}` | {col['type']} | {'yes' if col['nullable'] else 'no'} | {key} |")
    return [*rows, ""]


GENERATORS: dict[str, Callable[[], str]] = {
    "global-options": global_options_md,
    "metric-registry": metric_registry_md,
    "history-schema": history_schema_md,
}


def expand(markdown: str) -> str:
    """Every marker replaced by its generated Markdown; an unknown marker is an error."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated section {name!r} (known: {', '.join(GENERATORS)})")
        return GENERATORS[name]()

    return MARKER.sub(one, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return expand(markdown)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    return no_unset_defaults(html)
