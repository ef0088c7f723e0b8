"""The GNN architectures the trainer offers (``shgcn-train --arch``), as
specs of what each one communicates and keeps: the registry every cost, the
memory model and the trainer read (:data:`ARCHS`).

Every layer aggregates rows of its input over the pattern of Â (one
exchange forward). An architecture that is linear in the aggregated rows
(GCN, GraphSAGE, GIN) forms H W first when W narrows the rows (``dims[k+1] <
dims[k]``), so the rows that travel are ``dims[k+1]`` wide (MG-GCN's trick),
and aggregates first otherwise; its backward is the same product with the
transposed operator: an *expand* of the gradient rows when Â's pattern is
symmetric, a *fold* (partial sums of received rows sent back to their
owners) when it is directed; the first layer's backward needs no exchange
when it aggregates before its weight (the features need no gradient).

An attention layer (GAT) always multiplies first (the scores need Z = H W,
``heads x dims[k+1]`` wide), and its backward always folds: the gradient of
a received row of Z (through the aggregation and its score) is a sum over
the receiver's rows, so it goes back to its owner, every layer.

A new architecture is its spec (here, a module constant listed in
:data:`ARCHS`, the one place its name is written; or
:meth:`~shgcn.core.registry.Registry.register` from outside the tree), its
layer module in ``trainer/archs/`` whose class declares that spec
(``spec = specs.GCN``) and is paired with it in :data:`shgcn.trainer.archs.ARCHS`,
and its test class subclassing
:class:`shgcn.testing.archs.ArchitectureTests`. Its own options
(:class:`~shgcn.core.options.Option`) become ``shgcn-train`` flags and reach
its constructor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .options import Option, own_values
from .registry import Registry

Call = tuple[int, bool]  # (row width, fold): one exchange of one SpMM
NORM, MEAN, SUM = "norm", "mean", "sum"  # the operators a layer aggregates with: Â, D^-1 A, A


@dataclass(frozen=True)
class ArchSpec:
    """What one architecture sends and keeps.

    Attributes
    ----------
    name, description : as ``--arch`` lists them
    operator : the product it aggregates with (:data:`NORM`, :data:`MEAN`, :data:`SUM`)
    by_product : its aggregation is a product with a fixed matrix (so partial sums of a 1.5D row
        add up, and SUMMA can compute it); False for attention
    attends : multiplies by W before every aggregation and folds every backward exchange (attention)
    attention_bytes : bytes it keeps per nonzero and head (GAT's coefficients and their dropped copies)
    options : its own command-line options (GAT's ``--heads``, ``--out-heads``, ``--attn-dropout``): its
        constructor takes them by name, and they enter its checkpoints' identity
    needs_halo_ids : its random masks are keyed by the original ids of received rows (attention dropout)
    heads, out_heads : multi-head: the options (among ``options``) that give the hidden layers' heads
        (concatenated) and the last layer's (averaged; 1 when only ``heads`` is declared); None: one head
    """

    name: str
    description: str
    operator: str = NORM
    by_product: bool = True
    attends: bool = False
    attention_bytes: int = 0
    options: tuple[Option, ...] = ()
    needs_halo_ids: bool = False
    heads: Option | None = None
    out_heads: Option | None = None

    @property
    def multihead(self) -> bool:
        return self.heads is not None

    def own(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Its options' values (``dest -> value``) from ``values``, defaults where absent."""
        return own_values(self.options, values)

    def layer_heads(self, layers: int, options: Mapping[str, Any] | None = None) -> list[int]:
        """Attention heads per layer: :attr:`heads` on hidden layers, :attr:`out_heads` on the last (1 without)."""
        if self.heads is None:
            return [1] * layers
        values = options or {}
        last = int(self.out_heads.value(values)) if self.out_heads is not None else 1
        return [int(self.heads.value(values))] * (layers - 1) + [last]

    def w_first(self, dims: list[int], k: int) -> bool:
        """True when layer k multiplies by its weight before its aggregation."""
        return self.attends or dims[k + 1] < dims[k]

    def in_widths(self, dims: list[int], heads: list[int] | None = None) -> list[int]:
        """Input row width of every layer: ``dims[k]``, times the previous layer's heads (concatenated)."""
        hs = heads or [1] * (len(dims) - 1)
        return [dims[0]] + [d * hs[k] for k, d in enumerate(dims[1:-1])]

    def exchanges(self, dims: list[int], directed: bool, heads: list[int] | None = None
                  ) -> tuple[list[Call], list[Call]]:
        """The exchanges of one training step: forward (one per layer, all expands), then backward
        (from the first layer up, as the trainer's backward visits them in reverse), each as (row width, fold)."""
        if self.attends:
            hs = heads or [1] * (len(dims) - 1)
            widths = [h * d for h, d in zip(hs, dims[1:])]
            return [(w, False) for w in widths], [(w, True) for w in widths]
        wf = [self.w_first(dims, k) for k in range(len(dims) - 1)]
        fwd = [dims[k + 1] if w else dims[k] for k, w in enumerate(wf)]
        bwd = [dims[k + 1] if w else dims[k] for k, w in enumerate(wf) if w or k > 0]
        return [(w, False) for w in fwd], [(w, directed) for w in bwd]


# GAT's own options (PyG's GATConv: heads, concat on hidden layers, the mean on the last; dropout on the coefficients)
HEADS = Option("--heads", 8, "gat: attention heads of the hidden layers (concatenated)", type=int, low=1)
OUT_HEADS = Option("--out-heads", 1, "gat: attention heads of the last layer (averaged)", type=int, low=1)
ATTN_DROPOUT = Option("--attn-dropout", None, "gat: dropout on the attention coefficients (default: --dropout)",
                      type=float, low=0, below=1)

# the built-in architectures' specs, each name written once (here); the trainer joins its layers to them by these
GCN = ArchSpec("gcn", "GCN (Kipf & Welling): Â H W")
SAGE = ArchSpec("sage", "GraphSAGE, mean over the neighbours and a root weight (PyG's SAGEConv)", operator=MEAN)
GIN = ArchSpec("gin", "GIN, learnable eps and a two-layer MLP (PyG's GINConv(train_eps=True))", operator=SUM)
GAT = ArchSpec("gat", "GAT, multi-head attention (PyG's GATConv)", by_product=False, attends=True,
               attention_bytes=8, options=(HEADS, OUT_HEADS, ATTN_DROPOUT), needs_halo_ids=True,
               heads=HEADS, out_heads=OUT_HEADS)

ARCHS: Registry[ArchSpec] = Registry.of("--arch", GCN, SAGE, GIN, GAT)


def arch_spec(arch: str | ArchSpec) -> ArchSpec:
    """The spec of ``arch`` (a name or a spec)."""
    return arch if isinstance(arch, ArchSpec) else ARCHS.get_spec(arch)
