"""A deterministic validation/test split for goldens that carry none (`ragqual sweep --split-by hash`).

A golden goes to `validation` or `test` by the sha256 of the seed and its id alone, so the same
seed gives the same split on every machine and in every order, adding a question never moves
another one, and about half land on each side. Goldens that carry their own `split` keep it:
the hash is only for a set where none does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol, TypeVar

from ragqual.core.hashing import sha256_hex
from ragqual.errors import InputError

VALIDATION, TEST = "validation", "test"
SPLIT_METHODS = ("hash",)


class _HasSplit(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def split(self) -> str | None: ...


G = TypeVar("G", bound=_HasSplit)


def hash_split(golden_id: str, seed: int) -> str:
    """`validation` or `test` for one question id under `seed` (the low bit of a sha256)."""
    digest = sha256_hex(f"ragqual-split\0{seed}\0{golden_id}")
    return VALIDATION if int(digest[:16], 16) % 2 == 0 else TEST


def split_counts(goldens: Sequence[_HasSplit]) -> tuple[int, int]:
    """(questions with a split, questions without one)."""
    carried = sum(1 for g in goldens if g.split is not None)
    return carried, len(goldens) - carried


def assign_hash_splits(goldens: Sequence[G], seed: int) -> list[G]:
    """Every golden with its hash split; refused when some (not all) carry a split of their own,
    since a set split two ways would hold questions chosen by two different rules."""
    carried, missing = split_counts(goldens)
    if carried and missing:
        raise InputError(
            f"--split-by hash: {carried} of {len(goldens)} questions carry a `split` and {missing} do not; "
            "give every question a split, or remove them all to split by hash"
        )
    if carried:
        return list(goldens)
    return [dataclasses.replace(g, split=hash_split(g.id, seed)) for g in goldens]  # type: ignore[type-var]
