"""Where the harness keeps what it builds once: images' inputs, the Maven version
list, the Spark driver's class archive (HARNESS_CACHE, default ~/.cache/kafka-harness)."""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_dir() -> Path:
    d = Path(os.environ.get("HARNESS_CACHE", Path.home() / ".cache" / "kafka-harness"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@contextmanager
def built_in_place(out: Path, prefix: str) -> Iterator[Path]:
    """A fresh directory beside `out` to build in (readable by all: containers mount
    what is built), renamed to `out` when the block ends without error, so a run beside
    us never sees half of one (if one made it first, its copy stays); removed whatever
    happened."""
    out.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=prefix, dir=out.parent))
    try:
        build.chmod(0o755)
        yield build
        try:
            build.rename(out)
        except OSError:
            pass                           # a run beside us made it first
    finally:
        shutil.rmtree(build, ignore_errors=True)
