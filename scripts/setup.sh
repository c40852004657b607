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

missing=()      # what set-up itself needs
command -v dockerd >/dev/null     || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v iptables >/dev/null    || missing+=(iptables)
command -v mvn >/dev/null         || missing+=(maven)
command -v java >/dev/null        || missing+=(openjdk-17-jre-headless)
command -v javac >/dev/null       || missing+=(openjdk-17-jdk-headless)   # the Java txn producer
command -v go >/dev/null          || missing+=(golang-go)
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
for_tests=()    # only the tests need these: installed while pip and the images run
command -v chromium >/dev/null    || for_tests+=(chromium)    # the report's layout test
if [ $((${#missing[@]} + ${#for_tests[@]})) -gt 0 ]; then
  apt-get update -q
fi
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi
apt_log=/var/log/harness-setup-apt.log
tests_apt=""
if [ ${#for_tests[@]} -gt 0 ]; then
  log "installing ${for_tests[*]} beside the rest (log: $apt_log)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${for_tests[@]}" >"$apt_log" 2>&1 &
  tests_apt=$!
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
# The images need only docker-py: with it installed first, they are built (debootstrap,
# Maven Central, the Go module proxy, docker builds) while pip installs the rest.
# pip is skipped when .venv was made from this pyproject.toml already (the re-run).
stamp=".venv/.setup-$(sha256sum pyproject.toml | cut -c1-16)"
[ -e "$stamp" ] || .venv/bin/pip install -q --upgrade pip 'docker>=7.1'
log "building images beside pip (first time: a few minutes; cached afterwards)"
PYTHONPATH="$PWD" .venv/bin/python -m clusters.images &
images=$!
pip_rc=0
if [ ! -e "$stamp" ]; then
  log "installing Python dependencies"
  .venv/bin/pip install -q -e '.[dev,bench]' || pip_rc=$?
  [ "$pip_rc" -ne 0 ] || { rm -f .venv/.setup-*; touch "$stamp"; }
fi
# reaps what runs left behind (containers, networks, mounts: never an image build's)
gc_rc=0
[ "$pip_rc" -ne 0 ] || .venv/bin/harness gc || gc_rc=$?
images_rc=0
wait "$images" || images_rc=$?
[ "$gc_rc" -eq 0 ] || { echo "setup: harness gc failed (exit $gc_rc; its errors are above)" >&2; exit "$gc_rc"; }
[ "$pip_rc" -eq 0 ] || { echo "setup: pip install failed (exit $pip_rc; its errors are above)" >&2; exit "$pip_rc"; }
[ "$images_rc" -eq 0 ] || { echo "setup: the image build failed (exit $images_rc; its errors are above)" >&2; exit "$images_rc"; }
# The Spark driver's class archive (spark_reports/class_cache.py) is not written here:
# the warm Spark Connect server starts once per idle period, and the archive took
# 84 s of a fresh set-up. `python -m verifiers.class_archive` writes it (for
# `--spark-mode local` verifies); what it saves: benchmarks/RESULTS.md, issue 37.
if [ "${HARNESS_SETUP_CLASS_ARCHIVE:-0}" = 1 ]; then
  log "writing the Spark driver's class archive (about 2 min the first time; cached afterwards)"
  .venv/bin/python -m verifiers.class_archive
fi
if [ -n "$tests_apt" ]; then
  rc=0
  wait "$tests_apt" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "setup: apt-get install ${for_tests[*]} failed (exit $rc); last lines of $apt_log:" >&2
    tail -20 "$apt_log" >&2
    exit "$rc"
  fi
fi
.venv/bin/harness doctor
log "ready: .venv/bin/harness is the CLI"
