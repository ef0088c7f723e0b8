"""PyG's message-passing layers on a rank's rows plus its halo
(:class:`HaloConv`), and the three usual ones ready made (:func:`gcn_conv`,
:func:`sage_conv`, :func:`gat_conv`).

A PyG layer aggregates at edge destinations. On a rank, destinations are its
own rows and sources its own rows and the halo (the block's edges), so the
layer's input is ``halo(x)`` (n_own + R rows) and its output the first
``n_own`` rows: for layers that take a bipartite input (SAGEConv, GATConv) it
is given ``(halo(x), x)`` and computes only those; GCNConv computes all rows
and the halo's are dropped.

A layer bound to a block (:func:`gcn_conv`, :func:`sage_conv`,
:func:`gat_conv`: ``conv(x)``) holds the block's edges as its buffers: on the
block's device, and moved with the module (``model.to(device)``). A layer
that takes the graph (:class:`GCNConv`, :class:`SAGEConv`, :class:`GATConv`:
``conv(x, graph)``, PyG's convention) holds only its weights: the same model
object runs on any rank's block, at any P, or on the whole graph
(:class:`~.graph.Graph`, :func:`~.graph.evaluate_whole`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from shgcn.core.errors import UserError

from .block import EDGE_KINDS, TorchBlock
from .halo import Halo

if TYPE_CHECKING:
    from .graph import Graph


class HaloConv(torch.nn.Module):
    """A PyG convolution run on one rank's rows (see the module docstring).

    Parameters
    ----------
    conv : a ``torch_geometric.nn`` MessagePassing layer
    block, halo : the rank's :class:`TorchBlock` and its :class:`Halo`, for a layer bound to them (called
        ``conv(x)``); None (the default) for a layer that takes the graph, ``conv(x, graph)``
    edges : ``norm`` (Â's values as edge weights), ``pattern`` (no self loops) or ``attention`` (with self loops):
        :meth:`TorchBlock.edges`
    bipartite : give the layer ``(sources, destinations)`` (SAGEConv, GATConv, GINConv...) rather than all rows
    """

    def __init__(self, conv: torch.nn.Module, block: TorchBlock | None = None, halo: Halo | None = None,
                 edges: str = "norm", bipartite: bool = False):
        super().__init__()
        if edges not in EDGE_KINDS:
            raise UserError(f"HaloConv(edges={edges!r}): not one of {', '.join(EDGE_KINDS)}")
        self.conv, self.halo, self.bipartite, self.kind = conv, halo, bipartite, edges
        self.edge_index: torch.Tensor | None
        self.edge_weight: torch.Tensor | None
        if block is None:
            self.edge_index = self.edge_weight = None
            return
        if halo is None:
            raise ValueError("HaloConv: a layer bound to a block needs its Halo too")
        self.n_own, self.n_local = block.n_own, block.n_local
        index, weight = block.edges(edges)
        self.register_buffer("edge_index", index, persistent=False)
        self.register_buffer("edge_weight", weight, persistent=False)  # None for the unweighted kinds

    def forward(self, x: torch.Tensor, graph: Graph | None = None) -> torch.Tensor:
        """(n_own, d_in) own rows in, (n_own, d_out) out: on ``graph`` (a :class:`~.graph.Graph`: a rank's
        block or the whole graph) when given, else on the block the layer is bound to."""
        if graph is not None:
            index, weight = graph.edges(self.kind)
            return self._aggregate(graph.exchange(x), x, index, weight, (graph.n_local, graph.n_own))
        if self.edge_index is None or self.halo is None:
            raise TypeError("HaloConv: this layer takes the graph it runs on: conv(x, graph)")
        return self._aggregate(self.halo(x), x, self.edge_index, self.edge_weight, (self.n_local, self.n_own))

    def _aggregate(self, xh: torch.Tensor, x: torch.Tensor, index: torch.Tensor, weight: torch.Tensor | None,
                   size: tuple[int, int]) -> torch.Tensor:
        """The layer over input rows ``xh`` (n_local, d) to ``size[1]`` output rows (the first of ``xh``)."""
        extra: dict[str, Any] = {} if weight is None else {"edge_weight": weight}
        if self.bipartite:
            return self.conv((xh, x), index, size=size, **extra)
        return self.conv(xh, index, **extra)[: size[1]]


class GCNConv(HaloConv):
    """PyG's GCNConv over the store's Â (its normalization and self loops off), called ``conv(x, graph)``."""

    def __init__(self, d_in: int, d_out: int, **kw: Any):
        from torch_geometric.nn import GCNConv as Conv

        super().__init__(Conv(d_in, d_out, normalize=False, add_self_loops=False, **kw), edges="norm")


class SAGEConv(HaloConv):
    """PyG's SAGEConv (mean over the neighbours, self loops excluded), called ``conv(x, graph)``."""

    def __init__(self, d_in: int, d_out: int, **kw: Any):
        from torch_geometric.nn import SAGEConv as Conv

        super().__init__(Conv(d_in, d_out, **kw), edges="pattern", bipartite=True)


class GATConv(HaloConv):
    """PyG's GATConv over Â's pattern with its self loops, called ``conv(x, graph)``."""

    def __init__(self, d_in: int, d_out: int, heads: int = 1, **kw: Any):
        from torch_geometric.nn import GATConv as Conv

        super().__init__(Conv(d_in, d_out, heads=heads, add_self_loops=False, **kw), edges="attention",
                         bipartite=True)


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
