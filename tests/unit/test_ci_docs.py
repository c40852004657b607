"""docs/ci: the GitHub Actions workflow and the GitLab CI file run exactly the README's
set-up command, then only `harness` command lines the real parser accepts: gate on
every change, nightly on a schedule, JUnit XML and reports kept as artifacts."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from harness.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
CI = REPO / "docs" / "ci"


def readme_setup_command() -> str:
    """The first command of the README's set-up block (`bash scripts/setup.sh`)."""
    block = re.search(r"```sh\n(.*?)```", (REPO / "README.md").read_text(), re.S)[1]
    return block.splitlines()[0].split("#")[0].strip()


def _github() -> list[tuple[str, list[str]]]:
    doc = yaml.safe_load((CI / "github-actions.yml").read_text())
    return [(name, [s["run"] for s in job["steps"] if "run" in s]) for name, job in doc["jobs"].items()]


def _gitlab() -> list[tuple[str, list[str]]]:
    doc = yaml.safe_load((CI / "gitlab-ci.yml").read_text())
    jobs = []
    for name, job in doc.items():
        if name.startswith(".") or not isinstance(job, dict) or "script" not in job:
            continue
        base = doc.get(job.get("extends"), {}) if job.get("extends") else {}
        jobs.append((name, [*base.get("before_script", []), *job["script"], *base.get("after_script", [])]))
    return jobs


def _argv(line: str) -> list[str]:
    words = shlex.split(line)
    return words[2:] if words[:2] == ["sudo", "-E"] else words    # root, as the README's set-up


@pytest.mark.parametrize("jobs", [_github, _gitlab], ids=["github", "gitlab"])
def test_commands_are_setup_then_valid_harness_lines(jobs):
    seen_suites = set()
    for name, lines in jobs():
        assert _argv(lines[0]) == shlex.split(readme_setup_command()), (name, lines[0])
        for line in lines[1:]:
            argv = _argv(line)
            assert argv[0] == ".venv/bin/harness", (name, line)
            args = build_parser().parse_args(argv[1:])        # exits (SystemExit) on a bad line
            if args.command == "suite":
                seen_suites.add((name, args.suite))
                assert args.suites_dir == "ci-suites"           # where the artifacts are taken from
    assert {s for _, s in seen_suites} == {"gate", "nightly"}


def test_readme_setup_command_is_the_script():
    assert readme_setup_command() == "bash scripts/setup.sh"


def test_github_triggers_and_artifacts():
    doc = yaml.safe_load((CI / "github-actions.yml").read_text())
    triggers = doc.get("on") or doc.get(True)          # YAML 1.1 reads a bare `on` as True
    assert {"push", "pull_request", "schedule"} <= set(triggers)
    assert "schedule" in doc["jobs"]["nightly"]["if"] and "schedule" in doc["jobs"]["gate"]["if"]
    for job in doc["jobs"].values():
        uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
        junit = [s for s in job["steps"] if "junit" in str(s.get("uses", ""))]
        assert uploads and uploads[0]["with"]["path"] == "ci-suites/" and uploads[0]["if"] == "always()"
        # the suite's own junit.xml: `**` would add each run's report/junit.xml, so every
        # expectation twice
        assert junit and junit[0]["with"]["report_paths"] == "ci-suites/*/junit.xml"


def test_gitlab_rules_and_artifacts():
    doc = yaml.safe_load((CI / "gitlab-ci.yml").read_text())
    assert doc["gate"]["rules"] == [{"if": '$CI_PIPELINE_SOURCE != "schedule"'}]
    assert doc["nightly"]["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
    artifacts = doc[".harness"]["artifacts"]
    assert artifacts["when"] == "always" and artifacts["reports"]["junit"] == "ci-suites/*/junit.xml"
    assert artifacts["paths"] == ["ci-suites/"]
