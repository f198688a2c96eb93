"""Alembic migrations for the ragqual history database (installed as ragqual.migrations)."""
