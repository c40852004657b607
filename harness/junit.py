"""JUnit XML for multi-run jobs (suites, compares): one testcase per run, so a CI
system shows each as passed, failed, errored or skipped."""
from __future__ import annotations

from collections.abc import Iterable
from xml.etree import ElementTree as ET

OUTCOMES = ("passed", "failed", "error", "skipped")


def junit_xml(suite_name: str, classname: str, cases: Iterable[tuple[str, str, str]]) -> str:
    """`cases`: (test name, outcome in OUTCOMES, message for a non-passing outcome)."""
    cases = list(cases)
    counts = {o: sum(outcome == o for _, outcome, _ in cases) for o in OUTCOMES}
    suite = ET.Element("testsuite", name=suite_name, tests=str(len(cases)),
                       failures=str(counts["failed"]), errors=str(counts["error"]),
                       skipped=str(counts["skipped"]))
    for name, outcome, message in cases:
        case = ET.SubElement(suite, "testcase", classname=classname, name=name)
        if outcome == "failed":
            ET.SubElement(case, "failure", message=message).text = message
        elif outcome == "error":
            ET.SubElement(case, "error", message=message).text = message
        elif outcome == "skipped":
            ET.SubElement(case, "skipped", message=message)
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
