"""The report as a browser lays it out (headless Chromium, 1400 px wide): the banner
gives the reason first, and nothing on the page is wider than the page, with every
collapsed table opened."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape

import pytest
from test_report_html import T0, _deposed_summary  # same dir: pytest puts it on sys.path

from spark_reports.report_html import render_report
from spark_reports.summary import Summary
from verifiers.expectations import load_expectations
from verifiers.verdict import judge

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Chromium without its background services (this machine reaches no other host).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars")
MEASURE = """<script>
document.querySelectorAll('details').forEach(d => d.open = true);
const page = document.documentElement.clientWidth;
const wide = [...document.body.querySelectorAll('*')]
  .filter(e => e.getBoundingClientRect().right > page + 1 || e.scrollWidth > e.clientWidth + 1
               && getComputedStyle(e).overflowX === 'visible' && e.tagName !== 'TR')
  .map(e => e.tagName + ' ' + Math.round(e.getBoundingClientRect().width) + ': ' +
            e.textContent.slice(0, 60));
document.body.setAttribute('data-measured', JSON.stringify({
  page, scroll: document.documentElement.scrollWidth, wide,
  banner: document.querySelector('.banner h1').textContent}));
</script></body>"""


def _wide_samples() -> dict:
    """First rows of a kind as the report shows them: every column of a lost row."""
    cols = ["record_id", "producer", "seq", "key", "topic", "partition", "offset", "status",
            "error", "send_ts_us", "ack_ts_us", "txn_id", "txn_seq", "txn_outcome", "acked_by",
            "leader_at_ack", "elected_leader_at_ack", "faults_at_ack", "fault_id"]
    row = {c: f"{c}-value-that-is-rather-long-{i}" for i, c in enumerate(cols)}
    row.update(send_ts_us=T0 + 2_100_000, ack_ts_us=T0 + 2_200_000,
               faults_at_ack=["partition-0123456789", "kill-9876543210"])
    return {"anomalies": {"lost": [row] * 20}, "columns": {"lost": cols}}


def _measure(page: str, tmp_path) -> dict:
    if CHROMIUM is None:
        pytest.fail("no chromium: bash scripts/setup.sh installs it (Debian package chromium)")
    html = tmp_path / "index.html"
    html.write_text(page.replace("</body>", MEASURE))
    out = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                          "--window-size=1400,1000", "--dump-dom", f"file://{html}"],
                         capture_output=True, text=True, timeout=120)
    found = re.search(r'data-measured="([^"]*)"', out.stdout)
    assert found, out.stderr[-2000:]
    return json.loads(unescape(found.group(1)))


def test_the_banner_gives_the_reason_and_nothing_is_wider_than_the_page(tmp_path):
    v = judge({"anomalies": {"lost": 4841}, "counts": {}, "metrics": {}},
              load_expectations("- lost > 0\n- max_unavailability_s <= 30\n", "e"), {}, {})
    summary = _deposed_summary(v)
    summary["counts"] = {f"count_{i}": 10 ** i for i in range(14)}   # a long row of counts
    summary["problems"] = [{"kind": "workload-died", "at_us": T0 + 3_000_000,
                            "text": "producer p0 died (a fatal client error): " + "x" * 400}]
    m = _measure(render_report(Summary.from_dict(summary), {"name": "s"}, {"run_id": "r"}, _wide_samples()), tmp_path)
    assert m["banner"] == "PASSED: lost > 0 was expected: 4\u2009841 lost on t-0 (4\u2009841)"
    assert m["page"] <= 1400 and m["wide"] == [] and m["scroll"] <= m["page"], m
