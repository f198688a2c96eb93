"""Sentences a reader would call positive, including ones a keyword baseline misses."""

from ragqual.engine.cases import Case
from ragqual.subjects.sentiment.checks import label_is, no_explanation, not_opposite, one_known_label

CASES = [
    Case(
        id="afefdade-bc22-4e5e-87bf-89e82f855ccb",
        slug="pos-love-phone",
        input="I absolutely love this phone, the battery lasts for days.",
        source="MANUAL",
        difficulty="easy",
        tags=("product",),
        meta={"expected": "positive"},
        assertions=(
            label_is("aec73790-2431-4073-ac3c-442df251c553", "positive"),
            not_opposite("d459f2de-0411-417e-8799-666b19418373", "positive"),
            one_known_label("a215a404-fda1-4ebf-aef5-137af410aa05"),
            no_explanation("7bee4683-e9eb-4901-ae33-ec1d8b09747b"),
        ),
    ),
    Case(
        id="369e3bf0-a30d-4210-ad36-f4af49d59954",
        slug="pos-friendly-staff",
        input="The staff were friendly and the food was excellent.",
        source="MANUAL",
        difficulty="easy",
        tags=("restaurant",),
        meta={"expected": "positive"},
        assertions=(
            label_is("fdec544e-f815-49c7-8461-4f9e3dbf79e0", "positive"),
            not_opposite("ac31b57b-0717-4c2e-98cd-dbeaeaab6e96", "positive"),
            one_known_label("6a766433-2f04-4182-b712-babfeb5cc308"),
            no_explanation("5e32e856-73bf-4887-af8e-6e592ceaaccb"),
        ),
    ),
    Case(
        id="86d865b7-1c66-40a5-9f60-3a705b266208",
        slug="pos-not-bad-at-all",
        input="Not bad at all, I'd happily go back.",
        source="MANUAL",
        difficulty="medium",
        tags=("negation", "restaurant"),
        meta={"expected": "positive"},
        assertions=(
            label_is("73c5b1af-cd8e-4348-8d8f-fec55fd5d69c", "positive"),
            not_opposite("881bcadd-2f16-42c4-bb2b-e612b092cea1", "positive"),
            one_known_label("417f893c-d3ed-470f-a4a3-a888515e1693"),
            no_explanation("e160ca0f-f2b2-4485-ab86-4286440f8075"),
        ),
    ),
    Case(
        id="9d31ca4f-b986-4933-b15b-3ed9caf004b9",
        slug="pos-sequel-better",
        input="Honestly, the sequel is even better than the original.",
        source="MANUAL",
        difficulty="easy",
        tags=("film",),
        meta={"expected": "positive"},
        assertions=(
            label_is("4a748dee-0a43-449b-91f7-46c98b104032", "positive"),
            not_opposite("5034aa4d-3e43-409d-93ee-75743f658f75", "positive"),
            one_known_label("c0e5f537-b8cf-4668-ba6c-a93ccc9ec1c1"),
            no_explanation("49b4e358-db8c-4dcc-985f-fc562d0406f7"),
        ),
    ),
    Case(
        id="04911d9a-d939-42d5-abc7-babac800b221",
        slug="pos-exceeded-expectations",
        input="The hotel exceeded every expectation we had.",
        source="MANUAL",
        difficulty="medium",
        tags=("travel", "no-keyword"),
        meta={"expected": "positive"},
        assertions=(
            label_is("0a9e374f-63a0-4fb4-a1d3-189b46c60f30", "positive"),
            not_opposite("e5f2c461-3c67-41c6-9434-83e89e85869f", "positive"),
            one_known_label("bc9b4831-89f7-4581-b460-86b35791ad49"),
            no_explanation("804350e6-e2e5-4541-b09c-83a52b00f8c4"),
        ),
    ),
]
