"""`harness doctor`: what is missing for a run, and how to fix each thing."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from clusters import images
from clusters.docker_env import docker_client
from clusters.versions import default_versions
from core.errors import DockerUnavailable
from spark_reports import class_cache
from spark_reports.driver_jdk import driver_jdk

SETUP = "run the README's set-up command (bash scripts/setup.sh)"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _cmd_version(cmd: list[str]) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout + r.stderr).strip().splitlines()
    return out[0] if out else cmd[0]


def check_tool(name: str, cmd: list[str], fix: str) -> Check:
    version = _cmd_version(cmd)
    return Check(name, version is not None, version or "not found", fix)


def check_docker() -> Check:
    try:
        v = docker_client().version()
        return Check("docker engine", True, f"engine {v.get('Version')} (API {v.get('ApiVersion')})")
    except DockerUnavailable as e:
        return Check("docker engine", False, str(e).split(" (fix")[0],
                     f"{SETUP}, or as root: dockerd > /var/log/dockerd.log 2>&1 &")


def check_images() -> list[Check]:
    checks = []
    wanted = [("base image", images.base_image_tag())]
    # other versions are built on first use
    wanted += [(f"Kafka {kv.version} image", images.kafka_image_tag(kv)) for kv in default_versions()]
    wanted.append(("toxiproxy image", images.toxiproxy_image_tag()))
    for name, tag in wanted:
        try:
            present = images._image_exists(tag)
        except Exception:
            present = False
        checks.append(Check(name, present, tag if present else f"{tag} not built",
                            ".venv/bin/harness images build"))
    return checks


def check_python() -> list[Check]:
    checks = []
    for mod, why in (("pyspark", "reconciler"), ("grpc", "the reconciler's Spark Connect client"),
                     ("confluent_kafka", "workloads"),
                     ("testcontainers", "clusters"), ("pyarrow", "history")):
        try:
            m = __import__(mod)
            checks.append(Check(f"python {mod}", True, getattr(m, "__version__", "installed")))
        except ImportError:
            checks.append(Check(f"python {mod}", False, f"missing ({why})",
                                ".venv/bin/pip install -e '.[dev]'"))
    return checks


def check_spark_driver() -> Check:
    """The Spark driver's JDK (spark_reports/driver_jdk.py) and whether its class
    archive is written (an optimisation: verify works without it)."""
    try:
        jdk = driver_jdk()
        kind = "AOT cache" if jdk.aot_cache else "class archive"
        if not class_cache.enabled():
            state = f"{kind} turned off (HARNESS_SPARK_CDS=0)"
        else:
            state = f"{kind} {'written' if class_cache.archive_path().is_file() else 'not written'}"
    except ImportError:
        return Check("spark driver JDK", False, "pyspark missing", ".venv/bin/pip install -e '.[dev]'")
    ok = jdk.home is not None or shutil.which("java") is not None
    return Check("spark driver JDK", ok, f"{jdk.describe()}; {state}",
                 "apt-get install -y openjdk-17-jre-headless, or set HARNESS_SPARK_JAVA_HOME")


def all_checks() -> list[Check]:
    checks = [
        check_tool("java", ["java", "-version"], "apt-get install -y openjdk-17-jre-headless"),
        check_tool("maven", ["mvn", "-v"], "apt-get install -y maven"),
        check_tool("javac", ["javac", "-version"], "apt-get install -y openjdk-17-jdk-headless "
                   "(it compiles the Java transactional producer, client: java)"),
        check_tool("go", ["go", "version"], "install Go (it builds the toxiproxy server)"),
        check_tool("debootstrap", ["debootstrap", "--version"], "apt-get install -y debootstrap"),
        Check("root", os.geteuid() == 0, f"uid {os.geteuid()}",
              "run as root: log dirs are tmpfs mounts and debootstrap needs root"),
        *check_python(),
        check_spark_driver(),
    ]
    docker = check_docker()
    checks.append(docker)
    if docker.ok:
        checks.extend(check_images())
    return checks


def run_doctor(verbose: bool = False, checks: Callable[[], list[Check]] = all_checks) -> int:
    results = checks()
    for c in results:
        mark = "ok " if c.ok else "MISSING"
        line = f"[{mark:>7}] {c.name}: {c.detail}"
        if not c.ok and c.fix:
            line += f"\n          fix: {c.fix}"
        if verbose or not c.ok:
            print(line)
    missing = [c for c in results if not c.ok]
    print(f"ready ({len(results)} checks)" if not missing else f"{len(missing)} thing(s) missing")
    return 0 if not missing else 1
