"""A Kafka connection of our own, for the few requests no client library sends for us:
each broker's own metadata (clusters/metadata_probe.py), topic ids
(clusters/topic_metadata.py), coordinators (clusters/coordinator.py) and the KRaft
quorum's leader (DescribeQuorum). Plain sockets, TLS (`ssl`), and SASL PLAIN or SCRAM-SHA-256/512
(RFC 5802, as Kafka speaks it: SaslHandshake v1, then SaslAuthenticate v1 frames).

    security = WireSecurity.from_client_config(conf)    # None: a mechanism we cannot speak
    with connect(host, port, 1.0, security) as sock:
        body = exchange(sock, request_bytes)

GSSAPI, OAUTHBEARER and PKCS#12 client keystores are not spoken here; a caller that
gets None falls back to what the Admin API can say.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import ssl
import struct
from dataclasses import dataclass
from functools import lru_cache

SASL_HANDSHAKE, SASL_AUTHENTICATE, DESCRIBE_QUORUM = 17, 36, 55
CLIENT_ID = b"harness-observer"
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class WireError(ConnectionError):
    """A connection, TLS or SASL step failed (the message says which)."""


@dataclass(frozen=True)
class WireSecurity:
    protocol: str = "PLAINTEXT"          # PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
    mechanism: str | None = None         # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    username: str = ""
    password: str = ""
    ca_file: str | None = None
    ca_pem: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    key_password: str | None = None
    check_hostname: bool = True

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @classmethod
    def from_client_config(cls, conf: dict[str, str]) -> "WireSecurity | None":
        """From librdkafka settings; None when they need what this module cannot speak."""
        protocol = conf.get("security.protocol", "PLAINTEXT").upper()
        mechanism = conf.get("sasl.mechanism", conf.get("sasl.mechanisms", "GSSAPI")).upper() \
            if protocol.startswith("SASL") else None
        if mechanism is not None and mechanism not in ("PLAIN", *_HASHES):
            return None
        if "ssl.keystore.location" in conf:
            return None
        return cls(protocol, mechanism, conf.get("sasl.username", ""), conf.get("sasl.password", ""),
                   conf.get("ssl.ca.location"), conf.get("ssl.ca.pem"),
                   conf.get("ssl.certificate.location"), conf.get("ssl.key.location"),
                   conf.get("ssl.key.password"),
                   conf.get("ssl.endpoint.identification.algorithm", "https") != "none")


def recv_exact(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        out += chunk
    return out


def exchange(sock: socket.socket, frame: bytes) -> bytes:
    """Send one size-prefixed request, return the response (without its size)."""
    sock.sendall(frame)
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    return recv_exact(sock, size)


def _string(s: bytes) -> bytes:
    return struct.pack(">h", len(s)) + s


def frame_v1(api_key: int, version: int, body: bytes, correlation: int = 1) -> bytes:
    """A request with header v1 (api key, version, correlation id, client id)."""
    data = struct.pack(">hhi", api_key, version, correlation) + _string(CLIENT_ID) + body
    return struct.pack(">i", len(data)) + data


def frame_v2(api_key: int, version: int, body: bytes, correlation: int = 1) -> bytes:
    """A flexible request: header v2 is header v1 and an empty tagged-field section."""
    data = struct.pack(">hhi", api_key, version, correlation) + _string(CLIENT_ID) + b"\x00" + body
    return struct.pack(">i", len(data)) + data


def _tls(sock: socket.socket, host: str, sec: WireSecurity) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=sec.ca_file, cadata=sec.ca_pem)
    ctx.check_hostname = sec.check_hostname
    if sec.cert_file:
        ctx.load_cert_chain(sec.cert_file, sec.key_file, sec.key_password)
    try:
        return ctx.wrap_socket(sock, server_hostname=host)
    except ssl.SSLError as e:
        raise WireError(f"TLS with {host} failed: {e.reason or e}") from None


@lru_cache(maxsize=64)
def _salted(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)


def _authenticate(sock: socket.socket, token: bytes) -> bytes:
    body = exchange(sock, frame_v1(SASL_AUTHENTICATE, 1, struct.pack(">i", len(token)) + token))
    error = struct.unpack_from(">h", body, 4)[0]
    at = 6
    n = struct.unpack_from(">h", body, at)[0]
    message = body[at + 2:at + 2 + n].decode(errors="replace") if n > 0 else ""
    at += 2 + max(n, 0)
    if error:
        raise WireError(f"SASL authentication failed (error {error}): {message}")
    size = struct.unpack_from(">i", body, at)[0]
    return body[at + 4:at + 4 + max(size, 0)]


def _scram(sock: socket.socket, sec: WireSecurity) -> None:
    name = _HASHES[sec.mechanism]
    user = sec.username.replace("=", "=3D").replace(",", "=2C")
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n={user},r={nonce}"
    server_first = _authenticate(sock, f"n,,{first_bare}".encode()).decode()
    fields = dict(p.split("=", 1) for p in server_first.split(","))
    if not fields.get("r", "").startswith(nonce):
        raise WireError("SCRAM: the server's nonce does not extend ours")
    salted = _salted(name, sec.password, base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", name).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.new(name, client_key).digest(), auth_message, name).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    final = _authenticate(sock, f"{without_proof},p={proof}".encode()).decode()
    server_key = hmac.new(salted, b"Server Key", name).digest()
    expected = base64.b64encode(hmac.new(server_key, auth_message, name).digest()).decode()
    if final != f"v={expected}":
        raise WireError("SCRAM: the server's signature does not match")


def _sasl(sock: socket.socket, sec: WireSecurity) -> None:
    body = exchange(sock, frame_v1(SASL_HANDSHAKE, 1, _string(sec.mechanism.encode())))
    error = struct.unpack_from(">h", body, 4)[0]
    if error:
        raise WireError(f"the broker does not enable SASL mechanism {sec.mechanism} (error {error})")
    if sec.mechanism == "PLAIN":
        _authenticate(sock, b"\0" + sec.username.encode() + b"\0" + sec.password.encode())
    else:
        _scram(sock, sec)


def connect(host: str, port: int, timeout: float, security: WireSecurity | None = None) -> socket.socket:
    """A connected socket, through TLS and SASL as `security` says; the caller closes it."""
    sock: socket.socket = socket.create_connection((host, port), timeout=timeout)
    try:
        sock.settimeout(timeout)
        if security is not None and security.tls:
            sock = _tls(sock, host, security)
        if security is not None and security.sasl:
            _sasl(sock, security)
        return sock
    except BaseException:
        sock.close()
        raise


# -- flexible versions (KIP-482): unsigned varints, compact strings and arrays, tags --

def _uvarint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, at
        shift += 7


def _skip_tags(data: bytes, at: int) -> int:
    count, at = _uvarint(data, at)
    for _ in range(count):
        _, at = _uvarint(data, at)
        size, at = _uvarint(data, at)
        at += size
    return at


def uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def compact_string(s: str | None) -> bytes:
    """A COMPACT_(NULLABLE_)STRING: its length + 1 as an unsigned varint (0: null)."""
    if s is None:
        return b"\x00"
    data = s.encode()
    return uvarint(len(data) + 1) + data


def uuid_text(raw: bytes) -> str:
    """A Kafka Uuid as Kafka prints it (Uuid.toString): URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class FlexReader:
    """Reads a flexible response field by field (fixed-size fields in struct formats)."""

    def __init__(self, data: bytes, at: int = 0):
        self.data, self.at = data, at

    def take(self, fmt: str):
        value = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return value

    def uvarint(self) -> int:
        value, self.at = _uvarint(self.data, self.at)
        return value

    def string(self) -> str | None:
        """A COMPACT_(NULLABLE_)STRING."""
        n = self.uvarint() - 1
        if n < 0:
            return None
        s = self.data[self.at:self.at + n].decode()
        self.at += n
        return s

    def count(self) -> int:
        """A COMPACT_ARRAY's element count (-1: null)."""
        return self.uvarint() - 1

    def ints(self) -> tuple[int, ...]:
        return tuple(self.take(">i") for _ in range(max(0, self.count())))

    def uuid(self) -> str:
        raw = self.data[self.at:self.at + 16]
        self.at += 16
        return uuid_text(raw)

    def skip_tags(self) -> None:
        self.at = _skip_tags(self.data, self.at)

    def response_start(self, correlation_id: int, api: str,
                       error: type[Exception] = ValueError) -> None:
        """Past a flexible response's header v1 (correlation id, tags) and the
        ThrottleTimeMs its body starts with; `error` when the answer is to another
        request than `correlation_id`."""
        cid = self.take(">i")
        if cid != correlation_id:
            raise error(f"{api} answer for request {cid}, expected {correlation_id}")
        self.skip_tags()
        self.take(">i")                                 # throttle time


# -- DescribeQuorum (KRaft): the metadata quorum's leader ------------------------------

def describe_quorum_request(correlation: int = 1) -> bytes:
    topic = b"__cluster_metadata"
    body = (b"\x02" + bytes([len(topic) + 1]) + topic      # topics: [1], its name
            + b"\x02" + struct.pack(">i", 0) + b"\x00"     # partitions: [0], no tags
            + b"\x00" + b"\x00")                           # topic tags, request tags
    return frame_v2(DESCRIBE_QUORUM, 0, body, correlation)


def parse_quorum_leader(data: bytes) -> tuple[int, int | None]:
    """(error code, leader id) of a DescribeQuorum v0 response (after its size)."""
    at = _skip_tags(data, 4)                             # correlation id, header tags
    error = struct.unpack_from(">h", data, at)[0]
    at += 2
    if error:
        return error, None
    topics, at = _uvarint(data, at)
    if topics < 2:
        return 0, None
    name_len, at = _uvarint(data, at)
    at += name_len - 1
    partitions, at = _uvarint(data, at)
    if partitions < 2:
        return 0, None
    _index, perror, leader = struct.unpack_from(">ihi", data, at)
    return perror, (leader if leader >= 0 else None)


def quorum_leader(host: str, port: int, timeout: float,
                  security: WireSecurity | None = None) -> tuple[int, int | None]:
    with connect(host, port, timeout, security) as sock:
        return parse_quorum_leader(exchange(sock, describe_quorum_request()))
