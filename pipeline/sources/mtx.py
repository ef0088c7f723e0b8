"""Matrix Market coordinate files (``.mtx``, optionally gzip): the
``%%MatrixMarket`` banner and the size line are both optional, entries are
1-based; parsed in parallel (:mod:`.text`).

Without a banner, the first data line is a size line only if it has three
integers and the third equals the number of entries that follow; the
symmetry is then decided after parsing (all entries in one triangle:
symmetric)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..errors import located
from .base import RawSource, ReadOptions, Recognizes
from .probe import Probe, check_declared, int_words
from .text import TextReader

log = logging.getLogger(__name__)


def mtx_header(pb: Probe, lines: list[bytes], limit: int | None = None) -> Probe:
    """The probe of a Matrix Market file with its banner and size line (both optional)."""
    path = pb.path
    symmetric: bool | None = None
    banner_words: list[str] = []
    i = 0
    if lines and lines[0].startswith(b"%%MatrixMarket"):
        banner_words = lines[0].decode("latin-1").lower().split()
        if len(banner_words) < 5 or banner_words[1] != "matrix" or banner_words[2] != "coordinate":
            raise located(path, "only 'matrix coordinate' Matrix Market files are supported", 1)
        symmetric = banner_words[4] in ("symmetric", "skew-symmetric", "hermitian")
        i = 1
    while i < len(lines) and (lines[i].startswith(b"%") or not lines[i].strip()):
        i += 1
    header_bytes = sum(len(x) for x in lines[:i])
    first_words = lines[i].split() if i < len(lines) else []
    banner = symmetric is not None
    n: int | None = None
    entries: int | None = None
    if first_words and (banner or len(first_words) == 3):
        words: list[int] = int_words(lines[i], path, i + 1, "size line")
        if len(words) != 3:
            raise located(path, f"bad size line {lines[i].strip()!r}: expected 'rows columns entries'", i + 1)
        rows, cols, nnz = words
        if banner or _count_data_lines(path, pb.gzip, header_bytes + len(lines[i])) == nnz:
            if rows != cols:
                raise located(path, f"matrix is {rows} x {cols}; an adjacency matrix must be square", i + 1)
            check_declared(path, rows, i + 1, limit, nnz)
            n, entries = rows, nnz
            header_bytes += len(lines[i])
            i += 1
    field = banner_words[3] if banner and len(banner_words) > 3 else None
    kwargs: dict = {"max_id": n, "base": 1}
    if field in ("pattern", "real", "integer", "double"):  # scipy's reader parses the entries (complex: the tokenizer)
        kwargs["mtx_field"] = field
    return Probe(pb.path, pb.fmt, pb.size, pb.gzip, pb.members, i, header_bytes, n, 1,
                 None if symmetric is None else not symmetric, entries, "pairs", kwargs)


def _count_data_lines(path: str, gz: bool, offset: int) -> int:
    import gzip

    with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
        f.read(offset)
        count, last = 0, b"\n"
        while block := f.read(1 << 24):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


@dataclass(frozen=True)
class MatrixMarket(TextReader):
    """The Matrix Market reader: its header (:func:`mtx_header`), entries
    parsed in parallel, then the declared sizes and the symmetry."""

    def finish(self, tasks, pb: Probe, raw: RawSource, opts: ReadOptions) -> None:
        """The declared entry count holds; without a size line the largest id
        is the size; without a banner, entries all in one triangle are a
        symmetric matrix."""
        edges = raw.lines
        if pb.entries is not None and edges != pb.entries:
            raise located(pb.path, f"the size line declares {pb.entries:,} entries but the file has {edges:,} "
                                   "(a truncated or corrupt file?)")
        if raw.n is None:
            raw.n = max(m.max_id for m in raw.metas if m.edges) + 1
            check_declared(pb.path, raw.n, None, opts.limit, raw.lines)
        if raw.directed is None and (all(m.lower for m in raw.metas) or all(m.upper for m in raw.metas)):
            log.info("%s: no banner and all entries in one triangle: reading as symmetric", pb.path)
            raw.directed = False


READER = MatrixMarket("mtx", Recognizes(suffixes=(".mtx",)), head=mtx_header)
