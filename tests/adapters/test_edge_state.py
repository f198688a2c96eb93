"""The shard state the search cache keys on: recomputed whenever a file it hashes changes, even
when the change keeps the file's size and modification time."""

import os
from pathlib import Path

from ragqual.adapters.edge_state import edge_state, shard_files


def shard(tmp_path: Path) -> Path:
    folder = tmp_path / "edge" / "kb"
    (folder / "wal").mkdir(parents=True)
    (folder / "edge_config.json").write_text('{"vectors": 4}')
    (folder / "wal" / "open-1").write_bytes(b"a" * 64)
    return tmp_path / "edge"


def test_the_same_files_give_the_same_state_and_an_edit_a_new_one(tmp_path):
    root = shard(tmp_path)
    first = edge_state(root, "kb")
    assert first is not None and edge_state(root, "kb") == first
    log = root / "kb" / "wal" / "open-1"
    before = log.stat()
    log.write_bytes(b"b" * 64)  # same size ...
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))  # ... and the old modification time
    assert edge_state(root, "kb") != first


def test_a_new_file_in_the_log_changes_the_state(tmp_path):
    root = shard(tmp_path)
    first = edge_state(root, "kb")
    (root / "kb" / "wal" / "open-2").write_bytes(b"c")
    assert edge_state(root, "kb") != first
    assert edge_state(root, "missing") is None


def _rglob_files(folder: Path) -> list[Path]:
    """The list as the state was first built, with pathlib's recursive glob."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and (p.suffix == ".json" or "wal" in p.relative_to(folder).parts))


def test_the_walked_file_list_is_the_recursive_globs_on_a_tree_built_to_differ(tmp_path):
    """Names whose string order differs from their path order, hidden files, a bare `.json`, a file
    named `wal`, links to a file (hashed), to a folder (not entered) and to nothing (skipped)."""
    folder = tmp_path / "kb"
    for name in ("a.json", "a-b.json", "a/b.json", "a/wal/c", "a/wal/deep/d.bin", ".h.json", ".json", "x.JSON",
                 "..json", "wal", "segments/s1/segment.json", "segments/s1/vectors.bin", "z/wal.json", "walrus/e"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(name)
    outside = tmp_path / "outside"
    (outside / "wal").mkdir(parents=True)
    (outside / "o.json").write_text("o")
    (outside / "wal" / "w").write_text("w")
    (folder / "linked.json").symlink_to(folder / "a.json")
    (folder / "linked-folder").symlink_to(outside, target_is_directory=True)
    (folder / "dangling.json").symlink_to(tmp_path / "missing.json")
    walked = shard_files(folder)
    assert walked == _rglob_files(folder)
    assert [p.relative_to(folder).as_posix() for p in walked] == [
        "..json", ".h.json", "a/b.json", "a/wal/c", "a/wal/deep/d.bin", "a-b.json", "a.json", "linked.json",
        "segments/s1/segment.json", "wal", "z/wal.json"]
