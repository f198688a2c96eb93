"""The RAG subject's derived ids (`_uid`): written straight from the SHA-1 hex, the same text as
`str(uuid.uuid5(...))` for every name, and no UUID object built per id."""

from __future__ import annotations

import random
import uuid

import pytest

import ragqual.subjects.rag as rag


def _names() -> list[str]:
    rng = random.Random(7)
    alphabet = "abcXYZ019 -_/\\\"'\x1f\x00\téß€☃𝄞"
    names = ["", "\x1f", "q1\x1finclude\x1f\\d+ minutes", "ü" * 300]
    names += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(3000)]
    return names


@pytest.mark.parametrize("namespace", [rag._NS, uuid.NAMESPACE_DNS, uuid.UUID(int=0), uuid.UUID(int=2**128 - 1)])
def test_uuid5_text_is_uuid5(namespace: uuid.UUID) -> None:
    """Every variant digit (the 17th) and version digit come out as uuid5 sets them."""
    names = _names()
    assert [rag.uuid5_text(namespace, n) for n in names] == [str(uuid.uuid5(namespace, n)) for n in names]
    assert {rag.uuid5_text(namespace, n)[19] for n in names} == set("89ab")


def test_uid_and_legacy_id_unchanged() -> None:
    """Ids the history already holds (assertion ids, pre-0005 case ids) stay what they were."""
    for parts in [("q1",), ("q1", "include", "\\d+"), ("radio-gmrs-01", "refusal"), ("x", "think")]:
        assert rag._uid(*parts) == str(uuid.uuid5(rag._NS, "\x1f".join(parts)))
    assert rag.legacy_case_id("q1") == str(uuid.uuid5(rag._NS, "q1"))


def test_uid_builds_no_uuid_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """A golden's case derives its assertion ids without a UUID object each (fails on the old `_uid`)."""
    built: list[object] = []
    original = uuid.UUID.__init__

    def counting(self: uuid.UUID, *args: object, **kwargs: object) -> None:
        built.append(args)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(uuid.UUID, "__init__", counting)
    ids = [rag._uid("q1", "include", str(n)) for n in range(50)]
    assert built == []
    assert len(set(ids)) == 50
