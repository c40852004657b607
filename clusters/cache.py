"""Where the harness keeps what it builds once: images' inputs, the Maven version
list, the Spark driver's class archive (HARNESS_CACHE, default ~/.cache/kafka-harness)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    d = Path(os.environ.get("HARNESS_CACHE", Path.home() / ".cache" / "kafka-harness"))
    d.mkdir(parents=True, exist_ok=True)
    return d
