"""Client connection settings: read from the files users keep, in the names our clients use.

Users keep a Java-style `client.properties` (the file Kafka's own tools take with
--command-config) or a JSON object of settings. Our clients are librdkafka's, so the
security settings are translated once, here:

    sasl.jaas.config = …ScramLoginModule required username="u" password="p";
        -> sasl.username = u, sasl.password = p
    ssl.truststore.type = PEM, ssl.truststore.location = ca.pem   -> ssl.ca.location = ca.pem
    ssl.truststore.certificates = -----BEGIN…                      -> ssl.ca.pem
    ssl.keystore.type = PKCS12 (or unset), ssl.keystore.location   -> ssl.keystore.location
    ssl.keystore.type = PEM, ssl.keystore.location = client.pem    -> ssl.certificate.location,
                                                                      ssl.key.location
    ssl.endpoint.identification.algorithm = (empty)                -> none

A client config holds connection settings only (security.protocol, sasl.*, ssl.*);
anything else belongs to a workload's own client_config. A JKS truststore is refused
with the command that converts it (librdkafka reads PEM).
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from core.errors import SpecError

CONNECTION_PREFIXES = ("security.", "sasl.", "ssl.")
BOOTSTRAP = "bootstrap.servers"
_JAAS_FIELD = re.compile(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
_LOGIN_MODULES = ("ScramLoginModule", "PlainLoginModule")
# Java-only settings with no librdkafka meaning for our clients (dropped, not refused).
_JAVA_ONLY = ("ssl.truststore.type", "ssl.truststore.password", "ssl.keystore.type",
              "ssl.enabled.protocols", "ssl.trustmanager.algorithm", "ssl.keymanager.algorithm",
              "sasl.login.class", "ssl.protocol", "sasl.client.callback.handler.class")


def read_properties(text: str) -> dict[str, str]:
    """Java .properties: key=value or key: value, # and ! comments, \\ continued lines."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip() if pending else raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def load_client_file(path: str, where: str) -> dict[str, str]:
    """A client.properties or a JSON object of settings, as strings."""
    p = Path(path).expanduser()
    try:
        text = p.read_text()
    except OSError as e:
        raise SpecError(where, f"cannot read {path} ({e.strerror})",
                        "give the path of your client.properties or a JSON file") from None
    if p.suffix == ".json" or text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise SpecError(where, f"{path} is not valid JSON ({e})") from None
        if not isinstance(doc, dict):
            raise SpecError(where, f"{path} must hold a JSON object of client settings")
        return {str(k): _text(v) for k, v in doc.items()}
    return read_properties(text)


def _text(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _jaas(value: str, where: str) -> dict[str, str]:
    if not any(m in value for m in _LOGIN_MODULES):
        raise SpecError(f"{where}.sasl.jaas.config", "only the SCRAM and PLAIN login modules "
                        "can be translated for librdkafka",
                        "give sasl.mechanism, sasl.username and sasl.password instead")
    fields = {k: v.replace('\\"', '"') for k, v in _JAAS_FIELD.findall(value)}
    if "username" not in fields or "password" not in fields:
        raise SpecError(f"{where}.sasl.jaas.config", "has no username=\"…\" and password=\"…\"",
                        "write both, or give sasl.username and sasl.password")
    return {"sasl.username": fields["username"], "sasl.password": fields["password"]}


def _truststore(props: Mapping[str, str], where: str) -> dict[str, str]:
    kind = props.get("ssl.truststore.type", "JKS").upper()
    location = props["ssl.truststore.location"]
    if kind != "PEM":
        raise SpecError(f"{where}.ssl.truststore.location", f"a {kind} truststore cannot be read "
                        "by librdkafka", f"export the CA as PEM (keytool -exportcert -rfc -keystore "
                        f"{location} -alias <ca> > ca.pem) and give ssl.ca.location: ca.pem")
    return {"ssl.ca.location": location}


def _keystore(props: Mapping[str, str]) -> dict[str, str]:
    location = props["ssl.keystore.location"]
    if props.get("ssl.keystore.type", "PKCS12").upper() == "PEM":
        return {"ssl.certificate.location": location, "ssl.key.location": location}
    out = {"ssl.keystore.location": location}
    if "ssl.keystore.password" in props:
        out["ssl.keystore.password"] = props["ssl.keystore.password"]
    return out


def to_librdkafka(props: Mapping[str, str], where: str) -> dict[str, str]:
    """Connection settings in librdkafka's names (bootstrap.servers excluded); SpecError
    naming `where.<key>` for a setting that is not a connection setting."""
    out: dict[str, str] = {}
    for key, value in props.items():
        if key == BOOTSTRAP or key in _JAVA_ONLY:
            continue
        if not key.startswith(CONNECTION_PREFIXES):
            raise SpecError(f"{where}.{key}", "is not a connection setting",
                            "give security.protocol, sasl.* and ssl.* here; other client settings "
                            "go in a workload's own client_config")
        if key == "sasl.jaas.config":
            out.update(_jaas(value, where))
        elif key == "ssl.truststore.location":
            out.update(_truststore(props, where))
        elif key == "ssl.truststore.certificates":
            out["ssl.ca.pem"] = value
        elif key in ("ssl.keystore.location", "ssl.keystore.password"):
            out.update(_keystore(props) if "ssl.keystore.location" in props else {})
        elif key == "ssl.endpoint.identification.algorithm":
            out[key] = value or "none"
        elif key == "sasl.mechanisms":
            out["sasl.mechanism"] = value
        else:
            out[key] = value
    return out


def java_properties(bootstrap: str, conf: Mapping[str, str], password_ref: str | None = None,
                    ca_path: str | None = None) -> dict[str, str]:
    """The other way, for Kafka's own tools: librdkafka settings as Java client settings.
    `password_ref` stands in the JAAS line for the password (`${env:VAR}` with Kafka's
    EnvVarConfigProvider: the file then holds no secret); `ca_path` is the CA as the tool
    sees it (inside its container)."""
    props = {BOOTSTRAP: bootstrap}
    if "security.protocol" in conf:
        props["security.protocol"] = conf["security.protocol"]
    if "sasl.mechanism" in conf:
        props["sasl.mechanism"] = conf["sasl.mechanism"]
        module = "plain.PlainLoginModule" if conf["sasl.mechanism"] == "PLAIN" else "scram.ScramLoginModule"
        password = password_ref or conf.get("sasl.password", "")
        props["sasl.jaas.config"] = (f"org.apache.kafka.common.security.{module} required "
                                     f'username="{conf.get("sasl.username", "")}" '
                                     f'password="{password}";')
        if password_ref and password_ref.startswith("${env:"):
            props["config.providers"] = "env"
            props["config.providers.env.class"] = \
                "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
    if ca_path or "ssl.ca.location" in conf:
        props["ssl.truststore.type"] = "PEM"
        props["ssl.truststore.location"] = ca_path or conf["ssl.ca.location"]
    if conf.get("ssl.endpoint.identification.algorithm") == "none":
        props["ssl.endpoint.identification.algorithm"] = ""
    return props


def properties_text(props: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())
