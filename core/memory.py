"""Memory: this machine's, sizes on the command line (``--memory-limit``),
and the modelled bytes a training rank holds (what ``shgcn-train`` checks
against the limit before it trains, and what ``pipeline simulate`` shows).

The rank model counts, for ``rows`` rows of a block with ``nnz`` nonzeros and
``halo`` received rows: the matrix (its split by column blocks and the
transposed or pattern copy: 16 bytes a nonzero; the memory-mapped block is
read once, beside the split, and its pages then dropped; a directed store's
stored Â^T plan only checked, and dropped too: :func:`shgcn.store.release_pages`),
the features, each layer's cached input and output and their gradients
(float32), the received rows at the widest exchange, and GAT's attention
coefficients (two per nonzero and head). It is a model, not a measurement:
it leaves out the interpreter and the libraries (measured about 195 MiB a rank on a small R-MAT
store, and 240-250 MiB beyond the model at R-MAT scale 20, ``mpirun -n 2``; the trainer's summary line
shows the busiest rank's peak beside its modelled bytes).
Replication (``--algorithm 1.5d --replication c``) gives c ranks the same
block, so the job holds c times the 1D job's blocks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .costs import Job

_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
# the split by column blocks (float32 values, int32 indices: 8 bytes a nonzero) and its transposes (a directed
# Â's backward) or pattern (GraphSAGE, GIN) or side-by-side copy (GAT): 8 more; while the split is made, the
# memory-mapped block's pages (8) sit beside it instead
BYTES_PER_NONZERO = 16


def machine_memory() -> int:
    """This machine's memory in bytes: the physical memory, or the cgroup's
    limit (a container, a batch job) when that is lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total


def peak_resident() -> int:
    """This process's peak resident memory so far, bytes (``VmHWM``; where
    ``/proc`` has none, ``getrusage``'s maximum)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def resident_anon() -> int:
    """This process's anonymous resident memory now, bytes (``RssAnon`` of ``/proc/self/status``: not the page
    cache's file pages a memory-mapped store occupies); 0 where ``/proc`` has none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def parse_size(text: str) -> int:
    """``8G``, ``512M``, ``1.5T``, ``24GiB`` or a byte count -> bytes (binary
    units); ``ValueError`` for anything else."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtTpP]?)(?:i?[bB])?\s*", text)
    if m is None:
        raise ValueError(f"expected a size like 8G, 512M or 1.5T, got {text!r}")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not value >= 1:
        raise ValueError(f"a memory limit must be at least one byte, got {text!r}")
    return int(value)


MAX_BYTES = 2**63 - 1  # the most bytes a size may say (an int64): the CLIs' option checks refuse more


def size_argument(text: str) -> int:
    """The command lines' ``SIZE`` (``--memory-limit``): :func:`parse_size`, an ``argparse`` error for a
    malformed one, and :data:`MAX_BYTES` + 1 for more than any size (``1e400``: the options' check says so in
    one line)."""
    import argparse

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    except OverflowError:
        return MAX_BYTES + 1


def gib(nbytes: float) -> str:
    """A size for a message: ``1.5 GiB``, ``320 MiB``, ``3.6 TiB``."""
    for unit, size in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:,.1f} {unit}"
    return f"{int(nbytes)} bytes"


@dataclass(frozen=True)
class Held:
    """What one rank holds of its block (scalars, or (P,) arrays for every rank).

    Attributes
    ----------
    rows : rows of the block the rank holds (all of its block row's under 1.5D and 2D)
    nnz : nonzeros of Â it keeps (its block row's; block (i, j)'s under 2D)
    halo : rows it receives (the 1D halo; its share under 1.5D's reduce)
    buffer_nnz : nonzeros of the largest block it receives (2D: Â's blocks travel)
    sent : rows it copies into send buffers at once (the 1D exchange's ``x[rows]`` for every neighbour,
        held until the sends complete; 1.5D: the larger of its column exchange's and its row reduce's)
    """

    rows: Any
    nnz: Any
    halo: Any
    buffer_nnz: Any = 0
    sent: Any = 0


PARAM_BYTES = 16  # a float32 weight, its gradient and Adam's two moments


def model_bytes(job: Job) -> int:
    """Modelled bytes of the model every rank holds whole: :data:`PARAM_BYTES`
    per weight of the layers' ``in_k x out_k`` matrices (the GCN shape; an
    architecture with a second matrix per layer holds about twice that)."""
    ins = job.spec.in_widths(list(job.dims), job.layer_heads)
    outs = [d * h for d, h in zip(job.dims[1:], job.layer_heads)]
    return PARAM_BYTES * sum(int(i) * int(o) for i, o in zip(ins, outs))


def rank_bytes(held: Held, job: Job):
    """Modelled bytes one rank holds while training ``job`` (a scalar, or (P,) for arrays in ``held``):
    the matrix, the features, every layer's activations and gradients, the received rows at the widest
    exchange, the rows packed to send at the widest exchange and the architecture's per-nonzero state
    (attention coefficients)."""
    rows, nnz, halo = (np.asarray(x, np.int64) for x in (held.rows, held.nnz, held.halo))
    spec, dims, hs = job.spec, list(job.dims), job.layer_heads
    ins = spec.in_widths(dims, hs)
    outs = [d * h for d, h in zip(dims[1:], hs)]
    fwd, bwd = spec.exchanges(dims, False, hs)
    widest = max(w for w, _ in fwd + bwd)
    act = 8 * rows * sum(a + b for a, b in zip(ins[1:] + [0], outs)) + 4 * rows * ins[0]
    attention = spec.attention_bytes * nnz * sum(hs)
    return (BYTES_PER_NONZERO * nnz + 8 * np.asarray(held.buffer_nnz, np.int64) + 16 * rows + 4 * rows * dims[0]
            + act + 4 * (halo + np.asarray(held.sent, np.int64)) * widest + attention)


# an out-of-core mini-batch step's gather, per nonzero of the batch rows it reads (of Â, and of Â^T for the send
# lists): its position and row (int64 each, :func:`shgcn.core.csr.segments`), its column and that column's global
# id and place in the batch (int64 each), its value (float32) and the in-batch flag: 48 bytes
GATHER_BYTES_PER_NONZERO = 48
# per batch vertex: the sampler's draw and its sorted new ids, the walks (rw), the eval batch's ids (int64 each)
SAMPLE_BYTES_PER_VERTEX = 64


def batch_fan_in(rows: int, total: int, squares: float, sampler: str = "node", walk_length: int = 2) -> float:
    """The expected nonzeros of a batch row of a block of ``rows`` rows with ``total`` nonzeros and ``squares``
    the sum of its rows' squared nonzero counts: the mean row for the node and edge samplers (uniform rows; the
    edge sampler favours low degrees); for rw the mean over a walk's steps, its root uniform and every later
    vertex drawn by degree (sum d^2 / sum d)."""
    if rows == 0 or total == 0:
        return 0.0
    mean = total / rows
    from .sample import SAMPLERS

    if not SAMPLERS[sampler].walks:
        return mean
    return (mean + walk_length * squares / total) / (walk_length + 1)


def outofcore_bytes(job: Job, batch: int, share: float, fan_in: float, t_fan_in: float, parts: int) -> int:
    """Modelled bytes an out-of-core mini-batch rank holds beyond the page cache (the model aside: the caller
    adds :func:`model_bytes`): a batch of ``batch`` vertices of which the rank owns ``share`` (its fraction of
    the vertices), each row with ``fan_in`` nonzeros of Â and ``t_fan_in`` of Â^T read from the store. It
    counts :func:`rank_bytes` of the batch's rows (their matrix taken at every nonzero read, before the batch
    keeps its own: an upper bound), the gather's index arrays, and the draw; the received rows are at most the
    batch's other vertices, the sent rows one copy per other rank. The block's size enters only through the
    mean fan-in: it is bounded by the batch and the model, not by the block."""
    rows = int(np.ceil(batch * share))
    gathered = int(np.ceil(rows * fan_in))
    t_gathered = int(np.ceil(rows * t_fan_in))
    held = Held(rows, gathered, min(batch - rows, gathered), sent=min(rows * max(parts - 1, 0), t_gathered))
    return (int(rank_bytes(held, job)) + GATHER_BYTES_PER_NONZERO * (gathered + t_gathered)
            + SAMPLE_BYTES_PER_VERTEX * batch)
