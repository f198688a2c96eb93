"""Describe a migrated database's schema as plain data, for the snapshot test."""

from __future__ import annotations

from sqlalchemy import Engine, inspect


def describe(engine: Engine) -> dict:
    insp = inspect(engine)
    tables = {}
    for name in sorted(insp.get_table_names()):
        if name == "alembic_version":
            continue
        tables[name] = {
            "columns": [
                {"name": c["name"], "type": str(c["type"]).split("(")[0].upper(), "nullable": bool(c["nullable"])}
                for c in insp.get_columns(name)
            ],
            "indexes": sorted(i["name"] for i in insp.get_indexes(name)),
            "unique": sorted(u["name"] or ",".join(u["column_names"]) for u in insp.get_unique_constraints(name)),
        }
    return {"tables": tables, "views": sorted(insp.get_view_names())}
