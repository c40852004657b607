"""clusters.kafka_wire: SCRAM as RFC 7677 spells it out, DescribeQuorum read byte by byte,
and a secured cluster's rendered config (no password in it)."""
import base64
import struct
from dataclasses import replace

import pytest

from clusters import kafka_wire as kw
from clusters.config import plan_nodes
from clusters.security import ADMIN_PASSWORD, ClusterSecurity
from clusters.spec import ClusterSpec
from core.errors import SpecError

CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0," \
               "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha_256_matches_rfc_7677(monkeypatch):
    monkeypatch.setattr(kw.os, "urandom", lambda n: base64.b64decode(CLIENT_NONCE))
    sent = []

    def authenticate(sock, token):
        sent.append(token.decode())
        return (SERVER_FIRST if len(sent) == 1 else SERVER_FINAL).encode()
    monkeypatch.setattr(kw, "_authenticate", authenticate)
    kw._scram(None, kw.WireSecurity("SASL_SSL", "SCRAM-SHA-256", "user", "pencil"))
    assert sent == [f"n,,n=user,r={CLIENT_NONCE}", CLIENT_FINAL]


def test_scram_refuses_a_server_that_does_not_know_the_password(monkeypatch):
    monkeypatch.setattr(kw.os, "urandom", lambda n: base64.b64decode(CLIENT_NONCE))
    answers = iter([SERVER_FIRST, "v=AAAA"])
    monkeypatch.setattr(kw, "_authenticate", lambda sock, token: next(answers).encode())
    with pytest.raises(kw.WireError, match="signature"):
        kw._scram(None, kw.WireSecurity("SASL_SSL", "SCRAM-SHA-256", "user", "pencil"))


def test_describe_quorum_leader_is_read():
    body = struct.pack(">i", 7) + b"\x00" + struct.pack(">h", 0) + b"\x02" + bytes([19]) \
        + b"__cluster_metadata" + b"\x02" + struct.pack(">ihi", 0, 0, 1001) + b"rest"
    assert kw.parse_quorum_leader(body) == (0, 1001)
    denied = struct.pack(">i", 7) + b"\x00" + struct.pack(">h", 31)
    assert kw.parse_quorum_leader(denied) == (31, None)
    req = kw.describe_quorum_request()
    assert struct.unpack(">ihh", req[:8]) == (len(req) - 4, 55, 0)


def test_settings_the_wire_cannot_speak_give_none():
    assert kw.WireSecurity.from_client_config({"security.protocol": "SASL_SSL",
                                               "sasl.mechanism": "OAUTHBEARER"}) is None
    sec = kw.WireSecurity.from_client_config({"security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512",
                                              "sasl.username": "u", "sasl.password": "p",
                                              "ssl.endpoint.identification.algorithm": "none"})
    assert sec.tls and sec.sasl and not sec.check_hostname


@pytest.mark.parametrize("mode", ["kraft-combined", "kraft-isolated", "zookeeper"])
def test_a_secured_cluster_renders_secured_listeners_and_no_password(mode):
    spec = replace({"kraft-combined": ClusterSpec.kraft_combined("3.9"),
                    "kraft-isolated": ClusterSpec.kraft_isolated("3.9"),
                    "zookeeper": ClusterSpec.zookeeper("3.9")}[mode], security="sasl_ssl")
    for plan in plan_nodes(spec):
        if plan.role == "zookeeper":
            continue
        assert "PLAINTEXT" not in plan.config and ADMIN_PASSWORD in plan.config or plan.role == "controller"
        assert f"ssl.keystore.location=/etc/kafka/secrets/{plan.alias}.p12" in plan.config
    broker = [p for p in plan_nodes(spec) if p.role != "zookeeper"][-1].config
    assert "CLIENT:SASL_SSL,INTERNAL:SASL_SSL" in broker
    assert ("CONTROLLER:SSL" in broker) == (mode != "zookeeper")


def test_security_is_validated():
    with pytest.raises(SpecError, match="security"):
        ClusterSpec.from_dict({"security": "kerberos"})


def test_certificates_name_the_alias_and_the_networks_first_addresses(tmp_path):
    sec = ClusterSecurity.create(tmp_path / "s", "172.30.0.0/16")
    sec.ensure_node("kafka-1")
    assert (tmp_path / "s" / "kafka-1.p12").exists() and not (tmp_path / "s" / "kafka-1.key").exists()
    assert not (tmp_path / "s" / "ca.key").exists() and (tmp_path / "s-ca" / "ca.key").exists()
    names = sec._names("kafka-1")
    assert "DNS:kafka-1" in names and "IP:172.30.0.2" in names and "IP:172.30.0.64" in names
    assert sec.fill(f"p={ADMIN_PASSWORD}") == f"p={sec.admin_password}"
    assert "SCRAM-SHA-512=[name=admin,password=" in sec.format_args()


def test_a_flexible_response_starts_with_its_header_and_throttle_time():
    """FlexReader.response_start (FindCoordinator v6 and Metadata v12 begin alike): past
    the correlation id, the header's tagged fields (one unknown here) and ThrottleTimeMs;
    an answer to another request is the caller's error."""
    payload = struct.pack(">i", 7) + b"\x01" + b"\x05" + b"\x02" + b"zz" + struct.pack(">i", 250) + b"\x03"
    r = kw.FlexReader(payload)
    r.response_start(7, "Metadata")
    assert r.count() == 2 and r.at == len(payload)

    class Refused(Exception):
        pass

    with pytest.raises(Refused, match="^FindCoordinator answer for request 7, expected 8$"):
        kw.FlexReader(payload).response_start(8, "FindCoordinator", Refused)
    with pytest.raises(ValueError, match="^Metadata answer for request 7, expected 9$"):
        kw.FlexReader(payload).response_start(9, "Metadata")
