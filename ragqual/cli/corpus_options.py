"""The corpus options every corpus-reading command shares (`corpus_opts`, an app.corpus.CorpusOptions).

    @click.command("retrieval")
    @corpus_options
    @click.pass_obj
    def retrieval_cmd(app, corpus_opts, ...):
        outcome = run_retrieval_tier(app, corpus_opts, ...)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import click

from ragqual.app.corpus import CorpusOptions
from ragqual.core.layouts import TOPIC_FIELDS

_OPTIONS = (
    click.option("--corpus", metavar="DIR", help="Corpus folder of *.md documents [default: ./corpus or [tool.ragqual] corpus]."),
    click.option("--goldens", metavar="DIR|FILE",
                 help="Golden questions: a folder of *.jsonl files or one .jsonl file [default: ./goldens]."),
    click.option("--embedder", metavar="URI", help="minilm (offline default) or ollama:<model>."),
    click.option("--qdrant-url", metavar="URL", help="Qdrant server (env QDRANT_URL, key QDRANT_API_KEY) instead of the embedded store."),
    click.option("--collection", metavar="NAME", help="Qdrant collection holding the eval chunks [default: ragqual_kb]."),
    click.option("--chunk-tokens", type=click.IntRange(min=1), help="Chunk size in estimated tokens [default: 256]."),
    click.option("--overlap-tokens", type=click.IntRange(min=0), help="Overlap between chunks in estimated tokens [default: 32]."),
    click.option("--chars-per-token", type=click.FloatRange(min=0, min_open=True), help="Characters per estimated token [default: 4]."),
    click.option("--doc-prefix", metavar="TEXT", help="Prefix of embedded chunk texts, e.g. 'search_document: '."),
    click.option("--query-prefix", metavar="TEXT", help="Prefix of embedded queries, e.g. 'search_query: '."),
    click.option("--topic-field", type=click.Choice(TOPIC_FIELDS),
                 help="TREC topics: the field that is the question (title, desc or narr) [default: title]."),
)
_NAMES = tuple(f.name for f in fields(CorpusOptions))


def corpus_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add the shared corpus options to a click command; it receives them as `corpus_opts`."""
    return corpus_options_except()(fn)


def corpus_options_except(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The shared corpus options without `names` (fields of CorpusOptions, left None), for a
    command that declares those options itself in another form (`sweep`'s comma-separated lists)."""
    kept = [(name, option) for name, option in zip(_NAMES, _OPTIONS, strict=True) if name not in names]

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            opts = CorpusOptions(**{name: kwargs.pop(name) for name, _ in kept})
            return fn(*args, corpus_opts=opts, **kwargs)

        for _, option in reversed(kept):
            wrapper = option(wrapper)
        return wrapper

    return decorate
