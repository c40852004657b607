"""Scratch.remove after an interrupt: a cancelled write's tasks can still be deleting
their _temporary files while the views' directory is walked (a CI run's Ctrl-C in
verify failed on a vanished '.crc'). The directory below is real; the walk's race is
played by a filesystem whose first deletes meet a vanished file."""
from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from spark_reports.scratch import Scratch


class _Loc:
    def __init__(self, root, vanishing: int):
        self.root, self.vanishing, self.fs = root, vanishing, self

    def path(self, *parts):
        return str(self.root.joinpath(*parts))

    def exists(self, *parts):
        return self.root.joinpath(*parts).exists()

    def delete_dir(self, path):
        if self.vanishing:
            self.vanishing -= 1
            raise FileNotFoundError(f"Cannot get information for path '{path}/x.crc'")
        pafs.LocalFileSystem().delete_dir(path)


def _views(tmp_path):
    (tmp_path / "report" / "_views" / "offsets" / "_temporary").mkdir(parents=True)
    (tmp_path / "report" / "_views" / "offsets" / "_temporary" / "part.parquet").write_bytes(b"x")


def test_a_file_vanishing_during_the_walk_is_retried_until_the_views_are_gone(tmp_path):
    _views(tmp_path)
    Scratch(None, _Loc(tmp_path, vanishing=3)).remove(within_s=10)
    assert not (tmp_path / "report" / "_views").exists()


def test_still_vanishing_at_the_deadline_is_raised(tmp_path):
    _views(tmp_path)
    with pytest.raises(FileNotFoundError):
        Scratch(None, _Loc(tmp_path, vanishing=10**6)).remove(within_s=0.5)


def test_the_error_that_stopped_the_pipeline_is_the_one_raised(tmp_path):
    """Called from a `finally` while an interrupt is on its way, a scratch directory that
    will not go away does not replace the interrupt."""
    _views(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        try:
            raise KeyboardInterrupt
        finally:
            Scratch(None, _Loc(tmp_path, vanishing=10**6)).remove(within_s=0.5)
