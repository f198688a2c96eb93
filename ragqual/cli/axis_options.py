"""`--axis NAME=V1,V2`, shared by the commands that run the RAG subject over its declared axes."""

from __future__ import annotations

import click


def axis_option(fn):
    """`--axis NAME=V1,V2` over the RAG subject's declared axes (`generation`, `matrix`)."""
    return click.option(
        "--axis", "axes", multiple=True, metavar="NAME=V1,V2",
        help="Vary a declared axis (repeatable): model, temperature, seed, num_ctx, num_predict, prompt, strategy, "
             "context_k, candidate_k, threshold. The run is their cross product, one variant each; "
             "axes not given keep the other flags' values.")(fn)
