"""A plain, serial scipy GCN on the unpartitioned Â: the reference the
distributed trainer must reproduce. Written separately from trainer/archs/gcn.py;
it shares only the weight initialization and the definition of the dropout
mask (both pure functions of the seed)."""

import numpy as np

from shgcn.trainer.archs.base import dropout_mask
from shgcn.trainer.archs.gcn import GCN
from shgcn.trainer.backends import Noise, backend


def reference_losses(a, x, y, train, dims, *, seed=0, epochs=20, lr=0.01, wd=5e-4, dropout=0.5):
    """Per-epoch training loss (mean CE over train rows + wd/2 ||W0||^2)."""
    be = backend()
    ws = [w.copy() for w in GCN(dims, seed, be).params]
    m = [np.zeros_like(w) for w in ws]
    v = [np.zeros_like(w) for w in ws]
    at = a.T.tocsr()
    n = a.shape[0]
    gids = np.arange(n)
    idx = np.flatnonzero(train & (y >= 0))
    losses = []
    for epoch in range(epochs):
        hs, masks, zs = [], [], []
        h = x
        for k, w in enumerate(ws):
            mask = dropout_mask(be, Noise(dropout, seed, epoch), k, gids, h.shape[1]) if dropout else np.ones_like(h)
            hd = h * mask
            hs.append(hd)
            masks.append(mask)
            z = (a @ hd) @ w
            zs.append(z)
            h = np.maximum(z, 0) if k < len(ws) - 1 else z
        p = np.exp(h - h.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        loss = -np.log(p[idx, y[idx]]).mean() + wd / 2 * (ws[0].astype(np.float64) ** 2).sum()
        losses.append(float(loss))
        g = np.zeros_like(h)
        g[idx] = p[idx]
        g[idx, y[idx]] -= 1
        g /= idx.size
        grads = [None] * len(ws)
        for k in range(len(ws) - 1, -1, -1):
            grads[k] = (a @ hs[k]).T @ g
            if k == 0:
                break
            dh = (at @ (g @ ws[k].T)) * masks[k]
            g = dh * (zs[k - 1] > 0)
        grads[0] = grads[0] + wd * ws[0]
        t = epoch + 1
        for w, gr, mm, vv in zip(ws, grads, m, v):
            mm[...] = 0.9 * mm + 0.1 * gr
            vv[...] = 0.999 * vv + 0.001 * gr * gr
            w -= lr * (mm / (1 - 0.9 ** t)) / (np.sqrt(vv / (1 - 0.999 ** t)) + 1e-8)
    return losses
