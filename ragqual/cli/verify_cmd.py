"""`ragqual verify [RUN_ID...]`: check the history's seals; exit 0 intact, 1 when anything changed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import click

from ragqual.app.context import AppContext
from ragqual.app.history_reads import verify_history
from ragqual.errors import GateFailed
from ragqual.store.verify import Verdict


def _summary(verdict: Verdict) -> list[str]:
    lines = [f"{len(verdict.sealed_runs)} sealed run(s), {len(verdict.unsealed_runs)} unsealed, "
             f"{verdict.rows_checked} sealed row(s) checked against {verdict.seals} seal(s)"]
    if verdict.unsealed_runs:
        shown = ", ".join(map(str, verdict.unsealed_runs[:20])) + (" …" if len(verdict.unsealed_runs) > 20 else "")
        lines.append(f"unsealed (written before sealing existed, not checked): run(s) {shown}")
    inserted = Counter(f.table for f in verdict.findings if f.kind == "inserted")
    if inserted:
        lines.append("rows no seal covers (left out by every reader): "
                     + ", ".join(f"{n} in {t}" for t, n in sorted(inserted.items())))
    if verdict.expected_at is not None:
        lines.append(f"expected digest found: seal {verdict.expected_at}")
    lines.append(f"head digest: {verdict.head or 'none'}")
    return lines


@click.command("verify")
@click.argument("run_ids", nargs=-1, type=int)
@click.option("--expect", metavar="DIGEST", help="A head digest published earlier: it must be a seal of this chain.")
@click.option("--expect-from", "expect_from", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path),
              help="A report (Markdown, text, JSON), HTML page or baseline file ragqual wrote: the history head it "
                   "records must still be in this chain, at the same seal.")
@click.pass_obj
def verify_cmd(app: AppContext, run_ids: tuple[int, ...], expect: str | None, expect_from: Path | None) -> None:
    """Recompute every seal of the history (or of RUN_IDs) and name each row that changed.

    Exit 0 when everything sealed is as it was written, 1 when a row was edited, deleted,
    re-ordered or inserted outside ragqual, or a seal no longer adds up. Print the head digest:
    keep it elsewhere (commit or publish it) and check it later with --expect, since someone
    who can rewrite the whole database can also recompute every seal. Every report, page and
    baseline file records the head of its time: --expect-from FILE checks it.
    The schema is compared with what the migrations at head create: each table, column,
    index, trigger or view missing, extra or different is named (exit 1).
    """
    verdict = verify_history(app, list(run_ids), expect, expect_from)
    if app.as_json:
        click.echo(json.dumps({
            "intact": verdict.intact, "head": verdict.head, "seals": verdict.seals,
            "rows_checked": verdict.rows_checked, "sealed_runs": verdict.sealed_runs,
            "unsealed_runs": verdict.unsealed_runs, "expected_at": verdict.expected_at,
            "findings": [{"kind": f.kind, "table": f.table, "row_id": f.row_id, "detail": f.detail}
                         for f in verdict.findings],
        }, indent=2))
    else:
        for finding in verdict.findings:
            click.echo(str(finding))
        for line in _summary(verdict):
            click.echo(line)
    if not verdict.intact:
        raise GateFailed(f"the history does not match its seals: {len(verdict.findings)} finding(s) above")
