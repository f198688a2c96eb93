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


def test_git_state_asked_ahead_is_the_answer_asked_now(tmp_path):
    from ragqual.adapters.provenance import git_state_ahead

    outside = tmp_path / "outside"
    outside.mkdir()
    assert git_state_ahead(outside)() == git_state(outside) == (None, None, "not a git checkout")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    _git(checkout, "init", "-q")
    (checkout / "f.txt").write_text("one")
    _git(checkout, "add", "f.txt")
    _git(checkout, "commit", "-qm", "c")
    (checkout / "f.txt").write_text("two")
    ahead = git_state_ahead(checkout)()
    assert ahead == git_state(checkout) and ahead[1:] == (True, "ok") and len(ahead[0]) == 40


def test_capture_takes_the_git_state_given_and_asks_git_nothing(tmp_path, monkeypatch):
    import ragqual.adapters.provenance as provenance

    def no_git(*_a, **_k):
        raise AssertionError("git asked again")

    monkeypatch.setattr(provenance, "git_state", no_git)
    prov = capture(argv=["ragqual"], cwd=tmp_path, git=lambda: ("a" * 40, False, "ok"))
    assert (prov.git_sha, prov.git_dirty, prov.git_note) == ("a" * 40, False, "ok")


def test_a_failed_thread_is_asked_again_in_the_foreground(tmp_path, monkeypatch):
    import ragqual.adapters.provenance as provenance

    calls = []

    def flaky(cwd):
        calls.append(cwd)
        if len(calls) == 1:
            raise RuntimeError("lost on the thread")
        return (None, None, "not a git checkout")

    monkeypatch.setattr(provenance, "git_state", flaky)
    assert provenance.git_state_ahead(tmp_path)() == (None, None, "not a git checkout")
    assert calls == [tmp_path, tmp_path]
