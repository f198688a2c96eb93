import subprocess

from ragqual.adapters.provenance import capture, git_state


def test_outside_a_checkout(tmp_path):
    assert git_state(tmp_path) == (None, None, "not a git checkout")
    prov = capture(argv=["ragqual", "x"], cwd=tmp_path, params={"k": 1})
    assert prov.git_sha is None and prov.git_note == "not a git checkout"
    assert prov.argv == ("ragqual", "x") and prov.params == {"k": 1, "goldens_lock": {"status": "no lock"}}
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


def test_a_run_records_whether_it_ran_against_the_goldens_lock(tmp_path):
    from ragqual.adapters.lock_files import build_lock, write_lock
    from ragqual.core.hashing import sha256_hex

    (tmp_path / "eval-results").mkdir()  # the project root
    (tmp_path / "goldens").mkdir()
    (tmp_path / "goldens" / "g.jsonl").write_text("{}\n")
    write_lock(tmp_path / "ragqual.lock.json", build_lock(tmp_path, {"goldens": tmp_path / "goldens"}, {"p": "PROMPT"}))
    sub = tmp_path / "goldens"  # found from a folder below the root too
    locked = capture(argv=["ragqual"], cwd=sub, prompt_hashes=[sha256_hex("PROMPT")])
    assert locked.params == {"goldens_lock": {"status": "locked"}}
    other_prompt = capture(argv=["ragqual"], cwd=tmp_path, prompt_hashes=[sha256_hex("another prompt")])
    assert other_prompt.params["goldens_lock"]["status"] == "drifted"
    (tmp_path / "goldens" / "g.jsonl").write_text("{} \n")
    drifted = capture(argv=["ragqual"], cwd=tmp_path)
    assert drifted.params == {"goldens_lock": {"status": "drifted", "drifted": ["changed: goldens/g.jsonl"]}}
