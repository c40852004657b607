"""Paths that may live on any filesystem pyarrow and Spark both read.

A run directory is a local path or a URI (file://, s3://, hdfs://, gs://…), so
a nightly job can keep histories on shared storage. Small files (summary,
HTML, JUnit, scenario), Parquet footers and the history's few low-cardinality
columns (validation) go through pyarrow's filesystem layer; the big tables go
through Spark.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs


@dataclass(frozen=True)
class RunLocation:
    """Where a run directory lives: `fs` + `base` for pyarrow, `uri` for Spark."""
    fs: pafs.FileSystem
    base: str            # path inside fs, no trailing slash
    uri: str             # what Spark reads (a URI or an absolute local path)

    @classmethod
    def of(cls, run_dir: str) -> "RunLocation":
        run_dir = str(run_dir)
        if "://" in run_dir and not run_dir.startswith("file://"):
            fs, base = pafs.FileSystem.from_uri(run_dir)
            return cls(fs, base.rstrip("/"), run_dir.rstrip("/"))
        local = run_dir[len("file://"):] if run_dir.startswith("file://") else run_dir
        local = str(Path(local).resolve())
        return cls(pafs.LocalFileSystem(), local, local)

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, pafs.LocalFileSystem)

    def path(self, *parts: str) -> str:
        return posixpath.join(self.base, *parts)

    def spark_path(self, *parts: str) -> str:
        return posixpath.join(self.uri, *parts)

    def exists(self, *parts: str) -> bool:
        return self.fs.get_file_info(self.path(*parts)).type != pafs.FileType.NotFound

    def is_dir(self, *parts: str) -> bool:
        return self.fs.get_file_info(self.path(*parts)).type == pafs.FileType.Directory

    def list_parquet(self, *parts: str) -> list[str]:
        """Complete part files under a directory (dot- and underscore-prefixed names skipped,
        as Spark does: those are temporary files of a writer still at work)."""
        d = self.path(*parts)
        if not self.is_dir(*parts):
            return []
        infos = self.fs.get_file_info(pafs.FileSelector(d, recursive=False))
        return sorted(i.path for i in infos
                      if i.type == pafs.FileType.File and i.base_name.endswith(".parquet")
                      and not i.base_name.startswith((".", "_")))

    def read_text(self, *parts: str) -> str | None:
        if not self.exists(*parts):
            return None
        with self.fs.open_input_stream(self.path(*parts)) as f:
            return f.read().decode("utf-8")

    def write_bytes(self, data: bytes, *parts: str) -> None:
        self.fs.create_dir(posixpath.dirname(self.path(*parts)), recursive=True)
        with self.fs.open_output_stream(self.path(*parts)) as f:
            f.write(data)

    def write_text(self, text: str, *parts: str) -> None:
        self.write_bytes(text.encode("utf-8"), *parts)

    def display(self, path: str) -> str:
        """A path as the user typed it (for error messages)."""
        return path if self.is_local else f"{self.uri.split('://')[0]}://{path}"
