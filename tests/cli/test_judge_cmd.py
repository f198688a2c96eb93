"""`ragqual judge RUN`: the mock test judge, a stand-in OpenAI-compatible server returning
`logprobs` on 127.0.0.1, the response cache, samples, and the append-only judgements table."""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ragqual.core import rubrics
from tests.cli.conftest import ragqual


def _db(root):
    return sqlite3.connect(root / "eval-results" / "eval.db")


def _run(root, capsys, *args):
    return ragqual(root / "eval-results" / "eval.db", list(args), capsys)


@pytest.fixture(scope="module")
def answered(workdir):
    """A generation run of 4 questions answered by the mock (e2e, 1 repeat)."""
    from tests.cli.conftest import invoke

    body = json.loads(invoke("--json", "generation", "--model", "mock", "--limit", "4", "--repeats", "1").stdout)
    return body["run_id"]


def _judge(root, capsys, run_id, *extra):
    code, out, err = _run(root, capsys, "--json", "judge", str(run_id), *extra)
    assert code == 0, err
    return json.loads(out)


def _rows(root, judge_run):
    return _db(root).execute("SELECT trial_id, criterion, score, verdict, method, sample_index, cache_key, cache_hit, "
                             "error, rubric_version, rubric_sha256, judge_model FROM judgements WHERE run_id=? "
                             "ORDER BY id", (judge_run,)).fetchall()


def test_mock_judge_scores_every_trial_and_criterion_into_its_own_run(workdir, answered, capsys):
    body = _judge(workdir, capsys, answered, "--judge", "mock")
    assert body["target_run_id"] == answered and body["method"] == "logprobs" and body["trials"] == 4
    rows = _rows(workdir, body["run_id"])
    assert len(rows) == 4 * 3
    assert {r[1] for r in rows} == {f"judge:{c}" for c in rubrics.CRITERIA}
    assert all(0 < r[2] < 1 and r[8] is None and r[9] == 2 for r in rows)
    assert {r[10] for r in rows} == {rubrics.rubric(c).sha256 for c in rubrics.CRITERIA}
    kind, params = _db(workdir).execute("SELECT kind, params FROM runs WHERE id=?", (body["run_id"],)).fetchone()
    assert kind == "judge" and json.loads(params)["target_run"] == answered
    stored = {r[0] for r in _db(workdir).execute("SELECT sha256 FROM system_prompts")}
    assert {rubrics.rubric(c).sha256 for c in rubrics.CRITERIA} <= stored  # rubric texts stored by hash
    section = {s["criterion"]: s for s in body["judge_section"]}
    assert section["faithfulness"]["n"] == 4 and section["faithfulness"]["errors"] == 0


def test_rerun_is_served_by_the_cache_and_samples_are_distinct_entries(workdir, answered, capsys):
    first = _judge(workdir, capsys, answered, "--judge", "mock", "--criteria", "relevance", "--samples", "3")
    assert first["model_calls"] == 4 * 3 and first["cache_hits"] == 0  # a hit never stands for a new sample
    again = _judge(workdir, capsys, answered, "--judge", "mock", "--criteria", "relevance", "--samples", "3")
    assert again["model_calls"] == 0 and again["cache_hits"] == 12
    rows = _rows(workdir, again["run_id"])
    keys = {(r[0], r[5]): r[6] for r in rows}
    assert len(set(keys.values())) == 12 and all(r[7] == 1 for r in rows)
    assert again["judge_section"][0]["self_consistency"] == 1.0  # the mock is deterministic


# -- a stand-in OpenAI-compatible server on 127.0.0.1 --------------------------------------------

P_YES = {"faithfulness": (0.6, 0.15), "completeness": (0.05, 0.45)}  # (p(yes-like), p(no-like)) top alternatives


class StandIn:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def uri(self) -> str:
        return f"openai:http://127.0.0.1:{self.httpd.server_address[1]}/v1#judge"

    def __enter__(self) -> StandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def _reply(body: dict[str, Any]) -> dict[str, Any]:
    system = body["messages"][0]["content"]
    if any(rubrics.pair_rubric(c).text == system for c in rubrics.CRITERIA):  # a judge that always picks A
        top = [{"token": "A", "logprob": math.log(0.9)}, {"token": "B", "logprob": math.log(0.1)}]
        return {"choices": [{"message": {"role": "assistant", "content": "A"},
                             "logprobs": {"content": [{"token": "A", "logprob": math.log(0.9), "top_logprobs": top}]}}]}
    assert system == rubrics.JUDGE_SYSTEM
    criterion = rubrics.criterion_of(body["messages"][-1]["content"])  # the question ends the user message
    if criterion not in P_YES:  # relevance: the server ignores the request for probabilities
        return {"choices": [{"message": {"role": "assistant", "content": "Sure, happy to help"}}]}
    yes, no = P_YES[criterion]
    top = [{"token": "Yes", "logprob": math.log(yes * 0.75)}, {"token": " yes", "logprob": math.log(yes * 0.25)},
           {"token": "No", "logprob": math.log(no)}, {"token": "Maybe", "logprob": math.log(1 - yes - no)}]
    chosen = "Yes" if yes > no else "No"
    return {"choices": [{"message": {"role": "assistant", "content": chosen},
                         "logprobs": {"content": [{"token": chosen, "logprob": top[0 if yes > no else 2]["logprob"],
                                                   "top_logprobs": top}]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 1}}


def _handler(server: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send({"data": [{"id": "judge"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            server.bodies.append(body)
            self._send(_reply(body))

    return Handler


def test_openai_judge_reads_p_yes_exactly_and_records_unreadable_replies(workdir, answered, capsys):
    with StandIn() as server:
        body = _judge(workdir, capsys, answered, "--judge", server.uri)
    assert body["method"] == "logprobs" and body["model_calls"] == 4 * 3
    assert all(b["logprobs"] is True and b["top_logprobs"] == 10 for b in server.bodies)
    rows = _rows(workdir, body["run_id"])
    by = {}
    for r in rows:
        by.setdefault(r[1], []).append(r)
    for criterion, (yes, no) in P_YES.items():
        assert [r[2] for r in by[f"judge:{criterion}"]] == pytest.approx([yes / (yes + no)] * 4)
    assert all(r[2] is None and r[3] is None and "no token log-probabilities" in r[8]
               for r in by["judge:relevance"])  # an unreadable reply is an error, never a 0
    section = {s["criterion"]: s for s in body["judge_section"]}
    assert (section["faithfulness"]["mean"], section["completeness"]["mean"]) == pytest.approx((0.8, 0.1))
    assert section["relevance"]["mean"] is None and section["relevance"]["errors"] == 4


@pytest.fixture(scope="module")
def declined(workdir):
    """The same 4 questions answered with no retrieval (the mock then declines)."""
    from tests.cli.conftest import invoke

    body = json.loads(invoke("--json", "generation", "--model", "mock", "--mode", "noretrieval", "--limit", "4",
                             "--repeats", "1").stdout)
    return body["run_id"]


def test_pairwise_runs_both_orders_and_reports_position_consistency(workdir, answered, declined, capsys):
    body = _judge(workdir, capsys, answered, "--judge", "mock", "--pairwise", str(declined),
                  "--criteria", "faithfulness")
    assert body["pairs"] == 4 and body["model_calls"] == 8
    (section,) = body["pairwise_section"]
    assert section["wins"] == 4 and section["position_consistency"] == 1.0  # grounded answers beat declining ones
    rows = _rows(workdir, body["run_id"])
    assert {(r[1], r[5]) for r in rows} == {("judge:pairwise-faithfulness", 0), ("judge:pairwise-faithfulness", 1)}
    with StandIn() as server:  # a judge that always answers "A": every verdict flips with the order
        biased = _judge(workdir, capsys, answered, "--judge", server.uri, "--pairwise", str(declined),
                        "--criteria", "relevance")
    (section,) = biased["pairwise_section"]
    assert section["position_consistency"] == 0.0 and section["p_better"] == pytest.approx(0.5)
    assert section["wins"] == section["losses"] == 0


def test_report_shows_the_judge_in_its_own_section_and_leaves_the_scores_alone(workdir, capsys):
    from tests.cli.conftest import invoke

    fresh = json.loads(invoke("--json", "generation", "--model", "mock", "--limit", "3", "--repeats", "1",
                              "--seed", "5").stdout)["run_id"]
    code, before, _ = _run(workdir, capsys, "report", str(fresh), "--format", "json")
    assert code == 0 and "judge" not in json.loads(before)
    _judge(workdir, capsys, fresh, "--judge", "mock", "--criteria", "faithfulness")
    code, after, _ = _run(workdir, capsys, "report", str(fresh), "--format", "json")
    body, earlier = json.loads(after), json.loads(before)
    assert body["groups"] == earlier["groups"]  # the deterministic table is unchanged by judging
    (row,) = body["judge"]
    assert row["criterion"] == "faithfulness" and row["n"] == 3 and row["errors"] == 0 and row["kappa"] is None
    code, text, _ = _run(workdir, capsys, "report", str(fresh), "--format", "markdown")
    assert code == 0 and "judge" in text and "faithfulness" in text


def test_audit_against_imported_labels_is_stored_and_shown_in_the_report(workdir, tmp_path, capsys):
    from tests.cli.conftest import invoke

    run = json.loads(invoke("--json", "generation", "--model", "mock", "--limit", "8", "--repeats", "1",
                            "--seed", "11").stdout)["run_id"]
    judged = _judge(workdir, capsys, run, "--judge", "mock", "--criteria", "relevance")
    verdicts = {t: v for t, _, _, v, *_ in _rows(workdir, judged["run_id"])}
    trials = sorted(verdicts)
    flipped = trials[0]
    labels = tmp_path / "labels.csv"
    lines = ["trial_id,criterion,verdict,labeller"]
    for t in trials[:6]:  # people label 6 of the 8; they disagree with the judge on one
        word = verdicts[t] if t != flipped else ("no" if verdicts[t] == "yes" else "yes")
        lines.append(f"{t},relevance,{word},ann")
    labels.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = _run(workdir, capsys, "labels", "import", str(labels), "--run", str(run))
    assert code == 0, err
    code, out, err = _run(workdir, capsys, "--json", "judge", "audit", str(run))
    assert code == 0, err
    (audit,) = json.loads(out)
    human = [1 if (verdicts[t] == "yes") != (t == flipped) else 0 for t in trials[:6]]
    judge = [1 if verdicts[t] == "yes" else 0 for t in trials[:6]]
    from ragqual.core.agreement import cohen_kappa

    expected = cohen_kappa(human, judge)
    assert audit["n"] == 6 and audit["accuracy"] == pytest.approx(5 / 6) and audit["disagreements"] == [flipped]
    assert audit["kappa"] == (None if expected.kappa is None else pytest.approx(expected.kappa))
    assert audit["ppi"]["n"] == 6 and audit["ppi"]["N"] == 2 and audit["judge_run"] == judged["run_id"]
    stored = _db(workdir).execute("SELECT criterion, rubric_sha256, judge_model, judge_digest FROM judge_audits "
                                  "WHERE run_id=?", (run,)).fetchall()
    assert stored == [("judge:relevance", rubrics.rubric("relevance").sha256, "mock", "mock-judge-v1")]
    code, out, _ = _run(workdir, capsys, "report", str(run), "--format", "json")
    (row,) = json.loads(out)["judge"]
    assert row["labels"] == 6 and row["ppi_mean"] == pytest.approx(audit["ppi"]["estimate"])
    code, out, err = _run(workdir, capsys, "--json", "labels", "plan", str(run), "--width", "0.9")
    assert code == 0, err
    (plan,) = json.loads(out)
    assert plan["labelled"] == 6 and plan["judged"] == 8 and (plan["needed"] is not None or plan["note"])


def test_two_labellers_agreement_and_an_audit_against_one_of_them(workdir, tmp_path, capsys):
    from tests.cli.conftest import invoke

    run = json.loads(invoke("--json", "generation", "--model", "mock", "--limit", "8", "--repeats", "1",
                            "--seed", "12").stdout)["run_id"]
    code, out, err = _run(workdir, capsys, "labels", "agree", str(run))
    assert code == 2 and "no trial labelled by two labellers" in err
    judged = _judge(workdir, capsys, run, "--judge", "mock", "--criteria", "relevance")
    verdicts = {t: v for t, _, _, v, *_ in _rows(workdir, judged["run_id"])}
    trials = sorted(verdicts)
    flip = {"yes": "no", "no": "yes"}
    # ann agrees with the judge everywhere; bob differs from ann on the first two trials and is
    # unsure on the third.
    ann = {t: verdicts[t] for t in trials}
    bob = {t: flip[verdicts[t]] if t in trials[:2] else verdicts[t] for t in trials} | {trials[2]: "unsure"}
    labels = tmp_path / "two.csv"
    labels.write_text("trial_id,criterion,verdict,labeller\n" + "".join(
        f"{t},relevance,{who[t]},{name}\n" for name, who in (("ann", ann), ("bob", bob)) for t in trials),
        encoding="utf-8")
    assert _run(workdir, capsys, "labels", "import", str(labels), "--run", str(run))[0] == 0
    code, out, err = _run(workdir, capsys, "--json", "labels", "agree", str(run))
    assert code == 0, err
    (pair,) = json.loads(out)
    from ragqual.core.agreement import between_labellers

    expected = between_labellers("ann", "bob", ann, bob)
    assert pair["criterion"] == "relevance" and (pair["first"], pair["second"]) == ("ann", "bob")
    assert pair["n"] == 7 and pair["disagreements"] == trials[:2] and pair["unsure"] == [trials[2]]
    assert pair["kappa"] == (None if expected.agreement.kappa is None else pytest.approx(expected.agreement.kappa))
    code, text, _ = _run(workdir, capsys, "labels", "agree", str(run))
    assert code == 0 and "| relevance | ann / bob | 7 |" in text
    code, out, err = _run(workdir, capsys, "--json", "judge", "audit", str(run), "--labeller", "ann")
    (audit,) = json.loads(out)
    assert code == 0 and audit["n"] == 8 and audit["accuracy"] == 1 and audit["labeller"] == "ann"
    code, out, err = _run(workdir, capsys, "--json", "judge", "audit", str(run))
    (both,) = json.loads(out)  # majority of two: a yes against a no is a tie, so unsure; against unsure, kept
    assert both["n"] == 6 and both["unsure"] == 2 and "labeller" not in both
    code, out, err = _run(workdir, capsys, "judge", "audit", str(run), "--labeller", "cy")
    assert code == 2 and "no human labels by cy" in err


def test_compare_judge_gives_the_ppi_paired_difference_and_gate_judge_fails_on_it(workdir, tmp_path, capsys):
    from tests.cli.conftest import invoke

    runs = [json.loads(invoke("--json", "generation", "--model", "mock", "--limit", "6", "--repeats", "1",
                              "--seed", str(seed)).stdout)["run_id"] for seed in (21, 22)]
    base, new = runs
    trials = {}
    for run in runs:
        _judge(workdir, capsys, run, "--judge", "mock", "--criteria", "relevance")
        trials[run] = [t for t, in _db(workdir).execute("SELECT id FROM trials WHERE run_id=? ORDER BY id", (run,))]
    lines = ["trial_id,criterion,verdict,labeller"]
    for i in range(5):  # people find NEW's answers irrelevant where BASE's were fine
        lines.append(f"{trials[base][i]},relevance,yes,ann")
        lines.append(f"{trials[new][i]},relevance,{'yes' if i == 4 else 'no'},ann")
    for run in runs:
        path = tmp_path / f"labels{run}.csv"
        path.write_text("\n".join(x for x in lines if x.startswith("trial_id") or int(x.split(",")[0])
                                   in trials[run]) + "\n", encoding="utf-8")
        assert _run(workdir, capsys, "labels", "import", str(path), "--run", str(run))[0] == 0
    code, out, err = _run(workdir, capsys, "--json", "compare", str(base), str(new), "--judge")
    assert code == 0, err  # the deterministic gate is unchanged: same mock answers
    (row,) = json.loads(out)["judge"]
    assert (row["pairs"], row["labelled"], row["judge_only"]) == (6, 5, 0.0)
    assert row["estimate"] == pytest.approx(-0.8) and row["high"] < 0 and row["regression"] is True
    code, out, err = _run(workdir, capsys, "compare", str(base), str(new), "--gate-judge")
    assert code == 1 and "judge gate" in err and "relevance" in err
    for fmt in ("markdown", "html"):  # the same section on the pull-request comment and the page
        page = tmp_path / f"compare.{fmt}"
        args = ["-o", str(page)] if fmt == "html" else []
        code, out, err = _run(workdir, capsys, "compare", str(base), str(new), "--judge", "--format", fmt, *args)
        shown = page.read_text(encoding="utf-8") if fmt == "html" else out
        assert code == 0, err
        assert "PPI++ paired interval" in shown and "-0.800 [" in shown


def test_failing_only_and_bad_input(workdir, answered, capsys):
    failing = _judge(workdir, capsys, answered, "--judge", "mock", "--trials", "failing", "--criteria", "relevance")
    passed = _db(workdir).execute("SELECT SUM(perfect) FROM v_trials WHERE run_id=?", (answered,)).fetchone()[0]
    assert failing["trials"] == 4 - passed and failing["skipped"] == passed
    for args, message in ((["--criteria", "tone"], "unknown judge criterion 'tone'"),
                          (["--judge", "gpt:4"], "unknown model 'gpt:4'")):
        code, _, err = _run(workdir, capsys, "judge", str(answered), *(["--judge", "mock"] + args
                                                                       if args[0] != "--judge" else args))
        assert code == 2 and message in err
    code, _, err = _run(workdir, capsys, "judge", "999", "--judge", "mock")
    assert code == 2 and "no run with id 999" in err


def test_judge_rows_are_append_only_sealed_and_verified(workdir, answered, capsys):
    body = _judge(workdir, capsys, answered, "--judge", "mock", "--criteria", "faithfulness")
    db = _db(workdir)
    for statement in ("UPDATE judgements SET score = 1", "DELETE FROM judgements"):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute(statement)
    code, out, err = _run(workdir, capsys, "verify", str(body["run_id"]))
    assert code == 0, out + err
    for name, in db.execute("SELECT name FROM sqlite_master WHERE type='trigger' AND tbl_name='judgements'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    db.execute("UPDATE judgements SET score = 0.5 WHERE run_id = ?", (body["run_id"],))
    db.commit()
    code, out, err = _run(workdir, capsys, "verify", str(body["run_id"]))
    assert code != 0 and "judgements row" in out + err and "edited" in out + err


def test_an_audit_of_one_judge_leaves_out_the_criteria_only_another_judge_scored(workdir, answered, tmp_path,
                                                                                  capsys):
    with StandIn() as server:
        _judge(workdir, capsys, answered, "--judge", server.uri, "--criteria", "faithfulness")
    _judge(workdir, capsys, answered, "--judge", "mock", "--criteria", "relevance")
    trials = [t for t, in _db(workdir).execute("SELECT id FROM trials WHERE run_id=? ORDER BY id", (answered,))]
    labels = tmp_path / "both.csv"
    labels.write_text("trial_id,criterion,verdict,labeller\n" + "".join(
        f"{t},{c},{'yes' if i % 2 else 'no'},ann\n" for i, t in enumerate(trials[:3])
        for c in ("faithfulness", "relevance")), encoding="utf-8")
    assert _run(workdir, capsys, "labels", "import", str(labels), "--run", str(answered))[0] == 0
    code, out, err = _run(workdir, capsys, "--json", "judge", "audit", str(answered), "--judge", server.uri)
    assert code == 0, err
    assert [a["criterion"] for a in json.loads(out)] == ["faithfulness"]
