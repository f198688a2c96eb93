"""The models: each class's typed attributes agree with its table, and importing them maps the
classes over their Core tables without SQLAlchemy's declarative scan."""

from __future__ import annotations

import subprocess
import sys
import types
import typing

import pytest
from sqlalchemy import Column
from sqlalchemy.orm import Mapped

from ragqual.store.models import HISTORY_TABLES, Base

MAPPERS = sorted(Base.registry.mappers, key=lambda mapper: mapper.class_.__name__)


def _typed(annotation: object) -> tuple[type, bool]:
    """(X, optional) of `Mapped[X]` or `Mapped[X | None]`."""
    assert typing.get_origin(annotation) is Mapped, annotation
    (inner,) = typing.get_args(annotation)
    if isinstance(inner, types.UnionType):
        kinds = [arg for arg in typing.get_args(inner) if arg is not type(None)]
        assert len(kinds) == 1 and len(typing.get_args(inner)) == 2, annotation
        return kinds[0], True
    return inner, False


def test_every_history_table_has_one_mapped_class():
    assert sorted(mapper.local_table.name for mapper in MAPPERS) == sorted(HISTORY_TABLES)
    assert all(mapper.class_.__table__ is mapper.local_table for mapper in MAPPERS)


@pytest.mark.parametrize("mapper", MAPPERS, ids=lambda mapper: mapper.class_.__name__)
def test_a_class_types_each_column_of_its_table_as_the_column_is(mapper):
    """Same names in the same order; `Mapped[X | None]` exactly where the column is nullable; X the
    column type's Python type (what the declarative mapping derived from the annotations)."""
    annotations = typing.get_type_hints(mapper.class_)
    annotations = {name: hint for name, hint in annotations.items() if typing.get_origin(hint) is Mapped}
    table = mapper.local_table
    assert list(annotations) == [column.name for column in table.columns]
    for column in table.columns:
        assert isinstance(column, Column)
        kind, optional = _typed(annotations[column.name])
        assert (optional, kind) == (column.nullable, column.type.python_type), column.name
        assert getattr(mapper.class_, column.name).property.columns == [column]


def test_importing_the_models_runs_no_declarative_scan():
    """The classes are mapped imperatively over tables written out (ragqual.store.models): the
    declarative scan of annotations and `mapped_column()`s cost ~40% of the module's import."""
    probe = (
        "from sqlalchemy.orm import decl_base\n"
        "scanner = getattr(decl_base, '_DeclarativeMapperConfig', None) or decl_base._ClassScanMapperConfig\n"
        "calls = []\n"
        "scan = scanner.__init__\n"
        "def counted(self, *args, **kwargs):\n"
        "    calls.append(1)\n"
        "    scan(self, *args, **kwargs)\n"
        "scanner.__init__ = counted\n"
        "import ragqual.store.models as models\n"
        "print(len(models.Base.registry.mappers), len(calls))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == [str(len(MAPPERS)), "0"]
