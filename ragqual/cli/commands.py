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
    "whatif": ("ragqual.cli.whatif_cmd", "whatif_cmd"),
    "label": ("ragqual.cli.label_cmd", "label_cmd"),
    "labels": ("ragqual.cli.labels_cmd", "labels_group"),
    "judge": ("ragqual.cli.judge_cmd", "judge_cmd"),
}

# The first paragraph of each command's help, so `ragqual --help` lists the commands without importing
# them (tests/cli/test_startup.py checks that each is the command's own).
SUMMARIES: dict[str, str] = {
    "eval": "The whole evaluation in one command, on embedded defaults (no server, no network).",
    "retrieval": "Run the retrieval tier: no chat model, deterministic, seconds.",
    "generation": "Run the generation tier: answers in oracle / e2e / noretrieval modes, scored without a judge.",
    "matrix": "Capability table of several models: the artefact to look up when someone reports a bad answer.",
    "sweep": ("Run the retrieval grid, and the chunking and embedder axes each in its own index; record quality "
              "next to latency p95, index size, ingest time and context size, gated against the first configuration."),
    "trec-eval": "Evaluate a TREC run file against a qrels file with ragqual's metrics (trec_eval semantics).",
    "corpus": "Validate the corpus and goldens, and manage the eval chunks in Qdrant.",
    "db": "Create, upgrade and inspect the history database schema.",
    "history": "List the runs over time: git sha, corpus fingerprint, status and headline metrics.",
    "run": "Run a subject's cases against one or more models and store every trial.",
    "rescore": "Re-score RUN_ID from its stored raw outputs; appends new rows, keeps the old ones.",
    "audit": "Print everything about TRIAL_ID: provenance, case and assertion versions, prompt, output, scores.",
    "report": "Summarise one run from the history: metrics per group, pass rate, unstable questions, cost.",
    "compare": "Compare NEW with BASE (run ids or baseline files); exit 1 on a regression.",
    "baseline": "Promote runs to the committed baselines that `ragqual compare` gates against.",
    "adopt": "Apply the adoption rule to CANDIDATE(s) against BASE; print the verdict with the paired test of "
             "the deciding metric beside it; change no default.",
    "sql": "Run one read-only SQL statement on the history database and print its rows.",
    "export": "Write RUN_ID's trials and metric values as parquet or csv files.",
    "verify": "Recompute every seal of the history (or of RUN_IDs) and name each row that changed.",
    "whatif": "Recompute RUN_ID's e2e contexts at other thresholds and context sizes from its stored candidates.",
    "label": "Label RUN_ID's trials by hand: faithfulness, completeness and relevance, yes / no / unsure.",
    "labels": "Import and export human labels (CSV or JSONL) of a run's trials.",
    "judge": "Score RUN_ID's stored answers with an LLM judge, without calling the answering model again.",
}
