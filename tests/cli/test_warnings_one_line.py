"""A warning reaches the user as ragqual's own one line, `ragqual: warning: ...`, never as Python's
`file:line: UserWarning: ...` followed by a source line (issue 24: `corpus reset` after a ragqual
point was edited)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest
from qdrant_client.http import models

from ragqual.adapters.qdrant_edge_store import open_edge
from ragqual.cli.main import main
from tests.cli.test_corpus_cmd import project, run  # noqa: F401 - the fixture and the runner

EDITED = ("ragqual: warning: 1 of ragqual's eval point(s) in 'ragqual_kb' were edited after they were ingested; "
          "they are deleted with the rest")


def edit_one_point(root) -> None:
    """Someone changes the text of one of ragqual's points in the embedded store."""
    client = open_edge(root / "eval-results" / "qdrant-edge")
    try:
        point = client.scroll("ragqual_kb", limit=1, with_vectors=True)[0][0]
        payload = {**point.payload, "text": "edited by hand"}
        client.upsert("ragqual_kb", points=[models.PointStruct(id=point.id, vector=point.vector, payload=payload)])
    finally:
        client.close()


def test_corpus_reset_after_an_edited_point_warns_in_one_line(project, capsys):  # noqa: F811
    code, _, err = run(["corpus", "ingest"], capsys)
    assert code == 0, err
    edit_one_point(project)

    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run([sys.executable, "-m", "ragqual", "corpus", "reset"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert "removed 3 eval chunks" in done.stdout
    assert done.stderr.splitlines() == [EDITED]


def test_with_v_the_warning_names_its_category_and_origin(capsys, monkeypatch):
    import ragqual.cli.history_cmd as history_cmd

    def noisy(*args, **kwargs):
        warnings.warn("something odd\n  over two lines", UserWarning, stacklevel=1)
        raise SystemExit(0)

    monkeypatch.setattr(history_cmd.history_cmd, "callback", noisy)
    for flags, expected in (([], "ragqual: warning: something odd over two lines"),
                            (["-v"], "ragqual: warning: something odd over two lines (UserWarning at ")):
        with pytest.raises(SystemExit):
            main([*flags, "--db", "sqlite://", "history"])
        err = capsys.readouterr().err
        assert err.startswith(expected) and err.count("\n") == 1, err
    assert warnings.showwarning.__module__ == "warnings"  # put back after the command
