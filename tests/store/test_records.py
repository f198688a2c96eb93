"""The store's plain records."""

from __future__ import annotations

import dataclasses

from ragqual.store import records


def test_every_dataclass_of_the_records_has_its_own_docstring():
    """Without one, `dataclass` makes one from `inspect.signature` of the class while the module is
    imported (~0.1 ms a class, paid by every command that opens the store)."""
    classes = [value for value in vars(records).values()
               if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == records.__name__]
    assert len(classes) >= 5
    for cls in classes:
        assert not (cls.__doc__ or "").startswith(f"{cls.__name__}("), cls.__name__
