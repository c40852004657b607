"""Version resolution: lines to their newest patch, exact patches, the Maven list and
its offline fallbacks, and the refusals (exit 2 naming the version and what is known)."""
import os
import subprocess
import sys

import pytest

from clusters import versions
from clusters.versions import LINES, ReleaseLine, parse_metadata, resolve_version
from core.errors import SpecError

HARNESS = [sys.executable, "-m", "harness.cli"]
XML = """<metadata><versioning><versions><version>3.9.2</version><version>4.1.0</version>
<version>4.1.1</version><version>4.1.3</version><version>4.4.0</version><version>4.2.0-rc1</version>
</versions></versioning></metadata>"""


@pytest.fixture
def maven(monkeypatch, tmp_path):
    """Resolution against a stand-in Maven list, with an empty cache."""
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    monkeypatch.delenv("HARNESS_KAFKA_VERSIONS", raising=False)
    versions.served_versions.cache_clear()
    versions.resolve_version.cache_clear()
    yield monkeypatch
    versions.served_versions.cache_clear()
    versions.resolve_version.cache_clear()


@pytest.mark.parametrize("name, exact", [
    ("3.6", "3.6.2"), ("3.7", "3.7.2"), ("3.8", "3.8.1"), ("3.9", "3.9.2"), ("4.0", "4.0.2"),
    ("4.1", "4.1.2"), ("4.2", "4.2.2"), ("4.3", "4.3.1"), ("4", "4.3.1"), ("3", "3.9.2"),
    ("4.1.1", "4.1.1"), ("3.8.0", "3.8.0"),
])
def test_a_line_resolves_to_its_newest_patch_and_an_exact_version_to_itself(name, exact):
    assert resolve_version(name).version == exact


def test_each_line_carries_what_differs():
    assert [r.line for r in LINES] == ["3.6", "3.7", "3.8", "3.9", "4.0", "4.1", "4.2", "4.3"]
    assert resolve_version("3.8").zookeeper and not resolve_version("4.0").zookeeper
    assert "kafka-server" not in resolve_version("3.6").release.modules      # a module from 3.7
    assert resolve_version("4.1.1").extra_jars and not resolve_version("3.9").extra_jars
    assert not resolve_version("4.0").release.elr_default and resolve_version("4.1").release.elr_default
    assert resolve_version("4.0").has(versions.CONSUMER_PROTOCOL)
    assert not resolve_version("3.9").has(versions.CONSUMER_PROTOCOL)
    assert resolve_version("3.9").has(versions.DYNAMIC_QUORUM)
    assert not resolve_version("3.8").has(versions.DYNAMIC_QUORUM)
    assert all(r.metadata_version.startswith(r.line + "-IV") for r in LINES)


@pytest.mark.parametrize("name, said", [
    ("2.8", "its line 2.8 has no row"),
    ("4.4", "its line 4.4 has no row"),
    ("4.1.9", "Maven Central does not serve it (served in 4.1: 4.1.0, 4.1.1, 4.1.2)"),
    ("5", "no 5.x line is known"),
    ("four", "not a version number"),
])
def test_an_unknown_version_names_itself_and_the_known_versions(name, said):
    with pytest.raises(SpecError) as e:
        resolve_version(name)
    assert e.value.field == "version" and said in e.value.problem
    assert "4.1 (4.1.0, 4.1.1, 4.1.2)" in e.value.fix and "pinned table" in e.value.fix


def test_the_maven_list_decides_the_newest_patch_and_is_cached(maven, tmp_path):
    fetched = []
    maven.setattr(versions, "_fetch_metadata", lambda timeout_s=5.0: fetched.append(1) or XML)
    assert resolve_version("4.1").version == "4.1.3"       # newer than the pinned 4.1.2
    assert "fetched now" in versions.versions_source()
    assert parse_metadata(XML) == ["3.9.2", "4.1.0", "4.1.1", "4.1.3", "4.4.0"]
    versions.served_versions.cache_clear()
    versions.resolve_version.cache_clear()
    assert resolve_version("4.1").version == "4.1.3" and len(fetched) == 1
    assert "cached" in versions.versions_source()
    with pytest.raises(SpecError, match="Maven Central serves no 3.8.x"):
        resolve_version("3.8")


def test_offline_with_no_cache_falls_back_to_the_pinned_table(maven):
    def offline(timeout_s=5.0):
        raise OSError("network unreachable")
    maven.setattr(versions, "_fetch_metadata", offline)
    assert resolve_version("4.2").version == "4.2.2"
    assert "pinned table" in versions.versions_source() and "did not answer" in versions.versions_source()


def test_offline_with_a_stale_cache_uses_the_cache(maven, tmp_path):
    (tmp_path / "maven-metadata-kafka_2.13.xml").write_text(XML)
    os.utime(tmp_path / "maven-metadata-kafka_2.13.xml", (0, 0))

    def offline(timeout_s=5.0):
        raise OSError("network unreachable")
    maven.setattr(versions, "_fetch_metadata", offline)
    assert resolve_version("4.1").version == "4.1.3"
    assert "days old" in versions.versions_source()


def test_a_line_row_is_data():
    row = ReleaseLine("9.9", False, "9.9-IV0", ("9.9.0",))
    assert row.modules == ("kafka-tools", "kafka-storage", "kafka-server") and not row.features


def test_the_cli_refuses_an_unserved_version_with_exit_2_before_building(tmp_path):
    proc = subprocess.run([*HARNESS, "images", "build", "--version", "4.1.9"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "4.1.9" in proc.stderr and "4.1 (4.1.0, 4.1.1, 4.1.2)" in proc.stderr
    proc = subprocess.run([*HARNESS, "run", "quick", "--set", "cluster.version=3.5", "--dry-run"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "cluster.version" in proc.stderr and "3.6 and later" in proc.stderr
