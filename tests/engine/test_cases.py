import textwrap

import pytest

from ragqual.engine.assertions import Assertion, Equals, Predicate
from ragqual.engine.cases import Case, discover_cases, select_by_slugs
from ragqual.errors import InputError, ValidationFailed
from tests.engine.support import uid

HEADER = "from ragqual.engine.cases import Case\nfrom ragqual.engine.assertions import Assertion, Equals\n"


def write(folder, name, body):
    (folder / name).write_text(HEADER + textwrap.dedent(body), encoding="utf-8")


def case_src(case_id, slug, assertion_id="11111111-1111-4111-8111-111111111111"):
    return (f"Case(id={case_id!r}, slug={slug!r}, input='x', "
            f"assertions=(Assertion({assertion_id!r}, 1, 'eq', Equals('x')),))")


A = "aaaaaaaa-0000-4000-8000-000000000001"
B = "bbbbbbbb-0000-4000-8000-000000000002"
C = "cccccccc-0000-4000-8000-000000000003"


def test_discovers_case_and_cases_from_every_public_module(tmp_path):
    write(tmp_path, "first_case.py", f"CASE = {case_src(A, 'first', uid('x1'))}\n")
    write(tmp_path, "more.py", f"CASES = [{case_src(B, 'second', uid('x2'))}, {case_src(C, 'third', uid('x3'))}]\n")
    write(tmp_path, "_helpers.py", f"CASES = [{case_src(A, 'first', uid('x1'))}]\n")  # private: skipped
    cases = discover_cases(tmp_path)
    assert [c.slug for c in cases] == ["first", "second", "third"]


def test_duplicate_case_id_names_both_places(tmp_path):
    write(tmp_path, "a.py", f"CASES = [{case_src(A, 'one', uid('x1'))}]\n")
    write(tmp_path, "b.py", f"CASES = [{case_src(A, 'two', uid('x2'))}]\n")
    with pytest.raises(ValidationFailed) as info:
        discover_cases(tmp_path)
    message = str(info.value)
    assert f"duplicate case id {A}" in message
    assert "a.py:CASES[0]" in message and "b.py:CASES[0]" in message


def test_duplicate_slug_is_rejected(tmp_path):
    write(tmp_path, "a.py", f"CASES = [{case_src(A, 'same', uid('x1'))}, {case_src(B, 'same', uid('x2'))}]\n")
    with pytest.raises(ValidationFailed, match="duplicate case slug 'same'.*CASES\\[0\\]"):
        discover_cases(tmp_path)


def test_duplicate_assertion_id_across_cases_is_rejected(tmp_path):
    shared = uid("shared")
    write(tmp_path, "a.py", f"CASES = [{case_src(A, 'one', shared)}, {case_src(B, 'two', shared)}]\n")
    with pytest.raises(ValidationFailed, match=f"duplicate assertion id {shared}"):
        discover_cases(tmp_path)


def test_all_problems_are_reported_in_one_pass(tmp_path):
    write(tmp_path, "a.py", f"CASES = [{case_src(A, 'one', uid('x1'))}, {case_src(A, 'one', uid('x2'))}]\n")
    with pytest.raises(ValidationFailed) as info:
        discover_cases(tmp_path)
    assert len(info.value.issues) == 2  # the id and the slug


def test_cases_must_be_a_list_of_case(tmp_path):
    write(tmp_path, "a.py", "CASES = 'nope'\n")
    with pytest.raises(InputError, match="CASES must be a list"):
        discover_cases(tmp_path)
    write(tmp_path, "a.py", "CASES = [1]\n")
    with pytest.raises(InputError, match="is not a Case"):
        discover_cases(tmp_path)


def test_a_package_is_discovered_by_dotted_name():
    cases = discover_cases("ragqual.subjects.sentiment.cases")
    assert len(cases) == 15
    assert len({c.id for c in cases}) == 15


def test_an_unknown_package_is_an_input_error():
    with pytest.raises(InputError, match="no case package"):
        discover_cases("ragqual.no_such_cases")


@pytest.mark.parametrize("kwargs, message", [
    ({"id": " 12"}, "UUID"), ({"id": "x" * 129}, "UUID"), ({"slug": ""}, "slug"), ({"input": object()}, "JSON"),
    ({"assertions": ("not an assertion",)}, "not an Assertion"),
])
def test_case_validation(kwargs, message):
    base = dict(id=A, slug="s", input="x")
    with pytest.raises(InputError, match=message):
        Case(**{**base, **kwargs})


def test_definition_holds_the_assertion_specs_and_round_trips():
    case = Case(A, "s", {"q": 1}, (Assertion(uid("e"), 3, "eq", Equals(2, path="q"), "CAT", 0.0),),
                source="MANUAL", difficulty="hard", tags=("t",), meta={"expected": 2})
    definition = case.definition()
    assert definition["assertions"][0]["version"] == 3
    assert definition["assertions"][0]["check"] == {"kind": "equals", "value": 2, "path": "q"}
    assert Case.from_definition(definition) == case


def test_predicate_cases_rebuild_only_with_a_registry():
    def check(output):
        return output == "x"

    case = Case(A, "s", "x", (Assertion(uid("p"), 1, "pred", Predicate(check)),))
    with pytest.raises(InputError, match="live registry"):
        Case.from_definition(case.definition())
    rebuilt = Case.from_definition(case.definition(), {Predicate(check).code_sha256: check})
    assert rebuilt.assertions[0].check == Predicate(check)


def test_select_by_slugs_keeps_order_and_rejects_unknown():
    cases = [Case(A, "a", 1), Case(B, "b", 2), Case(C, "c", 3)]
    assert [c.slug for c in select_by_slugs(cases, ["c", "a"])] == ["a", "c"]
    assert select_by_slugs(cases, []) == cases
    with pytest.raises(InputError, match="unknown case slug.*zz.*valid slugs are a, b, c"):
        select_by_slugs(cases, ["a", "zz"])
