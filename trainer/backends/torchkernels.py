"""The torch backend's kernels as torch operations, on whatever device the tensors are on: counter-based
dropout masks with the numpy backend's bits, the losses and GAT's attention forward and backward.

Philox4x32-10 in 64-bit integer tensors
---------------------------------------
The masks are the numba kernels' (:mod:`.kernels`) bit for bit: the same Philox4x32-10 on the same counters
(column block, vertex id, epoch, layer | stream | high id bits) under the same key (the seed). torch has no
32-bit unsigned multiply-high, so every 32-bit word lives in an int64 tensor and each product of a 32-bit
round constant and a word is formed from the constant's two 16-bit halves: both partial products stay below
2**48, so nothing overflows a signed 64-bit integer on any device (int64 wrap-around is undefined behaviour in
C++, and the compilers behind torch's CPU, CUDA and Triton kernels need not keep it).

Eagerly that is about 220 elementwise operations per mask; :func:`compiled` fuses each function into one
kernel per device with ``torch.compile`` (Triton on a GPU, C++ on the CPU) when it works here, and falls back
to the eager functions (the same results: integer arithmetic is exact) when it does not.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import torch

log = logging.getLogger(__name__)

_LO = 0xFFFFFFFF
_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
NODE, ATTENTION = 0, 1  # stream tags (the counter's fourth word), as kernels.NODE / kernels.ATTENTION


def _mulhilo(m: int, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(high, low) 32-bit words of ``m * c`` for a 32-bit constant m and int64 c holding 32-bit words."""
    a = c * (m >> 16)  # < 2**48
    b = c * (m & 0xFFFF)  # < 2**48; m c = a 2**16 + b
    lo = (((a & 0xFFFF) << 16) + b) & _LO
    hi = (a + (b >> 16)) >> 16
    return hi, lo


def philox(c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, c3: torch.Tensor, k0: torch.Tensor,
           k1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Philox4x32-10 of counter (c0..c3) under key (k0, k1): int64 tensors of 32-bit words (broadcast)."""
    for _ in range(10):
        hi0, lo0 = _mulhilo(_M0, c0)
        hi1, lo1 = _mulhilo(_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + _W0) & _LO
        k1 = (k1 + _W1) & _LO
    return c0, c1, c2, c3


def _hi(g: torch.Tensor) -> torch.Tensor:
    """Bits 32-39 of an id in the top byte of a 32-bit word (kernels._hi)."""
    return ((g >> 32) & 0xFF) << 24


Words = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def _draws(w0: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, w3: torch.Tensor, width: int) -> torch.Tensor:
    """(n, width) int64 16-bit draws from the four (n, B) Philox words of (n, B) counters: column c is block
    ``c >> 3``'s lane ``c & 7``, the low or high half of word ``(c & 7) >> 1`` (the kernels' lane order). Made
    as (n, B, 8), each counter's lanes side by side: contiguous, no gather."""
    lane = torch.arange(8, dtype=torch.int64, device=w0.device)
    which = lane >> 1
    v = torch.where(which == 0, w0[:, :, None], torch.where(which == 1, w1[:, :, None],
                                                            torch.where(which == 2, w2[:, :, None], w3[:, :, None])))
    return ((v >> ((lane & 1) << 4)) & 0xFFFF).reshape(w0.shape[0], w0.shape[1] * 8)[:, :width]  # 0 rows too


def mask_of_words(words: Words, width: int, threshold: int, scale: float) -> torch.Tensor:
    """(n, width) float32 0 or ``scale``: a column is kept where its 16-bit draw (:func:`_draws`) is at least
    ``threshold``. Not fused with the words' function on purpose: fused, each of a counter's eight columns
    would compute its Philox again."""
    return torch.where(_draws(*words, width) >= threshold, scale, 0.0).to(torch.float32)


def dropout_words(h: torch.Tensor, words: Words, threshold: int, scale: float, act: int, keep: bool
                  ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``act(h) * mask`` (float32; act 0 none, 1 ReLU, 2 ELU) and the keep mask (uint8) when ``keep``, the mask
    from the Philox words (:func:`mask_of_words`): one pass over h, the mask never stored."""
    x = h.to(torch.float32)
    if act == 1:
        x = torch.relu(x)
    elif act == 2:
        x = torch.where(x > 0, x, torch.expm1(x))
    kept = _draws(*words, h.shape[1]) >= threshold
    out = x * torch.where(kept, scale, 0.0).to(torch.float32)
    return out, (kept.to(torch.uint8) if keep else None)


def dense_words(gids: torch.Tensor, blocks: int, key: torch.Tensor, ctr: torch.Tensor) -> Words:
    """Four (n, blocks) int64 Philox words of rows of ids ``gids`` (n,) int64, column blocks 0..blocks-1
    (:func:`.kernels.dropout_dense`'s counters); ``key`` and ``ctr`` (2,) int64 (:meth:`.base.Noise.key`,
    ``ctr``)."""
    b = torch.arange(blocks, dtype=torch.int64, device=gids.device)[None, :]
    g = gids.to(torch.int64)[:, None]
    return philox(b, g & _LO, ctr[0], ctr[1] ^ _hi(g), key[0], key[1])


def dense_mask(gids: torch.Tensor, width: int, key: torch.Tensor, ctr: torch.Tensor, threshold: int,
               scale: float) -> torch.Tensor:
    """(n, width) float32: 0 or ``scale``, the mask of :func:`.kernels.dropout_dense` for rows of ids ``gids``;
    ``threshold`` the 16-bit draw below which a unit drops."""
    return mask_of_words(dense_words(gids, (width + 7) // 8, key, ctr), width, threshold, scale)


def sparse_mask(rows: torch.Tensor, cols: torch.Tensor, gids: torch.Tensor, key: torch.Tensor, ctr: torch.Tensor, *,
                threshold: int, scale: float) -> torch.Tensor:
    """(nnz,) float32 0 or ``scale`` for stored entries (row ``rows``, column ``cols``) of a CSR input: the
    entries :func:`dense_mask` gives (:func:`.kernels.dropout_sparse`)."""
    g = gids.to(torch.int64)[rows]
    c = cols.to(torch.int64)
    w0, w1, w2, w3 = philox(c >> 3, g & _LO, ctr[0], ctr[1] ^ _hi(g), key[0], key[1])
    lane = c & 7
    which = lane >> 1
    v = torch.where(which == 0, w0, torch.where(which == 1, w1, torch.where(which == 2, w2, w3)))
    draw = (v >> ((lane & 1) << 4)) & 0xFFFF
    return torch.where(draw >= threshold, scale, 0.0).to(torch.float32)


def edge_words(gi: torch.Tensor, gj: torch.Tensor, blocks: int, key: torch.Tensor, ctr: torch.Tensor
               ) -> Words:
    """Four (E, blocks) int64 Philox words of GAT's attention dropout for edges (row id ``gi``, column id ``gj``)
    (E,) int64, one Philox call per edge and 8 heads (:func:`.kernels._attend`)."""
    gi, gj = gi.to(torch.int64)[:, None], gj.to(torch.int64)[:, None]
    hb = torch.arange(blocks, dtype=torch.int64, device=gi.device)[None, :]
    c3 = (ctr[1] ^ (hb << 12) ^ _hi(gi) ^ (_hi(gj) << 4)) & _LO
    return philox(gi & _LO, gj & _LO, ctr[0], c3, key[0], key[1])


def edge_mask(gi: torch.Tensor, gj: torch.Tensor, heads: int, key: torch.Tensor, ctr: torch.Tensor, *,
              threshold: int, scale: float) -> torch.Tensor:
    """(E, heads) float32 0 or ``scale``: GAT's attention dropout of edges (:func:`edge_words`)."""
    return mask_of_words(edge_words(gi, gj, (heads + 7) // 8, key, ctr), heads, threshold, scale)


# ----------------------------------------------------------------- losses
def softmax_xent(logits: torch.Tensor, labels: torch.Tensor, idx: torch.Tensor, w: torch.Tensor, inv_total: float
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Masked softmax cross-entropy of rows ``idx`` (weights ``w``, float32): (loss sum (float64, 0-d), gradient
    (n, C) float32 ((softmax - onehot) w / total on idx, zero elsewhere), correct rows (int64, 0-d)):
    :func:`.kernels.softmax_xent`'s float32 steps."""
    z = logits[idx]
    m, arg = z.max(1)
    e = torch.exp(z - m[:, None])
    tot = e.sum(1)
    y = labels[idx]
    zy = torch.gather(z, 1, y[:, None])[:, 0]
    loss = -(w.double() * ((zy - m).double() - torch.log(tot.double()))).sum()
    wt = (w * inv_total).to(torch.float32)
    gi = e * (wt / tot)[:, None]
    gi.scatter_add_(1, y[:, None], -wt[:, None])
    g = torch.zeros_like(logits)
    g[idx] = gi
    return loss, g, (arg == y).sum()


def sigmoid_bce(logits: torch.Tensor, labels: torch.Tensor, idx: torch.Tensor, w: torch.Tensor, inv_total: float
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """A sigmoid per class and binary cross-entropy summed over the classes (float64, the numpy backend's
    stable form): (loss sum 0-d, gradient (n, C) float32, zero outside idx)."""
    z = logits[idx].double()
    y = labels[idx].double()
    per_row = (torch.logaddexp(torch.zeros((), dtype=z.dtype, device=z.device), -z.abs()) + z.clamp(min=0)
               - z * y).sum(1)
    g = torch.zeros_like(logits)
    g[idx] = ((torch.sigmoid(z) - y) * (w.double() * inv_total)[:, None]).to(torch.float32)
    return (per_row * w.double()).sum(), g


# ----------------------------------------------------------------- attention
def gat_scores(s_dst: torch.Tensor, s_src: torch.Tensor, erow: torch.Tensor, ecol: torch.Tensor, n: int,
               slope: float) -> torch.Tensor:
    """(E, H) the softmax over each row's edges of LeakyReLU(s_dst[row] + s_src[col]) (rows ``erow`` local
    0..n-1, sorted; columns ``ecol``)."""
    e = s_dst[erow] + s_src[ecol]
    e = torch.where(e > 0, e, e * slope)
    heads = e.shape[1]
    idx = erow[:, None].expand(-1, heads)
    m = torch.full((n, heads), float("-inf"), dtype=e.dtype, device=e.device).scatter_reduce_(
        0, idx, e, "amax", include_self=True)
    ex = torch.exp(e - m[erow])
    tot = torch.zeros((n, heads), dtype=e.dtype, device=e.device).index_add_(0, erow, ex)
    return ex / tot[erow]


def gat_aggregate(alpha_d: torch.Tensor, z: torch.Tensor, erow: torch.Tensor, ecol: torch.Tensor, n: int
                  ) -> torch.Tensor:
    """(n, H d): out[r] = sum over r's edges of alpha_d[e, h] z[col, h-block], heads concatenated."""
    heads = alpha_d.shape[1]
    d = z.shape[1] // heads
    msg = (z.reshape(-1, heads, d)[ecol] * alpha_d[:, :, None]).reshape(-1, heads * d)
    return torch.zeros((n, heads * d), dtype=z.dtype, device=z.device).index_add_(0, erow, msg)


def gat_backward(z: torch.Tensor, g: torch.Tensor, scores: tuple[torch.Tensor, torch.Tensor],
                 alphas: tuple[torch.Tensor, torch.Tensor], edges: tuple[torch.Tensor, torch.Tensor], slope: float
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dz (m, H d), ds_src (m, H), ds_dst (n, H)) of one GAT aggregation from g = dL/dout (n, H d), over all
    edges (the math of :func:`.kernels.gat_backward`): through the aggregation, the attention dropout, the
    softmax and the LeakyReLU. ``scores`` (s_src (m, H), s_dst (n, H)), ``alphas`` (alpha, alpha_d (E, H)),
    ``edges`` (rows, columns (E,))."""
    s_src, s_dst = scores
    alpha, alpha_d = alphas
    erow, ecol = edges
    n, heads = s_dst.shape
    d = z.shape[1] // heads
    g3 = g.reshape(n, heads, d)
    dz = torch.zeros_like(z).index_add_(0, ecol, (g3[erow] * alpha_d[:, :, None]).reshape(-1, heads * d))
    # d alpha = d alpha_d * (mask * scale) = (g_r . z_j) * alpha_d / alpha, zero where the head was dropped
    dot_e = (g3[erow] * z.reshape(-1, heads, d)[ecol]).sum(2)
    ratio = torch.where(alpha_d != 0, alpha_d / alpha, 0.0)
    da = dot_e * ratio
    row_dot = torch.zeros((n, heads), dtype=g.dtype, device=g.device).index_add_(0, erow, alpha * da)
    de = alpha * (da - row_dot[erow])
    de = torch.where(s_dst[erow] + s_src[ecol] <= 0, de * slope, de)
    ds_dst = torch.zeros_like(s_dst).index_add_(0, erow, de)
    ds_src = torch.zeros_like(s_src).index_add_(0, ecol, de)
    return dz, ds_src, ds_dst


# ----------------------------------------------------------------- compilation
_COMPILED: dict[tuple[str, str], Callable[..., Any]] = {}
_BROKEN: set[str] = set()  # device types where torch.compile failed once (eager from then on)


def compile_mode(device: torch.device, want: str = "auto") -> bool:
    """Whether the kernels are compiled on ``device``: ``want`` "on" or "off", or "auto" (the environment's
    ``SHGCN_TORCH_COMPILE`` when set, else on a GPU and off on the CPU, where the compile takes tens of seconds
    of a short run: pass "on" for a long one)."""
    if want == "auto":
        want = os.environ.get("SHGCN_TORCH_COMPILE", "on" if device.type == "cuda" else "off")
    return want == "on" and device.type not in _BROKEN


def compiled(fn: Callable[..., Any], device: torch.device) -> Callable[..., Any]:
    """``fn`` compiled for ``device`` (one compiled function per function and device type, dynamic shapes);
    where compiling or its first call fails, the eager ``fn`` from then on, with one warning."""
    key = (fn.__name__, device.type)
    hit = _COMPILED.get(key)
    if hit is not None:
        return hit
    try:
        fast = torch.compile(fn, dynamic=True)
    except Exception as e:  # noqa: BLE001 - torch.compile's failures are many and all mean "use eager"
        return _give_up(fn, device, e)

    def guarded(*args: Any, **kwargs: Any) -> Any:
        if device.type in _BROKEN:
            return fn(*args, **kwargs)
        try:
            return fast(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            _give_up(fn, device, e)
            return fn(*args, **kwargs)

    _COMPILED[key] = guarded
    return guarded


def _give_up(fn: Callable[..., Any], device: torch.device, e: Exception) -> Callable[..., Any]:
    if device.type not in _BROKEN:
        log.warning("torch.compile does not work here on %s (%s: %s); the torch backend's kernels run eagerly "
                    "(the same results, slower)", device.type, type(e).__name__, str(e).splitlines()[0][:200])
    _BROKEN.add(device.type)
    return fn
