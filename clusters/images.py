"""Local image builds: base JRE image, one Kafka image per version, toxiproxy.

Nothing is pulled. The base is a debootstrapped Debian bookworm imported with
`docker import` (or, where a registry answers, `HARNESS_BASE_IMAGE=<image>` to
build on a pullable one). Kafka jars come from Maven Central through a small
pom per version; the toxiproxy server is built with `go install`.

Each image is tagged with a content hash of its inputs, so `ensure_*` is cheap
when nothing changed and rebuilds automatically when an input did. A file lock
keeps two processes (pytest-xdist workers) from building the same image twice.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from clusters.cache import built_in_place, cache_dir
from clusters.docker_env import docker_client
from clusters.versions import (
    JMX_EXPORTER_VERSION,
    TOXIPROXY_MODULE,
    TOXIPROXY_VERSION,
    KafkaVersion,
    all_versions,
    default_versions,
    resolve_version,
    version_key,
)
from core.errors import HarnessError, SpecError

FILES = Path(__file__).parent / "image_files"
DEBIAN_SUITE = "bookworm"
BASE_PACKAGES = ("openjdk-17-jre-headless", "iptables", "iproute2", "procps")
IMAGE_LABEL = "harness.image"


def progress(msg: str) -> None:
    print(f"[images {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _hash(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def _file(name: str) -> bytes:
    return (FILES / name).read_bytes()


# ---- tags (pure: computing them never touches Docker) --------------------------

def base_image_tag() -> str:
    pullable = os.environ.get("HARNESS_BASE_IMAGE", "")
    # HARNESS_IMAGE_SALT gives a separate set of tags (the cold-build benchmark uses it).
    salt = os.environ.get("HARNESS_IMAGE_SALT", "")
    return "harness-base:" + _hash("base", DEBIAN_SUITE, *BASE_PACKAGES, pullable,
                                   *([salt] if salt else []))


def kafka_image_tag(version: str | KafkaVersion) -> str:
    kv = version if isinstance(version, KafkaVersion) else resolve_version(version)
    files = [_file(n) for n in ("Dockerfile.kafka", "entrypoint.sh", "jmx.yaml",
                                "log4j.properties", "log4j2.yaml", "kafka-pom.xml")]
    return f"harness-kafka:{kv.version}-" + _hash(base_image_tag(), kv.version, *kv.extra_jars,
                                                  *kv.release.modules, JMX_EXPORTER_VERSION, *files)


def toxiproxy_image_tag() -> str:
    return "harness-toxiproxy:" + _hash(base_image_tag(), TOXIPROXY_VERSION,
                                        _file("Dockerfile.toxiproxy"))


# ---- helpers ----------------------------------------------------------------------

@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
    with open(cache_dir() / "build.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _image_exists(tag: str) -> bool:
    # docker-py: only when an image is looked up (docker_env says why)
    import docker.errors
    try:
        docker_client().images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _run(cmd: list[str], what: str, **kw) -> None:
    progress(f"{what}: {' '.join(cmd[:4])} …")
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        tail = "\n".join(r.stdout.splitlines()[-25:])
        raise HarnessError(f"{what} failed (exit {r.returncode}):\n{tail}")


def _docker_build(context: Path, tag: str, kind: str, content_hash: str) -> None:
    client = docker_client()
    started = time.monotonic()
    for chunk in client.api.build(path=str(context), tag=tag, rm=True, forcerm=True,
                                  decode=True, labels={IMAGE_LABEL: kind,
                                                       "harness.content-hash": content_hash}):
        if "error" in chunk:
            raise HarnessError(f"docker build of {tag} failed: {chunk['error'].strip()}")
        line = chunk.get("stream", "").strip()
        if line.startswith("Step "):
            progress(f"{tag}: {line}")
    progress(f"built {tag} in {time.monotonic() - started:.0f} s")


def _render_dockerfile(name: str, **values: str) -> str:
    text = _file(name).decode()
    for k, v in values.items():
        text = text.replace("{" + k + "}", v)
    return text


# ---- base -------------------------------------------------------------------------

def ensure_base_image(force: bool = False) -> str:
    tag = base_image_tag()
    if not force and _image_exists(tag):
        return tag
    pullable = os.environ.get("HARNESS_BASE_IMAGE")
    if pullable:
        with tempfile.TemporaryDirectory() as ctx:
            Path(ctx, "Dockerfile").write_text(
                f"FROM {pullable}\nRUN apt-get update && DEBIAN_FRONTEND=noninteractive "
                f"apt-get install -y --no-install-recommends {' '.join(BASE_PACKAGES)} "
                "&& rm -rf /var/lib/apt/lists/*\n")
            _docker_build(Path(ctx), tag, "base", tag.split(":")[1])
        return tag
    if shutil.which("debootstrap") is None:
        raise HarnessError("debootstrap is not installed (fix: apt-get install -y debootstrap, "
                           "or run the README's set-up command)")
    if os.geteuid() != 0:
        raise HarnessError("building the base image needs root for debootstrap "
                           "(fix: run `harness images build` as root once)")
    rootfs = cache_dir() / "rootfs-build"
    shutil.rmtree(rootfs, ignore_errors=True)
    try:
        progress(f"debootstrap {DEBIAN_SUITE} with {', '.join(BASE_PACKAGES)} (about a minute)")
        _run(["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
              DEBIAN_SUITE, str(rootfs)], "debootstrap")
        # Drop the apt caches: they only make the image bigger.
        for sub in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (rootfs / sub).glob("*"):
                if p.is_file():
                    p.unlink()
        progress(f"importing {tag}")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(
            ["docker", "import",
             "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "--change", "ENV LANG=C.UTF-8",
             "--change", f"LABEL {IMAGE_LABEL}=base",
             "--change", 'CMD ["/bin/bash"]', "-", tag],
            stdin=tar.stdout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        tar.wait()
        if imp.returncode != 0 or tar.returncode != 0:
            raise HarnessError(f"docker import of the base image failed: {imp.stdout.strip()}")
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
    return tag


# ---- Kafka --------------------------------------------------------------------------

def kafka_jars(kv: KafkaVersion) -> Path:
    """The runtime jars of one Kafka version, resolved by Maven (cached)."""
    out = cache_dir() / "jars" / kv.version
    done = out / ".complete"
    if done.exists():
        return out / "libs"
    if shutil.which("mvn") is None:
        raise HarnessError("Maven is not installed (fix: apt-get install -y maven)")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    coords = [f"org.apache.kafka:{m}:{kv.version}" for m in kv.release.modules] + list(kv.extra_jars)
    extra = "\n".join(
        "    <dependency><groupId>{}</groupId><artifactId>{}</artifactId><version>{}</version>"
        "</dependency>".format(*coord.split(":")) for coord in coords)
    pom = (_file("kafka-pom.xml").decode().replace("@VERSION@", kv.version)
           .replace("@JMX_EXPORTER@", JMX_EXPORTER_VERSION).replace("@EXTRA@", extra))
    (out / "pom.xml").write_text(pom)
    _run(["mvn", "-q", "-B", "-f", str(out / "pom.xml"), "dependency:copy-dependencies",
          f"-DoutputDirectory={out / 'libs'}", "-DincludeScope=runtime"],
         f"Maven: Kafka {kv.version} jars")
    done.touch()
    return out / "libs"


STREAMS_POM = """<?xml version="1.0" encoding="UTF-8"?>
<!-- Resolves Kafka Streams and its runtime jars (rocksdbjni …) of one Kafka version (clusters/images.py). -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>harness</groupId>
  <artifactId>kafka-streams-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-streams</artifactId><version>@VERSION@</version></dependency>
  </dependencies>
</project>
"""


def kafka_streams_jars(version: str) -> Path:
    """Kafka Streams' jars of one Kafka version and their runtime dependencies (rocksdbjni
    …), resolved by Maven from Maven Central and cached; kafka-clients is left out (the
    Kafka image of that version has it). Made whole in a directory of its own, then
    renamed, so a run beside us never sees half of one."""
    out = cache_dir() / "streams-jars" / version
    if (out / ".complete").exists():
        return out / "libs"
    if shutil.which("mvn") is None:
        raise HarnessError("Maven is not installed (fix: apt-get install -y maven)")
    with built_in_place(out, f"{version}-") as build:
        (build / "pom.xml").write_text(STREAMS_POM.replace("@VERSION@", version))
        _run(["mvn", "-q", "-B", "-f", str(build / "pom.xml"), "dependency:copy-dependencies",
              f"-DoutputDirectory={build / 'libs'}", "-DincludeScope=runtime",
              "-DexcludeArtifactIds=kafka-clients"], f"Maven: Kafka Streams {version} jars")
        (build / "libs").chmod(0o755)
        (build / ".complete").touch()
    return out / "libs"


def ensure_kafka_image(version: str | KafkaVersion, force: bool = False) -> str:
    kv = version if isinstance(version, KafkaVersion) else resolve_version(version)
    tag = kafka_image_tag(kv)
    if not force and _image_exists(tag):
        return tag
    started = time.monotonic()
    progress(f"Kafka {kv.version} has no image yet: building {tag} (first use of this version: "
             "its jars from Maven Central, then a docker build; cached afterwards)")
    base = ensure_base_image()
    libs = kafka_jars(kv)
    with tempfile.TemporaryDirectory(dir=cache_dir()) as ctx_dir:
        ctx = Path(ctx_dir)
        (ctx / "libs").mkdir()
        for jar in libs.glob("*.jar"):
            target = ctx / ("jmx_prometheus_javaagent.jar" if jar.name.startswith(
                "jmx_prometheus_javaagent") else f"libs/{jar.name}")
            os.link(jar, target)
        for name in ("entrypoint.sh", "jmx.yaml", "log4j.properties", "log4j2.yaml"):
            shutil.copy(FILES / name, ctx / name)
        h = tag.rsplit("-", 1)[1]
        labels = (f'LABEL {IMAGE_LABEL}="kafka" harness.kafka-version="{kv.version}" '
                  f'harness.content-hash="{h}"')
        (ctx / "Dockerfile").write_text(_render_dockerfile(
            "Dockerfile.kafka", base=base, version=kv.version, labels=labels))
        _docker_build(ctx, tag, "kafka", h)
    progress(f"Kafka {kv.version} image ready in {time.monotonic() - started:.0f} s")
    return tag


# ---- toxiproxy ----------------------------------------------------------------------

def toxiproxy_binary() -> Path:
    out = cache_dir() / "toxiproxy" / TOXIPROXY_VERSION
    binary = out / "toxiproxy-server"
    if binary.exists():
        return binary
    if shutil.which("go") is None:
        raise HarnessError("Go is not installed; it builds the toxiproxy server "
                           "(fix: apt-get install -y golang, or install Go from go.dev)")
    out.mkdir(parents=True, exist_ok=True)
    gobin = out / "bin"
    env = {**os.environ, "GOBIN": str(gobin), "CGO_ENABLED": "0"}
    _run(["go", "install", f"{TOXIPROXY_MODULE}/cmd/server@{TOXIPROXY_VERSION}"],
         "go install toxiproxy server", env=env)
    (gobin / "server").rename(binary)
    return binary


def ensure_toxiproxy_image(force: bool = False) -> str:
    tag = toxiproxy_image_tag()
    if not force and _image_exists(tag):
        return tag
    base = ensure_base_image()
    binary = toxiproxy_binary()
    with tempfile.TemporaryDirectory(dir=cache_dir()) as ctx_dir:
        ctx = Path(ctx_dir)
        shutil.copy(binary, ctx / "toxiproxy-server")
        h = tag.split(":")[1]
        labels = f'LABEL {IMAGE_LABEL}="toxiproxy" harness.content-hash="{h}"'
        (ctx / "Dockerfile").write_text(_render_dockerfile("Dockerfile.toxiproxy",
                                                           base=base, labels=labels))
        _docker_build(ctx, tag, "toxiproxy", h)
    return tag


# ---- entry points ---------------------------------------------------------------------

def ensure_images(versions: list[str] | None = None, toxiproxy: bool = False,
                  force: bool = False) -> dict[str, str]:
    """Build what is missing (under a lock); return {what: tag}."""
    wanted = [resolve_version(v) for v in versions] if versions else default_versions()  # refuse bad input first
    built = None if force else _all_built(wanted, toxiproxy)
    if built is not None:
        return built
    with _build_lock():
        tags = {"base": _base_while_fetching(wanted, toxiproxy, force)}
        for kv in wanted:
            tags[f"kafka-{kv.version}"] = ensure_kafka_image(kv, force=force)
        if toxiproxy:
            tags["toxiproxy"] = ensure_toxiproxy_image(force=force)
    return tags


def _base_while_fetching(wanted: list[KafkaVersion], toxiproxy: bool, force: bool) -> str:
    """The base image. When it is to be built (a fresh machine: debootstrap, a minute or
    more), what the other images need and the base does not is fetched meanwhile: the
    jars of each Kafka image to build (Maven Central; one Maven at a time, they share
    ~/.m2) and the toxiproxy binary (Go module proxy). Measured on a fresh set-up,
    benchmarks/RESULTS.md (issue 37)."""
    if not force and _image_exists(base_image_tag()):
        return base_image_tag()
    versions = [kv for kv in wanted if force or not _image_exists(kafka_image_tag(kv))]
    with ThreadPoolExecutor(max_workers=2) as pool:
        jars = pool.submit(lambda: [kafka_jars(kv) for kv in versions])
        binary = pool.submit(toxiproxy_binary) if toxiproxy and (
            force or not _image_exists(toxiproxy_image_tag())) else None
        base = ensure_base_image(force=force)
        jars.result()                   # raises what a fetch raised
        if binary is not None:
            binary.result()
    return base


def _all_built(wanted: list[KafkaVersion], toxiproxy: bool) -> dict[str, str] | None:
    """{what: tag} when every wanted image exists, else None; without the build lock. A
    tag names its inputs' hash and Docker tags an image only once its build succeeded,
    so an existing tag is complete: a cluster start need not queue behind another
    process's build of some other image (minutes: a first build, CI's workers)."""
    tags = {"base": base_image_tag(), **{f"kafka-{kv.version}": kafka_image_tag(kv) for kv in wanted}}
    if toxiproxy:
        tags["toxiproxy"] = toxiproxy_image_tag()
    return tags if all(_image_exists(tag) for tag in tags.values()) else None


def build_all(force: bool = False, versions: list[str] | None = None) -> dict[str, str]:
    """`harness images build`: the default versions, the ones named (`all`: every line)."""
    started = time.monotonic()
    if versions and "all" in versions:
        versions = [kv.version for kv in all_versions()]
    tags = ensure_images(versions, toxiproxy=True, force=force)
    for what, tag in tags.items():
        print(f"{what:>16}  {tag}")
    progress(f"all images ready in {time.monotonic() - started:.0f} s")
    return tags


# ---- harness images list ----------------------------------------------------------------

def list_images() -> list[dict]:
    """Every image the harness built: what, Kafka version, tag, size, age, in use now."""
    client = docker_client()
    current = {base_image_tag(), toxiproxy_image_tag()}
    rows = []
    for image in client.images.list(filters={"label": IMAGE_LABEL}):
        labels = image.labels or {}
        version = labels.get("harness.kafka-version", "")
        if version:
            current.add(_current_kafka_tag(version))
        for tag in image.tags or ["<untagged>"]:
            rows.append({"kind": labels.get(IMAGE_LABEL, "?"), "kafka_version": version,
                         "tag": tag, "size_mb": round(image.attrs.get("Size", 0) / 2**20),
                         "age_s": _age_s(image.attrs.get("Created", "")), "current": tag in current})
    return sorted(rows, key=lambda r: (r["kind"], version_key(r["kafka_version"] or "0"), r["tag"]))


def _current_kafka_tag(version: str) -> str:
    """The tag this checkout would build for a version ('' for one it no longer knows)."""
    try:
        return kafka_image_tag(version)
    except SpecError:
        return ""


def _age_s(created: str) -> float | None:
    try:
        when = datetime.fromisoformat(created[:26].rstrip("Z") + "+00:00")
    except ValueError:
        return None
    return (datetime.now(UTC) - when).total_seconds()


def _age_text(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def images_table(rows: list[dict]) -> str:
    lines = [f"{'kind':<10} {'version':<8} {'size':>8} {'age':>7}  tag"]
    for r in rows:
        stale = "" if r["current"] else "  (stale: inputs changed)"
        lines.append(f"{r['kind']:<10} {r['kafka_version'] or '-':<8} {r['size_mb']:>5} MB "
                     f"{_age_text(r['age_s']):>7}  {r['tag']}{stale}")
    return "\n".join(lines)


# ---- python -m clusters.images -----------------------------------------------------------

def main() -> int:
    """`python -m clusters.images`: `harness images build` for the default versions,
    with nothing but docker-py installed, so that scripts/setup.sh builds the images
    while pip installs the rest (the harness CLI needs all of it)."""
    try:
        build_all()
    except HarnessError as e:
        print(f"harness images: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
