"""The shell examples of the docs: found, run against a fresh copy of the bundled project, compared.

The convention (docs/about.md says it to writers):

- an *example* is a fenced block holding a line that starts with `$ ` (a command, as typed);
  the lines after it, up to the next `$ ` line, are what it prints (stdout and stderr together);
- an example is a ```console block, run by tests/docs/test_examples.py, unless the line before
  its fence is `<!-- illustrative: WHY -->` (a real model, a multi-minute run, a machine's
  timings, a history built some other way): then it is shown and not run;
- in shown output, a line `...` stands for any number of lines, and `...` inside a line for any
  text (timings, paths, digests); everything else, numbers included, must match.

Each page's examples run in order in one project (`make_bundled_project`: the bundled corpus,
goldens and glossary, the mock model, embedded Qdrant, and the history database in the
project's own temporary `eval-results/`; `RAGQUAL_DB` is unset), through `bash -c` in the project folder, so `$ ragqual ...` is the installed
command. `python -m tests.docs.examples PAGE...` prints each block's real output next to the
page's, to write a new example from a real run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ILLUSTRATIVE = re.compile(r"^<!--\s*illustrative:\s*(\S.*?)\s*-->$")
RUN_LANGS = ("console", "shell")


@dataclass
class Command:
    line: int  # 1-based line of the `$ ` line in the page
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Example:
    page: Path
    line: int  # the opening fence
    lang: str
    illustrative: str | None
    commands: list[Command]

    @property
    def runs(self) -> bool:
        return self.lang in RUN_LANGS and self.illustrative is None

    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def examples(page: Path) -> list[Example]:
    """Every fenced block of the page that holds a `$ ` line."""
    found: list[Example] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(```+|~~~+)\s*([\w-]*)", lines[i])
        if not fence:
            i += 1
            continue
        indent, marker, lang = fence.groups()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(marker):
            end += 1
        body = [ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[i + 1:end]]
        commands = _commands(body, i + 2)
        if commands:
            before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            mark = ILLUSTRATIVE.match(before)
            found.append(Example(page, i + 1, lang, mark.group(1) if mark else None, commands))
        i = end + 1
    return found


def _commands(body: list[str], first_line: int) -> list[Command]:
    commands: list[Command] = []
    k = 0
    while k < len(body):
        ln = body[k]
        if ln.startswith("$ "):
            text, start = ln[2:], k
            while text.endswith("\\") and k + 1 < len(body):  # a command continued on the next line
                k += 1
                text = text[:-1] + " " + body[k].strip()
            commands.append(Command(first_line + start, text))
        elif commands:
            commands[-1].expected.append(ln)
        k += 1
    return commands


def run(command: str, project: Path, env: dict[str, str], timeout: float = 900) -> str:
    """stdout and stderr of `bash -c command` in the project, as one text."""
    proc = subprocess.run(["bash", "-c", command], cwd=project, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return proc.stdout


def environment(project: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAGQUAL_DB", "QDRANT_URL", "QDRANT_API_KEY", "OLLAMA_HOST", "OPENAI_API_KEY")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", RAGQUAL_CACHE_DIR=str(cache),
               RAGQUAL_QDRANT_WAIT="30", PYTHONUNBUFFERED="1", COLUMNS="200", NO_COLOR="1", TZ="UTC")
    return env


def _clean(lines: list[str]) -> list[str]:
    out = [ln.rstrip() for ln in lines]
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return out


def _line_matches(want: str, got: str) -> bool:
    if "..." not in want:
        return want == got
    pattern = ".*".join(re.escape(part) for part in want.split("..."))
    return re.fullmatch(pattern, got) is not None


def matches(expected: list[str], actual: list[str]) -> bool:
    """`...` alone on a line: any number of lines; `...` inside a line: any text."""
    want, got = _clean(expected), _clean(actual)
    memo: dict[tuple[int, int], bool] = {}

    def from_(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(want):
            result = j == len(got)
        elif want[i].strip() == "...":
            result = any(from_(i + 1, k) for k in range(j, len(got) + 1))
        else:
            result = j < len(got) and _line_matches(want[i], got[j]) and from_(i + 1, j + 1)
        memo[(i, j)] = result
        return result

    return from_(0, 0)


def main(argv: list[str]) -> None:
    """Run every runnable example of the pages named and print real output beside the page's."""
    import tempfile

    from tests.cli.conftest import make_bundled_project

    cache = Path(tempfile.mkdtemp(prefix="ragqual-docs-cache-"))
    for name in argv:
        page = Path(name).resolve()
        with tempfile.TemporaryDirectory() as folder:
            project = make_bundled_project(Path(folder) / "project")
            env = environment(project, cache)
            for example in (e for e in examples(page) if e.runs):
                for command in example.commands:
                    got = run(command.text, project, env).splitlines()
                    verdict = "ok" if matches(command.expected, got) else "DIFFERS"
                    print(f"--- {example.where()} line {command.line}: {verdict}\n$ {command.text}")
                    print("\n".join(_clean(got)))


if __name__ == "__main__":
    main(sys.argv[1:])
