"""Run under mpirun (or torchrun): every rank checks its halo exchange and
the gradients through it against the whole graph, computed on every rank
from the store's export, and rank 0 prints one JSON line of the results.

    mpirun -n P python tests/helpers/torch_halo_check.py STORE
"""

import json
import sys

import numpy as np
import torch

from shgcn import store
from shgcn.trainer import torchdist as td


def main(path: str) -> None:
    torch.set_num_threads(1)
    rank, size = td.init_from_env()
    block = td.open_block(path)
    whole = store.graph_arrays(path, normalized=True)  # Â in original ids: dst = row, src = column
    n, d = block.n, 3
    a = torch.sparse_coo_tensor(np.stack([whole.dst, whole.src]), whole.weight, (n, n)).to_dense().double()
    x_all = torch.arange(n * d, dtype=torch.float64).reshape(n, d).sin()  # every vertex's row, original ids
    c_all = torch.arange(n * d, dtype=torch.float64).reshape(n, d).cos()  # the loss's weights
    own = block.node_ids[: block.n_own]
    halo = td.Halo(block.plan)
    x = x_all[own].float().requires_grad_(True)
    xh = halo(x)
    gathered = bool(torch.equal(xh.double(), x_all[block.node_ids].float().double()))
    # loss = sum(c * (Â X)) over every rank's rows: the rank's part from its rows of Â times its halo'd rows
    y = block.adjacency().double() @ xh.double()
    (y * c_all[own]).sum().backward()
    # d loss / d X = Âᵀ C for the whole graph; this rank's rows of it
    want = (a.T @ c_all)[own]
    grad_err = float((x.grad.double() - want).abs().max()) if block.n_own else 0.0
    t = halo.traffic.reset()
    sent, recv, msgs = td.predicted_rows(path)
    ok = [gathered, grad_err < 1e-5, t["calls"] == [4 * d * int(sent[rank]), 4 * d * int(recv[rank])],
          t["msgs_sent"] == int(msgs[rank]) + int((np.asarray(_received_from(block)) > 0).sum())]
    every = td.global_sum(torch.tensor([float(v) for v in ok]))
    errs = td.global_sum(torch.tensor([grad_err]))
    if rank == 0:
        print(json.dumps({"size": size, "checks": every.tolist(), "grad_err": float(errs[0])}))


def _received_from(block: td.TorchBlock) -> list[int]:
    return [c for _, _, c in block.plan.recv]


if __name__ == "__main__":
    main(sys.argv[1])
