#!/usr/bin/env bash
# Times scripts/setup.sh as on a fresh machine, on a machine already set up, without
# touching what is set up: a fresh clone of REF in a temp dir, run against a second
# Docker engine of its own (own --data-root, --exec-root, socket; its own bridge
# interface, no iptables rules: so no image is cached and the main engine, its images and
# its clusters are left alone; NOT --bridge=none, with which dockerd deletes the host's
# docker0, the main engine's default bridge, and every later `docker run` on it fails), with a fresh HOME (empty pip, Maven, Go and harness
# caches: jars under HARNESS_CACHE/jars, the toxiproxy binary, the class archive), a
# fresh HARNESS_STATE and HARNESS_MOUNT_ROOT. Then setup.sh again in the same place
# (the idempotent re-run). With --apt, first the apt step: setup.sh's package lists
# installed in a fresh debootstrap-based container (host network: it reaches the
# Debian mirror as the host does), each list timed.
#
# Not measured: the apt step inside setup.sh itself (the host has every tool, so
# setup.sh skips it: --apt times it apart), dockerd's first start, and the download
# of the Python interpreter (the host's python3 is used).
#
# Usage (as root): benchmarks/fresh_setup.sh [--ref REF] [--repo DIR] [--label NAME] [--apt]
# Logs: benchmarks/results/fresh_setup/<UTC stamp>-<label>.log (every line prefixed
# with the seconds since the step's start). Everything made is removed at the end.
set -euo pipefail
# A process group of our own: an interrupted measurement ends every process it started
[ "$(ps -o pgid= -p $$ | tr -d ' ')" = "$$" ] || exec setsid "$0" "$@"

repo="$(cd "$(dirname "$0")/.." && pwd)"
ref=HEAD
label=""
apt=0
while [ $# -gt 0 ]; do
  case "$1" in
    --ref) ref="$2"; shift 2 ;;
    --repo) repo="$2"; shift 2 ;;
    --label) label="$2"; shift 2 ;;
    --apt) apt=1; shift ;;
    *) echo "usage: $0 [--ref REF] [--repo DIR] [--label NAME] [--apt]" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ]; then
  echo "fresh_setup: run as root (setup.sh and a second dockerd need it)" >&2
  exit 2
fi
sha="$(git -C "$repo" rev-parse --short "$ref")" || { echo "fresh_setup: no commit $ref in $repo" >&2; exit 2; }
label="${label:-$sha}"
out_dir="$(cd "$(dirname "$0")" && pwd)/results/fresh_setup"   # beside this script, not in --repo
mkdir -p "$out_dir"
log="$out_dir/$(date -u +%Y%m%dT%H%M%SZ)-$label.log"

tmp="$(mktemp -d /var/tmp/fresh-setup.XXXXXX)"
dockerd_pid=""
bridge=khfresh0          # the second engine's default bridge (a small subnet of its own)
cleanup() {
  set +e
  if [ -n "$dockerd_pid" ] && kill -0 "$dockerd_pid" 2>/dev/null; then
    DOCKER_HOST="unix://$tmp/docker.sock" docker rm -f fresh-apt >/dev/null 2>&1
    kill "$dockerd_pid"
    for _ in $(seq 60); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 1; done
    kill -9 "$dockerd_pid" 2>/dev/null
  fi
  # what setup.sh started and left (pip, Maven, debootstrap, a Spark JVM), by id: our group's
  local left
  left="$(pgrep -g $$ | grep -vx -e $$ -e "$BASHPID")"
  xargs -r kill -9 <<<"$left" 2>/dev/null
  # whatever the engine left mounted under the temp dir (overlay, netns), deepest first
  awk -v t="$tmp" '$2 ~ "^"t {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount -l
  rm -rf "$tmp"
  ip link del "$bridge" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Each line of a step's output, prefixed with the seconds since the step started.
tenths() { local us=$(( ${EPOCHREALTIME/./} - ${1/./} )); echo "$(( us / 1000000 )).$(( us / 100000 % 10 ))"; }
stamp() {
  local start=$EPOCHREALTIME line
  while IFS= read -r line; do printf '%7s %s\n' "$(tenths "$start")" "$line"; done
}
say() { echo "[fresh $(date -u +%H:%M:%S)] $*" | tee -a "$log"; }
timed() {   # timed NAME COMMAND...: run it, log its lines and its wall time
  local name="$1" t0 rc=0; shift
  say "$name: start (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  t0=$EPOCHREALTIME
  "$@" 2>&1 | stamp | tee -a "$log" || rc=$?
  say "$name: exit $rc after $(tenths "$t0") s" \
      "(load average $(cut -d' ' -f1-3 /proc/loadavg))"
  return "$rc"
}

say "commit $sha of $repo; temp dir $tmp; $(nproc) cores"
echo '{}' >"$tmp/daemon.json"
ip link add "$bridge" type bridge && ip addr add 172.31.254.1/24 dev "$bridge" && ip link set "$bridge" up
dockerd --config-file "$tmp/daemon.json" --data-root "$tmp/docker" --exec-root "$tmp/x" \
  -H "unix://$tmp/docker.sock" --pidfile "$tmp/dockerd.pid" \
  --bridge="$bridge" --iptables=false --ip-masq=false >"$tmp/dockerd.log" 2>&1 &
dockerd_pid=$!
export DOCKER_HOST="unix://$tmp/docker.sock"
for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
docker info >/dev/null 2>&1 || { tail -20 "$tmp/dockerd.log" >&2; echo "fresh_setup: the second dockerd did not start" >&2; exit 1; }
say "second dockerd up (pid $dockerd_pid, $(docker images -q | wc -l) images)"

git clone -q "$repo" "$tmp/clone"
git -C "$tmp/clone" checkout -q "$sha"

if [ "$apt" -eq 1 ]; then
  # setup.sh's lists, as on a machine that has none of them: what set-up needs first,
  # then (if setup.sh has that list) what only the tests need, installed beside pip
  pkgs() { sed -n "s/.*$1+=(\([^)]*\)).*/\1/p" "$tmp/clone/scripts/setup.sh" | tr '\n' ' '; }
  first="$(pkgs missing)" later="$(pkgs for_tests)"
  timed "debootstrap for the apt container (not part of set-up)" \
    debootstrap --variant=minbase bookworm "$tmp/aptroot"
  # the host's Debian sources and apt settings (its mirror)
  rm -f "$tmp/aptroot/etc/apt/sources.list"
  cp /etc/apt/sources.list.d/debian.sources "$tmp/aptroot/etc/apt/sources.list.d/" 2>/dev/null || true
  cp /etc/apt/apt.conf.d/99artifact-registry "$tmp/aptroot/etc/apt/apt.conf.d/" 2>/dev/null || true
  tar -C "$tmp/aptroot" -c . | docker import - fresh-apt:1 >/dev/null
  rm -rf "$tmp/aptroot"
  docker run -d --name fresh-apt --network host fresh-apt:1 sleep infinity >/dev/null
  timed "apt (set-up's list): $first" docker exec fresh-apt bash -c \
    "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $first >/dev/null && echo installed"
  if [ -n "${later// /}" ]; then
    timed "apt (the tests' list, beside pip and the images in setup.sh): $later" docker exec fresh-apt bash -c \
      "DEBIAN_FRONTEND=noninteractive apt-get install -y -q $later >/dev/null && echo installed"
  fi
  docker rm -f fresh-apt >/dev/null
fi

mkdir -p "$tmp/home"
export PYENV_ROOT="${PYENV_ROOT:-$HOME/.pyenv}"   # the host's python3 shim keeps working
export HOME="$tmp/home" PIP_CACHE_DIR="$tmp/home/.cache/pip"
export HARNESS_CACHE="$tmp/home/.cache/kafka-harness" HARNESS_STATE="$tmp/state"
export HARNESS_MOUNT_ROOT="$tmp/mounts" GOPATH="$tmp/home/go" GOCACHE="$tmp/home/.cache/go-build"
export GOMODCACHE="$tmp/home/go/pkg/mod"
# Java reads user.home from the password file, not $HOME: Maven's repository explicitly
export MAVEN_OPTS="-Duser.home=$tmp/home -Dmaven.repo.local=$tmp/home/.m2/repository"
cd "$tmp/clone"
timed "fresh set-up" bash scripts/setup.sh
timed "set-up again (idempotent)" bash scripts/setup.sh
say "done; log: $log"
