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
    mean_scores,
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


def read_qrels(text: str, source: str) -> tuple[Qrels, dict[str, list[tuple[str, int]]]]:
    """{qid: {docno: label}} from `qid iter docno label` lines, and the judgements repeated for
    a query: {qid: [(docno, line number)]}.

    A judgement repeated for the same query is kept aside rather than refused here: trec_eval
    refuses it only for a query it evaluates (`plan_like_trec_eval`). The first label stays.
    """
    qrels, again, issues = _scan_qrels(text, source)
    if issues:
        raise ValidationFailed(issues)
    return qrels, again


def _scan_qrels(text: str, source: str) -> tuple[Qrels, dict[str, list[tuple[str, int]]], list[Issue]]:
    qrels: dict[str, dict[str, int]] = {}
    again: dict[str, list[tuple[str, int]]] = {}
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
            again.setdefault(qid, []).append((docno, number))
        else:
            qrels[qid][docno] = label
    return qrels, again, issues


def parse_qrels(text: str, source: str) -> Qrels:
    """`read_qrels`, refusing any judgement repeated for a query."""
    qrels, again, issues = _scan_qrels(text, source)
    issues += [Issue(source, line, f"document {doc!r} judged twice for query {qid!r}")
               for qid, items in again.items() for doc, line in items]
    if issues:
        raise ValidationFailed(sorted(issues, key=lambda i: i.line or 0))
    return qrels


def read_run(text: str, source: str) -> tuple[Run, dict[str, list[tuple[str, float, int]]]]:
    """{qid: {docno: score}} from `qid Q0 docno rank score tag` lines, and the extra copies of
    documents retrieved more than once for a query: {qid: [(docno, score, line)]}. The copy with the
    highest score is the one kept (the one trec_eval ranks first)."""
    run, copies, issues = _scan_run(text, source)
    if issues:
        raise ValidationFailed(issues)
    return run, copies


def _scan_run(text: str, source: str) -> tuple[Run, dict[str, list[tuple[str, float, int]]], list[Issue]]:
    run: dict[str, dict[str, float]] = {}
    copies: dict[str, list[tuple[str, float, int]]] = {}
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
            continue
        docs = run.setdefault(qid, {})
        if docno in docs:
            copies.setdefault(qid, []).append((docno, min(score, docs[docno]), number))
            docs[docno] = max(score, docs[docno])
        else:
            docs[docno] = score
    return run, copies, issues


def parse_run(text: str, source: str) -> Run:
    """`read_run`, refusing any document retrieved twice for a query."""
    run, copies, issues = _scan_run(text, source)
    issues += [Issue(source, line, f"document {doc!r} retrieved twice for query {qid!r}")
               for qid, items in copies.items() for doc, _, line in items]
    if issues:
        raise ValidationFailed(sorted(issues, key=lambda i: i.line or 0))
    return run


def parse_run_tag(text: str) -> str | None:
    """The run tag trec_eval reports: the sixth field of the last content line."""
    tag = None
    for _, fields in _content_lines(text):
        if len(fields) >= 6:
            tag = fields[5]
    return tag


TREC_ORDER = ("num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P", "recall",
              "ndcg", "ndcg_cut", "map_cut", "success")
"""The measure families ragqual implements, in the order trec_eval 10.0 prints them."""

MEASURE_GROUPS = {
    "all_trec": TREC_ORDER,
    "official": ("num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P"),
    "set": ("num_q", "num_ret", "num_rel", "num_rel_ret"),
}
"""trec_eval's `-m` nicknames, limited to the measures implemented here (trec_eval's own lists
also hold gm_map, iprec_at_recall, infAP, set_P ... which ragqual does not compute)."""


def _family(name: str) -> str:
    return parse_measure(name).family


def expand_measures(specs: Sequence[str]) -> list[str]:
    """trec_eval's `-m` syntax to measure names: `P` -> P_5 ... P_1000, `P.5,10` -> P_5,
    P_10, `ndcg` -> ndcg, `all_trec` / `official` / `set` -> their implemented measures;
    duplicates dropped. Families come out in trec_eval's printing order, cutoffs as given."""
    names: list[str] = []
    specs = [m for spec in specs for m in MEASURE_GROUPS.get(spec, (spec,))]
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
    return sorted(dict.fromkeys(names), key=lambda n: TREC_ORDER.index(_family(n)))


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


def _report_line(name: str, qid: str, value: float, precision: int = 4) -> str:
    shown = str(int(value)) if parse_measure(name).is_count else f"{value:6.{precision}f}"
    return f"{name:<22}\t{qid}\t{shown}\n"


def format_per_query(results: Mapping[str, Mapping[str, float]], measures: Sequence[str], precision: int = 4) -> str:
    """trec_eval -q's per-query lines: each query's measures (num_q aside), queries in byte order."""
    return "".join(_report_line(m, qid, results[qid][m], precision)
                   for qid in sorted(results) for m in measures if m != "num_q")


def format_trec_eval(
    results: Mapping[str, Mapping[str, float]],
    means: Mapping[str, float],
    measures: Sequence[str],
    per_query: bool,
    *,
    run_id: str | None = None,
    precision: int = 4,
) -> str:
    """trec_eval's three columns, `measure<TAB>qid|all<TAB>value`.

    The name is padded to 22 characters, values printed `%6.4f` (`precision` digits instead of
    4 when asked) and counts as integers.
    With `per_query` (trec_eval -q) each query's lines come first, in byte order, without
    num_q; the summary follows, opened by a `runid` line when `run_id` is given.
    """
    out = [format_per_query(results, measures, precision)] if per_query else []
    if run_id is not None:
        out.append(f"{'runid':<22}\tall\t{run_id}\n")
    out.extend(_report_line(m, "all", means[m], precision) for m in measures)
    return "".join(out)


# ---------------------------------------------------------------------------------------
# trec_eval 10.0's refusals and its summary


MISSING_REFUSE = "refuse"
MISSING_SKIP = "skip"


class TrecEvalRefused(InputError):
    """Where trec_eval 10.0 stops with an error; `exit_code` is the one it exits with."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


def _ranked_copies(docs: Mapping[str, float], copies: Sequence[tuple[str, float, int]]) -> list[str]:
    """Every retrieved line's docno (duplicates included) in trec_eval's rank order."""
    entries = [*docs.items(), *((doc, score) for doc, score, _ in copies)]
    entries.sort(key=lambda e: e[0], reverse=True)  # ties: docno descending, as rank_documents
    entries.sort(key=lambda e: e[1], reverse=True)
    return [doc for doc, _ in entries]


def plan_like_trec_eval(
    qrels: Qrels,
    run: Run,
    judged_again: Mapping[str, Sequence[tuple[str, int]]],
    run_copies: Mapping[str, Sequence[tuple[str, float, int]]],
    *,
    complete: bool = False,
    max_docs: int | None = None,
    missing: str = MISSING_REFUSE,
) -> tuple[list[str], TrecEvalRefused | None]:
    """The qrels topics trec_eval 10.0 scores, in its order, and the refusal that stops it
    (None when it runs to the end).

    trec_eval goes through the qrels topics in byte order, scoring each (and with -q printing its
    lines) before it looks at the next, so the topics before a refusal are scored and printed.
    A topic absent from the run is scored as an empty ranking with -c; without it, 10.0 stops
    (exit 4; `missing="skip"` gives 9.x's behaviour of skipping it). For a topic it scores, a
    document retrieved twice within the top `max_docs` (-M) of the ranking, or judged twice,
    stops it (exit 4); duplicates anywhere else are ignored. No topic scored at all: exit 7.
    """
    if missing not in (MISSING_REFUSE, MISSING_SKIP):
        raise InputError(f"missing must be {MISSING_REFUSE!r} or {MISSING_SKIP!r}, got {missing!r}")
    scored: list[str] = []
    for qid in sorted(qrels):
        if qid not in run and not complete and missing == MISSING_SKIP:
            continue
        refusal = _topic_refusal(qid, run, judged_again, run_copies, complete=complete, max_docs=max_docs)
        if refusal is not None:
            return scored, refusal
        scored.append(qid)
    if not scored:
        return scored, TrecEvalRefused("trec_eval: No queries with both results and relevance info", 7)
    return scored, None


def _topic_refusal(
    qid: str,
    run: Run,
    judged_again: Mapping[str, Sequence[tuple[str, int]]],
    run_copies: Mapping[str, Sequence[tuple[str, float, int]]],
    *,
    complete: bool,
    max_docs: int | None,
) -> TrecEvalRefused | None:
    """Why trec_eval 10.0 stops at this qrels topic, or None when it scores it."""
    if qid not in run and not complete:
        return TrecEvalRefused(
            f"trec_eval: result qid '{qid}' not found in qrels (trec_eval 10.0 stops when a judged "
            "topic has no results; -c scores it as an empty ranking, --missing skip skips it as 9.x did)", 4)
    top = _ranked_copies(run.get(qid, {}), run_copies.get(qid, ()))[:max_docs]
    twice = sorted({d for d in top if top.count(d) > 1}) if run_copies.get(qid) else []
    if twice:
        return TrecEvalRefused(
            f"trec_eval.form_res_qrels: duplicate docs {twice[0]} (topic {qid}: retrieved twice "
            f"within the {len(top)} ranked documents that count)", 4)
    if judged_again.get(qid):
        doc, line = judged_again[qid][0]
        return TrecEvalRefused(f"trec_eval.form_res_rels: duplicate docs {doc} (topic {qid}, "
                               f"judged again on qrels line {line})", 4)
    return None


def summary_scores(results: Mapping[str, Mapping[str, float]], qrels: Qrels, *, complete: bool = False
                   ) -> dict[str, float]:
    """trec_eval's `all` line. As `metrics.mean_scores`, except that with -c trec_eval's summary
    num_rel counts every judgement with a label above 0 over all qrels topics, whatever the
    relevance level -l (its m_num_rel.c), while the per-topic lines count labels >= -l."""
    means = mean_scores(results)
    if complete and "num_rel" in means:
        means["num_rel"] = float(sum(1 for docs in qrels.values() for label in docs.values() if label > 0))
    return means
