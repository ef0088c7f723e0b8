"""Numba kernels of the CPU backend: counter-based dropout fused with the
activation and the multiply, and GAT's attention (scores, softmax, dropout,
aggregation, and their backward) over a rank's local CSR.

Random numbers come from Philox4x32-10 (Salmon et al., SC'11; the generator
behind numpy's ``Philox``), keyed by the seed and counted by (column block,
vertex, epoch, layer and stream): a vertex's mask is a pure function of its
original id, whichever rank holds it, for any P and any row order, and no
state is carried between calls. One Philox call gives 128 bits: eight 16-bit
draws, one per column of an 8-column block (``keep = draw >= threshold``, the
rate quantized to 1/65536 and the scale 65536 / (65536 - threshold), so the
kept values' expectation is exact).

Every kernel here is serial (``--threads 1``: the ranks are the parallelism)
and compiled once per machine (``cache=True``); :mod:`.parallel` runs the
per-row ones over threads (``--threads T``), with the same results.
"""

from __future__ import annotations

import numba
import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_LO = np.uint64(0xFFFFFFFF)
_S32, _S16 = np.uint64(32), np.uint64(16)
NODE, ATTENTION = 0, 1  # stream tags (the counter's fourth word)


@numba.njit(cache=True, inline="always")
def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counter (c0..c3) under key (k0, k1), all uint64 < 2**32."""
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = ((p1 >> _S32) ^ c1 ^ k0) & _LO, p1 & _LO, ((p0 >> _S32) ^ c3 ^ k1) & _LO, p0 & _LO
        k0 = (k0 + _W0) & _LO
        k1 = (k1 + _W1) & _LO
    return c0, c1, c2, c3


@numba.njit(cache=True, inline="always")
def _hi(g):
    """Bits 32-39 of an id, placed in the top byte of the counter's fourth word."""
    return ((g >> _S32) & np.uint64(0xFF)) << np.uint64(24)


@numba.njit(cache=True, inline="always")
def _draw(words, lane):
    """The 16-bit draw of ``lane`` (0..7) of a Philox output."""
    w = words[lane >> 1]
    return (w >> (_S16 * np.uint64(lane & 1))) & np.uint64(0xFFFF)


@numba.njit(cache=True, inline="always")
def _eight(out, at, w0, w1, w2, w3, threshold, sc):
    """``out[at:at + 8]`` = 0 or ``sc``: the eight 16-bit draws of one Philox output."""
    zero = np.float32(0)
    mask = np.uint64(0xFFFF)
    out[at] = sc if (w0 & mask) >= threshold else zero
    out[at + 1] = sc if (w0 >> _S16) >= threshold else zero
    out[at + 2] = sc if (w1 & mask) >= threshold else zero
    out[at + 3] = sc if (w1 >> _S16) >= threshold else zero
    out[at + 4] = sc if (w2 & mask) >= threshold else zero
    out[at + 5] = sc if (w2 >> _S16) >= threshold else zero
    out[at + 6] = sc if (w3 & mask) >= threshold else zero
    out[at + 7] = sc if (w3 >> _S16) >= threshold else zero


@numba.njit(cache=True, inline="always")
def _row_scales(mult, g, key, ctr, threshold, sc):
    """``mult[c]`` = 0 or ``sc``: the mask of row ``g`` (original id), eight columns per Philox call."""
    hi = ctr[1] ^ _hi(g)
    lo = g & _LO
    for b in range(mult.size // 8):
        w0, w1, w2, w3 = philox(np.uint64(b), lo, ctr[0], hi, key[0], key[1])
        _eight(mult, 8 * b, w0, w1, w2, w3, threshold, sc)


@numba.njit(cache=True, nogil=True)
def dropout_dense(h, gids, key, ctr, threshold, scale, act, out, keep):
    """``out = act(h) * mask`` row by row, mask 0 or ``scale``: the row's
    draws first (Philox), then one vectorizable pass over its columns.

    h, out : (n, d) float32 (may be the same array); gids : (n,) int64;
    key : (2,) uint64; ctr : (2,) uint64 (epoch, layer | stream << 8; attention adds head block << 12);
    threshold : uint64 (0: no dropout); act : 0 none, 1 ReLU, 2 ELU;
    keep : (n, d) uint8 written with the mask when it has n rows (else ignored).
    """
    dropout_rows(0, h.shape[0], h, gids, key, ctr, threshold, scale, act, out, keep)
    return out


@numba.njit(cache=True, inline="always")
def dropout_rows(lo, hi, h, gids, key, ctr, threshold, scale, act, out, keep):
    """Rows ``lo:hi`` of :func:`dropout_dense` (a row's result depends on that row only: the parallel
    kernel, :mod:`.parallel`, gives each thread its own rows)."""
    n, d = h.shape
    store = keep.shape[0] == n
    sc = np.float32(scale)
    zero = np.float32(0)
    mult = np.full(((d + 7) // 8) * 8, sc, np.float32)
    for i in range(lo, hi):
        if threshold > 0:
            _row_scales(mult, np.uint64(gids[i]), key, ctr, threshold, sc)
        if act == 1:
            for c in range(d):
                out[i, c] = max(h[i, c], zero) * mult[c]
        elif act == 2:
            for c in range(d):
                v = h[i, c]
                out[i, c] = (v if v > 0 else np.float32(np.expm1(v))) * mult[c]
        else:
            for c in range(d):
                out[i, c] = h[i, c] * mult[c]
        if store:
            for c in range(d):
                keep[i, c] = mult[c] != 0


@numba.njit(cache=True, nogil=True)
def dropout_sparse(data, indices, indptr, gids, key, ctr, threshold, scale, out):
    """Dropout of a CSR matrix's stored values (the same mask as
    :func:`dropout_dense` gives the same entries); out : like data."""
    sc = np.float32(scale)
    for i in range(indptr.size - 1):
        g = np.uint64(gids[i])
        for p in range(indptr[i], indptr[i + 1]):
            c = np.uint64(indices[p])
            words = philox(c >> np.uint64(3), g & _LO, ctr[0], ctr[1] ^ _hi(g), key[0], key[1])
            k = _draw(words, np.int64(c & np.uint64(7))) >= threshold
            out[p] = data[p] * sc if k else np.float32(0)
    return out


@numba.njit(cache=True, nogil=True)
def relu_dropout_grad(g, hd, scale):
    """In place: ``g *= scale * (hd > 0)`` (hd = the dropped ReLU output:
    positive exactly where the unit was kept and active)."""
    n, d = g.shape
    sc = np.float32(scale)
    zero = np.float32(0)
    for i in range(n):
        for c in range(d):
            g[i, c] = g[i, c] * (sc if hd[i, c] > 0 else zero)
    return g


@numba.njit(cache=True, inline="always")
def elu_grad_rows(lo, hi, g, hd, keep, scale):
    """Rows ``lo:hi`` of :func:`elu_dropout_grad` (a row's gradient depends on that row only: the parallel
    kernel, :mod:`.parallel`, gives each thread its own rows)."""
    n, d = g.shape
    sc = np.float32(scale)
    for i in range(lo, hi):
        for c in range(d):
            if keep.shape[0] == n and keep[i, c] == 0:
                g[i, c] = 0
            else:
                v = hd[i, c] / sc
                g[i, c] = g[i, c] * sc * (np.float32(1) if v > 0 else v + np.float32(1))


@numba.njit(cache=True, nogil=True)
def elu_dropout_grad(g, hd, keep, scale):
    """In place: the gradient through dropout (``keep``, ``scale``) and ELU,
    whose derivative is 1 above 0 and ELU(z) + 1 below (from hd / scale)."""
    elu_grad_rows(0, g.shape[0], g, hd, keep, scale)
    return g


@numba.njit(cache=True, nogil=True)
def gat_forward(rows, indptr, indices, z, s_src, s_dst, slope, rgid, cgid, key, ctr, threshold, scale,
                alpha, alpha_d, out):
    """Attention of ``rows`` over their CSR neighbours (own and received columns).

    z : (m, H*d) float32, Z = H W of every local column (own rows first);
    s_src (m, H), s_dst (n, H): the heads' scores a_src·z_j and a_dst·z_i;
    rgid (n,), cgid (m,): original ids (attention-dropout counters); writes
    alpha (nnz, H) (softmax), alpha_d (nnz, H) (after dropout) and out[rows].
    Every pass runs over a row's edges with the heads innermost (contiguous).
    """
    gat_rows(0, rows.size, rows, indptr, indices, z, s_src, s_dst, slope, rgid, cgid, key, ctr, threshold, scale,
             alpha, alpha_d, out)
    return out


@numba.njit(cache=True, inline="always")
def gat_rows(lo_i, hi_i, rows, indptr, indices, z, s_src, s_dst, slope, rgid, cgid, key, ctr, threshold, scale,
             alpha, alpha_d, out):
    """:func:`gat_forward` of ``rows[lo_i:hi_i]`` (a row writes only its own edges and output row, so row
    ranges may run on different threads)."""
    heads = s_dst.shape[1]
    d = z.shape[1] // heads
    m = np.empty(heads, np.float32)
    tot = np.empty(heads, np.float32)
    for i in range(lo_i, hi_i):
        r = rows[i]
        lo, hi = indptr[r], indptr[r + 1]
        m[:] = -np.inf
        tot[:] = 0
        for p in range(lo, hi):
            j = indices[p]
            for h in range(heads):
                e = s_dst[r, h] + s_src[j, h]
                e = e if e > 0 else e * slope
                alpha[p, h] = e
                m[h] = max(m[h], e)
        for p in range(lo, hi):
            for h in range(heads):
                v = np.exp(alpha[p, h] - m[h])
                alpha[p, h] = v
                tot[h] += v
        for p in range(lo, hi):
            for h in range(heads):
                alpha[p, h] /= tot[h]
        _attend(r, lo, hi, indices, z, rgid, cgid, key, ctr, threshold, scale, alpha, alpha_d, out, heads, d)


@numba.njit(cache=True, inline="always")
def _attend(r, lo, hi, indices, z, rgid, cgid, key, ctr, threshold, scale, alpha, alpha_d, out, heads, d):
    """Attention dropout (one Philox call per edge and 8 heads) and the
    aggregation of row r: each edge's per-column weights, then one
    contiguous multiply-add over the row of Z (all heads at once)."""
    gi = np.uint64(rgid[r])
    sc = np.float32(scale)
    hd = heads * d
    blocks = (heads + 7) // 8
    keep = np.full(blocks * 8, sc, np.float32)
    acc = np.zeros(hd, np.float32)
    aw = np.empty(hd, np.float32)
    for p in range(lo, hi):
        j = indices[p]
        if threshold > 0:  # counter: (row id, column id, epoch, layer | stream | head block | high bits)
            gj = np.uint64(cgid[j])
            for hb in range(blocks):
                c3 = ctr[1] ^ (np.uint64(hb) << np.uint64(12)) ^ _hi(gi) ^ (_hi(gj) << np.uint64(4))
                w0, w1, w2, w3 = philox(gi & _LO, gj & _LO, ctr[0], c3 & _LO, key[0], key[1])
                _eight(keep, 8 * hb, w0, w1, w2, w3, threshold, sc)
        for h in range(heads):
            a = alpha[p, h] * keep[h]
            alpha_d[p, h] = a
            for c in range(d):  # range(d), not range(h * d, ...): LLVM vectorizes this one
                aw[h * d + c] = a
        for c in range(hd):
            acc[c] += aw[c] * z[j, c]
    for c in range(hd):
        out[r, c] = acc[c]


@numba.njit(cache=True, nogil=True)
def gat_backward(indptr, indices, z, g, s_src, s_dst, slope, alpha, alpha_d, dz, ds_src, ds_dst):
    """Gradients of one GAT aggregation for all own rows, from g = dL/dout (n, H*d).

    Accumulates dz (m, H*d) through the aggregation (received columns too:
    partial sums for their owners), ds_src (m, H) and ds_dst (n, H) through
    the scores (softmax, LeakyReLU, attention dropout). A column's sums run
    over its rows in ascending order (what :mod:`.parallel`'s column pass
    repeats)."""
    width = 0
    for r in range(indptr.size - 1):
        width = max(width, indptr[r + 1] - indptr[r])
    de = np.zeros((width, s_dst.shape[1]), np.float32)
    live = np.zeros(width, np.bool_)
    dot = np.empty(s_dst.shape[1], np.float32)
    for r in range(indptr.size - 1):
        lo, hi = indptr[r], indptr[r + 1]
        gat_score_grads(r, lo, hi, lo, indices, z, g, s_src, s_dst, slope, alpha, alpha_d, de, live, dot, ds_dst)
        for p in range(lo, hi):
            gat_column_grads(indices[p], r, p, p - lo, g, alpha_d, de, live, dz, ds_src)
    return dz


@numba.njit(cache=True, inline="always")
def gat_score_grads(r, lo, hi, base, indices, z, g, s_src, s_dst, slope, alpha, alpha_d, de, live, dot, ds_dst):
    """Row r's part of :func:`gat_backward` that stays in the row (its edges ``lo:hi``): each edge p's score
    gradient ``de[p - base]`` (H) and whether any head kept it (``live[p - base]``), and ds_dst[r];
    ``dot`` (H,) is scratch."""
    heads = s_dst.shape[1]
    d = z.shape[1] // heads
    dot[:] = 0
    for p in range(lo, hi):
        j = indices[p]
        q = p - base
        live[q] = False
        for h in range(heads):
            live[q] = live[q] or alpha_d[p, h] != 0
            de[q, h] = 0
        if not live[q]:  # every head dropped (or underflowed): no gradient through this edge
            continue
        for h in range(heads):
            a_d = alpha_d[p, h]
            if a_d != 0:  # d alpha = d alpha_d * (mask * scale) = d alpha_d * alpha_d / alpha
                s = np.float32(0)
                for c in range(h * d, (h + 1) * d):
                    s += g[r, c] * z[j, c]
                de[q, h] = s * (a_d / alpha[p, h])  # da, until the pass below
                dot[h] += alpha[p, h] * de[q, h]
    for p in range(lo, hi):
        j = indices[p]
        q = p - base
        for h in range(heads):
            e = alpha[p, h] * (de[q, h] - dot[h])
            if s_dst[r, h] + s_src[j, h] <= 0:
                e *= slope
            de[q, h] = e
            ds_dst[r, h] += e


@numba.njit(cache=True, inline="always")
def gat_column_grads(j, r, p, q, g, alpha_d, de, live, dz, ds_src):
    """Edge p = (r, j)'s part of :func:`gat_backward` that lands in column j: dz[j] through the aggregation
    (when a head kept the edge) and ds_src[j] (``de[q]``, ``live[q]`` from :func:`gat_score_grads`)."""
    heads = ds_src.shape[1]
    d = dz.shape[1] // heads
    if live[q]:
        for h in range(heads):
            a = alpha_d[p, h]
            for c in range(h * d, (h + 1) * d):
                dz[j, c] += a * g[r, c]
    for h in range(heads):
        ds_src[j, h] += de[q, h]


@numba.njit(cache=True, nogil=True)
def softmax_xent(logits, labels, idx, w, inv_total, g):
    """Masked softmax cross-entropy of rows ``idx``: writes their gradient
    (softmax - onehot) * w / total into g (zero elsewhere); returns the
    weighted loss sum (float64) and the count of correct rows."""
    c = logits.shape[1]
    loss = 0.0
    correct = 0
    e = np.empty(c, np.float32)
    for t in range(idx.size):
        i = idx[t]
        m = logits[i, 0]
        arg = 0
        for k in range(1, c):
            if logits[i, k] > m:
                m = logits[i, k]
                arg = k
        tot = np.float32(0)
        for k in range(c):
            e[k] = np.exp(logits[i, k] - m)
            tot += e[k]
        y = labels[i]
        loss -= w[t] * (np.float64(logits[i, y] - m) - np.log(np.float64(tot)))
        correct += arg == y
        f = np.float32(w[t] * inv_total) / tot
        for k in range(c):
            g[i, k] = e[k] * f
        g[i, y] -= np.float32(w[t] * inv_total)
    return loss, correct
