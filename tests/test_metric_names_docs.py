"""The metrics page names metrics as they are stored and registered (ragqual.core.metric_names)."""

import re
from pathlib import Path

from ragqual.core.metric_names import Direction, METRICS, is_registered

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "metrics.md"


def _section(title: str) -> str:
    """The page's text from its title to its first `##` section (the hand-written part)."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"# {title}\n")
    return text[start:text.index("\n## ", start + 1)]


def test_the_generation_metrics_table_names_registered_metrics():
    section = _section("What the metrics mean")
    names = re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)
    assert "correctness" in names and "groundedness" in names
    assert [n for n in names if not is_registered(n)] == []


def test_the_readme_lists_exactly_the_lower_is_better_metrics():
    section = _section("What the metrics mean")
    sentence = re.search(r"Lower is better for ([^(]+)", section)
    assert sentence, "docs/reference/metrics.md no longer says which metrics are lower-is-better"
    said = set(re.findall(r"`([^`]+)`", sentence.group(1)))
    assert said == {m.name for m in METRICS if m.direction is Direction.LOWER}
