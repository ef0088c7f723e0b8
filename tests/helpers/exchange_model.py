"""The cost model's prediction of one exchange on a matrix and a row partition (used by the exchange
conformance checks, in and out of mpirun; imports nothing of the test helpers)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from shgcn.core.exchanges import EXCHANGES, Layout, traffic
from shgcn.core.partition import PartitionCost


def predicted_exchange(name: str, m: sp.csr_matrix, owner: np.ndarray, size: int, per_node: int, width: int):
    """(expand, fold) traffic per rank of exchange ``name`` on matrix ``m`` (rows i need column j) split
    over ``owner``: what :func:`shgcn.core.exchanges.traffic` gives from the cost module's messages."""
    from shgcn.pipeline.metrics.volume import volume_matrix

    part = np.asarray(owner, np.int64)
    cost = PartitionCost("x", volume_matrix(m, part, size), np.bincount(part, weights=np.diff(m.indptr),
                         minlength=size).astype(np.int64), np.bincount(part, minlength=size).astype(np.int64),
                         None, False, graph=m, part=part)
    layout = Layout(size, per_node)
    msgs = EXCHANGES[name].messages(cost, layout)
    return traffic(msgs, 4 * width, layout), traffic(msgs.fold(), 4 * width, layout)
