import subprocess

from ragqual.adapters.provenance import capture, git_state


def test_outside_a_checkout(tmp_path):
    assert git_state(tmp_path) == (None, None, "not a git checkout")
    prov = capture(argv=["ragqual", "x"], cwd=tmp_path, params={"k": 1})
    assert prov.git_sha is None and prov.git_note == "not a git checkout"
    assert prov.argv == ("ragqual", "x") and prov.params == {"k": 1}
    assert prov.python_version.count(".") == 2


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


def test_in_a_checkout_clean_then_dirty(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "f.txt").write_text("one")
    _git(tmp_path, "add", "f.txt")
    _git(tmp_path, "commit", "-qm", "c")
    sha, dirty, note = git_state(tmp_path)
    expected = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert (sha, dirty, note) == (expected, False, "ok")
    (tmp_path / "f.txt").write_text("two")
    assert git_state(tmp_path)[1] is True
