"""Which errors are storage faults, and the one line each becomes."""

from __future__ import annotations

import sqlite3

from sqlalchemy.exc import IntegrityError, OperationalError

from ragqual.errors import StorageFault
from ragqual.store.faults import translate


def _op(message: str) -> OperationalError:
    return OperationalError("INSERT ...", {}, sqlite3.OperationalError(message))


def test_sqlite_storage_errors_become_one_line_naming_the_file_and_the_fix():
    fault = translate(_op("database or disk is full"), "sqlite:////data/eval.db")
    assert isinstance(fault, StorageFault) and fault.exit_code == 4
    assert str(fault) == "history database /data/eval.db: the disk holding it is full: free some space and run again"
    assert "read-only" in str(translate(_op("attempt to write a readonly database"), "sqlite:////d/e.db"))


def test_other_errors_are_not_storage_faults():
    assert translate(_op("no such column: x"), "sqlite:////d/e.db") is None
    assert translate(IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE constraint failed")), None) is None
    assert translate(ValueError("malformed response from the model"), None) is None


def test_a_raw_driver_or_os_error_of_unknown_origin_is_not_blamed_on_the_history():
    """The CLI's last resort translates without a URL: a cache folder's own sqlite3 or OS error
    (read-only, not a folder) is not the history's; the history's errors come through SQLAlchemy."""
    assert translate(sqlite3.OperationalError("unable to open database file"), None) is None
    assert translate(OSError(30, "Read-only file system"), None) is None
    assert isinstance(translate(_op("unable to open database file"), None), StorageFault)
    assert isinstance(translate(sqlite3.OperationalError("unable to open database file"), "sqlite:////d/e.db"), StorageFault)


def test_a_password_in_a_server_url_is_not_shown():
    class DiskFull(Exception):
        sqlstate = "53100"

    fault = translate(OperationalError("INSERT", {}, DiskFull("could not extend file")),
                      "postgresql+psycopg://u:S3cret@db:5432/eval")
    assert "S3cret" not in str(fault) and "db:5432/eval" in str(fault)


def test_a_full_or_read_only_disk_of_unknown_origin_is_still_a_storage_fault_not_the_historys():
    """What `translate` leaves alone (a raw error of unknown origin) is still exit 4 when it is a
    condition of the disk, worded without naming the history."""
    from ragqual.store.faults import disk_fault

    full = disk_fault(OSError(28, "No space left on device", "/x/qdrant-edge/segment"))
    assert isinstance(full, StorageFault) and "/x/qdrant-edge/segment: the disk holding it is full" in str(full)
    assert "history" not in str(full)
    assert isinstance(disk_fault(sqlite3.OperationalError("database or disk is full")), StorageFault)
    assert isinstance(disk_fault(OSError(30, "Read-only file system")), StorageFault)
    assert disk_fault(sqlite3.OperationalError("unable to open database file")) is None
    assert disk_fault(ValueError("no space left")) is None
