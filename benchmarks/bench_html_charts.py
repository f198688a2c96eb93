"""Which chart library the HTML reports inline: plotly (plotly.js inline) vs Vega-Lite (Altair +
the vl-convert vega-embed bundle inline), on the same three charts a comparison page draws — a
forest plot of 9 deltas with intervals, grouped bars (3 strategies x 9 metrics), a histogram of
2,000 similarities.

For each: the page's size, and its load time in headless Debian chromium — the wall time of
`chromium --headless --dump-dom` minus that of an empty page (median of `--repeats`), and the
in-page time from navigation start to the end of the last chart call (`performance.now()`).

    pip install plotly   # not a ragqual dependency; only this comparison needs it
    python benchmarks/bench_html_charts.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
         "--disable-background-networking", "--host-resolver-rules=MAP * ~NOTFOUND", "--dump-dom"]
STAMP = ('<script>document.body.setAttribute("data-ms", performance.now().toFixed(1));</script>')


def data() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    metrics = ["recall@1", "recall@5", "hit@5", "mrr", "ndcg@10", "map@10", "precision@5", "contextRecall", "nonEmpty"]
    delta = rng.normal(0, 0.01, len(metrics))
    forest = pd.DataFrame({"row": metrics, "delta": delta, "low": delta - 0.03, "high": delta + 0.03})
    bars = pd.DataFrame([(s, m, float(rng.uniform(0.2, 1))) for s in ("bm25", "dense", "hybrid") for m in metrics],
                        columns=["strategy", "metric", "value"])
    hist = pd.DataFrame({"similarity": np.concatenate([rng.normal(0.7, 0.1, 1000), rng.normal(0.4, 0.1, 1000)]),
                         "kind": ["relevant"] * 1000 + ["non-relevant"] * 1000})
    return forest, bars, hist


def plotly_page(forest: pd.DataFrame, bars: pd.DataFrame, hist: pd.DataFrame) -> str:
    import plotly.express as px
    import plotly.io as pio

    figures = [
        px.scatter(forest, x="delta", y="row", error_x=forest["high"] - forest["delta"],
                   error_x_minus=forest["delta"] - forest["low"]),
        px.bar(bars, x="strategy", y="value", color="metric", barmode="group"),
        px.histogram(hist, x="similarity", color="kind", barmode="overlay", nbins=40),
    ]
    divs = [pio.to_html(f, include_plotlyjs=(i == 0), full_html=False, div_id=f"c{i}") for i, f in enumerate(figures)]
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{''.join(divs)}{STAMP}</body></html>"


def vega_page(forest: pd.DataFrame, bars: pd.DataFrame, hist: pd.DataFrame) -> str:
    import altair as alt

    from ragqual.reports import page

    base = alt.Chart(forest).encode(y="row:N")
    charts = [
        alt.layer(base.mark_rule().encode(x="low:Q", x2="high:Q"), base.mark_point(filled=True).encode(x="delta:Q")),
        alt.Chart(bars).mark_bar().encode(x="strategy:N", xOffset="metric:N", y="value:Q", color="metric:N"),
        alt.Chart(hist).mark_bar(opacity=0.5).encode(alt.X("similarity:Q", bin=alt.Bin(maxbins=40)),
                                                     alt.Y("count():Q", stack=None), color="kind:N"),
    ]
    html = page.render("bench", [page.chart(f"c{i}", c) for i, c in enumerate(charts)])
    return html.replace("</body>", STAMP + "</body>")


def load(browser: str, path: Path) -> tuple[float, float | None]:
    started = time.perf_counter()
    proc = subprocess.run([browser, *FLAGS, path.as_uri()], capture_output=True, text=True, timeout=120)
    wall = (time.perf_counter() - started) * 1000
    found = re.search(r'data-ms="([\d.]+)"', proc.stdout)
    return wall, float(found.group(1)) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("needs Debian's chromium (apt-get install chromium)")
    frames = data()
    with tempfile.TemporaryDirectory() as tmp:
        pages = {"empty page": "<!DOCTYPE html><html><body>" + STAMP + "</body></html>",
                 "vega-lite (altair + vl-convert inline)": vega_page(*frames)}
        try:
            pages["plotly (plotly.js inline)"] = plotly_page(*frames)
        except ImportError:
            print("plotly is not installed (pip install plotly): its row is left out")
        results = {}
        for name, text in pages.items():
            path = Path(tmp) / f"{len(results)}.html"
            path.write_text(text, encoding="utf-8")
            runs = [load(browser, path) for _ in range(args.repeats)]
            results[name] = (path.stat().st_size, statistics.median(w for w, _ in runs),
                             statistics.median(m for _, m in runs if m is not None))
    empty = results["empty page"][1]
    print(f"{'library':<40} {'bytes':>10} {'load ms (wall - empty)':>23} {'in-page ms':>11}")
    for name, (size, wall, in_page) in results.items():
        print(f"{name:<40} {size:>10,} {wall - empty:>23.0f} {in_page:>11.1f}")


if __name__ == "__main__":
    main()
