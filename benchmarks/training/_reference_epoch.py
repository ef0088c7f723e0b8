"""A plain scipy/numpy GCN epoch (the issue's reference): the same two
layers as the trainer's GCN (Â H W with the narrower product first), dropout
0.5 with masks drawn by numpy's default generator, masked softmax
cross-entropy, Adam; float32, one process. Prints a JSON dict with the
per-epoch seconds.

    python -m benchmarks.training._reference_epoch STORE EPOCHS [HIDDEN] [DROPOUT]
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import scipy.sparse as sp

from shgcn import store


def main(path: str, epochs: int, hidden: int = 128, rate: float = 0.5) -> None:
    b = store.open_store(path).rank(0)
    n = b.n_own
    a = sp.csr_matrix((np.asarray(b.plan.data), np.asarray(b.plan.indices), np.asarray(b.plan.indptr)), shape=(n, n))
    x = np.asarray(b.features, np.float32)
    y = np.asarray(b.labels)
    idx = np.flatnonzero(np.asarray(b.train_mask) & (y >= 0))
    classes = int(y.max()) + 1
    rng = np.random.default_rng(0)
    dims = [x.shape[1], hidden, classes]
    ws = [rng.uniform(-0.1, 0.1, (i, o)).astype(np.float32) for i, o in zip(dims[:-1], dims[1:])]
    m = [np.zeros_like(w) for w in ws]
    v = [np.zeros_like(w) for w in ws]
    scale = np.float32(1 / (1 - rate))
    times = []
    for t in range(1, epochs + 1):
        t0 = time.perf_counter()
        h0 = x * ((rng.random(x.shape, dtype=np.float32) >= rate) * scale)
        ah = a @ h0 if dims[1] >= dims[0] else None
        z1 = ah @ ws[0] if ah is not None else a @ (h0 @ ws[0])
        h1 = np.maximum(z1, 0) * ((rng.random(z1.shape, dtype=np.float32) >= rate) * scale)
        z2 = a @ (h1 @ ws[1])
        p = np.exp(z2 - z2.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        g = np.zeros_like(z2)
        g[idx] = p[idx]
        g[idx, y[idx]] -= 1
        g /= idx.size
        ag = a.T @ g
        grads = [None, h1.T @ ag]
        dh = (ag @ ws[1].T) * (h1 > 0) * scale
        grads[0] = ah.T @ dh if ah is not None else h0.T @ (a.T @ dh)
        grads[0] = grads[0] + np.float32(5e-4) * ws[0]
        for w, gr, mm, vv in zip(ws, grads, m, v):
            mm *= 0.9
            mm += 0.1 * gr
            vv *= 0.999
            vv += 0.001 * gr * gr
            w -= (0.01 * (mm / (1 - 0.9 ** t)) / (np.sqrt(vv / (1 - 0.999 ** t)) + 1e-8)).astype(np.float32)
        times.append(time.perf_counter() - t0)
    print(json.dumps({"epoch_times": times}))


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    main(sys.argv[1], int(sys.argv[2]), *(int(a) for a in sys.argv[3:4]), *(float(a) for a in sys.argv[4:5]))
