"""Reports, pages and baseline files publish the history's head; `verify --expect-from FILE` checks it.

The attack: a whole run deleted with its seals (the newest ones), the triggers put back. The
chain left behind is consistent and the schema is as the migrations made it, so `verify` alone
passes; any file published after the run was sealed names a head that is gone.
"""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from ragqual.cli.main import main
from ragqual.core.published_head import find_head
from ragqual.store import sealing
from ragqual.store.runstore import RunStore
from tests.store.helpers import add_trial, provenance
from tests.store.test_verify import ragqual


def _run(store: RunStore, case: str) -> int:
    run = store.start_run("generation", "rag", provenance())
    add_trial(store, run, case=case, score=1.0)
    add_trial(store, run, case=case, repeat=1, score=0.5, passed=False)
    store.add_event(run, "finished")
    return run


def _last_seal(url: str) -> int:
    store = RunStore.open(url)
    with store.engine.connect() as conn:
        head = sealing.published_head(conn)
    store.engine.dispose()
    assert head is not None
    return head.seal_id


def _cli(url: str, args: list[str]) -> str:
    """One command outside pytest's capture (for the module's shared fixture); its stdout."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as caught:
        main(["--db", url, *args])
    assert caught.value.code == 0, err.getvalue()
    return out.getvalue()


def _publish(url: str, run: int, folder: Path) -> dict[str, Path]:
    """Every kind of file: reports in three formats, the HTML page, a baseline."""
    folder.mkdir()
    files = {}
    for fmt, suffix in (("markdown", "md"), ("json", "json"), ("table", "txt")):
        files[fmt] = folder / f"report.{suffix}"
        files[fmt].write_text(_cli(url, ["report", str(run), "--format", fmt]), encoding="utf-8")
    files["html"] = folder / "page.html"
    _cli(url, ["report", str(run), "--format", "html", "-o", str(files["html"])])
    _cli(url, ["baseline", "promote", str(run), "--dir", str(folder / "baselines")])
    [files["baseline"]] = (folder / "baselines").rglob("*.json")
    return files


def _delete_seals(path: str, where: str, params: tuple) -> None:
    """Raw sqlite3: drop the guards, delete the seals `where` selects and every row they cover,
    put the guards back exactly as they were (foreign keys are off on a plain connection)."""
    con = sqlite3.connect(path)
    triggers = con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
    for name, _ in triggers:
        con.execute(f"DROP TRIGGER {name}")
    covered: dict[str, set[int]] = {"seals": set()}
    for seal_id, rows in con.execute(f"SELECT id, rows FROM seals WHERE {where}", params).fetchall():
        covered["seals"].add(seal_id)
        for table, part in json.loads(rows).items():
            covered.setdefault(table, set()).update(sealing.expand(part["ids"]))
    for table, ids in covered.items():
        con.executemany(f"DELETE FROM {table} WHERE id = ?", [(i,) for i in ids])
    # a thorough rewrite also removes the deleted seals' spans (else `verify` alone names them)
    con.executemany("DELETE FROM seal_spans WHERE seal_id = ?", [(i,) for i in covered["seals"]])
    for _, sql in triggers:
        con.execute(sql)
    con.commit()
    con.close()


def _delete_tail(path: str, after_seal: int) -> None:
    """Every seal after `after_seal` (and what it covers): the newest run gone whole."""
    _delete_seals(path, "id > ?", (after_seal,))


@pytest.fixture(scope="module")
def _pristine(tmp_path_factory):
    """Run 1, a file set published after it, run 2, a file set published after run 2."""
    folder = tmp_path_factory.mktemp("published")
    url = f"sqlite:///{folder / 'h.db'}"
    store = RunStore.open(url)
    _run(store, "case-1")
    store.engine.dispose()
    before_run_2 = _last_seal(url)
    early = _publish(url, 1, folder / "early")
    store = RunStore.open(url)
    _run(store, "case-2")
    store.engine.dispose()
    late = _publish(url, 2, folder / "late")
    return folder / "h.db", before_run_2, early, late


@pytest.fixture
def published(_pristine, tmp_path):
    """The module's history, copied for one test to tamper with or extend."""
    pristine, before_run_2, early, late = _pristine
    path = tmp_path / "h.db"
    shutil.copyfile(pristine, path)
    return f"sqlite:///{path}", path, before_run_2, early, late


KINDS = ("markdown", "json", "table", "html", "baseline")


def test_every_file_records_the_head_of_its_time(published, capsys):
    url, _, before_run_2, early, late = published
    code, out, _ = ragqual(url, ["verify"], capsys)
    head = out.strip().splitlines()[-1].removeprefix("head digest: ")
    for kind in KINDS:
        found = find_head(late[kind].read_text(encoding="utf-8"))
        assert found is not None and found.digest == head, kind
        assert find_head(early[kind].read_text(encoding="utf-8")).seal_id == before_run_2, kind
        assert ragqual(url, ["verify", "--expect-from", str(late[kind])], capsys)[0] == 0, kind


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_deleted_with_its_seals_is_caught_by_a_later_file(published, kind, capsys):
    url, path, before_run_2, early, late = published
    _delete_tail(str(path), before_run_2)
    code, out, _ = ragqual(url, ["verify"], capsys)
    assert code == 0, out  # the weakness: what is left is consistent
    code, out, err = ragqual(url, ["verify", "--expect-from", str(late[kind])], capsys)
    assert code == 1
    assert "is in no seal of this database" in out and "Traceback" not in out + err
    # a file published before the run was sealed cannot know about it
    assert ragqual(url, ["verify", "--expect-from", str(early[kind])], capsys)[0] == 0


def test_an_honest_later_history_passes(published, tmp_path, capsys):
    url, _, _, early, late = published
    store = RunStore.open(url)
    _run(store, "case-3")
    store.engine.dispose()
    for files in (early, late):
        for kind in KINDS:
            code, out, _ = ragqual(url, ["verify", "--expect-from", str(files[kind])], capsys)
            assert code == 0, (kind, out)
            assert "expected digest found: seal" in out


def test_a_head_at_another_seal_is_named(published, tmp_path, capsys):
    url, _, _, _, late = published
    head = find_head(late["json"].read_text(encoding="utf-8"))
    forged = tmp_path / "moved.json"
    forged.write_text(json.dumps({"header": {"history_head": f"sha256:{head.digest} at seal 999 (999 seals)"}}))
    code, out, _ = ragqual(url, ["verify", "--expect-from", str(forged)], capsys)
    assert code == 1
    assert f"the published head was seal 999 of 999; here it is seal {head.seal_id}" in out


def test_a_file_without_a_head_is_bad_input(published, tmp_path, capsys):
    url = published[0]
    plain = tmp_path / "notes.md"
    plain.write_text("# notes\n\nnothing here\n")
    code, out, err = ragqual(url, ["verify", "--expect-from", str(plain)], capsys)
    assert code == 2
    assert "notes.md records no history head" in err and "Traceback" not in err
    code, _, err = ragqual(url, ["verify", "--expect-from", str(tmp_path / "absent.md")], capsys)
    assert code == 2 and "absent.md" in err



def test_a_run_deleted_before_others_breaks_the_chain(published, capsys):
    """Run 1's seals and rows gone, run 2's left: the next seal no longer follows (no file needed)."""
    url, path, *_ = published
    _delete_seals(str(path), "run_id = ?", (1,))
    code, out, _ = ragqual(url, ["verify"], capsys)
    assert code == 1
    assert "does not follow the seal before it" in out
