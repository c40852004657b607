"""MirrorMaker 2's jars: the Kafka image holds the broker's jars (kafka_2.13, tools,
storage, server) but not Kafka Connect's, so connect-mirror and its runtime closure
(connect-runtime, connect-json, jetty, jersey …) of one Kafka version come from Maven
Central, resolved by a small pom as clusters/images.kafka_streams_jars resolves Kafka
Streams', cached under the harness cache, and bind-mounted read-only into the MM2
container. kafka-clients is kept (not excluded as for Streams): the MM2 container's
class path is this directory alone, so one version of every jar is on it, whatever
the image holds beside."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from clusters.cache import built_in_place, cache_dir
from core.errors import HarnessError

MIRROR_POM = """<?xml version="1.0" encoding="UTF-8"?>
<!-- Resolves MirrorMaker 2 (connect-mirror) and its runtime jars of one Kafka version (families/mirror/jars.py). -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>harness</groupId>
  <artifactId>kafka-mirror-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-mirror</artifactId><version>@VERSION@</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-runtime</artifactId><version>@VERSION@</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-json</artifactId><version>@VERSION@</version></dependency>
@LOGGING@
  </dependencies>
</project>
"""
# a logging binding, which connect-runtime declares none of: without one MM2 logs
# nothing. 3.x: reload4j (it brings reload4j itself) with log4j 1 configuration; 4.x:
# log4j 2, as the broker image has it
_DEP = "    <dependency><groupId>{}</groupId><artifactId>{}</artifactId><version>{}</version></dependency>"
LOG_BINDING = {3: _DEP.format("org.slf4j", "slf4j-reload4j", "1.7.36"),
               4: _DEP.format("org.apache.logging.log4j", "log4j-slf4j-impl", "2.25.4")}


def mirror_jars(version: str) -> Path:
    """connect-mirror's runtime jars of one exact Kafka version (cached); made whole in a
    directory of its own, then renamed, so a run beside us never sees half of one."""
    out = cache_dir() / "mirror-jars" / version
    if (out / ".complete").exists():
        return out / "libs"
    if shutil.which("mvn") is None:
        raise HarnessError("Maven is not installed (fix: apt-get install -y maven)")
    logging = LOG_BINDING[min(4, int(version.split(".")[0]))]
    with built_in_place(out, f"{version}-") as build:
        (build / "pom.xml").write_text(MIRROR_POM.replace("@VERSION@", version)
                                       .replace("@LOGGING@", logging))
        r = subprocess.run(["mvn", "-q", "-B", "-f", str(build / "pom.xml"),
                            "dependency:copy-dependencies", f"-DoutputDirectory={build / 'libs'}",
                            "-DincludeScope=runtime"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            tail = "\n".join(r.stdout.splitlines()[-25:])
            raise HarnessError(f"Maven could not resolve MirrorMaker 2 {version}'s jars "
                               f"(exit {r.returncode}):\n{tail}")
        (build / "libs").chmod(0o755)
        (build / ".complete").touch()
    return out / "libs"
