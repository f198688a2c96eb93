"""Wiring that sits between the CLI and the engine: builds what a command needs from the
project's settings and the stored history (resume plans, gates, rescoring, failure reports).
The CLI files only parse flags and format; nothing here imports ragqual.cli."""
