"""Which upgrades Kafka supports, and the steps its upgrade notes give for each.

Pure data and rules: `plan_upgrade` turns (from, to, mode, nodes) into the ordered
steps faults/rolling.py carries out, or refuses the pair with Kafka's reason. The
authority is Kafka's own upgrade notes (docs/upgrade.html of each release):

- KRaft, any release from 3.3 on ("Upgrading KRaft-based clusters"; 4.x: "Upgrading
  Servers to 4.x from any version 3.3.x through …"): upgrade the binaries one node
  at a time, controllers before brokers, then raise the metadata version:
  `kafka-features.sh upgrade --metadata X` up to 3.9, `upgrade --release-version X`
  from 4.0. Before that last step the binaries can be rolled back (the metadata is
  unchanged); a patch upgrade has no metadata step (same metadata version).
- ZooKeeper, 3.x to a later 3.x ("Upgrading ZooKeeper-based clusters"): pin
  inter.broker.protocol.version to the current release, upgrade the brokers one at
  a time ("it is still possible to downgrade at this point"), then set the protocol
  version to the new release and restart the brokers one by one.
- Refused: a downgrade; ZooKeeper to 4.x (4.0 removed ZooKeeper mode: migrate to
  KRaft on 3.9 first); a KRaft cluster older than 3.3 to 4.x ("upgrade to 3.9.x
  first"; below this harness's 3.6 floor, kept as the rule); a rollback across the
  3.x/4.x boundary (no Kafka document describes 4.x binaries rolled back to 3.x).
"""
from __future__ import annotations

from dataclasses import dataclass

from clusters.api import BROKER, COMBINED, CONTROLLER, ZOOKEEPER
from clusters.versions import RELEASE_VERSION, KafkaVersion, version_key
from core.errors import SpecError

REPLACE = "replace"            # re-create the node on a version's image, keeping its data
PIN_PROTOCOL = "pin-protocol"  # set inter.broker.protocol.version in every broker's config
RESTART = "restart"            # re-create the node on its own image with the current config
FEATURES = "features"          # raise the cluster's feature levels (kafka-features.sh)

MIN_KRAFT_TO_4 = "3.3"         # "the software and metadata versions must be at least 3.3.x"
ZK_MIGRATE_HINT = "migrate first: `harness run zk-migration` (ZooKeeper 3.9 to KRaft), then upgrade"


@dataclass(frozen=True)
class UpgradeStep:
    action: str                # REPLACE | PIN_PROTOCOL | RESTART | FEATURES
    node: str | None           # node alias, None for cluster-wide steps
    value: str                 # the version a node goes to, the protocol or release version
    text: str                  # one line for the printed plan

    def to_dict(self) -> dict:
        return {"action": self.action, "node": self.node, "value": self.value, "text": self.text}


@dataclass(frozen=True)
class UpgradePlan:
    old: KafkaVersion
    new: KafkaVersion
    mode: str
    kind: str                  # which documented path this is
    doc: str                   # the upgrade notes it follows
    steps: tuple[UpgradeStep, ...]
    rollback: bool = False

    def lines(self) -> list[str]:
        head = (f"plan: {self.kind}, {self.old.version} -> {self.new.version}"
                f"{' and back (rollback)' if self.rollback else ''} ({self.doc})")
        return [head] + [f"  {i}. {s.text}" for i, s in enumerate(self.steps, 1)]


class UpgradeRefused(SpecError):
    pass


def _refuse(field: str, problem: str, fix: str) -> UpgradeRefused:
    return UpgradeRefused(field, problem, fix)


def check_pair(old: KafkaVersion, new: KafkaVersion, mode: str, rollback: bool = False) -> str:
    """The documented path's name, or UpgradeRefused with Kafka's reason."""
    if new.key <= old.key:
        what = "the same version" if new.key == old.key else "a downgrade"
        raise _refuse("--to", f"{old.version} -> {new.version} is {what}; Kafka documents "
                      "upgrades only (a metadata version once raised cannot be lowered)",
                      "give a --to newer than --from; to test going back, use --rollback")
    if mode == "zookeeper":
        if new.major >= 4:
            raise _refuse("--to", f"a ZooKeeper cluster cannot be upgraded to {new.version}: "
                          "Kafka 4 has no ZooKeeper mode", ZK_MIGRATE_HINT)
        kind = "ZooKeeper patch upgrade" if new.line == old.line else \
            f"ZooKeeper {old.line} -> {new.line} (inter.broker.protocol.version steps)"
    elif new.major >= 4 and version_key(old.line) < version_key(MIN_KRAFT_TO_4):
        raise _refuse("--from", f"Kafka {new.version} needs a KRaft cluster on 3.3 or later",
                      "upgrade to 3.9 first, then to 4.x (Kafka's 4.x upgrade notes)")
    elif new.line == old.line:
        kind = "patch upgrade (same metadata version)"
    elif old.major == new.major:
        kind = f"KRaft minor upgrade {old.line} -> {new.line}"
    else:
        kind = f"KRaft {old.line} -> {new.line} (3.x to 4.x)"
    if rollback and old.major != new.major:
        raise _refuse("--rollback", f"Kafka documents no rollback from {new.line} binaries to "
                      f"{old.line}", "check the upgrade without --rollback")
    return kind


def _doc(old: KafkaVersion, new: KafkaVersion, mode: str) -> str:
    section = "Upgrading ZooKeeper-based clusters" if mode == "zookeeper" else (
        "Upgrading Servers to " + new.line if new.major >= 4 else "Upgrading KRaft-based clusters")
    return f"Kafka {new.line} docs/upgrade.html, '{section}'"


def upgrade_order(nodes: list[tuple[str, str]]) -> list[str]:
    """(alias, role) -> aliases: KRaft controllers (and combined nodes, which host the
    quorum) first, then broker-only nodes; ZooKeeper nodes are not Kafka."""
    first = [a for a, role in nodes if role in (CONTROLLER, COMBINED)]
    return first + [a for a, role in nodes if role == BROKER]


def plan_upgrade(old: KafkaVersion, new: KafkaVersion, mode: str, nodes: list[tuple[str, str]],
                 rollback: bool = False, release_version: str | None = None) -> UpgradePlan:
    kind = check_pair(old, new, mode, rollback)
    order = upgrade_order([(a, r) for a, r in nodes if r != ZOOKEEPER])
    steps: list[UpgradeStep] = []
    zk = mode == "zookeeper"
    if zk:
        steps.append(UpgradeStep(PIN_PROTOCOL, None, old.line, f"set inter.broker.protocol.version="
                                 f"{old.line} on every broker (taken up as each one restarts)"))
    steps += [UpgradeStep(REPLACE, a, new.version, f"{a}: stop, start on {new.version}, wait for "
                          "a full ISR") for a in order]
    if rollback:
        steps += [UpgradeStep(REPLACE, a, old.version, f"{a}: roll back to {old.version}, wait for "
                              "a full ISR") for a in reversed(order)]
    elif zk and new.line != old.line:
        steps.append(UpgradeStep(PIN_PROTOCOL, None, new.line,
                                 f"set inter.broker.protocol.version={new.line}"))
        steps += [UpgradeStep(RESTART, a, new.line, f"{a}: restart on protocol {new.line}, wait "
                              "for a full ISR") for a in order]
    elif not zk and new.line != old.line:
        steps.append(_features_step(new, release_version))
    return UpgradePlan(old, new, mode, kind, _doc(old, new, mode), tuple(steps), rollback)


def _features_step(new: KafkaVersion, release_version: str | None) -> UpgradeStep:
    target = release_version or new.line
    if new.has(RELEASE_VERSION):
        return UpgradeStep(FEATURES, None, target, f"kafka-features.sh upgrade --release-version "
                           f"{target} (metadata.version and the other features of {target})")
    return UpgradeStep(FEATURES, None, target, f"kafka-features.sh upgrade --metadata {target}")


def features_args(step: UpgradeStep, new: KafkaVersion) -> list[str]:
    """FeatureCommand arguments after --bootstrap-server for a FEATURES step."""
    flag = "--release-version" if new.has(RELEASE_VERSION) else "--metadata"
    return ["upgrade", flag, step.value]
