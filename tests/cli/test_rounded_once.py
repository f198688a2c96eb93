"""Values are stored and passed on at full precision; only display rounds them."""

from ragqual.cli.retrieval_cmd import _delta


def test_ablation_deltas_keep_full_precision():
    assert _delta(0.93251, 0.9) == 0.93251 - 0.9
    assert _delta(None, 0.9) is None


def test_json_tables_carry_every_digit():
    import math

    import pandas as pd

    from ragqual.cli.output import frame_records

    value = 5 / 148  # 0.033783783783783786: pandas' JSON writer alone gives 0.0337837838
    records = frame_records(pd.DataFrame({"ci_high": [value, math.nan], "name": ["a", None], "n": [1, 2]}))
    assert records == [{"ci_high": value, "name": "a", "n": 1}, {"ci_high": None, "name": None, "n": 2}]
