"""Sentences a reader would call negative: complaints, negations and one sarcastic line."""

from ragqual.engine.cases import Case
from ragqual.subjects.sentiment.checks import label_is, no_explanation, not_opposite, one_known_label

CASES = [
    Case(
        id="dd3e8d5f-8221-43d8-b930-28c00efc7c27",
        slug="neg-broken-package",
        input="The package arrived broken and support never replied.",
        source="MANUAL",
        difficulty="easy",
        tags=("delivery",),
        meta={"expected": "negative"},
        assertions=(
            label_is("830015de-217e-46f1-b7d6-cdf347977aaf", "negative"),
            not_opposite("999b132a-c9a9-4555-b63d-dbafbd94589b", "negative"),
            one_known_label("8ddaca38-9194-41a9-b78b-98a46d2365aa"),
            no_explanation("4a50c219-7a17-474d-aa6f-4006f26daaf5"),
        ),
    ),
    Case(
        id="bb5797e4-b0c8-4f74-8f95-95b51874c8f0",
        slug="neg-worst-coffee",
        input="This is the worst coffee I have ever tasted.",
        source="MANUAL",
        difficulty="easy",
        tags=("restaurant",),
        meta={"expected": "negative"},
        assertions=(
            label_is("2e18e956-473f-4a89-95b0-72661447fafa", "negative"),
            not_opposite("c9609abf-bb5a-4aed-a11e-ae92bf4d13aa", "negative"),
            one_known_label("d5260982-0379-4750-bbd9-fc5b09327883"),
            no_explanation("050516ae-d6f5-483b-9f58-91fa3e7eda6a"),
        ),
    ),
    Case(
        id="e7bdbdf1-4b5c-453f-99a9-e92626f46aba",
        slug="neg-wouldnt-recommend",
        input="I wouldn't recommend it to anyone.",
        source="MANUAL",
        difficulty="medium",
        tags=("negation",),
        meta={"expected": "negative"},
        assertions=(
            label_is("0a037c66-4c84-415d-9654-b4eec92f1b36", "negative"),
            not_opposite("283777dd-bd5c-4c32-a08b-06686f547f41", "negative"),
            one_known_label("c8dbdfd6-e972-4242-b15f-9814b1f4dcfe"),
            no_explanation("c3f6f00c-2c75-4857-8100-d4490ea1189a"),
        ),
    ),
    Case(
        id="835c2ff1-9e6e-4914-9a83-2302fd44b0f1",
        slug="neg-slow-update",
        input="The update made everything slower and it crashes constantly.",
        source="MANUAL",
        difficulty="easy",
        tags=("software",),
        meta={"expected": "negative"},
        assertions=(
            label_is("eb52b2f7-5c4c-47f3-9c71-dde8f5ef1024", "negative"),
            not_opposite("256925d5-ef6b-4908-ac8e-2570b5c14554", "negative"),
            one_known_label("523aeaf4-7fed-40d4-94ac-b35779ea2ae5"),
            no_explanation("c3450c13-f0b2-4092-b437-6a08490b48af"),
        ),
    ),
    Case(
        id="9cfcb380-246f-4ae6-9fe3-71782ac2c8b9",
        slug="neg-not-happy",
        input="I'm not happy with the service at all.",
        source="MANUAL",
        difficulty="medium",
        tags=("negation",),
        meta={"expected": "negative"},
        assertions=(
            label_is("d95e0309-da9f-4b3d-9e86-1f71229de5ef", "negative"),
            not_opposite("388e5738-6ea8-479b-9d3e-5b0c20b801bf", "negative"),
            one_known_label("42c3135d-709b-464e-9f54-1e6f05b0f136"),
            no_explanation("3b466389-1318-4783-81b7-aea98839f6e2"),
        ),
    ),
    Case(
        id="e87075f5-fa17-418f-b44f-4fd321c8663d",
        slug="neg-sarcastic-afternoon",
        input="What a fantastic way to waste an afternoon.",
        source="MANUAL",
        difficulty="hard",
        tags=("sarcasm",),
        meta={"expected": "negative"},
        assertions=(
            label_is("4dd037d7-895b-4433-9563-f1ddd46d8764", "negative"),
            not_opposite("a3d26cc7-b551-47d3-b475-ca564a1f4de4", "negative"),
            one_known_label("c6ab7262-032b-4b1f-a7dc-4055b61f61e2"),
            no_explanation("18e3107e-4951-4a8e-8e22-69d12162e00f"),
        ),
    ),
]
