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
