"""Secrets in client settings: references resolved only when used, never written.

A client setting's value may name where its secret lives instead of holding it:

    sasl.password: ${env:KAFKA_PASSWORD}          # an environment variable
    ssl.key.password: ${file:/run/secrets/key}    # a file's content (a trailing newline dropped)
    sasl.jaas.config: '... password="${env:PW}";'  # inside a longer value too

The scenario model keeps the references; `resolve` replaces them when a client is
made. Whatever is written (scenario.yaml, the manifest, phase details) goes through
`redacted`: a reference stays (it names no secret), a literal value of a secret
setting (`sasl.password: hunter2`) becomes `***`. `Redactor` scrubs the resolved
secret values out of text the harness did not write itself (an exec command's output,
an error message) before it is recorded or printed.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from core.errors import SpecError

REFERENCE = re.compile(r"\$\{(env|file):([^}]*)\}")
HIDDEN = "***"
# Setting names whose values are secrets (Kafka's PASSWORD-type settings and librdkafka's).
_SECRET_WORDS = ("password", "secret", "jaas", "token", "credential", "key.pem", "private")


def is_secret_key(key: str) -> bool:
    low = key.lower()
    return any(w in low for w in _SECRET_WORDS)


def has_reference(value: object) -> bool:
    return isinstance(value, str) and REFERENCE.search(value) is not None


def _one(kind: str, name: str, where: str) -> str:
    if kind == "env":
        if not name:
            raise SpecError(where, "${env:} names no variable", "write ${env:NAME}")
        value = os.environ.get(name)
        if value is None:
            raise SpecError(where, f"the environment variable {name} is not set",
                            f"export {name}=… before the run, or give the value another way")
        return value
    path = Path(name).expanduser()
    try:
        return path.read_text().rstrip("\n")
    except OSError as e:
        raise SpecError(where, f"${{file:{name}}} cannot be read ({e.strerror})",
                        "give a readable file's absolute path") from None


def resolve_value(value: str, where: str) -> str:
    """One value with each ${env:…}/${file:…} replaced; SpecError naming `where` if a
    reference cannot be resolved (the message names the variable or file, never a value)."""
    return REFERENCE.sub(lambda m: _one(m.group(1), m.group(2).strip(), where), value)


def resolve(settings: Mapping[str, str], where: str) -> dict[str, str]:
    """Every setting resolved; `where` is the field of the mapping (`…client_config`)."""
    return {k: resolve_value(v, f"{where}.{k}") if isinstance(v, str) else v
            for k, v in settings.items()}


def redacted(settings: Mapping[str, str]) -> dict[str, str]:
    """For writing: references kept, a secret setting's literal value hidden."""
    out = {}
    for k, v in settings.items():
        text = str(v)
        if is_secret_key(k) and not has_reference(text):
            out[k] = HIDDEN
        elif is_secret_key(k) and has_reference(text):
            # a JAAS line: its literal parts may hold the secret; keep only the references
            out[k] = text if REFERENCE.fullmatch(text.strip()) else \
                " ".join(m.group(0) for m in REFERENCE.finditer(text)) + f" {HIDDEN}"
        else:
            out[k] = text
    return out


def secret_values(raw: Mapping[str, str], resolved: Mapping[str, str]) -> set[str]:
    """The secret strings a resolved mapping holds: every secret setting's value and
    whatever a reference brought in (a password read from a file under any name)."""
    found: set[str] = set()
    for k, v in raw.items():
        text = str(v)
        for m in REFERENCE.finditer(text):
            try:
                found.add(_one(m.group(1), m.group(2).strip(), k))
            except SpecError:
                pass
        if is_secret_key(k):
            found.add(str(resolved.get(k, text)))
            found |= set(re.findall(r'password="([^"]+)"', str(resolved.get(k, ""))))
    return {s for s in found if len(s) >= 4}


class Redactor:
    """Scrubs known secret values out of text (longest first, so no part survives)."""

    def __init__(self, secrets: Iterable[str] = ()):
        self._secrets: set[str] = {s for s in secrets if s}

    def add(self, secrets: Iterable[str]) -> None:
        self._secrets |= {s for s in secrets if s}

    def __call__(self, text: str) -> str:
        for s in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(s, HIDDEN)
        return text

    def __bool__(self) -> bool:
        return bool(self._secrets)
