"""The shard state the search cache keys on: recomputed whenever a file it hashes changes, even
when the change keeps the file's size and modification time."""

import os
from pathlib import Path

from ragqual.adapters.edge_state import edge_state


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
