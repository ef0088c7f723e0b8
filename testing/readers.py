"""What every graph reader must do: the conformance class that each reader's
tests subclass (as :class:`~shgcn.testing.partitioners.PartitionerTests` for
the partition models). A new format gets these tests by subclassing
:class:`ReaderTests`::

    class TestMyFormat(ReaderTests):
        fmt = "mine"                       # its name in the registry (--format)
        edges = [(0, 1), (2, 0)]           # exactly the (source, target) pairs the sample holds
        n, directed = 3, None              # what the reader says of the sample's size and direction

        def write(self, tmp_path):         # a small input of the format; returns its path
            ...

        def write_malformed(self, tmp_path):   # a bad input: (its path, a fragment of the error line)
            ...
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import readers, registry
from shgcn.pipeline.sources.base import Recognizes


def pairs(raw) -> list[tuple[int, int]]:
    """The (source, target) pairs a read brought to the client, sorted."""
    return sorted(zip(raw.src.tolist(), raw.dst.tolist()))


class ReaderTests:
    """Subclass and set ``fmt``, ``edges``, ``n``, ``directed``; define
    :meth:`write` and :meth:`write_malformed`."""

    fmt: str = ""
    edges: list[tuple[int, int]] = []
    n: int | None = None
    directed: bool | None = None

    def write(self, tmp_path: Path) -> Path:
        raise NotImplementedError

    def write_malformed(self, tmp_path: Path) -> tuple[Path, str]:
        raise NotImplementedError

    def test_registered_under_its_name(self):
        r = registry.get(self.fmt)
        assert r.name == self.fmt and self.fmt in registry.formats()
        assert isinstance(r.recognizes, Recognizes) and r.recognizes != Recognizes()

    def test_detected_from_its_path(self, tmp_path):
        assert registry.detect(self.write(tmp_path)) == self.fmt

    @pytest.mark.parametrize("given", [False, True], ids=["detected", "format-given"])
    def test_reads_exactly_the_sample_graph(self, tmp_path, client, given):
        raw = readers.read(self.write(tmp_path), self.fmt if given else None, client)
        assert pairs(raw) == sorted(self.edges)
        assert raw.n == self.n and raw.directed == self.directed and raw.lines == len(self.edges)

    def test_malformed_input_is_one_line_naming_the_file(self, tmp_path, client):
        path, fragment = self.write_malformed(tmp_path)
        with pytest.raises(UserError) as e:
            readers.read(path, self.fmt, client)
        message = str(e.value)
        assert "\n" not in message and str(path) in message and fragment in message, message

    def test_a_missing_path_is_one_line_naming_it(self, tmp_path, client):
        (tmp_path / "sample").mkdir()
        missing = tmp_path / "absent" / self.write(tmp_path / "sample").name
        with pytest.raises(UserError) as e:
            readers.read(missing, self.fmt, client)
        assert "\n" not in str(e.value) and str(missing) in str(e.value)

    def test_its_check_before_a_build_passes_its_file_and_names_a_missing_one(self, tmp_path):
        """``precheck`` (what ``pipeline build --plan`` checks, on this machine) takes the sample and refuses a
        missing path in one line naming it (the file it would open first, for a format whose path names its files);
        ``names_files`` is a bool."""
        r = registry.get(self.fmt)
        r.precheck(str(self.write(tmp_path)), None)
        (tmp_path / "sample").mkdir()
        missing = tmp_path / "absent" / self.write(tmp_path / "sample").name
        with pytest.raises(UserError) as e:
            r.precheck(str(missing), None)
        assert "\n" not in str(e.value) and str(tmp_path / "absent") in str(e.value)
        assert isinstance(r.names_files, bool)
