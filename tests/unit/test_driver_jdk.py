"""Which JDK the Spark driver runs on (spark_reports/driver_jdk.py)."""
from __future__ import annotations

import os

import pytest

from spark_reports import driver_jdk as dj


def _jdk(root, name: str, version: str) -> str:
    home = root / name
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("#!/bin/sh\n")
    (home / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION="{version}"\n')
    return str(home)


@pytest.fixture
def fresh(monkeypatch):
    for var in ("HARNESS_SPARK_JAVA_HOME", "JAVA_HOME"):
        monkeypatch.delenv(var, raising=False)
    dj.driver_jdk.cache_clear()
    yield
    dj.driver_jdk.cache_clear()


def test_the_newest_supported_jdk_25_is_chosen(tmp_path, monkeypatch, fresh):
    _jdk(tmp_path, "jdk-17", "17.0.15")
    _jdk(tmp_path, "jdk-25.0.2", "25.0.2")       # before 25.0.3: deprecated by Spark
    best = _jdk(tmp_path, "jdk-25.0.4", "25.0.4")
    _jdk(tmp_path, "jdk-25.0.3", "25.0.3")
    _jdk(tmp_path, "jdk-26", "26")               # not supported by Spark 4.3
    (tmp_path / "not-a-jdk").mkdir()
    monkeypatch.setattr(dj, "JVM_DIRS", (str(tmp_path),))
    jdk = dj.driver_jdk()
    assert (jdk.home, jdk.version, jdk.aot_cache) == (best, (25, 0, 4), True)
    assert dj.prepare_env().home == best and os.environ["JAVA_HOME"] == best


def test_a_java_home_the_user_set_is_kept(tmp_path, monkeypatch, fresh):
    _jdk(tmp_path, "jdk-25", "25.0.3")
    mine = _jdk(tmp_path / "mine", "jdk-17", "17.0.15")
    monkeypatch.setattr(dj, "JVM_DIRS", (str(tmp_path),))
    monkeypatch.setenv("JAVA_HOME", mine)
    jdk = dj.driver_jdk()
    assert (jdk.home, jdk.chosen_by, jdk.aot_cache) == (mine, "JAVA_HOME", False)
    dj.driver_jdk.cache_clear()
    monkeypatch.setenv("HARNESS_SPARK_JAVA_HOME", str(tmp_path / "jdk-25"))
    assert dj.driver_jdk().version == (25, 0, 3)


def test_without_a_jdk_25_the_driver_runs_on_java_from_path(tmp_path, monkeypatch, fresh):
    _jdk(tmp_path, "jdk-21", "21.0.5")
    monkeypatch.setattr(dj, "JVM_DIRS", (str(tmp_path),))
    monkeypatch.setattr(dj, "_home_of_path_java", lambda: None)
    jdk = dj.driver_jdk()
    assert (jdk.home, jdk.java, jdk.aot_cache) == (None, "java", False)
    dj.prepare_env()
    assert "JAVA_HOME" not in os.environ
