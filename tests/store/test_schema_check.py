"""The schema check's pure parts: SQL text normalised by layout only, and the comparison's rules."""

from __future__ import annotations

import pytest

from ragqual.store.schema_check import SchemaDifference, compare, normalise_sql, readable


@pytest.mark.parametrize("left, right", [
    ("CREATE VIEW v AS\nSELECT a,  b\n  FROM t", "create view v as select a,b from t"),
    ('CREATE INDEX "ix" ON "t" ("a", [b], `c`)', "CREATE INDEX ix ON t (a, b, c)"),
    ("CREATE TABLE t (\n\tid INTEGER NOT NULL, \n\tPRIMARY KEY (id)\n);", "CREATE TABLE t (id INTEGER NOT NULL, PRIMARY KEY (id))"),
    ("SELECT a -- why\nFROM t /* note */ WHERE x = 1", "SELECT a FROM t WHERE x=1"),
    ("CREATE TRIGGER g ON public.t", "CREATE TRIGGER g ON t"),
])
def test_layout_quoting_case_and_comments_do_not_count(left, right):
    assert normalise_sql(left, schema="public") == normalise_sql(right, schema="public")


@pytest.mark.parametrize("left, right", [
    ("SELECT s.score FROM s", "SELECT 1.0 AS score FROM s"),
    ("SELECT 'PASS'", "SELECT 'pass'"),  # string literals keep their case
    ("SELECT 'a  b'", "SELECT 'a b'"),  # and their spaces
    ('SELECT "Mixed Name" FROM t', "SELECT mixed name FROM t"),
    ("WHERE e.event IN ('finished', 'failed')", "WHERE e.event IN ('finished')"),
    ("SELECT a[1] FROM t", "SELECT a1 FROM t"),
])
def test_meaning_still_counts(left, right):
    dialect = "postgresql" if "[" in left else "sqlite"
    assert normalise_sql(left, dialect) != normalise_sql(right, dialect)


def test_compare_names_missing_extra_and_different():
    expected = {("table", "t"): "x", ("view", "v"): "a", ("trigger", "g"): "y"}
    actual = {("table", "t"): "x", ("view", "v"): "b", ("index", "ix"): "z"}
    assert compare(expected, actual) == [SchemaDifference("index", "ix", "extra"),
                                         SchemaDifference("trigger", "g", "missing"),
                                         SchemaDifference("view", "v", "different")]


def test_a_missing_table_stands_for_its_columns_and_constraints():
    expected = {("table", "t"): "x", ("column", "t.a"): "int", ("constraint", "t.pk"): "primary key(a)",
                ("index", "ix_t"): "i"}
    assert compare(expected, {}) == [SchemaDifference("index", "ix_t", "missing"), SchemaDifference("table", "t", "missing")]
    assert compare({}, expected) == [SchemaDifference("index", "ix_t", "extra"), SchemaDifference("table", "t", "extra")]


def test_a_dropped_column_is_named_once():
    expected = {("table", "t"): "create table t(a,b)", ("column", "t.a"): "int", ("column", "t.b"): "int"}
    actual = {("table", "t"): "create table t(a)", ("column", "t.a"): "int"}
    assert compare(expected, actual) == [SchemaDifference("column", "t.b", "missing")]
    assert str(compare(expected, actual)[0]) == "column t.b: missing"


def test_a_table_whose_text_alone_changed_is_named():
    expected = {("table", "t"): "create table t(a int check(a>0))", ("column", "t.a"): "int"}
    actual = {("table", "t"): "create table t(a int)", ("column", "t.a"): "int"}
    assert compare(expected, actual) == [SchemaDifference("table", "t", "different")]


def test_readable_needs_the_table_and_every_column():
    schema = {("table", "t"): "", ("column", "t.a"): "", ("column", "t.b"): ""}
    assert readable(schema, "t", ["a", "b"])
    assert not readable(schema, "t", ["a", "c"])
    assert not readable(schema, "u", [])
