"""The reference pages cover the code: every registered command and option has an entry in the
command reference (as mkdocs-click renders it), every environment variable the code reads is on
the environment page, and the generated sections hold every metric and every history table."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import click
import pytest
from mkdocs_click._docs import make_command_docs

from ragqual.cli.commands import COMMANDS
from ragqual.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
DIRECTIVE = re.compile(r"^::: mkdocs-click\n((?:    :\w+: .*\n)+)", re.MULTILINE)


def hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def directives(page: Path) -> list[dict[str, str]]:
    text = page.read_text(encoding="utf-8")
    return [dict(re.findall(r":(\w+): (.*)", block.group(1))) for block in DIRECTIVE.finditer(text)]


def rendered_reference() -> dict[str, str]:
    """prog_name -> the Markdown mkdocs-click makes of that block (what the site shows)."""
    out = {}
    for options in directives(DOCS / "reference" / "cli.md"):
        command = getattr(importlib.import_module(options["module"]), options["command"])
        lines = make_command_docs(options["prog_name"], command, depth=int(options.get("depth", 0)),
                                  style=options.get("style", "plain"), has_attr_list=True)  # attr_list is on in mkdocs.yml
        out[options["prog_name"]] = "\n".join(lines)
    return out


def walk(prefix: str, command: click.Command):
    """(command path, command) for a command and every subcommand under it."""
    yield prefix, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from walk(f"{prefix} {name}", sub)


def missing_entries(reference: dict[str, str]) -> list[str]:
    missing = []
    for name, (module, attr) in sorted(COMMANDS.items()):
        top = f"ragqual {name}"
        if top not in reference:
            missing.append(f"{top}: no `::: mkdocs-click` block in docs/reference/cli.md")
            continue
        command = getattr(importlib.import_module(module), attr)
        for path, cmd in walk(top, command):
            if not re.search(rf"^#+ {re.escape(path)}\b", reference[top], re.MULTILINE):
                missing.append(f"{path}: no section")
            for param in cmd.params:
                if isinstance(param, click.Option) and not any(f"`{opt}`" in reference[top] for opt in param.opts):
                    missing.append(f"{path} {'/'.join(param.opts)}: no entry")
                if isinstance(param, click.Argument) and param.human_readable_name not in reference[top]:
                    missing.append(f"{path} {param.human_readable_name}: not in the usage line")
    return missing


def test_every_command_and_option_has_a_reference_entry():
    assert missing_entries(rendered_reference()) == []


def test_a_command_left_out_of_the_reference_is_named(monkeypatch):
    reference = rendered_reference()
    del reference["ragqual verify"]
    assert missing_entries(reference) == ["ragqual verify: no `::: mkdocs-click` block in docs/reference/cli.md"]
    reference = rendered_reference()
    reference["ragqual sql"] = reference["ragqual sql"].replace("`--max-bytes`", "`--max-bites`")
    assert missing_entries(reference) == ["ragqual sql --max-bytes: no entry"]


def test_each_block_names_the_module_and_attribute_the_registry_gives():
    given = {d["prog_name"]: (d["module"], d["command"]) for d in directives(DOCS / "reference" / "cli.md")}
    assert given == {f"ragqual {name}": target for name, target in COMMANDS.items()}


def test_the_global_options_are_generated():
    text = hooks().global_options_md()
    for param in cli.params:
        assert any(f"`{opt}`" in text for opt in param.opts), param.opts
    assert "Sentinel" not in text


def test_the_metric_registry_page_lists_every_metric():
    from ragqual.core.metric_names import METRICS

    text = hooks().metric_registry_md()
    assert [m.name for m in METRICS if f"| `{m.name}` |" not in text] == []


def test_the_history_page_lists_every_table_and_view():
    from ragqual.store.models import HISTORY_TABLES

    text = hooks().history_schema_md()
    assert [t for t in HISTORY_TABLES if f"### `{t}`" not in text] == []
    assert "### `v_trials`" in text and "### `v_retrieval_hits`" in text


def test_every_generated_marker_is_known():
    module = hooks()
    for page in DOCS.rglob("*.md"):
        for name in module.MARKER.findall(page.read_text(encoding="utf-8")):
            assert name in module.GENERATORS, f"{page}: unknown generated section {name!r}"


# ragqual's own variables, and the other programs' variables it reads, named as string literals
# (some through a constant: TIMEOUT_ENV = "RAGQUAL_MODEL_TIMEOUT").
ENV_READ = re.compile(r"""["'](RAGQUAL_[A-Z0-9_]+|OLLAMA_[A-Z_]+|QDRANT_[A-Z_]+|OPENAI_[A-Z_]+)["']""")


def variables_read() -> set[str]:
    names = set()
    for source in (REPO / "ragqual").rglob("*.py"):
        names |= set(ENV_READ.findall(source.read_text(encoding="utf-8")))
    return names


def test_every_environment_variable_the_code_reads_is_documented():
    read = variables_read()
    assert {"RAGQUAL_DB", "RAGQUAL_MODEL_TIMEOUT", "OLLAMA_HOST"} <= read
    page = (DOCS / "reference" / "environment.md").read_text(encoding="utf-8")
    assert sorted(name for name in read if f"`{name}`" not in page) == []


@pytest.mark.parametrize("code", ["0", "1", "2", "3", "4", "70", "130"])
def test_the_exit_code_page_has_a_row_per_code(code):
    page = (DOCS / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    assert f"| `{code}` |" in page
