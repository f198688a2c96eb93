"""How small can the quick-start eval's history get while it stays auditable in plain SQL?

`bench_history_bytes.py` measures the history as ragqual writes it. This benchmark asks the other
question: what the *same facts* would take in the most compact layout that still keeps what the
history promises, and so whether "2 KB per trial" can be reached at all without giving one of
those promises up. It builds that layout from a real history (the quick-start `ragqual eval`, or
`--measure FILE`), checks it holds the same facts, and prints SQLite's `dbstat` bytes per table.

What the floor layout keeps (each is something a reader of the history relies on):

* **plain text, one query away.** Every text (prompt, context, raw output, answer, case and
  assertion definitions) is readable with the stock `sqlite3` shell through a view, no extension
  and no decompression. Texts are cut into pieces at sentence or line ends (`--piece-bits N` keeps
  one cut in 2^N, chosen by a hash of the last characters, so equal passages are cut alike wherever
  they appear), each distinct piece is stored once, and a text row lists its pieces as a JSON
  array that the view `v_texts` joins back. The benchmark reassembles every text through the view
  and compares it with the original, byte for byte.
* **content hashes.** Each text keeps its SHA-256 (as 32 bytes, not 64 hex characters), unique.
* **one row per fact**, so reports stay SQL aggregates: a metric value, an assertion result, a
  score, a cost, a ranking is still a row. Names that repeat (metrics, groups, batches, scorers,
  modes, strategies, case and chunk ids) are interned to small integers.
* **the indexes the reads use** (the metric read index, metrics, results and scores by trial,
  trials by run and mode, the slot's uniqueness): the ones the 1M-trial read goals were measured
  with. A second column (`LEANER`) keeps only those no read can do without.
* **a seal over every row.** Each sealed row keeps its own digest, as 8 bytes instead of 64 hex
  characters, and each seal its 32-byte chain digest.

A third column stores each text whole and zlib-compressed instead of in pieces: smaller bodies,
but not readable in plain SQL, and larger in the end (the repeats are between texts).

What it drops: the per-row `created_at` (one timestamp per batch instead), and every redundant
copy (category and weight on each assertion result: the definition holds them; doc ids beside
chunk ids are kept, interned).

    python benchmarks/bench_bytes_floor.py [--measure FILE] [--piece-bits 0]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sqlite3
import tempfile
import zlib
from pathlib import Path

from bench_history_bytes import run_eval, table_bytes

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_CUT = re.compile(r"(?:[.!?:;][\"']?\s+|\\n|\n)")

FLOOR_SCHEMA = """
CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE batches (id INTEGER PRIMARY KEY, uuid BLOB NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE pieces (id INTEGER PRIMARY KEY, key INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX ix_pieces_key ON pieces (key);
CREATE TABLE texts (id INTEGER PRIMARY KEY, sha256 BLOB NOT NULL UNIQUE, pieces TEXT NOT NULL);
CREATE VIEW v_texts AS SELECT t.id, t.sha256, (SELECT group_concat(b, '') FROM (
    SELECT p.body AS b FROM json_each(t.pieces) j JOIN pieces p ON p.id = j.value ORDER BY j.key)) AS body
    FROM texts t;
CREATE TABLE cases (id INTEGER PRIMARY KEY, subject INTEGER NOT NULL, case_ref INTEGER NOT NULL,
                    slug TEXT NOT NULL, sha256 BLOB NOT NULL, definition INTEGER NOT NULL,
                    UNIQUE (subject, case_ref, sha256));
CREATE TABLE assertion_defs (id INTEGER PRIMARY KEY, assertion_ref INTEGER NOT NULL,
                             version INTEGER NOT NULL, sha256 BLOB NOT NULL, category INTEGER NOT NULL,
                             weight REAL NOT NULL, name TEXT NOT NULL, definition INTEGER NOT NULL,
                             UNIQUE (assertion_ref, version, sha256));
CREATE TABLE trials (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, case_pk INTEGER NOT NULL,
                     variant_id INTEGER NOT NULL, system_prompt_id INTEGER, mode INTEGER NOT NULL,
                     repeat_index INTEGER NOT NULL, rendered_prompt INTEGER, context INTEGER,
                     raw_output INTEGER, parsed_output INTEGER, error TEXT, prompt_tokens INTEGER,
                     completion_tokens INTEGER, latency_ms REAL, load_ms REAL, cost REAL,
                     cache_key BLOB, cache_hit INTEGER NOT NULL, batch INTEGER NOT NULL,
                     raw_output_bytes INTEGER, output_truncated INTEGER,
                     UNIQUE (run_id, case_pk, variant_id, mode, repeat_index));
CREATE INDEX ix_trials_run_mode ON trials (run_id, mode);
CREATE INDEX ix_trials_case_pk ON trials (case_pk);
CREATE TABLE assertion_results (id INTEGER PRIMARY KEY, trial_id INTEGER NOT NULL, batch INTEGER NOT NULL,
                                assertion_def INTEGER NOT NULL, passed INTEGER NOT NULL, detail TEXT);
CREATE INDEX ix_assertion_results_trial_batch ON assertion_results (trial_id, batch);
CREATE TABLE trial_scores (id INTEGER PRIMARY KEY, trial_id INTEGER NOT NULL, batch INTEGER NOT NULL,
                           scorer INTEGER NOT NULL, scorer_version INTEGER NOT NULL, score REAL NOT NULL,
                           perfect INTEGER NOT NULL, per_category INTEGER NOT NULL);
CREATE INDEX ix_trial_scores_trial_scorer ON trial_scores (trial_id, scorer, scorer_version, id, score, perfect);
CREATE TABLE trial_costs (id INTEGER PRIMARY KEY, trial_id INTEGER NOT NULL, snapshot_id INTEGER NOT NULL,
                          cost REAL, currency TEXT, batch INTEGER NOT NULL);
CREATE INDEX ix_trial_costs_trial ON trial_costs (trial_id, id);
CREATE TABLE metric_values (id INTEGER NOT NULL, run_id INTEGER NOT NULL, trial_id INTEGER,
                            case_ref INTEGER NOT NULL, group_ref INTEGER NOT NULL, metric INTEGER NOT NULL,
                            value REAL, scorer_version INTEGER NOT NULL, batch INTEGER NOT NULL,
                            PRIMARY KEY (run_id, metric, scorer_version, group_ref, id)) WITHOUT ROWID;
CREATE INDEX ix_metric_values_trial_id ON metric_values (trial_id);
CREATE TABLE retrieval_rankings (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, strategy INTEGER NOT NULL,
                                 query INTEGER NOT NULL, depth INTEGER NOT NULL, chunk_ids TEXT NOT NULL,
                                 doc_ids TEXT NOT NULL, scores TEXT NOT NULL, UNIQUE (run_id, strategy, query));
CREATE TABLE seals (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, run_id INTEGER, prev_digest BLOB NOT NULL,
                    run_prev_digest BLOB, digest BLOB NOT NULL);
CREATE INDEX ix_seals_run ON seals (run_id, id);
CREATE TABLE seal_rows (seal_id INTEGER NOT NULL, tbl INTEGER NOT NULL, ids TEXT NOT NULL, digests BLOB NOT NULL,
                        PRIMARY KEY (seal_id, tbl)) WITHOUT ROWID;
"""

LEANER = {
    "CREATE INDEX ix_trials_run_mode ON trials (run_id, mode);\n": "",
    "                                assertion_def INTEGER NOT NULL, passed INTEGER NOT NULL, detail TEXT);\n"
    "CREATE INDEX ix_assertion_results_trial_batch ON assertion_results (trial_id, batch);\n":
    "                                assertion_def INTEGER NOT NULL, passed INTEGER NOT NULL, detail TEXT,\n"
    "                                PRIMARY KEY (trial_id, batch, id)) WITHOUT ROWID;\n",
    "                           perfect INTEGER NOT NULL, per_category INTEGER NOT NULL);\n"
    "CREATE INDEX ix_trial_scores_trial_scorer ON trial_scores (trial_id, scorer, scorer_version, id, score, perfect);\n":
    "                           perfect INTEGER NOT NULL, per_category INTEGER NOT NULL,\n"
    "                           PRIMARY KEY (trial_id, scorer, scorer_version, id)) WITHOUT ROWID;\n",
    "                          cost REAL, currency TEXT, batch INTEGER NOT NULL);\n"
    "CREATE INDEX ix_trial_costs_trial ON trial_costs (trial_id, id);\n":
    "                          cost REAL, currency TEXT, batch INTEGER NOT NULL,\n"
    "                          PRIMARY KEY (trial_id, id)) WITHOUT ROWID;\n",
    "CREATE INDEX ix_metric_values_trial_id ON metric_values (trial_id);\n": "",
}
"""`--lean`: the floor with the fewest indexes we can see any read living with. Results, scores
and costs are stored in their trial's order (clustered, WITHOUT ROWID) instead of indexed by it;
a trial's metrics are read through its run (the clustered key starts with the run); trials by run
and mode go through the slot's unique index. What stays: the uniqueness of slots, content hashes,
names and versions, and the piece keys an append looks texts up by."""


def floor_schema(lean: bool) -> str:
    schema = FLOOR_SCHEMA
    if lean:
        for before, after in LEANER.items():
            assert before in schema, before
            schema = schema.replace(before, after)
        for table in ("assertion_results", "trial_scores", "trial_costs"):  # the key is now clustered
            schema = schema.replace(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY,", f"CREATE TABLE {table} (id INTEGER NOT NULL,")
    return schema


COPIED = ("runs", "run_events", "system_prompts", "variant_configs", "corpus_snapshots", "retrieval_results",
          "case_aliases", "seal_spans", "labels", "judgements", "judge_audits", "pricing_snapshots",
          "run_summaries", "alembic_version")
"""Tables the floor copies as they are: small for one eval, so not worth a layout of their own."""


def pieces_of(text: str, bits: int) -> list[str]:
    """`text` cut at sentence and line ends whose last 12 characters hash to `bits` zero bits."""
    mask = (1 << bits) - 1
    out, start = [], 0
    for match in _CUT.finditer(text):
        end = match.end()
        tail = text[max(0, end - 12):end].encode()
        if int.from_bytes(hashlib.blake2b(tail, digest_size=4).digest(), "big") & mask == 0:
            out.append(text[start:end])
            start = end
    out.append(text[start:])
    return [piece for piece in out if piece]


class Floor:
    """The floor layout being filled: interned names, batches, pieces and texts."""

    def __init__(self, con: sqlite3.Connection, bits: int, zlib_texts: bool = False) -> None:
        self.con, self.bits, self.zlib_texts = con, bits, zlib_texts
        self.names: dict[str, int] = {}
        self.batches: dict[str, int] = {}
        self.pieces: dict[str, int] = {}
        self.texts: dict[str, int] = {}

    def name(self, value: str) -> int:
        if value not in self.names:
            self.names[value] = len(self.names) + 1
            self.con.execute("INSERT INTO names VALUES (?, ?)", (self.names[value], value))
        return self.names[value]

    def batch(self, uuid: str, created_at: str) -> int:
        if uuid not in self.batches:
            self.batches[uuid] = len(self.batches) + 1
            key = bytes.fromhex(uuid.replace("-", "")) if _UUID.fullmatch(uuid) else uuid.encode()
            self.con.execute("INSERT INTO batches VALUES (?, ?, ?)", (self.batches[uuid], key, created_at))
        return self.batches[uuid]

    def text(self, body: str | None) -> int | None:
        """The id of `body`'s text row, appended (with its new pieces) on first sight."""
        if body is None:
            return None
        if body not in self.texts:
            text_id = self.texts[body] = len(self.texts) + 1
            digest = hashlib.sha256(body.encode()).digest()
            if self.zlib_texts:
                self.con.execute("INSERT INTO ztexts VALUES (?, ?, ?)", (text_id, digest, zlib.compress(body.encode(), 9)))
            else:
                refs = json.dumps([self._piece(piece) for piece in pieces_of(body, self.bits)], separators=(",", ":"))
                self.con.execute("INSERT INTO texts VALUES (?, ?, ?)", (text_id, digest, refs))
        return self.texts[body]

    def _piece(self, piece: str) -> int:
        if piece not in self.pieces:
            piece_id = self.pieces[piece] = len(self.pieces) + 1
            key = int.from_bytes(hashlib.sha256(piece.encode()).digest()[:8], "big", signed=True)
            self.con.execute("INSERT INTO pieces VALUES (?, ?, ?)", (piece_id, key, piece))
        return self.pieces[piece]


def build(src: sqlite3.Connection, dst: sqlite3.Connection, bits: int, zlib_texts: bool = False,
          lean: bool = False) -> Floor:
    """Fill `dst` with every fact of `src` in the floor layout (texts zlib-compressed whole, or
    the `LEANER` indexes, if asked)."""
    dst.executescript(floor_schema(lean))
    if zlib_texts:
        dst.execute("CREATE TABLE ztexts (id INTEGER PRIMARY KEY, sha256 BLOB NOT NULL UNIQUE, body BLOB NOT NULL)")
    floor = Floor(dst, bits, zlib_texts)
    for table in COPIED:
        sql = src.execute("SELECT sql FROM sqlite_schema WHERE name = ?", (table,)).fetchone()
        if sql is None:
            continue
        dst.execute(sql[0])
        rows = src.execute(f"SELECT * FROM {table}").fetchall()
        if rows:
            dst.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
    body = dict(src.execute("SELECT sha256, body FROM texts"))
    for (id_, subject, case_id, slug, sha, definition) in src.execute("SELECT * FROM cases ORDER BY id"):
        dst.execute("INSERT INTO cases VALUES (?, ?, ?, ?, ?, ?)", (id_, floor.name(subject), floor.name(case_id),
                    slug, bytes.fromhex(sha), floor.text(definition)))
    for row in src.execute("SELECT id, assertion_id, version, sha256, category, weight, name, definition "
                           "FROM assertion_defs ORDER BY id"):
        id_, assertion_id, version, sha, category, weight, name, definition = row
        dst.execute("INSERT INTO assertion_defs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (id_, floor.name(assertion_id), version, bytes.fromhex(sha), floor.name(category), weight,
                     name, floor.text(definition)))
    defs = {(a, v): i for i, a, v in src.execute("SELECT id, assertion_id, version FROM assertion_defs")}
    _trials(src, floor, body)
    for row in src.execute("SELECT id, trial_id, batch, assertion_id, assertion_version, passed, detail, created_at "
                           "FROM assertion_results ORDER BY id"):
        id_, trial_id, batch, assertion_id, version, passed, detail, created_at = row
        dst.execute("INSERT INTO assertion_results VALUES (?, ?, ?, ?, ?, ?)",
                    (id_, trial_id, floor.batch(batch, created_at), defs[assertion_id, version], passed, detail))
    for row in src.execute("SELECT * FROM trial_scores ORDER BY id"):
        id_, trial_id, batch, scorer, version, score, perfect, per_category, created_at = row
        dst.execute("INSERT INTO trial_scores VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (id_, trial_id, floor.batch(batch, created_at), floor.name(scorer), version, score, perfect,
                     floor.text(per_category)))
    for id_, trial_id, snapshot, cost, currency, created_at in src.execute("SELECT * FROM trial_costs ORDER BY id"):
        dst.execute("INSERT INTO trial_costs VALUES (?, ?, ?, ?, ?, ?)",
                    (id_, trial_id, snapshot, cost, currency, floor.batch("cost " + created_at, created_at)))
    for row in src.execute("SELECT * FROM metric_values ORDER BY id"):
        id_, run_id, trial_id, case_id, group, metric, value, version, created_at = row
        dst.execute("INSERT INTO metric_values VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (id_, run_id, trial_id, floor.name(case_id), floor.name(group), floor.name(metric), value,
                     version, floor.batch(f"metrics {run_id} {created_at}", created_at)))
    for row in src.execute("SELECT * FROM retrieval_rankings ORDER BY id"):
        id_, run_id, strategy, query_id, depth, chunk_ids, doc_ids, scores = row
        chunks = json.dumps([floor.name(c) for c in json.loads(chunk_ids)], separators=(",", ":"))
        docs = json.dumps([floor.name(d) for d in json.loads(doc_ids)], separators=(",", ":"))
        dst.execute("INSERT INTO retrieval_rankings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (id_, run_id, floor.name(strategy), floor.name(query_id), depth, chunks, docs, scores))
    _seals(src, floor)
    return floor


def _trials(src: sqlite3.Connection, floor: Floor, body: dict[str, str]) -> None:
    columns = ("id, run_id, case_pk, variant_id, system_prompt_id, mode, repeat_index, rendered_prompt_sha256, "
               "context_sha256, raw_output_sha256, parsed_output_sha256, parsed_output, error, prompt_tokens, "
               "completion_tokens, latency_ms, load_ms, cost, cache_key, cache_hit, created_at, raw_output_bytes, "
               "output_truncated")
    for row in src.execute(f"SELECT {columns} FROM trials ORDER BY id"):
        (id_, run_id, case_pk, variant, system_prompt, mode, repeat, prompt, context, raw, parsed_sha, parsed,
         error, p_tok, c_tok, latency, load, cost, cache_key, hit, created_at, raw_bytes, truncated) = row
        texts = [floor.text(body[sha]) if sha else None for sha in (prompt, context, raw)]
        parsed_text = floor.text(body[parsed_sha]) if parsed_sha else floor.text(parsed)
        floor.con.execute(f"INSERT INTO trials VALUES ({', '.join('?' * 22)})",
                          (id_, run_id, case_pk, variant, system_prompt, floor.name(mode), repeat, *texts,
                           parsed_text, error, p_tok, c_tok, latency, load, cost,
                           bytes.fromhex(cache_key) if cache_key else None, hit,
                           floor.batch(f"trials {run_id} {created_at}", created_at), raw_bytes, truncated))


def _seals(src: sqlite3.Connection, floor: Floor) -> None:
    for id_, kind, run_id, prev, run_prev, rows, digest in src.execute("SELECT * FROM seals ORDER BY id"):
        floor.con.execute("INSERT INTO seals VALUES (?, ?, ?, ?, ?, ?)",
                          (id_, kind, run_id, bytes.fromhex(prev),
                           bytes.fromhex(run_prev) if run_prev else None, bytes.fromhex(digest)))
        for table, entry in json.loads(rows).items():
            if not isinstance(entry, dict) or "digests" not in entry:
                continue
            row_digests = bytes.fromhex(entry["digests"])
            short = b"".join(row_digests[i:i + 8] for i in range(0, len(row_digests), 32))
            floor.con.execute("INSERT INTO seal_rows VALUES (?, ?, ?, ?)",
                              (id_, floor.name(table), json.dumps(entry.get("ids"), separators=(",", ":")), short))


def check(src: sqlite3.Connection, dst: sqlite3.Connection, floor: Floor) -> None:
    """The floor holds the same facts: every text reassembles byte for byte, every row is there."""
    by_id = {text_id: body for body, text_id in floor.texts.items()}
    texts = "SELECT id, sha256, body FROM v_texts"
    if floor.zlib_texts:
        texts = "SELECT id, sha256, body FROM ztexts"
    for text_id, sha, rebuilt in dst.execute(texts):
        if floor.zlib_texts:
            rebuilt = zlib.decompress(rebuilt).decode()
        if rebuilt != by_id[text_id] or hashlib.sha256(rebuilt.encode()).digest() != sha:
            raise SystemExit(f"text {text_id} does not reassemble through v_texts")
    for table in ("trials", "assertion_results", "trial_scores", "trial_costs", "metric_values", "retrieval_rankings",
                  "seals", "cases", "assertion_defs"):
        a = src.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        b = dst.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        if a != b:
            raise SystemExit(f"{table}: {a} rows in the history, {b} in the floor")
    if not floor.zlib_texts:
        def digest(sha: str | None, inline: str | None) -> str | None:
            return sha or (hashlib.sha256(inline.encode()).hexdigest() if inline is not None else None)

        before = [(i, p, c, r, digest(s, inline)) for i, p, c, r, s, inline in src.execute(
            "SELECT id, rendered_prompt_sha256, context_sha256, raw_output_sha256, parsed_output_sha256, "
            "parsed_output FROM trials ORDER BY id")]
        after = dst.execute("SELECT t.id, " + ", ".join(
            f"(SELECT lower(hex(sha256)) FROM texts WHERE id = t.{c})"
            for c in ("rendered_prompt", "context", "raw_output", "parsed_output")) + " FROM trials t ORDER BY t.id")
        if before != after.fetchall():
            raise SystemExit("the trials' texts differ between the history and the floor")
    _same(src, dst, "assertion results",
          "SELECT trial_id, assertion_id, assertion_version, category, weight, passed, detail "
          "FROM assertion_results ORDER BY id",
          "SELECT r.trial_id, n.name, d.version, c.name, d.weight, r.passed, r.detail FROM assertion_results r "
          "JOIN assertion_defs d ON d.id = r.assertion_def JOIN names n ON n.id = d.assertion_ref "
          "JOIN names c ON c.id = d.category ORDER BY r.id")
    facts_src = src.execute("SELECT run_id, trial_id, case_id, group_key, metric, value, scorer_version "
                            "FROM metric_values ORDER BY id").fetchall()
    facts_dst = dst.execute("SELECT m.run_id, m.trial_id, c.name, g.name, n.name, m.value, m.scorer_version "
                            "FROM metric_values m JOIN names c ON c.id = m.case_ref JOIN names g ON g.id = m.group_ref "
                            "JOIN names n ON n.id = m.metric ORDER BY m.id").fetchall()
    if facts_src != facts_dst:
        raise SystemExit("the metric values differ between the history and the floor")


def _same(src: sqlite3.Connection, dst: sqlite3.Connection, what: str, src_sql: str, dst_sql: str) -> None:
    if src.execute(src_sql).fetchall() != dst.execute(dst_sql).fetchall():
        raise SystemExit(f"the {what} differ between the history and the floor")


def _trial_count(con: sqlite3.Connection) -> int:
    return con.execute("SELECT COUNT(*) FROM trials t JOIN runs r ON r.id = t.run_id "
                       "WHERE r.kind = 'generation'").fetchone()[0]


def print_side_by_side(paths: list[Path], labels: list[str], trials: int) -> None:
    """One row per table (or group of tables), one column per layout, in bytes per generation trial."""
    sizes = []
    for path in paths:
        con = sqlite3.connect(path)
        sizes.append(table_bytes(con))
        con.close()
    groups = {"texts": ("texts", "pieces", "ztexts"), "seals": ("seals", "seal_rows"),
              "names and batches": ("names", "batches")}
    rows: list[tuple[str, list[int]]] = []
    seen: set[str] = set()
    for table in sorted(set().union(*sizes), key=lambda t: -max(s.get(t, 0) for s in sizes)):
        if table in seen:
            continue
        group = next((g for g, members in groups.items() if table in members), None)
        members = groups[group] if group else (table,)
        seen.update(members)
        rows.append((group or table, [sum(s.get(m, 0) for m in members) for s in sizes]))
    print("\n| table (with its indexes), B per trial | " + " | ".join(labels) + " |")
    print("|---|" + "---:|" * len(labels))
    small = [0] * len(paths)
    for label, values in rows:
        if max(values) < 40_000:
            small = [a + b for a, b in zip(small, values)]
            continue
        print(f"| {label} | " + " | ".join(f"{v / trials:,.0f}" for v in values) + " |")
    print("| (every other table) | " + " | ".join(f"{v / trials:,.0f}" for v in small) + " |")
    print("| **total (file size)** | " + " | ".join(f"**{p.stat().st_size / trials:,.0f}**" for p in paths) + " |")


LAYOUTS = (("floor.db", False, False, "floor, plain text"),
           ("floor-lean.db", False, True, "floor, plain text, fewest indexes"),
           ("floor-zlib.db", True, False, "floor, texts zlib (not plain SQL)"))
"""(file, texts zlib-compressed, `LEANER` indexes, column label) of each layout measured."""


def build_layouts(src: sqlite3.Connection, folder: Path, bits: int, paths: list[Path], labels: list[str]) -> str:
    """Build and check each of `LAYOUTS` in `folder`, adding its file and label; a line on the first."""
    note = ""
    for name, zlib_texts, lean, label in LAYOUTS:
        floor_path = folder / name
        dst = sqlite3.connect(floor_path)
        with dst:
            floor = build(src, dst, bits, zlib_texts, lean)
        dst.execute("VACUUM")
        check(src, dst, floor)
        dst.close()
        paths.append(floor_path)
        labels.append(label)
        if not note:
            note = (f"plain-text floor: {len(floor.texts):,} texts in {len(floor.pieces):,} distinct pieces, "
                    f"{len(floor.names):,} interned names, {len(floor.batches):,} batches; every text "
                    f"reassembled through `v_texts` and equal to the original, every metric row equal")
    return note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", type=Path, help="build the floor from this history instead of a new eval")
    parser.add_argument("--piece-bits", type=int, default=0,
                        help="a sentence or line end is a cut when this many hash bits are zero (0: every one)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ragqual-floor-"))
    try:
        history = args.measure
        if history is None:
            history = folder / "eval.db"
            print(f"running the quick-start eval into {history} (load {os.getloadavg()[0]:.2f})")
            run_eval(history)
        compact = folder / "history.db"
        src = sqlite3.connect(f"file:{history}?mode=ro", uri=True)
        src.execute(f"VACUUM INTO '{compact}'")  # the history packed the same way the floor will be
        paths, labels = [compact], ["history as written"]
        note = build_layouts(src, folder, args.piece_bits, paths, labels)
        trials = _trial_count(src)
        src.close()
        print(f"{trials} generation trials; every file vacuumed; piece cut: 1 in {1 << args.piece_bits} "
              f"sentence or line ends (load {os.getloadavg()[0]:.2f})")
        print_side_by_side(paths, labels, trials)
        print("\n" + note)
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
