"""Use cases that sit between the CLI and the layers below: each assembles core rules, store
reads and adapters into one result of plain dataclasses, with no printing and no flag parsing."""
