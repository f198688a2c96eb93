"""Values are stored and passed on at full precision; only display rounds them."""

from ragqual.cli.retrieval_cmd import _delta


def test_ablation_deltas_keep_full_precision():
    assert _delta(0.93251, 0.9) == 0.93251 - 0.9
    assert _delta(None, 0.9) is None
