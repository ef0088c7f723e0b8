"""PyG's message-passing layers on a rank's rows plus its halo
(:class:`HaloConv`), and the three usual ones ready made (:func:`gcn_conv`,
:func:`sage_conv`, :func:`gat_conv`).

A PyG layer aggregates at edge destinations. On a rank, destinations are its
own rows and sources its own rows and the halo (the block's edges), so the
layer's input is ``halo(x)`` (n_own + R rows) and its output the first
``n_own`` rows: for layers that take a bipartite input (SAGEConv, GATConv) it
is given ``(halo(x), x)`` and computes only those; GCNConv computes all rows
and the halo's are dropped.
"""

from __future__ import annotations

from typing import Any

import torch

from .block import TorchBlock
from .halo import Halo


class HaloConv(torch.nn.Module):
    """A PyG convolution run on one rank's rows (see the module docstring).

    Parameters
    ----------
    conv : a ``torch_geometric.nn`` MessagePassing layer
    block, halo : the rank's :class:`TorchBlock` and its :class:`Halo`
    edges : ``norm`` (Â's values as edge weights), ``pattern`` (no self loops) or ``attention`` (with self loops):
        :meth:`TorchBlock.edges`
    bipartite : give the layer ``(sources, destinations)`` (SAGEConv, GATConv, GINConv...) rather than all rows
    """

    def __init__(self, conv: torch.nn.Module, block: TorchBlock, halo: Halo, edges: str = "norm",
                 bipartite: bool = False):
        super().__init__()
        self.conv, self.halo, self.bipartite = conv, halo, bipartite
        self.n_own, self.n_local = block.n_own, block.n_local
        index, weight = block.edges(edges)
        self.register_buffer("edge_index", index, persistent=False)
        self.edge_weight = weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(n_own, d_in) own rows in, (n_own, d_out) out."""
        xh = self.halo(x)
        extra: dict[str, Any] = {} if self.edge_weight is None else {"edge_weight": self.edge_weight}
        if self.bipartite:
            return self.conv((xh, x), self.edge_index, size=(self.n_local, self.n_own), **extra)
        return self.conv(xh, self.edge_index, **extra)[: self.n_own]


def gcn_conv(block: TorchBlock, halo: Halo, d_in: int, d_out: int, **kw: Any) -> HaloConv:
    """PyG's GCNConv over the store's Â (its own normalization and self loops off: Â already has them)."""
    from torch_geometric.nn import GCNConv

    return HaloConv(GCNConv(d_in, d_out, normalize=False, add_self_loops=False, **kw), block, halo, "norm")


def sage_conv(block: TorchBlock, halo: Halo, d_in: int, d_out: int, **kw: Any) -> HaloConv:
    """PyG's SAGEConv (mean over the neighbours, self loops excluded, plus the root's own weight)."""
    from torch_geometric.nn import SAGEConv

    return HaloConv(SAGEConv(d_in, d_out, **kw), block, halo, "pattern", bipartite=True)


def gat_conv(block: TorchBlock, halo: Halo, d_in: int, d_out: int, heads: int = 1, **kw: Any) -> HaloConv:
    """PyG's GATConv attending over Â's pattern (self loops from the store, not added again)."""
    from torch_geometric.nn import GATConv

    return HaloConv(GATConv(d_in, d_out, heads=heads, add_self_loops=False, **kw), block, halo, "attention",
                    bipartite=True)
