"""Fakes for the fault unit tests: a cluster of nodes whose `exec` runs the
fault's real shell text on this host, with fake `iptables`, `ip`, `pkill`,
`ps`, `dd` and `df` first on PATH (state kept in a per-node directory).
So the tests check the exact commands a fault would run in a container.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

from clusters.api import BROKER_ROLES, ExecResult, PartitionState

FAKE_IPTABLES = r'''
import json, os, sys
path = os.environ["FAKE_STATE"] + "/iptables.json"
state = json.load(open(path)) if os.path.exists(path) else {"INPUT": [], "OUTPUT": []}
args = [a for a in sys.argv[1:] if a != "-w"]
op, chain, rest = args[0], args[1], args[2:]
def save(): json.dump(state, open(path, "w"))
if op == "-N":
    if chain in state: print("iptables: Chain already exists.", file=sys.stderr); sys.exit(1)
    state[chain] = []; save()
elif chain not in state:
    print(f"iptables: No chain/target/match by that name ({chain}).", file=sys.stderr); sys.exit(1)
elif op == "-C":
    sys.exit(0 if " ".join(rest) in state[chain] else 1)
elif op == "-I":
    pos = int(rest[0]) - 1 if rest and rest[0].isdigit() else 0
    rule = rest[1:] if rest and rest[0].isdigit() else rest
    state[chain].insert(pos, " ".join(rule)); save()
elif op == "-A":
    target = rest[rest.index("-j") + 1]
    if target not in ("DROP", "ACCEPT", "REJECT") and target not in state: sys.exit(2)
    state[chain].append(" ".join(rest)); save()
elif op == "-D":
    rule = " ".join(rest)
    if rule not in state[chain]: print("iptables: Bad rule", file=sys.stderr); sys.exit(1)
    state[chain].remove(rule); save()
elif op == "-F":
    state[chain] = []; save()
elif op == "-S":
    print(f"-N {chain}")
    for r in state[chain]: print(f"-A {chain} {r}")
else:
    sys.exit(3)
'''

FAKE_SCRIPTS = {
    "iptables": f"#!{sys.executable}\n{FAKE_IPTABLES}",
    "ip": "#!/bin/sh\necho \"default via 172.30.0.1 dev eth0\"\n",
    # pkill -STOP/-CONT -x java: remember the java state.
    "pkill": "#!/bin/sh\ncase \"$1\" in -STOP) echo T > \"$FAKE_STATE/java\";; "
             "-CONT) echo S > \"$FAKE_STATE/java\";; esac\nexit 0\n",
    "ps": "#!/bin/sh\ncase \"$*\" in *user=*) cat \"$FAKE_STATE/java_user\" 2>/dev/null "
          "|| echo kafka;; *stat=*) cat \"$FAKE_STATE/java\" 2>/dev/null || echo S;; esac\n",
    # dd "fills" the disk by creating the output file; df reports 0 bytes free while it exists.
    "dd": "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in of=*) echo x >> \"${a#of=}\";; esac; done\n"
          "exit 1\n",
    "df": "#!/bin/sh\necho 'Filesystem 1-blocks Used Available Capacity Mounted'\n"
          "for a in \"$@\"; do d=\"$a\"; done\n"
          "if [ -e \"$d/.harness-fill\" ]; then echo \"tmpfs 100 100 0 100% $d\"; "
          "else echo \"tmpfs 1000000 0 1000000 0% $d\"; fi\n",
}


def make_fake_bin(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in FAKE_SCRIPTS.items():
        p = directory / name
        p.write_text(text)
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return directory


class FakeNode:
    def __init__(self, name: str, role: str, node_id: int | None, ip: str, root: Path,
                 fake_bin: Path):
        self.name, self.role, self.node_id, self._ip = name, role, node_id, ip
        self.state_dir = root / name
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir = str(self.state_dir / "data")
        os.makedirs(self.log_dir, exist_ok=True)
        self.fake_bin = fake_bin
        self.running, self.paused = True, False
        self.calls: list[str] = []          # lifecycle calls and exec'd scripts, in order

    @property
    def ip(self) -> str:
        return self._ip

    def _reset_namespace(self) -> None:
        # A restarted container gets a fresh network namespace: no rules.
        (self.state_dir / "iptables.json").unlink(missing_ok=True)
        (self.state_dir / "java").unlink(missing_ok=True)

    def kill(self, signal: str = "SIGKILL") -> None:
        self.calls.append(f"kill {signal}")
        self.running = False

    def stop(self, timeout: float = 30) -> None:
        self.calls.append("stop")
        self.running = False

    def start(self) -> None:
        self.calls.append("start")
        if self.paused:     # as Docker: 409
            raise RuntimeError(f"cannot start a paused container {self.name}, try unpause")
        if not self.running:
            self._reset_namespace()
        self.running = True

    def restart(self) -> None:
        self.stop()
        self.start()

    def pause(self) -> None:
        self.calls.append("pause")
        if not self.running:
            raise RuntimeError(f"container {self.name} is not running")
        self.paused = True

    def unpause(self) -> None:
        self.calls.append("unpause")
        if not self.paused:
            raise RuntimeError(f"container {self.name} is not paused")
        self.paused = False

    def status(self) -> str:
        """As DockerNode.status(): a paused container is not 'running'."""
        if not self.running:
            return "exited"
        return "paused" if self.paused else "running"

    def is_running(self) -> bool:
        return self.status() == "running"

    def exec(self, cmd, user: str = "root") -> ExecResult:
        script = cmd if isinstance(cmd, str) else cmd[-1]
        self.calls.append(f"exec {script}")
        if not self.running:
            raise RuntimeError(f"container {self.name} is not running")
        if self.paused:
            raise RuntimeError(f"container {self.name} is paused")
        env = {**os.environ, "PATH": f"{self.fake_bin}:{os.environ['PATH']}",
               "FAKE_STATE": str(self.state_dir)}
        p = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env,
                           timeout=30)
        return ExecResult(p.returncode, p.stdout + p.stderr)

    def logs(self) -> str:
        return ""

    # test helpers
    def rules(self) -> list[str]:
        path = self.state_dir / "iptables.json"
        return json.load(open(path)).get("HARNESS", []) if path.exists() else []

    def java_stopped(self) -> bool:
        path = self.state_dir / "java"
        return path.exists() and path.read_text().strip() == "T"


class FakeCluster:
    run_id = "fake-run"

    def __init__(self, root: Path, brokers: int = 3, controllers: int = 0, zookeepers: int = 0,
                 combined: bool = True):
        fake_bin = make_fake_bin(root / "bin")
        self._nodes: list[FakeNode] = []
        role = "combined" if combined and not controllers and not zookeepers else "broker"
        for i in range(1, brokers + 1):
            self._nodes.append(FakeNode(f"kafka-{i}", role, i, f"172.30.0.{10 + i}", root, fake_bin))
        for i in range(controllers):
            self._nodes.append(FakeNode(f"controller-{i + 1}", "controller", 1001 + i,
                                        f"172.30.0.{100 + i}", root, fake_bin))
        for i in range(zookeepers):
            self._nodes.append(FakeNode(f"zk-{i + 1}", "zookeeper", i + 1,
                                        f"172.30.0.{200 + i}", root, fake_bin))
        self.partition_states: list[PartitionState] = []
        self.controller_id: int | None = 1

    def start(self):
        return self

    def stop(self) -> None:
        pass

    def nodes(self, role=None):
        if role is None:
            return list(self._nodes)
        roles = (role,) if isinstance(role, str) else tuple(role)
        return [n for n in self._nodes if n.role in roles]

    def node(self, name_or_id):
        for n in self._nodes:
            if n.name == name_or_id or (n.node_id == name_or_id and n.role != "zookeeper"):
                return n
        raise KeyError(name_or_id)

    def brokers(self):
        return self.nodes(BROKER_ROLES)

    def bootstrap_servers(self) -> str:
        return ",".join(f"{n.ip}:9092" for n in self.brokers())

    def client_config(self) -> dict[str, str]:
        return {}

    def create_topic(self, name, partitions, replication_factor, configs=None):
        ids = [b.node_id for b in self.brokers()][:replication_factor]
        for p in range(partitions):
            self.partition_states.append(PartitionState(name, p, ids[p % len(ids)],
                                                        tuple(ids), tuple(ids)))

    def partitions(self, topic=None):
        return [s for s in self.partition_states if topic is None or s.topic == topic]

    def leader_of(self, topic, partition):
        for s in self.partition_states:
            if s.topic == topic and s.partition == partition and s.leader is not None:
                return self.node(s.leader)
        return None

    def active_controller(self):
        return None if self.controller_id is None else self.node(self.controller_id)

    def wait_healthy(self, timeout=60):
        pass

    def collect_logs(self, directory):
        return []


def test_fake_iptables_behaves_like_iptables(tmp_path):
    cluster = FakeCluster(tmp_path, brokers=1)
    node = cluster.nodes()[0]
    assert node.exec(["sh", "-c", "iptables -w -A HARNESS -s 1.2.3.4 -j DROP"]).exit_code == 1
    assert node.exec(["sh", "-c", "iptables -w -N HARNESS"]).exit_code == 0
    assert node.exec(["sh", "-c", "iptables -w -N HARNESS"]).exit_code == 1
    assert node.exec(["sh", "-c", "iptables -w -A HARNESS -s 1.2.3.4 -j DROP"]).exit_code == 0
    assert node.rules() == ["-s 1.2.3.4 -j DROP"]
    assert node.exec(["sh", "-c", "iptables -w -D HARNESS -s 9.9.9.9 -j DROP"]).exit_code == 1
    out = textwrap.dedent(node.exec(["sh", "-c", "iptables -S HARNESS"]).output)
    assert "-A HARNESS -s 1.2.3.4 -j DROP" in out


class FakeProcess:
    """What faults.sidecar and the mirror family's kill thread ask of a process
    (MirrorMaker 2's container in a run): each call, in order."""
    name = "kh-run-mm2-ab12"

    def __init__(self):
        self.calls: list[str] = []

    def kill(self):
        self.calls.append("kill")

    def restart(self):
        self.calls.append("restart")

    def pause(self):
        self.calls.append("pause")

    def unpause(self):
        self.calls.append("unpause")
