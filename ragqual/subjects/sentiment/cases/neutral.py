"""Statements of fact and one evenly mixed opinion, which should stay neutral."""

from ragqual.engine.cases import Case
from ragqual.subjects.sentiment.checks import label_is, no_explanation, one_known_label

CASES = [
    Case(
        id="a700cb67-751f-46f5-afd0-59e5a2cac88d",
        slug="neu-meeting-time",
        input="The meeting is scheduled for 3 pm on Tuesday.",
        source="MANUAL",
        difficulty="easy",
        tags=("fact",),
        meta={"expected": "neutral"},
        assertions=(
            label_is("29b718e7-57d0-4f09-b71a-b2c7c118bb90", "neutral"),
            one_known_label("e84eddfd-3b85-46d4-af3e-521da6ac641b"),
            no_explanation("8d8ab063-8415-47ab-ad42-81433aff127b"),
        ),
    ),
    Case(
        id="d970043c-8a12-44ed-9dbf-16cee51f0a83",
        slug="neu-box-contents",
        input="The box contains two cables and a printed manual.",
        source="MANUAL",
        difficulty="easy",
        tags=("fact",),
        meta={"expected": "neutral"},
        assertions=(
            label_is("aadb87c6-49a8-41dc-af82-916469320929", "neutral"),
            one_known_label("a1f9700a-954a-435b-acec-2d9543e1a7f3"),
            no_explanation("45d83b55-3cb8-42d8-ab1f-8d028c38eeaa"),
        ),
    ),
    Case(
        id="906db4a7-ed66-417b-9c50-5646d212235c",
        slug="neu-weather-report",
        input="It rained in the morning and cleared up by noon.",
        source="MANUAL",
        difficulty="easy",
        tags=("fact",),
        meta={"expected": "neutral"},
        assertions=(
            label_is("80497f57-12db-4f61-b8bb-5dceccc5d3e2", "neutral"),
            one_known_label("4a0d8cee-de1d-4bd9-aa56-084329a0c051"),
            no_explanation("0d3c00f4-b2b6-4ee7-81e0-a229e6e76732"),
        ),
    ),
    Case(
        id="290215ea-401b-4abd-970b-fd38cee9d6c4",
        slug="neu-mixed-screen-battery",
        input="The screen is great but the battery is terrible.",
        source="MANUAL",
        difficulty="hard",
        tags=("mixed",),
        meta={"expected": "neutral"},
        assertions=(
            label_is("c025d284-2d81-442b-b82e-9fd1a6dae3d7", "neutral"),
            one_known_label("0db64dae-8c67-45ea-ada5-8ea39b598b6f"),
            no_explanation("7071d479-2596-4337-83cd-d01d6168fc10"),
        ),
    ),
]
