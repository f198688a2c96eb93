"""Regenerate tests/store/schema_snapshot.json from the migrations (run after adding one)."""

import json
import tempfile
from pathlib import Path

from ragqual.store import db
from tests.store.schema_tools import describe

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        engine = db.make_engine(f"sqlite:///{Path(tmp) / 's.db'}")
        db.upgrade(engine)
        out = Path(__file__).with_name("schema_snapshot.json")
        out.write_text(json.dumps(describe(engine), indent=2, sort_keys=True) + "\n")
        engine.dispose()
        print(f"wrote {out}")
