"""Nothing the README said before the docs site is lost: every section heading of the README at
09ca843 (kept in readme_headings_09ca843.txt, so a shallow clone can run this) is listed in
docs/readme-map.md, and the page it names exists and holds that heading (or the anchor given)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
OLD_HEADINGS = Path(__file__).with_name("readme_headings_09ca843.txt")
ROW = re.compile(r"^\| `(#+ [^`]+)` \| \[[^\]]*\]\(([^)#]+)(?:#([^)]+))?\) \|$")


def readme_map() -> dict[str, tuple[str, str | None]]:
    rows = {}
    for line in (DOCS / "readme-map.md").read_text(encoding="utf-8").splitlines():
        if found := ROW.match(line):
            rows[found.group(1)] = (found.group(2), found.group(3))
    return rows


def headings(page: Path) -> list[str]:
    """The page's Markdown headings (outside code blocks), without their #s."""
    found, fence = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and (m := re.match(r"^#+ (.+?)\s*$", line)):
            found.append(m.group(1))
    return found


def test_the_list_of_old_headings_is_the_old_readmes():
    """Where the history is there (a full clone), the committed list is checked against it."""
    shown = subprocess.run(["git", "show", "09ca843:README.md"], cwd=REPO, capture_output=True, text=True)
    if shown.returncode != 0:
        pytest.skip("commit 09ca843 is not in this clone")
    fence, old = False, []
    for line in shown.stdout.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"^##+ ", line):
            old.append(line)
    assert OLD_HEADINGS.read_text(encoding="utf-8").splitlines() == old


def test_every_old_readme_section_is_in_the_map():
    old = OLD_HEADINGS.read_text(encoding="utf-8").splitlines()
    assert len(old) >= 30
    missing = [h for h in old if h not in readme_map()]
    assert not missing, f"docs/readme-map.md does not say where these README sections went: {missing}"


@pytest.mark.parametrize("heading", OLD_HEADINGS.read_text(encoding="utf-8").splitlines())
def test_the_mapped_page_holds_the_section(heading):
    mapped = readme_map().get(heading)
    assert mapped, f"docs/readme-map.md has no row for {heading!r}"
    page_name, anchor = mapped
    page = DOCS / page_name
    assert page.is_file(), f"{heading!r} is mapped to {page_name}, which does not exist"
    on_page = headings(page)
    title = heading.lstrip("# ")
    if anchor:
        slugs = [slugify(h, "-") for h in on_page]
        assert anchor in slugs, f"{page_name} has no heading with the anchor #{anchor} ({heading!r})"
    else:
        assert title in on_page, f"{page_name} has no heading {title!r}"
