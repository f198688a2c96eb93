from pathlib import Path

from tests.cli.conftest import invoke

DATA = Path(__file__).resolve().parents[1] / "data" / "trec_eval"


def _lines(text, measures):
    return [ln for ln in text.splitlines() if ln.split("\t")[0].strip() in measures and ln.split("\t")[1] == "all"]


def test_trec_eval_command_matches_nist_expected_output():
    measures = {"map", "P_5", "recip_rank", "bpref", "Rprec"}
    result = invoke("trec-eval", str(DATA / "qrels.test"), str(DATA / "results.test"),
                    "-m", "map", "-m", "P.5", "-m", "recip_rank", "-m", "bpref", "-m", "Rprec")
    assert result.exit_code == 0
    expected = _lines((DATA / "out.test").read_text(), measures)
    assert sorted(_lines(result.output, measures)) == sorted(expected)


def test_bad_run_file_names_file_and_line(tmp_path):
    from click.testing import CliRunner

    from ragqual.cli.main import main

    bad = tmp_path / "run.txt"
    bad.write_text("q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 2 notanumber tag\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "ragqual", "trec-eval", str(qrels), str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert f"{bad}:2" in proc.stderr


# -- trec_eval 10.0's corners ---------------------------------------------------------------------

import pytest  # noqa: E402

from ragqual.core import trec  # noqa: E402
from tests.cli.conftest import ragqual  # noqa: E402


def _files(tmp_path, qrels: str, run: str):
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    q.write_text(qrels)
    r.write_text(run)
    return str(q), str(r)


def test_no_topic_in_common_is_one_line_and_trec_evals_exit_code(tmp_path, capsys):
    q, r = _files(tmp_path, "q1 0 d1 1\n", "q2 Q0 d1 1 0.5 tag\n")
    code, out, err = ragqual(tmp_path / "x.db", ["trec-eval", q, r], capsys)
    assert (code, out) == (4, "") and err.count("\n") == 1
    assert "trec_eval: result qid 'q1' not found in qrels" in err
    code, out, err = ragqual(tmp_path / "x.db", ["trec-eval", q, r, "--missing", "skip"], capsys)
    assert (code, out) == (7, "") and "trec_eval: No queries with both results and relevance info" in err
    assert not (tmp_path / "x.db").exists()


def test_a_judged_topic_missing_from_the_run_is_refused_unless_c_or_skip():
    trunc = ["trec-eval", str(DATA / "qrels.test"), str(DATA / "results.trunc"), "-m", "map"]
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "ragqual", *trunc], capture_output=True, text=True)
    assert proc.returncode == 4 and proc.stdout == "" and "result qid '302' not found" in proc.stderr
    skipped = invoke(*trunc, "--missing", "skip")
    assert skipped.exit_code == 0 and "map                   \tall\t" in skipped.output


def test_q_prints_the_topics_scored_before_a_missing_one_then_refuses(capsys, tmp_path):
    # trec_eval 10.0 (trec_eval.c) scores the qrels topics in order and, with -q, prints each
    # topic's lines as it goes; at 302, absent from results.trunc, it exits 4. So 301's lines are
    # on stdout, no summary. -c does not change a scored topic's own values, so 301's lines are
    # those NIST printed in out.test.aqc (`-m all_trec -q -c qrels.test results.trunc`).
    args = ["trec-eval", str(DATA / "qrels.test"), str(DATA / "results.trunc"), "-m", "all_trec", "-q"]
    code, out, err = ragqual(tmp_path / "x.db", args, capsys)
    implemented = set(trec.expand_measures(["all_trec"]))
    expected = [line for line in (DATA / "out.test.aqc").read_text().splitlines()
                if line.split("\t")[1] == "301" and line.split("\t")[0].rstrip() in implemented]
    assert code == 4 and err.count("\n") == 1 and "result qid '302' not found" in err
    assert len(expected) > 40 and out.splitlines() == expected
    assert not (tmp_path / "x.db").exists()


def test_q_prints_the_topics_scored_before_a_duplicate_then_refuses(tmp_path, capsys):
    q, r = _files(tmp_path, "q1 0 d1 1\nq2 0 d1 1\n",
                  "q1 Q0 d1 1 0.9 t\nq2 Q0 d1 1 0.9 t\nq2 Q0 d1 2 0.1 t\n")
    code, out, err = ragqual(tmp_path / "x.db", ["trec-eval", q, r, "-m", "num_ret", "-m", "map", "-q"], capsys)
    assert code == 4 and "duplicate docs d1 (topic q2" in err
    assert out.splitlines() == ["num_ret               \tq1\t1", "map                   \tq1\t1.0000"]
    code, out, _ = ragqual(tmp_path / "x.db", ["trec-eval", q, r, "-m", "map"], capsys)
    assert (code, out) == (4, "")  # without -q trec_eval prints nothing before the summary


def test_all_trec_with_c_prints_trec_evals_own_lines_in_its_order():
    # `-m all_trec -q -c qrels.test results.trunc` is how NIST printed out.test.aqc; every line
    # ragqual prints (the measures it implements) is a line of that file, in the same order.
    result = invoke("trec-eval", str(DATA / "qrels.test"), str(DATA / "results.trunc"), "-m", "all_trec", "-q", "-c")
    assert result.exit_code == 0
    ours = result.output.splitlines()
    expected = (DATA / "out.test.aqc").read_text().splitlines()
    assert [line for line in expected if line in set(ours)] == ours
    names = {line.split("\t")[0].rstrip() for line in ours}
    assert {"num_q", "map", "P_5", "recall_1000", "ndcg_cut_10", "map_cut_5", "success_1", "bpref", "Rprec"} <= names


def test_precision_prints_more_decimals(tmp_path, capsys):
    q, r = _files(tmp_path, "q1 0 d1 1\nq1 0 d2 1\nq1 0 d3 1\n", "q1 Q0 d1 1 0.9 t\nq1 Q0 x 2 0.5 t\n")
    code, out, _ = ragqual(tmp_path / "x.db", ["trec-eval", q, r, "-m", "map", "--precision", "8"], capsys)
    assert code == 0 and out.splitlines()[-1] == "map                   \tall\t0.33333333"


@pytest.mark.parametrize("extra, expected_code", [((), 4), (("-M", "2"), 0)])
def test_duplicates_are_refused_only_within_the_documents_that_count(tmp_path, capsys, extra, expected_code):
    # d1 appears at rank 1 and again at rank 3: refused when the whole ranking counts, not with -M 2.
    run = "q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d1 3 0.1 t\nq9 Q0 z 1 1 t\nq9 Q0 z 2 1 t\n"
    q, r = _files(tmp_path, "q1 0 d1 1\n", run)
    code, out, err = ragqual(tmp_path / "x.db", ["trec-eval", q, r, "-m", "num_ret", *extra], capsys)
    assert code == expected_code, err
    if code:
        assert out == "" and "trec_eval.form_res_qrels: duplicate docs d1" in err
    else:
        assert out.splitlines()[-1] == "num_ret               \tall\t2"  # q9 is not judged: its twin z is ignored


def test_num_rel_summary_under_c_and_l_counts_as_trec_eval(tmp_path, capsys):
    # Per topic, -l 2 counts labels >= 2; trec_eval's -c summary counts every label > 0 over all topics.
    q, r = _files(tmp_path, "q1 0 a 2\nq1 0 b 1\nq2 0 c 1\nq2 0 d 0\n", "q1 Q0 a 1 1 t\n")
    code, out, _ = ragqual(tmp_path / "x.db", ["trec-eval", q, r, "-m", "num_rel", "-q", "-c", "-l", "2"], capsys)
    assert code == 0
    assert out.splitlines() == ["num_rel               \tq1\t1", "num_rel               \tq2\t0",
                                "runid                 \tall\tt", "num_rel               \tall\t3"]
    code, out, _ = ragqual(tmp_path / "x.db", ["trec-eval", q, r, "-m", "num_rel", "-l", "2",
                                               "--missing", "skip"], capsys)
    assert out.splitlines()[-1] == "num_rel               \tall\t1"  # without -c: the sum of the topics
