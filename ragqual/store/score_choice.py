"""Which score row of a trial counts: one definition, as SQL, for every reader.

A trial may hold several rows of one scorer (a rescore appends a newer one; a new scorer version
appends its own). The row that counts is the one of the highest scorer version (or of the
version asked for), the newest row on a tie, among the rows a seal covers.
"""

from __future__ import annotations

from ragqual.store.sealed_rows import covered


def newest_score_join(scorer_version: int | None) -> str:
    """SQL joining `trial_scores s` to the trial `t` on the score row that counts (binds
    :scorer_name, and :scorer_version when one is given)."""
    only = "AND s2.scorer_version = :scorer_version" if scorer_version is not None else ""
    return f"""
LEFT JOIN trial_scores s ON s.id = (
    SELECT s2.id FROM trial_scores s2
    WHERE s2.trial_id = t.id AND s2.scorer_name = :scorer_name {only} AND {covered('trial_scores', 's2.id')}
    ORDER BY s2.scorer_version DESC, s2.id DESC LIMIT 1)"""
