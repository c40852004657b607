#!/usr/bin/env bash
# Sets up everything on a fresh Debian machine (run as root): system packages,
# the Docker engine (installed and started if absent), the virtual environment
# with the Python dependencies, and every image the harness runs. Re-running it
# is cheap: each step is skipped when already done (images are cached by hash).
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "[setup $(date +%H:%M:%S)] $*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: run as root (it installs packages, starts dockerd and mounts tmpfs log dirs)" >&2
  exit 2
fi

missing=()
command -v dockerd >/dev/null     || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v iptables >/dev/null    || missing+=(iptables)
command -v mvn >/dev/null         || missing+=(maven)
command -v java >/dev/null        || missing+=(openjdk-17-jre-headless)
command -v javac >/dev/null       || missing+=(openjdk-17-jdk-headless)   # the Java txn producer
command -v go >/dev/null          || missing+=(golang-go)
command -v chromium >/dev/null    || missing+=(chromium)    # the report's layout test
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

if ! docker info >/dev/null 2>&1; then
  log "starting the Docker engine (log: /var/log/dockerd.log)"
  setsid nohup dockerd >/var/log/dockerd.log 2>&1 < /dev/null &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  if ! docker info >/dev/null 2>&1; then
    echo "setup: dockerd did not start; last lines of /var/log/dockerd.log:" >&2
    tail -20 /var/log/dockerd.log >&2
    exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  python3 -m venv .venv
fi
log "installing Python dependencies"
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[dev,bench]'
# The class archive and the images are independent: the archive is the JVM's work on
# the CPU, the images mostly Docker's downloads and writes, so they run side by side.
# Spark's JVM then maps its classes ready-made: the warm Spark Connect server pays for
# starting only once (spark_reports/connect_server.py), and a `--spark-mode local` verify
# each time (~10 s off a 1 M-record verify).
log "writing the Spark driver's class archive (first time: about 2 min; cached afterwards; log: /tmp/harness-class-archive.log)"
.venv/bin/python -m verifiers.class_archive >/tmp/harness-class-archive.log 2>&1 &
archive=$!

log "building images (first time: a few minutes; cached afterwards)"
images_rc=0
.venv/bin/harness images build || images_rc=$?
archive_rc=0
wait "$archive" || archive_rc=$?
if [ "$archive_rc" -ne 0 ]; then
  echo "setup: the class archive failed (exit $archive_rc); last lines of /tmp/harness-class-archive.log:" >&2
  tail -20 /tmp/harness-class-archive.log >&2
fi
[ "$images_rc" -eq 0 ] || exit "$images_rc"
[ "$archive_rc" -eq 0 ] || exit "$archive_rc"
.venv/bin/harness gc
.venv/bin/harness doctor
log "ready: .venv/bin/harness is the CLI"
