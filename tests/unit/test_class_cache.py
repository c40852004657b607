"""The Spark driver's class archive: where it lives, and when sessions use it."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from spark_reports import class_cache  # noqa: E402
from spark_reports.driver_jdk import driver_jdk  # noqa: E402


def test_the_archive_is_keyed_and_moves_with_the_cache(tmp_path, monkeypatch):
    import pyspark
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    path = class_cache.archive_path()
    assert path.parent == tmp_path
    assert path.name.startswith(f"spark-driver-{pyspark.__version__}-")
    # a JDK 25 maps an AOT cache, older JDKs a dynamic CDS archive
    assert path.suffix == (".aot" if driver_jdk().aot_cache else ".jsa")
    monkeypatch.setattr(class_cache, "_spark_home", lambda: "/elsewhere/pyspark")
    class_cache._identity.cache_clear()
    assert class_cache.archive_path() != path      # other jars: another archive
    class_cache._identity.cache_clear()


def test_spark_installed_again_at_the_same_path_gets_another_archive(tmp_path, monkeypatch):
    """A .venv made again where the last one was (CI's clone in the same folder): the old
    archive's jar times no longer match, the JVM would refuse it without a word."""
    import os
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    home = tmp_path / "pyspark"
    (home / "jars").mkdir(parents=True)
    os.utime(home / "jars", ns=(1_000_000_000, 1_000_000_000))
    monkeypatch.setattr(class_cache, "_spark_home", lambda: str(home))
    class_cache._identity.cache_clear()
    before = class_cache.archive_path()
    (home / "jars").rmdir()
    (home / "jars").mkdir()
    os.utime(home / "jars", ns=(2_000_000_000, 2_000_000_000))
    class_cache._identity.cache_clear()
    assert class_cache.archive_path() != before
    class_cache._identity.cache_clear()


def test_sessions_use_an_archive_only_when_there_is_one(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    monkeypatch.delenv("HARNESS_SPARK_CDS", raising=False)
    assert class_cache.java_options() == ""
    class_cache.archive_path().write_bytes(b"")
    opts = class_cache.java_options()
    if driver_jdk().aot_cache:
        assert f"-XX:AOTCache={class_cache.archive_path()}" in opts
        assert "-Xlog:aot=off" in opts              # an unusable cache stays silent
        assert "-XX:AOTCacheOutput=" in class_cache.dump_options(tmp_path / "x.aot")
    else:
        assert f"-XX:SharedArchiveFile={class_cache.archive_path()}" in opts
        assert "-Xlog:cds=off" in opts              # an unusable archive stays silent
        assert "-XX:ArchiveClassesAtExit=" in class_cache.dump_options(tmp_path / "x.jsa")
    monkeypatch.setenv("HARNESS_SPARK_CDS", "0")
    assert class_cache.java_options() == ""
    assert class_cache.build() is None


def test_archives_of_spark_installations_that_are_gone_are_pruned(tmp_path):
    import json
    kept, gone = tmp_path / "spark-driver-4-a.jsa", tmp_path / "spark-driver-4-b.jsa"
    for archive, home in ((kept, tmp_path), (gone, tmp_path / "deleted-venv")):
        archive.write_bytes(b"x")
        (tmp_path / f"{archive.name}.json").write_text(json.dumps({"spark_home": str(home)}))
    class_cache._prune(tmp_path)
    assert kept.exists() and (tmp_path / f"{kept.name}.json").exists()
    assert not gone.exists() and not (tmp_path / f"{gone.name}.json").exists()
