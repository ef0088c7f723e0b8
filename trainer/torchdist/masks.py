"""Dropout with the same mask at every P (:func:`dropout`, :class:`Dropout`).

``torch.nn.functional.dropout`` draws each rank's masks from that rank's
generator, so a vertex's mask depends on which rank holds it and on what the
rank drew before: the losses change with P. Here a unit's mask depends only
on (the vertex id, the column, the layer, the epoch, the seed): the numpy
trainer's counter-based masks bit for bit (Philox4x32-10 keyed by the seed,
on the counter (column block, vertex id, epoch, layer);
:mod:`shgcn.trainer.backends.torchkernels`), drawn on the input's device.

Apply it to a rank's own rows before the halo exchange: the rows other ranks
receive then carry their owner's mask, and one process's losses come out at
every P. The gradient is ``g * mask`` (an autograd function; the keep mask
is kept as uint8 for the backward, never the float mask).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from shgcn.core.errors import UserError

from ..backends import torchkernels as tk
from ..backends.base import Noise


def node_ids_of(rows: Any, n: int) -> torch.Tensor:
    """(n,) int64 original vertex ids of the first ``n`` rows of ``rows``: a block or graph (its ``node_ids``:
    own rows, then the halo) or an id tensor itself."""
    ids = getattr(rows, "node_ids", rows)
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"dropout: the rows' ids come from a block, a graph or an int64 tensor, not "
                        f"{type(rows).__name__}")
    if ids.shape[0] < n:
        raise ValueError(f"dropout: {n} rows given, {ids.shape[0]} vertex ids known")
    return ids[:n]


def check_rate(p: float, layer: int) -> None:
    """A rate in [0, 1) and a layer in 0..255 (the counter keeps the layer's low byte), else a one-line
    :class:`~shgcn.core.errors.UserError`."""
    if not 0.0 <= float(p) < 1.0:
        raise UserError(f"dropout rate {p}: not in [0, 1)")
    if not 0 <= int(layer) <= 255:
        raise UserError(f"dropout layer {layer}: not in 0..255 (the mask's counter holds one byte of it)")


def mask_words(ids: torch.Tensor, width: int, noise: Noise, layer: int, compile: str = "auto"
              ) -> tuple[Any, int, float]:
    """(the Philox words of rows ``ids`` (n,) for ``width`` columns (four (n, ceil(width / 8)) int64), the
    16-bit threshold, the scale) of ``noise``'s mask at ``layer``, on the ids' device."""
    device = ids.device
    k, c = noise.key(), noise.ctr(layer, tk.NODE)
    key = torch.tensor([int(k[0]), int(k[1])], dtype=torch.int64, device=device)
    ctr = torch.tensor([int(c[0]), int(c[1])], dtype=torch.int64, device=device)
    words = _kernel(tk.dense_words, device, compile)(ids.to(torch.int64), (width + 7) // 8, key, ctr)
    return words, noise.threshold(noise.rate), noise.scale(noise.rate)


def _kernel(fn: Any, device: torch.device, compile: str) -> Any:
    return tk.compiled(fn, device) if tk.compile_mode(device, compile) else fn


def dropout(x: torch.Tensor, rows: Any, p: float, layer: int, *, epoch: int, seed: int, training: bool = True,
            compile: str = "auto") -> torch.Tensor:
    """``x`` with each unit dropped (rate ``p``) or scaled by 1 / P(keep), the mask a function of (vertex id,
    column, ``layer``, ``epoch``, ``seed``) only: the same for a vertex whatever rank or row holds it.

    Parameters
    ----------
    x : (n, d) float tensor, rows of vertices (a rank's own rows: drop before the halo exchange)
    rows : a :class:`~.block.TorchBlock`, a :class:`~.graph.Graph` (the ids of their first n rows) or an
        (n,) int64 tensor of the rows' original vertex ids, on ``x``'s device
    p : the rate in [0, 1), quantized to 1/65536 as the numpy trainer's (``Noise.threshold``)
    layer : 0..255, which layer's mask (each layer draws its own)
    epoch, seed : the step's key (the numpy trainer's ``--seed`` and epoch give its masks)
    training : False (evaluation) or ``p == 0``: ``x`` itself
    compile : ``torch.compile`` the mask's kernel: "auto" (on a GPU; ``SHGCN_TORCH_COMPILE``), "on", "off"

    Returns
    -------
    (n, d) tensor of ``x``'s dtype on ``x``'s device; its gradient is ``g * mask``
    """
    check_rate(p, layer)
    if not training or p == 0:
        return x
    if x.dim() != 2:
        raise ValueError(f"dropout: x must be (rows, columns), not of shape {tuple(x.shape)}")
    ids = node_ids_of(rows, x.shape[0]).to(x.device)
    words, threshold, scale = mask_words(ids, x.shape[1], Noise(rate=float(p), seed=int(seed), epoch=int(epoch)),
                                        int(layer), compile)
    return _DropoutFunction.apply(x, words, threshold, scale, _kernel(tk.dropout_words, x.device, compile))


class _DropoutFunction(torch.autograd.Function):
    """``x * mask`` (:func:`.torchkernels.dropout_words`); backward ``g * mask``."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, words: Any, threshold: int, scale: float, kernel: Any) -> torch.Tensor:
        out, keep = kernel(x.detach(), words, threshold, scale, 0, True)
        ctx.save_for_backward(keep)
        ctx.scale = float(np.float32(scale))  # the float32 scale the forward multiplied by
        return out.to(x.dtype)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        (keep,) = ctx.saved_tensors
        return torch.where(keep != 0, g * ctx.scale, 0.0).to(g.dtype), None, None, None, None


class Dropout(torch.nn.Module):
    """:func:`dropout` as a module: ``Dropout(p, layer, seed)(x, rows)``, the epoch set by :func:`set_epoch`
    (0 until then); identity in ``eval()`` mode.

    Parameters
    ----------
    p : rate in [0, 1)
    layer : 0..255, the layer whose mask it draws (give each Dropout of a model its own)
    seed : the masks' seed
    """

    def __init__(self, p: float, layer: int, seed: int = 0, compile: str = "auto"):
        super().__init__()
        check_rate(p, layer)
        self.p, self.layer, self.seed, self.compile_mode = float(p), int(layer), int(seed), compile
        self.epoch = 0

    def forward(self, x: torch.Tensor, rows: Any) -> torch.Tensor:
        """(n, d) ``x`` in, (n, d) out; ``rows`` as :func:`dropout`'s."""
        return dropout(x, rows, self.p, self.layer, epoch=self.epoch, seed=self.seed, training=self.training,
                       compile=self.compile_mode)

    def extra_repr(self) -> str:
        return f"p={self.p}, layer={self.layer}, seed={self.seed}"


def set_epoch(model: torch.nn.Module, epoch: int) -> None:
    """Set the epoch of every :class:`Dropout` in ``model`` (call it at the start of each epoch)."""
    for m in model.modules():
        if isinstance(m, Dropout):
            m.epoch = int(epoch)
