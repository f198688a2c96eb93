"""What each model-server and console fault costs, measured through the real CLI.

    python benchmarks/bench_faults.py [--timeout SECONDS] [--trials N]

Each row runs `ragqual` as a child process in a throwaway project (a copy of the bundled corpus
and goldens, its own history and cache) against a stand-in server on 127.0.0.1
(tests/support/fake_openai.py), and prints the exit code, the trials stored, the trial errors,
the requests the server saw and the wall time. Wall time depends on the machine and its load:
numbers for reports, never for tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.fake_openai import FakeOpenAI, always, every  # noqa: E402


def project(root: Path) -> dict[str, str]:
    shutil.copytree(REPO / "corpus", root / "corpus")
    shutil.copytree(REPO / "goldens", root / "goldens")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGQUAL_", "OLLAMA_", "QDRANT_"))}
    env.update(RAGQUAL_DB=str(root / "eval.db"), RAGQUAL_CACHE_DIR=str(root / "cache"))
    return env


def generation(server: FakeOpenAI, trials: int) -> list[str]:
    return ["--cache", "off", "generation", "--model", f"openai:{server.base_url}#m", "--no-mock-line",
            "--mode", "oracle", "--limit", str(trials), "--repeats", "1"]


def counts(db: Path) -> tuple[int, int, int]:
    if not db.exists():
        return 0, 0, 0
    with sqlite3.connect(db) as conn:
        trials, errors = conn.execute("SELECT COUNT(*), COUNT(error) FROM trials").fetchone()
    return trials, errors, db.stat().st_size


def run(name: str, args: list[str], env: dict[str, str], cwd: Path, server: FakeOpenAI | None = None,
        interrupt_after: float | None = None) -> dict[str, object]:
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "ragqual", *args], cwd=cwd, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    interrupted_at = None
    if interrupt_after is not None:
        try:
            child.wait(timeout=interrupt_after)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGINT)
            interrupted_at = time.perf_counter()
    _, err = child.communicate()
    ended = time.perf_counter()
    exited = time.monotonic()
    trials, errors, size = counts(Path(env["RAGQUAL_DB"]))
    last = (err.strip().splitlines() or [""])[-1]
    return {"fault": name, "exit": child.returncode, "trials": trials, "errors": errors,
            "requests": server.requests if server else "-",
            "first request to exit (s)": f"{exited - server.arrivals[0]:.1f}" if server and server.arrivals else "-",
            "db_MB": f"{size / 2**20:.2f}",
            "seconds": f"{ended - started:.1f}" + (f" ({ended - interrupted_at:.2f} after Ctrl-C)"
                                                    if interrupted_at else ""),
            "last line": last[:110]}


def streamed_rss(env: dict[str, str], cwd: Path, endless: str, n: int) -> dict[str, object]:
    """`--limit 0` over n rows, printed to /dev/null: the child's peak memory."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "ragqual", "sql", "--limit", "0",
                          "--timeout", "0", "--format", "csv", endless + f"SELECT x FROM c LIMIT {n}"],
                         cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout
    seconds = time.perf_counter() - started
    return {"fault": f"sql: {n:,} rows, --limit 0 (streamed)", "exit": 0, "trials": 0, "errors": 0, "requests": "-",
            "first request to exit (s)": "-", "db_MB": "-", "seconds": f"{seconds:.1f}",
            "last line": f"peak memory {int(out.strip()) / 1024:.0f} MB"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=3.0, help="RAGQUAL_MODEL_TIMEOUT for the runs")
    parser.add_argument("--trials", type=int, default=12)
    opts = parser.parse_args()
    rows = []
    scenarios = [
        ("drop every 3rd connection", every(3, "drop"), {}),
        ("drop every 3rd, RAGQUAL_MODEL_RETRIES=0", every(3, "drop"), {"RAGQUAL_MODEL_RETRIES": "0"}),
        ("hung server (breaker, K=5)", always("hang"), {}),
        ("slow drip, 1 byte/s (breaker, K=5)", always("drip"), {}),
        ("content: null", lambda i: "null_content" if i > 1 else None, {}),
        ("10 MB answers", lambda i: "huge" if i > 1 else None, {}),
    ]
    for name, faults, extra in scenarios:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            env = {**project(root), "RAGQUAL_MODEL_TIMEOUT": str(opts.timeout), **extra}
            with FakeOpenAI(faults=faults, drip_seconds=1.0) as server:
                trials = 3 if name.startswith("10 MB") else opts.trials
                rows.append(run(name, generation(server, trials), env, root, server))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = project(root)
        subprocess.run([sys.executable, "-m", "ragqual", "db", "upgrade"], cwd=root, env=env, capture_output=True)
        endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
        rows.append(run("sql: count to infinity, --timeout 5", ["sql", "--timeout", "5", endless + "SELECT count(*) FROM c"],
                        env, root))
        rows.append(run("sql: endless rows, default --limit", ["sql", "--format", "csv", endless + "SELECT x FROM c"],
                        env, root))
        rows.append(run("sql: Ctrl-C after 3 s", ["sql", "--timeout", "0", endless + "SELECT count(*) FROM c"],
                        env, root, interrupt_after=3.0))
        rows.append(streamed_rss(env, root, endless, 2_000_000))
        target = root / "x.db"
        rows.append(run("sql: ATTACH a new file", ["sql", f"ATTACH DATABASE '{target}' AS x"], env, root))
        rows[-1]["fault"] += f" (file created: {target.exists()})"
    columns = list(rows[0])
    print(f"RAGQUAL_MODEL_TIMEOUT={opts.timeout:g} s, backoff 0.5 s doubling, 2 retries, breaker K=5, "
          f"{opts.trials} trials per run")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[c]).replace("|", "\\|") for c in columns) + " |")


if __name__ == "__main__":
    main()
