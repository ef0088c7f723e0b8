"""Vectorized tokenizer for whitespace-separated integer text (edge lists,
Matrix Market entries, METIS adjacency lines).

A chunk of bytes is split into tokens and parsed into int64 with numpy only:
no Python loop per line or per token. Problems are reported as a
:class:`ChunkError` with the chunk-local line number, so that the caller, who
knows how many lines came before the chunk, can name the global line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_MAX_DIGITS = 18  # 10**18 < 2**63
_POW10 = 10 ** np.arange(_MAX_DIGITS, dtype=np.int64)


@dataclass(frozen=True)
class ChunkError:
    line: int  # 0-based, within the chunk
    message: str


@dataclass
class Tokens:
    """Integer tokens of one chunk.

    Attributes
    ----------
    values : (T,) int64
        Parsed tokens, in file order.
    line : (T,) int64
        0-based chunk-local line of each token.
    col : (T,) int64
        0-based position of each token within its line.
    n_lines : int
        Lines owned by the chunk (the last one may lack its newline).
    comment_lines : (C,) int64
        Chunk-local lines that are comments.
    error : ChunkError or None
        The first problem found, if any.
    """

    values: np.ndarray
    line: np.ndarray
    col: np.ndarray
    n_lines: int
    comment_lines: np.ndarray
    error: ChunkError | None = None


def count_lines(data: bytes) -> int:
    """Lines in ``data``: newlines, plus one for an unterminated last line."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def tokenize(data: bytes, comment_chars: bytes = b"#%", max_cols: int | None = None) -> Tokens:
    """Split ``data`` into integer tokens.

    Parameters
    ----------
    data : bytes
        Whole lines of text (CRLF, tabs and spaces all accepted).
    comment_chars : bytes
        A line whose first token starts with one of these is a comment.
    max_cols : int, optional
        Keep (and validate) only the first ``max_cols`` tokens of each line;
        the rest of the line (weights, ``{}``...) is ignored.
    """
    b = np.frombuffer(data, dtype=np.uint8)
    n_lines = count_lines(data)
    empty = np.zeros(0, np.int64)
    if b.size == 0:
        return Tokens(empty, empty, empty, 0, empty)
    starts, ends, line = _token_spans(b)

    first = np.ones(line.size, dtype=bool)
    first[1:] = line[1:] != line[:-1]
    group = np.cumsum(first) - 1
    col = np.arange(line.size, dtype=np.int64) - np.flatnonzero(first)[group]

    is_comment_first = np.isin(b[starts[first]], np.frombuffer(comment_chars, np.uint8))
    comment_lines = line[first][is_comment_first]
    keep = ~is_comment_first[group]
    if max_cols is not None:
        keep &= col < max_cols
    starts, ends, line, col = starts[keep], ends[keep], line[keep], col[keep]

    lengths = ends - starts
    too_long = np.flatnonzero(lengths > _MAX_DIGITS)
    if too_long.size:
        t = too_long[0]
        tok = bytes(b[starts[t]:ends[t]]).decode("latin-1")
        what = "number too large:" if tok.lstrip("-").isdigit() else "non-numeric token"
        if tok.startswith("-") and tok[1:].isdigit():
            what = "negative id"
        return Tokens(empty, empty, empty, n_lines, comment_lines,
                      ChunkError(int(line[t]), f"{what} {_text(b, starts[t], ends[t])!r}"))
    values, bad = _values(b, starts, lengths)
    if bad >= 0:
        tok = _text(b, starts[bad], ends[bad])
        what = "negative id" if tok.startswith("-") and tok[1:].isdigit() else "non-numeric token"
        if tok[:2] in ("0x", "0X"):
            return Tokens(empty, empty, empty, n_lines, comment_lines,
                          ChunkError(int(line[bad]), f"hexadecimal id {tok!r}: vertex ids must be decimal integers"))
        return Tokens(empty, empty, empty, n_lines, comment_lines,
                      ChunkError(int(line[bad]), f"{what} {tok!r}"))
    return Tokens(values, line, col, n_lines, comment_lines)


def _token_spans(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, line) of every whitespace-separated token of ``b``."""
    sep = (b == 32) | (b == 9) | (b == 13) | (b == 10) | (b == 11) | (b == 12)
    prev_sep = np.empty_like(sep)
    prev_sep[0] = True
    prev_sep[1:] = sep[:-1]
    next_sep = np.empty_like(sep)
    next_sep[-1] = True
    next_sep[:-1] = sep[1:]
    starts = np.flatnonzero(~sep & prev_sep)
    ends = np.flatnonzero(~sep & next_sep) + 1
    del sep, prev_sep, next_sep
    newlines = np.flatnonzero(b == 10)
    return starts, ends, np.searchsorted(newlines, starts, side="right").astype(np.int64)


def _values(b: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, int]:
    """The tokens' values as decimal integers, and the first token that is
    not all digits (-1: none)."""
    total = int(lengths.sum())
    offsets = np.cumsum(lengths) - lengths
    within = np.arange(total, dtype=np.int64) - np.repeat(offsets, lengths)
    digits = b[np.repeat(starts, lengths) + within] - np.uint8(48)  # uint8 wraps: non-digits > 9
    bad = np.flatnonzero(digits > 9)
    if bad.size:
        return np.zeros(0, np.int64), int(np.searchsorted(offsets, bad[0], side="right") - 1)
    power = _POW10[np.repeat(lengths, lengths) - 1 - within]
    return (np.add.reduceat(digits.astype(np.int64) * power, offsets) if total else np.zeros(0, np.int64)), -1


def _text(b: np.ndarray, start: int, end: int) -> str:
    return bytes(b[start:min(end, start + 40)]).decode("latin-1")
