"""GAT (Veličković et al.), multi-head, as PyG's ``GATConv``: layer k computes
per head h

    Z = H W,  e_ij = LeakyReLU(a_dst·Z_i + a_src·Z_j),  alpha_i = softmax_j(e_i),
    out_i = sum_j dropout(alpha_ij) Z_j

over each row's neighbours in Â's pattern (self loops included, as GATConv
adds them), heads concatenated on hidden layers (then ELU) and averaged on
the last, plus a bias; dropout on every layer's input and on the attention.

Communication: the owner of row j sends Z_j (heads x d wide) to the ranks
whose rows attend to it; a receiver computes a_src·Z_j itself. The rows
without a received neighbour attend while the messages travel. Backward,
the gradient of a received Z_j (through the aggregation and through its
score) is a sum over the receiver's rows: it is folded back to the owner of
j, every layer (first included), and the owner adds it to its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shgcn.core import archs as specs

from ..backends import Attention, Backend, Noise
from ..graph import Graph
from .base import Layer, Stack, glorot

SLOPE = 0.2  # LeakyReLU's negative slope (GATConv's default)


def _block_diag(be: Backend, a: Any) -> Any:
    """(H, d) attention vectors (a backend array) -> (H d, H) block-diagonal matrix: Z @ it gives every head's
    score."""
    heads, d = a.shape
    out = be.zeros((heads * d, heads))
    out[np.arange(heads * d), np.repeat(np.arange(heads), d)] = a.reshape(-1)
    return out


class GATLayer(Layer):
    """``w`` (d_in, H d), ``a_src`` and ``a_dst`` (H, d), ``b`` (H d, or d on the last layer)."""

    names, decay = ("w", "a_src", "a_dst", "b"), ("w",)

    def __init__(self, model: Stack, k: int, rng: np.random.Generator):
        super().__init__(model, k, rng)
        h, d = model.heads[k], model.dims[k + 1]
        d_in = model.heads[k - 1] * model.dims[k] if k else model.dims[0]
        self.w, self.a_src, self.a_dst = (model.be.asarray(x) for x in (glorot(rng, d_in, h * d), glorot(rng, h, d),
                                                                         glorot(rng, h, d)))
        self.b = model.be.zeros((d if self.last else h * d,))

    def forward(self, hd: Any, graph: Graph, noise: Noise | None) -> tuple[Any, tuple]:
        """One layer's aggregation: interior rows while Z's rows travel, then the boundary rows."""
        heads, d = self.a_src.shape
        be, n, csr = self.be, graph.n_own, graph.csr
        cp = graph.ex.cp
        att = Attention(csr, be.empty((csr.shape[1], heads * d)), be.empty((csr.shape[1], heads)), None, SLOPE,
                        graph.gids, graph.col_gids, noise, self.k)
        att.z[:n] = be.gemm(hd, self.w)  # own rows, then received ones
        both = be.gemm(att.z[:n], be.concat([_block_diag(be, self.a_src), _block_diag(be, self.a_dst)], 1))  # 2 scores
        att.s_src[:n] = both[:, :heads]
        att.s_dst = be.concat([both[:, heads:]], 1)
        att.alpha, att.alpha_d = be.empty((csr.nnz, heads)), be.empty((csr.nnz, heads))
        att.out = be.empty((n, heads * d))  # every row is written once (interior, then boundary)
        interior, boundary = graph.split_rows

        def local():
            be.gat_forward(interior, att)

        def on_block(q, rows):
            lo = n + cp.recv_start[q]
            att.z[lo:lo + rows.shape[0]] = be.from_host(rows)

        graph.ex.expand(be.host_rows(att.z[:n]), local, on_block)
        if att.z.shape[0] > n:
            att.s_src[n:] = be.gemm(att.z[n:], _block_diag(be, self.a_src))
        be.gat_forward(boundary, att)
        out = att.out.reshape(n, heads, d).mean(1) if self.last else att.out
        return be.add(out, bias=self.b), (hd, att)

    def backward(self, saved: tuple, g: Any, graph: Graph) -> tuple[list[Any], Any]:
        """dL/dZ of the own rows (the received rows' partial sums folded back in) gives those of ``w`` and the
        input; those of a_src, a_dst and b on the way."""
        hd, att = saved
        z = att.z
        heads, d = self.a_src.shape
        be, n, cp = self.be, graph.n_own, graph.ex.cp
        db, da = be.colsum(g), []
        if self.last:  # the mean over heads
            g = be.concat([g / np.float32(heads)] * heads, 1)
        dz, ds_src, ds_dst = be.gat_backward(att, g)
        bd = be.concat([_block_diag(be, self.a_src).T, _block_diag(be, self.a_dst).T], 0)  # (2H, H d)
        both = be.concat([ds_src[:n], ds_dst], 1)
        be.add(dz[:n], be.gemm(both, bd), out=dz[:n])
        if dz.shape[0] > n:
            be.add(dz[n:], be.gemm(ds_src[n:], bd[:heads]), out=dz[n:])
        own = dz[:n]
        parts = {q: be.to_host(dz[n + cp.recv_start[q]:n + cp.recv_start[q + 1]]) for q, _ in cp.recv_from}

        def local():  # the attention vectors' gradients while the partial sums travel
            g_both = be.gemm_tn(z[:n], both)
            halo = be.gemm_tn(z[n:], ds_src[n:]) if z.shape[0] > n else 0
            da.extend([_diag_blocks(g_both[:, :heads] + halo, heads, d), _diag_blocks(g_both[:, heads:], heads, d)])

        def on_block(rows, buf):
            own[rows] += be.from_host(buf)

        graph.ex.fold(parts, heads * d, local, on_block)
        return [be.gemm_tn(hd, own), *da, db], (None if self.first else be.gemm(own, self.w.T))


class GAT(Stack):
    """Per layer: ``w`` (d_in, H d), ``a_src`` and ``a_dst`` (H, d), ``b`` (H d, or d on the last layer)."""

    spec = specs.GAT

    layer, stream, act, keeps = GATLayer, 0x6A7, "elu", True

    def attn_rate(self, dropout: float) -> float:
        """``--attn-dropout``, by default the input dropout (PyG's examples use one rate for both)."""
        own = self.options["attn_dropout"]
        return dropout if own is None else float(own)


def _diag_blocks(m: Any, heads: int, d: int) -> Any:
    """(H d, H) -> (H, d): the block-diagonal entries (each head's own gradient)."""
    return m.reshape(heads, d, heads)[np.arange(heads), :, np.arange(heads)]
