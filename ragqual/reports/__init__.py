"""Self-contained HTML reports: one file per run, comparison, history or matrix.

Each module builds one kind of page from the data the text reports already compute; `page`
holds the shared template, the server-rendered tables and the Vega-Lite embedding. Every script
and style is inline (the Vega/Vega-Lite/vega-embed bundle comes from `vl-convert-python`), so a
page opens offline from file:// and is byte-identical for identical inputs.
"""
