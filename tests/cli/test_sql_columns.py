"""`ragqual sql` prints a result whose columns share a name (`SELECT 1 AS a, 2 AS a`, or two
unnamed aggregates over the same expression) in every format, rather than crashing."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ragqual.cli.main import cli
from ragqual.cli.sql_cmd import unique_columns

QUERY = "SELECT 1 AS a, 2 AS a, 3 AS b, 4 AS a"


def test_repeated_names_get_their_position_among_equals():
    assert unique_columns(["a", "a", "b", "a"]) == ["a", "a:2", "b", "a:3"]
    assert unique_columns(["a", "a:2", "a"]) == ["a", "a:2", "a:3"]  # a suffix never collides
    assert unique_columns(["x", "y"]) == ["x", "y"]


@pytest.mark.parametrize("limit", ["1000", "0"])  # a frame, and the streamed batches
@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown"])
def test_a_result_with_repeated_column_names_prints_every_value(empty_history, fmt, limit):
    result = CliRunner().invoke(cli, ["--db", str(empty_history), "sql", QUERY, "--format", fmt, "--limit", limit])
    assert result.exit_code == 0, result.output
    if fmt == "json":
        assert json.loads(result.stdout) == [{"a": 1, "a:2": 2, "b": 3, "a:3": 4}]
    else:
        for value in "1234":
            assert value in result.stdout
        assert "a:3" in result.stdout
