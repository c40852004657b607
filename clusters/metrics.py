"""Reads a node's Prometheus JMX exporter endpoint into {metric: value}."""
from __future__ import annotations

import math

import requests

_session = requests.Session()


def parse_prometheus(text: str) -> dict[str, float]:
    """Metric name → value; a labelled series is also stored under 'name{labels}'.
    An unlabelled name takes the value of its last series."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        try:
            series, value = line.rsplit(" ", 1)
            v = float(value)
        except ValueError:
            continue
        if math.isnan(v):
            continue
        out[series] = v
        out[series.split("{", 1)[0]] = v
    return out


def scrape(ip: str, port: int, timeout: float = 2.0) -> dict[str, float]:
    """Empty dict when the node does not answer (down, paused, partitioned)."""
    try:
        r = _session.get(f"http://{ip}:{port}/metrics", timeout=timeout)
        r.raise_for_status()
    except requests.RequestException:
        return {}
    return parse_prometheus(r.text)
