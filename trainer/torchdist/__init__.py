"""Bring your own PyTorch model: a store's blocks as torch tensors and its
sparsity-aware halo exchange as a differentiable torch.distributed function
(extra ``pyg``: torch, and torch_geometric for :mod:`.layers`).

::

    from shgcn.trainer import torchdist as td

    td.init_from_env()                         # torchrun, mpirun or one process
    block = td.open_block("stores/cora-p2.zarr")   # this rank's rows of Â, features, labels, masks, plan
    halo = td.Halo(block.plan)                 # own rows -> own rows + the rows other ranks send
    conv = td.gcn_conv(block, halo, 1433, 16)  # PyG's GCNConv on the rank's rows (also sage_conv, gat_conv)
    loss = td.masked_loss(logits, block, block.train_mask)   # the rank's share of the global mean
    loss.backward(); td.sync_gradients(model.parameters()); opt.step()
    td.finish()                                # when every rank is done: the ranks leave in turn

``halo.traffic`` counts the bytes sent per exchange; :func:`predicted_rows`
gives what the store's quality table predicts (rows per exchange and rank).
Named ``torchdist`` (not ``torch``): a folder called ``torch`` beside
``trainer/train.py`` would shadow PyTorch for ``python trainer/train.py``.
The names are imported on first use, so importing this package does not
import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .block import EDGE_KINDS, HaloPlan, TorchBlock, open_block, predicted_rows
    from .halo import Halo, Traffic
    from .launch import finish, init_from_env
    from .layers import HaloConv, gat_conv, gcn_conv, sage_conv
    from .objective import accuracy, global_sum, masked_loss, sync_gradients

_WHERE = {
    **dict.fromkeys(("EDGE_KINDS", "HaloPlan", "TorchBlock", "open_block", "predicted_rows"), ".block"),
    **dict.fromkeys(("Halo", "Traffic"), ".halo"),
    **dict.fromkeys(("finish", "init_from_env"), ".launch"),
    **dict.fromkeys(("HaloConv", "gat_conv", "gcn_conv", "sage_conv"), ".layers"),
    **dict.fromkeys(("accuracy", "global_sum", "masked_loss", "sync_gradients"), ".objective"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name], __name__), name)


def __dir__() -> list[str]:
    return sorted(_WHERE)


__all__ = ["EDGE_KINDS", "Halo", "HaloConv", "HaloPlan", "TorchBlock", "Traffic", "accuracy", "finish", "gat_conv",
           "gcn_conv", "global_sum", "init_from_env", "masked_loss", "open_block", "predicted_rows", "sage_conv",
           "sync_gradients"]
