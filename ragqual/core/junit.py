"""JUnit XML as Jenkins and GitLab read it: pure text from test-case records.

The format is the Ant/Jenkins `junit-10.xsd` shape GitLab also parses (`JUNIT_FORMAT`):

    <testsuites name tests failures errors skipped>
      <testsuite name tests failures errors skipped time>
        <properties><property name value/></properties>
        <testcase classname name time>
          <failure message type>why</failure> | <error message type>why</error> | <skipped message/>
        </testcase>

Every attribute and text is escaped by ElementTree; characters XML 1.0 cannot hold at all (control
characters other than tab, newline and carriage return; lone surrogates; U+FFFE/U+FFFF) are written
as a visible `\\xNN` / `\\uNNNN` instead, so the file always parses.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

JUNIT_FORMAT = "JUnit XML (Ant/Jenkins junit-10.xsd, as read by Jenkins and GitLab)"
OUTCOMES = ("passed", "failure", "error", "skipped")

_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """`text` with the characters XML 1.0 forbids shown as escapes (everything else kept)."""
    return _ILLEGAL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        text)


@dataclass(frozen=True)
class JUnitCase:
    """One test case: `outcome` is one of OUTCOMES; `message` a one-line reason, `detail` the body."""

    classname: str
    name: str
    outcome: str = "passed"
    message: str = ""
    detail: str = ""
    kind: str = ""  # the failure/error `type` attribute
    time: float = 0.0

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {self.outcome!r}")


def _case(parent: ET.Element, case: JUnitCase) -> None:
    element = ET.SubElement(parent, "testcase", classname=xml_safe(case.classname), name=xml_safe(case.name),
                            time=f"{case.time:.3f}")
    if case.outcome == "passed":
        return
    child = ET.SubElement(element, case.outcome, message=xml_safe(case.message))
    if case.outcome != "skipped":
        child.set("type", xml_safe(case.kind or case.outcome))
    if case.detail:
        child.text = xml_safe(case.detail)


def _counts(cases: Sequence[JUnitCase]) -> dict[str, str]:
    count = {o: sum(1 for c in cases if c.outcome == o) for o in OUTCOMES}
    return {"tests": str(len(cases)), "failures": str(count["failure"]), "errors": str(count["error"]),
            "skipped": str(count["skipped"])}


def junit_xml(suite: str, cases: Sequence[JUnitCase], properties: Mapping[str, str] | None = None) -> str:
    """One `<testsuites>` holding one `<testsuite>` named `suite`, as UTF-8 XML text."""
    root = ET.Element("testsuites", {"name": xml_safe(suite), **_counts(cases)})
    element = ET.SubElement(root, "testsuite", {"name": xml_safe(suite), **_counts(cases),
                                                "time": f"{sum(c.time for c in cases):.3f}"})
    if properties:
        props = ET.SubElement(element, "properties")
        for key, value in properties.items():
            ET.SubElement(props, "property", name=xml_safe(key), value=xml_safe(value))
    for case in cases:
        _case(element, case)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
