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


def test_node_blocks_are_made_when_the_layout_asks(fig2):
    from shgcn.pipeline import nodes

    ing = fig2.ing
    blocks = ing.nodes(fig2.tasks)  # the fixture's ingest checked them and kept none
    assert ing.nodes(fig2.tasks) is blocks and len(blocks) == ing.bounds.size - 1  # made once
    spec, plan, source, codes = ing.node_recipe
    got = fig2.tasks.gather(list(blocks))
    codes = fig2.tasks.gather([codes])[0] if codes is not None else None
    for b, lo, hi in zip(got, ing.bounds[:-1], ing.bounds[1:]):
        again = nodes.node_block(int(lo), int(hi), spec, plan, None, codes)
        assert b.features.tobytes() == again.features.tobytes() and b.labels.tobytes() == again.labels.tobytes()
        assert (b.train.tobytes(), b.val.tobytes(), b.test.tobytes()) == (again.train.tobytes(), again.val.tobytes(),
                                                                          again.test.tobytes())


def test_ingest_keeps_no_node_block(fig2_directed):
    # the fixture's ingest made and checked every block's node data; nothing is kept until the layout asks
    assert "nodes" not in fig2_directed.ing._made and len(fig2_directed.ing.node_recipe) == 4
