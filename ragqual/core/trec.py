"""TREC text formats: qrels and runs in, qrels, runs and trec_eval's report out.

Works on text, never on files. Reading follows trec_eval 10.0: fields are split on C white
space; a line whose first non-blank character is `#` is a comment, blank lines are skipped
(trec_eval skips them in runs; here in qrels too); a run line needs at least six fields
(`qid Q0 docno rank score tag`, anything after the tag is ignored, the rank is ignored: the
order comes from the scores); a qrels line needs exactly four (`qid iter docno label`).
Every malformed line is collected into one `ValidationFailed`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from ragqual.core.metrics import (
    CUTOFF_MEASURES,
    PLAIN_MEASURES,
    Qrels,
    Run,
    parse_measure,
    rank_documents,
)
from ragqual.errors import InputError, Issue, ValidationFailed

_C_SPACE = " \t\n\v\f\r"
_FIELD = re.compile(f"[^{re.escape(_C_SPACE)}]+")

DEFAULT_CUTOFFS = {
    "P": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "recall": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "map_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "ndcg_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "success": (1, 5, 10),
}
"""trec_eval's cutoffs for a measure family named without parameters (`-m P`)."""


# ---------------------------------------------------------------------------------------
# Reading


def _content_lines(text: str) -> Iterator[tuple[int, list[str]]]:
    """(1-based line number, fields) of every line that is not blank or a comment."""
    for number, line in enumerate(text.split("\n"), start=1):
        fields = _FIELD.findall(line)
        if fields and not fields[0].startswith("#"):
            yield number, fields


_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity)", re.IGNORECASE)


def _parse_int(text: str) -> int | None:
    """A plain decimal integer (Python's int() would also take `1_0` or non-ASCII digits)."""
    return int(text) if _INTEGER.fullmatch(text) else None


def _parse_score(text: str) -> float | None:
    """A decimal or exponent number, or +-inf; NaN cannot be ranked and is refused."""
    return float(text) if _NUMBER.fullmatch(text) else None


def parse_qrels(text: str, source: str) -> Qrels:
    """{qid: {docno: label}} from `qid iter docno label` lines."""
    qrels: dict[str, dict[str, int]] = {}
    issues: list[Issue] = []
    for number, fields in _content_lines(text):
        if len(fields) != 4:
            found = f"expected 4 fields 'qid iter docno label', found {len(fields)}"
            issues.append(Issue(source, number, found))
            continue
        qid, _, docno, raw_label = fields
        label = _parse_int(raw_label)
        if label is None:
            issues.append(Issue(source, number, f"relevance label {raw_label!r} is not an integer"))
        elif docno in qrels.setdefault(qid, {}):
            issues.append(Issue(source, number, f"document {docno!r} judged twice for query {qid!r}"))
        else:
            qrels[qid][docno] = label
    if issues:
        raise ValidationFailed(issues)
    return qrels


def parse_run(text: str, source: str) -> Run:
    """{qid: {docno: score}} from `qid Q0 docno rank score tag` lines."""
    run: dict[str, dict[str, float]] = {}
    issues: list[Issue] = []
    for number, fields in _content_lines(text):
        if len(fields) < 6:
            issues.append(
                Issue(source, number, f"expected 6 fields 'qid Q0 docno rank score tag', found {len(fields)}")
            )
            continue
        qid, _, docno, _, raw_score = fields[:5]
        score = _parse_score(raw_score)
        if score is None:
            issues.append(Issue(source, number, f"score {raw_score!r} is not a number"))
        elif docno in run.setdefault(qid, {}):
            issues.append(Issue(source, number, f"document {docno!r} retrieved twice for query {qid!r}"))
        else:
            run[qid][docno] = score
    if issues:
        raise ValidationFailed(issues)
    return run


def parse_run_tag(text: str) -> str | None:
    """The run tag trec_eval reports: the sixth field of the last content line."""
    tag = None
    for _, fields in _content_lines(text):
        if len(fields) >= 6:
            tag = fields[5]
    return tag


def expand_measures(specs: Sequence[str]) -> list[str]:
    """trec_eval's `-m` syntax to measure names: `P` -> P_5 ... P_1000, `P.5,10` -> P_5,
    P_10, `ndcg` -> ndcg; duplicates dropped, order kept."""
    names: list[str] = []
    for spec in specs:
        family, dot, params = spec.partition(".")
        if family in CUTOFF_MEASURES:
            cutoffs = [p for p in params.split(",") if p] if dot else DEFAULT_CUTOFFS[family]
            names.extend(f"{family}_{k}" for k in cutoffs)
        elif dot and family in PLAIN_MEASURES:
            raise InputError(f"measure {family!r} takes no parameters, got {spec!r}")
        else:
            names.append(spec)
    for name in names:
        parse_measure(name)
    return list(dict.fromkeys(names))


# ---------------------------------------------------------------------------------------
# Writing


def _check_tokens(kind: str, values: Sequence[str]) -> None:
    bad = [v for v in values if not v or _FIELD.fullmatch(v) is None]
    if bad:
        raise InputError(f"{kind} must be non-empty and free of white space for TREC format: {bad[:5]!r}")


def format_run(run: Run, tag: str) -> str:
    """The run in TREC format, queries in byte order, documents in trec_eval rank order.

    Scores are written with repr, so reading the text back gives the same floats and the
    same ranking.
    """
    _check_tokens("the run tag", [tag])
    _check_tokens("query ids", list(run))
    lines: list[str] = []
    for qid in sorted(run):
        scores = run[qid]
        ranked = rank_documents(scores)
        _check_tokens("document ids", ranked)
        lines.extend(f"{qid} Q0 {doc} {rank} {scores[doc]!r} {tag}" for rank, doc in enumerate(ranked, 1))
    return "".join(line + "\n" for line in lines)


def format_qrels(qrels: Qrels) -> str:
    """The judgements as `qid 0 docno label` lines, sorted by query then document."""
    _check_tokens("query ids", list(qrels))
    lines: list[str] = []
    for qid in sorted(qrels):
        _check_tokens("document ids", list(qrels[qid]))
        lines.extend(f"{qid} 0 {doc} {qrels[qid][doc]}" for doc in sorted(qrels[qid]))
    return "".join(line + "\n" for line in lines)


def _report_line(name: str, qid: str, value: float) -> str:
    shown = str(int(value)) if parse_measure(name).is_count else f"{value:6.4f}"
    return f"{name:<22}\t{qid}\t{shown}\n"


def format_trec_eval(
    results: Mapping[str, Mapping[str, float]],
    means: Mapping[str, float],
    measures: Sequence[str],
    per_query: bool,
    *,
    run_id: str | None = None,
) -> str:
    """trec_eval's three columns, `measure<TAB>qid|all<TAB>value`.

    The name is padded to 22 characters, values printed `%6.4f` and counts as integers.
    With `per_query` (trec_eval -q) each query's lines come first, in byte order, without
    num_q; the summary follows, opened by a `runid` line when `run_id` is given.
    """
    out: list[str] = []
    if per_query:
        for qid in sorted(results):
            out.extend(_report_line(m, qid, results[qid][m]) for m in measures if m != "num_q")
    if run_id is not None:
        out.append(f"{'runid':<22}\tall\t{run_id}\n")
    out.extend(_report_line(m, "all", means[m]) for m in measures)
    return "".join(out)
