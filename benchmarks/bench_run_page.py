"""The run page of a big retrieval run: wall time, peak memory (RSS) and size of
`ragqual report RUN --format html -o page.html`, for one or more Python environments (e.g. another
checkout's .venv beside this one's, to measure a change before and after).

The SQLite history is copied into a temporary folder first, so the one measured is never written.
Each environment runs `-n` times in a fresh subprocess (after one untimed warm-up run, so all read
a warm file cache); the table prints the median wall time, the largest peak RSS, the page's bytes
and the bytes of its "similarity of the hits" chart (the histograms of the hits' scores).

    python benchmarks/bench_run_page.py --db eval-results/eval.db --run 1
    python benchmarks/bench_run_page.py --db /tmp/vaswani.db --run 1 --python ../main/.venv/bin/python -n 3
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHART = re.compile(r'<script type="application/vnd.vegalite\+json" data-target="similarity">(.*?)</script>', re.DOTALL)


def report(python: str, db: Path, run: int, out: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS in bytes of one `ragqual report` in a fresh process."""
    argv = [python, "-m", "ragqual", "--db", f"sqlite:///{db}", "report", str(run), "--format", "html", "-o", str(out)]
    started = time.perf_counter()
    # run outside any checkout: `python -m` puts the working directory first on sys.path
    proc = subprocess.Popen(argv, cwd=out.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"{python}: ragqual report {run} failed: {err.strip()[-400:]}")
    return wall, usage.ru_maxrss * 1024  # Linux reports kilobytes


def measure(python: str, db: Path, run: int, n: int, out: Path) -> tuple[float, int, int, int]:
    report(python, db, run, out)
    runs = [report(python, db, run, out) for _ in range(n)]
    text = out.read_text(encoding="utf-8")
    chart = CHART.search(text)
    return (statistics.median(w for w, _ in runs), max(r for _, r in runs), out.stat().st_size,
            len(chart.group(1).encode()) if chart else 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True, help="a SQLite history (copied, never written)")
    parser.add_argument("--run", type=int, required=True, help="a retrieval run's id")
    parser.add_argument("--python", action="append", default=[],
                        help="another environment's python (repeatable); this one is always measured")
    parser.add_argument("-n", type=int, default=1, help="timed runs per environment (default 1)")
    args = parser.parse_args()
    pythons = [*args.python, sys.executable]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "history.db"
        shutil.copyfile(args.db, db)
        rows = {python: measure(python, db, args.run, args.n, Path(tmp) / "page.html") for python in pythons}
    print(f"{'python':<44} {'runs':>4} {'wall s':>7} {'peak RSS MB':>12} {'page bytes':>12} {'hits chart bytes':>17}")
    for python, (wall, rss, size, chart) in rows.items():
        print(f"{python[-44:]:<44} {args.n:>4} {wall:>7.1f} {rss / 2**20:>12.0f} {size:>12,} {chart:>17,}")


if __name__ == "__main__":
    main()
