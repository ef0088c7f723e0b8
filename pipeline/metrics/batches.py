"""Mini-batch communication of a partition: the exact volume of a sampled
batch, the closed-form expected volume for the node sampler, and the held-out
evaluation of every model as an xarray Dataset (the store's ``minibatch``
group)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp


class BatchSet:
    """The nets of a fixed list of mini-batches, built once, so that the
    volume of many partitions on the same batches costs one pass over their
    pins each (``shp`` compares its steps on one such set).

    Parameters
    ----------
    a_csc : (n, n) csc_matrix, Â
    batches : list of (B_i,) int64 sorted vertex ids
    """

    def __init__(self, a_csc: sp.csc_matrix, batches: list[np.ndarray]):
        from .hypergraph import batch_nets

        self.nets = batch_nets(a_csc, batches, keep_single=False)
        self.sizes = np.array([b.size for b in batches], np.int64)
        per_batch = self.nets.per_batch if self.nets.per_batch is not None else np.zeros(0, np.int64)
        self.batch_of_net = np.repeat(np.arange(len(batches), dtype=np.int64), per_batch)

    def __len__(self) -> int:
        return self.sizes.size

    def volumes(self, part: np.ndarray, parts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Exact communication of each batch under ``part``: ``(total (b,)
        int64, max_send (b,) int64, mean_lambda (b,) float64)`` as
        :func:`batch_volumes`."""
        from .hypergraph import net_connectivity

        b = self.sizes.size
        lam = net_connectivity(self.nets.ptr, self.nets.pins, part, parts)
        cut = lam - 1
        total = np.bincount(self.batch_of_net, weights=cut, minlength=b).astype(np.int64)
        send = np.bincount(self.batch_of_net * max(parts, 1) + part[self.nets.columns], weights=cut,
                           minlength=b * max(parts, 1)).reshape(b, max(parts, 1))
        # nets with one pin (not kept) have connectivity 1
        lam_sum = np.bincount(self.batch_of_net, weights=lam, minlength=b) + \
            (self.sizes - np.bincount(self.batch_of_net, minlength=b))
        return total, send.max(1).astype(np.int64), lam_sum / np.maximum(self.sizes, 1)

    def mean_volume(self, part: np.ndarray, parts: int) -> float:
        """Mean rows sent per SpMM over the batches."""
        from .hypergraph import net_connectivity

        lam = net_connectivity(self.nets.ptr, self.nets.pins, part, parts)
        return float((lam - 1).sum()) / max(self.sizes.size, 1)


def batch_volumes(a_csc: sp.csc_matrix, batches: list[np.ndarray], part: np.ndarray, parts: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact communication of each mini-batch under ``part``.

    For batch V', part q needs row j (j in V', owned elsewhere) iff some row
    of V' in part q has a nonzero in column j of Â[V', V'].

    Returns
    -------
    total : (b,) int64, rows sent per SpMM for each batch
    max_send : (b,) int64, the largest part's send volume for each batch
    mean_lambda : (b,) float64, mean connectivity of the batch's nets
    """
    return BatchSet(a_csc, batches).volumes(part, parts)


def _batch_pairs(a_csc: sp.csc_matrix, batch: np.ndarray, part: np.ndarray, parts: int, keep_single: bool):
    """The nets of one batch, their distinct (net, part) pairs, and each net's connectivity."""
    from .hypergraph import batch_nets

    nets = batch_nets(a_csc, [batch], keep_single=keep_single)
    net_of_pin = np.repeat(np.arange(nets.n_nets, dtype=np.int64), np.diff(nets.ptr))
    pairs = np.unique(net_of_pin * parts + part[nets.pins])
    return nets, pairs, np.bincount(pairs // parts, minlength=nets.n_nets)


def net_connectivities(a_csc: sp.csc_matrix, batch: np.ndarray, part: np.ndarray, parts: int) -> np.ndarray:
    """(B,) connectivity of every net of one batch (one per batch column, in
    column order; single-pin nets have connectivity 1)."""
    return _batch_pairs(a_csc, batch, part, parts, keep_single=True)[2]


def batch_traffic(a_csc: sp.csc_matrix, batch: np.ndarray, part: np.ndarray, parts: int
                  ) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Rows each part sends and receives for one mini-batch SpMM.

    Returns ``(send (P,), recv (P,), sum of net connectivities, nets)``
    (single-pin nets count with connectivity 1).
    """
    nets, pairs, lam = _batch_pairs(a_csc, batch, part, parts, keep_single=False)
    send = np.bincount(part[nets.columns], minlength=parts, weights=lam - 1).astype(np.int64)
    receiver = pairs % parts
    other = receiver != part[nets.columns[pairs // parts]]
    recv = np.bincount(receiver[other], minlength=parts).astype(np.int64)
    return send, recv, int(lam.sum() + (nets.total - nets.n_nets)), nets.total


def expected_volume_node(a: sp.csr_matrix, part: np.ndarray, parts: int, batch: int) -> tuple[float, np.ndarray]:
    """Closed-form expected volume of a node-sampled mini-batch (``batch``
    vertices drawn uniformly without replacement).

    Column j is in the batch with probability B/n; given that, part k (not
    j's owner) must receive row j unless none of the c_jk rows of part k with
    a nonzero in column j was drawn: probability prod_{t<c} (n-B-t)/(n-1-t).

    Returns the expected total volume and the (P,) expected send volume of each part.
    """
    n = a.shape[0]
    csc = sp.csc_matrix(a)
    cols = np.repeat(np.arange(n, dtype=np.int64), np.diff(csc.indptr))
    rows = csc.indices.astype(np.int64)
    other = part[rows] != part[cols]
    keys, c = np.unique(cols[other] * parts + part[rows[other]], return_counts=True)
    none = none_drawn(n, batch, int(c.max()) if c.size else 0)
    contrib = (batch / n) * (1.0 - none[c])
    send = np.bincount(part[keys // parts], weights=contrib, minlength=parts)
    return float(send.sum()), send


def none_drawn(n: int, batch: int, cmax: int) -> np.ndarray:
    """(cmax+1,) P(none of c given other vertices is among the batch-1 others
    drawn with a vertex), c = 0..cmax: prod_{t<c} (n-B-t)/(n-1-t)."""
    t = np.arange(cmax, dtype=np.float64)
    return np.concatenate([[1.0], np.cumprod(np.clip((n - batch - t) / np.maximum(n - 1 - t, 1), 0, 1))])


def mean_ci(x: np.ndarray, z: float = 1.96) -> tuple[float, float]:
    """Mean and half-width of its normal-approximation 95% confidence interval."""
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2:
        return float(x.mean()) if x.size else float("nan"), float("nan")
    return float(x.mean()), float(z * x.std(ddof=1) / np.sqrt(x.size))


def minibatch_dataset(a: sp.csr_matrix, sampler, parts_by_model: dict[str, np.ndarray], parts: int, *,
                      eval_batches: int, theta: float, delta: float, convergence_model: str | None = None):
    """Mini-batch quality of every model, as an xarray Dataset.

    The held-out batches are batches 0..eval_batches-1 of the HELDOUT stream,
    which nothing builds or chooses with (``shp`` chooses its steps on the
    VALIDATION stream, or the closed form for the node sampler); the
    attributes name every stream used (``heldout_stream``,
    ``validation_stream``, ``build_stream``, ``streams``).

    Variables (dim ``model``): ``heldout_volume_mean`` / ``_ci`` (95%),
    ``heldout_max_send_mean`` / ``_ci``, ``heldout_connectivity`` (mean λ of
    the held-out nets), ``expected_volume`` (closed form; node sampler only,
    NaN otherwise), ``estimated_connectivity`` (mean λ over the first
    Hoeffding-many nets of the BUILD stream, batch by batch and in column
    order within a batch; within ±θ of the expectation with probability 1-δ); per (model, eval_batch): ``heldout_volume``; and,
    for ``convergence_model``, the running mean of λ against nets sampled
    (dim ``point``).
    """
    import xarray as xr

    from shgcn.core.sample import BUILD, HELDOUT

    from .hypergraph import hoeffding_nets

    a_csc = sp.csc_matrix(a)
    held = BatchSet(a_csc, sampler.batches(range(eval_batches), HELDOUT))
    required = hoeffding_nets(parts, theta, delta)
    # BUILD batches: twice the Hoeffding count of nets, and at least 20 batches, for the convergence record
    per_batch = max(1, sampler.cfg.size)
    build_batches = sampler.batches(range(max(20, -(-2 * required // per_batch))), BUILD)
    scoring = _Scoring(a, a_csc, held, build_batches, sampler, required)
    models = list(parts_by_model)
    out: dict[str, list] = {k: [] for k in ("vol", "vol_ci", "mx", "mx_ci", "lam", "closed", "est", "per_batch")}
    conv = None
    for m in models:
        running = scoring.model_stats(parts_by_model[m], parts, out)
        if m == convergence_model:
            pick = np.unique(np.linspace(0, running.size - 1, 500).astype(np.int64))
            conv = (pick + 1, running[pick])
    data = {
        "heldout_volume_mean": (("model",), np.array(out["vol"])),
        "heldout_volume_ci": (("model",), np.array(out["vol_ci"])),
        "heldout_max_send_mean": (("model",), np.array(out["mx"])),
        "heldout_max_send_ci": (("model",), np.array(out["mx_ci"])),
        "heldout_connectivity": (("model",), np.array(out["lam"])),
        "expected_volume": (("model",), np.array(out["closed"])),
        "estimated_connectivity": (("model",), np.array(out["est"])),
        "heldout_volume": (("model", "eval_batch"), np.stack(out["per_batch"])),
    }
    if conv is not None:
        data["convergence_nets"] = (("point",), conv[0])
        data["convergence_mean_connectivity"] = (("point",), conv[1])
    ds = xr.Dataset(data, coords={"model": models})
    ds.attrs.update(_attrs(sampler, theta, delta, required, eval_batches, convergence_model))
    return ds


@dataclass(frozen=True)
class _Scoring:
    """What every model of :func:`minibatch_dataset` is scored on: Â (CSR and
    CSC), the HELDOUT batches, the BUILD batches, the sampler and the
    Hoeffding count of nets."""

    a: sp.csr_matrix
    a_csc: sp.csc_matrix
    held: BatchSet
    build_batches: list
    sampler: Any
    required: int

    def model_stats(self, part: np.ndarray, parts: int, out: dict[str, list]) -> np.ndarray:
        """Append one model's numbers to ``out``; returns its running mean λ over the BUILD nets."""
        tot, mx, lam = self.held.volumes(part, parts)
        out["per_batch"].append(tot)
        for key, x in (("vol", tot), ("mx", mx)):
            mean, ci = mean_ci(x)
            out[key].append(mean)
            out[key + "_ci"].append(ci)
        out["lam"].append(float(lam.mean()))
        cfg = self.sampler.cfg
        out["closed"].append(expected_volume_node(self.a, part, parts, cfg.size)[0] if cfg.spec.closed_form
                             else float("nan"))
        lam_seq = np.concatenate([net_connectivities(self.a_csc, b, part, parts) for b in self.build_batches])
        running = np.cumsum(lam_seq) / np.arange(1, lam_seq.size + 1)
        out["est"].append(float(running[min(max(self.required, 1), running.size) - 1]))
        return running


def _attrs(sampler, theta: float, delta: float, required: int, eval_batches: int,
           convergence_model: str | None) -> dict:
    from shgcn.core.sample import BUILD, HELDOUT, VALIDATION

    node = sampler.cfg.spec.closed_form
    return {"sampler": sampler.cfg.kind, "batch_size": int(sampler.cfg.size), "theta": theta,
            "delta": delta, "required_nets": int(required), "eval_batches": int(eval_batches),
            "convergence_model": convergence_model or "", "seed": int(sampler.cfg.seed),
            "heldout_stream": HELDOUT, "validation_stream": VALIDATION, "build_stream": BUILD,
            "streams": (f"heldout_*: batches 0..{eval_batches - 1} of stream {HELDOUT} (seed sequence "
                        f"[seed, {HELDOUT}, k]), never used to build or choose a partition; shp chose its "
                        + ("steps by the closed form (node sampler)" if node else
                           f"steps on stream {VALIDATION}") +
                        f"; estimated_connectivity and the convergence record: stream {BUILD}, "
                        "which shp builds from")}


@dataclass(frozen=True)
class MinibatchReport:
    """A model's request for the mini-batch quality of every model of the
    build (the store's ``minibatch`` dataset): the sampler, the held-out
    batches, the Hoeffding parameters, and whose convergence to record."""

    sampler: Any  # shgcn.core.sample.SamplerConfig
    eval_batches: int
    theta: float
    delta: float
    convergence_model: str | None = None

    def compute(self, a: sp.csr_matrix, graph: sp.csr_matrix, parts_by_model: dict[str, np.ndarray], parts: int):
        """The dataset (see :func:`minibatch_dataset`)."""
        from shgcn.core.sample import Sampler

        return minibatch_dataset(a, Sampler(graph, self.sampler), parts_by_model, parts,
                                 eval_batches=self.eval_batches, theta=self.theta, delta=self.delta,
                                 convergence_model=self.convergence_model)
