"""`cluster.security: sasl_ssl`: our own cluster with every listener secured.

Per cluster, made when it starts (`ClusterSecurity.create`) in its mount directory
(removed with the cluster, or by `harness gc`):

- a CA (EC P-256, 30 days; its key in a directory of its own, never mounted) and, per
  node, a key and certificate it signed, in a PKCS#12 keystore. A certificate names the
  node's alias (`kafka-1`: how nodes reach each other), `toxiproxy`, and the first 64
  addresses of the cluster's Docker network:
  clients reach brokers by the address Docker hands a container at start, which is only
  known then, and clients verify the name they connect to (librdkafka's and Java's
  default). Subject CN=harness-node for every node: the principal of the KRaft
  controller listener's client certificates.
- passwords: the SCRAM-SHA-512 user `admin` (a super user: the brokers between
  themselves, and the harness's clients), and the keystores'.

Listeners: CLIENT and INTERNAL (inter-broker) are SASL_SSL with SCRAM-SHA-512; the
KRaft CONTROLLER listener is SSL with client certificates required (Kafka does not
authenticate the controller listener with SCRAM). An authorizer is on (StandardAuthorizer
in KRaft, AclAuthorizer in ZooKeeper mode) with super.users admin and the nodes: a user
with no ACLs can connect and do nothing else. ZooKeeper itself stays unauthenticated.

SCRAM credentials exist before the brokers start: in KRaft, `kafka-storage format
--add-scram`; in ZooKeeper mode, written into ZooKeeper with Kafka's ConfigCommand
(`--zookeeper`, the documented way to create the inter-broker user).

Config is rendered with placeholders (`@ADMIN_PASSWORD@`, `@KEYSTORE_PASSWORD@`), filled
in as each node starts (`fill`), so the rendered plans hold no password.
"""
from __future__ import annotations

import ipaddress
import os
import secrets
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from clusters.client_config import java_properties, properties_text
from core.errors import HarnessError

SECRETS_DIR = "/etc/kafka/secrets"            # where nodes and Java clients see the material
ADMIN_USER = "admin"
MECHANISM = "SCRAM-SHA-512"
NODE_SUBJECT = "CN=harness-node"
ADMIN_PASSWORD, KEYSTORE_PASSWORD = "@ADMIN_PASSWORD@", "@KEYSTORE_PASSWORD@"
PASSWORD_ENV = "HARNESS_SASL_PASSWORD"        # Java clients read it through EnvVarConfigProvider
SAN_ADDRESSES = 64
KRAFT_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ZK_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


def _tls_props(alias: str) -> dict[str, str]:
    return {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": f"{SECRETS_DIR}/{alias}.p12",
        "ssl.keystore.password": KEYSTORE_PASSWORD,
        "ssl.key.password": KEYSTORE_PASSWORD,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": f"{SECRETS_DIR}/ca.pem",
        "listener.name.controller.ssl.client.auth": "required",
        "super.users": f"User:{ADMIN_USER};User:{NODE_SUBJECT}",
        "allow.everyone.if.no.acl.found": "false",
    }


def broker_security_props(alias: str, kraft: bool) -> dict[str, str]:
    """What a secured broker (or combined node) adds to its server.properties."""
    props = _tls_props(alias)
    props.update({
        "sasl.enabled.mechanisms": MECHANISM,
        "sasl.mechanism.inter.broker.protocol": MECHANISM,
        f"listener.name.client.{MECHANISM.lower()}.sasl.jaas.config": f"{_SCRAM_MODULE} required;",
        f"listener.name.internal.{MECHANISM.lower()}.sasl.jaas.config":
            f'{_SCRAM_MODULE} required username="{ADMIN_USER}" password="{ADMIN_PASSWORD}";',
        "authorizer.class.name": KRAFT_AUTHORIZER if kraft else ZK_AUTHORIZER,
    })
    return props


def controller_security_props(alias: str) -> dict[str, str]:
    return {**_tls_props(alias), "authorizer.class.name": KRAFT_AUTHORIZER}


def listener_protocols(kraft: bool, secured: bool) -> list[str]:
    """listener.security.protocol.map entries of a broker."""
    if not secured:
        return ["CLIENT:PLAINTEXT", "INTERNAL:PLAINTEXT"] + (["CONTROLLER:PLAINTEXT"] if kraft else [])
    return ["CLIENT:SASL_SSL", "INTERNAL:SASL_SSL"] + (["CONTROLLER:SSL"] if kraft else [])


def _openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise HarnessError(f"openssl {args[0]} failed making the cluster's certificates: "
                           f"{r.stderr.strip()[-500:]} (fix: install openssl)")


@dataclass
class ClusterSecurity:
    directory: Path
    subnet: str | None
    admin_password: str
    keystore_password: str

    @classmethod
    def create(cls, directory: Path, subnet: str | None) -> "ClusterSecurity":
        """`directory` is mounted into the nodes; the CA's key stays beside it, unmounted."""
        for d in (directory, directory.with_name(directory.name + "-ca")):
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o700)
        sec = cls(directory, subnet, secrets.token_hex(16), secrets.token_hex(16))
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-nodes", "-keyout", str(sec.ca_key), "-out", "ca.pem", "-days", "30",
                 "-subj", "/CN=harness-ca", "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)
        return sec

    @property
    def ca_key(self) -> Path:
        return self.directory.with_name(self.directory.name + "-ca") / "ca.key"

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    def _names(self, alias: str) -> str:
        names = [f"DNS:{alias}", "DNS:toxiproxy", "DNS:localhost", "IP:127.0.0.1"]
        if self.subnet:
            hosts = ipaddress.ip_network(self.subnet, strict=False).hosts()
            names += [f"IP:{ip}" for _, ip in zip(range(SAN_ADDRESSES), hosts)]
        return ",".join(names)

    def ensure_node(self, alias: str) -> None:
        """The node's keystore (made once; a re-created node keeps its certificate)."""
        d = self.directory
        if (d / f"{alias}.p12").exists():
            return
        (d / f"{alias}.ext").write_text(f"subjectAltName={self._names(alias)}\n"
                                        "extendedKeyUsage=serverAuth,clientAuth\n"
                                        "basicConstraints=CA:FALSE\n")
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", f"{alias}.key", "-out", f"{alias}.csr", "-subj", f"/{NODE_SUBJECT}", cwd=d)
        _openssl("x509", "-req", "-in", f"{alias}.csr", "-CA", "ca.pem", "-CAkey", str(self.ca_key),
                 "-set_serial", f"0x{secrets.token_hex(8)}", "-days", "30", "-out", f"{alias}.pem",
                 "-extfile", f"{alias}.ext", cwd=d)
        _openssl("pkcs12", "-export", "-inkey", f"{alias}.key", "-in", f"{alias}.pem",
                 "-certfile", "ca.pem", "-name", alias, "-passout", f"pass:{self.keystore_password}",
                 "-out", f"{alias}.p12", cwd=d)
        for leftover in (f"{alias}.csr", f"{alias}.ext", f"{alias}.key"):
            (d / leftover).unlink(missing_ok=True)

    def fill(self, text: str) -> str:
        """A rendered config (or format arguments) with the passwords filled in."""
        return text.replace(ADMIN_PASSWORD, self.admin_password).replace(
            KEYSTORE_PASSWORD, self.keystore_password)

    def format_args(self) -> str:
        """`kafka-storage format` options of a KRaft node: the admin user's credential."""
        return f"--add-scram {MECHANISM}=[name={ADMIN_USER},password={self.admin_password}]"

    def zookeeper_user_script(self) -> str:
        """Run on a ZooKeeper node before the brokers start: the admin user in ZooKeeper."""
        config = f"{MECHANISM}=[iterations=4096,password={self.admin_password}]"
        return ("java -Xmx256m -XX:TieredStopAtLevel=1 -cp '/opt/kafka/libs/*' kafka.admin.ConfigCommand "
                f"--zookeeper localhost:2181 --alter --add-config {shlex.quote(config)} "
                f"--entity-type users --entity-name {ADMIN_USER}")

    # -- what clients need -------------------------------------------------------------
    def client_config(self) -> dict[str, str]:
        """librdkafka settings of the harness's clients (host side)."""
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM,
                "sasl.username": ADMIN_USER, "sasl.password": self.admin_password,
                "ssl.ca.location": str(self.ca_file)}

    def java_properties(self, bootstrap: str) -> dict[str, str]:
        """Kafka's Java tools' client settings (in a container with SECRETS_DIR mounted);
        the password comes from the PASSWORD_ENV environment variable, not the file."""
        return java_properties(bootstrap, self.client_config(), password_ref=f"${{env:{PASSWORD_ENV}}}",
                               ca_path=f"{SECRETS_DIR}/ca.pem")

    def java_env(self) -> dict[str, str]:
        return {PASSWORD_ENV: self.admin_password}

    def mounts(self) -> dict[str, str]:
        return {str(self.directory): SECRETS_DIR}

    def client_properties(self, bootstrap: str) -> str:
        """A client.properties for people and scripts (Kafka's tools, our client_config_file):
        it holds the password, so it is written with mode 600."""
        return properties_text(java_properties(bootstrap, self.client_config(), ca_path=str(self.ca_file)))
