"""JUnit XML, the one writer: a run's report/junit.xml (one testcase per expectation)
and a suite's or a compare's (one testcase per run), so a CI system shows each as
passed, failed, errored or skipped."""
from __future__ import annotations

from collections.abc import Iterable
from xml.etree import ElementTree as ET

from verifiers.verdict import Verdict

OUTCOMES = ("passed", "failed", "error", "skipped")


def junit_xml(suite_name: str, classname: str, cases: Iterable[tuple[str, str, str]],
              seconds: float | None = None) -> str:
    """`cases`: (test name, outcome in OUTCOMES, message for a non-passing outcome)."""
    cases = list(cases)
    counts = {o: sum(outcome == o for _, outcome, _ in cases) for o in OUTCOMES}
    suite = ET.Element("testsuite", name=suite_name, tests=str(len(cases)),
                       failures=str(counts["failed"]), errors=str(counts["error"]),
                       skipped=str(counts["skipped"]))
    if seconds is not None:
        suite.set("time", f"{seconds:.3f}")
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


def verdict_junit(run_id: str, verdict: Verdict, seconds: float) -> str:
    """A run's report/junit.xml: one testcase per expectation; a verdict that is unknown
    is an error; a run without expectations one passing case."""
    cases = []
    if verdict.status == "unknown":
        cases.append(("history", "error", verdict.reason or "the harness could not judge this run"))
    outcome = {"passed": "passed", "failed": "failed", "not judged": "skipped"}
    cases += [(c.expectation, outcome[c.status], c.reason) for c in verdict.checks]
    if not cases:
        cases.append(("no expectations", "passed", ""))
    return junit_xml(f"harness verify {run_id}", "harness.verify", cases, seconds)
