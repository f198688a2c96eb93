"""Use cases that sit between the CLI and the layers below: each assembles core rules, store
reads and adapters into one result of plain dataclasses (comparisons, resume plans, gates,
rescoring, failure reports), with no printing and no flag parsing. Nothing here imports
ragqual.cli."""
