"""What importing a module costs a command that does not use it: the modules below compile their
patterns when first used, not at import (the retrieval tier imports them, with the seals, the
report's headline names and the RAG subject's assertions, and uses none of these patterns), and
give the same answers as before."""

from __future__ import annotations

import json
import subprocess
import sys

from ragqual.core import metric_names, published_head
from ragqual.engine import paths

LAZY = ("ragqual.core.published_head", "ragqual.core.metric_names", "ragqual.engine.paths", "ragqual.core.numbers")

PROBE = """
import json, re, sys
seen = []
real = re.compile

def recording(pattern, flags=0):
    seen.append(sys._getframe(1).f_globals.get("__name__"))
    return real(pattern, flags)

re.compile = recording
import regex
regex.compile = recording
import importlib
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
print(json.dumps(sorted(set(seen))))
"""


def test_importing_them_compiles_none_of_their_patterns(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(LAZY)], cwd=tmp_path, capture_output=True,
                          text=True, check=True, timeout=120)
    compiled_by = set(json.loads(done.stdout))
    assert compiled_by.isdisjoint(LAZY), compiled_by


def test_the_patterns_compiled_on_first_use_read_as_before():
    head = "sha256:" + "ab" * 32 + " at seal 7 (9 seals)"
    assert published_head.parse_head(head) == published_head.PublishedHead("ab" * 32, 7, 9)
    assert published_head.find_head(f"- **history_head**: {head}\n") == published_head.PublishedHead("ab" * 32, 7, 9)
    assert published_head.parse_head("sha256:ab at seal 7") is None
    family = metric_names.lookup("recall@7")
    assert family is not None and family.name == "recall@{k}" and metric_names.lookup("recall@77") is family
    assert metric_names.lookup("recall@0") is None and metric_names.lookup("recall@x") is None
    assert paths.parse_path("$.a.b[0].c") == ("a", "b", 0, "c")
