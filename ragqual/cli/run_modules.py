"""What every run opens (the history's store, the SQLite driver, the caches, the embedder, the RAG
subject), imported by a run command's module (`retrieval`, `generation`) so that it loads with the
command, under its import freeze (app.collector.imports_settled), and not during the run, where
each collection would traverse it again."""

import ragqual.adapters.embedders  # noqa: F401
import ragqual.adapters.search_cache  # noqa: F401
import ragqual.store.runstore  # noqa: F401
import ragqual.subjects.rag  # noqa: F401
import sqlalchemy.dialects.sqlite  # noqa: F401
