"""KeyCounts.java, the Java pipeline processor's counts and their undo, compiled and run
with the host's JDK: an aborted batch puts back exactly the counts it changed."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from workloads.java_pipeline import KEY_COUNTS

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK (javac)")

DRIVER = """
public class KeyCountsDriver {
    static void show(String what, KeyCounts c, int p, String... keys) {
        StringBuilder b = new StringBuilder(what);
        for (String k : keys) b.append(' ').append(k).append('=').append(c.get(p, k));
        System.out.println(b);
    }

    public static void main(String[] args) {
        KeyCounts c = new KeyCounts();
        // a batch whose keys are new, each seen twice (the CI rehearsal's k3/k4), aborted
        c.beginBatch();
        for (String k : new String[] {"k3", "k4", "k3", "k4"}) c.increment(2, k);
        show("counted", c, 2, "k3", "k4");
        c.rewind();
        show("aborted", c, 2, "k3", "k4");
        System.out.println("again k3=" + c.increment(2, "k3"));
        // a committed batch, then one that counts the same key on and is aborted
        c.beginBatch();
        c.increment(2, "k4");
        c.increment(2, "k4");
        c.beginBatch();
        c.increment(2, "k4");
        c.increment(2, "k4");
        c.increment(2, "k9");
        c.rewind();
        show("kept", c, 2, "k3", "k4", "k9");
        // a partition revoked between the batch and its abort stays gone
        c.beginBatch();
        c.increment(1, "k1");
        c.forget(1);
        c.rewind();
        show("revoked", c, 1, "k1");
        // a restore replaces a partition's counts; a later abort does not touch them
        c.beginBatch();
        c.increment(0, "k0");
        c.replace(0, new java.util.HashMap<>(java.util.Map.of("k0", 7L)));
        c.rewind();
        show("restored", c, 0, "k0");
    }
}
"""


def test_an_aborted_batch_puts_back_exactly_the_counts_it_changed(tmp_path):
    (tmp_path / "KeyCountsDriver.java").write_text(DRIVER)
    subprocess.run(["javac", "-d", str(tmp_path), str(KEY_COUNTS), str(tmp_path / "KeyCountsDriver.java")],
                   check=True, capture_output=True, text=True, timeout=120)
    out = subprocess.run(["java", "-cp", str(tmp_path), "KeyCountsDriver"], check=True,
                         capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert out == [
        "counted k3=2 k4=2",
        "aborted k3=null k4=null",        # was k3=1 k4=1 with the putIfAbsent undo
        "again k3=1",
        "kept k3=1 k4=2 k9=null",
        "revoked k1=null",
        "restored k0=7",
    ]
