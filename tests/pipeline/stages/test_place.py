"""The place stage (pipeline/stages/place.py) on Figure 2's graph, 3 parts on nodes of 2 ranks: the parts'
sets of rows by hand, block placement kept when it is best, a bad order placed better and renumbered, and the
quality stage's node-level measures."""

import numpy as np
from helpers.graphs import FIG2_PART

from shgcn.pipeline.models import PartitionResult
from shgcn.pipeline.stages import quality
from shgcn.pipeline.stages.partition import Partitioned
from shgcn.pipeline.stages.place import place_stage


def parts_of(s, part):
    res = PartitionResult("fig", np.asarray(part, np.int32), 0.5)
    return Partitioned({"fig": s.tasks.submit("p", lambda r: r, res)}, {"fig": res})


def test_without_nodes_nothing_moves(fig2):
    placed = place_stage(fig2.tasks, fig2.cfg, fig2.nrm, parts_of(fig2, FIG2_PART), fig2.mon)
    assert placed.placements == {} and placed.parts.results["fig"].part.tolist() == FIG2_PART.tolist()


def test_figure2_on_nodes_of_two(fig2):
    """Rows' part sets: 0 {0,1}, 1 {0,1,2}, 2 {0,1}, 3 {0,1,2}, 4 {0,1,2}, 5 {1,2}. With parts 0 and 1 on a node,
    rows 1, 3, 4 and 5 cross (4); the other two pairings send 6 and 5: block placement stays."""
    cfg = fig2.cfg.__class__(**{**vars(fig2.cfg), "ranks_per_node": 2})
    placed = place_stage(fig2.tasks, cfg, fig2.nrm, parts_of(fig2, FIG2_PART), fig2.mon)
    p = placed.placements["fig"]
    assert (p.how, p.inter_rows, p.block_rows, p.rank_of_part.tolist()) == ("block", 4, 4, [0, 1, 2])
    meas = quality.quality_stage(fig2.tasks, cfg, fig2.ing, fig2.nrm, placed, fig2.mon)
    row = meas.table[0]
    # node volume: rows 1, 3 (node 0) to node 1; rows 4, 5 (node 1) to node 0; flat: V's entries across nodes
    assert meas.quality["node_volume"].sel(model="fig").values.tolist() == [[0, 2], [2, 0]]
    assert (row["inter_volume"], row["inter_volume_block"], row["inter_volume_flat"], row["max_node_msgs"],
            row["nodes"]) == (4, 4, 5, 1, 2)


def test_a_bad_order_is_placed_and_renumbered(fig2):
    """Parts 1 and 2 swapped: in blocks, 6 rows cross; placed, 4 again, the parts renumbered to their ranks."""
    cfg = fig2.cfg.__class__(**{**vars(fig2.cfg), "ranks_per_node": 2})
    swapped = np.array([0, 0, 2, 2, 1, 1], np.int32)
    placed = place_stage(fig2.tasks, cfg, fig2.nrm, parts_of(fig2, swapped), fig2.mon)
    p = placed.placements["fig"]
    assert (p.how, p.inter_rows, p.block_rows) == ("hypergraph", 4, 6)
    part = placed.parts.results["fig"].part
    assert part.tolist() == p.rank_of_part[swapped].tolist()
    assert placed.parts.futures["fig"].result().part.tolist() == part.tolist()
    node = part // 2
    assert node[0] == node[2] != node[4]  # the parts of vertices 0 and 2 share a node, 4's is alone
