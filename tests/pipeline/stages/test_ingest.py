"""The ingest stage (pipeline/stages/ingest.py): relabelling, self loops and duplicates dropped, the row blocks
equal the in-memory reference graph."""

import numpy as np

from shgcn.pipeline.sources.records import RawGraph
from shgcn.pipeline.stages.ingest import relabel_raw, to_graph


def test_to_graph_dedupes_relabels_and_drops_self_loops():
    raw = RawGraph(src=np.array([10, 10, 30, 20, 20]), dst=np.array([20, 20, 30, 10, 30]), n=None, directed=True,
                   source="t", lines=5)
    g = to_graph(raw, directed=True)
    assert g.node_ids.tolist() == [10, 20, 30]
    assert g.adj.toarray().astype(int).tolist() == [[0, 1, 0], [1, 0, 1], [0, 0, 0]]
    assert g.stats["self_loops"] == 1 and g.stats["duplicates"] == 1
    gu = to_graph(raw, directed=False)
    assert gu.edges == 2 and (gu.adj != gu.adj.T).nnz == 0


def test_a_declared_size_keeps_every_id_isolated_ones_too():
    raw = RawGraph(src=np.array([0]), dst=np.array([2]), n=4, directed=None, source="t", lines=1,
                   node_ids=np.array([1, 2, 3, 4]))
    src, dst, ids = relabel_raw(raw)
    assert src.tolist() == [0] and dst.tolist() == [2] and ids.tolist() == [1, 2, 3, 4]
    assert to_graph(raw, directed=True).n == 4


def test_the_node_recipe_gives_the_same_rows_however_they_are_cut(fig2):
    # the layout makes each row block's node data, the write each chunk of the store's rows, from the same recipe
    from shgcn.pipeline import nodes

    ing = fig2.ing
    spec, plan, source, codes = ing.node_recipe
    codes = fig2.tasks.gather([codes])[0] if codes is not None else None
    n = int(ing.bounds[-1])
    whole = nodes.node_block(0, n, spec, plan, source, codes)
    for lo, hi in ((0, 2), (2, 3), (3, n)):
        part = nodes.node_block(lo, hi, spec, plan, source, codes)
        for name in ("features", "labels", "train", "val", "test"):
            assert getattr(part, name).tobytes() == getattr(whole, name)[lo:hi].tobytes()
