"""Every top-level command: name -> (module, attribute), imported only when used."""

COMMANDS: dict[str, tuple[str, str]] = {
    "eval": ("ragqual.cli.eval_cmd", "eval_cmd"),
    "retrieval": ("ragqual.cli.retrieval_cmd", "retrieval_cmd"),
    "generation": ("ragqual.cli.generation_cmd", "generation_cmd"),
    "matrix": ("ragqual.cli.matrix_cmd", "matrix_cmd"),
    "sweep": ("ragqual.cli.sweep_cmd", "sweep_cmd"),
    "trec-eval": ("ragqual.cli.trec_cmd", "trec_eval_cmd"),
    "corpus": ("ragqual.cli.corpus_cmd", "corpus_group"),
    "db": ("ragqual.cli.db_cmd", "db_group"),
    "history": ("ragqual.cli.history_cmd", "history_cmd"),
    "run": ("ragqual.cli.run_cmd", "run_cmd"),
    "rescore": ("ragqual.cli.rescore_cmd", "rescore_cmd"),
    "audit": ("ragqual.cli.audit_cmd", "audit_cmd"),
    "report": ("ragqual.cli.report_cmd", "report_cmd"),
    "compare": ("ragqual.cli.compare_cmd", "compare_cmd"),
    "baseline": ("ragqual.cli.baseline_cmd", "baseline_group"),
    "adopt": ("ragqual.cli.adopt_cmd", "adopt_cmd"),
    "sql": ("ragqual.cli.sql_cmd", "sql_cmd"),
    "export": ("ragqual.cli.export_cmd", "export_cmd"),
    "verify": ("ragqual.cli.verify_cmd", "verify_cmd"),
}
