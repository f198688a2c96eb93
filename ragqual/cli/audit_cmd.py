"""`ragqual audit`: everything the history knows about one trial, and every score it has had.

The trial comes first (question, answer, the latest verdict with each assertion by name), then
every scoring over time, the case and its assertion versions, the prompt, context and raw output,
and last the run's provenance with long parameter lists summarised as `ragqual report` does
(`--json` keeps everything whole)."""

from __future__ import annotations

import json
from typing import Any

import click

from ragqual.app.context import AppContext
from ragqual.app.history_reads import trial_audit
from ragqual.core.display import MISSING, brief_params, fmt_value, unit_of


def _pretty(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _num(value: Any, quantity: str = "") -> str:
    """A value in its quantity's unit (`ragqual.core.display`); milliseconds say so."""
    text = fmt_value(value, quantity)
    return f"{text} ms" if text != MISSING and unit_of(quantity) == "ms" else text


def _indent(text: str, pad: str = "  ") -> str:
    return "\n".join(pad + line for line in text.splitlines()) or pad


def _run_lines(data: dict[str, Any]) -> list[str]:
    run = data["run"]
    prov = run["provenance"]
    events = "; ".join(f"{e['event']} {e['at']}" + (f" {e['detail']}" if e["detail"] else "")
                       for e in data["run_events"])
    return [
        f"run {run['id']} ({run['kind']}, subject {run['subject']}), started {run['started_at']}, "
        f"status {run['status']}",
        f"  git          {run['git_sha'] or '(none: ' + str(prov.get('git_note')) + ')'}  dirty: {_num(run['git_dirty'])}",
        f"  fingerprint  corpus {_num(run['corpus_fingerprint'])}  dataset {_num(run['dataset_hash'])}",
        f"  versions     ragqual {_num(prov.get('ragqual_version'))}  python {_num(prov.get('python_version'))}",
        f"  argv         {' '.join(run['argv'])}",
        "  params",
        _indent(_pretty(brief_params(run["params"] or {})), "    "),
        f"  events       {events}",
    ]


def _question(case_input: Any) -> str:
    """The question a case asks: a RAG golden's query (and how many turns came before it), else its input."""
    if isinstance(case_input, dict) and isinstance(case_input.get("query"), str):
        turns = case_input.get("turns") or []
        return case_input["query"] + (f"  (after {len(turns)} earlier turn(s))" if turns else "")
    return _pretty(case_input)


def _assertion_names(t: dict[str, Any], defs: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    names = {(d["assertion_id"], d["version"]): d["name"] for d in defs}
    names.update({(a["id"], a["version"]): a["name"] for a in t["case_definition"].get("assertions", [])})
    return names


def _headline_lines(trial_id: int, data: dict[str, Any]) -> list[str]:
    """What a person opens an audit for: the question, the answer and the latest verdict."""
    t, run = data["trial"], data["run"]
    answer = t["parsed_output"] if t["parsed_output"] is not None else t["raw_output"]
    lines = [
        f"trial {trial_id}, created {t['created_at']}: run {run['id']} ({run['kind']}), case {t['slug']}, "
        f"variant {t['variant_name']}, mode {t['mode']!r}, repeat {t['repeat_index']}",
        "question", _indent(_question(t["case_definition"].get("input"))),
        "answer (parsed output)" if t["parsed_output"] is not None else "answer (raw output)", _indent(_pretty(answer)),
    ]
    if t["error"]:
        lines.append(f"error {t['error']}")
    if not data["scorings"]:
        return [*lines, "verdict (never scored)"]
    latest = data["scorings"][-1]
    names = _assertion_names(t, data["assertion_defs"])
    for sc in latest["scores"]:
        lines.append(f"verdict {'PASS' if sc['perfect'] else 'FAIL'}  score {_num(sc['score'])}  "
                     f"({sc['scorer_name']} v{sc['scorer_version']}, {latest['created_at']}; "
                     f"{len(data['scorings'])} scoring(s) below)")
    for a in latest["assertions"]:
        name = names.get((a["assertion_id"], a["version"]), a["assertion_id"])
        lines.append(f"  {'PASS' if a['passed'] else 'FAIL'} {name} [{a['category']} w={a['weight']:g}]"
                     f"{' ' + a['detail'] if a['detail'] else ''}")
    if data["metrics"]:
        lines.append("metrics  " + "  ".join(f"{m['metric']}={_num(m['value'], m['metric'])}" for m in data["metrics"]))
    return lines


def _case_lines(t: dict[str, Any], defs: list[dict[str, Any]]) -> list[str]:
    case = t["case_definition"]
    lines = [
        f"case {t['slug']} ({t['case_id']}), definition sha256 {t['case_sha256']}",
        f"  source {case.get('source') or '-'}  difficulty {case.get('difficulty') or '-'}  "
        f"tags {', '.join(case.get('tags', [])) or '-'}",
        "  input", _indent(_pretty(case.get("input")), "    "),
        "assertions as they were (version, category, weight, check)",
    ]
    for a in case.get("assertions", []):
        lines.append(f"  {a['id']} v{a['version']} [{a['category']} w={a['weight']:g}] {a['name']}: "
                     f"{json.dumps(a['check'], sort_keys=True)}")
    extra = [d for d in defs if (d["assertion_id"], d["version"]) not in
             {(a["id"], a["version"]) for a in case.get("assertions", [])}]
    for d in extra:
        lines.append(f"  {d['assertion_id']} v{d['version']} [{d['category']} w={d['weight']:g}] {d['name']}: "
                     f"{json.dumps(d['definition'].get('check'), sort_keys=True)}  (used by a rescoring)")
    return lines


def _trial_lines(t: dict[str, Any]) -> list[str]:
    return [
        f"variant {t['variant_name']}: provider {t['provider']}, model {t['model']}, mode {t['mode']!r}, "
        f"repeat {t['repeat_index']}",
        "  config", _indent(_pretty(t["variant_config"]), "    "),
        f"system prompt (sha256 {t['system_prompt_sha256'] or '-'})", _indent(_pretty(t["system_prompt"])),
        "rendered prompt", _indent(_pretty(t["rendered_prompt"])),
        "context", _indent(_pretty(t["context"])),
        "raw output", _indent(_pretty(t["raw_output"])),
        f"error {t['error'] or '(none)'}",
        f"telemetry  prompt tokens {_num(t['prompt_tokens'])}  completion tokens {_num(t['completion_tokens'])}  "
        f"latency {_num(t['latency_ms'], 'latency_ms')}  load {_num(t['load_ms'], 'load_ms')}  "
        f"cost {_num(t['cost'], 'cost')}",
        f"cache      key {t['cache_key'] or '-'}  hit {_num(t['cache_hit'])}",
    ]


def _score_lines(data: dict[str, Any]) -> list[str]:
    lines = [f"scores over time ({len(data['scorings'])} scoring(s), oldest first)"]
    for s in data["scorings"]:
        for sc in s["scores"]:
            cats = ", ".join(f"{k} {_num(v)}" for k, v in sc["per_category"].items())
            lines.append(f"  {s['created_at']}  {sc['scorer_name']} v{sc['scorer_version']}  "
                         f"score {_num(sc['score'])}  perfect {sc['perfect']}  ({cats})  batch {s['batch'][:8]}")
        for a in s["assertions"]:
            mark = "PASS" if a["passed"] else "FAIL"
            lines.append(f"      {mark} {a['assertion_id']} v{a['version']} [{a['category']} "
                         f"w={a['weight']:g}]{' ' + a['detail'] if a['detail'] else ''}")
    return lines


def _price_lines(prices: list[dict[str, Any]]) -> list[str]:
    """Every price the trial has had (one row per pricing: the run's, then each reprice)."""
    lines = [f"prices over time ({len(prices)} cost row(s), oldest first; reports read the newest)"]
    for p in prices:
        how = (f"{p['match']!r}: {p['input']:g} in / {p['output']:g} out per million tokens, {p['currency'] or '-'}, "
               f"dated {p['price_date']}" if p["match"] is not None else "no entry prices this model")
        lines.append(f"  {p['created_at']}  snapshot {p['snapshot_id']} ({p['snapshot_sha256'][:12]})  "
                     f"cost {'-' if p['cost'] is None else format(p['cost'], '.6g')} {p['currency'] or ''}".rstrip() + f"  ({how})")
    return lines


@click.command("audit")
@click.argument("trial_id", type=int)
@click.pass_obj
def audit_cmd(app: AppContext, trial_id: int) -> None:
    """Print everything about TRIAL_ID: provenance, case and assertion versions, prompt, output, scores."""
    data = trial_audit(app, trial_id)
    if app.as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
        return
    t = data["trial"]
    lines = [*_headline_lines(trial_id, data), "", *_score_lines(data), "", *_price_lines(data.get("prices", [])), "",
             *_case_lines(t, data["assertion_defs"]), *_trial_lines(t), "", *_run_lines(data)]
    click.echo("\n".join(lines))
