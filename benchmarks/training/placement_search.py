"""The benchmark's search for a better placement of parts on nodes than the
product's (issue 53): Mt-KaHyPar's quality presets and several seeds, and
its improvement of block placement with the quality preset, the
deterministic preset on the parts renamed at random (seeded), then the
product's swap search from the best of those. Not in the product: tens of
seconds at P = 512, and the quality presets are not reproducible.
"""

from __future__ import annotations

import numpy as np

from shgcn.pipeline.metrics.internode import Nets, inter_rows
from shgcn.pipeline.placement import _kahypar_nodes, block_nodes, swap_search

ATTEMPTS = (("QUALITY", 0, False), ("QUALITY", 1, False), ("QUALITY", 2, False), ("HIGHEST_QUALITY", 0, False),
            ("QUALITY", 0, True))  # (preset, seed, improve block placement)
RELABELINGS = (1, 2, 3)


def kahypar_nodes(nets: Nets, parts: int, k: int, attempt: tuple[str, int, bool]) -> np.ndarray | None:
    """(P,) node of every part by the product's Mt-KaHyPar call with ``attempt``'s preset and seed, from scratch
    or improving block placement (3 V-cycles); None when the nodes are not exactly k parts."""
    preset, seed, improve = attempt
    start = block_nodes(parts, k) if improve else None
    try:
        return _kahypar_nodes(nets.ptr, nets.pins, nets.weights, parts, k, seed, start=start, preset=preset)
    except RuntimeError:  # its balance check: nodes not of k parts
        return None


def best_placement(nets: Nets, parts: int, k: int, found: dict[str, np.ndarray]) -> tuple[np.ndarray, int, str]:
    """The placement with the fewest rows across among ``found`` (name: (P,) nodes), :data:`ATTEMPTS` and
    the swap search from the best of them: (nodes, rows, by what)."""
    tried = dict(found)
    for attempt in ATTEMPTS:
        node = kahypar_nodes(nets, parts, k, attempt)
        if node is not None:
            tried[f"{attempt[0].lower()}{' improving block' if attempt[2] else ''} s{attempt[1]}"] = node
    for seed in RELABELINGS:  # the deterministic preset on the parts renamed: another start
        perm = np.random.default_rng(seed).permutation(parts)
        renamed = Nets(nets.ptr, perm[nets.pins], nets.weights, nets.keys, perm[nets.owner])
        node = kahypar_nodes(renamed, parts, k, ("DETERMINISTIC", 0, False))
        if node is not None:
            tried[f"deterministic, ids renamed s{seed}"] = node[perm]
    rows = {name: inter_rows(nets, n) for name, n in tried.items()}
    name = min(rows, key=lambda x: (rows[x], x))
    swapped = swap_search(nets, tried[name])
    got = inter_rows(nets, swapped)
    if got < rows[name]:
        return swapped, got, f"{name} + swaps"
    return tried[name], rows[name], name
