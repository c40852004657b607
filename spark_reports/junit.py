"""report/junit.xml: one test case per expectation, for CI gates."""
from __future__ import annotations

from xml.etree import ElementTree as ET

from verifiers.verdict import Verdict


def junit_xml(run_id: str, verdict: Verdict, seconds: float) -> str:
    suite = ET.Element("testsuite", name=f"harness verify {run_id}",
                       tests=str(max(1, len(verdict.checks))),
                       failures=str(sum(c.status == "failed" for c in verdict.checks)),
                       errors="1" if verdict.status == "unknown" else "0",
                       skipped=str(sum(c.status == "not judged" for c in verdict.checks)),
                       time=f"{seconds:.3f}")
    if verdict.status == "unknown":
        case = ET.SubElement(suite, "testcase", classname="harness.verify", name="history")
        err = ET.SubElement(case, "error", message="verdict unknown")
        err.text = verdict.reason or "the harness could not judge this run"
    for c in verdict.checks:
        case = ET.SubElement(suite, "testcase", classname="harness.verify", name=c.expectation)
        if c.status == "failed":
            ET.SubElement(case, "failure", message=c.reason).text = c.reason
        elif c.status == "not judged":
            ET.SubElement(case, "skipped", message=c.reason)
    if not verdict.checks and verdict.status != "unknown":
        ET.SubElement(suite, "testcase", classname="harness.verify", name="no expectations")
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
