"""The names of the standard collection layouts and of the TREC topic fields.

Their own module, apart from their parsers (`core.collections`): the corpus options every
corpus-reading command declares and the layout detection every run makes need only these names,
and a run over a ragqual corpus never parses a BEIR or TREC file.
"""

BEIR, TREC = "beir", "trec"
TOPIC_FIELDS = ("title", "desc", "narr")
